//! The node's deleted groups (tombstones), as an append-only log: one record per
//! deleted group, each synced before the delete goes on.
//!
//! A tombstone must be durable before a group's files are removed, so that a crash in
//! between leaves files nobody opens, never a deleted group opened again (a metadata
//! replica that replays an older state would otherwise recreate it, empty). The node
//! used to keep the set as one snapshot file (`node/deleted`) rewritten whole on every
//! delete, so a delete cost bytes in proportion to every delete before it: quadratic
//! over a node's life (a node that had deleted 100,000 groups rewrote 800 KB per
//! delete), and a growing share of long simulated runs. Appending one record costs
//! the same whatever came before.
//!
//! File `node/tombstones`: records ([`super::record`], magic `TOMB`, no payload), all
//! [`TOMBSTONE_RECORD_BYTES`] long, record `i` at offset `i * TOMBSTONE_RECORD_BYTES`:
//! - kind 1: one deleted group (the key), appended per delete;
//! - kind 2 then kind 3: the ids from the first record's key through the second's, both
//!   included, written by compaction (a range of [`TombstoneSet`]).
//!
//! Created on the first delete; each process syncs its directory entry with the first
//! record it appends.
//!
//! Appends: each record is written at the end of the durable records (not at the
//! file's end) and synced before [`TombstoneLog::append`] returns. A failed write or
//! sync leaves the durable length where it was, so the next append writes its record
//! over whatever the failed one left (cutting the file to the durable length first):
//! a failed append never leaves damage in the middle of the log.
//!
//! Compaction: once the log holds [`TOMBSTONE_LOG_COMPACT_RECORDS_MIN`] records and
//! four times as many as the set has ranges, the set is written whole to
//! `node/tombstones.tmp`, synced, renamed over the log, and the directory synced. A
//! crash before the rename leaves the old log (and a `.tmp` the next compaction
//! removes); after it, the new one, whole. Appends go to the new file from then on, and
//! the first of them syncs the directory again if the compaction's own sync failed.
//! Each compaction writes at most twice as many records as ranges and comes after at
//! least twice as many appends, so a delete costs a bounded amount of writing however
//! many came before, and the log stays small: a node that deleted millions of groups
//! keeps about as many ranges as it has live groups (see [`TombstoneSet`]).
//!
//! Recovery ([`TombstoneLog::open`]): every record is read; a record that does not
//! decode (or a range's first record without its last), with no valid record after it,
//! is the torn tail of an append that never returned (its delete never went on), and is
//! ignored (the next append cuts it); one with a valid record after it is damage in the
//! middle, which loses tombstones, and refuses the boot with the offset and the reason.
//! Records of another kind are damage too.
//!
//! The older format, `node/deleted` (one snapshot file of little-endian u64 group ids),
//! is still read at boot and never written: a data directory written before the log
//! keeps its tombstones.

use std::fmt;
use std::io;

use futures::FutureExt;

use super::record::{self, RECORD_HEADER_BYTES, RecordError};
use super::snapshot_file::read_snapshot;
use super::tombstone_set::{Settled, TombstoneSet};
use super::wal::sync_ancestors;
use crate::seam::{DurableFile, DurableStorage, OpenMode};

/// Path of the tombstone log.
pub const TOMBSTONE_LOG_PATH: &str = "node/tombstones";

/// Path of the older tombstone file (one snapshot of every deleted group id), read at
/// boot and never written.
pub const LEGACY_DELETED_PATH: &str = "node/deleted";

/// Where a compaction writes the new log before renaming it over the old one.
pub const TOMBSTONE_LOG_TMP_PATH: &str = "node/tombstones.tmp";

/// Magic of tombstone records ("TOMB").
const TOMBSTONE_MAGIC: u32 = u32::from_le_bytes(*b"TOMB");

/// Kind of a record naming one deleted group.
const TOMBSTONE_KIND: u8 = 1;

/// Kind of the record that opens a range (its key is the range's first id); the next
/// record must be of kind [`RANGE_LAST_KIND`].
const RANGE_FIRST_KIND: u8 = 2;

/// Kind of the record that closes a range (its key is the range's last id).
const RANGE_LAST_KIND: u8 = 3;

/// Fewest records in the log before a compaction: 1,024 records are 40 KiB, so a
/// node's log stays tiny, while a compaction (a rewrite of every range, two syncs, a
/// rename) stays rare next to the deletes, each already a sync of its own.
pub const TOMBSTONE_LOG_COMPACT_RECORDS_MIN: u64 = 1024;

/// Bytes of one tombstone record: a record header (the group id is its key) and no
/// payload.
pub const TOMBSTONE_RECORD_BYTES: usize = RECORD_HEADER_BYTES;

/// Why the tombstones could not be read or written.
#[derive(Debug)]
pub enum TombstoneError {
    /// A storage call failed.
    Io {
        /// The file.
        path: &'static str,
        /// What was being done.
        action: &'static str,
        /// The error.
        source: io::Error,
    },
    /// A record in the middle of the log (a valid one follows it) does not decode: the
    /// tombstones it held are lost, and booting without them could reopen a deleted
    /// group.
    Damaged {
        /// Offset of the record, in bytes.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// The older tombstone file could not be read.
    Legacy(String),
    /// A storage call did not complete on its first poll (see `node::durable_stores`).
    Pending(&'static str),
}

impl fmt::Display for TombstoneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { path, action, source } => write!(f, "{path}: {action}: {source}"),
            Self::Damaged { offset, reason } => write!(
                f,
                "{TOMBSTONE_LOG_PATH}: the record at offset {offset} is damaged ({reason}) and a valid \
                 record follows it: deleted groups it named are lost, so the node refuses to boot \
                 rather than reopen one"
            ),
            Self::Legacy(error) => write!(f, "{LEGACY_DELETED_PATH}: {error}"),
            Self::Pending(what) => write!(f, "{what}: the storage call did not complete on its first poll"),
        }
    }
}

impl std::error::Error for TombstoneError {}

/// The deleted groups of one node, and the log that keeps them.
pub struct TombstoneLog<S: DurableStorage> {
    storage: S,
    /// The log's write handle, opened (and the file created) at the first append.
    file: Option<S::File>,
    /// Whether this process has synced the log's directory entry. Not assumed at boot:
    /// a file a crashed process created is visible after the crash without its entry
    /// being durable, so each process syncs it once, with its first record.
    entry_durable: bool,
    /// Bytes of whole, durable records: where the next record goes.
    durable_bytes: u64,
    /// Whether the file may hold bytes past `durable_bytes` (a torn tail found at boot,
    /// or a failed append): the next append cuts them first.
    tail_unclean: bool,
    deleted: TombstoneSet,
    /// Records in the log from which a compaction is due (also at least four per range).
    compact_records_min: u64,
    /// Compactions this process made.
    compactions: u64,
}

impl<S: DurableStorage> fmt::Debug for TombstoneLog<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TombstoneLog")
            .field("ranges", &self.deleted.range_count())
            .field("durable_bytes", &self.durable_bytes)
            .field("tail_unclean", &self.tail_unclean)
            .finish()
    }
}

impl<S: DurableStorage> TombstoneLog<S> {
    /// Read the tombstones at boot: the older snapshot file if there is one, then the
    /// log. `reads` is `storage` with its reads retried (see `storage::read_retry`);
    /// nothing is written.
    pub fn open<R: DurableStorage>(storage: S, reads: &R) -> Result<Self, TombstoneError> {
        let mut deleted = read_legacy(reads)?;
        let opened = reads
            .open(TOMBSTONE_LOG_PATH, OpenMode::Existing)
            .now_or_never()
            .ok_or(TombstoneError::Pending(TOMBSTONE_LOG_PATH))?;
        let (durable_bytes, tail_unclean) = match opened {
            Err(error) if error.kind() == io::ErrorKind::NotFound => (0, false),
            Err(source) => {
                return Err(TombstoneError::Io {
                    path: TOMBSTONE_LOG_PATH,
                    action: "opening",
                    source,
                });
            }
            Ok(file) => {
                let bytes = record::read_to_end(&file)
                    .now_or_never()
                    .ok_or(TombstoneError::Pending(TOMBSTONE_LOG_PATH))?
                    .map_err(|source| TombstoneError::Io {
                        path: TOMBSTONE_LOG_PATH,
                        action: "reading",
                        source,
                    })?;
                let valid = scan(&bytes, &mut deleted)?;
                (valid as u64, valid < bytes.len())
            }
        };
        Ok(Self {
            storage,
            file: None,
            entry_durable: false,
            durable_bytes,
            tail_unclean,
            deleted,
            compact_records_min: TOMBSTONE_LOG_COMPACT_RECORDS_MIN,
            compactions: 0,
        })
    }

    /// Compact once the log holds `records` records (and four per range), instead of
    /// [`TOMBSTONE_LOG_COMPACT_RECORDS_MIN`]: for sweeps and tests, which reach a
    /// compaction in a few deletes.
    pub fn set_compact_records_min(&mut self, records: u64) {
        assert!(records > 0, "a log of no records needs no compaction");
        self.compact_records_min = records;
    }

    /// Whether `group` must never be opened again (it was deleted, or it is a settled
    /// id that names no group: see [`TombstoneSet`]).
    pub fn contains(&self, group: u64) -> bool {
        self.deleted.contains(group)
    }

    /// The tombstones.
    pub fn set(&self) -> &TombstoneSet {
        &self.deleted
    }

    /// Compactions this process made.
    pub fn compactions(&self) -> u64 {
        self.compactions
    }

    /// Whole records in the log.
    pub fn records(&self) -> u64 {
        self.durable_bytes / TOMBSTONE_RECORD_BYTES as u64
    }

    /// Whether the file holds bytes past its whole records (a torn tail boot found, or
    /// a failed append since): the next append cuts them.
    pub fn has_torn_tail(&self) -> bool {
        self.tail_unclean
    }

    /// Whether no group was deleted.
    pub fn is_empty(&self) -> bool {
        self.deleted.is_empty()
    }

    /// Record `group` as deleted, durably: `Ok` only once its record is synced (and the
    /// log's directory entry, the first time). The group counts as deleted in memory
    /// whatever the outcome: this process never reopens it. `settled` says which gaps
    /// around it may be filled (see [`TombstoneSet`]).
    ///
    /// A record is appended even when the set already covers `group` (a filled gap):
    /// until a compaction writes the gap, only the record makes it durable.
    ///
    /// Then, if one is due, the log is compacted; a compaction that fails is logged and
    /// leaves the old log in use, and the append's result stands.
    pub async fn append(&mut self, group: u64, settled: &dyn Settled) -> Result<(), TombstoneError> {
        self.deleted.insert(group, settled);
        let result = self.write_record(group).await;
        match &result {
            Ok(()) => {
                self.durable_bytes += TOMBSTONE_RECORD_BYTES as u64;
                self.tail_unclean = false;
            }
            Err(_) => self.tail_unclean = true,
        }
        debug_assert_eq!(self.durable_bytes % TOMBSTONE_RECORD_BYTES as u64, 0);
        if result.is_ok() && self.compaction_due() {
            self.deleted.fill_gaps(settled);
            if let Err(error) = self.compact().await {
                tracing::warn!(%error, "tombstone log compaction failed; the old log stays in use");
            }
        }
        result
    }

    fn compaction_due(&self) -> bool {
        let ranges = self.deleted.range_count() as u64;
        self.records() >= self.compact_records_min.max(ranges.saturating_mul(4))
    }

    /// Replace the log with one that holds the set's ranges (module docs).
    async fn compact(&mut self) -> Result<(), TombstoneError> {
        let io = |path: &'static str, action: &'static str| {
            move |source: io::Error| TombstoneError::Io { path, action, source }
        };
        let mut bytes = Vec::new();
        for (first, last) in self.deleted.ranges() {
            if first == last {
                bytes.extend_from_slice(&record::encode(TOMBSTONE_MAGIC, TOMBSTONE_KIND, first, &[]));
            } else {
                bytes.extend_from_slice(&record::encode(TOMBSTONE_MAGIC, RANGE_FIRST_KIND, first, &[]));
                bytes.extend_from_slice(&record::encode(TOMBSTONE_MAGIC, RANGE_LAST_KIND, last, &[]));
            }
        }
        debug_assert_eq!(bytes.len() % TOMBSTONE_RECORD_BYTES, 0);
        match self.storage.remove(TOMBSTONE_LOG_TMP_PATH).await {
            Err(error) if error.kind() != io::ErrorKind::NotFound => {
                return Err(io(TOMBSTONE_LOG_TMP_PATH, "removing a leftover")(error));
            }
            _ => {}
        }
        let file = self
            .storage
            .open(TOMBSTONE_LOG_TMP_PATH, OpenMode::CreateNew)
            .await
            .map_err(io(TOMBSTONE_LOG_TMP_PATH, "creating"))?;
        file.write_at(0, &bytes)
            .await
            .map_err(io(TOMBSTONE_LOG_TMP_PATH, "writing"))?;
        file.sync().await.map_err(io(TOMBSTONE_LOG_TMP_PATH, "syncing"))?;
        // A failed rename renamed nothing (it is one atomic step), so the old log and
        // its handle stay in use.
        self.storage
            .rename(TOMBSTONE_LOG_TMP_PATH, TOMBSTONE_LOG_PATH)
            .await
            .map_err(io(TOMBSTONE_LOG_PATH, "renaming the compacted log over"))?;
        // The name is the new file's now: appends go to it, and none is acknowledged
        // before the rename is durable (the next append syncs the directory if the sync
        // below fails).
        self.file = Some(file);
        self.durable_bytes = bytes.len() as u64;
        self.tail_unclean = false;
        self.entry_durable = false;
        self.compactions += 1;
        sync_ancestors(&self.storage, TOMBSTONE_LOG_PATH)
            .await
            .map_err(io(TOMBSTONE_LOG_PATH, "syncing the directory after a compaction"))?;
        self.entry_durable = true;
        Ok(())
    }

    async fn write_record(&mut self, group: u64) -> Result<(), TombstoneError> {
        let io = |action: &'static str| {
            move |source: io::Error| TombstoneError::Io {
                path: TOMBSTONE_LOG_PATH,
                action,
                source,
            }
        };
        if self.file.is_none() {
            let file = self
                .storage
                .open(TOMBSTONE_LOG_PATH, OpenMode::CreateOrOpen)
                .await
                .map_err(io("opening"))?;
            self.file = Some(file);
        }
        let file = self.file.as_ref().expect("opened above");
        if self.tail_unclean {
            file.truncate(self.durable_bytes)
                .await
                .map_err(io("cutting the torn tail"))?;
        }
        let bytes = record::encode(TOMBSTONE_MAGIC, TOMBSTONE_KIND, group, &[]);
        debug_assert_eq!(bytes.len(), TOMBSTONE_RECORD_BYTES);
        file.write_at(self.durable_bytes, &bytes).await.map_err(io("writing"))?;
        file.sync().await.map_err(io("syncing"))?;
        if !self.entry_durable {
            sync_ancestors(&self.storage, TOMBSTONE_LOG_PATH)
                .await
                .map_err(io("syncing the directory"))?;
            self.entry_durable = true;
        }
        Ok(())
    }
}

/// The group ids of the older snapshot file, if there is one.
fn read_legacy<R: DurableStorage>(reads: &R) -> Result<TombstoneSet, TombstoneError> {
    let pending = || TombstoneError::Pending(LEGACY_DELETED_PATH);
    // Its `.tmp` (an older build's write cut short) is left alone: nothing reads it, and
    // not looking keeps boot's storage calls as they were (one per file).
    let snapshot = read_snapshot(reads, LEGACY_DELETED_PATH)
        .now_or_never()
        .ok_or_else(pending)?
        .map_err(|error| TombstoneError::Legacy(error.to_string()))?;
    let Some(snapshot) = snapshot else {
        return Ok(TombstoneSet::new());
    };
    if snapshot.bytes.len() % 8 != 0 {
        return Err(TombstoneError::Legacy(format!(
            "{} bytes is not a whole number of 8-byte group ids",
            snapshot.bytes.len()
        )));
    }
    let mut deleted = TombstoneSet::new();
    for chunk in snapshot.bytes.chunks_exact(8) {
        let group = u64::from_le_bytes(chunk.try_into().expect("chunks of 8 bytes"));
        deleted.insert_range(group, group);
    }
    Ok(deleted)
}

/// Add the ids of every whole record of `bytes` to `deleted`; returns the bytes of
/// whole records before the first that does not decode (or a range's first record
/// whose last does not follow), if nothing valid follows it (a torn tail, or zeros
/// where nothing was written).
fn scan(bytes: &[u8], deleted: &mut TombstoneSet) -> Result<usize, TombstoneError> {
    let mut at = 0;
    while at < bytes.len() {
        let reason = match decode(&bytes[at..]) {
            Ok((TOMBSTONE_KIND, group)) => {
                deleted.insert_range(group, group);
                at += TOMBSTONE_RECORD_BYTES;
                continue;
            }
            Ok((RANGE_FIRST_KIND, first)) => match bytes.get(at + TOMBSTONE_RECORD_BYTES..).map(decode) {
                Some(Ok((RANGE_LAST_KIND, last))) if last >= first => {
                    deleted.insert_range(first, last);
                    at += 2 * TOMBSTONE_RECORD_BYTES;
                    continue;
                }
                Some(Ok((kind, key))) => {
                    format!(
                        "a range from {first:#x} followed by a record of kind {kind} with key {key:#x}, not its last id"
                    )
                }
                Some(Err(reason)) => format!("a range from {first:#x} whose last id does not decode ({reason})"),
                None => format!("a range from {first:#x} whose last id is missing"),
            },
            Ok((kind, key)) => format!("a record of kind {kind} with key {key:#x} outside a range"),
            Err(reason) => reason,
        };
        // Damage: a tail only if nothing valid comes after it. Records are written whole
        // at multiples of their size, so only those offsets can hold one.
        let later = (at + TOMBSTONE_RECORD_BYTES..bytes.len())
            .step_by(TOMBSTONE_RECORD_BYTES)
            .any(|offset| decode(&bytes[offset..]).is_ok());
        if later {
            return Err(TombstoneError::Damaged {
                offset: at as u64,
                reason,
            });
        }
        break;
    }
    Ok(at)
}

/// The kind and key of the record at the start of `bytes`, or why it is not a
/// tombstone record.
fn decode(bytes: &[u8]) -> Result<(u8, u64), String> {
    let record = record::decode(TOMBSTONE_MAGIC, bytes).map_err(|error: RecordError| error.to_string())?;
    if !matches!(record.kind, TOMBSTONE_KIND | RANGE_FIRST_KIND | RANGE_LAST_KIND) || !record.payload.is_empty() {
        return Err(format!(
            "a record of kind {} with {} payload bytes, not a tombstone (kinds {TOMBSTONE_KIND} to \
             {RANGE_LAST_KIND}, no payload)",
            record.kind,
            record.payload.len()
        ));
    }
    Ok((record.kind, record.key))
}

#[cfg(test)]
mod tests;
