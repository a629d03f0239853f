//! The production side's clocks and OS randomness, in one place.
//!
//! Cluster logic never calls these: it reads time through `Bus::sleep` and
//! `Bus::realtime_micros`, and draws entropy from seeded streams. They serve what runs
//! only outside the simulator: [`super::TokioBus`] (the production bus), the `node`
//! start-up (its boot incarnation and entropy seed), and the client library and its
//! binaries (resend timers, request budgets, latency). Keeping every such read here
//! means `clippy.toml`'s ban holds everywhere else in the crate, with this module's
//! `allow` as the single, named exception.

#![allow(
    clippy::disallowed_methods,
    reason = "the one module that reads the OS clocks and randomness for the production side"
)]

use std::io::Read;
use std::time::{SystemTime, UNIX_EPOCH};

/// Now, on the monotonic clock tokio's timers use.
pub fn monotonic_now() -> tokio::time::Instant {
    tokio::time::Instant::now()
}

/// Microseconds since the Unix epoch on the system clock. A clock before 1970 reads as
/// 0 rather than panicking; callers only stamp with it, never order by it.
pub fn realtime_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|since| u64::try_from(since.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// 16 bytes from `/dev/urandom`.
pub fn os_random_u128() -> std::io::Result<u128> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom").and_then(|mut file| file.read_exact(&mut bytes))?;
    Ok(u128::from_le_bytes(bytes))
}
