//! Enumerate a sweep's cases and run them, each in isolation.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::{Case, CaseFault, CheckContext, CrashKind, FaultKind, Sweep};
use crate::storage::{PlannedFault, SimStorage, SimStorageOptions, TraceEntry, TraceOp};

/// What one sweep did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepSummary {
    /// Operations in the fault-free trace.
    pub trace_operations: u64,
    /// Cases run.
    pub cases: u64,
    /// Acknowledged items compared across every case.
    pub acknowledged_compared: u64,
    /// The first failing case, if any (the sweep stops there).
    pub failure: Option<CaseFailure>,
}

/// A case that lost, invented or refused something, or panicked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseFailure {
    /// The case.
    pub case: Case,
    /// What went wrong.
    pub detail: String,
}

/// The storage seed of one case: fixed by the sweep seed and the case, so a case run
/// alone (`--case`) draws the same writeback order and tears as inside the full sweep.
fn case_seed(seed: u64, case: &Case) -> u64 {
    let fault = CaseFault::all()
        .iter()
        .position(|fault| *fault == case.fault)
        .unwrap_or(0) as u64;
    let crash = CrashKind::ALL
        .iter()
        .position(|crash| *crash == case.crash)
        .unwrap_or(0) as u64;
    let mut mixed = seed ^ 0x9e37_79b9_7f4a_7c15;
    for part in [case.position, fault, crash, u64::from(case.writeback)] {
        mixed = (mixed ^ part).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        mixed ^= mixed >> 31;
    }
    mixed
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a non-text payload".to_owned())
}

/// Run one case: plan the fault, run the code (halting right after the operation at the
/// case's position when it plans no fault), crash, recover and check. `Ok` is the number of acknowledged items compared.
pub fn run_case(sweep: &dyn Sweep, seed: u64, case: &Case) -> Result<u64, String> {
    let fault = match case.fault {
        CaseFault::None => None,
        CaseFault::Fault(kind) => Some(PlannedFault {
            position: case.position,
            kind,
        }),
    };
    let storage = SimStorage::new(SimStorageOptions {
        seed: case_seed(seed, case),
        writeback: case.writeback,
        fault,
        // With no fault, the process dies right after the operation at `position`.
        // With a fault, the code meets it and reacts as production would (an error
        // poisons the structure and stops it; a silent tear goes unnoticed and the code
        // carries on, acknowledging what it believes it wrote), and the process dies at
        // the end of the run: a lie is only dangerous once something is acknowledged
        // on top of it.
        halt_after: (case.fault == CaseFault::None).then_some(case.position),
        ..SimStorageOptions::default()
    });
    let ledger = catch_unwind(AssertUnwindSafe(|| sweep.run(&storage)))
        .map_err(|payload| format!("the code under test panicked: {}", panic_message(payload.as_ref())))?;
    let silent = case.fault == CaseFault::Fault(FaultKind::TornSilent);
    let faulted_op = storage
        .trace()
        .iter()
        .find(|entry| entry.position == case.position)
        .map(|entry| entry.op);
    let lying_sync = silent && matches!(faulted_op, Some(TraceOp::Sync));
    let context = CheckContext {
        silent_fault: silent && !lying_sync,
        lying_sync,
    };
    storage.crash(case.crash);
    catch_unwind(AssertUnwindSafe(|| sweep.recover_and_check(&storage, &ledger, context)))
        .map_err(|payload| format!("recovery panicked: {}", panic_message(payload.as_ref())))?
}

/// The operations of a fault-free run, which the cases are positioned over.
pub fn trace_operations(sweep: &dyn Sweep) -> Result<u64, String> {
    let storage = SimStorage::new(SimStorageOptions::default());
    let ledger = catch_unwind(AssertUnwindSafe(|| sweep.run(&storage)))
        .map_err(|payload| format!("the fault-free run panicked: {}", panic_message(payload.as_ref())))?;
    if ledger.acknowledged().is_empty() {
        return Err("the fault-free run acknowledged nothing, so no case could check anything".to_owned());
    }
    Ok(storage.operations())
}

/// The operations a fault-free run of `sweep` makes, in order.
pub fn fault_free_trace(sweep: &dyn Sweep) -> Vec<TraceEntry> {
    let storage = SimStorage::new(SimStorageOptions::default());
    let _ = catch_unwind(AssertUnwindSafe(|| sweep.run(&storage)));
    storage.trace()
}

/// Every case of a sweep over a trace of `operations` operations.
pub fn cases(operations: u64) -> impl Iterator<Item = Case> {
    (0..operations).flat_map(|position| {
        CaseFault::all().into_iter().flat_map(move |fault| {
            CrashKind::ALL.into_iter().flat_map(move |crash| {
                [false, true].into_iter().map(move |writeback| Case {
                    position,
                    fault,
                    crash,
                    writeback,
                })
            })
        })
    })
}

/// Run every case of `sweep`, stopping at the first failure.
pub fn run_sweep(sweep: &dyn Sweep, seed: u64) -> SweepSummary {
    let mut summary = SweepSummary::default();
    let operations = match trace_operations(sweep) {
        Ok(operations) => operations,
        Err(detail) => {
            let case = Case {
                position: 0,
                fault: CaseFault::None,
                crash: CrashKind::Process,
                writeback: false,
            };
            summary.failure = Some(CaseFailure { case, detail });
            return summary;
        }
    };
    summary.trace_operations = operations;
    for case in cases(operations) {
        summary.cases += 1;
        match run_case(sweep, seed, &case) {
            Ok(compared) => summary.acknowledged_compared += compared,
            Err(detail) => {
                summary.failure = Some(CaseFailure { case, detail });
                break;
            }
        }
    }
    summary
}
