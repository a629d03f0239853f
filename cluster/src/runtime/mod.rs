//! The production side of the seam: tokio timers and tasks, the system clock, real
//! files. This is the only module allowed to read the OS clock or spawn OS-level
//! concurrency (see `clippy.toml`); everything else in the crate goes through
//! [`crate::seam`].
//!
//! A shard runs on its own thread with a current-thread tokio runtime and a
//! `LocalSet`, so its `!Send` tasks never migrate. Frames between shards of one
//! process travel through a [`LocalRouter`] in tests; between processes they travel
//! over TCP ([`tcp::TcpTransport`], framed by [`framing`]), another [`Transport`].

mod bus;
pub mod clock;
mod disk;
pub mod framing;
pub mod handshake;
pub mod log_limit;
pub mod memory;
pub mod tcp;

pub use bus::{LocalRouter, TokioBus, Transport, run_local};
pub use clock::{monotonic_now, os_random_u128, realtime_micros};
pub use disk::{DiskFile, DiskStorage};
