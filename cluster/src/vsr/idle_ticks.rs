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
//! What it does not do: skip a tick on which anything may fire. The skipped count is
//! bounded by every countdown, and `Timeout::advance` refuses to step past a firing.

use super::StateMachine;
use super::constants::PREPARE_RESEND_WINDOW_OPS;
use super::replica::{Replica, Status};
use super::store::ReplicaStore;

impl<S: StateMachine, T: ReplicaStore> Replica<S, T> {
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
