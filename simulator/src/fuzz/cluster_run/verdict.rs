//! The verdict of a consensus run: a failed check, or else whether the run compared
//! enough to mean something (vacuous otherwise), in a fixed order of reasons.

use super::super::args::Plane;
use super::super::{FuzzArgs, Verdict};
use super::setup::World;
use super::summary::Summary;
use crate::harness::CheckFailure;

/// Judge the run: the first failure, or the first reason it proved too little, or a
/// pass. An exhausted linearizability search is its own verdict: never a pass.
pub(super) fn judge(args: &FuzzArgs, failure: Option<CheckFailure>, summary: &Summary, world: &World) -> Verdict {
    if let Some(failure) = failure {
        return Verdict::Failed(failure.to_string());
    }
    match vacuous(args, summary, world) {
        Some(reason) => Verdict::Vacuous(reason),
        None => Verdict::Pass,
    }
}

/// Why a run in which nothing failed proved too little, if it did.
fn vacuous(args: &FuzzArgs, summary: &Summary, world: &World) -> Option<String> {
    let (commits, compared) = (summary.commits, summary.ops_compared);
    let linearizability = summary.linearizability();
    if commits < args.run.min_commits {
        return Some(format!(
            "{commits} committed ops, below --min-commits {}",
            args.run.min_commits
        ));
    }
    if compared < args.run.min_ops_compared {
        return Some(format!(
            "{compared} ops compared, below --min-ops-compared {}",
            args.run.min_ops_compared
        ));
    }
    if let Some(storage) = summary.storage
        && world.storage_faults.enabled()
        && storage.vacuous()
    {
        return Some(format!(
            "disk faults were asked for and the budget let the run expect {:.1} of them, but none was injected",
            storage.expected
        ));
    }
    if world.storage_faults.unsafe_budget {
        return Some(
            "--storage-faults unsafe lifts the fault budget: an exploration run is reported, never counted as a pass"
                .to_owned(),
        );
    }
    if args.asks_for_checkpoints() && summary.catch_up.checkpoints == 0 {
        return Some(format!(
            "asked for a small journal (--journal-slots {} --ring-entries {}) but no checkpoint was taken",
            args.run.journal_slots, args.run.ring_entries
        ));
    }
    if linearizability.is_some_and(|report| report.operations == 0) {
        return Some("the run checked no operation on the shared objects for linearizability".to_owned());
    }
    if let Some(undecided) = linearizability.and_then(|report| report.undecided.clone()) {
        return Some(format!("linearizability undecided: {undecided}"));
    }
    if args.plane == Plane::Contended {
        return None;
    }
    world
        .workload
        .borrow()
        .defining_outcome_missing(args.plane.name())
        .map(|missing| format!("the {} plane never saw {missing}", args.plane.name()))
}
