//! [`DurableStores`]: every group's replica store on the production on-disk formats.
//!
//! Layout under the node's storage root:
//!
//! ```text
//! node/superblock           the node's identity (cluster, replica, replica count):
//!                           a node started on another cluster's data refuses to boot
//! node/tombstones           deleted partition groups, one record appended per delete
//!                           (`storage::tombstone_log`; `node/deleted`, the older
//!                           snapshot of them all, is still read)
//! groups/<group:016x>/superblock   the group's view state
//! groups/<group:016x>/checkpoint   the group's newest durable checkpoint (one snapshot
//!                           file, key = its op; `.tmp` while a write is in flight)
//! metadata/wal              the metadata group's WAL (synced on every prepare)
//! groups/<group:016x>/wal, frontier   a partition group's WAL and publish frontier
//! ```
//!
//! Checkpoints: [`ReplicaStore::write_checkpoint`] replaces the checkpoint file
//! atomically and durably (`storage::snapshot_file`) and caches the bytes;
//! [`ReplicaStore::checkpoint`] answers from the cache, read once at open. A checkpoint
//! file that does not read back whole refuses the group's open: booting without it
//! would replay from op 1 a log whose start was discarded.
//! [`ReplicaStore::discard_through`] then drops the WAL's records at or below the
//! checkpoint's op with the WAL's crash-safe prefix drop (never past the durable
//! checkpoint, and only when it frees at least what it copies).
//!
//! The [`ReplicaStore`] trait is synchronous: the replica core is a state machine that
//! takes frames and ticks and never awaits. The formats are async over the storage
//! seam. [`DurableReplicaStore`] bridges the two by polling each storage future once,
//! which is exact for storage whose calls complete on their first poll, as both
//! `SimStorage` and the production `DiskStorage` (blocking calls on the shard's own
//! thread) do. A future that stays pending is reported as a failed write, never waited
//! on.
//!
//! Durability per group:
//! - metadata: every prepare is synced before `write_prepare` returns, so a backup's
//!   PrepareOk always means "on my disk".
//! - a partition of a `replicated` topic: a prepare is queued in the WAL and published
//!   (synced, frontier recorded) only on a new log_view, on the WAL's byte interval,
//!   and at a clean shutdown. A restart discards what was not published, so a restarted
//!   partition replica may lack ops it acknowledged: it reports itself
//!   [`ReplicaStore::may_lack_acknowledged_ops`] and rejoins only through a primary's
//!   StartView, never by starting a view change with the log it kept.
//! - a partition of a `persisted` topic: every prepare is published before
//!   `write_prepare` returns, so its PrepareOk means "published on my disk".
//!
//! Whatever the group, a restart also reports itself as possibly lacking acknowledged
//! ops when its WAL holds a vacant slot (a gap placeholder or a removed op) above the
//! persisted commit point and the checkpoint: repair writes an op's record over its
//! vacant slot in place, and a disk that drops that write whole while reporting success
//! leaves the slot valid and vacant, so the hole proves nothing about what was
//! acknowledged there.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

use futures::FutureExt;

use super::stores::StoreProvider;
use crate::metadata::Durability as TopicDurability;
use crate::node::METADATA_GROUP;
use crate::seam::{DurableStorage, OpenMode};
use crate::storage::partition_wal::{Durability, PartitionWal};
use crate::storage::read_retry::{ReadErrors, RetryReads};
use crate::storage::snapshot_file::{SnapshotFileError, read_snapshot, remove_leftover_tmp, write_snapshot};
use crate::storage::superblock::{Identity, SUPERBLOCK_FILE, SuperblockError, SuperblockFile, SuperblockState};
use crate::storage::tombstone_log::{TombstoneError, TombstoneLog};
use crate::storage::tombstone_set::Settled;
use crate::storage::wal::{Wal, WalError, join_path};
use crate::vsr::store::{Checkpoint, ReplicaStore, StorageBreak, StoreError, StoredRecord, Superblock};
use crate::wire::HEADER_BYTES;

/// Directory of the node's own files.
const NODE_DIR: &str = "node";

/// File name of a group's checkpoint inside its directory.
pub const CHECKPOINT_FILE: &str = "checkpoint";

/// The group number the node's own superblock carries: no VSR group uses it.
const NODE_IDENTITY_GROUP: u64 = u64::MAX;

/// A partition WAL publication records the segment end its caller has synced; the
/// partition state does not write segments yet, so it records none.
const SEGMENT_END_OFFSET_NONE: u64 = 0;

/// A deliberately broken behaviour the production `node` can be started with
/// (`--test-break NAME`, a hidden flag, or `"test_break": "NAME"` in its JSON config).
///
/// **Test-only: production must never use one.** A break exists so that a fault
/// harness run against real nodes (the nemesis) can show it catches the bug the break
/// plants: a harness that also passes against a broken node proves nothing. Without a
/// break (`None` everywhere it is taken) the node behaves exactly as it always did. The
/// simulator's own broken answers are [`StorageBreak`]; this one is for the real binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum TestBreak {
    /// At every start, each WAL the node opens (the metadata WAL and every partition
    /// WAL) silently loses its last intact record, as if it were a torn tail: the file
    /// is cut at that record's start and the cut synced (a partition WAL's frontier
    /// moves back with it first). Unlike a real torn tail, which marks the log as
    /// possibly lacking acknowledged ops, nothing is reported: the node forgets an op
    /// it acknowledged (synced, or published) and offers its log as complete.
    WalDropLastRecord,
}

impl TestBreak {
    /// The name the flag and the config take.
    pub fn name(self) -> &'static str {
        match self {
            Self::WalDropLastRecord => "wal-drop-last-record",
        }
    }

    /// What it does to the node, for the start-up warning.
    pub fn effect(self) -> &'static str {
        match self {
            Self::WalDropLastRecord => "this node forgets its last log record at every start",
        }
    }
}

/// Who a node is: what its data directory must belong to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeIdentity {
    /// The cluster id (`storage::superblock::cluster_id` of the cluster's name).
    pub cluster: u128,
    /// This replica's index.
    pub replica: u8,
    /// Replicas in the cluster.
    pub replica_count: u8,
}

impl NodeIdentity {
    fn of_group(self, group: u64) -> Identity {
        Identity {
            cluster: self.cluster,
            group,
            replica: self.replica,
            replica_count: self.replica_count,
        }
    }
}

/// Why a node's storage could not be opened.
#[derive(Debug)]
pub enum StoresOpenError {
    /// The node superblock refused (another cluster's data, another replica's, damage).
    Superblock(SuperblockError),
    /// The tombstones could not be read.
    Tombstones(TombstoneError),
    /// A storage call did not complete on its first poll (the synchronous stores need
    /// storage that completes at once, as `SimStorage` and `DiskStorage` do).
    Pending(&'static str),
    /// The node superblock is missing while the directory holds groups' data: it was a
    /// node's directory and lost the file that says whose. Formatting a new identity
    /// over it would run this replica on data nobody can vouch for.
    IdentityLost {
        /// The missing file.
        path: String,
        /// The group file found, which only a node that ran can have written.
        found: String,
    },
}

impl fmt::Display for StoresOpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Superblock(error) => write!(f, "node superblock: {error}"),
            Self::Tombstones(error) => write!(f, "deleted groups: {error}"),
            Self::Pending(what) => write!(f, "{what}: the storage call did not complete on its first poll"),
            Self::IdentityLost { path, found } => write!(
                f,
                "{path} is missing, but {found} is there: this directory belonged to a node and lost the file \
                 that says which; refusing to start on it (restore {path}, or move the directory aside and start \
                 this replica on an empty one: its peers will fill it)"
            ),
        }
    }
}

impl std::error::Error for StoresOpenError {}

/// Drive a storage future that completes on its first poll.
fn now<F: std::future::Future>(future: F) -> Option<F::Output> {
    future.now_or_never()
}

/// Every group's store on one node's storage. Clones share the tombstones and the
/// durability settings; the files are the storage's.
#[derive(Clone)]
pub struct DurableStores<S: DurableStorage> {
    storage: S,
    identity: NodeIdentity,
    storage_break: StorageBreak,
    test_break: Option<TestBreak>,
    tombstones: Rc<RefCell<TombstoneLog<S>>>,
    durability: Rc<RefCell<BTreeMap<u64, Rc<Cell<Durability>>>>>,
}

impl<S: DurableStorage> fmt::Debug for DurableStores<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurableStores")
            .field("identity", &self.identity)
            .field("tombstones", &*self.tombstones.borrow())
            .finish()
    }
}

impl<S: DurableStorage> DurableStores<S> {
    /// Boot a node's storage: check (or, on an empty data directory, stamp) the node's
    /// identity, and read the tombstones. A directory whose node superblock is missing
    /// while the metadata group's files are there is refused
    /// ([`StoresOpenError::IdentityLost`]).
    pub fn open(storage: S, identity: NodeIdentity) -> Result<Self, StoresOpenError> {
        Self::open_with(storage, identity, true)
    }

    /// [`DurableStores::open`] without the lost-identity check, for the simulator: the
    /// check costs a storage call at every first boot, every call on a simulated disk
    /// draws from its fault stream, and no simulated fault deletes a file, so it would
    /// move every run and catch nothing there.
    pub fn open_skipping_lost_identity_check(storage: S, identity: NodeIdentity) -> Result<Self, StoresOpenError> {
        Self::open_with(storage, identity, false)
    }

    fn open_with(storage: S, identity: NodeIdentity, check_identity_lost: bool) -> Result<Self, StoresOpenError> {
        let node = identity.of_group(NODE_IDENTITY_GROUP);
        // Reads retried through transient errors, as every group store's are.
        let reads = RetryReads::new(storage.clone(), ReadErrors::Retry);
        let opened = now(SuperblockFile::open(&reads, NODE_DIR, node)).ok_or_else(pending_superblock)?;
        match opened {
            Ok(_) => {}
            Err(SuperblockError::NotFormatted { path }) => {
                // A fresh directory has no groups yet (the metadata group's files are
                // made after this format), so the metadata group's superblock without
                // the node's means the node's was lost, not never made (found: a deleted
                // node/superblock was silently formatted anew at the next start). Asked
                // only where the caller says the directory may have been touched by
                // hand (`check_identity_lost`): every call on a simulated disk draws
                // from its fault stream, and no simulated fault deletes a file.
                if check_identity_lost {
                    let found = join_path(&Self::group_dir(METADATA_GROUP), SUPERBLOCK_FILE);
                    if let Some(Ok(_)) = now(storage.open(&found, OpenMode::Existing)) {
                        return Err(StoresOpenError::IdentityLost { path, found });
                    }
                }
                now(SuperblockFile::format(&storage, NODE_DIR, node))
                    .ok_or_else(pending_superblock)?
                    .map_err(StoresOpenError::Superblock)?;
            }
            Err(error) => return Err(StoresOpenError::Superblock(error)),
        }
        let tombstones = TombstoneLog::open(storage.clone(), &reads).map_err(StoresOpenError::Tombstones)?;
        Ok(Self {
            storage,
            identity,
            storage_break: StorageBreak::None,
            test_break: None,
            tombstones: Rc::new(RefCell::new(tombstones)),
            durability: Rc::default(),
        })
    }

    /// Test-only: open every group's store with a deliberately broken answer to damage
    /// (see [`StorageBreak`]).
    pub fn with_storage_break(mut self, storage_break: StorageBreak) -> Self {
        self.storage_break = storage_break;
        self
    }

    /// Test-only, never in production: open every group's store with the `node`
    /// binary's deliberately broken behaviour, if any (see [`TestBreak`]). `None`
    /// changes nothing.
    pub fn with_test_break(mut self, test_break: Option<TestBreak>) -> Self {
        self.test_break = test_break;
        self
    }

    /// Compact the tombstone log from `records` records (and four per range) instead of
    /// `TOMBSTONE_LOG_COMPACT_RECORDS_MIN`: the simulator's runs are short, and this
    /// makes them cross compactions (and crash in them).
    pub fn with_tombstone_compact_records_min(self, records: u64) -> Self {
        self.tombstones.borrow_mut().set_compact_records_min(records);
        self
    }

    /// The storage the stores live on.
    pub fn storage(&self) -> &S {
        &self.storage
    }

    fn group_dir(group: u64) -> String {
        format!("{GROUPS_DIR}/{group:016x}")
    }

    fn durability_cell(&self, group: u64) -> Rc<Cell<Durability>> {
        self.durability
            .borrow_mut()
            .entry(group)
            .or_insert_with(|| Rc::new(Cell::new(Durability::Replicated)))
            .clone()
    }
}

fn pending_superblock() -> StoresOpenError {
    StoresOpenError::Pending("node superblock")
}

impl<S: DurableStorage> StoreProvider for DurableStores<S> {
    type Store = DurableReplicaStore<S>;

    fn open(&self, group: u64) -> Result<DurableReplicaStore<S>, StoreError> {
        assert!(
            !self.is_deleted(group),
            "group {group:#x} was deleted; it is never opened again"
        );
        DurableReplicaStore::open(
            &self.storage,
            self.identity.of_group(group),
            &Self::group_dir(group),
            self.durability_cell(group),
            self.storage_break,
            self.test_break,
        )
    }

    fn remove(&self, group: u64, settled: &dyn Settled) {
        // The tombstone is made durable first: a crash after it and before the files
        // are gone leaves files nobody opens, never a deleted group reopened. Without a
        // durable tombstone the files stay: a group a later boot does open again then
        // still holds its data, rather than nothing.
        let appended = now(self.tombstones.borrow_mut().append(group, settled));
        self.durability.borrow_mut().remove(&group);
        match appended {
            Some(Ok(())) => {}
            Some(Err(error)) => {
                tracing::error!(group, %error, "tombstone write failed; the group's files are kept");
                return;
            }
            None => {
                tracing::error!(
                    group,
                    "tombstone write did not complete on its first poll; the group's files are kept"
                );
                return;
            }
        }
        let dir = Self::group_dir(group);
        // Best effort: the tombstone already makes the group dead; files a crash leaves
        // behind are never opened again. The emptied directory goes too, so a node that
        // deletes groups for months does not keep an empty directory for each.
        if let Some(Ok(names)) = now(self.storage.list(&dir)) {
            for name in names {
                let _ = now(self.storage.remove(&format!("{dir}/{name}")));
            }
            let _ = now(self.storage.sync_dir(&dir));
            if let Some(Ok(())) = now(self.storage.remove_dir(&dir)) {
                let _ = now(self.storage.sync_dir(GROUPS_DIR));
            }
        }
    }

    fn is_deleted(&self, group: u64) -> bool {
        self.tombstones.borrow().contains(group)
    }

    fn set_durability(&self, group: u64, durability: TopicDurability) {
        let durability = match durability {
            TopicDurability::Replicated => Durability::Replicated,
            TopicDurability::Persisted => Durability::Persisted,
        };
        self.durability_cell(group).set(durability);
    }
}

/// A group's log: the metadata WAL or a partition WAL.
enum Log<S: DurableStorage> {
    Metadata(Wal<S>),
    Partition(PartitionWal<S>),
}

impl<S: DurableStorage> Log<S> {
    /// Ops whose slot holds no record (a removed op or a gap placeholder), ascending.
    fn vacant_ops(&self) -> Vec<u64> {
        match self {
            Log::Metadata(wal) => wal.vacant_ops().collect(),
            Log::Partition(wal) => wal.vacant_ops().collect(),
        }
    }

    /// A durable checkpoint covers `op` and below: the WAL reserves no room for them.
    fn raise_gap_floor(&mut self, op: u64) {
        match self {
            Log::Metadata(wal) => wal.raise_gap_floor(op),
            Log::Partition(wal) => wal.raise_gap_floor(op),
        }
    }
}

/// The directory every group's directory is in.
const GROUPS_DIR: &str = "groups";

/// One group's superblock, checkpoint and WAL.
pub struct DurableReplicaStore<S: DurableStorage> {
    storage: RetryReads<S>,
    identity: Identity,
    dir: String,
    superblock: Option<SuperblockFile<RetryReads<S>>>,
    /// `<dir>/checkpoint`.
    checkpoint_path: String,
    /// The checkpoint read at open, held until the replica takes it at boot: after
    /// that its state lives in the state machine, so the bytes stay only on disk
    /// (a group's checkpoint holds its whole state; keeping a copy in memory doubled
    /// what a partition costs).
    checkpoint_at_open: RefCell<Option<Checkpoint>>,
    /// The op of the trusted checkpoint on disk (read at open, or written since):
    /// [`ReplicaStore::checkpoint`] reads it back.
    checkpoint_op: Option<u64>,
    log: Log<RetryReads<S>>,
    durability: Rc<Cell<Durability>>,
    /// Test-only: see [`StorageBreak::AckPersistedBeforePublish`].
    ack_persisted_before_publish: bool,
    may_lack_acknowledged_ops: bool,
    /// The first write or sync of the log or superblock that failed: from then on the
    /// store is not trusted until reopened (see [`ReplicaStore::failure`]).
    failure: Option<&'static str>,
    /// A record the boot scan found could not be read back when the replica loaded it
    /// (a read that failed for good): the log may lack an acknowledged op.
    unreadable_at_open: Cell<bool>,
    /// Damaged ranges (and a cut tail) the WAL found at open.
    damaged_at_open: u64,
}

impl<S: DurableStorage> fmt::Debug for DurableReplicaStore<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DurableReplicaStore")
            .field("dir", &self.dir)
            .field("durability", &self.durability.get())
            .finish()
    }
}

fn failed(what: &'static str) -> StoreError {
    StoreError { what }
}

/// A group's superblock: `None` for a group that never wrote its first state (format
/// only, or not formatted), which boots as fresh.
fn open_superblock<S: DurableStorage>(
    storage: &RetryReads<S>,
    dir: &str,
    identity: Identity,
) -> Result<Option<SuperblockFile<RetryReads<S>>>, StoreError> {
    let superblock = match now(SuperblockFile::open(storage, dir, identity)) {
        None => return Err(failed("superblock open did not complete on its first poll")),
        // Sequence 1 is the format alone: the replica never wrote its first state,
        // so it never did anything and boots as fresh.
        Some(Ok((superblock, _))) => (superblock.sequence() > 1).then_some(superblock),
        Some(Err(SuperblockError::NotFormatted { .. })) => None,
        Some(Err(error)) => {
            tracing::error!(dir, %error, "group superblock refused");
            return Err(failed(
                "group superblock refused (damaged, or another cluster's or replica's)",
            ));
        }
    };
    Ok(superblock)
}

/// The metadata WAL, opened: the log, whether it may lack ops this replica
/// acknowledged, and how many damaged places it has.
fn open_metadata_log<S: DurableStorage>(
    storage: &RetryReads<S>,
    dir: &str,
    identity: Identity,
    storage_break: StorageBreak,
    test_break: Option<TestBreak>,
) -> Result<(Log<RetryReads<S>>, bool, u64), StoreError> {
    // Every metadata prepare was synced before it was acknowledged; only a
    // lying disk loses one, and that shows as damage the chain repair refetches.
    let (mut wal, mut recovery) = now(Wal::open_with(storage, storage_break.wal_checksums()))
        .ok_or_else(|| failed("metadata WAL open did not complete on its first poll"))?
        .map_err(|error| log_wal_error(dir, &error, "metadata WAL open failed"))?;
    if test_break == Some(TestBreak::WalDropLastRecord) {
        let dropped = now(wal.drop_last_record(&mut recovery))
            .ok_or_else(|| failed("test break cut did not complete on its first poll"))?
            .map_err(|error| log_wal_error(dir, &error, "test break cut of the metadata WAL failed"))?;
        log_test_break_cut(identity.group, dir, dropped);
    }
    if storage_break == StorageBreak::CutDamageAsTornTail
        && let Some(first) = recovery.damaged.first()
    {
        // The broken answer: cut from the damage on, and claim a whole log.
        let _ = now(wal.truncate_after(first.after_op.unwrap_or(0)));
        Ok((Log::Metadata(wal), false, 0))
    } else {
        // Damage in the middle is held but unknown: the ops there may be ones this
        // replica acknowledged, so its log may not be offered as complete (a hole
        // would count as a nack and could outvote a committed op). A torn tail is
        // cut, but bit rot in the last record looks the same, and that record may
        // have been synced and acknowledged: the same caution.
        let damaged = recovery.damaged.len() as u64 + u64::from(recovery.torn_tail.is_some());
        if damaged > 0 {
            tracing::warn!(
                dir,
                damaged_ranges = recovery.damaged.len(),
                torn_tail = ?recovery.torn_tail,
                "metadata WAL damaged; its ops are repaired from peers and its log is not offered as complete"
            );
        }
        Ok((Log::Metadata(wal), damaged > 0, damaged))
    }
}

/// A partition WAL, opened: the log, whether it may lack ops this replica acknowledged
/// (a `replicated` partition restarted without proof it published everything, damage,
/// a damaged frontier slot), and how many damaged places it has.
fn open_partition_log<S: DurableStorage>(
    storage: &RetryReads<S>,
    dir: &str,
    identity: Identity,
    restart: bool,
    storage_break: StorageBreak,
    test_break: Option<TestBreak>,
) -> Result<(Log<RetryReads<S>>, bool, u64), StoreError> {
    let (mut wal, mut recovery) = now(PartitionWal::open_with(
        storage,
        dir,
        identity.group,
        storage_break.wal_checksums(),
    ))
    .ok_or_else(|| failed("partition WAL open did not complete on its first poll"))?
    .map_err(|error| log_wal_error(dir, &error, "partition WAL open failed"))?;
    if test_break == Some(TestBreak::WalDropLastRecord) {
        let dropped = now(wal.drop_last_record(&mut recovery))
            .ok_or_else(|| failed("test break cut did not complete on its first poll"))?
            .map_err(|error| log_wal_error(dir, &error, "test break cut of a partition WAL failed"))?;
        log_test_break_cut(identity.group, dir, dropped);
    }
    if recovery.discarded_bytes > 0 {
        crate::cover!(PartitionWalTailDiscarded);
        tracing::info!(
            dir,
            discarded_bytes = recovery.discarded_bytes,
            "unpublished partition WAL tail discarded"
        );
    }
    // A `replicated` partition acknowledged prepares it had not published, and
    // without a clean-shutdown mark a restart cannot tell whether it did: assume
    // so. The frontier records the mode every append after it was made in (a
    // change of mode is published first), so one that says `persisted` proves
    // nothing acknowledged was lost, whatever the topic's durability is now.
    let persisted = recovery
        .frontier
        .is_some_and(|frontier| frontier.durability == Durability::Persisted);
    // Damage below the frontier is in published, possibly acknowledged ops.
    if !recovery.damaged.is_empty() {
        crate::cover!(WalDamagedMiddle);
        tracing::warn!(
            dir,
            damaged_ranges = recovery.damaged.len(),
            "partition WAL damaged below its frontier; its ops are repaired from peers and its log is not \
             offered as complete"
        );
    }
    let mut damaged = recovery.damaged.len() as u64;
    if storage_break == StorageBreak::CutDamageAsTornTail
        && let Some(first) = recovery.damaged.first()
    {
        // The broken answer: cut from the damage on, and claim a whole log.
        let _ = now(wal.truncate_after(first.after_op.unwrap_or(0)));
        damaged = 0;
    }
    // A damaged frontier slot may have held the newest publication: boot then
    // went by the older slot and discarded what was published since, which may
    // be ops this replica acknowledged (a `persisted` prepare is published
    // before its PrepareOk). Which slot rotted cannot be told, so either counts.
    let frontier_damaged = !recovery.frontier_damage.is_empty();
    if frontier_damaged {
        crate::cover!(FrontierSlotDamaged);
    }
    Ok((
        Log::Partition(wal),
        (restart && !persisted) || damaged > 0 || frontier_damaged,
        damaged + u64::from(frontier_damaged),
    ))
}

impl<S: DurableStorage> DurableReplicaStore<S> {
    /// Open a group's stores from what its directory holds: the superblock, the
    /// checkpoint, the WAL (metadata or partition), and what they say about ops this
    /// replica may have acknowledged and lost.
    fn open(
        storage: &S,
        identity: Identity,
        dir: &str,
        durability: Rc<Cell<Durability>>,
        storage_break: StorageBreak,
        test_break: Option<TestBreak>,
    ) -> Result<Self, StoreError> {
        let read_errors = if storage_break == StorageBreak::ReadErrorAsEndOfFile {
            ReadErrors::EndOfFile
        } else {
            ReadErrors::Retry
        };
        let storage = &RetryReads::new(storage.clone(), read_errors);
        let superblock = open_superblock(storage, dir, identity)?;
        let restart = superblock.is_some();
        let checkpoint_path = join_path(dir, CHECKPOINT_FILE);
        // A checkpoint that does not read back whole (damage, or a read error) is not
        // trusted, and not taken for "none" either: the group boots without it, with
        // its log marked incomplete (the ops below the WAL's first record are gone), so
        // it takes no part in a view change as if whole, applies nothing until it holds
        // every op from 1 or installs a peer's checkpoint by state transfer, and writes
        // a new checkpoint over the damaged one.
        let (checkpoint, checkpoint_damaged) = match read_checkpoint(storage, &checkpoint_path) {
            Ok(checkpoint) => (checkpoint, false),
            Err(_) => {
                crate::cover!(CheckpointDamagedAtOpen);
                (None, true)
            }
        };
        let (log, may_lack_acknowledged_ops, damaged_at_open) = if identity.group == METADATA_GROUP {
            open_metadata_log(storage, dir, identity, storage_break, test_break)?
        } else {
            open_partition_log(storage, dir, identity, restart, storage_break, test_break)?
        };
        let damaged_at_open = damaged_at_open + u64::from(checkpoint_damaged);
        let mut log = log;
        if let Some((checkpoint_op, _)) = &checkpoint {
            log.raise_gap_floor(*checkpoint_op);
        }
        // A vacant slot (a gap placeholder, or a removed op) is where repair writes the
        // op's record when it comes, in place. A lying disk can drop that write whole
        // and report success: the slot then reads back vacant and valid, and boot would
        // take an op this replica acknowledged for one it never held (a hole, which
        // counts as a nack in a view change). So a vacant slot is evidence of nothing
        // above the ops known settled: the persisted commit point (a hole at or below
        // it is a committed op still to repair, never a nack) and the checkpoint's op.
        let settled = superblock
            .as_ref()
            .map_or(0, |file| file.state().commit_max)
            .max(checkpoint.as_ref().map_or(0, |(op, _)| *op));
        let vacant_uncertain: Vec<u64> = log.vacant_ops().into_iter().filter(|&op| op > settled).collect();
        if let (Some(first), Some(last)) = (vacant_uncertain.first(), vacant_uncertain.last()) {
            crate::cover!(WalVacantSlotUncertain);
            tracing::info!(
                dir,
                settled,
                vacant_slots = vacant_uncertain.len(),
                first,
                last,
                "vacant WAL slots above the commit point: their fills may have been lost, so the log is not \
                 offered as complete"
            );
        }
        let may_lack_acknowledged_ops = may_lack_acknowledged_ops || checkpoint_damaged || !vacant_uncertain.is_empty();
        Ok(Self {
            storage: storage.clone(),
            identity,
            dir: dir.to_owned(),
            superblock,
            checkpoint_path,
            checkpoint_op: checkpoint.as_ref().map(|(op, _)| *op),
            checkpoint_at_open: RefCell::new(checkpoint),
            log,
            durability,
            ack_persisted_before_publish: storage_break == StorageBreak::AckPersistedBeforePublish,
            may_lack_acknowledged_ops,
            failure: None,
            unreadable_at_open: Cell::new(false),
            damaged_at_open,
        })
    }

    /// Remember the first failure of the log or superblock and pass the error on.
    fn fail(&mut self, error: StoreError) -> StoreError {
        self.failure.get_or_insert(error.what);
        error
    }

    fn put(&mut self, op: u64, record: &StoredRecord) -> Result<(), StoreError> {
        // The primary's demand counts as much as this node's own view of the topic: a
        // node that has not yet applied a change to `persisted` would otherwise
        // acknowledge unpublished an op the primary promises its client is durable.
        let demanded = matches!(record, StoredRecord::Prepare(frame) if crate::wire::prepare_demands_persisted(frame));
        let durability = if demanded {
            Durability::Persisted
        } else {
            self.durability.get()
        };
        let durability = match durability {
            // The broken answer: a persisted prepare is acknowledged unpublished.
            Durability::Persisted if self.ack_persisted_before_publish => Durability::Replicated,
            durability => durability,
        };
        let result = match &mut self.log {
            Log::Metadata(wal) => {
                if op > wal.last_op() {
                    now(async {
                        wal.append(op, record).await?;
                        wal.sync().await
                    })
                } else {
                    now(wal.replace(op, record))
                }
            }
            Log::Partition(wal) => {
                if op > wal.last_op() {
                    now(async {
                        wal.append(&[(op, record)], durability, SEGMENT_END_OFFSET_NONE)
                            .await
                            .map(drop)
                    })
                } else {
                    now(async {
                        wal.replace(op, record).await?;
                        if durability == Durability::Persisted {
                            wal.publish(SEGMENT_END_OFFSET_NONE).await?;
                        }
                        Ok(())
                    })
                }
            }
        };
        match result {
            Some(Ok(())) => Ok(()),
            Some(Err(error)) => Err(self.fail(log_wal_error(&self.dir, &error, "prepare write failed"))),
            None => Err(self.fail(failed("prepare write did not complete on its first poll"))),
        }
    }
}

/// Read a group's checkpoint at open, after removing what an interrupted write left.
/// Missing is `None`; a file that does not read back whole is an error, never `None`.
fn read_checkpoint<S: DurableStorage>(storage: &S, path: &str) -> Result<Option<Checkpoint>, StoreError> {
    match now(remove_leftover_tmp(storage, path)) {
        Some(Ok(_)) => {}
        // The leftover is only unused space: the next checkpoint write removes it too.
        Some(Err(error)) => tracing::warn!(path, %error, "leftover checkpoint tmp file not removed"),
        None => return Err(failed("checkpoint tmp removal did not complete on its first poll")),
    }
    match now(read_snapshot(storage, path)) {
        Some(Ok(None)) => Ok(None),
        Some(Ok(Some(snapshot))) => Ok(Some((snapshot.key, Rc::from(snapshot.bytes)))),
        Some(Err(error)) => {
            tracing::error!(
                path,
                %error,
                "checkpoint unreadable or damaged: the group boots without it, its log incomplete, and fetches \
                 its state from a peer"
            );
            Err(failed("checkpoint file unreadable or damaged"))
        }
        None => Err(failed("checkpoint read did not complete on its first poll")),
    }
}

/// The one line per WAL that [`TestBreak::WalDropLastRecord`] cut (none if the WAL held
/// no record).
fn log_test_break_cut(group: u64, dir: &str, dropped: Option<u64>) {
    if let Some(op) = dropped {
        tracing::warn!(
            group,
            dir,
            op,
            "TEST BREAK wal-drop-last-record: cut this WAL's last record away and reported nothing"
        );
    }
}

fn log_wal_error(dir: &str, error: &WalError, what: &'static str) -> StoreError {
    tracing::warn!(dir, %error, "{what}");
    failed(what)
}

impl<S: DurableStorage> DurableReplicaStore<S> {
    /// One superblock write: the log_view's publication first (partitions), the format
    /// if none exists, then the state.
    fn write_superblock_once(&mut self, superblock: Superblock) -> Result<(), StoreError> {
        // The log a new log_view starts from is made durable before the superblock
        // names that view, so a restart never trusts a log_view whose log it lost.
        if let Log::Partition(wal) = &mut self.log {
            let log_view_now = self.superblock.as_ref().map_or(0, |file| file.state().log_view);
            if superblock.log_view > log_view_now || self.superblock.is_none() {
                match now(wal.on_log_view(superblock.log_view, SEGMENT_END_OFFSET_NONE)) {
                    Some(Ok(())) => {}
                    Some(Err(error)) => return Err(log_wal_error(&self.dir, &error, "log_view publication failed")),
                    None => return Err(failed("log_view publication did not complete on its first poll")),
                }
            }
        }
        if self.superblock.is_none() {
            let formatted = match now(SuperblockFile::format(&self.storage, &self.dir, self.identity)) {
                Some(Ok(file)) => file,
                // A format that crashed earlier left a superblock at sequence 1.
                Some(Err(SuperblockError::AlreadyFormatted { .. })) => {
                    match now(SuperblockFile::open(&self.storage, &self.dir, self.identity)) {
                        Some(Ok((file, _))) => file,
                        _ => return Err(failed("superblock reopen after an interrupted format failed")),
                    }
                }
                Some(Err(error)) => {
                    tracing::warn!(dir = self.dir, %error, "superblock format failed");
                    return Err(failed("superblock format failed"));
                }
                None => return Err(failed("superblock format did not complete on its first poll")),
            };
            self.superblock = Some(formatted);
        }
        let Some(file) = self.superblock.as_mut() else {
            return Err(failed("superblock missing after format"));
        };
        let state = SuperblockState::default().with_vsr(superblock);
        match now(file.write(state)) {
            Some(Ok(())) => Ok(()),
            Some(Err(error)) => {
                tracing::warn!(dir = self.dir, %error, "superblock write failed");
                Err(failed("superblock write failed"))
            }
            None => Err(failed("superblock write did not complete on its first poll")),
        }
    }
}

impl<S: DurableStorage> ReplicaStore for DurableReplicaStore<S> {
    fn write_superblock(&mut self, superblock: Superblock) -> Result<(), StoreError> {
        self.write_superblock_once(superblock).map_err(|error| self.fail(error))
    }

    fn failure(&self) -> Option<&'static str> {
        self.failure
    }

    fn damaged_at_open(&self) -> u64 {
        self.damaged_at_open
    }

    fn write_prepare(&mut self, op: u64, frame: &Rc<[u8]>) -> Result<(), StoreError> {
        self.put(op, &StoredRecord::Prepare(frame.clone()))
    }

    fn write_header(&mut self, op: u64, header: &[u8; HEADER_BYTES]) -> Result<(), StoreError> {
        self.put(op, &StoredRecord::Header(header.to_vec()))
    }

    fn truncate_after(&mut self, op: u64) {
        let result = match &mut self.log {
            Log::Metadata(wal) => now(wal.truncate_after(op)),
            Log::Partition(wal) => now(wal.truncate_after(op)),
        };
        if !matches!(result, Some(Ok(()))) {
            tracing::warn!(
                dir = self.dir,
                op,
                "WAL truncation failed; the WAL refuses writes until reopened"
            );
            self.failure.get_or_insert("WAL truncation failed");
        }
    }

    fn remove_prepare(&mut self, op: u64) {
        let result = match &mut self.log {
            Log::Metadata(wal) => now(wal.remove(op)),
            Log::Partition(wal) => now(wal.remove(op)),
        };
        if !matches!(result, Some(Ok(()))) {
            tracing::warn!(
                dir = self.dir,
                op,
                "WAL removal failed; the WAL refuses writes until reopened"
            );
            self.failure.get_or_insert("WAL record removal failed");
        }
    }

    fn superblock(&self) -> Option<Superblock> {
        self.superblock.as_ref().map(|file| file.state().vsr())
    }

    fn records(&self) -> Vec<(u64, StoredRecord)> {
        let ops: Vec<u64> = match &self.log {
            Log::Metadata(wal) => wal.ops().collect(),
            Log::Partition(wal) => wal.ops().collect(),
        };
        ops.into_iter()
            .filter_map(|op| {
                let record = match &self.log {
                    Log::Metadata(wal) => now(wal.read(op)),
                    Log::Partition(wal) => now(wal.read(op)),
                };
                match record {
                    Some(Ok(Some(record))) => Some((op, record)),
                    Some(Ok(None)) => None,
                    // A record that cannot be read back is missing: repair refetches it.
                    // It may be an op this replica acknowledged, so its log may not be
                    // offered as complete (the boot scan read it whole a moment ago,
                    // so only a read that failed for good gets here).
                    Some(Err(_)) | None => {
                        crate::cover!(RecordUnreadableAtLoad);
                        self.unreadable_at_open.set(true);
                        None
                    }
                }
            })
            .collect()
    }

    fn read_prepare(&self, op: u64) -> Option<Rc<[u8]>> {
        if self.failure.is_some() {
            return None;
        }
        let record = match &self.log {
            Log::Metadata(wal) => now(wal.read(op)),
            Log::Partition(wal) => now(wal.read(op)),
        };
        match record {
            Some(Ok(Some(StoredRecord::Prepare(frame)))) => Some(frame),
            Some(Ok(_)) => None,
            // Unreadable now (a read error the retries did not get past, or damage
            // since boot): the replica does without it, as if it held only the header.
            Some(Err(error)) => {
                tracing::warn!(dir = self.dir, op, %error, "WAL record unreadable");
                None
            }
            None => None,
        }
    }

    fn may_lack_acknowledged_ops(&self) -> bool {
        self.may_lack_acknowledged_ops || self.unreadable_at_open.get()
    }

    fn persisted(&self) -> bool {
        self.durability.get() == Durability::Persisted
    }

    fn write_checkpoint(&mut self, op: u64, bytes: &Rc<[u8]>) -> Result<(), StoreError> {
        match now(write_snapshot(&self.storage, &self.checkpoint_path, op, bytes)) {
            Some(Ok(())) => {
                self.checkpoint_at_open.replace(None);
                self.checkpoint_op = Some(op);
                self.log.raise_gap_floor(op);
                Ok(())
            }
            // On any failure the previous checkpoint is still the durable one (a failure
            // after the rename leaves the old or the new one; either covers what the
            // WAL still holds, since nothing is discarded until this returns Ok).
            Some(Err(error @ SnapshotFileError::TooLarge { .. })) => {
                tracing::warn!(path = self.checkpoint_path, op, %error, "checkpoint refused");
                Err(failed("checkpoint larger than SNAPSHOT_BYTES_MAX"))
            }
            Some(Err(error)) => {
                tracing::warn!(path = self.checkpoint_path, op, %error, "checkpoint write failed");
                Err(failed("checkpoint write failed"))
            }
            None => Err(failed("checkpoint write did not complete on its first poll")),
        }
    }

    fn checkpoint(&self) -> Result<Option<Checkpoint>, StoreError> {
        // Read (and verified) at open, which boots without a damaged one; taken by the
        // boot, and read back from disk (verified again) if asked for after it.
        if let Some(held) = self.checkpoint_at_open.take() {
            return Ok(Some(held));
        }
        let Some(op) = self.checkpoint_op else {
            return Ok(None);
        };
        match now(read_snapshot(&self.storage, &self.checkpoint_path)) {
            Some(Ok(Some(snapshot))) if snapshot.key == op => Ok(Some((op, Rc::from(snapshot.bytes)))),
            Some(Ok(_)) => Err(failed("checkpoint file gone or of another op")),
            Some(Err(_)) => Err(failed("checkpoint file unreadable or damaged")),
            None => Err(failed("checkpoint read did not complete on its first poll")),
        }
    }

    fn flush_for_shutdown(&mut self) -> Result<(), StoreError> {
        if let Some(what) = self.failure {
            // A sync after a failed one may report success over bytes the cache dropped
            // (errseq reports a writeback error once): publishing now could make a
            // frontier vouch for bytes that are not on the disk.
            return Err(failed(what));
        }
        let result = match &mut self.log {
            Log::Metadata(wal) => now(wal.sync()),
            Log::Partition(wal) => now(wal.publish(SEGMENT_END_OFFSET_NONE)),
        };
        match result {
            Some(Ok(())) => Ok(()),
            Some(Err(error)) => {
                tracing::warn!(dir = self.dir, %error, "WAL publication at shutdown failed");
                Err(failed("WAL publication at shutdown failed"))
            }
            None => Err(failed("WAL publication at shutdown did not complete on its first poll")),
        }
    }

    fn discard_through(&mut self, op: u64) {
        // Never past the durable checkpoint: what it does not cover must stay.
        let covered = self.checkpoint_op;
        let Some(through) = covered.map(|covered| covered.min(op)) else {
            tracing::warn!(
                dir = self.dir,
                op,
                "WAL discard refused: no durable checkpoint covers it"
            );
            return;
        };
        if through < op {
            tracing::warn!(
                dir = self.dir,
                op,
                checkpoint_op = through,
                "WAL discard capped at the durable checkpoint"
            );
        }
        let result = match &mut self.log {
            Log::Metadata(wal) => now(wal.discard_through(through)),
            Log::Partition(wal) => now(wal.discard_through(through)),
        };
        match result {
            Some(Ok(Some(dropped))) => tracing::debug!(
                dir = self.dir,
                through,
                dropped_records = dropped.dropped_records,
                dropped_bytes = dropped.dropped_bytes,
                kept_records = dropped.kept_records,
                kept_bytes = dropped.kept_bytes,
                damaged_records = dropped.damaged_records,
                "WAL prefix dropped"
            ),
            // Too little to drop yet: a later checkpoint drops it.
            Some(Ok(None)) => {}
            Some(Err(error)) => {
                tracing::warn!(
                    dir = self.dir,
                    through,
                    %error,
                    "WAL prefix drop failed (the records stay; if it failed at or after its rename, the WAL \
                     refuses writes until reopened)"
                );
                // Which file a crash would leave is unknown after a failed rename or
                // directory sync: reopen through boot, which settles it.
                self.failure.get_or_insert("WAL prefix drop failed");
            }
            None => tracing::warn!(
                dir = self.dir,
                through,
                "WAL prefix drop did not complete on its first poll"
            ),
        }
    }
}

#[cfg(test)]
mod tests;
