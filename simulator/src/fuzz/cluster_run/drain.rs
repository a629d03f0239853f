//! The drain, after the fault and liveness phases: no new requests, crashes stop,
//! (after the liveness phase, or with `--heal-before-quiesce`) the network heals and
//! every crashed replica restarts; then every outstanding request must be answered and
//! the cluster must settle on one view within [`QUIESCE_TICKS_MAX`].

use super::super::liveness::network_loss;
use super::super::settle::{groups_known_to, settled};
use super::super::timeliness::{Timeliness, TimelinessFigures};
use super::fault_phase::workload_failure;
use super::setup::World;
use crate::harness::{CheckFailure, Harness};

/// Ticks the end-of-run drain may take to answer every outstanding request and settle
/// on one view. Generous (200 s of cluster time, forty liveness windows) so that only
/// a real wedge runs it out, and bounded so a wedge fails instead of hanging.
pub const QUIESCE_TICKS_MAX: u64 = 20_000;

/// Incarnations of the replicas the heal restarts (distinct from the crash
/// injector's and the liveness core's, for the logs).
const HEAL_RESTART_INCARNATION: u64 = 0x4EA1_0000;

/// Run the drain; `heal` first heals the network and restarts every crashed replica,
/// and then holds every group to the timeliness bounds (without a heal, a partition
/// may rightly hold a group back). Returns the failure, if any, and the timeliness
/// figures of a healed drain.
pub(super) fn run(world: &mut World, heal: bool) -> (Option<CheckFailure>, Option<TimelinessFigures>) {
    let World { harness, workload, .. } = world;
    workload.borrow_mut().stop();
    harness.disable_crashes();
    let mut timeliness = None;
    if heal {
        heal_everything(harness);
        let everyone: Vec<usize> = (0..replica_count(harness)).collect();
        timeliness = Some(Timeliness::new(harness, "drain", everyone, 0, network_loss(harness)));
    }
    let mut drained = false;
    for _ in 0..QUIESCE_TICKS_MAX {
        if let Some(timeliness) = &mut timeliness
            && let Err(error) = timeliness.observe(harness, &groups_known_to(harness, None))
        {
            return (Some(error), None);
        }
        if workload.borrow().outstanding() == 0 && settled(harness) {
            drained = true;
            break;
        }
        if let Err(error) = harness.step() {
            return (Some(error), None);
        }
    }
    let figures = timeliness.map(|timeliness| timeliness.figures());
    if !drained {
        let failure = CheckFailure {
            check: "drain",
            detail: format!(
                "after {QUIESCE_TICKS_MAX} ticks of drain, {} requests are outstanding and the cluster has {}settled on one view",
                workload.borrow().outstanding(),
                if settled(harness) { "" } else { "not " }
            ),
            tick: harness.simulation().tick(),
        };
        return (Some(failure), figures);
    }
    (workload_failure(harness, &workload.borrow()), figures)
}

/// The cluster's replica count (its processes less its clients).
fn replica_count(harness: &Harness) -> usize {
    harness.simulation().process_count() - harness.client_stats().len()
}

/// Heal the network and restart every crashed replica.
fn heal_everything(harness: &mut Harness) {
    harness.simulation_mut().network_mut().calm();
    let live: Vec<usize> = harness.live_replicas().iter().map(|(index, _)| *index).collect();
    for index in (0..replica_count(harness)).filter(|index| !live.contains(index)) {
        harness.restart_now(index, HEAL_RESTART_INCARNATION + index as u64);
    }
}
