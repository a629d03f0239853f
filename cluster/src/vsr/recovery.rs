//! Coming back: a restarted replica asks who leads (RequestStartView) and adopts the
//! answer, or, after enough silence, starts an ordinary view change with the log it
//! recovered.
//!
//! Only a primary in Normal status in a view it started answers, and it echoes the
//! probe's boot nonce, so an answer meant for this replica's previous life (with an
//! older log) can never roll it back.

use super::StateMachine;
use super::constants::REQUEST_START_VIEW_PROBES_MAX;
use super::replica::{Replica, Status};
use super::store::ReplicaStore;
use crate::seam::ProcessId;
use crate::wire::{Command, Header};

impl<S: StateMachine, T: ReplicaStore> Replica<S, T> {
    /// The probe timer fired.
    pub(crate) fn probe_start_view(&mut self) {
        if self.status != Status::Recovering {
            // The timer also rate-limits asks from replicas that saw a newer view.
            self.request_start_view.stop();
            return;
        }
        self.request_start_view_probes += 1;
        if self.request_start_view_probes > REQUEST_START_VIEW_PROBES_MAX {
            // Nobody leads a view this replica can join: elect one with what it has.
            tracing::info!(
                replica = self.config.replica,
                group = self.config.group,
                view = self.view,
                "probes unanswered"
            );
            self.request_start_view_probes = 0;
            crate::cover!(ViewChangeAfterUnansweredProbes);
            self.start_view_change(self.view + 1);
            return;
        }
        let mut header = self.header(Command::RequestStartView);
        header.nonce = self.boot_nonce;
        self.send_to_other_replicas(header, &[]);
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
        // `log_view == view` holds in Normal: this primary started the view it leads.
        if self.status == Status::Normal && self.is_primary() && header.view <= self.view {
            self.send_start_view(ProcessId(u32::from(sender)), header.nonce);
        }
    }
}
