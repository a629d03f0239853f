//! What a replica keeps across a crash: its superblock (view, log_view) and its
//! journal of prepares.
//!
//! A synchronous trait for now, with [`MemoryStore`] as the one implementation: the
//! simulator keeps a replica's store when it crashes and hands it to the restarted
//! replica. The storage issue replaces it with the production superblock and WAL over
//! `DurableStorage` (and power loss). What it models now: durable writes that can be
//! made to fail, so a replica whose superblock write fails is seen to stay silent.

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

use super::journal::OpTable;

/// The durable part of a replica's view state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Superblock {
    /// The highest view this replica has promised to (sent StartViewChange for, or joined).
    pub view: u64,
    /// The last view in which this replica saw a view start (its log's authority).
    pub log_view: u64,
    /// The commit point known when that view started. Persisted with the log_view so
    /// that, after a restart, a hole below it in this replica's log is known to be a
    /// committed op still to repair, never evidence that the op was not acknowledged.
    pub commit_max: u64,
}

/// A write the store could not make durable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError {
    /// What failed.
    pub what: &'static str,
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "durable write failed: {}", self.what)
    }
}

impl std::error::Error for StoreError {}

/// A replica's durable state.
pub trait ReplicaStore {
    /// Make `superblock` durable.
    fn write_superblock(&mut self, superblock: Superblock) -> Result<(), StoreError>;
    /// Make the prepare frame for `op` durable (replacing any record at `op`).
    /// The frame is shared with the journal (it is immutable once sealed), so an
    /// in-memory store keeps a reference and a disk store writes the bytes.
    fn write_prepare(&mut self, op: u64, frame: &Rc<[u8]>) -> Result<(), StoreError>;
    /// Make a header durable without its body (replacing any record at `op`): the
    /// replica knows this op belongs to its log_view's log but does not hold the body
    /// yet. Without it, a restart would forget which ops its log_view's log holds.
    fn write_header(&mut self, op: u64, header: &[u8; crate::wire::HEADER_BYTES]) -> Result<(), StoreError>;
    /// Forget every prepare above `op` (a view change truncated them).
    fn truncate_after(&mut self, op: u64);
    /// Forget the prepare at `op` (the canonical chain holds another one there).
    fn remove_prepare(&mut self, op: u64);
    /// The superblock, if one was ever written.
    fn superblock(&self) -> Option<Superblock>;
    /// Every stored record, by op.
    fn records(&self) -> Vec<(u64, StoredRecord)>;
    /// The prepare frame stored at `op`, read back (`None` if the store holds none
    /// there, only a header, or cannot read it: the caller then does without it). The
    /// journal keeps only the headers of applied ops and reads their frames back here
    /// when a peer asks for them (see `Journal::release_frame`).
    fn read_prepare(&self, op: u64) -> Option<Rc<[u8]>>;
    /// Whether the store keeps the journal's own frames in memory (shared, not
    /// copied): the journal then gains nothing by holding an applied op's header
    /// alone, and keeps its frame.
    fn shares_frames_in_memory(&self) -> bool {
        false
    }
    /// Whether ops of this group must be durable before a replica acknowledges them
    /// (a `persisted` topic's partition). A primary marks its prepares with it
    /// ([`crate::wire::PREPARE_FLAG_PERSISTED`]) so backups honour it too. No default:
    /// a wrapping store that forgot to forward it would silently prepare every op of a
    /// persisted topic unmarked.
    fn persisted(&self) -> bool;
    /// Whether the log this store recovered may lack ops the replica acknowledged
    /// before it stopped (a partition WAL discards its unpublished tail at boot). Such
    /// a replica must rejoin through a primary's StartView and never start a view
    /// change with its own log, which could otherwise drop a committed op.
    fn may_lack_acknowledged_ops(&self) -> bool {
        false
    }
    /// Make a checkpoint durable: the encoded state of the replica after applying
    /// `op` (see `vsr::checkpoint`), replacing the previous one. Only once it returns
    /// `Ok` may the replica forget the ops at or below `op`.
    fn write_checkpoint(&mut self, op: u64, bytes: &Rc<[u8]>) -> Result<(), StoreError>;
    /// The newest durable checkpoint, if one was ever written: its op and its bytes.
    /// A checkpoint that cannot be read back whole is an error, never "none": booting
    /// without it would replay from op 1 a log whose start was discarded.
    fn checkpoint(&self) -> Result<Option<Checkpoint>, StoreError>;
    /// Forget the records at or below `op` (a durable checkpoint covers them, and the
    /// replica's ring no longer holds the ops: it reads applied ops' frames back from
    /// here while it does, see [`ReplicaStore::read_prepare`]). Best
    /// effort: a failure only leaves disk space in use; `records` still reports them,
    /// and the replica ignores records at or below its checkpoint.
    fn discard_through(&mut self, op: u64);
    /// A clean shutdown: make everything written durable, as if every write had been
    /// `persisted` (a partition WAL publishes its whole log). After it returns `Ok`, a
    /// restart recovers every op this store was given. Stores that are always durable
    /// have nothing to do.
    fn flush_for_shutdown(&mut self) -> Result<(), StoreError> {
        Ok(())
    }
    /// Damage the store found when it opened and left out of [`ReplicaStore::records`]
    /// (records that failed their checksum, a cut tail): each may have been an op the
    /// replica acknowledged, so the replica's log is incomplete (as with
    /// [`ReplicaStore::may_lack_acknowledged_ops`]) and counts it.
    fn damaged_at_open(&self) -> u64 {
        0
    }
    /// Why this store can no longer be trusted to make anything durable, if it cannot:
    /// a write or sync of its log or superblock failed, so the page cache may have
    /// dropped bytes that a later sync would then report as durable (Linux reports a
    /// writeback error once per open file). Once it says so it says so for good; only
    /// reopening the storage through boot (a fresh process reading what the disk holds)
    /// makes it usable again. The replica stops at once (see `Replica::storage_failure`).
    /// A store whose failures are transient never does (a `MemoryStore` only after
    /// [`MemoryStore::set_failure`]).
    fn failure(&self) -> Option<&'static str> {
        None
    }
}

/// Test-only breakages of how a replica answers a failing or damaged disk, so the
/// simulator can show its campaigns catch each one (`workload-fuzz --break-storage`).
/// Production always runs [`StorageBreak::None`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StorageBreak {
    /// Handle storage faults as designed.
    #[default]
    None,
    /// A replica whose store failed for good goes on as if nothing happened: a primary
    /// keeps heartbeating over a disk that refuses its prepares (the outage this
    /// handling fixes).
    KeepGoingAfterFailedWrite,
    /// Damage in the middle of a WAL is cut as if it were a torn tail: the records from
    /// the damage on are dropped and the log counts as complete, so the replica may
    /// vote as if it never had ops it acknowledged.
    CutDamageAsTornTail,
    /// A read error at boot reads as the end of the file (no retry, no damage): the
    /// replica boots with a shorter log and offers it as complete.
    ReadErrorAsEndOfFile,
    /// A `persisted` partition acknowledges a prepare its WAL has only queued (as a
    /// `replicated` one does): a whole-cluster power outage then takes acknowledged
    /// writes the topic promised to keep.
    AckPersistedBeforePublish,
    /// WALs are read (at boot and after) without verifying any checksum, neither the
    /// record's nor the prepare frame's header and body: a bit that rotted in a
    /// prepare is journaled and applied as if it were the op.
    SkipWalChecksums,
    /// A state transfer's chunks are taken without verifying their bodies, and the
    /// assembled checkpoint is installed without verifying its checksum: a chunk the
    /// network corrupted becomes the replica's state. (Not a disk fault, but the same
    /// kind of broken answer to damaged bytes, caught the same way.)
    InstallUnverifiedTransfer,
    /// A new primary decides a view change only once every replica sent its
    /// DoViewChange, not a view-change quorum (a liveness bug, not a disk fault: a view
    /// change waits for a replica that is gone). While crashed replicas restart and
    /// partitions heal, every view change still completes, and the drain, with every
    /// replica back, passes; the liveness phase, whose core must elect a primary
    /// without the replicas outside it, does not.
    ViewChangeWaitsForEveryReplica,
    /// Installing a checkpoint (at boot or from a state transfer) restores the state
    /// machine but not the client table: the replica keeps the table it had (empty at
    /// boot), so it no longer knows which requests it already executed. Nothing shows
    /// until a client resends to it as primary; comparing client tables does.
    InstallCheckpointWithoutClientTable,
    /// A primary answers a query (a poll) from its applied state at once, without a
    /// quorum confirming that it still leads its view (not a disk fault: a protocol
    /// break threaded through the same test-only switch). A primary cut off by a
    /// partition, deposed without knowing it, answers polls from stale state; only a
    /// check of what clients saw against real-time order (the contended plane's
    /// linearizability check) can tell.
    AnswerQueriesUnconfirmed,
    /// A slow recovery, not a wrong one: a lagging replica repairs one op per round
    /// trip instead of growing its window to `REPAIR_PREPARES_MAX`. Everything still
    /// settles; only the harness's timeliness check (catch-up bound) can tell.
    RepairOneOpARound,
    /// A slow failover, not a wrong one: a backup votes to leave its view only after its
    /// liveness window ran out ten times, and a closed connection from its primary
    /// hastens nothing. Views still change; only the timeliness check (election bound)
    /// can tell.
    LeaveViewAfterTenWindows,
    /// A slow state transfer, not a wrong one: a replica serving its checkpoint ships
    /// it in chunks of [`TRANSFER_CHUNK_BYTES_SLOWED`] bytes instead of
    /// `TRANSFER_CHUNK_BYTES`, so the receiver pays a round trip per 4 bytes. The
    /// state still arrives whole and verified; only the timeliness check (the transfer
    /// term of the catch-up bound) can tell.
    TransferTinyChunks,
}

/// The chunk a replica under `StorageBreak::TransferTinyChunks` serves, in bytes.
pub const TRANSFER_CHUNK_BYTES_SLOWED: usize = 4;

impl StorageBreak {
    /// Whether WAL reads verify checksums.
    pub fn wal_checksums(self) -> crate::wire::Checksums {
        if self == StorageBreak::SkipWalChecksums {
            crate::wire::Checksums::Skip
        } else {
            crate::wire::Checksums::Verify
        }
    }

    /// The name `--break-storage` takes.
    pub fn name(self) -> &'static str {
        match self {
            StorageBreak::None => "none",
            StorageBreak::KeepGoingAfterFailedWrite => "keep-going-after-failed-write",
            StorageBreak::CutDamageAsTornTail => "cut-damage-as-torn-tail",
            StorageBreak::ReadErrorAsEndOfFile => "read-error-as-end-of-file",
            StorageBreak::AckPersistedBeforePublish => "ack-persisted-before-publish",
            StorageBreak::SkipWalChecksums => "skip-wal-checksums",
            StorageBreak::InstallUnverifiedTransfer => "install-unverified-transfer",
            StorageBreak::ViewChangeWaitsForEveryReplica => "view-change-waits-for-every-replica",
            StorageBreak::InstallCheckpointWithoutClientTable => "install-checkpoint-without-client-table",
            StorageBreak::AnswerQueriesUnconfirmed => "answer-queries-unconfirmed",
            StorageBreak::RepairOneOpARound => "repair-one-op-a-round",
            StorageBreak::LeaveViewAfterTenWindows => "leave-view-after-ten-windows",
            StorageBreak::TransferTinyChunks => "transfer-tiny-chunks",
        }
    }

    /// Every breakage, for parsing and error messages.
    pub const ALL: [StorageBreak; 13] = [
        StorageBreak::None,
        StorageBreak::KeepGoingAfterFailedWrite,
        StorageBreak::CutDamageAsTornTail,
        StorageBreak::ReadErrorAsEndOfFile,
        StorageBreak::AckPersistedBeforePublish,
        StorageBreak::SkipWalChecksums,
        StorageBreak::InstallUnverifiedTransfer,
        StorageBreak::ViewChangeWaitsForEveryReplica,
        StorageBreak::InstallCheckpointWithoutClientTable,
        StorageBreak::AnswerQueriesUnconfirmed,
        StorageBreak::RepairOneOpARound,
        StorageBreak::LeaveViewAfterTenWindows,
        StorageBreak::TransferTinyChunks,
    ];
}

/// A durable checkpoint as a store returns it: its op and its encoded bytes.
pub type Checkpoint = (u64, Rc<[u8]>);

/// What the store holds for one op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoredRecord {
    /// A whole prepare frame.
    Prepare(Rc<[u8]>),
    /// A header whose body the replica did not hold.
    Header(Vec<u8>),
}

#[derive(Debug, Default)]
struct MemoryStoreState {
    superblock: Option<Superblock>,
    checkpoint: Option<Checkpoint>,
    /// Records by op, in the journal's table (they are as contiguous as its entries).
    prepares: OpTable<StoredRecord>,
    fail_superblock_writes: bool,
    fail_checkpoint_writes: bool,
    /// Test knob: behave as a disk store, which holds copies, not the journal's frames.
    frames_not_shared: bool,
    checkpoint_write_attempts: u64,
    may_lack_acknowledged_ops: bool,
    superblock_writes: u64,
    superblock_write_failures: u64,
    /// Set by [`MemoryStore::set_failure`]: every later write fails and
    /// [`ReplicaStore::failure`] names it.
    failure: Option<&'static str>,
}

/// An in-memory store. Clones share state, which is how the simulator keeps it across
/// a crash.
#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    state: Rc<RefCell<MemoryStoreState>>,
}

impl MemoryStore {
    /// An empty store (a fresh replica).
    pub fn new() -> Self {
        Self::default()
    }

    /// Make every superblock write fail (or succeed again), for fault tests.
    pub fn set_fail_superblock_writes(&self, fail: bool) {
        self.state.borrow_mut().fail_superblock_writes = fail;
    }

    /// Make every checkpoint write fail (or succeed again), for fault tests.
    pub fn set_fail_checkpoint_writes(&self, fail: bool) {
        self.state.borrow_mut().fail_checkpoint_writes = fail;
    }

    /// Test only: say the frames are not shared with the journal, as a disk store
    /// would, so the journal leaves applied frames to the store.
    pub fn set_frames_not_shared(&self, not_shared: bool) {
        self.state.borrow_mut().frames_not_shared = not_shared;
    }

    /// From now on every write fails and the store reports `what` as its
    /// [`ReplicaStore::failure`], as a disk store does after a failed sync (`None`: the
    /// disk was replaced, and writes succeed again).
    pub fn set_failure(&self, failure: Option<&'static str>) {
        self.state.borrow_mut().failure = failure;
    }

    /// Checkpoint writes attempted so far (failed ones included).
    pub fn checkpoint_write_attempts(&self) -> u64 {
        self.state.borrow().checkpoint_write_attempts
    }

    /// Make the store report that its log may lack acknowledged ops (as a partition
    /// WAL does after discarding its unpublished tail), for amnesia tests.
    pub fn set_may_lack_acknowledged_ops(&self, lacks: bool) {
        self.state.borrow_mut().may_lack_acknowledged_ops = lacks;
    }

    /// (successful, failed) superblock writes so far.
    pub fn superblock_write_counts(&self) -> (u64, u64) {
        let state = self.state.borrow();
        (state.superblock_writes, state.superblock_write_failures)
    }

    /// Bytes held, for memory accounting.
    pub fn bytes(&self) -> usize {
        self.state
            .borrow()
            .prepares
            .iter()
            .map(|(_, record)| match record {
                StoredRecord::Prepare(frame) => frame.len(),
                StoredRecord::Header(bytes) => bytes.len(),
            })
            .sum()
    }
}

impl ReplicaStore for MemoryStore {
    fn write_superblock(&mut self, superblock: Superblock) -> Result<(), StoreError> {
        let mut state = self.state.borrow_mut();
        if state.fail_superblock_writes || state.failure.is_some() {
            state.superblock_write_failures += 1;
            return Err(StoreError { what: "superblock" });
        }
        state.superblock_writes += 1;
        state.superblock = Some(superblock);
        Ok(())
    }

    fn write_prepare(&mut self, op: u64, frame: &Rc<[u8]>) -> Result<(), StoreError> {
        let mut state = self.state.borrow_mut();
        if let Some(what) = state.failure {
            return Err(StoreError { what });
        }
        // The journal holds the same immutable bytes: keep a reference, not a copy.
        state.prepares.insert(op, StoredRecord::Prepare(Rc::clone(frame)));
        Ok(())
    }

    fn write_header(&mut self, op: u64, header: &[u8; crate::wire::HEADER_BYTES]) -> Result<(), StoreError> {
        let mut state = self.state.borrow_mut();
        if let Some(what) = state.failure {
            return Err(StoreError { what });
        }
        state.prepares.insert(op, StoredRecord::Header(header.to_vec()));
        Ok(())
    }

    fn truncate_after(&mut self, op: u64) {
        self.state.borrow_mut().prepares.remove_above(op);
    }

    fn remove_prepare(&mut self, op: u64) {
        self.state.borrow_mut().prepares.remove(op);
    }

    fn superblock(&self) -> Option<Superblock> {
        self.state.borrow().superblock
    }

    fn records(&self) -> Vec<(u64, StoredRecord)> {
        self.state
            .borrow()
            .prepares
            .iter()
            .map(|(op, record)| (op, record.clone()))
            .collect()
    }

    fn shares_frames_in_memory(&self) -> bool {
        !self.state.borrow().frames_not_shared
    }

    fn read_prepare(&self, op: u64) -> Option<Rc<[u8]>> {
        let state = self.state.borrow();
        if state.failure.is_some() {
            return None;
        }
        match state.prepares.get(op) {
            Some(StoredRecord::Prepare(frame)) => Some(Rc::clone(frame)),
            _ => None,
        }
    }

    fn persisted(&self) -> bool {
        // In memory nothing is ever durable or not: no prepare is marked.
        false
    }

    fn may_lack_acknowledged_ops(&self) -> bool {
        self.state.borrow().may_lack_acknowledged_ops
    }

    fn write_checkpoint(&mut self, op: u64, bytes: &Rc<[u8]>) -> Result<(), StoreError> {
        let mut state = self.state.borrow_mut();
        state.checkpoint_write_attempts += 1;
        if state.fail_checkpoint_writes {
            return Err(StoreError { what: "checkpoint" });
        }
        state.checkpoint = Some((op, Rc::clone(bytes)));
        Ok(())
    }

    fn checkpoint(&self) -> Result<Option<Checkpoint>, StoreError> {
        Ok(self.state.borrow().checkpoint.clone())
    }

    fn discard_through(&mut self, op: u64) {
        self.state.borrow_mut().prepares.remove_below(op + 1);
    }

    fn failure(&self) -> Option<&'static str> {
        self.state.borrow().failure
    }
}
