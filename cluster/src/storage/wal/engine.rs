//! The record-log engine under the metadata WAL and the partition WAL: record kinds
//! and their validation, the boot scan, the redo file that protects rewrites, the
//! prefix drop that forgets the records a checkpoint covers (copy the rest to
//! `<path>.next`, sync, rename, sync the directory), and [`RecordLog`], one file of
//! records with strictly increasing ops written through one handle. See [`super`] for
//! the format and the rules.

mod prefix_drop;
mod records;

use std::collections::BTreeMap;
use std::io;
use std::ops::Bound;

use super::{DamagedRange, InterruptedRewrite, WalError, sync_ancestors};
use crate::seam::{DurableFile, DurableStorage, OpenMode};
use crate::storage::record::{self, RECORD_HEADER_BYTES};
use crate::vsr::store::StoredRecord;
use crate::wire::Checksums;
pub use prefix_drop::PrefixDrop;
use prefix_drop::SuffixMemo;
#[cfg(test)]
pub(crate) use records::scan;
pub(crate) use records::scan_with;
use records::{Content, TOMBSTONE, content_of, encode_content, parse_content};

/// Magic of redo-file records ("REDO").
const REDO_MAGIC: u32 = 0x5245_444F;

/// Record kind: a whole prepare frame.
pub(crate) const KIND_PREPARE: u8 = 1;
/// Record kind: a header without its body.
pub(crate) const KIND_HEADER: u8 = 2;
/// Record kind: an op removed in place.
pub(crate) const KIND_REMOVED: u8 = 3;

const REDO_KIND_BEGIN: u8 = 1;
const REDO_KIND_CHUNK: u8 = 2;

/// Largest single write an append batch issues, in bytes: appends are encoded into a
/// buffer flushed at this size, so memory stays bounded however many records a batch
/// holds; one sync afterwards covers every write of the batch.
pub const WAL_WRITE_BYTES_MAX: usize = 1024 * 1024;

/// Ops just below a record written above a gap (appended, or inserted by repair) get
/// a placeholder each, at most this many: a removed record (kind 3) whose payload
/// reserves room for a prepare, so the op's record fits in place when it comes. A
/// backup journals prepares as they arrive and repair fills what it missed from the
/// top down (each op is proven by the one above it); without a slot to fill, every
/// filled op moved all the records above it (a rewrite of the whole suffix, through the
/// redo file), a cost quadratic in the gap: a replica catching up after a restart
/// spent most of a run's time there. With placeholders, one move makes room for this
/// many ops: a journal's worth (`JOURNAL_SLOTS_DEFAULT`), since a backup never holds a
/// gap wider than its journal; [`GAP_RESERVED_BYTES_MAX`] bounds the bytes.
pub const GAP_RESERVED_OPS_MAX: u64 = 1024;

/// Payload bytes a placeholder reserves at least (2 KiB), or as many as the record
/// written above the gap if that is larger: neighbouring prepares are alike in size,
/// and most prepares fit in 2 KiB; one that does not moves the suffix as before.
///
/// What a smaller record leaves of its placeholder is padding until the next prefix
/// drop (a backup's partition WALs on `--plane partition --faults none --ticks 100000`
/// held 5.4-7.5 MB for 3.5 MB of records). 512 cut that to 3.6-4.8 MB and the run's
/// peak memory by 4 MB (38 to 33 MB, seeds 1-3), but it cost 8.6% more instructions
/// (more fills outgrow their slot and take a window or move the suffix), so 2 KiB
/// stays: the trade is memory against time, nothing else.
///
/// A fill dropped whole by a lying disk leaves its placeholder, valid, at any size
/// (the `metadata-wal-gap-fill` sweep's case `27:torn-silent:process:off` meets it at
/// 512): recovery cannot tell it from an unfilled one, so the replica store treats a
/// vacant slot above its commit point as an op it may have acknowledged (see
/// `node::durable_stores`).
pub const GAP_RESERVED_PAYLOAD_MIN_BYTES: usize = 2048;

/// Placeholder bytes one gap reserves at most (1 MiB): below a large prepare, fewer ops
/// are reserved rather than megabytes that repair may never fill. Measured on the
/// partition plane (a restarted replica refilling 530 ops): 1 MiB left 11 moves, 256
/// KiB 66; what a filled placeholder leaves unused stays until the next prefix drop.
pub const GAP_RESERVED_BYTES_MAX: usize = 1024 * 1024;

/// The placeholders to write just below `op`, whose nearest lower slot is `below`
/// (`None`: the log holds nothing below it), for a record reserving `reserve` payload
/// bytes: their ops (at most [`GAP_RESERVED_OPS_MAX`] and [`GAP_RESERVED_BYTES_MAX`];
/// op 0 is never one) and the payload each reserves (as much as the record, at least
/// [`GAP_RESERVED_PAYLOAD_MIN_BYTES`]).
fn gap_placeholders(below: Option<u64>, op: u64, reserve: usize) -> (std::ops::Range<u64>, usize) {
    let payload = reserve.max(GAP_RESERVED_PAYLOAD_MIN_BYTES);
    let lowest = below.map_or(1, |below| below + 1);
    if op <= lowest {
        return (op..op, payload);
    }
    let per_op = (RECORD_HEADER_BYTES + payload) as u64;
    let count = (op - lowest)
        .min(GAP_RESERVED_OPS_MAX)
        .min(GAP_RESERVED_BYTES_MAX as u64 / per_op);
    (op - count..op, payload)
}

/// A placeholder's content: a removed op whose payload reserves `payload` bytes.
const fn placeholder(payload: usize) -> Content<'static> {
    Content {
        kind: KIND_REMOVED,
        bytes: &[],
        reserve: payload,
    }
}

/// Largest rewrite (a replaced or inserted record plus every record after it), in
/// bytes. A rewrite holds these bytes in memory and writes them twice (redo, then in
/// place); inserts land near the head (repair of recent gaps), so this is far above a
/// normal rewrite, and a larger one is refused with an error rather than exhausting
/// memory.
pub const REWRITE_BYTES_MAX: usize = 64 * 1024 * 1024;

/// Bytes a prefix drop may copy per byte it drops, at most: a drop rewrites the records
/// it keeps into a new file, so it runs only once the prefix it would drop is at least
/// as large as the suffix it must copy. Every byte is then copied at most once per byte
/// dropped before it (amortized, at most one extra write per byte appended) and the
/// file stays within twice what it must hold.
pub const PREFIX_DROP_COPIED_PER_DROPPED_BYTE_MAX: u64 = 1;

/// Suffix of the file a prefix drop writes the kept records to before renaming it over
/// the log.
pub const NEXT_SUFFIX: &str = ".next";

/// Bytes of rewrite payload per redo record, in bytes: well under
/// [`record::RECORD_PAYLOAD_BYTES_MAX`], so any rewrite splits into valid records.
const REDO_CHUNK_BYTES: usize = 1024 * 1024;

/// Where one op's record lies in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    pub(crate) offset: u64,
    pub(crate) bytes: u64,
    /// A removed record (a placeholder or a removed op): its bytes may be re-divided
    /// among a record written below it (see [`RecordLog::vacant_window`]).
    pub(crate) vacant: bool,
}

/// Vacant slots a record that outgrew its own placeholder may take room from, at most:
/// a bound on the work of looking, far above the few neighbours a prepare a little
/// larger than its neighbour's size needs.
const VACANT_WINDOW_SLOTS_MAX: usize = 64;

/// A run of slots a record that outgrew its own takes over (see
/// [`RecordLog::vacant_window`]).
struct VacantWindow {
    /// Offset of its first byte.
    start: u64,
    /// Its length, bytes.
    bytes: u64,
    /// Vacant ops taken below the record's, ascending.
    below: Vec<u64>,
    /// Vacant ops taken above the record's, ascending.
    above: Vec<u64>,
}

/// Where one rewrite lands (see [`RecordLog::rewrite`]).
enum Placement {
    /// In the op's own slot, which holds the record.
    Slot(Slot),
    /// In the op's slot and vacant slots next to it, re-divided.
    Window(VacantWindow),
    /// From `start` (the end of the record below the op) to the new end of the file,
    /// moving every record above the op.
    Move {
        /// First byte written.
        start: u64,
    },
}

impl Placement {
    /// The first byte the rewrite writes.
    fn start(&self) -> u64 {
        match self {
            Placement::Slot(slot) => slot.offset,
            Placement::Window(window) => window.start,
            Placement::Move { start } => *start,
        }
    }
}

/// The ops strictly above `op`.
fn above_op(op: u64) -> (Bound<u64>, Bound<u64>) {
    (Bound::Excluded(op), Bound::Unbounded)
}

/// A rewrite's new bytes, as the redo file holds them.
struct Redo {
    offset: u64,
    old_len: u64,
    new_len: u64,
    bytes: Vec<u8>,
}

fn encode_redo(offset: u64, old_len: u64, new_len: u64, bytes: &[u8]) -> Vec<u8> {
    let mut begin = Vec::with_capacity(40);
    for value in [old_len, new_len, bytes.len() as u64] {
        begin.extend_from_slice(&value.to_le_bytes());
    }
    begin.extend_from_slice(&record::checksum(bytes).to_le_bytes());
    let chunks = bytes.len().div_ceil(REDO_CHUNK_BYTES);
    let mut out = Vec::with_capacity(bytes.len() + (chunks + 1) * RECORD_HEADER_BYTES + begin.len());
    record::encode_into(&mut out, REDO_MAGIC, REDO_KIND_BEGIN, offset, &begin);
    for (index, chunk) in bytes.chunks(REDO_CHUNK_BYTES).enumerate() {
        record::encode_into(&mut out, REDO_MAGIC, REDO_KIND_CHUNK, index as u64, chunk);
    }
    out
}

/// The redo in `bytes`: `Ok(None)` if there is none, `Err` if it is incomplete.
fn decode_redo(bytes: &[u8]) -> Result<Option<Redo>, String> {
    let begin = match record::decode(REDO_MAGIC, bytes) {
        Err(record::RecordError::End) => return Ok(None),
        Err(error) => return Err(format!("redo header at offset 0: {error}")),
        Ok(begin) if begin.kind != REDO_KIND_BEGIN || begin.payload.len() != 40 => {
            return Err(format!(
                "redo header at offset 0 has kind {} and {} bytes",
                begin.kind,
                begin.payload.len()
            ));
        }
        Ok(begin) => begin,
    };
    let field = |at: usize| {
        let mut raw = [0; 8];
        raw.copy_from_slice(&begin.payload[at..at + 8]);
        u64::from_le_bytes(raw)
    };
    let (old_len, new_len, len) = (field(0), field(8), field(16));
    let mut sum = [0; 16];
    sum.copy_from_slice(&begin.payload[24..40]);
    // A move rewrites through the end of the file (its bytes end at the new length);
    // a rewrite in place (a slot, or a slot and the vacant ones next to it) ends at or
    // before it. Decoding required the first only, so the redo of an in-place rewrite
    // in the middle of the file was discarded at boot and a crash in the middle of
    // that rewrite left the slot torn (found by `wal_insert_interrupted_at_every_step_
    // loses_nothing_durable` once gap placeholders made such rewrites common).
    // In place, the length does not change.
    let end = begin.key.checked_add(len);
    if len > REWRITE_BYTES_MAX as u64
        || end.is_none_or(|end| end > new_len || (end < new_len && new_len != old_len))
        || new_len > record::READ_TO_END_BYTES_MAX
    {
        return Err(format!(
            "redo of {len} bytes at offset {} does not fit the length {new_len} it leaves (was {old_len})",
            begin.key
        ));
    }
    let mut out = Vec::with_capacity(len as usize);
    let mut position = begin.encoded_bytes();
    let mut index = 0;
    while (out.len() as u64) < len {
        let chunk = record::decode(REDO_MAGIC, &bytes[position.min(bytes.len())..])
            .map_err(|error| format!("redo chunk {index} at offset {position}: {error}"))?;
        if chunk.kind != REDO_KIND_CHUNK || chunk.key != index {
            return Err(format!("redo record at offset {position} is not chunk {index}"));
        }
        out.extend_from_slice(chunk.payload);
        position += chunk.encoded_bytes();
        index += 1;
    }
    if out.len() as u64 != len || record::checksum(&out) != u128::from_le_bytes(sum) {
        return Err("redo bytes do not match their checksum".to_owned());
    }
    Ok(Some(Redo {
        offset: begin.key,
        old_len,
        new_len,
        bytes: out,
    }))
}

/// Where a rewrite went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Rewrite {
    /// First byte rewritten.
    pub(crate) start: u64,
    /// The file's length after it.
    pub(crate) new_len: u64,
}

/// A log of records with strictly increasing ops on one file, written through one
/// handle: the engine under [`super::Wal`] and the partition WAL.
pub(crate) struct RecordLog<S: DurableStorage> {
    storage: S,
    path: String,
    magic: u32,
    file: S::File,
    redo: S::File,
    /// The redo may hold a rewrite not yet cleared ([`RecordLog::clear_redo`]). Between
    /// calls it is clear unless the log is poisoned; a prefix drop refuses to run
    /// while it is not, since boot would replay it at the old file's offsets.
    redo_pending: bool,
    /// Boot removed a `.next` file: a prefix drop a crash interrupted before its rename.
    removed_leftover_next: bool,
    slots: BTreeMap<u64, Slot>,
    /// What the last [`RecordLog::prefix_plan`] summed, kept current by appends and
    /// forgotten by every other change to `slots` (see [`SuffixMemo`]).
    suffix_memo: Option<SuffixMemo>,
    /// Bytes written (the next append's offset).
    end: u64,
    /// Bytes known durable as they are now: everything below was synced after its
    /// last write.
    synced: u64,
    poisoned: Option<String>,
    /// Whether reads verify checksums (always, but for a test-only storage break).
    checksums: Checksums,
    /// Ops at or below this one are covered by a durable checkpoint, so no record of
    /// theirs will be asked for again: no placeholder reserves room for them (see
    /// [`RecordLog::raise_gap_floor`]).
    gap_floor: u64,
}

impl<S: DurableStorage> RecordLog<S> {
    /// Verify checksums on reads or not (see [`Checksums`]): for a test-only break.
    pub(crate) fn set_checksums(&mut self, checksums: Checksums) {
        self.checksums = checksums;
    }

    /// No placeholder reserves room for `op` or any op below it from now on: a durable
    /// checkpoint covers them. Without this, a replica that installed a peer's
    /// checkpoint at op C and then journaled op C+1 into an empty log reserved up to
    /// [`GAP_RESERVED_BYTES_MAX`] of placeholders for ops below C that never come (seen:
    /// a replica's metadata WAL at 1.2 MB, 0.15 MB with the floor, in a 100,000-tick
    /// partition-plane run without faults). Reserving is only an
    /// optimisation, so a record that does come below the floor is still written (by
    /// a move, as without placeholders). Never lowers the floor.
    pub(crate) fn raise_gap_floor(&mut self, op: u64) {
        self.gap_floor = self.gap_floor.max(op);
    }

    /// Open (creating if missing) `path` and its redo file, remove what an interrupted
    /// prefix drop left (`<path>.next`, never renamed into place, so never the log), and
    /// roll an interrupted rewrite forward. The redo is left in place until
    /// [`RecordLog::clear_redo`], so a caller can first make what depends on it durable.
    /// Slots are empty until [`RecordLog::adopt`].
    pub(crate) async fn open(
        storage: &S,
        path: &str,
        magic: u32,
    ) -> Result<(Self, Option<InterruptedRewrite>), WalError> {
        let redo_path = format!("{path}.redo");
        let io_error = |path: &str, action| {
            let path = path.to_owned();
            move |source| WalError::Io { path, action, source }
        };
        let file = storage
            .open(path, OpenMode::CreateOrOpen)
            .await
            .map_err(io_error(path, "opening"))?;
        let redo = storage
            .open(&redo_path, OpenMode::CreateOrOpen)
            .await
            .map_err(io_error(&redo_path, "opening"))?;
        sync_ancestors(storage, path)
            .await
            .map_err(io_error(path, "syncing the directory"))?;
        // A `.next` is a prefix drop's new file that a crash stopped before its rename:
        // the log at `path` is still the whole old one. Its removal need not be durable;
        // a removal a power loss undoes is repeated at the next boot.
        let next_path = format!("{path}{NEXT_SUFFIX}");
        let removed_leftover_next = match storage.remove(&next_path).await {
            Ok(()) => true,
            Err(error) if error.kind() == io::ErrorKind::NotFound => false,
            Err(source) => {
                return Err(WalError::Io {
                    path: next_path,
                    action: "removing an interrupted prefix drop's leftover",
                    source,
                });
            }
        };
        if removed_leftover_next {
            tracing::info!(path = %next_path, "removed the leftover of a prefix drop a crash interrupted");
        }
        let redo_bytes = record::read_to_end(&redo)
            .await
            .map_err(io_error(&redo_path, "reading"))?;
        let interrupted = match decode_redo(&redo_bytes) {
            Ok(None) => None,
            Ok(Some(found)) => {
                file.write_at(found.offset, &found.bytes)
                    .await
                    .map_err(io_error(path, "replaying a rewrite"))?;
                file.truncate(found.new_len)
                    .await
                    .map_err(io_error(path, "replaying a rewrite"))?;
                file.sync()
                    .await
                    .map_err(io_error(path, "syncing a replayed rewrite"))?;
                Some(InterruptedRewrite::Replayed {
                    offset: found.offset,
                    old_len: found.old_len,
                    new_len: found.new_len,
                })
            }
            Err(reason) => Some(InterruptedRewrite::Discarded { reason }),
        };
        let end = file.len().await.map_err(io_error(path, "reading the length"))?;
        let log = Self {
            storage: storage.clone(),
            path: path.to_owned(),
            magic,
            file,
            redo,
            redo_pending: interrupted.is_some(),
            removed_leftover_next,
            slots: BTreeMap::new(),
            suffix_memo: None,
            end,
            synced: 0,
            poisoned: None,
            checksums: Checksums::Verify,
            gap_floor: 0,
        };
        Ok((log, interrupted))
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    fn io_error(&self, action: &'static str) -> impl FnOnce(io::Error) -> WalError + '_ {
        move |source| WalError::Io {
            path: self.path.clone(),
            action,
            source,
        }
    }

    /// Record a failed write or sync: every later mutation is refused.
    pub(crate) fn poison(&mut self, error: WalError) -> WalError {
        if self.poisoned.is_none() {
            self.poisoned = Some(error.to_string());
        }
        error
    }

    /// The first failed write or sync, if any.
    pub(crate) fn poisoned(&self) -> Option<&str> {
        self.poisoned.as_deref()
    }

    /// Refuse to go on after a failed write or sync.
    pub(crate) fn check_poisoned(&self) -> Result<(), WalError> {
        match &self.poisoned {
            Some(cause) => Err(WalError::Poisoned {
                path: self.path.clone(),
                cause: cause.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Run a mutation, poisoning the log if it fails.
    fn mutate<T>(&mut self, result: Result<T, WalError>) -> Result<T, WalError> {
        result.map_err(|error| self.poison(error))
    }

    /// The whole file (boot reads it once).
    pub(crate) async fn read_all(&self) -> Result<Vec<u8>, WalError> {
        record::read_to_end(&self.file).await.map_err(self.io_error("reading"))
    }

    /// Cut the file to `len` bytes and sync the cut (boot: a torn tail, or bytes past a
    /// published frontier).
    pub(crate) async fn cut(&mut self, len: u64) -> Result<(), WalError> {
        self.check_poisoned()?;
        let result = async {
            self.file.truncate(len).await.map_err(self.io_error("truncating"))?;
            self.file.sync().await.map_err(self.io_error("syncing"))
        }
        .await;
        self.mutate(result)?;
        self.suffix_memo = None;
        self.slots.retain(|_, slot| slot.offset + slot.bytes <= len);
        self.end = len;
        self.synced = len;
        Ok(())
    }

    /// Take the slots a scan found.
    pub(crate) fn adopt(&mut self, slots: BTreeMap<u64, Slot>) {
        self.suffix_memo = None;
        self.slots = slots;
    }

    /// Drop the redo file's contents (after whatever depends on the rewrite is durable).
    pub(crate) async fn clear_redo(&mut self) -> Result<(), WalError> {
        self.check_poisoned()?;
        let path = format!("{}.redo", self.path);
        let result = async {
            self.redo.truncate(0).await?;
            self.redo.sync().await
        }
        .await
        .map_err(|source| WalError::Io {
            path,
            action: "clearing",
            source,
        });
        self.mutate(result)?;
        self.redo_pending = false;
        Ok(())
    }

    /// Whether boot removed the leftover of a prefix drop a crash interrupted.
    pub(crate) fn removed_leftover_next(&self) -> bool {
        self.removed_leftover_next
    }

    /// Bytes written.
    pub(crate) fn end(&self) -> u64 {
        self.end
    }

    /// Bytes known durable.
    pub(crate) fn synced(&self) -> u64 {
        self.synced
    }

    /// The op placeholders for a record above `below` (its nearest lower slot, if any)
    /// start after: that slot, or the gap floor if it is higher (`Some(0)` and `None`
    /// both start placeholders at op 1, so a floor of 0 changes nothing).
    fn floor_of(&self, below: Option<u64>) -> Option<u64> {
        below.max(Some(self.gap_floor))
    }

    /// The highest op in the log (0 if empty).
    pub(crate) fn last_op(&self) -> u64 {
        self.slots.keys().next_back().copied().unwrap_or(0)
    }

    /// Ops with a slot (removed ops included).
    pub(crate) fn slots(&self) -> &BTreeMap<u64, Slot> {
        &self.slots
    }

    /// Ops whose slot holds no record, ascending: a removed op or a gap placeholder.
    /// Either may have been filled in place since (repair writes an op's record over
    /// its slot), and a lying disk can drop that write whole, leaving the vacant slot
    /// intact: so after a restart a vacant slot proves nothing about whether this
    /// replica acknowledged its op (see `node::durable_stores`).
    pub(crate) fn vacant_ops(&self) -> impl Iterator<Item = u64> + '_ {
        self.slots.iter().filter(|(_, slot)| slot.vacant).map(|(&op, _)| op)
    }

    /// Append records (buffered): ops strictly above every op in the log and each other.
    pub(crate) async fn append(&mut self, records: &[(u64, &StoredRecord)]) -> Result<(), WalError> {
        self.check_poisoned()?;
        let mut last = self.slots.keys().next_back().copied();
        let mut contents = Vec::with_capacity(records.len());
        for &(op, record) in records {
            if let Some(last_op) = last
                && op <= last_op
            {
                return Err(WalError::OutOfOrder {
                    path: self.path.clone(),
                    op,
                    last_op,
                });
            }
            let content = content_of(op, record)?;
            let (placeholders, payload) = gap_placeholders(self.floor_of(last), op, content.reserve);
            contents.extend(placeholders.map(|below| (below, placeholder(payload))));
            last = Some(op);
            contents.push((op, content));
        }
        // Sized once for the batch (up to one write's worth): grown record by record,
        // the buffer was reallocated and copied several times per append.
        let batch_bytes: usize = contents
            .iter()
            .map(|(_, content)| RECORD_HEADER_BYTES + content.reserve)
            .sum();
        let mut buffer = Vec::with_capacity(batch_bytes.min(WAL_WRITE_BYTES_MAX));
        let mut offset = self.end;
        let mut placed = Vec::with_capacity(contents.len());
        for (index, (op, content)) in contents.iter().enumerate() {
            let before = buffer.len();
            encode_content(&mut buffer, self.magic, *op, content, content.reserve);
            placed.push((
                *op,
                Slot {
                    offset: offset + before as u64,
                    bytes: (buffer.len() - before) as u64,
                    vacant: content.kind == KIND_REMOVED,
                },
            ));
            if buffer.len() >= WAL_WRITE_BYTES_MAX || index + 1 == contents.len() {
                let result = self
                    .file
                    .write_at(offset, &buffer)
                    .await
                    .map_err(self.io_error("appending"));
                self.mutate(result)?;
                offset += buffer.len() as u64;
                buffer.clear();
            }
        }
        if let Some(memo) = &mut self.suffix_memo {
            // Appended ops are above every op held, so above the memo's too.
            memo.kept_bytes += placed.iter().map(|(_, slot)| slot.bytes).sum::<u64>();
        }
        self.slots.extend(placed);
        self.end = offset;
        Ok(())
    }

    /// Make everything written durable, through the handle that wrote it.
    pub(crate) async fn sync(&mut self) -> Result<(), WalError> {
        self.check_poisoned()?;
        if self.synced == self.end {
            return Ok(());
        }
        let result = self.file.sync().await.map_err(self.io_error("syncing"));
        self.mutate(result)?;
        self.synced = self.end;
        Ok(())
    }

    /// Forget every op above `op`: cut the file after the last record kept, synced.
    pub(crate) async fn truncate_after(&mut self, op: u64) -> Result<(), WalError> {
        self.cut(self.cut_after(op)).await
    }

    /// Where a truncation after `op` would cut the file.
    pub(crate) fn cut_after(&self, op: u64) -> u64 {
        self.slots
            .range(..=op)
            .next_back()
            .map_or(0, |(_, slot)| slot.offset + slot.bytes)
    }

    /// Where putting `record` at `op` (removing it if `None`) would start writing, and
    /// whether it stays within bytes the log already has (its own slot, or its slot and
    /// vacant slots just above it, see [`Self::vacant_window`]) instead of moving every
    /// record above it; `None` if there is nothing to do (removing an op the log does
    /// not hold).
    pub(crate) fn rewrite_start(
        &self,
        op: u64,
        record: Option<&StoredRecord>,
    ) -> Result<Option<(u64, bool)>, WalError> {
        let reserve = match record {
            Some(record) => content_of(op, record)?.reserve,
            None if self.slots.contains_key(&op) => 0,
            None => return Ok(None),
        };
        let placement = self.placement(op, record.is_some(), reserve);
        Ok(Some((placement.start(), !matches!(placement, Placement::Move { .. }))))
    }

    /// Where a record of `reserve` payload bytes (a removal if not `is_record`) at `op`
    /// lands: in its slot, in its slot and vacant ones next to it, or by a move.
    fn placement(&self, op: u64, is_record: bool, reserve: usize) -> Placement {
        if let Some(&slot) = self.slots.get(&op) {
            if is_record && let Some(window) = self.vacant_window(op, reserve) {
                return Placement::Window(window);
            }
            if (RECORD_HEADER_BYTES + reserve) as u64 <= slot.bytes {
                return Placement::Slot(slot);
            }
        }
        let start = self
            .slots
            .range(..op)
            .next_back()
            .map_or(0, |(_, slot)| slot.offset + slot.bytes);
        Placement::Move { start }
    }

    /// For a record of `reserve` payload bytes at `op`, whose slot is too small: the
    /// vacant slots next to it (contiguous, below it first, since repair fills a gap
    /// from the top down and leaves the ops below vacant; then above; at most
    /// [`VACANT_WINDOW_SLOTS_MAX`]) whose bytes, added to the slot's, hold the record
    /// and still a placeholder for each of those ops. Returns the window: its first
    /// byte, its length, and the ops taken below and above `op`, ascending.
    ///
    /// A record that fits its slot takes the slot whole: its spare bytes are padding
    /// until the next prefix drop. Handing them to the vacant neighbour below instead
    /// (as this once did) moved the spare down along with a top-down fill, but the
    /// same spare was left over at the bottom of the gap, and every fill rewrote the
    /// grown neighbour too: on `--plane partition --faults none --ticks 100000`, the
    /// same WAL bytes at the end (7.59 MB on the restarted replica, seed 1) for 16.6 MB
    /// of protected fill rewrites instead of 6.4 MB, and 1.6-3.2% more instructions
    /// (seeds 1-3).
    fn vacant_window(&self, op: u64, reserve: usize) -> Option<VacantWindow> {
        let slot = *self.slots.get(&op)?;
        let need = (RECORD_HEADER_BYTES + reserve) as u64;
        if need <= slot.bytes {
            return None;
        }
        let fits = |start: u64, end: u64, taken: usize| end - start >= need + (taken * RECORD_HEADER_BYTES) as u64;
        let (mut start, mut end) = (slot.offset, slot.offset + slot.bytes);
        let mut below = Vec::new();
        for (&op_below, next) in self.slots.range(..op).rev().take(VACANT_WINDOW_SLOTS_MAX) {
            if !next.vacant || next.offset + next.bytes != start {
                break;
            }
            below.push(op_below);
            start = next.offset;
            if fits(start, end, below.len()) {
                below.reverse();
                return Some(VacantWindow {
                    start,
                    bytes: end - start,
                    below,
                    above: Vec::new(),
                });
            }
        }
        below.reverse();
        let mut above = Vec::new();
        for (&op_above, next) in self
            .slots
            .range(above_op(op))
            .take(VACANT_WINDOW_SLOTS_MAX - below.len())
        {
            if !next.vacant || next.offset != end {
                return None;
            }
            above.push(op_above);
            end += next.bytes;
            if fits(start, end, below.len() + above.len()) {
                return Some(VacantWindow {
                    start,
                    bytes: end - start,
                    below,
                    above,
                });
            }
        }
        None
    }

    /// Put `record` at `op` (or remove `op` if `None`), wherever it falls: in place if
    /// it fits `op`'s slot or that slot with vacant ones above it (the record, then
    /// smaller placeholders for those ops, in the same bytes), else rewriting from the
    /// end of the record before it (with placeholders for the gap below `op`, see
    /// [`GAP_RESERVED_OPS_MAX`]). With `protect`, the new bytes go to the redo file
    /// (synced) first and the log is synced after, and the redo stays until
    /// [`RecordLog::clear_redo`]; without, the rewrite is buffered like an append (for
    /// bytes nobody trusts yet).
    pub(crate) async fn rewrite(
        &mut self,
        op: u64,
        record: Option<&StoredRecord>,
        protect: bool,
    ) -> Result<Option<Rewrite>, WalError> {
        self.check_poisoned()?;
        let content = match record {
            Some(record) => content_of(op, record)?,
            None if self.slots.contains_key(&op) => TOMBSTONE,
            None => return Ok(None),
        };
        let placement = self.placement(op, record.is_some(), content.reserve);
        let (start, in_place) = (placement.start(), !matches!(placement, Placement::Move { .. }));
        let mut bytes;
        // Where the records written land, in order (op, bytes, vacant): every record
        // the rewrite writes.
        let mut placed: Vec<(u64, u64, bool)> = Vec::new();
        match placement {
            Placement::Slot(slot) => {
                debug_assert!((RECORD_HEADER_BYTES + content.reserve) as u64 <= slot.bytes);
                let payload_len = slot.bytes as usize - RECORD_HEADER_BYTES;
                bytes = Vec::with_capacity(slot.bytes as usize);
                encode_content(&mut bytes, self.magic, op, &content, payload_len);
                placed.push((op, slot.bytes, record.is_none()));
            }
            Placement::Window(window) => {
                // The record exactly, the rest of the window shared among the taken
                // ops' placeholders (the last one written takes the remainder).
                let record_bytes = (RECORD_HEADER_BYTES + content.reserve) as u64;
                let taken = (window.below.len() + window.above.len()) as u64;
                let spare = window.bytes - record_bytes - taken * RECORD_HEADER_BYTES as u64;
                let share = spare / taken;
                let mut shares = (0..taken).map(|index| {
                    if index + 1 == taken {
                        spare - share * (taken - 1)
                    } else {
                        share
                    }
                });
                bytes = Vec::with_capacity(window.bytes as usize);
                let mut vacant = |bytes: &mut Vec<u8>, placed: &mut Vec<(u64, u64, bool)>, taken_op: u64| {
                    let payload = shares.next().unwrap_or(0) as usize;
                    let at = bytes.len();
                    encode_content(bytes, self.magic, taken_op, &placeholder(payload), payload);
                    placed.push((taken_op, (bytes.len() - at) as u64, true));
                };
                for &below in &window.below {
                    vacant(&mut bytes, &mut placed, below);
                }
                encode_content(&mut bytes, self.magic, op, &content, content.reserve);
                placed.push((op, record_bytes, record.is_none()));
                for &above in &window.above {
                    vacant(&mut bytes, &mut placed, above);
                }
                debug_assert_eq!(bytes.len() as u64, window.bytes);
                crate::cover!(WalVacantWindowTaken);
            }
            Placement::Move { .. } => {
                let suffix: u64 = self
                    .slots
                    .range(op.saturating_add(1)..)
                    .map(|(_, slot)| slot.bytes)
                    .sum();
                let below = self.slots.range(..op).next_back().map(|(&below, _)| below);
                let (placeholders, payload) = if record.is_some() {
                    gap_placeholders(self.floor_of(below), op, content.reserve)
                } else {
                    (op..op, 0)
                };
                let reserved = (placeholders.end - placeholders.start) * (RECORD_HEADER_BYTES + payload) as u64;
                let total = reserved + (RECORD_HEADER_BYTES + content.reserve) as u64 + suffix;
                if op == u64::MAX || total > REWRITE_BYTES_MAX as u64 {
                    return Err(WalError::RewriteTooLarge {
                        path: self.path.clone(),
                        op,
                        bytes: total,
                    });
                }
                // Sized once: the suffix can be hundreds of records, and growing the
                // buffer record by record copied it over and over.
                bytes = Vec::with_capacity(total as usize);
                for below in placeholders.clone() {
                    let at = bytes.len();
                    encode_content(&mut bytes, self.magic, below, &placeholder(payload), payload);
                    placed.push((below, (bytes.len() - at) as u64, true));
                }
                let at = bytes.len();
                encode_content(&mut bytes, self.magic, op, &content, content.reserve);
                placed.push((op, (bytes.len() - at) as u64, record.is_none()));
                for (&moved, slot) in self.slots.range(op + 1..) {
                    placed.push((moved, slot.bytes, slot.vacant));
                    let at = bytes.len();
                    bytes.resize(at + slot.bytes as usize, 0);
                    let read = self.file.read_at(slot.offset, &mut bytes[at..]).await;
                    let read = read.map_err(self.io_error("reading a record to move"))?;
                    if read as u64 != slot.bytes {
                        return Err(WalError::Io {
                            path: self.path.clone(),
                            action: "reading a record to move",
                            source: io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                format!("{read} of {} bytes at offset {}", slot.bytes, slot.offset),
                            ),
                        });
                    }
                }
            }
        }
        let new_len = if in_place {
            self.end.max(start + bytes.len() as u64)
        } else {
            start + bytes.len() as u64
        };
        if protect {
            self.redo_pending = true;
        }
        // Slots above any op may change size or go: the memo's sum no longer holds.
        self.suffix_memo = None;
        let result = self.write_rewrite(start, new_len, &bytes, protect).await;
        self.mutate(result)?;
        debug_assert_eq!(placed.iter().map(|&(_, len, _)| len).sum::<u64>(), bytes.len() as u64);
        if !in_place {
            // Placeholders sit in the gap below `op`: no slot holds their ops.
            self.slots
                .retain(|&key, _| key < placed.first().map_or(op, |&(first, _, _)| first));
        }
        let mut offset = start;
        for (key, len, vacant) in placed {
            let previous = self.slots.insert(
                key,
                Slot {
                    offset,
                    bytes: len,
                    vacant,
                },
            );
            debug_assert!(
                in_place == previous.is_some(),
                "op {key}: a slot replaced by a move, or a new one in place"
            );
            offset += len;
        }
        self.end = new_len;
        self.synced = if protect { new_len } else { self.synced.min(start) };
        Ok(Some(Rewrite { start, new_len }))
    }

    async fn write_rewrite(&self, start: u64, new_len: u64, bytes: &[u8], protect: bool) -> Result<(), WalError> {
        if protect {
            let path = format!("{}.redo", self.path);
            let redo = encode_redo(start, self.end, new_len, bytes);
            let result = async {
                self.redo.write_at(0, &redo).await?;
                self.redo.truncate(redo.len() as u64).await?;
                self.redo.sync().await
            }
            .await;
            result.map_err(|source| WalError::Io {
                path,
                action: "writing the redo",
                source,
            })?;
        }
        self.file
            .write_at(start, bytes)
            .await
            .map_err(self.io_error("rewriting"))?;
        if new_len < self.end {
            self.file
                .truncate(new_len)
                .await
                .map_err(self.io_error("truncating a rewrite"))?;
        }
        if protect {
            self.file.sync().await.map_err(self.io_error("syncing a rewrite"))?;
        }
        Ok(())
    }

    /// Read the record at `op` back (`None` if absent or removed).
    pub(crate) async fn read(&self, op: u64) -> Result<Option<StoredRecord>, WalError> {
        let Some(slot) = self.slots.get(&op) else {
            return Ok(None);
        };
        let mut bytes = vec![0; slot.bytes as usize];
        let read = self
            .file
            .read_at(slot.offset, &mut bytes)
            .await
            .map_err(self.io_error("reading"))?;
        let damaged = |reason: String| WalError::Io {
            path: self.path.clone(),
            action: "reading a record",
            source: io::Error::new(
                io::ErrorKind::InvalidData,
                format!("op {op} at offset {}: {reason}", slot.offset),
            ),
        };
        let record = record::decode_with(self.magic, &bytes[..read], self.checksums)
            .map_err(|error| damaged(error.to_string()))?;
        if record.key != op {
            return Err(damaged(format!("holds op {}", record.key)));
        }
        parse_content(record.kind, op, record.payload, self.checksums).map_err(damaged)
    }
}

#[cfg(test)]
mod tests;
