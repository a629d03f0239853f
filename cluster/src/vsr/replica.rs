//! The replica: its state, message dispatch, and normal operation (request, prepare,
//! prepare-ok, commit, reply, commit heartbeat).

mod accessors;

use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};
use std::rc::Rc;

use super::StateMachine;
use super::budget::CatchUpBudget;
use super::client_table::ClientTable;
use super::constants::*;
use super::journal::{Entry, Journal};
use super::round_trip::RoundTrip;
use super::store::{ReplicaStore, StorageBreak, StoreError, StoredRecord, Superblock};
use super::timeout::Timeout;
use super::transfer::{Served, Transfer};
use super::view_change::DoViewChangeLog;
use crate::seam::ProcessId;
use crate::wire::{self, Command, Header};

/// A replica's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Taking part in the current view.
    Normal,
    /// Electing the next primary.
    ViewChange,
    /// Restarted; waiting to learn the current view. Drops prepares, sends no
    /// PrepareOk, ignores StartViewChange and DoViewChange: it must stay out of every
    /// quorum until it has adopted a view.
    Recovering,
}

/// Who this replica is.
#[derive(Clone, Copy, Debug)]
pub struct ReplicaConfig {
    /// The cluster id every frame carries.
    pub cluster: u64,
    /// The VSR group (0 = metadata).
    pub group: u64,
    /// This replica's index.
    pub replica: u8,
    /// Replicas in the group.
    pub replicas: u8,
    /// Seeds the entropy the primary puts in each prepare (salts, tokens) and the boot
    /// nonce. Production draws it from the OS once at boot; the simulator from the seed.
    pub entropy_seed: u64,
    /// The view a fresh group starts in (ignored on a restart, which restores its
    /// recorded view). 0 for the metadata group; a partition group starts in the view
    /// the metadata group was in when the partition's create was prepared, so its first
    /// primary is spread by that view instead of always being replica 0.
    pub initial_view: u64,
    /// Ops the journal holds at most (the metadata group's `journal_slots`, a
    /// partition's ring entries): see `vsr::checkpoint`. At least
    /// [`JOURNAL_OPS_MIN`].
    pub journal_ops_max: u64,
    /// Frame bytes the journal holds at most, in bytes: at least [`RING_BYTES_MIN`].
    pub journal_bytes_max: u64,
    /// Applied ops whose frames the journal keeps in memory below the applied head
    /// (older ones are read back from the store to serve a repair): a node's is
    /// [`super::constants::JOURNAL_APPLIED_FRAMES_IN_MEMORY_OPS`]. At least 1.
    pub applied_frames_in_memory_ops: u64,
    /// Whether a restarted replica fetches its primary's state as soon as it adopts a
    /// view, when the primary has applied past a checkpoint this replica lacks (the
    /// metadata group: its state is small and a snapshot bounds the repair that
    /// follows to one journal). Otherwise it transfers only when repair finds the ops
    /// it needs evicted everywhere it asked.
    pub transfer_on_rejoin: bool,
    /// Test-only: a deliberately broken answer to storage faults (see [`StorageBreak`]).
    pub storage_break: StorageBreak,
    /// Simulation-only smaller bounds (see [`super::Buggify`]); production: `OFF`.
    pub buggify: super::Buggify,
}

impl ReplicaConfig {
    /// The journal bounds of a metadata group by default.
    pub const METADATA_JOURNAL: (u64, u64) = (JOURNAL_SLOTS_DEFAULT, RING_BYTES_DEFAULT);
    /// The journal bounds of a partition group by default.
    pub const PARTITION_RING: (u64, u64) = (RING_ENTRIES_DEFAULT, RING_BYTES_DEFAULT);
}

/// Counters for checks and reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplicaStats {
    /// Frames that failed to open (checksum, size, unknown command).
    pub frames_rejected: u64,
    /// Frames for another cluster or group.
    pub frames_misrouted: u64,
    /// Replica messages whose sender, as the transport authenticated it, is not the
    /// replica the header names (or not a replica at all: a prepare from a client).
    /// Refused unread: only a replica speaks for itself.
    pub frames_sender_mismatch: u64,
    /// Requests refused `Malformed`: an operation the state machine does not know, or
    /// a body that does not decode as its operation's.
    pub requests_malformed: u64,
    /// Superblock writes that failed (the replica stayed silent).
    pub superblock_write_failures: u64,
    /// Views started with this replica as primary.
    pub views_started: u64,
    /// Ops applied.
    pub ops_applied: u64,
    /// Acknowledgements this backup was about to send (buggify's
    /// `prepare_ok_skip_every` counts them to leave some out).
    pub prepare_oks_considered: u64,
    /// Repair requests sent.
    pub repair_requests: u64,
    /// Requests refused (not primary, not normal, queue full).
    pub requests_refused: u64,
    /// Queries answered from applied state.
    pub queries_answered: u64,
    /// Updates (requests that are not queries) this replica took up as the Normal
    /// primary of its view, before anything decided what to do with them: the harness
    /// compares it across a deposed primary's stretch (`race.request_at_deposed_primary`).
    pub updates_taken_as_primary: u64,
    /// Queries this replica took up as the Normal primary of its view, likewise.
    pub queries_taken_as_primary: u64,
    /// Query confirmation rounds started (see `vsr::query`).
    pub query_rounds_started: u64,
    /// Query confirmation rounds a quorum confirmed.
    pub query_rounds_confirmed: u64,
    /// Requests answered without an op: refused whatever the state (see
    /// [`StateMachine::refuse_before_prepare`]).
    pub requests_refused_before_prepare: u64,
    /// Prepares the store failed to make durable (not journaled, so never acknowledged).
    pub prepare_write_failures: u64,
    /// DoViewChanges offered with an incomplete log (counted only with every replica's).
    pub do_view_changes_incomplete: u64,
    /// Committed ops a view started without because no replica held them any more
    /// (every replica lost its unpublished tail: a whole-cluster power loss).
    pub committed_ops_lost: u64,
    /// Checkpoints made durable (taken or installed).
    pub checkpoints_written: u64,
    /// Checkpoint writes the store refused (nothing was evicted).
    pub checkpoint_write_failures: u64,
    /// Ops evicted from the journal below a checkpoint.
    pub ops_evicted: u64,
    /// RangeEvicted answers sent (a peer asked for ops this replica evicted).
    pub range_evicted_sent: u64,
    /// RangeEvicted answers received.
    pub range_evicted_received: u64,
    /// State transfers started as the receiver.
    pub transfers_started: u64,
    /// State transfers installed.
    pub transfers_installed: u64,
    /// State transfers abandoned (peer silent, or bytes refused).
    pub transfers_abandoned: u64,
    /// Transfers that switched to a newer checkpoint mid-way (the peer dropped the pin).
    pub transfers_restarted: u64,
    /// Transfers started before the previous install connected (stale on arrival).
    pub transfers_stale: u64,
    /// Transfers this replica began serving.
    pub transfers_served: u64,
    /// Transfer requests refused (already serving the most it may).
    pub transfers_refused: u64,
    /// Checkpoint chunks sent.
    pub transfer_chunks_served: u64,
    /// Served transfers' ring pins released (idle, or the ring hit twice its cap).
    pub transfer_pins_released: u64,
    /// Served transfers whose receiver then asked for the ops above them (installed).
    pub transfers_connected: u64,
    /// Prepares dropped because the journal had no room (beyond the checkpoint's reach).
    pub prepares_dropped_journal_full: u64,
    /// Repair sessions started (see `vsr::budget`).
    pub repair_sessions: u64,
    /// Repairs put off to the next tick for want of a place in the shard's budget.
    pub repair_sessions_deferred: u64,
    /// 1 once the store failed for good and the replica stopped (see
    /// [`Replica::storage_failure`]).
    pub storage_failures: u64,
    /// Frames dropped unread because the replica had stopped on a storage failure.
    pub frames_dropped_stopped: u64,
    /// Records found damaged at boot (failed their checksum, or named another op):
    /// held but unknown, never applied, repaired from peers.
    pub damaged_records_at_boot: u64,
    /// Times a log booted incomplete (lost or damaged records) was replaced by a view's
    /// log (a StartView or a merge), after which repair fills what it lacked.
    pub incomplete_logs_replaced: u64,
    /// Of those, logs that booted with damaged records: the damage is repaired from
    /// peers from here on (what was held but unknown is refetched and verified).
    pub damaged_logs_replaced: u64,
}

/// A frame to send.
#[derive(Clone, Debug)]
pub struct Outgoing {
    /// Destination.
    pub to: ProcessId,
    /// The sealed frame.
    pub frame: Vec<u8>,
}

/// A prepared op waiting for its replication quorum (primary only).
#[derive(Clone, Debug)]
pub(crate) struct PipelineEntry {
    pub op: u64,
    pub checksum: u128,
    /// Bit per replica that has acknowledged.
    pub oks: u8,
    pub retransmit: Timeout,
    pub attempts: u32,
}

/// A checkpoint's contents as digests: what [`Replica::last_encoded_checkpoint`] says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointDigests {
    /// The checkpoint's op (the encoding replica's applied head).
    pub op: u64,
    /// The state machine's digest at `op`.
    pub state: u128,
    /// The client table's digest at `op` ([`Replica::client_table_digest`]).
    pub client_table: u128,
    /// The encoded checkpoint's length: what a state transfer of it ships, in
    /// `TRANSFER_CHUNK_BYTES` chunks.
    pub bytes: u64,
}

/// A VSR replica of one group.
pub struct Replica<S, T> {
    pub(crate) config: ReplicaConfig,
    pub(crate) state_machine: S,
    pub(crate) store: T,
    pub(crate) status: Status,
    pub(crate) view: u64,
    pub(crate) log_view: u64,
    /// What the store last made durable.
    pub(crate) durable: Superblock,
    /// Highest op applied to the state machine.
    pub(crate) commit_min: u64,
    /// Highest op known committed.
    pub(crate) commit_max: u64,
    pub(crate) journal: Journal,
    pub(crate) pipeline: VecDeque<PipelineEntry>,
    pub(crate) request_queue: VecDeque<(ProcessId, Header, Vec<u8>)>,
    pub(crate) clients: ClientTable,
    /// Where each client in the pipeline or queue is (clients not yet in the table).
    pub(crate) pending_addresses: BTreeMap<u128, ProcessId>,
    pub(crate) last_timestamp: u64,
    pub(crate) realtime_micros: u64,
    /// Inputs that may have changed this replica: every frame fed to it and every tick
    /// on which a timeout fired (see [`Replica::activity`]).
    activity: u64,
    /// Coming ticks sure to fire nothing, worked out after the last input or tick that
    /// ran: each returns at once and is counted in `ticks_skipped` (see
    /// `vsr::idle_ticks`).
    pub(crate) ticks_quiet_ahead: u64,
    /// Ticks returned from at once since the last tick that ran, whose counting is
    /// still to apply.
    pub(crate) ticks_skipped: u64,
    /// Ticks delivered so far, run or counted, one by one through [`Replica::tick`]
    /// or in bulk through [`Replica::skip_quiet_ticks_to`]; a shard starts the count at
    /// its own (see `vsr::idle_ticks`).
    pub(crate) ticks_delivered: u64,
    pub(crate) boot_nonce: u64,
    // Timeouts.
    pub(crate) commit_broadcast: Timeout,
    pub(crate) liveness: Timeout,
    pub(crate) view_change_resend: Timeout,
    pub(crate) view_change_escalate: Timeout,
    pub(crate) request_start_view: Timeout,
    pub(crate) request_start_view_probes: u64,
    pub(crate) repair_retry: Timeout,
    /// This replica voted to leave its view and still wants out (see `vsr::leave_view`).
    pub(crate) leaving: bool,
    /// Other replicas' votes to leave views, by replica.
    pub(crate) leave_votes: super::leave_view::LeaveVotes,
    /// Replicas whose connection the transport reported closed and which sent
    /// nothing since (see [`Replica::on_peer_closed`]): bit per replica.
    pub(crate) peers_closed: u8,
    // View change.
    pub(crate) start_view_change_from: u8,
    pub(crate) do_view_change_from: BTreeMap<u8, DoViewChangeLog>,
    pub(crate) do_view_change_sent: bool,
    /// The log this replica booted with may lack ops it acknowledged before it stopped
    /// (its store said so): until it installs a view's log from a StartView or a merge,
    /// its DoViewChange says so, and its missing ops never count as nacks (they could
    /// outvote a committed op); such a log decides a view only with every replica's.
    pub(crate) log_incomplete: bool,
    pub(crate) outbox: Vec<Outgoing>,
    pub(crate) stats: ReplicaStats,
    pub(crate) repair_cursor: u8,
    /// Repair rounds that timed out since the last one that filled something: a backup
    /// asks its primary first, then each other peer in turn (see `vsr::repair`).
    pub(crate) repair_misses: u32,
    /// The journal changed since the last chain walk.
    pub(crate) chain_dirty: bool,
    /// Ops this primary inherited from the view change into its pipeline (may exceed
    /// the pipeline bound; new prepares wait until the pipeline is under it).
    pub(crate) pipeline_inherited: usize,
    /// Backup: the view and commit point of the last commit broadcast heard from the
    /// primary, to notice a commit point that did not move between two broadcasts.
    pub(crate) commit_heard: (u64, u64),
    /// Backup: the view and the primary's head named by a commit broadcast that found
    /// the commit point stalled with this backup's log short of that head; repair
    /// fetches up to it while the view lasts (see `on_commit`).
    pub(crate) stalled_head_heard: (u64, u64),
    /// Ops asked for per repair round: halved when a round's answers arrive without
    /// its top (a burst cut short), kept when nothing arrives (a lost path), doubled
    /// when it fills the lowest gap (up to `REPAIR_PREPARES_MAX`).
    pub(crate) repair_window: u64,
    /// Test-only (`StorageBreak::LeaveViewAfterTenWindows`): liveness expiries not yet
    /// acted on.
    liveness_fires_ignored: u8,
    /// The top of the range the outstanding repair request asked for.
    pub(crate) repair_first: u64,
    /// The nonce of the outstanding repair request, which its answers echo: only an
    /// answer to this very request measures a round trip.
    pub(crate) repair_nonce: u64,
    /// `ticks_delivered` when the outstanding repair request went out.
    pub(crate) repair_sent_at_tick: u64,
    /// How long to wait for a repair round's top before retrying (`repair_retry`'s
    /// length), from the round trips measured.
    pub(crate) repair_round_trip: RoundTrip,
    /// Some answer to the outstanding repair request arrived (its top may not have):
    /// the evidence that a round's answers are being evicted rather than never sent.
    pub(crate) repair_round_answered: bool,
    /// Repaired prepares not yet provably canonical, waiting for the trusted op above
    /// them to arrive (answers come lowest op first, the proof runs top down).
    pub(crate) repair_buffer: BTreeMap<u64, (Header, Rc<[u8]>)>,
    /// The op of the newest durable checkpoint (0: none; the root is the state then).
    pub(crate) checkpoint_op: u64,
    /// Ticks before a checkpoint is tried again after one failed (see
    /// `CHECKPOINT_RETRY_TICKS`); 0 when none failed or the wait is over.
    pub(crate) checkpoint_retry_wait_ticks: u64,
    /// What the last checkpoint this replica encoded (to take it, or to ship it in a
    /// state transfer) held, for a checker to compare with what others hold at that op
    /// (see [`Replica::last_encoded_checkpoint`]). One slot, so it costs nothing when
    /// nobody looks. A `Cell`: encoding reads the replica and must not need `&mut`.
    pub(crate) last_encoded_checkpoint: Cell<Option<CheckpointDigests>>,
    /// The state transfer this replica is receiving.
    pub(crate) transfer: Option<Transfer>,
    /// The state transfers this replica is serving (at most `TRANSFERS_SERVED_MAX`).
    pub(crate) served: Vec<Served>,
    /// The op of the last installed transfer until the op above it is applied.
    pub(crate) installed_awaiting_connect: Option<u64>,
    /// The catch-up allowance of the shard hosting this replica (its own, alone).
    /// `None` for a replica outside a shard: nothing to share, nothing rationed. (A
    /// private budget would never be recounted, and would refuse for good after its
    /// first three sessions.)
    pub(crate) budget: Option<Rc<CatchUpBudget>>,
    /// A repair session holds a place in the budget.
    pub(crate) repair_session: bool,
    /// A repair was refused a place: try again next tick.
    pub(crate) repair_deferred: bool,
    /// The store failed for good ([`ReplicaStore::failure`]): the replica has stopped.
    /// It sends nothing, takes no input and no tick, and its node fail-stops so that a
    /// supervisor restarts it on what the disk really holds.
    pub(crate) storage_failure: Option<&'static str>,
    /// The primary's query confirmation rounds (see `vsr::query`).
    pub(crate) queries: super::query::QueryRounds,
}

/// SplitMix64: the entropy and nonce derivation (a pure function of seed and input).
pub(crate) fn mix(mut value: u64) -> u64 {
    value = value.wrapping_add(0x9E37_79B9_7F4A_7C15);
    value = (value ^ (value >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    value ^ (value >> 31)
}

/// Mark a frame refused for its damaged body by what the body carried. Only a body
/// checksum failure comes here: its header verified, so the command byte is the
/// sender's (a header that failed its own checksum names nothing worth marking).
fn note_damaged_body(command: u8) {
    match Command::from_byte(command) {
        Some(Command::Prepare | Command::RepairPrepare) => crate::cover!(DamagedPrepareRefused),
        Some(Command::DoViewChange | Command::StartView) => crate::cover!(DamagedViewChangeRefused),
        Some(Command::CheckpointChunk) => crate::cover!(DamagedChunkRefused),
        Some(Command::Request) => crate::cover!(DamagedRequestRefused),
        _ => {}
    }
}

pub(crate) fn bit(replica: u8) -> u8 {
    1 << replica
}

impl<S: StateMachine, T: ReplicaStore> Replica<S, T> {
    /// Boot a replica on `store`. A store that was never written is a fresh replica
    /// (Normal in view 0); one with a superblock is a restart (Recovering in its
    /// recorded view, with its checkpoint and the journal it kept above it).
    /// `incarnation` distinguishes restarts (it feeds the boot nonce). A checkpoint that
    /// cannot be read or restored is an error: the replica does not run on that disk.
    pub fn open(config: ReplicaConfig, state_machine: S, store: T, incarnation: u64) -> Result<Self, StoreError> {
        Self::assert_config(&config);
        let superblock = store.superblock();
        let checkpoint = store.checkpoint()?;
        let checkpoint_op = checkpoint.as_ref().map_or(0, |(op, _)| *op);
        let (journal, damaged_records) = Self::load_journal(&config, &store, checkpoint_op);
        // A replica that ever wrote anything is a restart, even if (by a fault) it has
        // prepares but no superblock: only a truly empty store is a fresh replica.
        let recovering = superblock.is_some() || journal.head() > 0 || checkpoint.is_some() || damaged_records > 0;
        let damage_counts = config.storage_break != StorageBreak::CutDamageAsTornTail;
        let log_incomplete = store.may_lack_acknowledged_ops() || (damage_counts && damaged_records > 0);
        assert!(
            !log_incomplete || recovering,
            "only a restarted replica can have lost acknowledged ops"
        );
        if log_incomplete {
            crate::cover!(LogIncompleteAtBoot);
        }
        let durable = superblock.unwrap_or(Superblock {
            view: config.initial_view,
            log_view: config.initial_view,
            commit_max: 0,
        });
        tracing::info!(
            replica = config.replica,
            group = config.group,
            recovering,
            view = durable.view,
            log_view = durable.log_view,
            head = journal.head(),
            damaged_records,
            log_incomplete,
            "open"
        );
        let mut replica = Self::booted(
            config,
            state_machine,
            store,
            journal,
            durable,
            recovering,
            log_incomplete,
            incarnation,
        );
        if let Some((op, bytes)) = checkpoint {
            let installed = replica.install_checkpoint(&bytes).map_err(|error| {
                tracing::error!(replica = replica.config.replica, group = replica.config.group, op, %error, "checkpoint refused at boot");
                StoreError { what: "checkpoint refused at boot" }
            })?;
            if installed != op {
                return Err(StoreError {
                    what: "checkpoint names another op than its file",
                });
            }
            replica.checkpoint_op = op;
        }
        if recovering {
            // The first probe goes at the next tick: a primary that is there answers
            // at once, and the backups of a view this replica led learn that it
            // leads it no more (`on_request_start_view`).
            replica.request_start_view.start();
            replica.request_start_view.shorten_to(1);
        } else {
            // A fresh group starts in its initial view, started by definition. The
            // superblock is written now so that a restart is recognised as one.
            if replica.store.write_superblock(durable).is_err() {
                replica.stats.superblock_write_failures += 1;
            }
            replica.enter_normal_timers();
        }
        replica.stats.damaged_records_at_boot = damaged_records;
        replica.stop_if_store_failed();
        Ok(replica)
    }

    /// The configuration's bounds, asserted before anything is built from them.
    fn assert_config(config: &ReplicaConfig) {
        config.buggify.assert_valid();
        assert!(
            (1..=REPLICAS_MAX as u8).contains(&config.replicas) && config.replica < config.replicas,
            "replica {} of {}",
            config.replica,
            config.replicas
        );
        assert!(
            (JOURNAL_OPS_MIN..=JOURNAL_OPS_MAX).contains(&config.journal_ops_max),
            "journal of {} ops",
            config.journal_ops_max
        );
        assert!(
            (RING_BYTES_MIN..=RING_BYTES_MAX).contains(&config.journal_bytes_max),
            "journal of {} bytes",
            config.journal_bytes_max
        );
        assert!(
            config.applied_frames_in_memory_ops >= 1,
            "the op just applied keeps its frame in memory"
        );
    }

    /// The journal of the records the store kept above its checkpoint, and how many
    /// records no longer verify (or name another op): those are held but unknown,
    /// never applied, and repair refetches them. They may be ops this replica
    /// acknowledged, so its log is incomplete until a view's log replaces it (see
    /// `log_incomplete`).
    fn load_journal(config: &ReplicaConfig, store: &T, checkpoint_op: u64) -> (Journal, u64) {
        let mut journal = Journal::new(config.cluster, config.group);
        let mut damaged_records = store.damaged_at_open();
        for (op, record) in store.records() {
            if op <= checkpoint_op {
                continue;
            }
            let (header, frame) = match record {
                StoredRecord::Prepare(frame) => match wire::open_with(&frame, config.storage_break.wal_checksums()) {
                    Ok((header, _)) => (header, Some(frame)),
                    Err(_) => {
                        damaged_records += 1;
                        continue;
                    }
                },
                StoredRecord::Header(bytes) => match Header::decode_verified(&bytes) {
                    Ok(header) => (header, None),
                    Err(_) => {
                        damaged_records += 1;
                        continue;
                    }
                },
            };
            if header.op == op && header.command == Command::Prepare && op > 0 {
                journal.put(Entry::new(header, frame, false));
            } else {
                damaged_records += 1;
            }
        }
        (journal, damaged_records)
    }

    /// A replica in its booted state: every counter and timer at rest, `Recovering`
    /// in its recorded view when `recovering`, else `Normal` in `durable`'s view.
    #[allow(
        clippy::too_many_arguments,
        reason = "each argument is one part of the boot state, at its one call site"
    )]
    fn booted(
        config: ReplicaConfig,
        state_machine: S,
        store: T,
        journal: Journal,
        durable: Superblock,
        recovering: bool,
        log_incomplete: bool,
        incarnation: u64,
    ) -> Self {
        let boot_nonce = mix(config.entropy_seed ^ mix(incarnation ^ u64::from(config.replica)));
        Self {
            config,
            state_machine,
            store,
            status: if recovering { Status::Recovering } else { Status::Normal },
            view: durable.view,
            log_view: durable.log_view,
            durable,
            commit_min: 0,
            commit_max: durable.commit_max,
            journal,
            pipeline: VecDeque::new(),
            request_queue: VecDeque::new(),
            clients: ClientTable::default(),
            pending_addresses: BTreeMap::new(),
            last_timestamp: 0,
            realtime_micros: 0,
            activity: 0,
            ticks_quiet_ahead: 0,
            ticks_skipped: 0,
            ticks_delivered: 0,
            boot_nonce,
            commit_broadcast: Timeout::new("commit_broadcast", COMMIT_BROADCAST_TICKS),
            liveness: Timeout::new("liveness", config.buggify.liveness_window_ticks),
            view_change_resend: Timeout::new("view_change_resend", VIEW_CHANGE_RESEND_TICKS),
            view_change_escalate: Timeout::new("view_change_escalate", VIEW_CHANGE_ESCALATE_TICKS),
            request_start_view: Timeout::new("request_start_view", REQUEST_START_VIEW_TICKS),
            request_start_view_probes: 0,
            repair_retry: Timeout::new("repair_retry", REPAIR_RETRY_TICKS),
            leaving: false,
            leave_votes: [None; REPLICAS_MAX],
            peers_closed: 0,
            start_view_change_from: 0,
            do_view_change_from: BTreeMap::new(),
            do_view_change_sent: false,
            log_incomplete,
            outbox: Vec::new(),
            stats: ReplicaStats::default(),
            repair_cursor: 0,
            repair_misses: 0,
            chain_dirty: true,
            pipeline_inherited: 0,
            commit_heard: (0, 0),
            stalled_head_heard: (0, 0),
            repair_window: if config.storage_break == StorageBreak::RepairOneOpARound {
                1
            } else {
                config.buggify.repair_window_initial
            },
            liveness_fires_ignored: 0,
            repair_first: 0,
            repair_nonce: 0,
            repair_sent_at_tick: 0,
            repair_round_trip: RoundTrip::new(REPAIR_RETRY_TICKS_MIN, REPAIR_RETRY_TICKS),
            repair_round_answered: false,
            repair_buffer: BTreeMap::new(),
            checkpoint_op: 0,
            checkpoint_retry_wait_ticks: 0,
            last_encoded_checkpoint: Cell::new(None),
            transfer: None,
            served: Vec::new(),
            installed_awaiting_connect: None,
            budget: None,
            repair_session: false,
            repair_deferred: false,
            storage_failure: None,
            queries: super::query::QueryRounds::new(),
        }
    }

    // ---- Sending. ----

    /// A header for `command` with this replica's identity and current view.
    pub(crate) fn header(&self, command: Command) -> Header {
        let mut header = Header::new(command);
        header.cluster = self.config.cluster;
        header.group = self.config.group;
        header.replica = self.config.replica;
        header.view = self.view;
        header
    }

    pub(crate) fn send(&mut self, to: ProcessId, header: Header, body: &[u8]) {
        let frame = wire::seal_header(header, body);
        self.outbox.push(Outgoing { to, frame });
    }

    pub(crate) fn send_to_replica(&mut self, replica: u8, header: Header, body: &[u8]) {
        debug_assert_ne!(replica, self.config.replica, "sending {:?} to self", header.command);
        self.send(ProcessId(u32::from(replica)), header, body);
    }

    pub(crate) fn send_to_other_replicas(&mut self, header: Header, body: &[u8]) {
        let frame = wire::seal_header(header, body);
        for replica in 0..self.config.replicas {
            if replica != self.config.replica {
                self.outbox.push(Outgoing {
                    to: ProcessId(u32::from(replica)),
                    frame: frame.clone(),
                });
            }
        }
    }

    /// Make a prepare durable; false (counted) if the store failed. A prepare that is
    /// not durable is not journaled either, so it is never acknowledged: repair or the
    /// primary's retransmission brings it again.
    pub(crate) fn store_prepare(&mut self, op: u64, frame: &Rc<[u8]>) -> bool {
        match self.store.write_prepare(op, frame) {
            Ok(()) => true,
            Err(_) => {
                self.stats.prepare_write_failures += 1;
                false
            }
        }
    }

    /// Persist the superblock; false (and the replica stays silent) if the write failed.
    pub(crate) fn persist(&mut self, superblock: Superblock) -> bool {
        if self.durable == superblock {
            return true;
        }
        match self.store.write_superblock(superblock) {
            Ok(()) => {
                self.durable = superblock;
                true
            }
            Err(_) => {
                self.stats.superblock_write_failures += 1;
                false
            }
        }
    }

    /// In a normal view, persist the commit point once it has run
    /// [`SUPERBLOCK_COMMIT_INTERVAL_OPS`] ahead of the superblock's, so a restart knows
    /// that much is committed (see the constant). A failed write is counted and stops
    /// the replica like any other (`stop_if_store_failed`).
    fn persist_commit_point(&mut self) {
        if self.status != Status::Normal || self.durable.log_view != self.view {
            return;
        }
        debug_assert_eq!(self.durable.view, self.view, "a normal view was promised durably");
        if self.commit_max < self.durable.commit_max + SUPERBLOCK_COMMIT_INTERVAL_OPS {
            return;
        }
        let superblock = Superblock {
            commit_max: self.commit_max,
            ..self.durable
        };
        self.persist(superblock);
    }

    // ---- Input. ----

    /// Feed one frame from `from`, with the local realtime clock.
    pub fn on_frame(&mut self, from: ProcessId, frame: &[u8], realtime_micros: u64) {
        self.receive(from, None, frame, realtime_micros);
    }

    /// [`Replica::on_frame`] for a caller that already decoded `header` from the
    /// frame's first bytes and verified its checksum (the shard does, to route it):
    /// only the frame's size and body are checked here, not the header twice.
    pub fn on_frame_with_header(&mut self, from: ProcessId, header: &Header, frame: &[u8], realtime_micros: u64) {
        self.receive(from, Some(header), frame, realtime_micros);
    }

    /// The transport reports that the connection from replica `peer` closed (it saw
    /// the connection end, or a dial of it refused): strong evidence that its process
    /// is gone. If it leads this replica's view, the view is given up after
    /// [`PRIMARY_CLOSED_CONFIRM_TICKS`] without a commit broadcast from it instead of
    /// the whole liveness window (see [`Replica::hasten_if_primary_closed`]). Any
    /// frame from `peer` afterwards withdraws the evidence. A `peer` that is not
    /// another replica of this group is ignored.
    pub fn on_peer_closed(&mut self, peer: u8, realtime_micros: u64) {
        if peer >= self.config.replicas || peer == self.config.replica || self.storage_failure.is_some() {
            return;
        }
        self.activity += 1;
        self.settle_skipped_ticks();
        self.realtime_micros = realtime_micros;
        self.peers_closed |= bit(peer);
        self.hasten_if_primary_closed();
        self.ticks_quiet_ahead = self.quiet_ticks_ahead();
    }

    /// If the primary of the current view is a replica whose connection closed, wait
    /// for it no longer than [`PRIMARY_CLOSED_CONFIRM_TICKS`]: a Normal backup's
    /// liveness window, or a view change's escalation, is shortened to it. Only ever
    /// shortens a wait, and only one that runs; a commit broadcast from the primary
    /// restarts the liveness window in full. Called when a notice arrives and when a
    /// view begins or a view change starts.
    pub(crate) fn hasten_if_primary_closed(&mut self) {
        if self.config.storage_break == StorageBreak::LeaveViewAfterTenWindows {
            return;
        }
        let primary = self.primary_of(self.view);
        if primary == self.config.replica || self.peers_closed & bit(primary) == 0 {
            return;
        }
        match self.status {
            Status::Normal if self.liveness.ticking() => {
                crate::cover!(LivenessHastenedPrimaryClosed);
                self.liveness.shorten_to(PRIMARY_CLOSED_CONFIRM_TICKS);
            }
            Status::ViewChange if self.view_change_escalate.ticking() => {
                crate::cover!(EscalationHastenedPrimaryClosed);
                self.view_change_escalate.shorten_to(PRIMARY_CLOSED_CONFIRM_TICKS);
            }
            _ => {}
        }
        debug_assert!(
            self.liveness.ticks_before_firing() < PRIMARY_CLOSED_CONFIRM_TICKS || self.status != Status::Normal
        );
    }

    fn receive(&mut self, from: ProcessId, verified: Option<&Header>, frame: &[u8], realtime_micros: u64) {
        self.activity += 1;
        self.settle_skipped_ticks();
        self.take_frame(from, verified, frame, realtime_micros);
        self.ticks_quiet_ahead = self.quiet_ticks_ahead();
    }

    fn take_frame(&mut self, from: ProcessId, verified: Option<&Header>, frame: &[u8], realtime_micros: u64) {
        if self.storage_failure.is_some() {
            self.stats.frames_dropped_stopped += 1;
            return;
        }
        self.realtime_micros = realtime_micros;
        let checksums = if self.config.storage_break == StorageBreak::InstallUnverifiedTransfer
            && wire::peek_command(frame) == Command::CheckpointChunk as u8
            && frame
                .get(..wire::HEADER_BYTES)
                .is_some_and(|bytes| Header::decode_verified(bytes).is_ok())
        {
            // The broken answer: a chunk's header is checked, its body is not.
            wire::Checksums::Skip
        } else {
            wire::Checksums::Verify
        };
        let opened = match verified {
            Some(header) => wire::open_body_with(header, frame, checksums).map(|body| (*header, body)),
            None => wire::open_with(frame, checksums),
        };
        let (header, body) = match opened {
            Ok(opened) => opened,
            Err(error) => {
                self.stats.frames_rejected += 1;
                if error == wire::FrameError::BodyChecksum {
                    note_damaged_body(wire::peek_command(frame));
                }
                return;
            }
        };
        if header.cluster != self.config.cluster || header.group != self.config.group {
            self.stats.frames_misrouted += 1;
            return;
        }
        // A verified frame of this group that came from a replica (on the bus, not as
        // named in the header: prepares are relayed) says its process is up again.
        if let Ok(sender) = u8::try_from(from.0)
            && sender < self.config.replicas
        {
            self.peers_closed &= !bit(sender);
        }
        // Who sent it is the transport's word (an authenticated peer connection, or the
        // simulated network's sender), never the header's: a header is only checksummed,
        // so anyone can write any replica index into one. A prepare names the replica
        // that prepared it, not the one relaying it (chain forwarding, retransmits after
        // a view change), so it is accepted from any replica: its checksum and view
        // decide. Every other replica message must come from the replica it names.
        let from_any_replica = from.0 < u32::from(self.config.replicas);
        let from_replica = Some(header.replica).filter(|&replica| {
            replica < self.config.replicas && replica != self.config.replica && from.0 == u32::from(replica)
        });
        let sender_mismatch = match header.command {
            Command::Request => false,
            Command::Prepare => !from_any_replica,
            _ => from.0 != u32::from(header.replica),
        };
        if sender_mismatch {
            self.stats.frames_sender_mismatch += 1;
            return;
        }
        match (header.command, from_replica) {
            (Command::Request, _) => self.on_request(from, header, body),
            (Command::Prepare, _) => self.on_prepare(header, frame),
            (Command::PrepareOk, Some(sender)) => self.on_prepare_ok(sender, &header),
            (Command::Commit, Some(sender)) => self.on_commit(sender, &header),
            (Command::CommitOk, Some(sender)) => self.on_commit_ok(sender, &header),
            (Command::StartViewChange, Some(sender)) => self.on_start_view_change(sender, &header),
            (Command::LeaveView, Some(sender)) => self.on_leave_view(sender, &header),
            (Command::DoViewChange, Some(sender)) => self.on_do_view_change(sender, &header, body),
            (Command::StartView, Some(sender)) => self.on_start_view(sender, &header, body),
            (Command::RequestStartView, Some(sender)) => self.on_request_start_view(sender, &header),
            (Command::RequestPrepares, Some(sender)) => self.on_request_prepares(sender, &header, body),
            (Command::RepairPrepare, Some(sender)) => self.on_repair_prepare(sender, &header, body),
            (Command::RangeEvicted, Some(sender)) => self.on_range_evicted(sender, &header),
            (Command::RequestCheckpoint, Some(sender)) => self.on_request_checkpoint(sender, &header),
            (Command::CheckpointChunk, Some(sender)) => self.on_checkpoint_chunk(sender, &header, body),
            _ => self.stats.frames_misrouted += 1,
        }
        self.after_input();
    }

    /// Advance one tick, with the local realtime clock.
    ///
    /// The follow-up work (repair, view start, applying) runs only when a timeout
    /// fired: it already ran after the last input and nothing has changed since, so on
    /// a quiet tick it would find nothing to do. A node hosts a group per partition,
    /// and most of them are quiet on most ticks.
    #[inline]
    pub fn tick(&mut self, realtime_micros: u64) {
        self.ticks_delivered += 1;
        if self.ticks_quiet_ahead > 0 {
            // Nothing fires on this tick (see `vsr::idle_ticks`): count it for later.
            self.ticks_quiet_ahead -= 1;
            self.ticks_skipped += 1;
            self.realtime_micros = realtime_micros;
            return;
        }
        self.tick_that_runs(realtime_micros);
    }

    /// A tick that may fire something: the skipped ticks' counting first, then the
    /// tick itself.
    #[inline(never)]
    fn tick_that_runs(&mut self, realtime_micros: u64) {
        self.settle_skipped_ticks();
        self.run_tick(realtime_micros);
        self.ticks_quiet_ahead = self.quiet_ticks_ahead();
    }

    fn run_tick(&mut self, realtime_micros: u64) {
        if self.storage_failure.is_some() {
            return;
        }
        self.realtime_micros = realtime_micros;
        let mut fired = false;
        if self.commit_broadcast.tick() {
            fired = true;
            self.broadcast_commit();
        }
        if self.liveness.tick() {
            fired = true;
            debug_assert!(self.status == Status::Normal && !self.is_primary());
            if self.config.storage_break == StorageBreak::LeaveViewAfterTenWindows && self.liveness_fires_ignored < 9 {
                self.liveness_fires_ignored += 1;
                self.liveness.start();
            } else {
                self.liveness_fires_ignored = 0;
                self.vote_to_leave_view();
            }
        }
        if self.view_change_escalate.tick() {
            fired = true;
            debug_assert_eq!(self.status, Status::ViewChange);
            // No view started in time: want the next one (with a quorum, see
            // `vsr::leave_view`).
            self.vote_to_leave_view();
        }
        if self.view_change_resend.tick() {
            fired = true;
            if self.status == Status::Normal {
                // A vote to leave the view, still wanted.
                self.send_leave_view();
            } else {
                self.resend_view_change();
            }
        }
        if self.request_start_view.tick() {
            fired = true;
            self.probe_start_view();
        }
        fired |= self.tick_pipeline();
        fired |= self.tick_query_rounds();
        fired |= self.tick_transfers();
        if self.repair_retry.tick() {
            fired = true;
            // A round whose top never arrived. If other answers to it did, they are
            // being lost to a full link (a small queue evicts most of a 128-prepare
            // burst): ask for less. If none did, the request or the path was lost
            // (a partition, a loss, a clog), which a smaller window does not help:
            // halving there shrank a restarted replica's window to one op a round
            // while a partition came and went, and it applied nothing for 2,000
            // ticks (`--seed 1000016 --faults swarm --buggify`, issue #17). Either
            // way give the session's place to a group that may get further.
            self.repair_retry.stop();
            self.repair_round_trip.back_off();
            if self.repair_round_answered {
                self.repair_window = (self.repair_window / 2).max(1);
            }
            // And ask another peer next time: the one asked may be cut off or buried
            // under a clogged link while others hold the same ops.
            self.repair_misses = self.repair_misses.wrapping_add(1);
            self.end_repair_session();
        }
        // A repair refused a place last time asks again.
        fired |= self.repair_deferred;
        if self.checkpoint_retry_wait_ticks > 0 {
            self.checkpoint_retry_wait_ticks -= 1;
            // The wait is over: try the checkpoint again now.
            fired |= self.checkpoint_retry_wait_ticks == 0;
        }
        if fired {
            self.activity += 1;
            self.after_input();
        }
    }

    /// Work that follows any input: repair, commit, view-change progress.
    fn after_input(&mut self) {
        if self.stop_if_store_failed() {
            return;
        }
        self.repair();
        if self.status == Status::ViewChange && self.is_primary() {
            self.try_start_view();
        }
        self.apply_committed();
        self.persist_commit_point();
        self.note_transfer_connected();
        self.maybe_checkpoint();
        self.stop_if_store_failed();
        self.refuse_queries_unless_leading();
        self.assert_invariants();
    }

    /// The log this replica booted with was just replaced by a view's log (it will never
    /// again be offered as incomplete): count what that settled.
    pub(crate) fn note_log_replaced(&mut self) {
        if self.log_incomplete {
            self.stats.incomplete_logs_replaced += 1;
            self.stats.damaged_logs_replaced += u64::from(self.stats.damaged_records_at_boot > 0);
        }
    }

    /// Stop for good if the store failed for good; true if stopped. Everything this
    /// input produced is dropped unsent: after a failed sync nothing written since the
    /// last good one may be acknowledged, and dropping a message is always safe. A
    /// primary that kept heartbeating on a disk that refuses its prepares would hold
    /// its group hostage (its backups never time out, and nothing commits).
    pub(crate) fn stop_if_store_failed(&mut self) -> bool {
        if self.storage_failure.is_some() {
            return true;
        }
        let Some(what) = self.store.failure() else {
            return false;
        };
        if self.config.storage_break == StorageBreak::KeepGoingAfterFailedWrite {
            return false;
        }
        tracing::error!(
            replica = self.config.replica,
            group = self.config.group,
            view = self.view,
            primary = self.is_primary(),
            commit = self.commit_max,
            what,
            "storage failed; the replica stops (nothing written since the last good sync is acknowledged)"
        );
        self.storage_failure = Some(what);
        self.stats.storage_failures += 1;
        crate::cover!(StoreFailStop);
        self.outbox.clear();
        assert!(self.storage_failure.is_some() && self.outbox.is_empty());
        true
    }

    pub(crate) fn enter_normal_timers(&mut self) {
        self.clear_leave_votes();
        self.view_change_resend.stop();
        self.view_change_escalate.stop();
        self.request_start_view.stop();
        if self.is_primary() {
            self.commit_broadcast.start();
            self.liveness.stop();
        } else {
            self.commit_broadcast.stop();
            self.liveness.start();
            self.hasten_if_primary_closed();
        }
    }

    /// Invariants that hold between any two inputs.
    fn assert_invariants(&self) {
        // Queries wait only on a primary leading a Normal view, and only so many.
        assert!(
            self.queries.waiting() == 0
                || (self.status == Status::Normal && self.is_primary() && self.storage_failure.is_none())
        );
        assert!(self.queries.waiting() <= self.config.buggify.queries_waiting_max);
        assert!(
            self.storage_failure.is_none() || self.outbox.is_empty(),
            "a replica stopped on a storage failure sends nothing"
        );
        assert!(self.commit_min <= self.commit_max, "applied past the commit point");
        assert!(
            self.log_view <= self.view,
            "log_view {} above view {}",
            self.log_view,
            self.view
        );
        assert!(self.durable.view <= self.view && self.durable.log_view <= self.log_view);
        assert!(
            self.durable.commit_max <= self.commit_max,
            "the durable commit point ran ahead"
        );
        assert!(self.pipeline.len() <= self.config.buggify.pipeline_prepares_max.max(self.pipeline_inherited));
        assert!(self.pipeline.len() <= PIPELINE_PREPARES_MAX.max(self.pipeline_inherited));
        assert!(self.request_queue.len() <= self.config.buggify.request_queue_max);
        assert!(self.request_queue.len() <= REQUEST_QUEUE_MAX);
        if self.status == Status::Normal {
            assert_eq!(self.log_view, self.view, "a normal replica's log is its view's");
        }
        if !self.pipeline.is_empty() {
            assert!(
                self.status == Status::Normal && self.is_primary(),
                "only a normal primary has a pipeline"
            );
            assert_eq!(self.pipeline.front().map(|entry| entry.op), Some(self.commit_max + 1));
            assert_eq!(self.pipeline.back().map(|entry| entry.op), Some(self.journal.head()));
        }
        for op in self.commit_min.saturating_sub(1).max(self.journal.floor())..=self.commit_min {
            assert!(self.journal.ready(op), "applied op {op} left the journal");
        }
        assert!(
            self.journal.floor() <= self.commit_min,
            "the journal floor {} is above the applied head {}",
            self.journal.floor(),
            self.commit_min
        );
        assert!(
            self.checkpoint_op <= self.commit_min,
            "checkpoint {} above the applied head {}",
            self.checkpoint_op,
            self.commit_min
        );
        assert!(self.served.len() <= TRANSFERS_SERVED_MAX);
        if self.leaving {
            assert!(
                !(self.status == Status::Normal && self.is_primary()),
                "a Normal primary never votes against its own view"
            );
            assert!(
                self.status != Status::Normal || self.view_change_resend.ticking(),
                "a standing vote is resent"
            );
        }
        if self.status == Status::Normal && !self.leaving {
            assert!(
                !self.view_change_resend.ticking(),
                "nothing to resend in a Normal view without a vote"
            );
        }
        if self.transfer.is_some() {
            assert!(
                self.status != Status::Recovering,
                "a recovering replica transfers nothing"
            );
            assert!(
                !(self.status == Status::Normal && self.is_primary()),
                "a normal primary transfers nothing: its log is complete above its commit point"
            );
        }
    }
}
