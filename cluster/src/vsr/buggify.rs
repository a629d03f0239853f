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

use super::constants::{
    COMMIT_BROADCAST_TICKS, LIVENESS_WINDOW_TICKS, PIPELINE_PREPARES_MAX, QUERIES_WAITING_MAX, REPAIR_PREPARES_MAX,
    REQUEST_QUEUE_MAX,
};

/// The shortest liveness window a knob may set: four commit broadcasts, so a backup
/// still hears several heartbeats per window and times out only when some are lost.
pub const BUGGIFY_LIVENESS_WINDOW_TICKS_MIN: u64 = 4 * COMMIT_BROADCAST_TICKS;

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
    /// Ticks a backup waits for a commit broadcast before it starts a view change
    /// (production: [`LIVENESS_WINDOW_TICKS`]; at least
    /// [`BUGGIFY_LIVENESS_WINDOW_TICKS_MIN`]). Short: backups time out early, so view
    /// changes start while prepares are half-replicated and primaries are merely slow.
    pub liveness_window_ticks: u64,
    /// The most applied ops between two checkpoints (production: no cap beyond the
    /// journal's own interval). Small: checkpoints at the earliest ops the journal
    /// allows, so restarts, repairs and transfers meet a checkpoint far more often.
    pub checkpoint_interval_ops_max: u64,
    /// A backup leaves out every this-many-th acknowledgement it would send (0, the
    /// production value: none). An acknowledgement may always be lost; leaving some
    /// out makes primaries resend, backups re-acknowledge, and view changes find ops
    /// that only some replicas acknowledged.
    pub prepare_ok_skip_every: u64,
    /// Queries a primary holds while they wait for their confirmation round
    /// (production: [`QUERIES_WAITING_MAX`], more than the simulator's clients can
    /// send). Small: polls are refused when the bound is reached and clients poll again.
    pub queries_waiting_max: usize,
}

impl Buggify {
    /// Production: every bound at its designed value.
    pub const OFF: Buggify = Buggify {
        pipeline_prepares_max: PIPELINE_PREPARES_MAX,
        request_queue_max: REQUEST_QUEUE_MAX,
        repair_window_initial: REPAIR_PREPARES_MAX,
        liveness_window_ticks: LIVENESS_WINDOW_TICKS,
        checkpoint_interval_ops_max: u64::MAX,
        prepare_ok_skip_every: 0,
        queries_waiting_max: QUERIES_WAITING_MAX,
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
        assert!(
            (BUGGIFY_LIVENESS_WINDOW_TICKS_MIN..=LIVENESS_WINDOW_TICKS).contains(&self.liveness_window_ticks),
            "{self:?}"
        );
        assert!(self.checkpoint_interval_ops_max >= 1, "{self:?}");
        assert!(
            self.prepare_ok_skip_every != 1,
            "{self:?}: skipping every acknowledgement"
        );
        assert!(
            (1..=QUERIES_WAITING_MAX).contains(&self.queries_waiting_max),
            "{self:?}"
        );
    }

    /// Whether a backup leaves out its `count`-th acknowledgement (counted from 1).
    pub fn skips_prepare_ok(&self, count: u64) -> bool {
        self.prepare_ok_skip_every != 0 && count.is_multiple_of(self.prepare_ok_skip_every)
    }

    /// The knobs as `name=value` words, for a run's output.
    pub fn describe(&self) -> String {
        let checkpoint = if self.checkpoint_interval_ops_max == u64::MAX {
            "journal".to_owned()
        } else {
            self.checkpoint_interval_ops_max.to_string()
        };
        format!(
            "pipeline_prepares_max={} request_queue_max={} repair_window_initial={} liveness_window_ticks={} \
             checkpoint_interval_ops_max={checkpoint} prepare_ok_skip_every={} queries_waiting_max={}",
            self.pipeline_prepares_max,
            self.request_queue_max,
            self.repair_window_initial,
            self.liveness_window_ticks,
            self.prepare_ok_skip_every,
            self.queries_waiting_max
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
        assert!(
            !off.skips_prepare_ok(1) && !off.skips_prepare_ok(1_000),
            "production skips nothing"
        );
        let skipping = Buggify {
            prepare_ok_skip_every: 3,
            ..Buggify::OFF
        };
        skipping.assert_valid();
        let skipped: Vec<u64> = (1..=9).filter(|&count| skipping.skips_prepare_ok(count)).collect();
        assert_eq!(skipped, [3, 6, 9]);
    }

    #[test]
    #[should_panic(expected = "liveness_window_ticks: 100")]
    fn a_liveness_window_of_two_broadcasts_is_refused() {
        Buggify {
            liveness_window_ticks: 100,
            ..Buggify::OFF
        }
        .assert_valid();
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
