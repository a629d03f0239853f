//! From a failing seed to a fix: fault schedules that replay, the shrink to a smaller
//! failing run, and the trace of a run.

mod common;

use simulator::fault_schedule::{Fault, FaultSchedule};
use simulator::fuzz::shrink::{ShrinkBounds, shrink};
use simulator::fuzz::{self, FuzzArgs, Verdict};
use simulator::signature::signature;

/// The run's flags, keeping its fault events for the report (see
/// [`common::recording_args`]).
fn args(flags: &str) -> FuzzArgs {
    common::recording_args(flags)
}

fn run(args: &FuzzArgs, seed: u64) -> (String, fuzz::RunReport) {
    common::run_args(args, seed)
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("shrink-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Every fault class at once: crashes with power cuts, disk errors, rot, outages,
/// partitions and clogs.
const EVERY_FAULT: &str = "--plane uniform --faults heavy --ticks 3000 --crash-prob 0.003 --restart-prob 0.02 --power-loss-prob 0.5 --disk-error-prob 0.002 --disk-corruption-prob 0.5 --power-outage-prob 0.0005 --crash-moments";

#[test]
fn a_recorded_schedule_replays_the_run_byte_for_byte() {
    let recording = args(EVERY_FAULT);
    let (original, report) = run(&recording, 5);
    let kinds: std::collections::BTreeSet<&str> = report.faults.events.iter().map(|e| e.fault.kind()).collect();
    for kind in ["clog", "partition", "heal", "disk-errors", "restart", "outage"] {
        assert!(kinds.contains(kind), "the run injected no {kind}: {kinds:?}");
    }
    assert!(
        kinds.contains("crash") || kinds.contains("power-loss"),
        "the run crashed no replica: {kinds:?}"
    );
    assert!(
        original.contains(&report.faults.summary()),
        "the output names its schedule"
    );

    // Through a file, as a user replays it.
    let dir = scratch("replay");
    let path = dir.join("faults.jsonl");
    report.faults.write(&path).expect("write");
    let mut replaying = args(EVERY_FAULT);
    replaying.faults_from = Some(path.clone());
    let (replayed, replay_report) = run(&replaying, 5);
    assert_eq!(replayed, original, "a replayed schedule is the same run");
    assert_eq!(replay_report.schedule_hash, report.schedule_hash);
    assert_eq!(replay_report.faults, report.faults, "and injects the same faults");
    assert!(
        replaying
            .repro_command(5)
            .contains(&format!("--faults-from {}", path.display())),
        "the repro names the schedule"
    );
    std::fs::remove_dir_all(dir).expect("cleanup");
}

#[test]
fn an_edited_schedule_makes_another_run_as_deterministic_as_the_first() {
    let (original, report) = run(&args(EVERY_FAULT), 5);
    let mut edited = args(EVERY_FAULT);
    let kept: Vec<_> = report
        .faults
        .events
        .iter()
        .filter(|event| !matches!(event.fault, Fault::Clog { .. } | Fault::Outage))
        .cloned()
        .collect();
    edited.schedule = Some(FaultSchedule::new(kept));
    let (first, first_report) = run(&edited, 5);
    let (second, _) = run(&edited, 5);
    assert_eq!(first, second, "an edited schedule replays too");
    assert_ne!(first, original, "and is another run");
    assert!(
        first_report
            .faults
            .events
            .iter()
            .all(|event| !matches!(event.fault, Fault::Clog { .. } | Fault::Outage)),
        "no clog and no outage was drawn in place of the ones taken out"
    );
}

#[test]
fn a_bad_schedule_file_is_a_clear_invalid_configuration() {
    let dir = scratch("bad");
    let path = dir.join("faults.jsonl");
    std::fs::write(
        &path,
        "{\"tick\":3,\"fault\":\"heal\"}\n{\"tick\":9,\"fault\":\"crash\",\"replica\":\"one\"}\n",
    )
    .expect("write");
    let mut replaying = args("--plane metadata --ticks 100");
    replaying.faults_from = Some(path.clone());
    let (out, report) = run(&replaying, 1);
    let Verdict::Invalid(message) = report.verdict else {
        panic!("expected an invalid configuration: {out}");
    };
    assert!(message.contains("line 2"), "{message}");
    assert!(message.contains(&path.display().to_string()), "{message}");
    std::fs::remove_dir_all(dir).expect("cleanup");
}

/// The planted failure: the state checker fails on ops whose checksum ends in twelve
/// zero bits (`--break-check`), in the first seed of [`PLANTED_SEEDS`] whose run with
/// these flags applies such an op ([`planted_seed`], as `scripts/shrink-smoke.sh`
/// picks it).
///
/// Which seed that is depends on every op's checksum, so on the whole schedule: seed
/// 12 served until issue #21's gap placeholders changed the storage calls, seed 9
/// until its WAL gap floor did. Pinning one seed made every change of schedule break
/// these tests for no fault of the shrinker or the trace; taking the first seed of a
/// range that shows what a test needs keeps them about what they test, and they still
/// fail if no seed of the range does.
const PLANTED_SEEDS: std::ops::RangeInclusive<u64> = 1..=60;

/// The first seed of [`PLANTED_SEEDS`] whose run with [`PLANTED`] passes `wanted`.
fn first_seed(what: &str, wanted: impl Fn(&fuzz::RunReport) -> bool) -> u64 {
    let failing = args(PLANTED);
    PLANTED_SEEDS
        .clone()
        .find(|&seed| wanted(&run(&failing, seed).1))
        .unwrap_or_else(|| panic!("no seed of {PLANTED_SEEDS:?} {what}"))
}

/// The first seed whose run fails the planted check.
fn planted_seed() -> u64 {
    first_seed("fails the planted check", |report| {
        matches!(report.verdict, Verdict::Failed(_))
    })
}

/// The first seed whose run fails the planted check in its second half, after a
/// crash: long enough to have created partitions, with crashes for the trace to mark.
fn planted_late_seed() -> u64 {
    let ticks = args(PLANTED).ticks;
    first_seed("fails the planted check late in its run, after a crash", |report| {
        let Some(failed_at) = report.failure_tick else {
            return false;
        };
        let crashed_before = report
            .faults
            .events
            .iter()
            .any(|e| e.fault.kind() == "crash" && e.tick < failed_at);
        matches!(report.verdict, Verdict::Failed(_)) && failed_at >= ticks / 2 && crashed_before
    })
}

const PLANTED: &str =
    "--plane metadata --faults light --ticks 5000 --clients 2 --crash-prob 0.002 --restart-prob 0.01 --break-check";

#[test]
fn a_planted_failure_shrinks_at_least_five_fold_and_keeps_its_signature_and_shrinks_the_same_twice() {
    let failing = args(PLANTED);
    let planted = planted_seed();
    let (_, original) = run(&failing, planted);
    let Verdict::Failed(reason) = &original.verdict else {
        panic!("the planted failure must fail: {:?}", original.verdict);
    };
    let bounds = ShrinkBounds { runs: 120 };
    let mut no_time_used = || 0.0;
    let mut steps = Vec::new();
    let shrunk = shrink(&failing, planted, bounds, &mut no_time_used, &mut steps)
        .expect("output")
        .expect("it fails, so it shrinks");
    assert_eq!(shrunk.signature, signature(reason));
    assert!(
        shrunk.ticks_ratio() >= 5.0 || shrunk.events_ratio() >= 5.0,
        "at least five times smaller in ticks or fault events: {}",
        shrunk.summary()
    );
    assert!(!shrunk.steps.is_empty());
    assert_eq!(shrunk.original.events, original.faults.events.len());

    // The smallest run, replayed from its schedule file, fails the same way.
    let dir = scratch("planted");
    let path = dir.join("shrunk.jsonl");
    shrunk.schedule.write(&path).expect("write");
    let mut repro = shrunk.args.clone();
    repro.schedule = None;
    repro.faults_from = Some(path);
    let (_, replayed) = run(&repro, planted);
    let Verdict::Failed(again) = &replayed.verdict else {
        panic!("the shrunk repro must fail: {:?}", replayed.verdict);
    };
    assert_eq!(signature(again), shrunk.signature);
    assert_eq!(replayed.faults, shrunk.schedule);

    // Deterministic: the same search finds the same run.
    let mut steps_again = Vec::new();
    let twice = shrink(&failing, planted, bounds, &mut no_time_used, &mut steps_again)
        .expect("output")
        .expect("shrinks");
    assert_eq!(steps_again, steps, "the same steps, byte for byte");
    assert_eq!(twice.schedule, shrunk.schedule);
    assert_eq!(twice.shrunk, shrunk.shrunk);
    std::fs::remove_dir_all(dir).expect("cleanup");
}

#[test]
fn a_passing_run_has_nothing_to_shrink() {
    let passing = args("--plane metadata --ticks 300");
    let mut out = Vec::new();
    let shrunk = shrink(&passing, 3, ShrinkBounds { runs: 10 }, &mut || 0.0, &mut out).expect("output");
    assert!(shrunk.is_none());
    assert!(String::from_utf8_lossy(&out).contains("does not fail"));
}

#[test]
fn a_trace_holds_a_track_per_replica_and_group_and_changes_nothing() {
    let flags = PLANTED;
    let plain = args(flags);
    let planted = planted_late_seed();
    let (untraced, _) = run(&plain, planted);
    let mut traced = args(flags);
    traced.trace = Some("unused-by-the-library.json".into());
    let (output, report) = run(&traced, planted);
    assert_eq!(output, untraced, "tracing changes nothing the run prints");
    let trace = report.trace.expect("a trace was asked for");
    let mut bytes = Vec::new();
    trace.write_chrome_json(&mut bytes).expect("write");
    let json: serde_json::Value = serde_json::from_slice(&bytes).expect("the trace is JSON");
    let events = json["traceEvents"].as_array().expect("traceEvents");
    let named = |name: &str| {
        events
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
            .any(|e| e["args"]["name"] == name)
    };
    for process in ["replica 0", "replica 1", "replica 2", "client 0", "client 1"] {
        assert!(named(process), "a track for {process}");
    }
    let threads: Vec<&str> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    assert!(threads.contains(&"metadata"), "{threads:?}");
    assert!(
        threads.iter().any(|name| name.starts_with("partition 0x")),
        "a track per partition group: {threads:?}"
    );
    let spans = |prefix: &str| {
        events
            .iter()
            .filter(|e| e["ph"] == "X" && e["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
            .count()
    };
    assert!(spans("normal v") > 0, "status and view spans");
    assert!(spans("op ") > 0, "client requests from send to answer");
    let counters = events.iter().filter(|e| e["ph"] == "C").count();
    assert!(counters > 0, "commit and head counters");
    let instants = |name: &str| events.iter().filter(|e| e["ph"] == "i" && e["name"] == name).count();
    let crashes = report
        .faults
        .events
        .iter()
        .filter(|e| e.fault.kind() == "crash")
        .count();
    assert!(crashes > 0, "the run crashed a replica");
    assert!(instants("crash") >= crashes, "every crash is marked");
    assert!(instants("restart") > 0 && instants("clog") > 0);
    let last = events.last().expect("events");
    assert_eq!(last["cat"], "failure", "the failing check is the final mark: {last}");
    assert!(
        last["name"]
            .as_str()
            .is_some_and(|name| name.starts_with("FAILED: broken check"))
    );
    assert_eq!(
        last["ts"].as_u64(),
        report.failure_tick.map(|tick| tick * 10_000),
        "at the failing tick, in virtual microseconds"
    );
}

#[test]
fn a_run_that_keeps_no_fault_events_prints_the_same_counts() {
    let kept = args(EVERY_FAULT);
    let mut counted = args(EVERY_FAULT);
    counted.keep_fault_schedule = false;
    assert!(!counted.keeps_fault_schedule(), "a plain run keeps none");
    let (kept_output, kept_report) = run(&kept, 5);
    let (counted_output, counted_report) = run(&counted, 5);
    assert!(!kept_report.faults.events.is_empty());
    assert!(counted_report.faults.events.is_empty(), "nothing kept");
    assert_eq!(
        counted_output, kept_output,
        "the same run, the same fault schedule line"
    );
    assert!(counted_output.contains(&kept_report.faults.summary()));
}
