//! How long to wait for an answer: a retry timeout that follows the round trips a
//! replica measures, the way TCP sets its retransmission timeout (RFC 6298).
//!
//! A fixed retry sized for the slowest network a replica may sit on makes every lost
//! request on a fast one cost that whole wait: a replica on a link with a 10-tick round
//! trip and 10% loss waited [`REPAIR_RETRY_TICKS`] after each lost repair request or
//! answer, and spent most of its catch-up waiting (`--seed 87000422 --plane metadata
//! --faults swarm`, 105 ops in 1,473 ticks). The estimate keeps a smoothed round trip
//! and its variation, in eighths of a tick, and waits their sum (the round trip plus
//! four variations) within `[min, max]`; each timeout doubles the wait up to `max`
//! until an answer is measured again. Before the first measurement it waits `max`.
//!
//! What it does not do: tell one peer's round trip from another's (a replica's peers
//! share its network), or measure a round whose request went out more than once (a
//! caller samples only an answer to the request it is waiting for, named by a nonce).
//!
//! [`REPAIR_RETRY_TICKS`]: super::constants::REPAIR_RETRY_TICKS

/// Doublings of the wait after timeouts, at most (`max` caps the wait anyway; this only
/// keeps the shift in range).
const BACKOFF_DOUBLINGS_MAX: u32 = 16;

/// A retry timeout from measured round trips.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoundTrip {
    /// The shortest wait, in ticks.
    min_ticks: u64,
    /// The longest wait, in ticks: also the wait before any measurement.
    max_ticks: u64,
    /// The smoothed round trip, in eighths of a tick; `None` before the first sample.
    smoothed_eighths: Option<u64>,
    /// The smoothed variation of the round trip, in eighths of a tick.
    variation_eighths: u64,
    /// Timeouts since the last sample: each doubles the wait.
    backoff_doublings: u32,
}

impl RoundTrip {
    /// An estimate that waits between `min_ticks` and `max_ticks`.
    pub const fn new(min_ticks: u64, max_ticks: u64) -> Self {
        assert!(0 < min_ticks && min_ticks <= max_ticks);
        RoundTrip {
            min_ticks,
            max_ticks,
            smoothed_eighths: None,
            variation_eighths: 0,
            backoff_doublings: 0,
        }
    }

    /// A round trip of `ticks` was measured: fold it in, and forget the backoff.
    pub fn sample(&mut self, ticks: u64) {
        let measured = ticks.min(self.max_ticks) * 8;
        match self.smoothed_eighths {
            None => {
                self.smoothed_eighths = Some(measured);
                self.variation_eighths = measured / 2;
            }
            Some(smoothed) => {
                let error = smoothed.abs_diff(measured);
                self.variation_eighths = (3 * self.variation_eighths + error) / 4;
                self.smoothed_eighths = Some((7 * smoothed + measured) / 8);
            }
        }
        self.backoff_doublings = 0;
    }

    /// A wait ran out without an answer: wait twice as long next time (up to `max`).
    pub fn back_off(&mut self) {
        self.backoff_doublings = (self.backoff_doublings + 1).min(BACKOFF_DOUBLINGS_MAX);
    }

    /// Ticks to wait for the next answer.
    pub fn retry_ticks(&self) -> u64 {
        let Some(smoothed) = self.smoothed_eighths else {
            return self.max_ticks;
        };
        let wait = (smoothed + 4 * self.variation_eighths).div_ceil(8);
        let wait = wait.clamp(self.min_ticks, self.max_ticks);
        let wait = wait.saturating_mul(1 << self.backoff_doublings).min(self.max_ticks);
        debug_assert!((self.min_ticks..=self.max_ticks).contains(&wait));
        wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn before_any_measurement_it_waits_the_longest() {
        assert_eq!(RoundTrip::new(20, 100).retry_ticks(), 100);
    }

    #[test]
    fn steady_round_trips_bring_the_wait_down_to_them_but_not_below_the_shortest() {
        let mut estimate = RoundTrip::new(20, 100);
        for _ in 0..50 {
            estimate.sample(30);
        }
        assert_eq!(estimate.retry_ticks(), 30, "no variation: the round trip itself");
        let mut fast = RoundTrip::new(20, 100);
        for _ in 0..50 {
            fast.sample(4);
        }
        assert_eq!(fast.retry_ticks(), 20);
    }

    #[test]
    fn varying_round_trips_wait_for_the_slow_ones() {
        let mut estimate = RoundTrip::new(10, 1_000);
        for round in 0..200 {
            estimate.sample(if round % 2 == 0 { 10 } else { 50 });
        }
        let wait = estimate.retry_ticks();
        assert!(wait > 50, "a wait of {wait} ticks would time out every slow round");
        assert!(wait < 200, "a wait of {wait} ticks is far past any round trip seen");
    }

    #[test]
    fn timeouts_double_the_wait_up_to_the_longest_and_a_sample_resets_them() {
        let mut estimate = RoundTrip::new(20, 100);
        for _ in 0..50 {
            estimate.sample(20);
        }
        assert_eq!(estimate.retry_ticks(), 20);
        estimate.back_off();
        assert_eq!(estimate.retry_ticks(), 40);
        estimate.back_off();
        assert_eq!(estimate.retry_ticks(), 80);
        for _ in 0..40 {
            estimate.back_off();
        }
        assert_eq!(estimate.retry_ticks(), 100);
        estimate.sample(20);
        assert_eq!(estimate.retry_ticks(), 20);
    }
}
