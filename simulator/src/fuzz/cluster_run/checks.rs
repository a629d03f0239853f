//! The end-of-run checks that run once the cluster has drained (or the run was told
//! not to drain): the per-tick checks in full over every group, and the
//! linearizability of every shared object's history (the contended plane, `--shared`).

use super::super::settle::final_log;
use super::setup::World;
use crate::harness::CheckFailure;
use crate::workload::{Contended, LinearizabilityReport};

/// The run's last tick checked in full, whatever the interval of full checks: every
/// group, quiet or not (see `FULL_CHECK_INTERVAL_TICKS`).
pub(super) fn in_full(world: &mut World) -> Option<CheckFailure> {
    world.harness.check_in_full().err()
}

/// After a drain, each shared partition's final log (on its primary) settles what it
/// can of the sends whose outcome was unknown; a final log that contradicts an
/// acknowledged send is a `linearizability` failure.
pub(super) fn settle_with_final_logs(world: &World) -> Option<CheckFailure> {
    let harness = &world.harness;
    let mut workload = world.workload.borrow_mut();
    let contended = workload.contended_mut()?;
    let tick = harness.simulation().tick();
    contended
        .settle_with_final_logs(tick, |group| final_log(harness, group))
        .err()
        .map(|detail| CheckFailure {
            check: "linearizability",
            detail,
            tick,
        })
}

/// Every shared object's history against its sequential model (answers still open
/// count as unknown outcomes); `None` when the run has no shared objects.
pub(super) fn linearizability(world: &World) -> Option<LinearizabilityReport> {
    world.workload.borrow().contended().map(Contended::check)
}

/// The report's violation, if it found one, as a failure at the harness's tick.
pub(super) fn linearizability_failure(world: &World, report: Option<&LinearizabilityReport>) -> Option<CheckFailure> {
    let violation = report?.violation.clone()?;
    Some(CheckFailure {
        check: "linearizability",
        detail: violation,
        tick: world.harness.simulation().tick(),
    })
}
