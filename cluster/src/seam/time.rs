//! Ticks: the unit every consensus timeout is counted in.
//!
//! Timers count ticks instead of reading a clock so that the simulator, which decides
//! when a tick happens, decides when time passes. Configuration is still written as
//! durations and converted once at boot.

use std::time::Duration;

/// Microseconds per tick. 10 ms keeps the commit heartbeat (50 ticks) at half a second
/// and lets a simulated second cost only 100 steps.
pub const TICK_MICROS: u64 = 10_000;

/// One tick as a `Duration`.
pub const TICK: Duration = Duration::from_micros(TICK_MICROS);

/// Convert a configured duration into a count of ticks: rounded down, at least 1, so a
/// tiny timeout still waits one tick instead of firing every tick forever.
pub fn duration_to_ticks(duration: Duration) -> u64 {
    let micros = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
    (micros / TICK_MICROS).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_down_with_a_floor_of_one_tick() {
        assert_eq!(duration_to_ticks(Duration::from_millis(500)), 50);
        assert_eq!(duration_to_ticks(Duration::from_millis(509)), 50);
        assert_eq!(duration_to_ticks(Duration::from_millis(10)), 1);
        assert_eq!(duration_to_ticks(Duration::from_millis(3)), 1);
        assert_eq!(duration_to_ticks(Duration::ZERO), 1);
        assert_eq!(duration_to_ticks(Duration::from_secs(5)), 500);
        assert_eq!(duration_to_ticks(Duration::MAX), u64::MAX / TICK_MICROS);
    }
}
