//! Coming back: a restarted replica asks who leads (RequestStartView) and adopts the
//! answer, or, after enough silence, starts an ordinary view change with the log it
//! recovered.
//!
//! Only a primary in Normal status in a view it started answers, and it echoes the
//! probe's boot nonce, so an answer meant for this replica's previous life (with an
//! older log) can never roll it back.

use super::StateMachine;
use super::constants::REQUEST_START_VIEW_PROBES_UNANSWERED_BEFORE_VOTING;
use super::replica::{Replica, Status};
use super::store::ReplicaStore;
use crate::seam::ProcessId;
use crate::wire::{Command, Header};

impl<S: StateMachine, T: ReplicaStore> Replica<S, T> {
    /// The probe timer fired: ask again who leads. Once a probe went unanswered for
    /// a whole interval nobody leads a view this replica can adopt, so it also votes to
    /// leave its view (`vsr::leave_view`): replicas restarted together elect as soon as
    /// a quorum of them has found nobody, and a lone restarted replica cut off from a
    /// standing view waits for it rather than pulling it into a new one.
    pub(crate) fn probe_start_view(&mut self) {
        if self.status != Status::Recovering {
            // The timer also rate-limits asks from replicas that saw a newer view.
            self.request_start_view.stop();
            return;
        }
        self.request_start_view_probes += 1;
        let mut header = self.header(Command::RequestStartView);
        header.nonce = self.boot_nonce;
        self.send_to_other_replicas(header, &[]);
        if self.request_start_view_probes > REQUEST_START_VIEW_PROBES_UNANSWERED_BEFORE_VOTING {
            if self.leaving {
                self.send_leave_view();
            } else {
                tracing::info!(
                    replica = self.config.replica,
                    group = self.config.group,
                    view = self.view,
                    "probes unanswered"
                );
                self.vote_to_leave_view();
            }
        }
    }

    /// A replica in Normal or ViewChange saw a message from a newer view: ask that
    /// view's primary for its StartView (at most once per probe interval).
    pub(crate) fn ask_for_start_view(&mut self, primary: u8) {
        if self.request_start_view.ticking() || primary == self.config.replica {
            return;
        }
        self.request_start_view.start();
        let mut header = self.header(Command::RequestStartView);
        header.nonce = self.boot_nonce;
        self.send_to_replica(primary, header, &[]);
    }

    pub(crate) fn on_request_start_view(&mut self, sender: u8, header: &Header) {
        if self.status == Status::Normal
            && !self.is_primary()
            && sender == self.primary_of(self.view)
            && header.view == self.view
        {
            // This backup's own primary asks who leads this very view: it restarted
            // (a recovering replica leads nothing until a view change) or it saw a
            // newer view. Either way it no longer leads this view, and never will
            // again (a replica never returns to a view it left, and only the primary
            // of a view starts it), so a late copy of the probe says the same: give
            // the view up at the next tick.
            crate::cover!(LivenessEndedPrimaryAsks);
            self.liveness.shorten_to(1);
        }
        // `log_view == view` holds in Normal: this primary started the view it leads.
        if self.status == Status::Normal && self.is_primary() && header.view <= self.view {
            self.send_start_view(ProcessId(u32::from(sender)), header.nonce);
        }
    }
}
