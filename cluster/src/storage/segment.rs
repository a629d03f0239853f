//! A partition's message segments on disk: log files of checksummed records and their
//! 24-byte-entry indexes, with the recovery boot runs on whatever a crash left.
//!
//! Layout, under one directory per partition group (for example `partitions/<group_id>`):
//!
//! ```text
//! <start_offset:020>.log    one record (see `record`) per message, in offset order:
//!                             magic SEGMENT_MAGIC, kind MESSAGE_RECORD_KIND, key = offset,
//!                             payload = timestamp_micros u64 | id u128 | message bytes (LE)
//! <start_offset:020>.index  one 24-byte entry per message of the log with the same start:
//!                             offset u64 | byte position of its record in the log u64 |
//!                             timestamp_micros u64 (little-endian)
//! ```
//!
//! One record per message (not per batch) so every offset is checked on its own, the
//! index has exactly one entry per record, and a read can start at any offset.
//!
//! The index is derived data: recovery rebuilds it from the log whenever it is missing,
//! torn or disagrees. The log is the truth, but only up to the caller's durable
//! frontier: bytes at or beyond `durable_end_offset` were never promised durable and
//! are discarded, as is a torn tail. Damage below the frontier with valid records after
//! it is corruption: the log is cut at the first bad record, nothing after it is served,
//! and the report names the offsets to repair from peers.
//!
//! Writing: [`SegmentLog::append`] buffers; [`SegmentLog::sync`] writes the buffers and
//! syncs through the handles that wrote them (log, then index, then the directory if a
//! segment was created). A segment rolls before a record would take it past
//! [`SegmentOptions::segment_bytes_max`]; a sealed segment is synced when it rolls. A
//! failed write or sync poisons the log (the kernel may have dropped the dirty pages, so
//! a retry could report success over lost bytes): the caller must reopen it.
//!
//! Boot runs `install::recover_install` on the directory first (an interrupted state
//! transfer), then [`SegmentLog::open`], which reads each log whole, one at a time.

use std::fmt;
use std::io;

use crate::partition::{INDEX_ENTRY_BYTES, IndexEntry, StoredMessage, decode_index_entry, encode_index_entry};
use crate::seam::{DurableFile, DurableStorage, OpenMode};
use crate::storage::record::{self, RECORD_HEADER_BYTES, RECORD_PAYLOAD_BYTES_MAX};

mod recovery;

pub use recovery::{Corruption, Discarded, IndexProblem, IndexRebuild, SegmentRecovery, TornTail, verify_log_bytes};

/// The magic of every segment log record ("SEGM"): a record from another kind of file
/// written here by a misdirected write fails to decode instead of being served.
pub const SEGMENT_MAGIC: u32 = u32::from_le_bytes(*b"SEGM");

/// The record kind of one message.
pub const MESSAGE_RECORD_KIND: u8 = 1;

/// Bytes of a message record's payload before the message bytes: timestamp (8), id (16).
pub const MESSAGE_FIXED_BYTES: usize = 24;

/// Largest message payload a segment stores, in bytes: what one record can carry after
/// the fixed fields.
pub const MESSAGE_PAYLOAD_BYTES_MAX: usize = RECORD_PAYLOAD_BYTES_MAX - MESSAGE_FIXED_BYTES;

/// Default [`SegmentOptions::segment_bytes_max`]: 16 MiB, the in-memory log's
/// `SEGMENT_BYTES_MAX`, so a segment copies quickly in a state transfer, retention frees
/// space in steps of that size, and recovery reads one segment into memory at a time.
pub const SEGMENT_BYTES_MAX_DEFAULT: u64 = 16 * 1024 * 1024;

/// Bytes appended to the active segment's buffer before they are written (not synced) to
/// the file: 1 MiB bounds the memory a burst of appends holds without a write per message.
pub const APPEND_BUFFER_BYTES_MAX: usize = 1024 * 1024;

/// Most log bytes one [`SegmentLog::read`] fetches (at least one message is returned):
/// 1 MiB bounds the work of a poll, which a replica serves without consensus.
pub const READ_BYTES_MAX: u64 = 1024 * 1024;

/// Most messages one [`SegmentLog::read`] returns, as the in-memory log's bound.
pub const READ_MESSAGES_MAX: usize = crate::partition::READ_MESSAGES_MAX;

/// Suffix of a segment's log file.
pub const LOG_SUFFIX: &str = ".log";

/// Suffix of a segment's index file.
pub const INDEX_SUFFIX: &str = ".index";

/// Digits of the zero-padded start offset in a segment file name: `u64::MAX` has 20, so
/// names sort in offset order.
pub const SEGMENT_NAME_DIGITS: usize = 20;

/// Tunables of a [`SegmentLog`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentOptions {
    /// Roll to a new segment before a record would take the active log past this many
    /// bytes (a single message larger than this gets a segment of its own).
    pub segment_bytes_max: u64,
}

impl Default for SegmentOptions {
    fn default() -> Self {
        Self {
            segment_bytes_max: SEGMENT_BYTES_MAX_DEFAULT,
        }
    }
}

/// `<start_offset:020>.log`.
pub fn log_file_name(start_offset: u64) -> String {
    format!("{start_offset:020}{LOG_SUFFIX}")
}

/// `<start_offset:020>.index`.
pub fn index_file_name(start_offset: u64) -> String {
    format!("{start_offset:020}{INDEX_SUFFIX}")
}

/// Which half of a segment a file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegmentFileKind {
    /// The `.log` of records.
    Log,
    /// The `.index` of 24-byte entries.
    Index,
}

/// The start offset and kind of a segment file name; `None` for any other name.
pub fn parse_segment_file_name(name: &str) -> Option<(u64, SegmentFileKind)> {
    let (digits, kind) = if let Some(digits) = name.strip_suffix(LOG_SUFFIX) {
        (digits, SegmentFileKind::Log)
    } else {
        (name.strip_suffix(INDEX_SUFFIX)?, SegmentFileKind::Index)
    };
    if digits.len() != SEGMENT_NAME_DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((digits.parse().ok()?, kind))
}

/// `dir/name`, or `name` at the storage root.
pub(crate) fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// List `dir`, a missing directory being empty.
pub(crate) async fn list_or_empty<S: DurableStorage>(storage: &S, dir: &str) -> io::Result<Vec<String>> {
    match storage.list(dir).await {
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        other => other,
    }
}

/// Sync `dir` and then every directory above it up to the storage root, innermost first:
/// a file in a newly created directory survives a power loss only once each directory's
/// own entry in its parent is durable too. Returns the directory that failed.
pub(crate) async fn sync_dir_and_ancestors<S: DurableStorage>(
    storage: &S,
    dir: &str,
) -> Result<(), (String, io::Error)> {
    let mut current = dir;
    loop {
        storage
            .sync_dir(current)
            .await
            .map_err(|error| (current.to_owned(), error))?;
        if current.is_empty() {
            return Ok(());
        }
        current = current.rsplit_once('/').map_or("", |(parent, _)| parent);
    }
}

/// Bytes a message's record occupies in a log.
pub fn message_record_bytes(payload_bytes: usize) -> u64 {
    (RECORD_HEADER_BYTES + MESSAGE_FIXED_BYTES + payload_bytes) as u64
}

fn encode_message_into(out: &mut Vec<u8>, message: &StoredMessage) {
    let mut payload = Vec::with_capacity(MESSAGE_FIXED_BYTES + message.payload.len());
    payload.extend_from_slice(&message.timestamp_micros.to_le_bytes());
    payload.extend_from_slice(&message.id.to_le_bytes());
    payload.extend_from_slice(&message.payload);
    record::encode_into(out, SEGMENT_MAGIC, MESSAGE_RECORD_KIND, message.offset, &payload);
}

/// The message in `bytes` at its start, which must carry `expected_offset`.
fn decode_message(bytes: &[u8], expected_offset: u64) -> Result<(StoredMessage, usize), String> {
    let record = record::decode(SEGMENT_MAGIC, bytes).map_err(|error| error.to_string())?;
    if record.kind != MESSAGE_RECORD_KIND {
        return Err(format!(
            "record kind {} is not a message ({MESSAGE_RECORD_KIND})",
            record.kind
        ));
    }
    if record.key != expected_offset {
        return Err(format!(
            "record carries offset {}, expected {expected_offset}",
            record.key
        ));
    }
    let payload = record.payload;
    if payload.len() < MESSAGE_FIXED_BYTES {
        return Err(format!(
            "message payload of {} bytes is shorter than its fixed fields",
            payload.len()
        ));
    }
    let mut timestamp = [0; 8];
    timestamp.copy_from_slice(&payload[..8]);
    let mut id = [0; 16];
    id.copy_from_slice(&payload[8..MESSAGE_FIXED_BYTES]);
    let message = StoredMessage {
        offset: record.key,
        timestamp_micros: u64::from_le_bytes(timestamp),
        id: u128::from_le_bytes(id),
        payload: payload[MESSAGE_FIXED_BYTES..].to_vec(),
    };
    Ok((message, record.encoded_bytes()))
}

/// Why a segment operation failed.
#[derive(Debug)]
pub enum SegmentError {
    /// A storage call failed.
    Io {
        /// The file or directory.
        file: String,
        /// What was being done.
        action: &'static str,
        /// The error.
        source: io::Error,
    },
    /// Bytes read back from a segment are not what the index and the log promise.
    Corrupt {
        /// The file.
        file: String,
        /// Byte position in it.
        position: u64,
        /// The offset being read.
        offset: u64,
        /// What was expected and what was found.
        why: String,
    },
    /// An append whose offset is not the next one.
    OffsetNotNext {
        /// The message's offset.
        offset: u64,
        /// The log's next offset.
        expected: u64,
    },
    /// A message above [`MESSAGE_PAYLOAD_BYTES_MAX`].
    MessageTooLarge {
        /// Its payload bytes.
        bytes: usize,
    },
    /// An earlier write or sync failed; the log must be reopened (recovered) before use.
    Poisoned {
        /// The first failure.
        why: String,
    },
}

impl fmt::Display for SegmentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { file, action, source } => write!(f, "segment storage: {action} {file}: {source}"),
            Self::Corrupt {
                file,
                position,
                offset,
                why,
            } => {
                write!(
                    f,
                    "segment {file} corrupt at byte {position} reading offset {offset}: {why}"
                )
            }
            Self::OffsetNotNext { offset, expected } => {
                write!(f, "append of offset {offset}, but the next offset is {expected}")
            }
            Self::MessageTooLarge { bytes } => {
                write!(
                    f,
                    "message of {bytes} bytes exceeds MESSAGE_PAYLOAD_BYTES_MAX {MESSAGE_PAYLOAD_BYTES_MAX}"
                )
            }
            Self::Poisoned { why } => write!(f, "segment log unusable after an earlier failure ({why}); reopen it"),
        }
    }
}

impl std::error::Error for SegmentError {}

pub(crate) fn io_error<'a>(file: &'a str, action: &'static str) -> impl FnOnce(io::Error) -> SegmentError + 'a {
    move |source| SegmentError::Io {
        file: file.to_owned(),
        action,
        source,
    }
}

/// One segment as the log keeps it in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentSummary {
    /// Offset of its first message (or of its next one, when empty).
    pub start_offset: u64,
    /// Offset after its last message.
    pub end_offset: u64,
    /// Bytes of its log (including buffered, unwritten appends).
    pub log_bytes: u64,
    /// Timestamp of its newest message, if any.
    pub newest_timestamp_micros: Option<u64>,
}

/// What a retention call removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RetentionReport {
    /// Whole segments removed.
    pub segments: usize,
    /// Messages in them.
    pub messages: u64,
    /// Log bytes in them.
    pub bytes: u64,
}

/// The writing side of the active segment.
struct Active<F> {
    log: F,
    index: F,
    log_written: u64,
    index_written: u64,
    pending_log: Vec<u8>,
    pending_index: Vec<u8>,
}

/// A partition's segments: sealed ones, then the active one being appended to.
pub struct SegmentLog<S: DurableStorage> {
    storage: S,
    dir: String,
    options: SegmentOptions,
    segments: Vec<SegmentSummary>,
    active: Option<Active<S::File>>,
    next_offset: u64,
    synced_end_offset: u64,
    dir_dirty: bool,
    /// No segment existed at open: the directory itself may be new, so the first sync
    /// also makes its entry (and its parents') durable.
    dir_is_new: bool,
    poisoned: Option<String>,
}

impl<S: DurableStorage> fmt::Debug for SegmentLog<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SegmentLog")
            .field("dir", &self.dir)
            .field("segments", &self.segments)
            .field("next_offset", &self.next_offset)
            .field("synced_end_offset", &self.synced_end_offset)
            .field("poisoned", &self.poisoned)
            .finish_non_exhaustive()
    }
}

/// Read into `buf` from `position` until it is full or the file ends; returns bytes read.
async fn read_fully<F: DurableFile>(file: &F, position: u64, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        let read = file.read_at(position + filled as u64, &mut buf[filled..]).await?;
        if read == 0 {
            break;
        }
        filled += read;
    }
    Ok(filled)
}

/// Write the active segment's buffered appends to its files (no sync).
async fn write_pending<F: DurableFile>(active: &mut Active<F>, dir: &str, start: u64) -> Result<(), SegmentError> {
    if !active.pending_log.is_empty() {
        let file = join(dir, &log_file_name(start));
        active
            .log
            .write_at(active.log_written, &active.pending_log)
            .await
            .map_err(io_error(&file, "writing"))?;
        active.log_written += active.pending_log.len() as u64;
        active.pending_log.clear();
    }
    if !active.pending_index.is_empty() {
        let file = join(dir, &index_file_name(start));
        active
            .index
            .write_at(active.index_written, &active.pending_index)
            .await
            .map_err(io_error(&file, "writing"))?;
        active.index_written += active.pending_index.len() as u64;
        active.pending_index.clear();
    }
    Ok(())
}

impl<S: DurableStorage> SegmentLog<S> {
    /// The directory the segments live in.
    pub fn dir(&self) -> &str {
        &self.dir
    }

    /// The tunables it runs with.
    pub fn options(&self) -> SegmentOptions {
        self.options
    }

    /// The offset the next appended message must carry.
    pub fn next_offset(&self) -> u64 {
        self.next_offset
    }

    /// The oldest offset held (equal to `next_offset` when empty).
    pub fn oldest_offset(&self) -> u64 {
        self.segments.first().map_or(self.next_offset, |s| s.start_offset)
    }

    /// Every message below this offset is durable in the segments (as of the last sync).
    pub fn synced_end_offset(&self) -> u64 {
        self.synced_end_offset
    }

    /// The segments, oldest first; the last is the active one.
    pub fn segments(&self) -> &[SegmentSummary] {
        &self.segments
    }

    fn check_usable(&self) -> Result<(), SegmentError> {
        match &self.poisoned {
            Some(why) => Err(SegmentError::Poisoned { why: why.clone() }),
            None => Ok(()),
        }
    }

    fn poison(&mut self, error: SegmentError) -> SegmentError {
        if self.poisoned.is_none() {
            self.poisoned = Some(error.to_string());
        }
        error
    }

    /// Append one message (buffered: durable after [`SegmentLog::sync`]). Its offset
    /// must be [`SegmentLog::next_offset`]. Rolls to a new segment first if the record
    /// would take the active one past `segment_bytes_max`.
    pub async fn append(&mut self, message: &StoredMessage) -> Result<(), SegmentError> {
        self.check_usable()?;
        if message.offset != self.next_offset {
            return Err(SegmentError::OffsetNotNext {
                offset: message.offset,
                expected: self.next_offset,
            });
        }
        if message.payload.len() > MESSAGE_PAYLOAD_BYTES_MAX {
            return Err(SegmentError::MessageTooLarge {
                bytes: message.payload.len(),
            });
        }
        let record_bytes = message_record_bytes(message.payload.len());
        let roll = match self.segments.last() {
            None => true,
            Some(last) => {
                last.end_offset > last.start_offset && last.log_bytes + record_bytes > self.options.segment_bytes_max
            }
        };
        if roll && let Err(error) = self.roll().await {
            return Err(self.poison(error));
        }
        let (Some(active), Some(last)) = (self.active.as_mut(), self.segments.last_mut()) else {
            return Err(self.poison(SegmentError::Poisoned {
                why: "no active segment after a roll".to_owned(),
            }));
        };
        let entry = IndexEntry {
            offset: message.offset,
            position: last.log_bytes,
            timestamp_micros: message.timestamp_micros,
        };
        encode_message_into(&mut active.pending_log, message);
        active.pending_index.extend_from_slice(&encode_index_entry(&entry));
        last.end_offset += 1;
        last.log_bytes += record_bytes;
        last.newest_timestamp_micros = Some(message.timestamp_micros);
        self.next_offset += 1;
        if active.pending_log.len() >= APPEND_BUFFER_BYTES_MAX {
            let start = last.start_offset;
            if let Err(error) = write_pending(active, &self.dir, start).await {
                return Err(self.poison(error));
            }
        }
        Ok(())
    }

    /// Write every buffered append and make it durable: the log, then the index, each
    /// through the handle that wrote it, then the directory if a segment was created.
    pub async fn sync(&mut self) -> Result<(), SegmentError> {
        self.check_usable()?;
        let result = self.sync_inner().await;
        result.map_err(|error| self.poison(error))
    }

    async fn sync_inner(&mut self) -> Result<(), SegmentError> {
        if let (Some(active), Some(last)) = (self.active.as_mut(), self.segments.last()) {
            write_pending(active, &self.dir, last.start_offset).await?;
            let log_path = join(&self.dir, &log_file_name(last.start_offset));
            active.log.sync().await.map_err(io_error(&log_path, "syncing"))?;
            let index_path = join(&self.dir, &index_file_name(last.start_offset));
            active.index.sync().await.map_err(io_error(&index_path, "syncing"))?;
        }
        if self.dir_dirty {
            if self.dir_is_new {
                sync_dir_and_ancestors(&self.storage, &self.dir)
                    .await
                    .map_err(|(dir, source)| SegmentError::Io {
                        file: dir,
                        action: "syncing directory",
                        source,
                    })?;
                self.dir_is_new = false;
            } else {
                self.storage
                    .sync_dir(&self.dir)
                    .await
                    .map_err(io_error(&self.dir, "syncing directory"))?;
            }
            self.dir_dirty = false;
        }
        self.synced_end_offset = self.next_offset;
        Ok(())
    }

    /// Seal the active segment (synced) and create an empty one at `next_offset`.
    async fn roll(&mut self) -> Result<(), SegmentError> {
        if self.active.is_some() {
            self.sync_inner().await?;
        }
        let start = self.next_offset;
        let log_path = join(&self.dir, &log_file_name(start));
        let index_path = join(&self.dir, &index_file_name(start));
        self.active = None;
        let log = self
            .storage
            .open(&log_path, OpenMode::CreateNew)
            .await
            .map_err(io_error(&log_path, "creating"))?;
        self.dir_dirty = true;
        let index = self
            .storage
            .open(&index_path, OpenMode::CreateNew)
            .await
            .map_err(io_error(&index_path, "creating"))?;
        self.active = Some(Active {
            log,
            index,
            log_written: 0,
            index_written: 0,
            pending_log: Vec::new(),
            pending_index: Vec::new(),
        });
        self.segments.push(SegmentSummary {
            start_offset: start,
            end_offset: start,
            log_bytes: 0,
            newest_timestamp_micros: None,
        });
        Ok(())
    }

    /// Up to `max_messages` (at most [`READ_MESSAGES_MAX`], and about [`READ_BYTES_MAX`]
    /// bytes, at least one message) from `offset` on, found through the index and checked
    /// against the log. Empty below the oldest offset or at or after `next_offset`.
    pub async fn read(&mut self, offset: u64, max_messages: usize) -> Result<Vec<StoredMessage>, SegmentError> {
        self.check_usable()?;
        let mut out = Vec::new();
        if offset < self.oldest_offset() || offset >= self.next_offset || max_messages == 0 {
            return Ok(out);
        }
        if let (Some(active), Some(last)) = (self.active.as_mut(), self.segments.last()) {
            let start = last.start_offset;
            if let Err(error) = write_pending(active, &self.dir, start).await {
                return Err(self.poison(error));
            }
        }
        let limit = max_messages.min(READ_MESSAGES_MAX);
        let mut budget = READ_BYTES_MAX;
        let mut offset = offset;
        let first = self
            .segments
            .partition_point(|s| s.start_offset <= offset)
            .saturating_sub(1);
        for segment in &self.segments[first..] {
            if out.len() >= limit {
                break;
            }
            if offset >= segment.end_offset {
                continue;
            }
            let count = (limit - out.len()) as u64;
            offset += self.read_segment(segment, offset, count, &mut budget, &mut out).await?;
            if offset < segment.end_offset {
                break;
            }
        }
        Ok(out)
    }

    /// Read up to `count` messages of `segment` from `offset`; returns how many it read.
    async fn read_segment(
        &self,
        segment: &SegmentSummary,
        offset: u64,
        count: u64,
        budget: &mut u64,
        out: &mut Vec<StoredMessage>,
    ) -> Result<u64, SegmentError> {
        let index_path = join(&self.dir, &index_file_name(segment.start_offset));
        let log_path = join(&self.dir, &log_file_name(segment.start_offset));
        let available = segment.end_offset - offset;
        let count = count.min(available);
        // One entry past the last one wanted, when there is one, gives where it ends.
        let entries_wanted = count + u64::from(count < available);
        let corrupt = |file: &str, position: u64, at: u64, why: String| SegmentError::Corrupt {
            file: file.to_owned(),
            position,
            offset: at,
            why,
        };
        let index = self
            .storage
            .open(&index_path, OpenMode::Existing)
            .await
            .map_err(io_error(&index_path, "opening"))?;
        let index_position = (offset - segment.start_offset) * INDEX_ENTRY_BYTES as u64;
        let mut raw = vec![0; entries_wanted as usize * INDEX_ENTRY_BYTES];
        let read = read_fully(&index, index_position, &mut raw)
            .await
            .map_err(io_error(&index_path, "reading"))?;
        if read < raw.len() {
            let why = format!("index holds {read} of the {} bytes of entries wanted", raw.len());
            return Err(corrupt(&index_path, index_position, offset, why));
        }
        let mut ends = Vec::with_capacity(count as usize);
        let mut starts = Vec::with_capacity(count as usize);
        for (i, chunk) in raw.chunks(INDEX_ENTRY_BYTES).enumerate() {
            let at = offset + i as u64;
            let position = index_position + (i * INDEX_ENTRY_BYTES) as u64;
            let entry =
                decode_index_entry(chunk).map_err(|error| corrupt(&index_path, position, at, error.to_string()))?;
            if entry.offset != at
                || entry.position > segment.log_bytes
                || starts.last().is_some_and(|&p| entry.position <= p)
            {
                let why = format!("entry {entry:?} is not offset {at} at an increasing position within the log");
                return Err(corrupt(&index_path, position, at, why));
            }
            if i > 0 {
                ends.push(entry.position);
            }
            if (i as u64) < count {
                starts.push(entry.position);
            }
        }
        if ends.len() < starts.len() {
            ends.push(segment.log_bytes);
        }
        let base = starts.first().copied().unwrap_or(segment.log_bytes);
        let take = ends
            .iter()
            .take_while(|&&end| end - base <= *budget)
            .count()
            .max(usize::from(out.is_empty()));
        // Nothing fits the budget (a later segment of a read that already has messages).
        let Some(end) = take.checked_sub(1).and_then(|last| ends.get(last)).copied() else {
            return Ok(0);
        };
        let bytes_max = READ_BYTES_MAX.max(message_record_bytes(MESSAGE_PAYLOAD_BYTES_MAX));
        if end - base > bytes_max {
            return Err(corrupt(
                &log_path,
                base,
                offset,
                format!("index spans {} bytes for one read", end - base),
            ));
        }
        let log = self
            .storage
            .open(&log_path, OpenMode::Existing)
            .await
            .map_err(io_error(&log_path, "opening"))?;
        let mut bytes = vec![0; (end - base) as usize];
        let read = read_fully(&log, base, &mut bytes)
            .await
            .map_err(io_error(&log_path, "reading"))?;
        if read < bytes.len() {
            let why = format!("log holds {read} of the {} bytes the index points at", bytes.len());
            return Err(corrupt(&log_path, base, offset, why));
        }
        for i in 0..take {
            let at = offset + i as u64;
            let (start, end) = ((starts[i] - base) as usize, (ends[i] - base) as usize);
            let (message, encoded) =
                decode_message(&bytes[start..end], at).map_err(|why| corrupt(&log_path, starts[i], at, why))?;
            if encoded != end - start {
                let why = format!("record is {encoded} bytes, the index gives it {}", end - start);
                return Err(corrupt(&log_path, starts[i], at, why));
            }
            out.push(message);
        }
        *budget = budget.saturating_sub(end - base);
        Ok(take as u64)
    }

    /// Delete whole sealed segments every message of which is below `offset`; the active
    /// segment is never deleted.
    pub async fn delete_below(&mut self, offset: u64) -> Result<RetentionReport, SegmentError> {
        let sealed = self.segments.len().saturating_sub(1);
        let count = self.segments[..sealed]
            .iter()
            .take_while(|s| s.end_offset <= offset)
            .count();
        self.remove_oldest(count).await
    }

    /// Delete whole sealed segments from the front whose newest message is older than
    /// `cutoff_micros`, stopping at the first one kept (the log stays contiguous); the
    /// active segment is never deleted.
    pub async fn delete_older_than(&mut self, cutoff_micros: u64) -> Result<RetentionReport, SegmentError> {
        let sealed = self.segments.len().saturating_sub(1);
        let count = self.segments[..sealed]
            .iter()
            .take_while(|s| s.newest_timestamp_micros.is_some_and(|newest| newest < cutoff_micros))
            .count();
        self.remove_oldest(count).await
    }

    /// Drop every message, keeping `next_offset`: an empty active segment is created at
    /// `next_offset` (and made durable) before the old segments are removed, so a crash
    /// in between never leaves a log whose offsets would restart.
    pub async fn purge(&mut self) -> Result<RetentionReport, SegmentError> {
        self.check_usable()?;
        if self
            .segments
            .last()
            .is_none_or(|last| last.end_offset > last.start_offset)
        {
            let rolled = self.roll().await;
            let synced = match rolled {
                Ok(()) => self.sync_inner().await,
                Err(error) => Err(error),
            };
            synced.map_err(|error| self.poison(error))?;
        }
        self.remove_oldest(self.segments.len().saturating_sub(1)).await
    }

    /// Remove the `count` oldest segments (log, then index), then sync the directory.
    async fn remove_oldest(&mut self, count: usize) -> Result<RetentionReport, SegmentError> {
        self.check_usable()?;
        let mut report = RetentionReport::default();
        let mut result = Ok(());
        for segment in &self.segments[..count] {
            let log_path = join(&self.dir, &log_file_name(segment.start_offset));
            if let Err(source) = self.storage.remove(&log_path).await {
                result = Err(SegmentError::Io {
                    file: log_path,
                    action: "removing",
                    source,
                });
                break;
            }
            report.segments += 1;
            report.messages += segment.end_offset - segment.start_offset;
            report.bytes += segment.log_bytes;
            // The index is derived: if this removal is lost, recovery deletes the orphan.
            let index_path = join(&self.dir, &index_file_name(segment.start_offset));
            match self.storage.remove(&index_path).await {
                Err(error) if error.kind() != io::ErrorKind::NotFound => {
                    result = Err(SegmentError::Io {
                        file: index_path,
                        action: "removing",
                        source: error,
                    });
                    break;
                }
                _ => {}
            }
        }
        self.segments.drain(..report.segments);
        result?;
        if count > 0 {
            self.storage
                .sync_dir(&self.dir)
                .await
                .map_err(io_error(&self.dir, "syncing directory"))?;
        }
        Ok(report)
    }
}
