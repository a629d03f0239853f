//! The deterministic simulation harness for the `cluster` crate.
//!
//! Everything here runs on one thread and draws every decision (packet delays,
//! loss, partitions, task order, crashes) from one 64-bit seed, so a run replays
//! bit for bit on the same build. See `ARCHITECTURE.md` for the map.

pub mod adversary;
pub mod bus;
pub mod campaign;
pub mod clock;
pub mod echo;
pub mod executor;
pub mod fault_schedule;
pub mod fork_point;
pub mod fuzz;
pub mod harness;
pub mod html;
pub mod linearizability;
pub mod log;
pub mod nemesis;
pub mod nemesis_format;
pub mod network;
pub mod panic_report;
pub mod profile;
pub mod replay;
pub mod rng;
pub mod seeds;
pub mod signature;
pub mod simulation;
pub mod storage;
pub mod storage_sweep;
pub mod timeline;
pub mod trace;
pub mod workload;
