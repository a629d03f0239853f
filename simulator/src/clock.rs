//! The realtime clock each simulated process reads through `Bus::realtime_micros`.
//!
//! Virtual time starts at 2026-01-01T00:00:00Z so timestamps decode as dates a person
//! recognises. Each replica's clock may be offset from true time and drift from it
//! (drawn once per run from the `clock` seed); clients read true time. This models
//! skew between machines, not time going backwards on one machine: a replica's clock
//! is monotonic as long as its drift is above -1,000,000 ppm, which the bounds assure.
//!
//! The cluster must only stamp with this clock, never order by it; the tick count is
//! what consensus timers use.

use crate::rng::SimRng;

/// 2026-01-01T00:00:00Z in microseconds since the Unix epoch.
pub const SIMULATION_EPOCH_MICROS: u64 = 1_767_225_600_000_000;

/// Largest drift accepted, in ppm: 1% of real time, far beyond any real oscillator, and
/// far from the -1,000,000 ppm at which a clock would stop or run backwards.
pub const CLOCK_DRIFT_PPM_LIMIT: u64 = 10_000;

/// Largest offset accepted, in microseconds (one hour). Keeps every reading far from
/// the epoch even with the largest negative offset.
pub const CLOCK_OFFSET_MICROS_LIMIT: u64 = 3_600_000_000;

/// One process's deviation from true time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClockSkew {
    /// Constant offset, microseconds (may be negative).
    pub offset_micros: i64,
    /// Rate error, parts per million (may be negative).
    pub drift_ppm: i64,
}

/// Every process's realtime clock.
#[derive(Clone, Debug)]
pub struct SimClock {
    skews: Vec<ClockSkew>,
}

impl SimClock {
    /// Draw an offset in `-offset_max..=offset_max` and a drift in `-drift_max..=drift_max`
    /// for each of `replicas` replicas from `seed`; `clients` get exact clocks. Two draws
    /// per replica always, so a zero bound does not shift later draws.
    pub fn new(seed: u64, replicas: usize, clients: usize, offset_max_micros: u64, drift_max_ppm: u64) -> Self {
        assert!(
            offset_max_micros <= CLOCK_OFFSET_MICROS_LIMIT,
            "clock offset bound out of range"
        );
        assert!(drift_max_ppm <= CLOCK_DRIFT_PPM_LIMIT, "clock drift bound out of range");
        let mut rng = SimRng::new(seed);
        let mut signed = |bound: u64| {
            let magnitude = rng.range_inclusive(0, 2 * bound);
            // Both values are at most 2 * CLOCK_OFFSET_MICROS_LIMIT, well inside i64.
            magnitude as i64 - bound as i64
        };
        let mut skews = Vec::with_capacity(replicas + clients);
        for _ in 0..replicas {
            let offset_micros = signed(offset_max_micros);
            let drift_ppm = signed(drift_max_ppm);
            skews.push(ClockSkew {
                offset_micros,
                drift_ppm,
            });
        }
        skews.resize(replicas + clients, ClockSkew::default());
        Self { skews }
    }

    /// The skew of process `index`.
    pub fn skew(&self, index: usize) -> ClockSkew {
        self.skews[index]
    }

    /// What process `index` reads at virtual time `now_micros` (since the simulation start).
    pub fn realtime_micros(&self, index: usize, now_micros: u64) -> u64 {
        let skew = self.skews[index];
        // i128: now * ppm cannot overflow, and the bounds keep the result positive.
        let now = i128::from(now_micros);
        let drift = now * i128::from(skew.drift_ppm) / 1_000_000;
        let reading = i128::from(SIMULATION_EPOCH_MICROS) + now + drift + i128::from(skew.offset_micros);
        u64::try_from(reading).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_perfect_clock_starts_at_2026_and_follows_virtual_time() {
        let clock = SimClock::new(1, 3, 1, 0, 0);
        assert_eq!(clock.realtime_micros(0, 0), SIMULATION_EPOCH_MICROS);
        assert_eq!(clock.realtime_micros(2, 10_000), SIMULATION_EPOCH_MICROS + 10_000);
    }

    #[test]
    fn skews_stay_within_bounds_and_clients_read_true_time() {
        let clock = SimClock::new(7, 5, 2, 500_000, 200);
        let mut distinct = std::collections::BTreeSet::new();
        for replica in 0..5 {
            let skew = clock.skew(replica);
            assert!(skew.offset_micros.abs() <= 500_000 && skew.drift_ppm.abs() <= 200);
            distinct.insert(skew.offset_micros);
        }
        assert!(distinct.len() > 1, "replicas should not all share one offset");
        assert_eq!(clock.skew(5), ClockSkew::default());
        assert_eq!(clock.realtime_micros(6, 123), SIMULATION_EPOCH_MICROS + 123);
    }

    #[test]
    fn drift_accumulates_with_time_and_clocks_stay_monotonic() {
        let clock = SimClock {
            skews: vec![ClockSkew {
                offset_micros: -1_000,
                drift_ppm: 200,
            }],
        };
        // 100 simulated seconds at +200 ppm gain 20 ms.
        assert_eq!(
            clock.realtime_micros(0, 100_000_000),
            SIMULATION_EPOCH_MICROS + 100_000_000 + 20_000 - 1_000
        );
        let mut previous = 0;
        for now in (0..1_000_000).step_by(10_000) {
            let reading = clock.realtime_micros(0, now);
            assert!(reading > previous);
            previous = reading;
        }
    }

    #[test]
    fn the_same_seed_draws_the_same_skews() {
        let a = SimClock::new(3, 4, 0, 1_000, 50);
        let b = SimClock::new(3, 4, 0, 1_000, 50);
        assert_eq!(a.skews, b.skews);
    }
}
