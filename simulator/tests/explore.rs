//! `campaign --explore` as users run it: the budget is the plain campaign's, the
//! exploration is the same on any number of jobs, and every branched run's recorded
//! command replays it.

mod common;

use std::process::Command;

use common::{campaign, scratch, text};
use simulator::campaign::report::{CampaignReport, RunRecord};

/// A small exploration: crashes and heavy faults reach new marks in the first runs, so
/// it branches.
const EXPLORE: &str = "--profiles heavy --planes mixed --seeds 1..12 --ticks 3000 --clients 3 --crash-prob 0.004 --restart-prob 0.02 --no-shrink --explore";

fn explore(name: &str, jobs: &str) -> (String, CampaignReport) {
    let out = scratch(name);
    let mut args = common::flags(EXPLORE);
    args.extend(["--jobs", jobs, "--out"]);
    args.push(out.to_str().expect("utf-8 temp dir"));
    let output = campaign(&args);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let report = CampaignReport::read(&out).expect("report.json");
    let _ = std::fs::remove_dir_all(&out);
    (text(&output), report)
}

/// One run of an exploration: seed, branch points, schedule hash, trigger mark, and the
/// marks it reached first.
type Made = (u64, String, String, Option<String>, Vec<String>);

/// What identifies the runs an exploration made, and what each found.
fn made<'a>(runs: impl IntoIterator<Item = &'a RunRecord>) -> Vec<Made> {
    runs.into_iter()
        .map(|run| {
            let explore = run
                .explore
                .as_ref()
                .expect("every run of an exploration says where it stands");
            (
                run.seed,
                explore.branches.clone(),
                run.schedule_hash.clone(),
                explore.trigger.clone(),
                explore.first_in_exploration.clone(),
            )
        })
        .collect()
}

#[test]
fn an_exploration_spends_the_plain_budget_branches_where_marks_are_new_and_is_the_same_on_any_jobs() {
    let (output, report) = explore("explore-one-job", "1");
    assert_eq!(report.runs.len(), 12, "as many runs as the plain campaign: {output}");
    let summary = report.explore.as_ref().expect("an explore summary");
    assert_eq!(summary.roots + summary.children, 12);
    assert!(summary.children > 0, "it branched: {output}");
    assert!(summary.splitpoints > 0);
    assert!(output.contains("explore: 12 runs ("), "{output}");
    for run in &report.runs {
        let explore = run.explore.as_ref().expect("explore record");
        if explore.branches.is_empty() {
            assert!(explore.parent.is_none() && explore.trigger.is_none(), "a root: {run:?}");
        } else {
            assert!(
                run.command.contains(&format!("--branch {}", explore.branches)),
                "{}",
                run.command
            );
            assert!(explore.trigger.is_some(), "a child names the mark it branched at");
        }
    }
    let (_, again) = explore("explore-two-jobs", "2");
    assert_eq!(
        made(&again.runs),
        made(&report.runs),
        "the same exploration on two jobs"
    );
}

#[test]
fn a_branched_runs_recorded_command_replays_it() {
    let (_, report) = explore("explore-replay", "2");
    let child = report
        .runs
        .iter()
        .find(|run| run.explore.as_ref().is_some_and(|explore| !explore.branches.is_empty()))
        .expect("a branched run");
    let flags: Vec<&str> = child
        .command
        .split_once(" -- ")
        .expect("the command passes its flags after --")
        .1
        .split_whitespace()
        .collect();
    let output = Command::new(env!("CARGO_BIN_EXE_workload-fuzz"))
        .args(&flags)
        .output()
        .expect("workload-fuzz runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!("schedule_hash={}", child.schedule_hash)),
        "the recorded command replays the run ({}):\n{stdout}",
        child.schedule_hash
    );
}

#[test]
fn exploring_sub_campaigns_share_one_map_and_the_campaign_with_plain_ones_and_a_shard_explores_its_own_roots() {
    let dir = scratch("explore-spec");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let spec = dir.join("three.spec");
    // The plain line's runs are short, but not so short that one under heavy faults
    // may answer too few requests to exercise a check (seed 11 at 1,000 ticks, on a
    // build whose repair retries followed round trips, never appended: vacuous).
    std::fs::write(
        &spec,
        "--profiles heavy --planes mixed --seeds 1..12 --ticks 3000 --clients 3 --crash-prob 0.004 \\\n\
         --restart-prob 0.02 --no-shrink\n\
         sub plain 1 --ticks 1500\n\
         sub exploring 1 --explore\n\
         sub exploring-metadata 2 --planes metadata --explore\n",
    )
    .expect("write the spec");
    let run = |jobs: &str, name: &str| {
        let out = dir.join(name);
        let output = campaign(&[
            "--spec",
            spec.to_str().expect("utf-8"),
            "--jobs",
            jobs,
            "--out",
            out.to_str().expect("utf-8"),
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
        (text(&output), CampaignReport::read(&out).expect("report.json"))
    };
    let (output, report) = run("2", "report");
    let of = |name: &'static str| report.runs.iter().filter(move |run| run.campaign == name);
    assert_eq!(of("plain").count(), 12, "the plain sub-campaign ran its plan");
    assert!(of("plain").all(|run| run.explore.is_none() && !run.command.contains("--branch")));
    let exploring: Vec<_> = of("exploring").chain(of("exploring-metadata")).collect();
    assert_eq!(exploring.len(), 24, "the explorers spent their plans' budget together");
    assert!(of("exploring").count() > 0 && of("exploring-metadata").count() > 0);
    assert!(exploring.iter().all(|run| run.explore.is_some()));
    assert!(
        exploring.iter().any(|run| run.command.contains("--branch")),
        "and branched: {output}"
    );
    // One map: each point is new to the exploration once, whichever sub-campaign's
    // run reached it first (two maps would each find the common marks).
    let mut firsts: Vec<&String> = exploring
        .iter()
        .flat_map(|run| &run.explore.as_ref().expect("explore record").first_in_exploration)
        .collect();
    let found = firsts.len();
    assert!(found > 0, "the runs found points");
    firsts.sort();
    firsts.dedup();
    assert_eq!(firsts.len(), found, "no point found first twice: {firsts:?}");
    let summary = report.explore.as_ref().expect("an explore summary");
    assert_eq!(
        summary.roots + summary.children,
        24,
        "the summary counts the exploring runs only"
    );
    let (_, one_job) = run("1", "report-one-job");
    let explored = |report: &CampaignReport| made(report.runs.iter().filter(|run| run.explore.is_some()));
    assert_eq!(explored(&one_job), explored(&report), "the same exploration on one job");

    // A shard explores from its own roots (seeds 1, 3, 5, ... for shard 1 of 2), the
    // same on any --jobs.
    let sharded = |jobs: &str, name: &str| {
        let out = dir.join(name);
        let mut args = common::flags(EXPLORE);
        args.extend(["--shard", "1/2", "--jobs", jobs, "--out", out.to_str().expect("utf-8")]);
        let output = campaign(&args);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
        CampaignReport::read(&out).expect("report.json")
    };
    let shard = sharded("1", "shard-one-job");
    assert_eq!(shard.runs.len(), 6, "half the budget");
    assert!(shard.runs.iter().all(|run| run.seed % 2 == 1), "roots of shard 1 only");
    assert_eq!(made(&sharded("2", "shard-two-jobs").runs), made(&shard.runs));
    // Merged, the shards' explorations add up.
    let second = dir.join("shard-two");
    let mut args = common::flags(EXPLORE);
    args.extend(["--shard", "2/2", "--out", second.to_str().expect("utf-8")]);
    assert_eq!(campaign(&args).status.code(), Some(0));
    let merged = dir.join("merged");
    let output = campaign(&[
        "merge",
        dir.join("shard-one-job").to_str().expect("utf-8"),
        second.to_str().expect("utf-8"),
        "--out",
        merged.to_str().expect("utf-8"),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let merged = CampaignReport::read(&merged).expect("merged report");
    let summary = merged
        .explore
        .as_ref()
        .expect("the merged report keeps the explorations");
    assert_eq!(summary.roots + summary.children, 12, "both shards' runs");
    assert!(text(&output).contains("explore: 12 runs ("), "{}", text(&output));

    let corpus = campaign(&[
        "--corpus",
        concat!(env!("CARGO_MANIFEST_DIR"), "/../seeds"),
        "--explore",
    ]);
    assert_eq!(corpus.status.code(), Some(2), "{}", text(&corpus));
    assert!(text(&corpus).contains("--explore with --corpus"), "{}", text(&corpus));
    let _ = std::fs::remove_dir_all(&dir);
}
