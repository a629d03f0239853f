//! `storage-sweep`: crash the disk at every step of a piece of real storage code.
//!
//! A sweep runs one piece of production storage code (a superblock write, a WAL append,
//! a segment roll, ...) on a [`SimStorage`], first without faults to record its
//! operation trace. Then, for every position in that trace, every [`FaultKind`] (plus
//! "no fault": the process simply dies there), both [`CrashKind`]s and background
//! writeback on and off, it runs the code again with that fault planned, crashes (right
//! after that operation when no fault is planned, else at the end, once the code has
//! reacted to the fault or, for a silent tear, built on it), runs the real recovery code
//! on what is left, and checks what it recovered against what the code acknowledged:
//!
//! - nothing acknowledged as durable is lost;
//! - nothing that was never written appears;
//! - recovery never panics and never fails on damage the format claims to survive.
//!
//! What it does not model: faults during recovery itself (recovery runs fault-free),
//! misdirected writes (beyond what the formats claim), and concurrency between two
//! writers of one file.

mod case;
mod ledger;
mod runner;
pub mod sweeps;

use std::future::Future;

pub use case::{Case, CaseFault, CaseParseError};
pub use ledger::Ledger;
pub use runner::{CaseFailure, SweepSummary, cases, fault_free_trace, run_case, run_sweep, trace_operations};

use crate::storage::SimStorage;
pub use crate::storage::{CrashKind, FaultKind};

/// A [`Sweep`]'s `name` and `description`, written in one line of its impl:
/// `sweep_about!("superblock-write", "SuperblockFile::write ...");`.
#[macro_export]
macro_rules! sweep_about {
    ($name:literal, $description:literal) => {
        fn name(&self) -> &'static str {
            $name
        }

        fn description(&self) -> &'static str {
            $description
        }
    };
}

/// One piece of storage code to crash at every step.
pub trait Sweep {
    /// The name `--sweep` takes.
    fn name(&self) -> &'static str;

    /// One line: which real code runs and what recovery must preserve.
    fn description(&self) -> &'static str;

    /// Run the code under test on `storage`, recording in the returned ledger what it
    /// acknowledged as durable and everything it attempted to write. An I/O error is
    /// not a failure: the code gives up as production would, and the sweep crashes.
    fn run(&self, storage: &SimStorage) -> Ledger;

    /// Run the real recovery code on what a crash left in `storage` and compare it with
    /// `ledger`. `Ok` carries how many acknowledged items were compared; `Err` says what
    /// was lost, invented or refused.
    fn recover_and_check(&self, storage: &SimStorage, ledger: &Ledger, context: CheckContext) -> Result<u64, String>;
}

/// What the check may assume about the case it checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckContext {
    /// The case tore a write and reported success: the device lied, so an acknowledged
    /// item may be damaged on this one disk. Recovery must then NOTICE the damage
    /// (report it, for repair from peers); losing an item silently still fails.
    pub silent_fault: bool,
    /// The case tore a `sync` and reported success: the device claimed durability it
    /// did not provide. What it dropped may read back as zeros, which no single-disk
    /// format can tell from never-written space, so acknowledged items may be lost
    /// without notice. Only peers can restore them; the cluster simulation's fault
    /// budget keeps this to one replica's copy at a time. Items that do come back must
    /// still be ones that were written.
    pub lying_sync: bool,
}

/// Every sweep, in the order `--list` prints them.
pub fn all() -> Vec<Box<dyn Sweep>> {
    sweeps::all()
}

/// Drive a storage future to completion. SimStorage never returns `Pending`, so a
/// future that does is a bug in the sweep (it awaited something other than storage).
pub fn ready<F: Future>(future: F) -> F::Output {
    futures::FutureExt::now_or_never(future)
        .expect("storage-sweep futures are SimStorage calls, which complete immediately")
}
