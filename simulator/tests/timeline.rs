//! Timelines: a run branched at a tick is its seed's run up to that tick and another
//! run after it, replays byte for byte from its repro command, and shrinks its branch
//! points away when the failure does not need them.

mod common;

use clap::Parser;
use simulator::fuzz::shrink::{ShrinkBounds, shrink};
use simulator::fuzz::{self, FuzzArgs, Verdict};

/// The run's flags, keeping its fault events for the report (see
/// [`common::recording_args`]).
fn args(flags: &str) -> FuzzArgs {
    common::recording_args(flags)
}

fn run(args: &FuzzArgs, seed: u64) -> (String, fuzz::RunReport) {
    common::run_args(args, seed)
}

/// Every drawn fault class at once, so the faults after a branch differ visibly.
const EVERY_FAULT: &str = "--plane mixed --faults heavy --ticks 3000 --clients 3 --crash-prob 0.004 --restart-prob 0.02 --power-loss-prob 0.5 --disk-error-prob 0.002 --power-outage-prob 0.0005";

const BRANCH_TICK: u64 = 1_500;

#[test]
fn a_branched_run_keeps_its_seeds_prefix_then_goes_its_own_way_and_replays_byte_for_byte() {
    let seed = 5;
    let (root_out, root) = run(&args(EVERY_FAULT), seed);
    assert!(
        !root_out.contains("timeline:"),
        "a run without branch points says nothing of them"
    );
    let branched_flags = format!("{EVERY_FAULT} --branch {BRANCH_TICK}:1");
    let (first_out, first) = run(&args(&branched_flags), seed);
    let (second_out, second) = run(&args(&branched_flags), seed);
    assert_eq!(first_out, second_out, "the same branch points are the same run");
    assert_eq!(first.schedule_hash, second.schedule_hash);
    assert!(
        first_out.contains("timeline: 1 of 1 branch points taken"),
        "{first_out}"
    );

    // Up to the branch, the seed's own faults; after it, others.
    let before = |report: &fuzz::RunReport| -> Vec<String> {
        report
            .faults
            .events
            .iter()
            .filter(|event| event.tick < BRANCH_TICK)
            .map(|event| format!("{event:?}"))
            .collect()
    };
    assert!(!before(&root).is_empty(), "the prefix injected faults to compare");
    assert_eq!(before(&first), before(&root), "the prefix is the seed's run");
    assert_ne!(first.faults, root.faults, "after the branch the run is another one");
    assert_ne!(first.schedule_hash, root.schedule_hash);

    // Another salt at the same tick is another child.
    let (_, other_salt) = run(&args(&format!("{EVERY_FAULT} --branch {BRANCH_TICK}:2")), seed);
    assert_eq!(before(&other_salt), before(&root));
    assert_ne!(other_salt.faults, first.faults, "salts 1 and 2 are different futures");

    // The repro command names the branch points and replays the run.
    let repro = args(&branched_flags).repro_command(seed);
    assert!(
        repro.contains(&format!("--seed {seed} --branch {BRANCH_TICK}:1")),
        "{repro}"
    );
    let (from_repro, replay_seed) = FuzzArgs::from_repro_command(&repro).expect("the repro reads back");
    let mut from_repro = from_repro;
    from_repro.keep_fault_schedule = true;
    let (replayed_out, _) = run(&from_repro, replay_seed);
    assert_eq!(replayed_out, first_out, "the repro command replays the branched run");
}

#[test]
fn a_branch_point_past_the_runs_end_is_reported_as_not_taken() {
    let (out, report) = run(&args("--plane metadata --ticks 300 --branch 200:3,1000000000:1"), 2);
    assert_eq!(report.verdict, Verdict::Pass, "{out}");
    assert!(
        out.contains("timeline: 1 of 2 branch points taken (the run ended before the rest's ticks)"),
        "{out}"
    );
}

#[test]
fn branch_points_are_refused_on_the_echo_plane_and_when_out_of_order() {
    let (out, report) = run(&args("--plane echo --ticks 100 --branch 50:1"), 1);
    let Verdict::Invalid(message) = report.verdict else {
        panic!("expected an invalid configuration: {out}");
    };
    assert!(message.contains("consensus planes"), "{message}");
    let refused = FuzzArgs::try_parse_from(["workload-fuzz", "--branch", "90:1,80:2"]).expect_err("out of order");
    assert!(refused.to_string().contains("strictly increasing"), "{refused}");
}

/// The planted failure of the shrink tests: the state checker fails on ops whose
/// checksum ends in twelve zero bits (`--break-check`).
const PLANTED: &str =
    "--plane metadata --faults light --ticks 5000 --clients 2 --crash-prob 0.002 --restart-prob 0.01 --break-check";

#[test]
fn a_failing_branched_run_replays_from_its_printed_command_and_its_shrink_keeps_the_point_only_if_needed() {
    // The first seed whose run, branched early, fails the planted check (which seed
    // depends on every op's checksum, so on the whole schedule: see tests/shrink.rs).
    let branched_flags = format!("{PLANTED} --branch 100:7");
    let (seed, failing_out, branched) = (1..=60u64)
        .find_map(|seed| {
            let (out, report) = run(&args(&branched_flags), seed);
            matches!(report.verdict, Verdict::Failed(_)).then_some((seed, out, report))
        })
        .expect("a seed of 1..=60 fails the planted check when branched at tick 100");
    // As a user meets it: the binary prints one command, and that command replays it.
    let binary = |flags: &[String]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_workload-fuzz"))
            .args(flags)
            .output()
            .expect("the workload-fuzz binary runs")
    };
    let flags: Vec<String> = format!("--seed {seed} {branched_flags}")
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let failing = binary(&flags);
    assert_eq!(failing.status.code(), Some(1), "{failing_out}");
    let stdout = String::from_utf8_lossy(&failing.stdout).into_owned();
    let printed = stdout
        .lines()
        .find_map(|line| line.strip_prefix("workload-fuzz FAILED, reproduce with: "))
        .unwrap_or_else(|| panic!("the failure prints its repro command:\n{stdout}"));
    assert!(printed.contains("--branch 100:7"), "{printed}");
    let replay_flags: Vec<String> = printed
        .split_once(" -- ")
        .expect("the command passes its flags after --")
        .1
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let replayed = binary(&replay_flags);
    assert_eq!(replayed.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&replayed.stdout),
        stdout,
        "the printed command replays the failure byte for byte"
    );

    // The shrink keeps a branch point the failure needs and drops one it does not. The
    // run it tries without the point replays the branched run's faults (every
    // candidate replays a schedule), so that run, not the seed's own, decides: the
    // seed's own run failing the same way held for the seed this finds until the
    // commit heartbeat began to name the primary's head, and then the two differed.
    let mut without_point = args(PLANTED);
    without_point.schedule = Some(branched.faults.clone());
    let (_, unbranched) = run(&without_point, seed);
    let same_failure_without = match (&unbranched.verdict, &branched.verdict) {
        (Verdict::Failed(without), Verdict::Failed(with)) => {
            simulator::signature::signature(without) == simulator::signature::signature(with)
        }
        _ => false,
    };
    let shrunk = shrink(
        &args(&branched_flags),
        seed,
        ShrinkBounds { runs: 60 },
        &mut || 0.0,
        &mut Vec::new(),
    )
    .expect("output")
    .expect("it fails, so it shrinks");
    assert_eq!(shrunk.original.branches, 1);
    assert_eq!(
        shrunk.shrunk.branches,
        if same_failure_without { 0 } else { 1 },
        "the run without the point (the branched run's faults) {} the same way: {:?}",
        if same_failure_without { "fails" } else { "does not fail" },
        shrunk.steps
    );
}

#[test]
fn a_branch_point_the_failure_never_reached_is_shrunk_away() {
    // A seed whose own run fails the planted check, branched after the failing tick:
    // the point is never taken, so the run without it fails the same way and is kept.
    let (seed, failed_at) = (1..=60u64)
        .find_map(|seed| {
            let (_, report) = run(&args(PLANTED), seed);
            matches!(report.verdict, Verdict::Failed(_)).then(|| (seed, report.failure_tick.expect("a failing tick")))
        })
        .expect("a seed of 1..=60 fails the planted check");
    let late = failed_at + 1;
    let flags = format!("{PLANTED} --branch {late}:3");
    let (out, report) = run(&args(&flags), seed);
    assert!(matches!(report.verdict, Verdict::Failed(_)), "{out}");
    assert!(out.contains("timeline: 0 of 1 branch points taken"), "{out}");
    let shrunk = shrink(
        &args(&flags),
        seed,
        ShrinkBounds { runs: 30 },
        &mut || 0.0,
        &mut Vec::new(),
    )
    .expect("output")
    .expect("it fails, so it shrinks");
    assert_eq!((shrunk.original.branches, shrunk.shrunk.branches), (1, 0));
    assert!(
        shrunk.steps[0].contains(&format!("branch point {late}:3 dropped")),
        "dropping branch points is the first pass: {:?}",
        shrunk.steps
    );
}
