//! Leaving a view takes a quorum: no single replica can drag a group into the next
//! view (VSR's answer to Raft's pre-vote and check-quorum).
//!
//! A replica that has reason to give up its view does not start a view change by
//! itself. It *votes* to leave the view: it sends LeaveView for it to every other
//! replica, again at every resend while the reason stands, and stays where it is (a
//! Normal backup keeps taking its primary's prepares). The reasons: a Normal backup's
//! liveness window ran out (or was cut short: the primary's connection closed, or the
//! primary asked who leads); a view change found no started view within
//! `VIEW_CHANGE_ESCALATE_TICKS`; a recovering replica's probe went unanswered for a
//! whole interval. A replica moves on only once a view-change quorum wants out of its
//! view: its own vote, if it cast one, and the fresh votes of others (a vote to leave
//! a later view counts too). It moves to the highest view any of them asks for.
//!
//! So every view a replica enters by a view change was asked for by a quorum, and a
//! replica that hears of a later view change (a StartViewChange, a DoViewChange, or a
//! LeaveView from a replica in one) simply follows it: it cannot be one replica's
//! whim. That is what keeps a replica that can send but not receive (a one-way cut, a
//! broken receive path) from ruling the group: it hears no primary, so its window
//! always runs out, and once its timeout alone started view changes, its
//! StartViewChange pulled the healthy majority into the next view, and it escalated
//! alone again 500 ticks later, and again: 39 views for one request (`--seed 7700009`,
//! issue #44). Now it stays one voice, the majority that hears its primary never votes,
//! and the cut-off replica rejoins as soon as it hears a commit broadcast.
//!
//! Votes expire after [`LEAVE_VOTE_FRESH_TICKS`]: a replica that voted and then heard
//! its primary again stops resending, and its old vote must not later join another
//! replica's first timeout to end a view both can hear.
//!
//! What it does not change: the view change itself (`view_change.rs`): which logs
//! decide, the merge, StartView.

use super::StateMachine;
use super::constants::{LEAVE_VOTE_FRESH_TICKS, REPLICAS_MAX};
use super::replica::{Replica, Status, bit};
use super::store::ReplicaStore;
use crate::seam::ProcessId;
use crate::wire::{Command, Header};

/// Another replica's wish to leave views, as last heard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LeaveVote {
    /// The sender wants out of this view and every older one.
    pub through_view: u64,
    /// `ticks_delivered` when it was heard.
    pub heard_at_tick: u64,
}

/// The votes a replica holds, one slot per replica (its own slot stays empty: its own
/// wish is `Replica::leaving`).
pub(crate) type LeaveVotes = [Option<LeaveVote>; REPLICAS_MAX];

/// The LeaveView header's `flags`: the sender's status, so a replica behind it knows
/// whether to ask for a started view or to follow a view change.
const LEAVE_VIEW_FROM_NORMAL: u8 = 0;
const LEAVE_VIEW_FROM_VIEW_CHANGE: u8 = 1;
pub(super) const LEAVE_VIEW_FROM_RECOVERING: u8 = 2;

impl<S: StateMachine, T: ReplicaStore> Replica<S, T> {
    /// This replica has reason to give up its view (see the module doc): vote to leave
    /// it, and leave it if that makes a quorum.
    pub(crate) fn vote_to_leave_view(&mut self) {
        assert!(
            !(self.status == Status::Normal && self.is_primary()),
            "a Normal primary does not vote against its own view"
        );
        if !self.leaving {
            tracing::info!(
                replica = self.config.replica,
                group = self.config.group,
                view = self.view,
                status = ?self.status,
                "vote to leave view"
            );
        }
        self.leaving = true;
        if self.status == Status::Normal {
            // A view change resends with its own timer, a recovering replica with its
            // probes; a Normal backup borrows the view change's.
            self.view_change_resend.start();
        }
        self.send_leave_view();
        self.maybe_leave_view();
    }

    /// Send (or resend) this replica's vote to leave its view.
    pub(crate) fn send_leave_view(&mut self) {
        debug_assert!(self.leaving);
        let mut header = self.header(Command::LeaveView);
        header.flags = match self.status {
            Status::Normal => LEAVE_VIEW_FROM_NORMAL,
            Status::ViewChange => LEAVE_VIEW_FROM_VIEW_CHANGE,
            Status::Recovering => LEAVE_VIEW_FROM_RECOVERING,
        };
        self.send_to_other_replicas(header, &[]);
    }

    /// A Normal backup heard its primary: it no longer wants out of its view.
    pub(crate) fn withdraw_leave_vote(&mut self) {
        debug_assert_eq!(self.status, Status::Normal);
        if self.leaving {
            crate::cover!(LeaveVoteWithdrawn);
            self.leaving = false;
            self.view_change_resend.stop();
        }
    }

    /// Forget every vote: this replica is moving to another view (votes are about
    /// leaving the one it was in).
    pub(crate) fn clear_leave_votes(&mut self) {
        self.leaving = false;
        self.leave_votes = [None; REPLICAS_MAX];
    }

    /// Record that `sender` wants out of every view through `through_view`; leave if
    /// that makes a quorum.
    fn note_leave_vote(&mut self, sender: u8, through_view: u64) {
        debug_assert!(sender != self.config.replica && sender < self.config.replicas);
        if through_view < self.view {
            return;
        }
        self.leave_votes[usize::from(sender)] = Some(LeaveVote {
            through_view,
            heard_at_tick: self.ticks_delivered,
        });
        self.maybe_leave_view();
    }

    /// The replicas whose own wish or fresh vote wants out of the current view, a bit
    /// each, and the view they would go to (past the latest any of them wants out of).
    fn leave_quorum(&self) -> (u8, u64) {
        let mut voters = if self.leaving { bit(self.config.replica) } else { 0 };
        let mut target = self.view + 1;
        for (replica, vote) in self
            .leave_votes
            .iter()
            .enumerate()
            .take(usize::from(self.config.replicas))
        {
            let Some(vote) = vote else { continue };
            let fresh = vote.heard_at_tick + LEAVE_VOTE_FRESH_TICKS >= self.ticks_delivered;
            if fresh && vote.through_view >= self.view {
                // `replica` < `replicas` <= REPLICAS_MAX, so it fits a u8.
                voters |= bit(replica as u8);
                target = target.max(vote.through_view + 1);
            }
        }
        (voters, target)
    }

    /// Leave the view if a view-change quorum wants out of it.
    pub(crate) fn maybe_leave_view(&mut self) {
        let (voters, target) = self.leave_quorum();
        if (voters.count_ones() as usize) < self.quorum_view_change() {
            return;
        }
        assert!(target > self.view);
        match self.status {
            Status::Normal if voters & bit(self.config.replica) == 0 => crate::cover!(LeaveViewOnOthersVotes),
            Status::Normal => {}
            Status::ViewChange => crate::cover!(ViewChangeEscalated),
            Status::Recovering => crate::cover!(ViewChangeAfterUnansweredProbes),
        }
        self.start_view_change(target);
    }

    /// Another replica votes to leave `header.view` (a LeaveView).
    pub(crate) fn on_leave_view(&mut self, sender: u8, header: &Header) {
        if !matches!(
            header.flags,
            LEAVE_VIEW_FROM_NORMAL | LEAVE_VIEW_FROM_VIEW_CHANGE | LEAVE_VIEW_FROM_RECOVERING
        ) {
            // Not a status any replica sends: nothing of this frame is acted on.
            self.stats.frames_rejected += 1;
            return;
        }
        let view = header.view;
        if view <= self.view && self.status == Status::Normal && self.is_primary() {
            // The sender missed this view's start (it may be cut off from it, or just
            // late): tell it; any status takes a later StartView, a view change its own.
            crate::cover!(LeaveVoteAnsweredWithStartView);
            self.send_start_view(ProcessId(u32::from(sender)), 0);
        }
        if view < self.view {
            return;
        }
        match header.flags {
            LEAVE_VIEW_FROM_VIEW_CHANGE | LEAVE_VIEW_FROM_NORMAL | LEAVE_VIEW_FROM_RECOVERING if view > self.view => {
                // The sender is in a later view: a view change for it (which a quorum
                // asked for) or a view that started without this replica; a recovering
                // sender restarted in such a view, and can never come back to this one
                // (`--seed 9997270 --plane partition --faults split`: a replica moved to
                // view 5 on a quorum of votes, the other voter withdrew, the mover
                // restarted, and the healthy pair stayed in view 4 without it for good).
                // Either way this replica's own view is over: follow into a view change for it,
                // whose StartViewChange its primary, if alive, answers with the view.
                // (Asking for the StartView and waiting would wait for ever on a
                // primary that is gone, while the sender's vote to leave its view
                // needs this replica's to make a quorum.)
                self.heard_view_change(view);
            }
            LEAVE_VIEW_FROM_NORMAL if self.status == Status::ViewChange => {
                // The sender is Normal in this very view: it started without this
                // replica. Ask its primary for it.
                self.ask_for_start_view(self.primary_of(view));
            }
            _ => {}
        }
        self.note_leave_vote(sender, view);
    }
}
