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
//! Watermarks measure how deep a run went rather than whether it passed a point: the
//! highest view, the most ops a replica fell behind. `watermark!(name, value)` keeps
//! the run's highest value of each, and sets the bit of the value's *level* (its bit
//! length: 1, 2-3, 4-7, ... up to [`WATERMARK_LEVELS`]) in the same reached set as the
//! marks, so a run that reaches a level no earlier run reached is news to an explorer,
//! like a mark reached for the first time. A mark or a watermark level is a [`Point`].
//!
//! What it does not do: say whether a mark's path was correct (the checks do that), or
//! count anything across threads (a production node's counters are its stats).

use std::cell::Cell;

/// One table of named items (the marks, the watermarks): the enum, every item in
/// table order, each one's name and reason, and the lookup by name, written once.
macro_rules! named_table {
    ($(#[$meta:meta])* $table:ident { $($variant:ident => $name:literal: $why:literal;)* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(usize)]
        pub enum $table {
            $(#[doc = $why] $variant,)*
        }

        impl $table {
            /// Every item, in table order.
            pub const ALL: &'static [$table] = &[$($table::$variant,)*];

            /// Its name, as a run's `coverage:` or `watermarks:` line prints it.
            pub fn name(self) -> &'static str {
                match self {
                    $($table::$variant => $name,)*
                }
            }

            /// Where it is and why it matters (a mark), or what it measures (a
            /// watermark).
            pub fn why(self) -> &'static str {
                match self {
                    $($table::$variant => $why,)*
                }
            }

            /// The item named `name`, if any.
            pub fn from_name(name: &str) -> Option<$table> {
                $table::ALL.iter().copied().find(|item| item.name() == name)
            }
        }
    };
}

named_table! {
    /// A coverage mark (see the module doc); each variant's doc says where it is.
    Mark {
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
    ViewChangeStaleBelowApplied => "vc.stale_below_applied":
        "a view's merge or StartView ended below an op the replica applied (it installed a later view's checkpoint): the view is left";
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
    // Races between clients and the protocol's rounds, as the harness sees the whole
    // world: noted from ground truth, not from the code under test's own checks, so a
    // change that takes a check away still shows the situation it stood in.
    DeposedPrimaryNormal => "race.deposed_primary_normal":
        "a replica was still the Normal primary of a view its group had replaced (it had not heard; harness)";
    UpdateAtDeposedPrimary => "race.update_at_deposed_primary":
        "a deposed primary (still Normal in its replaced view) took up a client's update (harness)";
    QueryAtDeposedPrimary => "race.query_at_deposed_primary":
        "a deposed primary (still Normal in its replaced view) took up a client's query (harness)";
    // Near misses of the harness's liveness checks (harness): how close a run came to
    // failing one, where a slow recovery shows before it fails.
    CommitStuckHalfWay => "liveness.commit_stuck_half_way":
        "a replica that could repair went half the commit-stuck bound without applying an op (harness)";
    CommitStuckNearMiss => "liveness.commit_stuck_near_miss":
        "a replica that could repair went three quarters of the commit-stuck bound without applying an op (harness)";
    // Normal operation.
    PrepareResent => "normal.prepare_resent":
        "a primary resent a prepare after its backed-off timeout";
    PipelineFrontReacknowledged => "normal.pipeline_front_reacknowledged":
        "a backup acknowledged the pipeline's front again on a stalled commit point";
    StalledPipelineOpsFetched => "normal.stalled_pipeline_ops_fetched":
        "a backup lacking ops a stalled primary named in its commit broadcast asked for them";
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
    QueriesRefusedLeadershipLost => "normal.queries_refused_leadership_lost":
        "a primary holding queries for confirmation stopped leading and refused them";
    // Repair and catch-up.
    RepairFromAnotherPeer => "repair.from_another_peer":
        "a backup asked a peer other than its primary after a round timed out";
    RepairBuffered => "repair.buffered":
        "a repaired prepare was held back until the op above proves it";
    RepairSessionDeferred => "repair.session_deferred":
        "the shard's catch-up budget deferred a repair session";
    RepairReplacedOtherVersion => "repair.replaced_other_version":
        "a proven repair replaced a different prepare the replica held for that op (another view's)";
    RepairBufferFullDropped => "repair.buffer_full_dropped":
        "a repaired prepare not provable yet was dropped: the repair buffer was full";
    RangeEvictedSent => "catch_up.range_evicted_sent":
        "a peer answered a repair with RangeEvicted (the ops left its ring)";
    TransferStarted => "catch_up.transfer_started": "a state transfer started";
    TransferInstalled => "catch_up.transfer_installed": "a transferred checkpoint was installed";
    TransferAbandoned => "catch_up.transfer_abandoned":
        "a state transfer was abandoned (peer silent, stale, or its bytes refused)";
    TransferNotDurable => "catch_up.transfer_not_durable":
        "a whole, verified transfer was not installed: the disk refused to make it durable";
    TransferPinReleasedIdle => "catch_up.pin_released_idle":
        "a served transfer's ring pin was released because its receiver went quiet";
    TransferRefusedBusy => "catch_up.transfer_refused_busy":
        "a peer refused to serve a transfer: it already serves the most it may";
    TransferRestarted => "catch_up.transfer_restarted":
        "a transfer started over: its peer shipped a newer checkpoint mid-way";
    TransferStale => "catch_up.transfer_stale":
        "a transfer started before the previous install connected to the ops above it";
    TransferDroppedLeading => "catch_up.transfer_dropped_leading":
        "a replica started its view as primary with a state transfer in flight and dropped it";
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
    // Damaged input refused: a frame whose header verified and whose body did not, by
    // what the body carried (a header that fails its own checksum names nothing).
    DamagedPrepareRefused => "refused.damaged_prepare":
        "a prepare (sent or repaired) arrived with a damaged body and was refused";
    DamagedViewChangeRefused => "refused.damaged_view_change":
        "a DoViewChange or StartView arrived with a damaged log and was refused";
    DamagedChunkRefused => "refused.damaged_chunk":
        "a checkpoint chunk of a state transfer arrived damaged and was refused";
    DamagedRequestRefused => "refused.damaged_request":
        "a client's request or query arrived with a damaged body and was refused";
    // Partitions and sessions.
    OwnerFenceRefused => "partition.owner_fence_refused":
        "a consumer group's former owner was refused (StaleOwner)";
    SessionUnboundRefused => "session.unbound_refused":
        "a node refused a request from a sender with no bound session (Unbound)";
    ParkedRequestExpired => "session.parked_request_expired":
        "a request parked for its session's metadata expired unanswered";
    }
}

/// How many marks there are.
pub const MARKS: usize = Mark::ALL.len();

named_table! {
    /// A watermark: a measure of how deep a run went, kept at its highest (see the
    /// module doc); each variant's doc says what it measures and where.
    Watermark {
    View => "wm.view": "the highest view a replica of any group was seen in (harness: the failover figures)";
    InheritedPipeline => "wm.inherited_pipeline":
        "the most uncommitted ops a new primary took over from a view change (vsr/view_change.rs)";
    PrepareAttempts => "wm.prepare_attempts":
        "the most times a primary resent one prepare: how long a commit stalled, resends backing off (vsr/normal.rs)";
    OpsBehind => "wm.ops_behind":
        "the most committed ops a Normal replica had not applied yet (harness: the per-tick check)";
    LagTicks => "wm.lag_ticks":
        "the longest a Normal replica behind its commit point went without applying an op (harness)";
    ViewChangeGroups => "wm.view_change_groups":
        "the most groups in a view change at once: a replica in a view above any view some replica is Normal in (harness)";
    ReplicasDown => "wm.replicas_down": "the most replicas down at once (harness: crashes, outages)";
    DeposedPrimaryTicks => "wm.deposed_primary_ticks":
        "the longest a replica was seen the Normal primary of a view its group had replaced (harness)";
    }
}

/// How many watermarks there are.
pub const WATERMARKS: usize = Watermark::ALL.len();

/// Levels a watermark's value is sorted into: its bit length, so level 0 is 0, level 1
/// is 1, level 2 is 2-3, level `k` is `2^(k-1)..2^k`, and the last level takes
/// everything above. Sixteen levels reach 16,384, past any view, lag or stretch a run
/// of today's lengths sees; doubling steps keep a watermark's news rare (a run that
/// went one view further is not new, one that went twice as far is).
pub const WATERMARK_LEVELS: usize = 16;

/// Marks and watermark levels: every [`Point`].
pub const POINTS: usize = MARKS + WATERMARKS * WATERMARK_LEVELS;

/// A point of coverage: a mark, or a level of a watermark.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Point(u16);

impl Point {
    /// The point of `mark`.
    pub const fn mark(mark: Mark) -> Point {
        Point(mark as u16)
    }

    /// The point of `watermark` at `level` (`level < WATERMARK_LEVELS`).
    pub fn level(watermark: Watermark, level: usize) -> Point {
        debug_assert!(level < WATERMARK_LEVELS);
        Point((MARKS + watermark as usize * WATERMARK_LEVELS + level) as u16)
    }

    /// Every point, marks first, in table order.
    pub fn all() -> impl Iterator<Item = Point> {
        (0..POINTS as u16).map(Point)
    }

    /// Its index in [`Point::all`]'s order (below [`POINTS`]).
    pub fn index(self) -> usize {
        usize::from(self.0)
    }

    /// The mark it is, if a mark.
    pub fn as_mark(self) -> Option<Mark> {
        Mark::ALL.get(self.index()).copied()
    }

    /// The watermark and level it is, if a watermark level.
    pub fn as_level(self) -> Option<(Watermark, usize)> {
        let rest = self.index().checked_sub(MARKS)?;
        Some((Watermark::ALL[rest / WATERMARK_LEVELS], rest % WATERMARK_LEVELS))
    }

    /// Its name: the mark's, or the watermark's with the least value of the level
    /// (`wm.view>=16`).
    pub fn name(self) -> String {
        match (self.as_mark(), self.as_level()) {
            (Some(mark), _) => mark.name().to_owned(),
            (None, Some((watermark, level))) => format!("{}>={}", watermark.name(), level_floor(level)),
            (None, None) => unreachable!("a point is a mark or a watermark level"),
        }
    }

    /// The point named `name` ([`Point::name`]), if any.
    pub fn from_name(name: &str) -> Option<Point> {
        Point::all().find(|point| point.name() == name)
    }
}

/// The level of a watermark's value: its bit length, capped at the last level.
pub fn level_of(value: u64) -> usize {
    ((u64::BITS - value.leading_zeros()) as usize).min(WATERMARK_LEVELS - 1)
}

/// The least value of `level`.
pub fn level_floor(level: usize) -> u64 {
    if level == 0 { 0 } else { 1 << (level - 1) }
}

// The table covers the protocol's and storage's rare paths broadly (issue #17 asks for
// at least forty); a table that shrank below that would be a regression.
const _: () = assert!(MARKS >= 40);

/// Words of the reached-points bit set ([`reached`]).
pub const REACHED_WORDS: usize = POINTS.div_ceil(64);

/// Which points were reached, one bit per [`Point`] in its order (marks hit at least
/// once, watermark levels reached): what a caller polls after each step to learn when
/// a point was first reached (the simulator's explorer branches a run there), at the
/// cost of a few word compares when nothing new happened.
pub type Reached = [u64; REACHED_WORDS];

thread_local! {
    static HITS: [Cell<u64>; MARKS] = const { [const { Cell::new(0) }; MARKS] };
    static HIGHEST: [Cell<u64>; WATERMARKS] = const { [const { Cell::new(0) }; WATERMARKS] };
    static REACHED: [Cell<u64>; REACHED_WORDS] = const { [const { Cell::new(0) }; REACHED_WORDS] };
}

/// Note `value` for `watermark` on this thread: keep the highest, and mark its level
/// reached.
#[inline]
pub fn note_watermark(watermark: Watermark, value: u64) {
    let higher = HIGHEST.with(|highest| {
        let cell = &highest[watermark as usize];
        let higher = value > cell.get();
        if higher {
            cell.set(value);
        }
        higher
    });
    if higher {
        let point = Point::level(watermark, level_of(value)).index();
        REACHED.with(|reached| {
            let word = &reached[point / 64];
            word.set(word.get() | 1 << (point % 64));
        });
    }
}

/// This thread's highest value of every watermark since its last [`reset`], in table
/// order.
pub fn watermarks() -> Vec<(Watermark, u64)> {
    HIGHEST.with(|highest| {
        Watermark::ALL
            .iter()
            .map(|&watermark| (watermark, highest[watermark as usize].get()))
            .collect()
    })
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
    HIGHEST.with(|highest| highest.iter().for_each(|cell| cell.set(0)));
    REACHED.with(|reached| reached.iter().for_each(|word| word.set(0)));
}

/// The marks this thread has hit since its last [`reset`], as a bit set.
#[inline]
pub fn reached() -> Reached {
    REACHED.with(|reached| std::array::from_fn(|index| reached[index].get()))
}

/// The points set in `now` and not in `before`, in their order.
pub fn newly_reached(before: &Reached, now: &Reached) -> Vec<Point> {
    Point::all()
        .filter(|point| {
            let (word, bit) = (point.index() / 64, 1u64 << (point.index() % 64));
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

/// Note a value of the named [`Watermark`] variant: `watermark!(View, view)`.
#[macro_export]
macro_rules! watermark {
    ($watermark:ident, $value:expr) => {
        $crate::coverage::note_watermark($crate::coverage::Watermark::$watermark, $value)
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
            vec![Point::mark(Mark::CheckpointTaken), Point::mark(Mark::StoreFailStop)]
        );
        assert!(newly_reached(&now, &reached()).is_empty(), "nothing new since");
        reset();
        assert_eq!(reached(), [0; REACHED_WORDS]);
    }

    #[test]
    fn a_watermark_keeps_its_highest_and_reaches_the_level_of_each_new_high() {
        reset();
        let before = reached();
        watermark!(View, 5);
        watermark!(View, 3);
        watermark!(View, 6);
        watermark!(OpsBehind, 0);
        let levels: Vec<String> = newly_reached(&before, &reached())
            .iter()
            .map(|point| point.name())
            .collect();
        assert_eq!(
            levels,
            vec!["wm.view>=4"],
            "5 and 6 share a level; 3 and 0 were no new high"
        );
        assert!(watermarks().contains(&(Watermark::View, 6)));
        watermark!(View, 1 << 40);
        assert!(newly_reached(&before, &reached()).contains(&Point::level(Watermark::View, WATERMARK_LEVELS - 1)));
        assert_eq!(level_of(0), 0);
        assert_eq!(level_of(1), 1);
        assert_eq!(level_of(7), 3);
        assert_eq!(level_floor(3), 4);
        reset();
        assert!(watermarks().iter().all(|(_, value)| *value == 0));
    }

    #[test]
    fn points_are_marks_then_watermark_levels_and_names_parse_back() {
        let points: Vec<Point> = Point::all().collect();
        assert_eq!(points.len(), POINTS);
        assert_eq!(points[0].as_mark(), Some(Mark::ALL[0]));
        assert_eq!(points[MARKS].as_level(), Some((Watermark::ALL[0], 0)));
        for point in points {
            assert_eq!(Point::from_name(&point.name()), Some(point));
            assert!(point.as_mark().is_some() != point.as_level().is_some());
        }
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
