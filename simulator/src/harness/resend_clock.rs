//! When a simulated client resends: a retransmission timeout learned from the round
//! trips it has measured, the way TCP learns its RTO (Jacobson's smoothed round trip
//! and mean deviation, RFC 6298), and doubled when the caller says a request has gone
//! unanswered for long enough.
//!
//! Why learn it: a fixed timeout is either too long for a lossy fast network (every
//! lost request or reply cost 200 ticks under `heavy`, where the median commit takes
//! about 40) or too short for a slow one. The clock only ever shortens the old fixed
//! wait: the timeout never exceeds [`CLIENT_RESEND_MAX_TICKS`], so a client is never
//! slower to retry than before.
//!
//! Why one mean deviation over the smoothed round trip and not TCP's four: TCP's
//! margin protects a shared link from spurious retransmissions. Here a premature resend
//! costs one frame, which a primary still working on the request drops as a duplicate
//! in flight (or answers from its client table: that is how a lost reply is recovered),
//! while a late one costs the client a whole timeout. Measured on `--plane partition
//! --faults heavy` seeds 1-30 (the first resend to the same replica, a doubling per
//! further one): four deviations answered 13,022 requests, one 18,037, the old fixed
//! 200 ticks 10,558.
//!
//! Karn's rule: a round trip is measured only for a request answered without a
//! timeout resend, since the answer to a resent request cannot be told apart from the
//! answer to its first send. A redirect (a refusal naming the primary) starts a fresh
//! measurement: the refuser did not take the request, so the answer is to the redirect.
//!
//! What it does not model: jitter. Clients resend on their own request's clock, not on a
//! shared beat, so they do not synchronise.

/// The timeout before any round trip has been measured: four commit broadcasts, so a
/// request that is only waiting behind a busy primary is not resent.
pub const CLIENT_RESEND_INITIAL_TICKS: u64 = 200;

/// The longest a client ever waits before resending, backoff included: the fixed
/// timeout clients used before they learned round trips, so no check that counts on a
/// retry within it (a drain, a liveness phase) sees a slower client.
pub const CLIENT_RESEND_MAX_TICKS: u64 = 200;

/// The shortest timeout: two mean one-way delays of the slowest fixed profile (`heavy`,
/// 8 ticks) and a little, so a fast network's tiny round trips do not turn every slow
/// disk write into a resend.
pub const CLIENT_RESEND_MIN_TICKS: u64 = 20;

/// Round trips longer than this are not learned from: a request that waited out a view
/// change measures the view change, not the network.
pub const CLIENT_ROUND_TRIP_SAMPLE_MAX_TICKS: u64 = CLIENT_RESEND_MAX_TICKS;

const _: () = assert!(CLIENT_RESEND_MIN_TICKS <= CLIENT_RESEND_INITIAL_TICKS);
const _: () = assert!(CLIENT_RESEND_INITIAL_TICKS <= CLIENT_RESEND_MAX_TICKS);

/// A client's learned retransmission timeout, in ticks.
#[derive(Clone, Copy, Debug, Default)]
pub struct ResendClock {
    /// Smoothed round trip, in ticks times 8 (RFC 6298's gain 1/8 in integers).
    smoothed_x8: u64,
    /// Mean deviation of the round trip, in ticks times 4 (gain 1/4).
    deviation_x4: u64,
    /// Round trips learned so far (saturating; only zero or not matters).
    samples: u64,
}

impl ResendClock {
    /// Learn one measured round trip. A sample past
    /// [`CLIENT_ROUND_TRIP_SAMPLE_MAX_TICKS`] is ignored.
    pub fn learn(&mut self, round_trip_ticks: u64) {
        if round_trip_ticks > CLIENT_ROUND_TRIP_SAMPLE_MAX_TICKS {
            return;
        }
        let sample = round_trip_ticks.max(1);
        if self.samples == 0 {
            self.smoothed_x8 = sample * 8;
            self.deviation_x4 = sample * 2; // half the sample, times 4
        } else {
            let smoothed = self.smoothed_x8 / 8;
            let error = smoothed.abs_diff(sample);
            // deviation += (|error| - deviation) / 4; smoothed += (sample - smoothed) / 8.
            self.deviation_x4 = self.deviation_x4 - self.deviation_x4 / 4 + error;
            self.smoothed_x8 = self.smoothed_x8 - self.smoothed_x8 / 8 + sample;
        }
        self.samples = self.samples.saturating_add(1);
    }

    /// The wait before the next resend, doubled `backoff` times (the caller decides how
    /// many unanswered sends earn a doubling).
    pub fn timeout_ticks(&self, backoff: u32) -> u64 {
        let base = if self.samples == 0 {
            CLIENT_RESEND_INITIAL_TICKS
        } else {
            // RTO = smoothed + one mean deviation (TCP adds four).
            self.smoothed_x8 / 8 + self.deviation_x4 / 4
        };
        let base = base.clamp(CLIENT_RESEND_MIN_TICKS, CLIENT_RESEND_MAX_TICKS);
        base.checked_shl(backoff.min(16))
            .unwrap_or(CLIENT_RESEND_MAX_TICKS)
            .min(CLIENT_RESEND_MAX_TICKS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn before_any_answer_the_client_waits_the_initial_timeout() {
        let clock = ResendClock::default();
        assert_eq!(clock.timeout_ticks(0), CLIENT_RESEND_INITIAL_TICKS);
    }

    #[test]
    fn steady_round_trips_bring_the_timeout_down_to_them() {
        let mut clock = ResendClock::default();
        for _ in 0..50 {
            clock.learn(30);
        }
        // Almost no deviation left: the timeout is the round trip and a few ticks.
        let timeout = clock.timeout_ticks(0);
        assert!(
            (30..=34).contains(&timeout),
            "timeout {timeout} for steady 30-tick round trips"
        );
    }

    #[test]
    fn scattered_round_trips_keep_a_margin_over_the_mean() {
        let mut clock = ResendClock::default();
        for round in 0..50 {
            clock.learn(if round % 2 == 0 { 10 } else { 50 });
        }
        let timeout = clock.timeout_ticks(0);
        assert!(timeout > 50, "a timeout of {timeout} would resend half the requests");
    }

    #[test]
    fn a_tiny_round_trip_is_floored() {
        let mut clock = ResendClock::default();
        clock.learn(1);
        assert_eq!(clock.timeout_ticks(0), CLIENT_RESEND_MIN_TICKS);
    }

    #[test]
    fn each_unanswered_send_doubles_the_wait_up_to_the_old_fixed_timeout() {
        let mut clock = ResendClock::default();
        for _ in 0..50 {
            clock.learn(30);
        }
        let first = clock.timeout_ticks(0);
        assert_eq!(clock.timeout_ticks(1), 2 * first);
        assert_eq!(clock.timeout_ticks(2), 4 * first);
        assert_eq!(clock.timeout_ticks(3), CLIENT_RESEND_MAX_TICKS);
        assert_eq!(clock.timeout_ticks(u32::MAX), CLIENT_RESEND_MAX_TICKS);
    }

    #[test]
    fn a_round_trip_that_measured_a_view_change_is_not_learned() {
        let mut clock = ResendClock::default();
        clock.learn(30);
        let before = clock.timeout_ticks(0);
        clock.learn(CLIENT_ROUND_TRIP_SAMPLE_MAX_TICKS + 1);
        assert_eq!(clock.timeout_ticks(0), before);
    }
}
