//! Buggify: bounds a simulation may shrink so that rare paths become common, in the
//! spirit of FoundationDB's BUGGIFY.
//!
//! A bug hidden behind a full pipeline, a full request queue or a repair that must
//! walk a long gap in many small steps shows up only when the load reaches those
//! bounds, which the simulator's few clients never do at production sizes. Each knob
//! here is one such bound, with the production value as its default
//! ([`Buggify::OFF`]); a smaller value is still a legal configuration of the same code
//! (every path it takes is one production can take under more load), so the checks
//! hold exactly as they do without it. Production builds a replica with
//! `Buggify::OFF` (the `Default`) and never anything else: the knobs are set only by
//! the simulator, drawn from the run's seed (`workload-fuzz --buggify`), so a run
//! replays bit for bit and prints the knobs it drew.
//!
//! What it does not do: inject faults (the simulator's network, crash and disk models
//! do) or change a decision the protocol makes for safety.

use super::constants::{PIPELINE_PREPARES_MAX, REPAIR_PREPARES_MAX, REQUEST_QUEUE_MAX};

/// The knobs, each at most its production bound and at least 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buggify {
    /// Ops a primary keeps in flight (production: [`PIPELINE_PREPARES_MAX`]). Small:
    /// requests queue behind the pipeline and the queue fills.
    pub pipeline_prepares_max: usize,
    /// Requests a primary queues behind a full pipeline (production:
    /// [`REQUEST_QUEUE_MAX`]). Small: requests are refused as not accepted and clients
    /// resend.
    pub request_queue_max: usize,
    /// The window a replica's first repair asks for (production:
    /// [`REPAIR_PREPARES_MAX`]); it doubles with every answered round up to
    /// `REPAIR_PREPARES_MAX`, as it does in production after misses halved it. Small:
    /// a restarted replica's gap is repaired in many small round trips first, each of
    /// which a fault can interrupt. (Capping the window instead, tried first, made a
    /// 143-op gap take 143 round trips: a configuration production never stays in, so
    /// the liveness bounds did not hold for it.)
    pub repair_window_initial: u64,
}

impl Buggify {
    /// Production: every bound at its designed value.
    pub const OFF: Buggify = Buggify {
        pipeline_prepares_max: PIPELINE_PREPARES_MAX,
        request_queue_max: REQUEST_QUEUE_MAX,
        repair_window_initial: REPAIR_PREPARES_MAX,
    };

    /// Whether every knob is at its production value.
    pub fn is_off(&self) -> bool {
        *self == Buggify::OFF
    }

    /// Panics unless every knob is within `1..=` its production bound (the simulator
    /// calls it when it draws the knobs; a replica asserts it when it opens).
    pub fn assert_valid(&self) {
        assert!(
            (1..=PIPELINE_PREPARES_MAX).contains(&self.pipeline_prepares_max),
            "{self:?}"
        );
        assert!((1..=REQUEST_QUEUE_MAX).contains(&self.request_queue_max), "{self:?}");
        assert!(
            (1..=REPAIR_PREPARES_MAX).contains(&self.repair_window_initial),
            "{self:?}"
        );
    }

    /// The knobs as `name=value` words, for a run's output.
    pub fn describe(&self) -> String {
        format!(
            "pipeline_prepares_max={} request_queue_max={} repair_window_initial={}",
            self.pipeline_prepares_max, self.request_queue_max, self.repair_window_initial
        )
    }
}

impl Default for Buggify {
    fn default() -> Self {
        Buggify::OFF
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn production_is_every_bound_at_its_designed_value() {
        let off = Buggify::default();
        assert!(off.is_off());
        off.assert_valid();
        assert_eq!(off.pipeline_prepares_max, PIPELINE_PREPARES_MAX);
        let small = Buggify {
            pipeline_prepares_max: 1,
            ..Buggify::OFF
        };
        assert!(!small.is_off());
        small.assert_valid();
    }

    #[test]
    #[should_panic(expected = "pipeline_prepares_max: 0")]
    fn a_knob_of_zero_is_refused() {
        Buggify {
            pipeline_prepares_max: 0,
            ..Buggify::OFF
        }
        .assert_valid();
    }
}
