//! The fault phase: `--ticks` of workload under every fault the run draws (network,
//! crashes and restarts, disk faults), with whole-cluster outages run as they come
//! (their quiet, dark and recovery ticks come on top of `--ticks`).
//!
//! The per-tick checks run inside every step; the workload's own classification of
//! each answer is read after every tick.

use super::super::RunReport;
use super::setup::World;
use crate::harness::{CheckFailure, Harness};
use crate::workload::MetadataWorkload;

/// Run the phase; the first failure ends it. Keeps `report.failure_fault_ticks` at
/// the `--ticks` that reproduces a failure (outages make the phase longer than its
/// `--ticks`), and clears it when nothing failed.
pub(super) fn run(ticks: u64, world: &mut World, report: &mut RunReport) -> Option<CheckFailure> {
    let World {
        harness,
        workload,
        outages,
        ..
    } = world;
    // Branch points the outage coin has followed (the harness takes them, in tick
    // order, inside its steps, outages' own steps included).
    let mut branches_followed = harness.branches_taken();
    for fault_tick in 1..=ticks {
        // If this tick fails, `--ticks` of this many reproduces the failure.
        report.failure_fault_ticks = Some(fault_tick);
        if let Err(error) = harness.step() {
            return Some(error);
        }
        follow_branches(harness, outages, &mut branches_followed);
        if outages.due(harness.simulation().tick()) {
            harness.trace_cluster_fault(
                "outage",
                "every replica loses power (once the cluster is quiet)".to_owned(),
            );
            if let Err(error) = outages.run(harness, workload) {
                return Some(error);
            }
        }
        if let Some(failure) = workload_failure(harness, &workload.borrow()) {
            return Some(failure);
        }
    }
    report.failure_fault_ticks = None;
    None
}

/// Reseed the outage coin, which the harness does not own, with every branch point the
/// harness took since the last call (the points are taken in order, one per tick).
fn follow_branches(harness: &Harness, outages: &mut crate::fuzz::outage::Outages, followed: &mut usize) {
    let taken = harness.branches_taken();
    for point in &harness.branches().points()[*followed..taken] {
        outages.branch(point.key());
    }
    *followed = taken;
}

/// The first answer the workload could not classify against its prediction, as a
/// `workload` check failure at the harness's tick.
pub(super) fn workload_failure(harness: &Harness, workload: &MetadataWorkload) -> Option<CheckFailure> {
    workload.failures().first().map(|first| CheckFailure {
        check: "workload",
        detail: first.clone(),
        tick: harness.simulation().tick(),
    })
}
