//! Ticks on which nothing fires are counted, not run.
//!
//! A node hosts a group per partition and ticks every one of them every tick, but a
//! group's tick does something only when one of its timeouts fires: a heartbeat every
//! 50 ticks, a liveness window of 500, a retransmit, a retry. On the other ticks it
//! only counts its timeouts up. So after each input and each tick that ran, a replica
//! works out how many of the coming ticks fire nothing ([`Replica::quiet_ticks_ahead`])
//! and lets that many calls of `tick` return at once; the counting they skipped is
//! applied in one step ([`Replica::settle_skipped_ticks`]) before the next input or the
//! next tick that runs. Every timeout, pipeline retransmit, transfer retry and pin then
//! stands where tick-by-tick counting would have left it, on the tick it would have, so
//! a run is the same run (the simulator's outputs and schedule hashes did not move).
//!
//! A shard goes one step further: it need not even call `tick` on a quiet group. It
//! asks each group when its next tick that runs is ([`Replica::next_tick_that_runs`],
//! on the count of ticks delivered), walks its groups only on a tick when one of them
//! is due, and before any group takes an input or a tick it hands it the ticks it
//! missed in one call ([`Replica::skip_quiet_ticks_to`]), which asserts that every
//! one of them was quiet. So a node's cost per tick follows the groups that have
//! something to do, not every group it hosts.
//!
//! What it does not do: skip a tick on which anything may fire. The skipped count is
//! bounded by every countdown, and `Timeout::advance` refuses to step past a firing.

use super::StateMachine;
use super::constants::PREPARE_RESEND_WINDOW_OPS;
use super::replica::{Replica, Status};
use super::store::ReplicaStore;

impl<S: StateMachine, T: ReplicaStore> Replica<S, T> {
    /// Start counting delivered ticks at `ticks` (a shard's count when it opens this
    /// group), before any tick is delivered.
    pub fn start_tick_count_at(&mut self, ticks: u64) {
        assert_eq!(self.ticks_delivered, 0, "the tick count starts before any tick");
        self.ticks_delivered = ticks;
    }

    /// The count of delivered ticks at which [`Replica::tick`] next runs rather than
    /// being counted: every tick delivered before it is quiet, so a caller may skip
    /// them and hand them over later with [`Replica::skip_quiet_ticks_to`]. Worked
    /// out again after every input and every tick that runs, which may bring it
    /// closer.
    #[inline]
    pub fn next_tick_that_runs(&self) -> u64 {
        self.ticks_delivered.saturating_add(self.ticks_quiet_ahead)
    }

    /// Deliver, as quiet, the ticks up to the count `ticks` that the caller did not
    /// deliver one by one: what that many calls of [`Replica::tick`] would have done,
    /// the last of them at `realtime_micros`. Panics if one of them was not quiet: the
    /// caller skipped a tick on which something would have fired.
    #[inline]
    pub fn skip_quiet_ticks_to(&mut self, ticks: u64, realtime_micros: u64) {
        assert!(ticks >= self.ticks_delivered, "ticks delivered go forward");
        let missed = ticks - self.ticks_delivered;
        if missed == 0 {
            return;
        }
        assert!(
            missed <= self.ticks_quiet_ahead,
            "group {:#x}: {missed} ticks skipped, but only {} were quiet",
            self.config.group,
            self.ticks_quiet_ahead
        );
        self.ticks_quiet_ahead -= missed;
        self.ticks_skipped += missed;
        self.ticks_delivered = ticks;
        self.realtime_micros = realtime_micros;
    }

    /// How many of the coming calls of [`Replica::tick`] are sure to fire nothing,
    /// given the replica as it is now (it changes only on an input or a tick that
    /// runs, after which this is worked out again).
    pub(crate) fn quiet_ticks_ahead(&self) -> u64 {
        if self.storage_failure.is_some() {
            // A stopped replica's tick does nothing at all.
            return u64::MAX;
        }
        if self.repair_deferred {
            // A deferred repair asks again at the next tick.
            return 0;
        }
        let mut quiet = [
            &self.commit_broadcast,
            &self.liveness,
            &self.view_change_escalate,
            &self.view_change_resend,
            &self.request_start_view,
            &self.repair_retry,
        ]
        .into_iter()
        .map(|timeout| timeout.ticks_before_firing())
        .min()
        .unwrap_or(u64::MAX);
        if self.pipeline_ticks() {
            for entry in self.pipeline.iter().take(PREPARE_RESEND_WINDOW_OPS) {
                quiet = quiet.min(entry.retransmit.ticks_before_firing());
            }
        }
        quiet = quiet.min(self.queries.resend_ticks_before_firing());
        quiet = quiet.min(self.transfer_ticks_quiet());
        if self.checkpoint_retry_wait_ticks > 0 {
            // The tick that counts it down to zero tries the checkpoint again.
            quiet = quiet.min(self.checkpoint_retry_wait_ticks - 1);
        }
        quiet
    }

    /// Whether the pipeline's retransmit timeouts count at a tick (`tick_pipeline`):
    /// only a primary in a Normal view retransmits.
    fn pipeline_ticks(&self) -> bool {
        self.status == Status::Normal && self.is_primary()
    }

    /// Apply the counting of the ticks skipped since the last tick that ran: what
    /// that many quiet calls of [`Replica::tick`] would have done, one after another.
    pub(crate) fn settle_skipped_ticks(&mut self) {
        let n = std::mem::take(&mut self.ticks_skipped);
        if n == 0 || self.storage_failure.is_some() {
            // A stopped replica's ticks did nothing (and it takes no input either).
            return;
        }
        // A deferred repair leaves no tick quiet, and nothing changed since the count
        // was worked out.
        debug_assert!(!self.repair_deferred);
        for timeout in [
            &mut self.commit_broadcast,
            &mut self.liveness,
            &mut self.view_change_escalate,
            &mut self.view_change_resend,
            &mut self.request_start_view,
            &mut self.repair_retry,
        ] {
            timeout.advance(n);
        }
        if self.pipeline_ticks() {
            for entry in self.pipeline.iter_mut().take(PREPARE_RESEND_WINDOW_OPS) {
                entry.retransmit.advance(n);
            }
        }
        self.queries.resend_timeout().advance(n);
        self.skip_transfer_ticks(n);
        if self.checkpoint_retry_wait_ticks > 0 {
            debug_assert!(n < self.checkpoint_retry_wait_ticks);
            self.checkpoint_retry_wait_ticks -= n;
        }
    }
}
