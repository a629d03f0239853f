//! The report page: well-formed, escaped, complete, deterministic, and rendered by Chromium when present.
use super::chart::{nice_step, tick_label};
use super::*;
use crate::campaign::report::{REPORT_FORMAT_VERSION, RunRecord, RunVerdict};

const VOID: [&str; 8] = ["meta", "br", "link", "img", "hr", "input", "col", "wbr"];

/// Check that every tag closes, in order, and that every `&` starts an entity. Tags
/// are scanned naively: the page escapes `<` and `>` everywhere, so a `<` always
/// starts markup.
fn assert_well_formed(html: &str) {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = html;
    let mut saw_root = false;
    while let Some(open) = rest.find('<') {
        let text = &rest[..open];
        assert!(!text.contains('>'), "stray '>' in text: {text:?}");
        assert_entities(text);
        rest = &rest[open..];
        let Some(close) = rest.find('>') else {
            panic!("unterminated tag at {:?}", &rest[..rest.len().min(60)]);
        };
        let tag = &rest[1..close];
        rest = &rest[close + 1..];
        if tag.starts_with('!') {
            assert!(
                tag.eq_ignore_ascii_case("!DOCTYPE html"),
                "unexpected declaration <{tag}>"
            );
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            let name = name.trim();
            let Some(top) = stack.pop() else {
                panic!("</{name}> closes nothing");
            };
            assert_eq!(top, name, "</{name}> closes <{top}>");
            continue;
        }
        let name: String = tag
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        assert!(!name.is_empty(), "bad tag <{tag}>");
        assert_entities(tag);
        if stack.is_empty() {
            assert!(!saw_root, "a second root element <{name}>");
            saw_root = true;
        }
        if tag.ends_with('/') {
            continue;
        }
        assert!(
            !VOID.contains(&name.as_str()),
            "void element <{name}> must be self-closed for XML"
        );
        stack.push(name);
    }
    assert!(rest.trim().is_empty(), "text after the root element: {rest:?}");
    assert!(stack.is_empty(), "unclosed tags: {stack:?}");
    assert!(saw_root, "no root element");
}

fn assert_entities(text: &str) {
    for (index, _) in text.match_indices('&') {
        let entity = &text[index..];
        let ok = ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"]
            .iter()
            .any(|e| entity.starts_with(e))
            || entity.strip_prefix("&#").is_some_and(|digits| {
                let end = digits.find(';').unwrap_or(0);
                end > 0 && digits[..end].chars().all(|c| c.is_ascii_digit())
            });
        assert!(ok, "bare '&' at {:?}", &entity[..entity.len().min(12)]);
    }
}

fn run(profile: &str, plane: &str, seed: u64, verdict: RunVerdict, signature: Option<&str>) -> RunRecord {
    RunRecord {
        campaign: String::new(),
        profile: profile.to_owned(),
        plane: plane.to_owned(),
        seed,
        command: format!(
            "cargo run --release -p simulator --bin workload-fuzz -- --seed {seed} --plane {plane} --faults {profile}"
        ),
        verdict,
        signature: signature.map(str::to_owned),
        detail: signature.map(|s| format!("{s} at tick {}", seed * 10)),
        ticks: 6000 + seed,
        commits: 100 + seed * 3,
        ops_compared: 300 + seed,
        checkpoints: seed % 3,
        transfers_installed: seed % 2,
        adversary_sent: 0,
        adversary_refused: 0,
        failover_ticks: vec![400 + seed, 500 + seed],
        failover_unresolved: seed % 2,
        spurious_view_changes: seed % 4,
        wall_ms: 10.0 + seed as f64 * 1.5,
        schedule_hash: format!("{seed:016x}"),
        polls: 0,
        group_ticks: 0,
        coverage: Vec::new(),
        finished_seconds: 0.0,
        watermarks: std::collections::BTreeMap::new(),
        explore: None,
    }
}

const SIG_A: &str = "commit regressed: view <n> op <n>";
const SIG_B: &str = "replica behind a hole for 2000 ticks";
const NASTY: &str = "panicked: <script>alert(1)</script> & \"quoted\" 'single'";

fn sample() -> CampaignReport {
    let mut runs = vec![
        run("heavy", "metadata", 1, RunVerdict::Pass, None),
        run("heavy", "metadata", 9, RunVerdict::Fail, Some(SIG_A)),
        run("heavy", "metadata", 12, RunVerdict::Fail, Some(SIG_B)),
        run("light", "echo", 4, RunVerdict::Fail, Some(SIG_A)),
        run("light", "echo", 5, RunVerdict::Pass, None),
        run("light", "metadata", 1, RunVerdict::Pass, None),
        run("light", "metadata", 2, RunVerdict::Pass, None),
        run("light", "metadata", 6, RunVerdict::Vacuous, None),
        run("none", "metadata", 3, RunVerdict::Pass, None),
        run("none", "metadata", 30, RunVerdict::Fail, Some(SIG_A)),
    ];
    runs[2].detail = Some(NASTY.to_owned());
    runs[7].detail = Some("vacuous: compared 0 ops".to_owned());
    CampaignReport {
        format: REPORT_FORMAT_VERSION,
        campaign_id: "nightly-<20260101>".to_owned(),
        command: "campaign --profiles none,light,heavy --planes metadata,echo --seeds 1..100".to_owned(),
        build: "simulator 0.1.0 (abc123)".to_owned(),
        shard: Some((3, 8)),
        planned: 14,
        not_started: 4,
        wall_seconds: 2.5,
        runs,
        sub_campaigns: Vec::new(),
        required_marks: Vec::new(),
        shrunk: Vec::new(),
        nemesis: None,
        explore: None,
    }
}

#[test]
fn page_is_well_formed() {
    let html = render(&sample());
    assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
    assert_well_formed(&html);
}

#[test]
fn render_is_deterministic() {
    assert_eq!(render(&sample()), render(&sample()));
}

#[test]
fn header_and_totals() {
    let html = render(&sample());
    assert!(html.contains("nightly-&lt;20260101&gt;"), "campaign id, escaped");
    assert!(html.contains("campaign --profiles none,light,heavy --planes metadata,echo --seeds 1..100"));
    assert!(html.contains("simulator 0.1.0 (abc123)"));
    assert!(html.contains("shard 3 of 8"));
    assert!(html.contains("2.5 s"));
    assert!(html.contains("<dd>4.0</dd>"), "10 runs in 2.5 s");
    for (id, count) in [
        ("runs", 10),
        ("pass", 5),
        ("fail", 4),
        ("vacuous", 1),
        ("invalid", 0),
        ("planned", 14),
        ("not-started", 4),
    ] {
        let needle = format!("id=\"total-{id}\">{count}</span>");
        assert_eq!(html.matches(&needle).count(), 1, "{needle}");
    }
    assert!(html.contains("class=\"badge fail\">FAIL<"));
    assert!(html.contains("INCOMPLETE"));
    // Two timed losses per run (400 + seed and 500 + seed); the largest is seed 30's.
    let failover = html
        .split("<p id=\"failover\">")
        .nth(1)
        .and_then(|rest| rest.split("</p>").next())
        .expect("a failover paragraph");
    assert!(
        failover.starts_with("failover: 20 primary losses timed over all runs"),
        "{failover}"
    );
    assert!(failover.contains("max 530 ticks"), "{failover}");
}

#[test]
fn matrix_cells_are_coloured() {
    let html = render(&sample());
    let cells: Vec<&str> = html
        .match_indices("<td class=\"cell ")
        .map(|(i, _)| &html[i + 16..])
        .collect();
    let classes: Vec<&str> = cells.iter().map(|cell| &cell[..cell.find('"').unwrap_or(0)]).collect();
    // Rows heavy, light, none; columns echo, metadata.
    assert_eq!(classes, ["none", "fail", "fail", "vacuous", "none", "fail"]);
    assert!(html.contains("<span class=\"main\">1/3</span><span class=\"sub\">2 fail</span>"));
    assert!(html.contains("<span class=\"main\">2/3</span><span class=\"sub\">1 vacuous</span>"));
}

#[test]
fn failure_groups_listed_largest_first_smallest_seed_first() {
    let report = sample();
    let html = render(&report);
    let heading_a = format!("<h3 class=\"signature\"><code>{}</code></h3>", escape(SIG_A));
    let heading_b = format!("<h3 class=\"signature\"><code>{}</code></h3>", escape(SIG_B));
    assert_eq!(html.matches(&heading_a).count(), 1);
    assert_eq!(html.matches(&heading_b).count(), 1);
    let (Some(a), Some(b)) = (html.find(&heading_a), html.find(&heading_b)) else {
        panic!("headings missing");
    };
    assert!(a < b, "the larger group (3 runs) comes first");
    assert!(
        html.contains("<span class=\"seeds\">4, 9, 30</span>"),
        "smallest seed first"
    );
    let group_a = &html[a..b];
    let positions: Vec<usize> = [4u64, 9, 30]
        .iter()
        .map(|seed| group_a.find(&format!("--seed {seed} ")).unwrap_or(usize::MAX))
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "repro commands by seed: {positions:?}"
    );
    for run in report.runs.iter().filter(|run| run.verdict == RunVerdict::Fail) {
        assert!(html.contains(&escape(&run.command)), "repro of seed {}", run.seed);
    }
    assert!(
        html.contains(&escape(&format!("{SIG_A} at tick 40"))),
        "detail of the first (smallest) run"
    );
}

#[test]
fn detail_is_escaped() {
    let html = render(&sample());
    assert!(!html.contains("<script"), "raw script tag leaked");
    assert!(html.contains("panicked: &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quoted&quot; &#39;single&#39;"));
    assert!(html.contains("vacuous: compared 0 ops"));
}

#[test]
fn charts_have_one_mark_per_run() {
    let report = sample();
    let html = render(&report);
    for id in ["chart-wall", "chart-commits"] {
        let start = html.find(&format!("id=\"{id}\"")).unwrap_or(0);
        let end = start + html[start..].find("</svg>").unwrap_or(0);
        assert!(end > start, "{id} missing");
        let svg = &html[start..end];
        assert_eq!(svg.matches("class=\"mark ").count(), report.runs.len(), "{id}");
        let failed = report.runs.iter().filter(|run| run.verdict == RunVerdict::Fail).count();
        assert_eq!(
            svg.matches("class=\"mark fail\"").count(),
            failed,
            "{id}: failed runs in red"
        );
        assert!(svg.contains("run (report order)"));
    }
    assert!(html.contains(">wall time (ms)</text>"));
    assert!(html.contains(">commits</text>"));
}

#[test]
fn long_groups_are_cut_with_more_line() {
    let mut report = sample();
    for seed in 100..125 {
        report
            .runs
            .push(run("swarm", "metadata", seed, RunVerdict::Invalid, Some("bad profile")));
    }
    let html = render(&report);
    assert_well_formed(&html);
    let start = html.find("<code>bad profile</code></h3>").unwrap_or(0);
    let end = start + html[start..].find("</article>").unwrap_or(0);
    let group = &html[start..end];
    assert!(group.contains("(0 failed, 25 invalid)"));
    assert_eq!(group.matches("--bin workload-fuzz").count(), MAX_LISTED_PER_GROUP);
    assert!(group.contains("--seed 119 "));
    assert!(!group.contains("--seed 120 "));
    assert!(group.contains("+5 more (every command is in report.json)"));
    // The largest group now comes first.
    let (Some(invalid), Some(a)) = (
        html.find("<code>bad profile</code></h3>"),
        html.find(&format!("<code>{}</code></h3>", escape(SIG_A))),
    ) else {
        panic!("groups missing");
    };
    assert!(invalid < a);
}

#[test]
fn empty_report_renders() {
    let mut report = sample();
    report.runs.clear();
    report.shard = None;
    report.wall_seconds = 0.0;
    let html = render(&report);
    assert_well_formed(&html);
    assert!(html.contains("No failures."));
    assert!(html.contains("NO RUNS"));
    assert!(html.contains("whole campaign"));
    assert!(html.contains("<dd>n/a</dd>"));
}

#[test]
fn large_reports_chart_ranges_not_marks() {
    let mut report = sample();
    report.runs = (0..10_000u64)
        .map(|seed| {
            let verdict = if seed == 7777 {
                RunVerdict::Fail
            } else {
                RunVerdict::Pass
            };
            run(
                if seed < 5000 { "heavy" } else { "light" },
                "metadata",
                seed,
                verdict,
                None,
            )
        })
        .collect();
    let html = render(&report);
    assert_well_formed(&html);
    assert_eq!(html.matches("class=\"mark ").count(), 0);
    assert_eq!(html.matches("<line class=\"range ").count(), 2 * CHART_BUCKETS);
    assert_eq!(
        html.matches("<line class=\"range fail\"").count(),
        2,
        "the failed run's range, in each chart"
    );
    assert!(html.len() < 1_000_000, "page stays small: {} bytes", html.len());
}

#[test]
fn helpers() {
    assert_eq!(escape("a<b>&\"'\u{1}\n"), "a&lt;b&gt;&amp;&quot;&#39;\u{fffd}\n");
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(1000), "1,000");
    assert_eq!(thousands(1_234_567), "1,234,567");
    assert_eq!(duration(42.04), "42.0 s");
    assert_eq!(duration(723.0), "12 min 03 s");
    assert_eq!(duration(7503.0), "2 h 05 min 03 s");
    assert_eq!(nice_step(0.0), 1.0);
    assert_eq!(nice_step(100.0), 25.0);
    assert_eq!(nice_step(7.0), 2.0);
    assert_eq!(tick_label(2.5), "2.5");
    assert_eq!(tick_label(10000.0), "10,000");
}

/// Render the page in headless Chromium when it is installed: the page must load and
/// produce a non-empty screenshot. Skipped (passing) without Chromium.
#[test]
fn renders_in_headless_chromium() {
    let Some(browser) = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(std::path::Path::new)
        .find(|path| path.exists())
    else {
        println!("note: Chromium not found at /usr/bin/chromium or /usr/bin/chromium-browser; skipping");
        return;
    };
    let dir = std::env::temp_dir().join(format!("simulator-html-test-{}", std::process::id()));
    let profile = dir.join("profile");
    std::fs::create_dir_all(&profile).expect("create temp dir");
    let page = dir.join("report.html");
    let png = dir.join("report.png");
    std::fs::write(&page, render(&sample())).expect("write page");
    let mut child = std::process::Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--window-size=1200,1600",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start chromium");
    // Bounded: 120 polls of 500 ms.
    let mut status = None;
    for _ in 0..120 {
        if let Some(exit) = child.try_wait().expect("poll chromium") {
            status = Some(exit);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("chromium did not finish within 60 s");
    }
    let size = std::fs::metadata(&png).map(|meta| meta.len()).unwrap_or(0);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(size > 0, "chromium wrote no screenshot (exit {status:?})");
}

#[test]
fn a_nemesis_campaign_shows_its_fault_counts_availability_and_schedules_escaped() {
    use crate::nemesis_format::{FaultKind, FaultRecord, NemesisRun, NemesisSummary, RunStats};
    let mut report = sample();
    let mut summary = NemesisSummary {
        replay_note: "Real processes: a run cannot replay bit for bit.".to_owned(),
        namespaces: true,
        missing: vec!["clock-drift left out: <no libfaketime>".to_owned()],
        liveness_gap_ms_max: 30_000,
        ..NemesisSummary::default()
    };
    summary.add(NemesisRun {
        seed: 1000,
        mode: "exact".to_owned(),
        dir: "/tmp/run-1000".to_owned(),
        faults: vec![FaultRecord {
            start_ms: 1_500,
            end_ms: Some(2_700),
            kind: FaultKind::Split,
            nodes: vec![0],
            impaired: vec![0],
            detail: "[0] | [1, 2] <&>".to_owned(),
        }],
        stats: RunStats {
            acked_messages: 3_773,
            gap_by_kind_ms: [("split".to_owned(), 29_039)].into_iter().collect(),
            ..RunStats::default()
        },
    });
    report.nemesis = Some(summary);
    let html = render(&report);
    assert_well_formed(&html);
    assert!(html.contains("Real cluster (nemesis)"), "{html}");
    assert!(
        html.contains("<td>split</td><td>1</td><td>1.0</td><td>29039</td>"),
        "{html}"
    );
    assert!(html.contains("&lt;no libfaketime&gt;"), "{html}");
    assert!(html.contains("[0] | [1, 2] &lt;&amp;&gt;"), "{html}");
    assert!(html.contains("<td>3773</td>"), "{html}");
}

#[test]
fn an_exploration_draws_each_branched_roots_tree_of_timelines_with_failures_and_their_repros() {
    use crate::campaign::report::{ExploreRecord, ExploreSummary};
    let explored = |seed: u64, branches: &str, parent: Option<&str>, trigger: Option<(&str, u64)>, firsts: &[&str]| {
        let mut run = run("heavy", "mixed", seed, RunVerdict::Pass, None);
        run.command = format!("workload-fuzz --seed {seed} --branch {branches}");
        run.explore = Some(ExploreRecord {
            branches: branches.to_owned(),
            parent: parent.map(str::to_owned),
            trigger: trigger.map(|(name, _)| name.to_owned()),
            trigger_tick: trigger.map(|(_, tick)| tick),
            first_in_exploration: firsts.iter().map(|name| (*name).to_owned()).collect(),
            own_marks: Vec::new(),
        });
        run
    };
    let mut report = sample();
    report.runs = vec![
        explored(7, "", None, None, &["vc.escalated"]),
        explored(7, "101:1", Some(""), Some(("vc.escalated", 100)), &["wm.view>=8"]),
        explored(7, "1:1", Some(""), Some(("vc.escalated", 100)), &[]),
        explored(
            7,
            "101:1,480:1",
            Some("101:1"),
            Some(("wm.view>=8", 479)),
            &["catch_up.pin_released_idle"],
        ),
        explored(8, "", None, None, &[]),
    ];
    report.runs[3].verdict = RunVerdict::Fail;
    report.runs[3].signature = Some(SIG_B.to_owned());
    report.explore = Some(ExploreSummary {
        roots: 2,
        children: 3,
        splitpoints: 2,
        marks_first_reached_by_branching: vec!["catch_up.pin_released_idle".to_owned()],
        levels_first_reached_by_branching: vec!["wm.view>=8".to_owned()],
        target_marks: "catch_up.pin_released_idle".to_owned(),
        runs_reaching_targets: 1,
        first_reaching_targets: Some("workload-fuzz --seed 7 --branch 101:1,480:1".to_owned()),
    });
    let html = render(&report);
    assert_well_formed(&html);
    let section = &html[html
        .find("<section id=\"exploration\">")
        .expect("an exploration section")..];
    assert!(
        section.contains("5 runs: 2 roots, 3 branched from 2 splitpoints"),
        "{section}"
    );
    assert!(
        section.contains("1 roots were branched"),
        "seed 8 was not branched: no tree for it"
    );
    assert!(section.contains("heavy mixed seed 7: 4 timelines, <strong>1 failed</strong>"));
    assert!(section.contains("open=\"open\""), "a tree with a failure is open");
    // The child of a child is nested under its parent, with what made it branch and
    // its repro command, which names every branch point.
    let parent = section
        .find("<code>--branch 101:1</code> after <code>vc.escalated</code> (reached at tick 100)")
        .expect("child");
    let grandchild = section
        .find("<code>--branch 101:1,480:1</code> after <code>wm.view&gt;=8</code> (reached at tick 479)")
        .expect("grandchild");
    // A lead-up child branched before its trigger was reached: it plays that moment again.
    let sibling = section
        .find("<code>--branch 1:1</code> in the lead-up to <code>vc.escalated</code> (reached at tick 100)")
        .expect("second child, branched in the lead-up");
    assert!(parent < grandchild && grandchild < sibling, "depth first");
    assert!(section.contains("reached first: <code>catch_up.pin_released_idle</code>"));
    assert!(section.contains("workload-fuzz --seed 7 --branch 101:1,480:1</code>"));
    assert!(section.contains("targets: 1 runs reached every one of catch_up.pin_released_idle"));
    assert!(
        !render(&sample()).contains("id=\"exploration\""),
        "a plain campaign has no such section"
    );
}
