//! The deterministic simulation harness for the `cluster` crate.
//!
//! Everything here runs on one thread and draws every decision (packet delays,
//! loss, partitions, task order, crashes) from one 64-bit seed, so a run replays
//! bit for bit on the same build. See `ARCHITECTURE.md` for the map.

pub mod executor;
pub mod network;
pub mod profile;
pub mod rng;
