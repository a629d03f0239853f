//! Coverage marks: named points on the rare and dangerous paths of the protocol and
//! storage code, counted so a run (and a campaign) can say which of them it reached.
//!
//! `cover!(name)` counts one hit of a mark in a thread-local table: one relaxed
//! increment, nothing allocated, no effect on what the code does, so it is safe on
//! every path of the production node and changes no schedule in the simulator. A
//! simulated run owns its thread while it runs (campaign runs each on its own worker
//! thread), so [`reset`] at its start and [`hits`] at its end give that run's marks.
//! The marks are listed once, in the table below; a new one is one line plus a
//! `cover!` where it happens.
//!
//! What it does not do: say whether a mark's path was correct (the checks do that), or
//! count anything across threads (a production node's counters are its stats).

use std::cell::Cell;

macro_rules! marks {
    ($($variant:ident => $name:literal: $why:literal;)*) => {
        /// A coverage mark (see the module doc); each variant's doc says where it is.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(usize)]
        pub enum Mark {
            $(#[doc = $why] $variant,)*
        }

        impl Mark {
            /// Every mark, in table order.
            pub const ALL: &'static [Mark] = &[$(Mark::$variant,)*];

            /// The mark's name, as the `coverage:` line prints it.
            pub fn name(self) -> &'static str {
                match self {
                    $(Mark::$variant => $name,)*
                }
            }

            /// Where the mark is and why it matters.
            pub fn why(self) -> &'static str {
                match self {
                    $(Mark::$variant => $why,)*
                }
            }

            /// The mark named `name`, if any.
            pub fn from_name(name: &str) -> Option<Mark> {
                Mark::ALL.iter().copied().find(|mark| mark.name() == name)
            }
        }
    };
}

marks! {
    // View change.
    ViewChangeNackQuorumDropsOp => "vc.nack_quorum_drops_op":
        "a view change drops an op above the merged commit point on a nack quorum";
    ViewChangeNackQuorumDropsUnnamedOp => "vc.nack_quorum_drops_unnamed_op":
        "a nack quorum drops an op no authoritative log names";
    ViewChangeHeaderWithoutBodyNacks => "vc.header_without_body_nacks":
        "a DoViewChange holding an op's header but not its body counts as a nack";
    ViewChangeLongerOlderLogLoses => "vc.longer_older_log_loses":
        "a longer log from an older log_view loses to the newest log_view";
    ViewChangeIncompleteLogsLeftOut => "vc.incomplete_logs_left_out":
        "complete logs alone form a quorum and incomplete DoViewChanges are left out";
    ViewChangeEveryLogTakesPart => "vc.every_log_takes_part":
        "no quorum of complete logs: every replica's log, incomplete ones too, is merged";
    ViewChangeEndsBelowLostOp => "vc.ends_below_lost_op":
        "the merge ends the view below an op whose body no replica holds";
    ViewChangeCommitPointLowered => "vc.commit_point_lowered":
        "a view starts below the merged commit point (ops every replica lost)";
    ViewChangeEscalated => "vc.escalated":
        "a view change ran out of time and moved to the next view";
    PeerConnectionClosed => "node.peer_connection_closed":
        "a node's transport reported a peer replica's connection closed";
    RecoveringJoinsViewChange => "vc.recovering_joins_view_change":
        "a recovering replica hears a view change for a view at least as new as its own and joins it";
    LeaveVoteWithdrawn => "vc.leave_vote_withdrawn":
        "a backup that voted to leave its view heard its primary again and withdrew the vote";
    LeaveViewOnOthersVotes => "vc.leave_view_on_others_votes":
        "a replica that still hears its primary leaves the view because a quorum of others voted to";
    LeaveVoteAnsweredWithStartView => "vc.leave_vote_answered_with_start_view":
        "a primary answers a vote to leave an older view with its StartView";
    LivenessHastenedPrimaryClosed => "vc.liveness_hastened_primary_closed":
        "a backup's connection from its primary closed: the liveness window shrinks to the confirmation wait";
    LivenessEndedPrimaryAsks => "vc.liveness_ended_primary_asks":
        "a backup's primary asked who leads its own view (it restarted): the backup gives the view up at once";
    EscalationHastenedPrimaryClosed => "vc.escalation_hastened_primary_closed":
        "a view change whose primary's connection is closed moves on after the confirmation wait";
    ViewChangeAfterUnansweredProbes => "vc.after_unanswered_probes":
        "a recovering replica's probes went unanswered and it started a view change";
    StartViewToRecovering => "vc.start_view_to_recovering":
        "a recovering replica rejoined through a StartView";
    StartViewTruncatesLog => "vc.start_view_truncates_log":
        "a StartView cut ops above its head from a replica's log";
    PrimaryAbandonsRequests => "vc.primary_abandons_requests":
        "a primary left its view and answered its clients' queued and prepared requests";
    InheritedPipelineOverBound => "vc.inherited_pipeline_over_bound":
        "a new primary inherited more uncommitted ops than its pipeline holds";
    // Normal operation.
    PrepareResent => "normal.prepare_resent":
        "a primary resent a prepare after its backed-off timeout";
    PipelineFrontReacknowledged => "normal.pipeline_front_reacknowledged":
        "a backup acknowledged the pipeline's front again on a stalled commit point";
    RequestQueuedBehindPipeline => "normal.request_queued_behind_pipeline":
        "a request waited behind a full pipeline";
    RequestRefusedQueueFull => "normal.request_refused_queue_full":
        "a request was refused: pipeline and request queue both full";
    RequestStaleBehindUnapplied => "normal.request_stale_behind_unapplied":
        "a primary dropped a request older than one of the same client's it has not applied yet";
    QueryRoundConfirmed => "normal.query_round_confirmed":
        "a quorum confirmed a primary's view and the queries waiting for it were answered";
    QueryRoundResent => "normal.query_round_resent":
        "a query confirmation round went unconfirmed and was sent again";
    QueryRefusedWaitingFull => "normal.query_refused_waiting_full":
        "a query was refused: the queries waiting for confirmation were at their bound";
    OlderViewPrepareKept => "normal.older_view_prepare_kept":
        "a backup journaled an older view's prepare named by the op above it";
    PrepareDroppedJournalFull => "normal.prepare_dropped_journal_full":
        "a prepare beyond what the journal holds above the checkpoint was dropped";
    ClientEvicted => "normal.client_evicted":
        "the client table was full and forgot the client that committed earliest";
    // Repair and catch-up.
    RepairFromAnotherPeer => "repair.from_another_peer":
        "a backup asked a peer other than its primary after a round timed out";
    RepairBuffered => "repair.buffered":
        "a repaired prepare was held back until the op above proves it";
    RepairSessionDeferred => "repair.session_deferred":
        "the shard's catch-up budget deferred a repair session";
    RangeEvictedSent => "catch_up.range_evicted_sent":
        "a peer answered a repair with RangeEvicted (the ops left its ring)";
    TransferStarted => "catch_up.transfer_started": "a state transfer started";
    TransferInstalled => "catch_up.transfer_installed": "a transferred checkpoint was installed";
    TransferAbandoned => "catch_up.transfer_abandoned":
        "a state transfer was abandoned (peer silent, stale, or its bytes refused)";
    TransferPinReleasedIdle => "catch_up.pin_released_idle":
        "a served transfer's ring pin was released because its receiver went quiet";
    CheckpointTaken => "catch_up.checkpoint_taken": "a replica made a checkpoint durable";
    CheckpointedOpAcknowledged => "catch_up.checkpointed_op_acknowledged":
        "a backup acknowledged an op it holds only in its checkpoint, for a primary that must commit it again";
    CheckpointWriteFailed => "catch_up.checkpoint_write_failed":
        "a checkpoint write failed and waits for its retry";
    // Storage.
    WalTornTailCut => "storage.wal_torn_tail_cut": "boot cut a torn tail off the metadata WAL";
    WalDamagedMiddle => "storage.wal_damaged_middle":
        "boot found damage in the middle of a WAL (held but unknown)";
    PartitionWalTailDiscarded => "storage.partition_wal_tail_discarded":
        "boot discarded a partition WAL's bytes beyond its published frontier";
    FrontierSlotDamaged => "storage.frontier_slot_damaged": "boot found a damaged publish-frontier slot";
    WalVacantSlotUncertain => "storage.wal_vacant_slot_uncertain":
        "boot found a vacant WAL slot above the commit point, whose fill a lying disk may have dropped";
    WalVacantWindowTaken => "storage.wal_vacant_window_taken":
        "a record larger than its placeholder took room from the vacant slots above it, in place";
    CheckpointDamagedAtOpen => "storage.checkpoint_damaged_at_open":
        "a checkpoint did not read back whole at boot";
    LogIncompleteAtBoot => "storage.log_incomplete_at_boot":
        "a replica booted with a log that may lack ops it acknowledged";
    RecordUnreadableAtLoad => "storage.record_unreadable_at_load":
        "a record the boot scan read could not be read again to load it";
    ReadRetried => "storage.read_retried": "a read failed and was tried again";
    ReadUnreadablePage => "storage.read_unreadable_page":
        "a page stayed unreadable through every retry and was read as damage";
    StoreFailStop => "storage.fail_stop": "a replica's store failed for good and it stopped";
    // Partitions and sessions.
    OwnerFenceRefused => "partition.owner_fence_refused":
        "a consumer group's former owner was refused (StaleOwner)";
    SessionUnboundRefused => "session.unbound_refused":
        "a node refused a request from a sender with no bound session (Unbound)";
    ParkedRequestExpired => "session.parked_request_expired":
        "a request parked for its session's metadata expired unanswered";
}

/// How many marks there are.
pub const MARKS: usize = Mark::ALL.len();

// The table covers the protocol's and storage's rare paths broadly (issue #17 asks for
// at least forty); a table that shrank below that would be a regression.
const _: () = assert!(MARKS >= 40);

/// Words of the reached-marks bit set ([`reached`]).
pub const REACHED_WORDS: usize = MARKS.div_ceil(64);

/// Which marks were hit at least once, one bit per mark in table order: what a caller
/// polls after each step to learn when a mark was first reached (the simulator's
/// explorer branches a run there), at the cost of one word compare when nothing new
/// happened.
pub type Reached = [u64; REACHED_WORDS];

thread_local! {
    static HITS: [Cell<u64>; MARKS] = const { [const { Cell::new(0) }; MARKS] };
    static REACHED: [Cell<u64>; REACHED_WORDS] = const { [const { Cell::new(0) }; REACHED_WORDS] };
}

/// Count one hit of `mark` on this thread.
#[inline]
pub fn hit(mark: Mark) {
    HITS.with(|hits| {
        let cell = &hits[mark as usize];
        cell.set(cell.get().saturating_add(1));
    });
    REACHED.with(|reached| {
        let word = &reached[mark as usize / 64];
        word.set(word.get() | 1 << (mark as usize % 64));
    });
}

/// Forget this thread's hits (a simulated run calls it as it starts).
pub fn reset() {
    HITS.with(|hits| hits.iter().for_each(|cell| cell.set(0)));
    REACHED.with(|reached| reached.iter().for_each(|word| word.set(0)));
}

/// The marks this thread has hit since its last [`reset`], as a bit set.
#[inline]
pub fn reached() -> Reached {
    REACHED.with(|reached| std::array::from_fn(|index| reached[index].get()))
}

/// The marks set in `now` and not in `before`, in table order.
pub fn newly_reached(before: &Reached, now: &Reached) -> Vec<Mark> {
    Mark::ALL
        .iter()
        .copied()
        .filter(|&mark| {
            let (word, bit) = (mark as usize / 64, 1u64 << (mark as usize % 64));
            now[word] & bit != 0 && before[word] & bit == 0
        })
        .collect()
}

/// This thread's hits of every mark, in table order.
pub fn hits() -> Vec<(Mark, u64)> {
    HITS.with(|hits| {
        Mark::ALL
            .iter()
            .map(|&mark| (mark, hits[mark as usize].get()))
            .collect()
    })
}

/// Count one hit of the named [`Mark`] variant: `cover!(TransferStarted)`.
#[macro_export]
macro_rules! cover {
    ($mark:ident) => {
        $crate::coverage::hit($crate::coverage::Mark::$mark)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hit_is_counted_on_its_thread_and_reset_forgets_it() {
        reset();
        cover!(TransferStarted);
        cover!(TransferStarted);
        let counted: Vec<(Mark, u64)> = hits().into_iter().filter(|(_, count)| *count > 0).collect();
        assert_eq!(counted, vec![(Mark::TransferStarted, 2)]);
        let other = std::thread::scope(|scope| scope.spawn(|| hits().iter().map(|(_, n)| n).sum::<u64>()).join());
        assert_eq!(
            other.expect("the thread ran"),
            0,
            "another thread sees none of these hits"
        );
        reset();
        assert!(hits().iter().all(|(_, count)| *count == 0));
    }

    #[test]
    fn the_reached_set_names_each_mark_hit_once_however_often() {
        reset();
        let before = reached();
        cover!(CheckpointTaken);
        cover!(CheckpointTaken);
        cover!(StoreFailStop);
        let now = reached();
        assert_eq!(
            newly_reached(&before, &now),
            vec![Mark::CheckpointTaken, Mark::StoreFailStop]
        );
        assert!(newly_reached(&now, &reached()).is_empty(), "nothing new since");
        reset();
        assert_eq!(reached(), [0; REACHED_WORDS]);
    }

    #[test]
    fn names_are_unique_and_parse_back() {
        let mut names: Vec<&str> = Mark::ALL.iter().map(|mark| mark.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), MARKS, "two marks share a name");
        for &mark in Mark::ALL {
            assert_eq!(Mark::from_name(mark.name()), Some(mark));
            assert!(!mark.why().is_empty());
        }
    }
}
