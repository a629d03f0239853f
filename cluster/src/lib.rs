//! The replicated message-streaming cluster.
//!
//! Cluster logic reaches the outside world only through [`seam`]: a [`seam::Bus`]
//! (send, sleep, spawn, realtime clock) and the [`seam::DurableStorage`] traits.
//! Production implementations live in [`runtime`] (tokio, real files, the system
//! clock); the simulator crate provides deterministic ones. Nothing else in this
//! crate may read the OS clock, OS randomness or spawn threads (`clippy.toml`).

pub mod client;
mod codec;
pub mod coverage;
pub mod metadata;
pub mod node;
pub mod partition;
pub mod routing;
pub mod runtime;
pub mod seam;
pub mod server;
pub mod shard;
pub mod storage;
pub mod testing;
pub mod vsr;
pub mod wire;
