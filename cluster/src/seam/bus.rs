//! The bus: sending frames, sleeping, spawning tasks and reading the realtime clock.
//!
//! Routed through one trait because the bus is the one dependency every shard is
//! already handed per environment; a separate clock or spawner would thread more
//! seams through every constructor for the same effect.

use std::future::Future;
use std::time::Duration;

/// The address of a process on the bus: replicas first (`0..replicas`), then clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProcessId(pub u32);

impl ProcessId {
    /// The index as a `usize`, for indexing per-process tables.
    pub fn index(self) -> usize {
        // u32 always fits in usize on the 32- and 64-bit targets we build for.
        self.0 as usize
    }
}

impl std::fmt::Display for ProcessId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "p{}", self.0)
    }
}

/// Everything a shard may do that touches time, other processes or concurrency.
///
/// Futures are `!Send` on purpose: a shard runs on one thread (one core in production,
/// the one simulator thread under test), and task switches happen only at awaits.
pub trait Bus: Clone + 'static {
    /// The future returned by [`Bus::sleep`]. Its deadline is fixed when it is created,
    /// not when it is first polled, so a pump can build its tick timer once.
    type Sleep: Future<Output = ()> + Unpin + 'static;

    /// The process this bus belongs to.
    fn local(&self) -> ProcessId;

    /// Send one frame to another process. Fire and forget: delivery is not promised
    /// (the network may lose, delay, duplicate or corrupt it).
    fn send(&self, to: ProcessId, frame: Vec<u8>);

    /// A future that completes `duration` after now.
    fn sleep(&self, duration: Duration) -> Self::Sleep;

    /// Run a task concurrently on this shard. It is dropped mid-await if the process
    /// crashes (in the simulator) or shuts down.
    fn spawn(&self, task: impl Future<Output = ()> + 'static);

    /// Microseconds since the Unix epoch on this process's clock. May jump, may drift,
    /// may differ between processes: never use it to order events, only to stamp them.
    fn realtime_micros(&self) -> u64;
}
