//! The `campaign` binary as users run it: reports, shards and merging, failure groups
//! whose repros fail again, the corpus, and bad input.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::{campaign, scratch, text};
use simulator::campaign::report::{CampaignReport, RunVerdict};

fn verdicts(report: &CampaignReport) -> BTreeMap<(String, String, String, u64, String), RunVerdict> {
    report.runs.iter().map(|run| (run.key(), run.verdict)).collect()
}

/// Seeds 1..40 of the metadata plane with the test-only broken check, into `out`: the
/// campaign fails (exit 1); its output and report are returned.
fn broken_check_campaign(out: &Path) -> (std::process::Output, CampaignReport) {
    let mut args = common::flags("--profiles none --planes metadata --seeds 1..40 --ticks 6000 --break-check --out");
    args.push(out.to_str().expect("utf-8"));
    let output = campaign(&args);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    (output, CampaignReport::read(out).expect("report"))
}

const COMMON: &str = "--planes metadata --crash-prob 0.01 --restart-prob 0.05 --ticks 3000";

#[test]
fn a_campaign_asked_to_stop_after_two_failures_starts_no_run_after_the_second() {
    let out = scratch("stop-after-failures");
    let mut args = common::flags(
        "--profiles none --planes metadata --seeds 1..40 --ticks 6000 --break-check --jobs 1 \
         --stop-after-failures 2 --no-shrink --out",
    );
    args.push(out.to_str().expect("utf-8"));
    let output = campaign(&args);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let report = CampaignReport::read(&out).expect("report");
    let failed = report.runs.iter().filter(|run| run.verdict == RunVerdict::Fail).count();
    assert_eq!(failed, 2, "one job: the run after the second failure never starts");
    assert!(report.runs.len() < 40, "it stopped early: {} runs", report.runs.len());
    assert_eq!(report.not_started, 40 - report.runs.len() as u64);
    assert!(text(&output).contains("first failure: "), "{}", text(&output));
    assert!(
        text(&output).contains("stopped after 2 failed run(s) (--stop-after-failures 2)"),
        "{}",
        text(&output)
    );
    let _ = std::fs::remove_dir_all(&out);
    let zero = campaign(&common::flags("--planes metadata --seeds 1..2 --stop-after-failures 0"));
    assert_eq!(zero.status.code(), Some(2), "{}", text(&zero));
    assert!(
        text(&zero).contains("--stop-after-failures 0 would start no run"),
        "{}",
        text(&zero)
    );
}

#[test]
fn a_small_campaign_writes_a_complete_report() {
    let out = scratch("small");
    let mut args = vec!["--profiles", "none,heavy", "--seeds", "1..10", "--jobs", "2", "--out"];
    let out_str = out.to_str().expect("utf-8 temp dir");
    args.push(out_str);
    args.extend(COMMON.split_whitespace());
    let output = campaign(&args);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let report = CampaignReport::read(&out).expect("report.json");
    assert_eq!(report.runs.len(), 20);
    assert_eq!(report.totals().pass, 20);
    assert!(
        report
            .runs
            .iter()
            .all(|run| run.commits > 0 && run.ops_compared > 0 && run.command.contains("--seed"))
    );
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(text(&output).contains("20 passed, 0 failed"));
    // Coverage: heavy runs crash replicas, whose restarts rejoin through a StartView
    // and whose primaries resend prepares; each run records the marks it reached, and
    // the summary and the page count them (marks never reached listed by name).
    let coverage = report.coverage();
    for mark in ["vc.start_view_to_recovering", "normal.prepare_resent"] {
        let reach = coverage
            .get(mark)
            .unwrap_or_else(|| panic!("{mark} reached: {}", text(&output)));
        assert!(reach.runs > 0 && reach.first.1 == "heavy", "{mark}: {reach:?}");
    }
    assert!(
        report.runs.iter().all(|run| run
            .coverage
            .iter()
            .all(|name| cluster::coverage::Mark::from_name(name).is_some())),
        "every recorded mark is a known mark"
    );
    assert!(text(&output).contains("marks reached over all runs; never reached: "));
    assert!(html.contains("<h2>Coverage</h2>") && html.contains("vc.start_view_to_recovering"));
    std::fs::remove_dir_all(&out).expect("cleanup");
}

#[test]
fn merged_shards_equal_the_unsharded_campaign() {
    let (whole, first, second, merged) = (
        scratch("whole"),
        scratch("shard1"),
        scratch("shard2"),
        scratch("merged"),
    );
    let run = |out: &Path, shard: Option<&str>| {
        let mut args = vec!["--profiles", "light,swarm", "--seeds", "1..12", "--jobs", "2"];
        if let Some(shard) = shard {
            args.extend(["--shard", shard]);
        }
        args.push("--out");
        args.push(out.to_str().expect("utf-8 temp dir"));
        args.extend(COMMON.split_whitespace());
        let output = campaign(&args);
        assert!(matches!(output.status.code(), Some(0 | 1)), "{}", text(&output));
    };
    run(&whole, None);
    run(&first, Some("1/2"));
    run(&second, Some("2/2"));
    let halves = [
        CampaignReport::read(&first).expect("shard 1"),
        CampaignReport::read(&second).expect("shard 2"),
    ];
    assert_eq!(halves[0].runs.len() + halves[1].runs.len(), 24);
    assert!(
        halves.iter().all(|half| !half.runs.is_empty()),
        "each shard takes part of the campaign"
    );
    let output = campaign(&[
        "merge",
        first.to_str().expect("utf-8"),
        second.to_str().expect("utf-8"),
        "--out",
        merged.to_str().expect("utf-8"),
    ]);
    assert!(matches!(output.status.code(), Some(0 | 1)), "{}", text(&output));
    let merged_report = CampaignReport::read(&merged).expect("merged report");
    let whole_report = CampaignReport::read(&whole).expect("whole report");
    assert_eq!(verdicts(&merged_report), verdicts(&whole_report));
    let hashes = |report: &CampaignReport| {
        report
            .runs
            .iter()
            .map(|run| run.schedule_hash.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        hashes(&merged_report),
        hashes(&whole_report),
        "every run replays the same schedule in a shard"
    );
    // A merge that lacks a shard says so and fails: a lost machine is not a whole night.
    let lonely = scratch("merge-one-shard");
    let output = campaign(&[
        "merge",
        first.to_str().expect("utf-8"),
        "--out",
        lonely.to_str().expect("utf-8"),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("shard(s) 2 of 2 are missing"),
        "{}",
        text(&output)
    );
    std::fs::remove_dir_all(&lonely).expect("cleanup");
    // Merging a shard with itself is refused: the runs overlap.
    let output = campaign(&["merge", first.to_str().expect("utf-8"), first.to_str().expect("utf-8")]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).contains("overlapping shards"), "{}", text(&output));
    for dir in [whole, first, second, merged] {
        std::fs::remove_dir_all(dir).expect("cleanup");
    }
}

#[test]
fn a_broken_check_forms_one_group_whose_repros_fail_again() {
    let out = scratch("broken");
    let (output, report) = broken_check_campaign(&out);
    let groups = report.failure_groups();
    assert_eq!(
        groups.len(),
        1,
        "one broken check, one signature: {:?}",
        groups.iter().map(|g| &g.signature).collect::<Vec<_>>()
    );
    let group = &groups[0];
    assert!(
        group.signature.starts_with("broken check (test-only)"),
        "{}",
        group.signature
    );
    assert!(
        group.runs.len() >= 2 && group.runs.len() < 40,
        "some seeds, not all: {}",
        group.runs.len()
    );
    assert!(
        group.runs.windows(2).all(|pair| pair[0].seed < pair[1].seed),
        "smallest seed first"
    );
    for run in &group.runs {
        let flags = run
            .command
            .split(" -- ")
            .nth(1)
            .expect("the repro names the binary's flags");
        let replay = Command::new(env!("CARGO_BIN_EXE_workload-fuzz"))
            .args(flags.split_whitespace())
            .output()
            .expect("workload-fuzz runs");
        assert_eq!(replay.status.code(), Some(1), "seed {} did not fail again", run.seed);
        assert!(String::from_utf8_lossy(&replay.stdout).contains("broken check (test-only)"));
    }

    // The group comes shrunk: its smallest seed, a smaller run, a command that names
    // its schedule file, a trace, and a timeline on the page.
    let [repro] = &report.shrunk[..] else {
        panic!("one shrunk repro per group: {:?}", report.shrunk);
    };
    assert_eq!(
        (repro.signature.as_str(), repro.seed),
        (group.signature.as_str(), group.runs[0].seed)
    );
    let shrunk = repro.shrunk.expect("shrunk");
    assert!(
        shrunk.ticks < repro.original.ticks || shrunk.fault_events < repro.original.fault_events,
        "{repro:?}"
    );
    let command = repro.command.as_deref().expect("a shrunk command");
    let schedule = out.join(repro.schedule_file.as_deref().expect("a schedule file"));
    assert!(
        command.contains(&format!("--faults-from {}", schedule.display())),
        "{command}"
    );
    let flags = command.split(" -- ").nth(1).expect("flags");
    let replay = Command::new(env!("CARGO_BIN_EXE_workload-fuzz"))
        .args(flags.split_whitespace())
        .output()
        .expect("workload-fuzz runs");
    assert_eq!(replay.status.code(), Some(1), "the shrunk repro fails again");
    assert!(String::from_utf8_lossy(&replay.stdout).contains("broken check (test-only)"));
    let trace = std::fs::read(out.join(repro.trace_file.as_deref().expect("a trace file"))).expect("trace");
    let trace: serde_json::Value = serde_json::from_slice(&trace).expect("the trace is JSON");
    assert!(trace["traceEvents"].as_array().is_some_and(|events| !events.is_empty()));
    let timeline = repro.timeline.as_ref().expect("a timeline");
    assert_eq!(
        timeline.lanes.len(),
        shrunk.replicas + 1,
        "a lane per replica and the network"
    );
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert!(
        html.contains("Shrunk: seed") && html.contains("<svg"),
        "the page shows the shrink"
    );
    assert!(text(&output).contains("smallest repro: "));
    std::fs::remove_dir_all(&out).expect("cleanup");
}

#[test]
fn the_seed_corpus_runs_as_a_campaign() {
    let out = scratch("corpus");
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../seeds");
    let output = campaign(&[
        "--corpus",
        corpus.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let report = CampaignReport::read(&out).expect("report");
    assert!(report.runs.len() >= 6, "{} corpus runs", report.runs.len());
    std::fs::remove_dir_all(&out).expect("cleanup");
}

#[test]
fn bad_input_is_a_clear_error_with_exit_code_2() {
    let corpus = scratch("bad-corpus");
    std::fs::create_dir_all(&corpus).expect("temp dir");
    std::fs::write(
        corpus.join("bad.jsonl"),
        "{\"command\": \"workload-fuzz --seed 1\"}\nnot json\n",
    )
    .expect("write");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--profiles", "stormy"], "stormy"),
        (vec!["--planes", "sideways"], "unknown plane"),
        (vec!["--seeds", "9..3"], "reversed"),
        (vec!["--seeds", "1..x"], "is not a seed"),
        (vec!["--shard", "3/2"], "K/N"),
        (vec!["--out", "/proc/campaign-cannot-write-here"], "report directory"),
        (
            vec!["--corpus", corpus.to_str().expect("utf-8")],
            "malformed corpus line",
        ),
        (vec!["merge", "/nonexistent-report-dir"], "cannot read"),
    ];
    for (args, expected) in cases {
        let output = campaign(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
        assert!(text(&output).contains(expected), "{args:?}: {}", text(&output));
        assert!(!text(&output).contains("panicked"), "{args:?}");
    }
    std::fs::remove_dir_all(&corpus).expect("cleanup");
}

#[test]
fn merge_with_known_signatures_fails_only_on_new_ones() {
    let (out, merged) = (scratch("known"), scratch("known-merged"));
    let (_, report) = broken_check_campaign(&out);
    let signature = report.failure_groups()[0].signature.clone();
    let known = out.join("known.txt");
    let merge = |known_file: &str| {
        campaign(&[
            "merge",
            out.to_str().expect("utf-8"),
            "--out",
            merged.to_str().expect("utf-8"),
            "--known",
            known_file,
        ])
    };
    std::fs::write(&known, "# nothing known yet\n").expect("write");
    let output = merge(known.to_str().expect("utf-8"));
    assert_eq!(
        output.status.code(),
        Some(1),
        "a new signature fails the merge: {}",
        text(&output)
    );
    assert!(text(&output).contains("[NEW]"));
    std::fs::write(&known, format!("# the broken check\n{signature}\n")).expect("write");
    let output = merge(known.to_str().expect("utf-8"));
    assert_eq!(
        output.status.code(),
        Some(0),
        "a known signature does not: {}",
        text(&output)
    );
    assert!(text(&output).contains("[known]"));
    // The merged report carries the shrunk repro and its files.
    let merged_report = CampaignReport::read(&merged).expect("merged report");
    let [repro] = &merged_report.shrunk[..] else {
        panic!("the shard's shrunk repro: {:?}", merged_report.shrunk);
    };
    for file in [&repro.schedule_file, &repro.trace_file] {
        let file = file.as_deref().expect("a file");
        assert!(
            merged.join(file).is_file(),
            "{file} is in the merged report's directory"
        );
    }
    assert!(
        repro
            .command
            .as_deref()
            .is_some_and(|command| command.contains(&merged.display().to_string())),
        "the command names the merged copy of the schedule: {:?}",
        repro.command
    );
    for dir in [out, merged] {
        std::fs::remove_dir_all(dir).expect("cleanup");
    }
}

#[test]
fn a_spec_file_holds_the_campaign_flags() {
    let out = scratch("spec");
    std::fs::create_dir_all(&out).expect("temp dir");
    let spec = out.join("campaign.spec");
    std::fs::write(
        &spec,
        "# a small campaign\n--profiles none,light\n--planes metadata --seeds 3..5  # three seeds\n--ticks 2000\n",
    )
    .expect("write spec");
    let output = campaign(&[
        "--spec",
        spec.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let report = CampaignReport::read(&out).expect("report");
    assert_eq!(report.runs.len(), 6);
    assert!(
        report
            .runs
            .iter()
            .all(|run| (3..=5).contains(&run.seed) && run.command.contains("--ticks 2000"))
    );
    let output = campaign(&["--spec", "/nonexistent.spec"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).contains("--spec /nonexistent.spec"), "{}", text(&output));
    std::fs::remove_dir_all(&out).expect("cleanup");
}

#[test]
fn a_campaign_fails_when_a_required_coverage_mark_is_never_reached() {
    // A nightly must not silently stop reaching a path: the marks it requires are
    // checked over the whole campaign, and a mark nobody reached fails it by name.
    let out = scratch("required-marks");
    let out_str = out.to_str().expect("utf-8 temp dir");
    let flags = |marks: &'static str| {
        let mut args = vec![
            "--profiles",
            "heavy",
            "--seeds",
            "1..4",
            "--out",
            out_str,
            "--require-marks",
            marks,
        ];
        args.extend(COMMON.split_whitespace());
        args
    };
    let reached = campaign(&flags("vc.start_view_to_recovering"));
    assert_eq!(reached.status.code(), Some(0), "{}", text(&reached));
    // With one client nothing fills the client table: no run evicts one.
    let missed = campaign(&flags("vc.start_view_to_recovering,normal.client_evicted"));
    assert_eq!(missed.status.code(), Some(1), "{}", text(&missed));
    assert!(
        text(&missed).contains("required mark normal.client_evicted was reached by no run"),
        "{}",
        text(&missed)
    );
    assert!(!text(&missed).contains("required mark vc.start_view_to_recovering"));
    let unknown = campaign(&flags("vc.no_such_mark"));
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown));
    assert!(text(&unknown).contains("\"vc.no_such_mark\" is not a coverage mark"));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_spec_with_sub_campaigns_runs_each_with_its_own_flags_into_one_report() {
    // The nightly's shape: campaign-wide flags, then weighted sub-campaigns, each with
    // its own planes, profiles and run flags; required marks travel in the report so a
    // merge of shards checks them.
    let out = scratch("spec-subs");
    std::fs::create_dir_all(&out).expect("temp dir");
    let spec = out.join("nightly.spec");
    std::fs::write(
        &spec,
        "--seeds 1..3 --ticks 2000 --crash-prob 0.01 --restart-prob 0.05 --crash-primary\n\
         --require-marks vc.start_view_to_recovering\n\
         sub meta 2 --planes metadata --profiles heavy\n\
         sub part 1 --planes partition --profiles light \\\n    --node-shards 2 --clients 2\n",
    )
    .expect("write spec");
    let report_dir = out.join("report");
    let output = campaign(&[
        "--spec",
        spec.to_str().expect("utf-8"),
        "--out",
        report_dir.to_str().expect("utf-8"),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let report = CampaignReport::read(&report_dir).expect("report");
    let names: Vec<&str> = report.sub_campaigns.iter().map(|sub| sub.sub.name.as_str()).collect();
    assert_eq!(names, ["meta", "part"]);
    assert_eq!(report.required_marks, ["vc.start_view_to_recovering"]);
    assert_eq!(report.runs.len(), 6, "three seeds in each sub-campaign");
    for run in &report.runs {
        match run.campaign.as_str() {
            "meta" => assert!(run.plane == "metadata" && run.profile == "heavy", "{run:?}"),
            "part" => assert!(
                run.plane == "partition" && run.command.contains("--shards 2") && run.command.contains("--clients 2"),
                "{run:?}"
            ),
            other => panic!("run of an unknown sub-campaign {other:?}"),
        }
        assert!(
            run.command.contains("--ticks 2000 "),
            "campaign-wide flags reach every run"
        );
    }
    assert!(text(&output).contains("sub-campaign meta: 3 runs"), "{}", text(&output));
    let html = std::fs::read_to_string(report_dir.join("report.html")).expect("report.html");
    assert!(html.contains("<h2>Sub-campaigns</h2>"));
    // A sub line that shapes the whole campaign is bad input, named with its line.
    std::fs::write(&spec, "--seeds 1..3\nsub meta 1 --planes metadata --minutes 5\n").expect("write spec");
    let output = campaign(&["--spec", spec.to_str().expect("utf-8")]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(
        text(&output).contains("nightly.spec:2: sub-campaign meta: --minutes shapes the whole campaign"),
        "{}",
        text(&output)
    );
    std::fs::remove_dir_all(&out).expect("cleanup");
}
