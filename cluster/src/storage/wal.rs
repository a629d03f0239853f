//! The metadata write-ahead log, and the record-log engine the partition WAL shares.
//!
//! File `metadata/wal`: a sequence of [`record`]s (magic `MWAL`), key = op, ops strictly
//! increasing from the start of the file to its end:
//!
//! ```text
//! kind 1 Prepare  payload = the whole prepare frame (256-byte header + body),
//!                 then zero padding if the record replaced a larger one in place
//! kind 2 Header   payload = the 256-byte header of an op whose body is not held, then
//!                 zeros up to the frame size the header names: the slot is reserved so
//!                 the body, when repair brings it, replaces the header in place
//! kind 3 Removed  payload = zeros: an op forgotten in place (`remove`), or a
//!                 placeholder reserving room for an op of a gap (see below)
//! ```
//!
//! Appends are buffered; [`Wal::sync`] is the barrier that makes every append before it
//! durable, through the same handle that wrote them (a fresh handle's fsync can miss a
//! writeback error that the writing handle is told about). After any failed write or
//! sync the WAL is *poisoned*: it refuses everything until reopened, because a later
//! sync could succeed without the lost bytes ever reaching the disk.
//!
//! Changing bytes already written (a replacement, an insertion below the head, a
//! removal) is a rewrite from one offset to the end of the file. A rewrite is protected
//! by a redo file (`metadata/wal.redo`: the target offset, the old and new lengths and
//! the new bytes, checksummed, synced before the first byte of the WAL is touched), so a
//! crash in the middle of it is rolled forward at boot and never damages a record that
//! was durable. A replacement that fits its op's slot rewrites just that slot.
//!
//! Gaps: a record written above ops the log lacks (a backup journals prepares as they
//! arrive; repair fills what it missed later, from the top down) is preceded by
//! placeholders for those ops, removed records that reserve room
//! ([`GAP_RESERVED_OPS_MAX`], [`GAP_RESERVED_PAYLOAD_MIN_BYTES`]). A record that comes
//! for a placeholder is written in place; one larger than its placeholder re-divides it
//! and the vacant slots next to it (still one rewrite of those bytes, redo-protected);
//! only a record larger than every vacant room around it moves the records above.
//! Without them every filled op moved the whole suffix: time quadratic in the gap.
//!
//! Forgetting the ops a durable checkpoint covers ([`Wal::discard_through`]) is a
//! *prefix drop*: the records above the checkpoint's op are copied (each verified as it
//! is read) into `metadata/wal.next`, which is synced through the handle that wrote it,
//! renamed over `metadata/wal`, and the directory synced; that handle then becomes the
//! WAL's. A crash before the rename leaves the old file whole (boot removes the
//! `.next`), after it the new one whole: never a file missing a record above the op, never
//! a damaged one. A failed rename or directory sync poisons the WAL (which file a crash
//! would leave is unknown). A drop runs only when it frees at least as many bytes as it
//! copies ([`PREFIX_DROP_COPIED_PER_DROPPED_BYTE_MAX`]), so its copying costs at most one
//! extra write per byte appended, amortized, and the file stays within twice what it
//! must hold. It never runs while a rewrite's redo is pending (the redo names offsets of
//! the old file); between calls the redo is always clear unless the WAL is poisoned.
//!
//! Recovery ([`Wal::open`]) removes a prefix drop's leftover `.next`, replays an
//! interrupted rewrite, then scans from the start:
//! damage followed by a valid record with a higher op is corruption in the middle,
//! reported with the op range it may have held ([`DamagedRange`]), never applied; damage
//! with nothing valid after it is a torn tail, truncated away and reported.
//!
//! Known limits: boot reads the whole file into memory ([`record::READ_TO_END_BYTES_MAX`]);
//! resynchronising after damage trusts any checksummed record found later in the file,
//! and a message body could in principle carry such a record (the VSR chain check
//! rejects a prepare that does not hash-chain with its neighbours).

use std::fmt;
use std::io;
use std::ops::RangeInclusive;

use crate::seam::DurableStorage;
use crate::storage::record::Checksums;
use crate::vsr::store::StoredRecord;

/// The read-only views of its [`RecordLog`] (a field named `log`) that both WALs, this
/// one and the partition WAL, give their callers: written once here, expanded in each
/// `impl`.
macro_rules! record_log_views {
    () => {
        /// The highest op in the log (0 if empty).
        pub fn last_op(&self) -> u64 {
            self.log.last_op()
        }

        /// Ops the log holds a record for (removed ops included), ascending.
        pub fn ops(&self) -> impl Iterator<Item = u64> + '_ {
            self.log.slots().keys().copied()
        }

        /// Ops whose slot holds no record (a removed op or a gap placeholder), ascending:
        /// not evidence that the op was never acknowledged (see `RecordLog::vacant_ops`).
        pub fn vacant_ops(&self) -> impl Iterator<Item = u64> + '_ {
            self.log.vacant_ops()
        }

        /// Bytes written to the log's file.
        pub fn len_bytes(&self) -> u64 {
            self.log.end()
        }
    };
}
pub(crate) use record_log_views;

mod engine;

pub use engine::{
    GAP_RESERVED_BYTES_MAX, GAP_RESERVED_OPS_MAX, GAP_RESERVED_PAYLOAD_MIN_BYTES, NEXT_SUFFIX,
    PREFIX_DROP_COPIED_PER_DROPPED_BYTE_MAX, PrefixDrop, REWRITE_BYTES_MAX, WAL_WRITE_BYTES_MAX,
};
pub(crate) use engine::{RecordLog, scan_with};

/// Path of the metadata WAL.
pub const WAL_PATH: &str = "metadata/wal";

/// Magic of metadata WAL records ("MWAL").
const WAL_MAGIC: u32 = 0x4D57_414C;

/// Path of `name` inside `dir` (`""` is the storage root).
pub(crate) fn join_path(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// Sync every directory from `path`'s parent up to the root, so a file created there
/// (and the directories created for it) survive a power loss.
pub(crate) async fn sync_ancestors<S: DurableStorage>(storage: &S, path: &str) -> io::Result<()> {
    let mut dir = path;
    while let Some(slash) = dir.rfind('/') {
        dir = &dir[..slash];
        storage.sync_dir(dir).await?;
    }
    storage.sync_dir("").await
}

/// Why a WAL operation failed.
#[derive(Debug)]
pub enum WalError {
    /// A storage operation failed (the WAL is poisoned if it was a write or sync).
    Io {
        /// The file.
        path: String,
        /// What was being done.
        action: &'static str,
        /// The error.
        source: io::Error,
    },
    /// An earlier write or sync failed: nothing since can be trusted durable.
    Poisoned {
        /// The file.
        path: String,
        /// The first failure.
        cause: String,
    },
    /// An append whose op is not above every op already in the log.
    OutOfOrder {
        /// The file.
        path: String,
        /// The op appended.
        op: u64,
        /// The highest op in the log.
        last_op: u64,
    },
    /// A record the WAL refuses to write (a frame that does not verify, a header of
    /// the wrong length, an op that does not match the frame's).
    InvalidRecord {
        /// The op it was written at.
        op: u64,
        /// What is wrong.
        reason: String,
    },
    /// A rewrite above [`REWRITE_BYTES_MAX`].
    RewriteTooLarge {
        /// The file.
        path: String,
        /// The op being replaced, inserted or removed.
        op: u64,
        /// Bytes the rewrite would need.
        bytes: u64,
    },
    /// A partition WAL whose published frontier names another group.
    WrongGroup {
        /// The frontier file.
        path: String,
        /// The group opened.
        expected: u64,
        /// The group on disk.
        found: u64,
    },
}

impl fmt::Display for WalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, action, source } => write!(f, "{path}: {action}: {source}"),
            Self::Poisoned { path, cause } => write!(
                f,
                "{path}: an earlier write or sync failed ({cause}); nothing written since can be \
                 trusted durable, reopen the WAL to recover"
            ),
            Self::OutOfOrder { path, op, last_op } => {
                write!(
                    f,
                    "{path}: append of op {op} is not above the last op {last_op}; use replace"
                )
            }
            Self::InvalidRecord { op, reason } => write!(f, "refusing to write op {op}: {reason}"),
            Self::RewriteTooLarge { path, op, bytes } => write!(
                f,
                "{path}: rewriting from op {op} needs {bytes} bytes, above REWRITE_BYTES_MAX {REWRITE_BYTES_MAX}"
            ),
            Self::WrongGroup { path, expected, found } => {
                write!(
                    f,
                    "{path}: published frontier belongs to group {found}, not group {expected}"
                )
            }
        }
    }
}

impl std::error::Error for WalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// Bytes in the middle of a log that are not valid records, with valid records after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DamagedRange {
    /// File offset of the first damaged byte.
    pub offset: u64,
    /// Damaged bytes.
    pub bytes: u64,
    /// The last valid op before the damage, if any.
    pub after_op: Option<u64>,
    /// The first valid op after it (or, below a partition's frontier, one past the last
    /// op the frontier published); `None` if unknown.
    pub before_op: Option<u64>,
    /// What was wrong at `offset`.
    pub reason: String,
}

impl DamagedRange {
    /// The ops the damaged bytes may have held (and VSR must repair from peers): the
    /// ones strictly between `after_op` and `before_op`, up to `u64::MAX` if the latter
    /// is unknown. `None` if no op lies between them.
    pub fn ops(&self) -> Option<RangeInclusive<u64>> {
        let low = match self.after_op {
            Some(after) => after.checked_add(1)?,
            None => 0,
        };
        let high = match self.before_op {
            Some(before) => before.checked_sub(1)?,
            None => u64::MAX,
        };
        (low <= high).then_some(low..=high)
    }
}

/// A torn tail truncated away at boot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// Where the valid log ended (the file's new length).
    pub offset: u64,
    /// Bytes discarded.
    pub bytes: u64,
    /// What was wrong at `offset`.
    pub reason: String,
}

/// What boot found of a rewrite that a crash interrupted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InterruptedRewrite {
    /// The redo was complete: the rewrite was finished (rolled forward).
    Replayed {
        /// Where the rewrite starts.
        offset: u64,
        /// The file's length before it.
        old_len: u64,
        /// The file's length after it.
        new_len: u64,
    },
    /// The redo was incomplete, so the WAL was never touched: it was dropped.
    Discarded {
        /// What was wrong with it.
        reason: String,
    },
}

/// What [`Wal::open`] recovered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WalRecovery {
    /// Every valid record, by op (removed ops left out).
    pub records: Vec<(u64, StoredRecord)>,
    /// Damage in the middle: reported, never applied.
    pub damaged: Vec<DamagedRange>,
    /// The torn tail truncated away, if any.
    pub torn_tail: Option<TornTail>,
    /// A rewrite a crash interrupted, if any.
    pub interrupted_rewrite: Option<InterruptedRewrite>,
    /// A prefix drop a crash interrupted before its rename left its new file, which boot
    /// removed (the WAL is the old one, whole).
    pub removed_prefix_drop_leftover: bool,
}

/// The metadata write-ahead log.
pub struct Wal<S: DurableStorage> {
    log: RecordLog<S>,
}

impl<S: DurableStorage> fmt::Debug for Wal<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wal")
            .field("path", &self.log.path())
            .field("ops", &self.log.slots().len())
            .field("end", &self.log.end())
            .field("synced", &self.log.synced())
            .field("poisoned", &self.log.poisoned())
            .finish()
    }
}

impl<S: DurableStorage> Wal<S> {
    /// Open (creating on first boot) `metadata/wal`, recover it, and return what it
    /// holds and what was damaged or discarded.
    pub async fn open(storage: &S) -> Result<(Self, WalRecovery), WalError> {
        Self::open_with(storage, Checksums::Verify).await
    }

    /// [`Wal::open`], verifying the records' checksums or not (skipping is the
    /// test-only storage break that applies damaged records).
    pub async fn open_with(storage: &S, checksums: Checksums) -> Result<(Self, WalRecovery), WalError> {
        let (mut log, interrupted_rewrite) = RecordLog::open(storage, WAL_PATH, WAL_MAGIC).await?;
        if interrupted_rewrite.is_some() {
            log.clear_redo().await?;
        }
        let bytes = log.read_all().await?;
        log.set_checksums(checksums);
        let scan = scan_with(WAL_MAGIC, &bytes, checksums);
        let torn_tail = scan.tail.map(|(offset, reason)| TornTail {
            offset,
            bytes: bytes.len() as u64 - offset,
            reason,
        });
        log.adopt(scan.slots);
        match &torn_tail {
            Some(tail) => {
                crate::cover!(WalTornTailCut);
                tracing::warn!(
                    path = WAL_PATH,
                    offset = tail.offset,
                    discarded_bytes = tail.bytes,
                    reason = %tail.reason,
                    "discarding the torn tail of the metadata WAL"
                );
                log.cut(tail.offset).await?;
            }
            None => log.sync().await?,
        }
        for damage in &scan.damaged {
            crate::cover!(WalDamagedMiddle);
            tracing::warn!(
                path = WAL_PATH,
                offset = damage.offset,
                bytes = damage.bytes,
                ops = ?damage.ops(),
                reason = %damage.reason,
                "metadata WAL damaged in the middle; the ops there must be repaired from peers"
            );
        }
        let recovery = WalRecovery {
            records: scan.records,
            damaged: scan.damaged,
            torn_tail,
            interrupted_rewrite,
            removed_prefix_drop_leftover: log.removed_leftover_next(),
        };
        Ok((Self { log }, recovery))
    }

    /// Append one record (buffered: durable after the next [`Wal::sync`]). `op` must be
    /// above every op in the log.
    pub async fn append(&mut self, op: u64, record: &StoredRecord) -> Result<(), WalError> {
        self.log.append(&[(op, record)]).await
    }

    /// Append several records in op order (buffered, written in batches of at most
    /// [`WAL_WRITE_BYTES_MAX`]); one [`Wal::sync`] afterwards covers them all.
    pub async fn append_all(&mut self, records: &[(u64, StoredRecord)]) -> Result<(), WalError> {
        let borrowed: Vec<(u64, &StoredRecord)> = records.iter().map(|(op, record)| (*op, record)).collect();
        self.log.append(&borrowed).await
    }

    /// The barrier: every append before it is durable when it returns Ok.
    pub async fn sync(&mut self) -> Result<(), WalError> {
        self.log.sync().await
    }

    /// Durably put `record` at `op`, replacing what is there, inserting it between its
    /// neighbours, or appending it. Returns once it is durable (the log is synced).
    pub async fn replace(&mut self, op: u64, record: &StoredRecord) -> Result<(), WalError> {
        self.log.rewrite(op, Some(record), true).await?;
        self.log.clear_redo().await
    }

    /// Durably forget `op` (its slot is kept, marked removed); nothing if absent.
    pub async fn remove(&mut self, op: u64) -> Result<(), WalError> {
        if self.log.rewrite(op, None, true).await?.is_some() {
            self.log.clear_redo().await?;
        }
        Ok(())
    }

    /// Durably forget every op above `op` (a view change truncated them).
    pub async fn truncate_after(&mut self, op: u64) -> Result<(), WalError> {
        self.log.truncate_after(op).await
    }

    /// A durable checkpoint covers `op` and every op below it: no gap placeholder
    /// reserves room for them from now on (see `RecordLog::raise_gap_floor`).
    pub fn raise_gap_floor(&mut self, op: u64) {
        self.log.raise_gap_floor(op);
    }

    /// Forget every record at or below `op` (a durable checkpoint covers them) with a
    /// crash-safe prefix drop (see the module docs), durable on return. Does nothing
    /// (`Ok(None)`) unless the drop would free at least as many bytes as it must copy
    /// ([`PREFIX_DROP_COPIED_PER_DROPPED_BYTE_MAX`]); a later call with a higher op
    /// drops them then. On an error before the rename the WAL is unchanged and usable;
    /// after it, poisoned.
    pub async fn discard_through(&mut self, op: u64) -> Result<Option<PrefixDrop>, WalError> {
        self.log.check_poisoned()?;
        match self.log.prefix_plan(op) {
            Some(plan) if plan.worth_doing() => self.log.drop_prefix(op).await.map(Some),
            _ => Ok(None),
        }
    }

    /// **Test-only: production must never call it.** The `wal-drop-last-record` test
    /// break (`node::TestBreak::WalDropLastRecord`), called right after [`Wal::open`]:
    /// cut the file at the start of its last record that holds an op (a prepare or a
    /// header; removed ops after it go with it) and sync the cut, the way boot cuts a
    /// torn tail, but report nothing: the op leaves `recovery.records` and no
    /// `torn_tail` is recorded, so the log reads as intact. It exists so a fault
    /// harness on real nodes can show it catches a node that forgets an acknowledged,
    /// synced record while claiming its log is whole. Returns the op dropped (`None`
    /// if the log holds none).
    pub(crate) async fn drop_last_record(&mut self, recovery: &mut WalRecovery) -> Result<Option<u64>, WalError> {
        let Some(op) = recovery.records.last().map(|(op, _)| *op) else {
            return Ok(None);
        };
        let Some(slot) = self.log.slots().get(&op).copied() else {
            return Ok(None);
        };
        self.log.cut(slot.offset).await?;
        recovery.records.pop();
        Ok(Some(op))
    }

    /// Read the record at `op` back from the file (`None` if absent or removed).
    pub async fn read(&self, op: u64) -> Result<Option<StoredRecord>, WalError> {
        self.log.read(op).await
    }

    /// The lowest op in the log (0 if empty).
    pub fn first_op(&self) -> u64 {
        self.log.slots().keys().next().copied().unwrap_or(0)
    }

    record_log_views!();

    /// Bytes known durable (every append below this offset has been synced).
    pub fn synced_bytes(&self) -> u64 {
        self.log.synced()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::runtime::DiskStorage;
    use crate::wire::{self, Command, Header};
    use futures::FutureExt;
    use std::rc::Rc;

    /// DiskStorage calls block and complete at once: their futures are always ready.
    pub(crate) fn ready<T>(future: impl Future<Output = T>) -> T {
        future.now_or_never().expect("DiskStorage futures are always ready")
    }

    /// A sealed prepare frame for `op`, as a WAL record.
    pub(crate) fn prepare(op: u64) -> StoredRecord {
        let mut header = Header::new(Command::Prepare);
        header.op = op;
        StoredRecord::Prepare(Rc::from(wire::seal_header(header, &[op as u8; 33])))
    }

    #[test]
    fn a_wal_on_real_files_keeps_what_was_synced_and_cuts_a_torn_tail() {
        let root = std::env::temp_dir().join(format!("cluster-wal-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let storage = DiskStorage::new(&root).expect("temp dir");
        let (mut wal, _) = ready(Wal::open(&storage)).expect("open");
        let records: Vec<(u64, StoredRecord)> = (1..=3).map(|op| (op, prepare(op))).collect();
        ready(wal.append_all(&records)).expect("append");
        ready(wal.sync()).expect("sync");
        let synced = wal.len_bytes();
        drop(wal);
        // A record that only began to reach the disk.
        let mut bytes = std::fs::read(root.join(WAL_PATH)).expect("read");
        let head = bytes[..17].to_vec();
        bytes.extend_from_slice(&head);
        std::fs::write(root.join(WAL_PATH), &bytes).expect("write");
        let (wal, recovery) = ready(Wal::open(&storage)).expect("reopen");
        assert_eq!(recovery.records, records);
        assert_eq!(
            recovery.torn_tail.map(|tail| (tail.offset, tail.bytes)),
            Some((synced, 17))
        );
        assert_eq!(wal.len_bytes(), synced);
        assert_eq!(std::fs::metadata(root.join(WAL_PATH)).expect("stat").len(), synced);
        std::fs::remove_dir_all(root).expect("cleanup");
    }

    #[test]
    fn a_damaged_range_may_hold_the_ops_strictly_between_its_neighbours() {
        let range = |after_op, before_op| {
            DamagedRange {
                offset: 0,
                bytes: 1,
                after_op,
                before_op,
                reason: String::new(),
            }
            .ops()
        };
        assert_eq!(range(Some(2), Some(6)), Some(3..=5));
        assert_eq!(range(None, Some(2)), Some(0..=1));
        assert_eq!(range(Some(4), Some(5)), None, "adjacent ops leave nothing between");
        assert_eq!(range(Some(9), None), Some(10..=u64::MAX));
        assert_eq!(range(None, Some(0)), None);
    }

    /// A fresh storage root for one test, under the system temp dir.
    pub(crate) fn temp_root(name: &str) -> std::path::PathBuf {
        let root = std::env::temp_dir().join(format!("cluster-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        root
    }

    fn header_only(op: u64) -> StoredRecord {
        let mut header = Header::new(Command::Prepare);
        header.op = op;
        let frame = wire::seal_header(header, &[op as u8; 33]);
        StoredRecord::Header(frame[..wire::HEADER_BYTES].to_vec())
    }

    fn recovered_ops(recovery: &WalRecovery) -> Vec<u64> {
        recovery.records.iter().map(|(op, _)| *op).collect()
    }

    #[test]
    fn discard_through_keeps_exactly_the_records_above_op_and_survives_a_reopen() {
        let root = temp_root("wal-discard");
        let storage = DiskStorage::new(&root).expect("temp dir");
        let (mut wal, _) = ready(Wal::open(&storage)).expect("open");
        let mut records: Vec<(u64, StoredRecord)> = (1..=10).map(|op| (op, prepare(op))).collect();
        records[7] = (8, header_only(8));
        ready(wal.append_all(&records)).expect("append");
        ready(wal.sync()).expect("sync");
        ready(wal.remove(9)).expect("remove");
        let dropped = ready(wal.discard_through(6)).expect("discard").expect("worth doing");
        assert_eq!((dropped.dropped_records, dropped.kept_records), (6, 4));
        assert_eq!(dropped.damaged_records, 0);
        assert_eq!(
            wal.ops().collect::<Vec<_>>(),
            vec![7, 8, 9, 10],
            "the removed op 9 keeps its slot"
        );
        assert_eq!(wal.first_op(), 7);
        assert_eq!(wal.len_bytes(), dropped.kept_bytes);
        assert_eq!(wal.synced_bytes(), wal.len_bytes(), "durable on return");
        assert_eq!(ready(wal.read(6)).expect("read"), None);
        assert_eq!(ready(wal.read(7)).expect("read"), Some(prepare(7)));
        assert!(!root.join(format!("{WAL_PATH}{NEXT_SUFFIX}")).exists());
        assert_eq!(
            std::fs::metadata(root.join(WAL_PATH)).expect("stat").len(),
            dropped.kept_bytes
        );
        // The WAL goes on through the new file: an append, a body replacing its header
        // in place, an insertion that moves records.
        ready(wal.append(11, &prepare(11))).expect("append after the drop");
        ready(wal.sync()).expect("sync");
        ready(wal.replace(8, &prepare(8))).expect("fill the header");
        ready(wal.replace(9, &prepare(9))).expect("put back the removed op");
        drop(wal);
        let (wal, recovery) = ready(Wal::open(&storage)).expect("reopen");
        assert_eq!(recovered_ops(&recovery), vec![7, 8, 9, 10, 11]);
        assert_eq!(recovery.records[1], (8, prepare(8)));
        assert!(
            recovery.damaged.is_empty() && recovery.torn_tail.is_none(),
            "{recovery:?}"
        );
        assert!(!recovery.removed_prefix_drop_leftover);
        drop(wal);
        std::fs::remove_dir_all(root).expect("cleanup");
    }

    /// A prepare for `op` whose body is `body_bytes` long.
    fn prepare_sized(op: u64, body_bytes: usize) -> StoredRecord {
        let mut header = Header::new(Command::Prepare);
        header.op = op;
        StoredRecord::Prepare(Rc::from(wire::seal_header(header, &vec![op as u8; body_bytes])))
    }

    /// What broke: a backup that journaled a prepare above a gap filled the gap by
    /// repair from the top down, and each filled op rewrote every record above it
    /// (through the redo file): time quadratic in the gap, most of a partition-plane
    /// run's time after one restart. Now the gap holds placeholders, filled in place.
    #[test]
    fn a_gap_filled_from_the_top_down_moves_no_record_and_reads_back_whole() {
        let root = temp_root("wal-gap-fill");
        let storage = DiskStorage::new(&root).expect("temp dir");
        let (mut wal, _) = ready(Wal::open(&storage)).expect("open");
        ready(wal.append(1, &prepare(1))).expect("append");
        ready(wal.append(40, &prepare(40))).expect("append above a gap");
        ready(wal.sync()).expect("sync");
        assert_eq!(
            wal.ops().collect::<Vec<_>>(),
            (1..=40).collect::<Vec<_>>(),
            "each op of the gap has a slot"
        );
        let len = wal.len_bytes();
        // Small records fill their placeholders; one larger than a placeholder (op 30)
        // takes room from the vacant ones below it; still nothing moves.
        let larger = GAP_RESERVED_PAYLOAD_MIN_BYTES + 500;
        let record = |op: u64| {
            if op == 30 {
                prepare_sized(op, larger)
            } else {
                prepare(op)
            }
        };
        for op in (2..40).rev() {
            ready(wal.replace(op, &record(op))).expect("fill");
            assert_eq!(wal.len_bytes(), len, "op {op} was filled without moving a record");
        }
        for op in 1..=40 {
            assert_eq!(ready(wal.read(op)).expect("read"), Some(record(op)), "op {op}");
        }
        drop(wal);
        let (_, recovery) = ready(Wal::open(&storage)).expect("reopen");
        assert_eq!(recovered_ops(&recovery), (1..=40).collect::<Vec<_>>());
        assert!(
            recovery.damaged.is_empty() && recovery.torn_tail.is_none(),
            "{recovery:?}"
        );
        std::fs::remove_dir_all(root).expect("cleanup");
    }

    #[test]
    fn a_record_larger_than_every_vacant_room_around_it_moves_the_records_above() {
        let root = temp_root("wal-gap-move");
        let storage = DiskStorage::new(&root).expect("temp dir");
        let (mut wal, _) = ready(Wal::open(&storage)).expect("open");
        ready(wal.append(1, &prepare(1))).expect("append");
        ready(wal.append(3, &prepare(3))).expect("append above a one-op gap");
        let len = wal.len_bytes();
        let big = prepare_sized(2, 3 * GAP_RESERVED_PAYLOAD_MIN_BYTES);
        ready(wal.replace(2, &big)).expect("insert");
        assert!(wal.len_bytes() > len, "op 3 moved up to make room");
        assert_eq!(ready(wal.read(2)).expect("read"), Some(big));
        assert_eq!(ready(wal.read(3)).expect("read"), Some(prepare(3)));
        drop(wal);
        let (_, recovery) = ready(Wal::open(&storage)).expect("reopen");
        assert_eq!(recovered_ops(&recovery), vec![1, 2, 3]);
        std::fs::remove_dir_all(root).expect("cleanup");
    }

    #[test]
    fn discard_through_waits_until_it_frees_as_much_as_it_copies() {
        let root = temp_root("wal-discard-threshold");
        let storage = DiskStorage::new(&root).expect("temp dir");
        let (mut wal, _) = ready(Wal::open(&storage)).expect("open");
        let records: Vec<(u64, StoredRecord)> = (1..=10).map(|op| (op, prepare(op))).collect();
        ready(wal.append_all(&records)).expect("append");
        ready(wal.sync()).expect("sync");
        let len = wal.len_bytes();
        assert_eq!(ready(wal.discard_through(0)).expect("nothing at or below"), None);
        assert_eq!(
            ready(wal.discard_through(4)).expect("too little"),
            None,
            "4 records dropped would copy 6"
        );
        assert_eq!(wal.len_bytes(), len, "untouched");
        let dropped = ready(wal.discard_through(5)).expect("discard").expect("half");
        assert_eq!(dropped.dropped_bytes, dropped.kept_bytes);
        let dropped = ready(wal.discard_through(u64::MAX))
            .expect("discard")
            .expect("everything");
        assert_eq!((dropped.kept_records, dropped.kept_bytes), (0, 0));
        assert_eq!(wal.last_op(), 0);
        ready(wal.append(11, &prepare(11))).expect("append to the empty WAL");
        ready(wal.sync()).expect("sync");
        drop(wal);
        let (_, recovery) = ready(Wal::open(&storage)).expect("reopen");
        assert_eq!(recovered_ops(&recovery), vec![11]);
        std::fs::remove_dir_all(root).expect("cleanup");
    }

    #[test]
    fn a_prefix_drop_s_leftover_is_removed_at_boot_and_the_wal_is_whole() {
        let root = temp_root("wal-leftover-next");
        let storage = DiskStorage::new(&root).expect("temp dir");
        let (mut wal, _) = ready(Wal::open(&storage)).expect("open");
        let records: Vec<(u64, StoredRecord)> = (1..=4).map(|op| (op, prepare(op))).collect();
        ready(wal.append_all(&records)).expect("append");
        ready(wal.sync()).expect("sync");
        drop(wal);
        // What a crash before the rename leaves: a partial new file beside the WAL.
        let next = root.join(format!("{WAL_PATH}{NEXT_SUFFIX}"));
        let whole = std::fs::read(root.join(WAL_PATH)).expect("read");
        std::fs::write(&next, &whole[whole.len() / 2..]).expect("write leftover");
        let (_, recovery) = ready(Wal::open(&storage)).expect("reopen");
        assert!(recovery.removed_prefix_drop_leftover);
        assert_eq!(recovery.records, records);
        assert!(!next.exists());
        std::fs::remove_dir_all(root).expect("cleanup");
    }

    /// What was slow: the prefix plan a replica asks for after every evicted op summed
    /// every slot kept, about a thousand in a busy metadata WAL, at every op. It now
    /// remembers the sum and subtracts the slots between two plans. The remembered sum
    /// must be the fresh one whatever happened in between: appends (which it follows),
    /// and rewrites, removals, truncations and prefix drops (which make it forget).
    #[test]
    fn a_prefix_plan_counts_the_bytes_kept_exactly_across_appends_rewrites_and_drops() {
        let root = temp_root("wal-prefix-plan");
        let storage = DiskStorage::new(&root).expect("temp dir");
        let (mut wal, _) = ready(Wal::open(&storage)).expect("open");
        let fresh = |wal: &Wal<DiskStorage>, through: u64| -> u64 {
            wal.log.slots().range(through + 1..).map(|(_, slot)| slot.bytes).sum()
        };
        let (mut next_op, mut through, mut drops) = (1u64, 0u64, 0);
        for step in 0..600u64 {
            let size = 20 + (step * 37 % 300) as usize;
            ready(wal.append(next_op, &prepare_sized(next_op, size))).expect("append");
            next_op += 1 + u64::from(step % 17 == 0); // now and then a gap, with placeholders
            match step % 29 {
                5 if through + 3 < next_op - 1 => {
                    // Rewrite an op above the planned one: larger than any window of
                    // placeholders, so the records after it move and the file grows.
                    let op = next_op - 2;
                    ready(wal.replace(op, &prepare_sized(op, 20_000 + size))).expect("replace");
                }
                11 if through + 3 < next_op - 1 => ready(wal.remove(next_op - 2)).expect("remove"),
                23 => {
                    let cut = next_op - 2;
                    ready(wal.truncate_after(cut)).expect("truncate");
                    next_op = cut + 1;
                }
                _ => {}
            }
            // The plan rises by an op every other step: it trails the head more and
            // more, so rewrites land above it.
            through = (through + step % 2).min(next_op.saturating_sub(2));
            if let Some(plan) = wal.log.prefix_plan(through) {
                assert_eq!(plan.kept_bytes, fresh(&wal, through), "step {step}, through {through}");
                assert_eq!(plan.dropped_bytes, wal.len_bytes() - plan.kept_bytes, "step {step}");
            }
            if step % 97 == 96 && ready(wal.discard_through(through)).expect("discard").is_some() {
                drops += 1;
            }
        }
        assert!(drops > 0, "the example dropped a prefix");
        drop(wal);
        std::fs::remove_dir_all(root).expect("cleanup");
    }
}
