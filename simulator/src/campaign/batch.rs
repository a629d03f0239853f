//! Runs of an exploration made together: the children of one splitpoint share their
//! parent's prefix, which a batch runs once, forking a copy for each child where its
//! timeline branches (`crate::fork_point`). The results are the runs' own, exactly as
//! if each were made from scratch (a test pins it), so batching changes how fast an
//! exploration goes, never what it finds.

#![allow(
    clippy::disallowed_methods,
    reason = "a batch's wall time is shared among its runs' records for the campaign's report and \
              time budget; no run reads it"
)]

use std::time::Instant;

use cluster::coverage::Point;
use serde::{Deserialize, Serialize};

use super::report::RunRecord;
use super::runner::execute_with_marks;
use super::spec::PlannedRun;
use crate::timeline::BranchPoint;

/// Children of one splitpoint a batch takes at most: an exploration gives a splitpoint
/// up to 8 children at a time (`EXPLORE_CHILDREN_RARE_MAX`), and a batch holds its
/// worker until every child is done, so a bound keeps one worker from taking a whole
/// lag's worth of runs.
pub const BATCH_RUNS_MAX: usize = 8;

/// The earliest branch point a batch forks at, in ticks: below it each child is made
/// from scratch. A copy costs about 10 ms beyond its run (most of it the copy's exit
/// unmapping the address space it shared: `wait4` took 9 ms a call under strace,
/// 2026-12-06), and a heavy partition run costs about 7.5 µs a tick, so a prefix
/// under about 1,300 ticks is cheaper to run again; 2,000 leaves room for lighter
/// runs. Four children of a 10,000-tick run branched at tick 1,000 took 0.91x as
/// long forked as from scratch; at tick 5,000 forking was 1.2x faster, at 9,000 1.7x.
pub const FORK_PREFIX_TICKS_MIN: u64 = 2_000;

/// How the children of a splitpoint are made (`campaign --branch-by`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum BranchBy {
    /// Run the prefix once per batch of siblings and fork a copy per child at the
    /// branch point (`fork(2)`).
    #[default]
    Fork,
    /// Run each child from scratch, prefix included.
    Rerun,
}

/// Whether `first` and `other` may be made in one batch: children (one branch point
/// at least) of the same root of the same sub-campaign (so the same seed and flags:
/// a root's run is planned from its position alone) and of the same timeline, that
/// differ only in their last point's salt.
pub fn are_siblings(first: &PlannedRun, other: &PlannedRun) -> bool {
    let (a, b) = (first.args.branch.points(), other.args.branch.points());
    let (Some((last_a, prefix_a)), Some((last_b, prefix_b))) = (a.split_last(), b.split_last()) else {
        return false;
    };
    let siblings = first.campaign == other.campaign
        && first.index == other.index
        && prefix_a == prefix_b
        && last_a.tick == last_b.tick
        && last_a.salt != last_b.salt;
    debug_assert!(
        !siblings || {
            let mut args = other.args.clone();
            args.branch = first.args.branch.clone();
            first.seed == other.seed && args.repro_command(other.seed) == first.args.repro_command(first.seed)
        },
        "siblings share their seed and flags"
    );
    siblings
}

/// A made run: its record and the tick that first reached each coverage point.
pub type MadeRun = (RunRecord, Vec<(Point, u64)>);

/// What a forked copy hands back: its run's record and first-reach ticks.
#[derive(Serialize, Deserialize)]
struct CopyResult {
    record: RunRecord,
    /// Each point's index ([`Point::index`]) and the tick that first reached it.
    first_reached: Vec<(u16, u64)>,
}

/// Make `runs` (siblings, see [`are_siblings`]; or one run) of sub-campaign `campaign`
/// and return each one's record and first-reach ticks, in order. With `by` =
/// [`BranchBy::Fork`] the shared prefix runs once (if it is at least
/// [`FORK_PREFIX_TICKS_MIN`] long), and each record's wall time is the batch's divided
/// among its runs (what each cost the campaign).
pub fn execute_batch(runs: &[PlannedRun], campaign: &str, by: BranchBy) -> Vec<MadeRun> {
    debug_assert!(runs.windows(2).all(|pair| are_siblings(&runs[0], &pair[1])));
    let tick = runs[0]
        .args
        .branch
        .points()
        .last()
        .map_or(0, |point: &BranchPoint| point.tick);
    if runs.len() < 2 || by == BranchBy::Rerun || tick < FORK_PREFIX_TICKS_MIN {
        return runs.iter().map(|run| execute_with_marks(run, campaign)).collect();
    }
    let started = Instant::now();
    crate::fork_point::arm(tick, runs[1..].iter().map(|run| run.args.branch.clone()).collect());
    let first = execute_with_marks(&runs[0], campaign);
    if let Some(index) = crate::fork_point::child_index() {
        // A copy, made as the first run reached the branch point: this is sibling
        // `index`'s run, which only its repro command does not know yet.
        // Quietly caught: a panic here must not unwind into the worker loop of the
        // copy, nor print (a stderr lock another thread held at the fork stays held);
        // the copy hands back nothing, and the parent makes the sibling from scratch.
        let bytes = crate::panic_report::catch_run(|| {
            let (mut record, first_reached) = first;
            record.command = runs[index].args.repro_command(runs[index].seed);
            let result = CopyResult {
                record,
                first_reached: first_reached
                    .into_iter()
                    .map(|(point, tick)| (point.index() as u16, tick))
                    .collect(),
            };
            serde_json::to_vec(&result).unwrap_or_default()
        })
        .unwrap_or_default();
        crate::fork_point::exit_child(&bytes);
    }
    let mut copies = crate::fork_point::disarm();
    // One entry per sibling, whatever became of the batch.
    copies.resize(runs.len() - 1, None);
    let mut results = vec![first];
    for (sibling, copy) in runs[1..].iter().zip(copies) {
        let made = copy
            .and_then(|bytes| serde_json::from_slice::<CopyResult>(&bytes).ok())
            .and_then(|copy| {
                let first_reached = copy
                    .first_reached
                    .into_iter()
                    .map(|(index, tick)| Point::all().nth(usize::from(index)).map(|point| (point, tick)))
                    .collect::<Option<Vec<_>>>()?;
                Some((copy.record, first_reached))
            });
        // No copy (the run ended before the branch point, or the copy failed): the
        // sibling is made from scratch, which gives the same result.
        results.push(made.unwrap_or_else(|| execute_with_marks(sibling, campaign)));
    }
    let share_ms = started.elapsed().as_secs_f64() * 1_000.0 / runs.len() as f64;
    for (record, _) in &mut results {
        record.wall_ms = share_ms;
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::FuzzArgs;
    use crate::timeline::Branches;
    use clap::Parser;

    /// Children of one parent timeline at `tick` with salts `1..=count`, of a short
    /// run that `flags` describe.
    fn siblings(flags: &str, seed: u64, parent: &str, tick: u64, count: u64) -> Vec<PlannedRun> {
        let parent = Branches::parse(parent).expect("a timeline");
        (1..=count)
            .map(|salt| {
                let mut args =
                    FuzzArgs::try_parse_from(std::iter::once("workload-fuzz").chain(flags.split_whitespace()))
                        .expect("valid flags");
                args.branch = parent.then(BranchPoint { tick, salt }).expect("a later point");
                PlannedRun {
                    index: 3,
                    campaign: 0,
                    profile: "heavy".to_owned(),
                    plane: "partition".to_owned(),
                    seed,
                    args,
                }
            })
            .collect()
    }

    /// `runs` made as a batch `by`, each record without what depends on the machine or
    /// the batch (wall time), and how long the batch took in milliseconds.
    fn made(runs: &[PlannedRun], by: BranchBy) -> (Vec<MadeRun>, f64) {
        let started = Instant::now();
        let mut results = execute_batch(runs, "batch", by);
        let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
        for (record, _) in &mut results {
            record.wall_ms = 0.0;
        }
        (results, elapsed_ms)
    }

    #[test]
    fn a_forked_batch_gives_each_child_the_result_it_gets_from_scratch() {
        let runs = siblings(
            "--plane partition --faults heavy --ticks 3000 --crash-prob 0.01 --restart-prob 0.05 --crash-primary --shards 2",
            0x5eed_0001,
            "300:2",
            2100,
            3,
        );
        assert!(runs.windows(2).all(|pair| are_siblings(&runs[0], &pair[1])));
        let before = crate::fork_point::copies_collected();
        let (forked, _) = made(&runs, BranchBy::Fork);
        assert_eq!(
            crate::fork_point::copies_collected() - before,
            2,
            "the second and third children were copies"
        );
        let (rerun, _) = made(&runs, BranchBy::Rerun);
        assert_eq!(forked.len(), 3);
        for (index, (forked, rerun)) in forked.iter().zip(&rerun).enumerate() {
            assert_eq!(forked, rerun, "child {index}: forked and from scratch differ");
        }
        let hashes: std::collections::BTreeSet<&str> =
            forked.iter().map(|(record, _)| record.schedule_hash.as_str()).collect();
        assert_eq!(hashes.len(), 3, "three salts, three futures: {hashes:?}");
        assert!(
            forked[2].0.command.contains("--branch 300:2,2100:3"),
            "each child names its own timeline: {}",
            forked[2].0.command
        );
    }

    #[test]
    fn a_failing_child_fails_the_same_forked_and_from_scratch() {
        // Queries answered without their confirmation round: salt 1 is a timeline an
        // exploration caught it on (seed 70000007 branched at tick 6081, found again
        // after the commit heartbeat began to name the primary's head; it was seed
        // 70000001 at tick 5825 in stop 59), the others other futures, which pass.
        let runs = siblings(
            "--ticks 10000 --replicas 3 --clients 8 --shards 2 --plane contended --faults split --crash-prob 0.01 \
             --restart-prob 0.05 --power-loss-prob 0.3 --crash-primary --crash-moments \
             --break-storage answer-queries-unconfirmed",
            70_000_007,
            "",
            6081,
            3,
        );
        let before = crate::fork_point::copies_collected();
        let (forked, _) = made(&runs, BranchBy::Fork);
        assert_eq!(crate::fork_point::copies_collected() - before, 2, "two copies");
        let (rerun, _) = made(&runs, BranchBy::Rerun);
        assert_eq!(forked, rerun);
        let verdicts: Vec<_> = forked.iter().map(|(record, _)| record.verdict).collect();
        assert_eq!(
            verdicts[0],
            super::super::report::RunVerdict::Fail,
            "the caught timeline fails: {verdicts:?}"
        );
    }

    /// The measurement behind `--branch-by fork` (ARCHITECTURE.md, "Timelines"): four
    /// children of a 10,000-tick heavy partition run branched at its middle, made
    /// forked and from scratch; prints both times (a measurement, so no bound on them:
    /// run it with `cargo test --release -p simulator --lib batch -- --ignored
    /// --nocapture`). What it checks is that both give the same runs.
    #[test]
    #[ignore = "a measurement: run by hand, in release"]
    fn measure_four_children_of_a_10000_tick_run_forked_against_from_scratch() {
        let runs = siblings(
            "--plane partition --faults heavy --ticks 10000 --crash-prob 0.01 --restart-prob 0.05 --crash-primary \
             --shards 2 --clients 4",
            0x5eed_0003,
            "",
            5000,
            4,
        );
        let (forked, forked_ms) = made(&runs, BranchBy::Fork);
        let (rerun, rerun_ms) = made(&runs, BranchBy::Rerun);
        assert_eq!(forked, rerun);
        let ticks: u64 = forked.iter().map(|(record, _)| record.ticks).sum();
        println!(
            "four children branched at tick 5,000 ({ticks} ticks in all): forked {forked_ms:.0} ms, from scratch \
             {rerun_ms:.0} ms ({:.2}x)",
            rerun_ms / forked_ms
        );
    }

    #[test]
    fn runs_of_other_timelines_or_ticks_are_no_siblings() {
        let runs = siblings("--plane metadata --ticks 100", 1, "50:1", 70, 2);
        let mut other_tick = runs[1].clone();
        other_tick.args.branch = Branches::parse("50:1,71:2").expect("a timeline");
        let mut other_parent = runs[1].clone();
        other_parent.args.branch = Branches::parse("50:2,70:2").expect("a timeline");
        let mut other_root = runs[1].clone();
        other_root.index = 4;
        let mut root = runs[1].clone();
        root.args.branch = Branches::none();
        assert!(are_siblings(&runs[0], &runs[1]));
        for (other, why) in [
            (&other_tick, "another tick"),
            (&other_parent, "another parent timeline"),
            (&other_root, "another root"),
            (&root, "a root"),
            (&runs[0], "itself (same salt)"),
        ] {
            assert!(!are_siblings(&runs[0], other), "{why}");
        }
    }
}
