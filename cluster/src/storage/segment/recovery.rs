//! Segment recovery: what [`SegmentLog::open`] does with whatever a crash left, and the
//! report it returns.
//!
//! Each log is walked record by record from its start offset. The walk stops at the
//! first record at or beyond the durable frontier (never promised durable: cut and
//! counted in [`SegmentRecovery::beyond_frontier`]) or at the first bytes that are not
//! the next valid record. Damage at or beyond the frontier is more unpublished bytes.
//! Damage below it is a torn tail when nothing valid follows (in this file or as the
//! first record of a later one), and corruption when something does. Either way the log
//! is cut at the damage and everything after it is removed from disk, so the recovered
//! log is contiguous and holds only checksummed records.

use std::io;
use std::ops::Range;

use super::{
    Active, MESSAGE_RECORD_KIND, SEGMENT_MAGIC, SegmentError, SegmentFileKind, SegmentLog, SegmentOptions,
    SegmentSummary, decode_message, index_file_name, io_error, join, list_or_empty, log_file_name,
    parse_segment_file_name,
};
use crate::partition::{INDEX_ENTRY_BYTES, IndexEntry, encode_index_entry};
use crate::seam::{DurableFile, DurableStorage, OpenMode};
use crate::storage::record::{self, RECORD_HEADER_BYTES, RECORD_PAYLOAD_BYTES_MAX, RecordError};

/// Where a walk of a log stopped before the end of its bytes.
enum Stop {
    /// The record that would carry the frontier's offset starts here (not checked).
    Frontier { position: usize },
    /// Bytes that are not the next valid record start here.
    Damage { position: usize, why: String },
}

/// The valid prefix of a log: one index entry per record, and why it stopped, if early.
struct Walk {
    entries: Vec<IndexEntry>,
    stop: Option<Stop>,
}

/// Walk the records of a log starting at `start_offset`, stopping at the first record at
/// or beyond `frontier` or the first damage.
fn walk_log(bytes: &[u8], start_offset: u64, frontier: u64) -> Walk {
    let mut entries = Vec::new();
    let mut position = 0;
    let mut offset = start_offset;
    while position < bytes.len() {
        if offset >= frontier {
            return Walk {
                entries,
                stop: Some(Stop::Frontier { position }),
            };
        }
        match decode_message(&bytes[position..], offset) {
            Ok((message, encoded)) => {
                let entry_position = position as u64;
                entries.push(IndexEntry {
                    offset,
                    position: entry_position,
                    timestamp_micros: message.timestamp_micros,
                });
                position += encoded;
                offset += 1;
            }
            Err(why) => {
                let zeros = bytes[position..].iter().all(|&b| b == 0);
                let why = if zeros { RecordError::End.to_string() } else { why };
                return Walk {
                    entries,
                    stop: Some(Stop::Damage { position, why }),
                };
            }
        }
    }
    Walk { entries, stop: None }
}

/// The position and offset of the first valid message record strictly after `position`
/// whose offset is above `above`: evidence that damage at `position` is not a torn tail.
fn valid_record_after(bytes: &[u8], position: usize, above: u64) -> Option<(usize, u64)> {
    let magic = SEGMENT_MAGIC.to_le_bytes();
    (position + 1..bytes.len().saturating_sub(RECORD_HEADER_BYTES - 1)).find_map(|at| {
        if bytes[at + 16..at + 20] != magic {
            return None;
        }
        let record = record::decode(SEGMENT_MAGIC, &bytes[at..]).ok()?;
        (record.kind == MESSAGE_RECORD_KIND && record.key > above).then_some((at, record.key))
    })
}

/// Check that `bytes` are a complete, valid segment log starting at `start_offset` (every
/// record valid, consecutive offsets, nothing after the last). Returns its message count.
/// State transfer runs this on every received log before staging it.
pub fn verify_log_bytes(start_offset: u64, bytes: &[u8]) -> Result<u64, String> {
    let walk = walk_log(bytes, start_offset, u64::MAX);
    match walk.stop {
        None => Ok(walk.entries.len() as u64),
        Some(Stop::Damage { position, why }) => Err(format!(
            "segment log starting at offset {start_offset}: byte {position} (offset {}): {why}",
            start_offset + walk.entries.len() as u64
        )),
        Some(Stop::Frontier { position }) => Err(format!(
            "segment log starting at offset {start_offset}: byte {position}: offsets reach u64::MAX"
        )),
    }
}

/// Messages and bytes recovery dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Discarded {
    /// Valid message records dropped.
    pub messages: u64,
    /// Bytes dropped (valid records and unreadable bytes).
    pub bytes: u64,
}

/// Unreadable bytes at the end of the log, below the frontier, with nothing valid after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// The log file.
    pub file: String,
    /// Where the bad bytes start (the file was truncated here).
    pub position: u64,
    /// The offset the bad record should have carried.
    pub offset: u64,
    /// Bytes cut.
    pub bytes: u64,
    /// What was wrong with them.
    pub why: String,
}

/// Damage below the frontier with valid data after it: acknowledged messages lost here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Corruption {
    /// The log file (for a gap between segments, the segment after the gap).
    pub file: String,
    /// Byte position of the damage in it.
    pub position: u64,
    /// Offsets known damaged: from the first bad one to the first valid one seen after.
    pub damaged: Range<u64>,
    /// What was found.
    pub why: String,
}

/// Why an index was rebuilt from its log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexProblem {
    /// No index file.
    Missing,
    /// Its length is not a whole number of entries.
    Torn {
        /// Its length in bytes.
        bytes: u64,
    },
    /// Fewer entries than the log has records.
    Short {
        /// Entries found.
        entries: u64,
        /// Records in the log.
        expected: u64,
    },
    /// More entries than the log has records (entries for discarded records).
    Long {
        /// Entries found.
        entries: u64,
        /// Records in the log.
        expected: u64,
    },
    /// An entry disagrees with the log.
    Mismatch {
        /// Its position in the index (entry number).
        entry: u64,
    },
}

/// One index rebuilt at recovery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexRebuild {
    /// The index file.
    pub file: String,
    /// What was wrong with it.
    pub problem: IndexProblem,
}

/// What [`SegmentLog::open`] found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SegmentRecovery {
    /// The frontier the caller passed.
    pub durable_end_offset: u64,
    /// The oldest offset the recovered log holds.
    pub oldest_offset: u64,
    /// The offset after the last message the recovered log holds.
    pub next_offset: u64,
    /// Segments kept.
    pub segments: usize,
    /// Records at or beyond the frontier (never promised durable), dropped.
    pub beyond_frontier: Discarded,
    /// A torn tail below the frontier, cut.
    pub torn_tail: Option<TornTail>,
    /// Corruption below the frontier: the log was cut at it.
    pub corruption: Option<Corruption>,
    /// What followed damage below the frontier (the corruption, or a torn tail when later
    /// segment files exist without a valid record), dropped with it: a log is contiguous.
    pub after_damage: Discarded,
    /// Offsets below the frontier the recovered log does not hold (`next_offset ..
    /// durable_end_offset`): the caller must refill them from its WAL or from peers.
    pub missing: Option<Range<u64>>,
    /// Indexes rebuilt from their logs.
    pub indexes_rebuilt: Vec<IndexRebuild>,
    /// Segment files removed (beyond the cut, or orphan indexes).
    pub removed_files: Vec<String>,
    /// Files in the directory that are not segment files (left alone).
    pub stray_files: Vec<String>,
}

impl SegmentRecovery {
    /// Nothing below the frontier was lost and nothing was repaired.
    pub fn is_clean(&self) -> bool {
        self.torn_tail.is_none()
            && self.corruption.is_none()
            && self.missing.is_none()
            && self.indexes_rebuilt.is_empty()
    }
}

/// How recovery stopped taking records.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cut {
    Frontier,
    Torn,
    Corruption,
}

/// A segment directory being recovered: what was found, what is kept so far, and
/// where (and why) recovery stopped taking records.
struct Recovery<'a, S: DurableStorage> {
    storage: &'a S,
    dir: &'a str,
    /// The caller's published frontier: records at or beyond it are cut.
    frontier: u64,
    report: SegmentRecovery,
    /// The log files, by start offset.
    logs: Vec<(u64, String)>,
    /// The start offsets that have an index file.
    indexes: std::collections::BTreeSet<u64>,
    /// The segments kept so far, in order.
    segments: Vec<SegmentSummary>,
    /// Where recovery stopped taking records, once it has.
    cut: Option<Cut>,
    /// Whether a file was created or removed (the directory must be synced).
    dir_changed: bool,
}

impl<'a, S: DurableStorage> Recovery<'a, S> {
    /// List `dir`'s files (a missing directory is empty), report strays, and remove
    /// indexes whose log is gone.
    async fn list(storage: &'a S, dir: &'a str, frontier: u64) -> Result<Self, SegmentError> {
        let mut recovery = Recovery {
            storage,
            dir,
            frontier,
            report: SegmentRecovery {
                durable_end_offset: frontier,
                ..SegmentRecovery::default()
            },
            logs: Vec::new(),
            indexes: std::collections::BTreeSet::new(),
            segments: Vec::new(),
            cut: None,
            dir_changed: false,
        };
        for name in list_or_empty(storage, dir).await.map_err(io_error(dir, "listing"))? {
            match parse_segment_file_name(&name) {
                Some((start, SegmentFileKind::Log)) => recovery.logs.push((start, name)),
                Some((start, SegmentFileKind::Index)) => {
                    recovery.indexes.insert(start);
                }
                None => recovery.report.stray_files.push(join(dir, &name)),
            }
        }
        recovery.logs.sort();
        for &start in &recovery.indexes {
            if recovery.logs.binary_search_by_key(&start, |(s, _)| *s).is_err() {
                // Derived data of a segment that is gone; a later segment may need the name.
                let path = join(dir, &index_file_name(start));
                storage
                    .remove(&path)
                    .await
                    .map_err(io_error(&path, "removing orphan index"))?;
                recovery.report.removed_files.push(path);
                recovery.dir_changed = true;
            }
        }
        Ok(recovery)
    }

    /// Recover the `number`th log: keep its valid prefix below the frontier (cutting
    /// the rest, with its index checked or rebuilt), or remove it whole after a cut.
    async fn recover_log(&mut self, number: usize) -> Result<(), SegmentError> {
        let (start, name) = self.logs[number].clone();
        let path = join(self.dir, &name);
        self.check_contiguous(start, &path);
        let file = self
            .storage
            .open(&path, OpenMode::Existing)
            .await
            .map_err(io_error(&path, "opening"))?;
        let bytes = record::read_to_end(&file).await.map_err(io_error(&path, "reading"))?;
        if let Some(kind) = self.cut {
            drop(file);
            return self.remove_after_cut(kind, start, path, &bytes).await;
        }
        let walk = walk_log(&bytes, start, self.frontier);
        let next = start + walk.entries.len() as u64;
        let kept = match walk.stop {
            None => bytes.len(),
            Some(stop) => self.stop_at(stop, number, &path, &bytes, next).await?,
        };
        if kept < bytes.len() {
            file.truncate(kept as u64)
                .await
                .map_err(io_error(&path, "truncating"))?;
            file.sync().await.map_err(io_error(&path, "syncing"))?;
        }
        drop(file);
        self.dir_changed |= SegmentLog::check_index(
            self.storage,
            self.dir,
            start,
            &walk.entries,
            self.indexes.contains(&start),
            &mut self.report,
        )
        .await?;
        self.segments.push(SegmentSummary {
            start_offset: start,
            end_offset: next,
            log_bytes: kept as u64,
            newest_timestamp_micros: walk.entries.last().map(|e| e.timestamp_micros),
        });
        Ok(())
    }

    /// A log that does not start where the previous one ended is a cut: at the
    /// frontier if the gap lies beyond it, else corruption.
    fn check_contiguous(&mut self, start: u64, path: &str) {
        let expected_start = self.segments.last().map(|s| s.end_offset);
        if self.cut.is_none()
            && let Some(expected) = expected_start
            && start != expected
        {
            if expected >= self.frontier {
                self.cut = Some(Cut::Frontier);
            } else {
                self.report.corruption = Some(Corruption {
                    file: path.to_owned(),
                    position: 0,
                    damaged: expected..start.max(expected),
                    why: format!("segment starts at offset {start}, the previous one ends at {expected}"),
                });
                self.cut = Some(Cut::Corruption);
            }
        }
    }

    /// Everything after a cut goes (the log must stay contiguous): count it, remove
    /// the log and its index.
    async fn remove_after_cut(
        &mut self,
        kind: Cut,
        start: u64,
        path: String,
        bytes: &[u8],
    ) -> Result<(), SegmentError> {
        let bucket = if kind == Cut::Frontier {
            &mut self.report.beyond_frontier
        } else {
            &mut self.report.after_damage
        };
        bucket.messages += walk_log(bytes, start, u64::MAX).entries.len() as u64;
        bucket.bytes += bytes.len() as u64;
        self.storage.remove(&path).await.map_err(io_error(&path, "removing"))?;
        self.report.removed_files.push(path);
        if self.indexes.contains(&start) {
            let index = join(self.dir, &index_file_name(start));
            self.storage
                .remove(&index)
                .await
                .map_err(io_error(&index, "removing"))?;
            self.report.removed_files.push(index);
        }
        self.dir_changed = true;
        Ok(())
    }

    /// The walk of the `number`th log stopped early at `stop` with `next` the first
    /// offset not kept: at the frontier, a torn tail (nothing valid after it), or
    /// corruption (a valid record after it, in this log or a later one). Records the
    /// cut and returns the bytes of the log kept.
    async fn stop_at(
        &mut self,
        stop: Stop,
        number: usize,
        path: &str,
        bytes: &[u8],
        next: u64,
    ) -> Result<usize, SegmentError> {
        let (position, why) = match stop {
            Stop::Frontier { position } => {
                let rest = walk_log(&bytes[position..], next, u64::MAX);
                self.report.beyond_frontier.messages += rest.entries.len() as u64;
                self.report.beyond_frontier.bytes += (bytes.len() - position) as u64;
                self.cut = Some(Cut::Frontier);
                return Ok(position);
            }
            Stop::Damage { position, why } => (position, why),
        };
        let cut_bytes = (bytes.len() - position) as u64;
        if next >= self.frontier {
            self.report.beyond_frontier.bytes += cut_bytes;
            self.cut = Some(Cut::Frontier);
            return Ok(position);
        }
        let mut after = None;
        if let Some((at, good)) = valid_record_after(bytes, position, next) {
            // Count what is valid from there; later files are counted as they go.
            let valid = walk_log(&bytes[at..], good, u64::MAX).entries.len();
            self.report.after_damage.messages += valid as u64;
            after = Some(good);
        } else if let Some(good) =
            SegmentLog::valid_record_in_later_logs(self.storage, self.dir, &self.logs[number + 1..], next).await?
        {
            after = Some(good);
        }
        match after {
            Some(good) => {
                self.report.corruption = Some(Corruption {
                    file: path.to_owned(),
                    position: position as u64,
                    damaged: next..good,
                    why,
                });
                self.report.after_damage.bytes += cut_bytes;
                self.cut = Some(Cut::Corruption);
            }
            None => {
                self.report.torn_tail = Some(TornTail {
                    file: path.to_owned(),
                    position: position as u64,
                    offset: next,
                    bytes: cut_bytes,
                    why,
                });
                self.cut = Some(Cut::Torn);
            }
        }
        Ok(position)
    }
}

/// Read the first record of a log file: its offset, if valid.
async fn first_record_offset<F: DurableFile>(file: &F) -> io::Result<Option<u64>> {
    let mut header = [0; RECORD_HEADER_BYTES];
    if file.read_at(0, &mut header).await? < RECORD_HEADER_BYTES {
        return Ok(None);
    }
    let mut len = [0; 4];
    len.copy_from_slice(&header[24..28]);
    let len = u32::from_le_bytes(len) as usize;
    if len > RECORD_PAYLOAD_BYTES_MAX {
        return Ok(None);
    }
    let mut bytes = vec![0; RECORD_HEADER_BYTES + len];
    if file.read_at(0, &mut bytes).await? < bytes.len() {
        return Ok(None);
    }
    Ok(record::decode(SEGMENT_MAGIC, &bytes)
        .ok()
        .filter(|r| r.kind == MESSAGE_RECORD_KIND)
        .map(|r| r.key))
}

/// Which index problem, if any, `found` has against the index derived from the log.
fn index_problem(found: &[u8], expected: &[u8]) -> Option<IndexProblem> {
    let entries = |bytes: &[u8]| (bytes.len() / INDEX_ENTRY_BYTES) as u64;
    if !found.len().is_multiple_of(INDEX_ENTRY_BYTES) {
        Some(IndexProblem::Torn {
            bytes: found.len() as u64,
        })
    } else if found.len() < expected.len() {
        Some(IndexProblem::Short {
            entries: entries(found),
            expected: entries(expected),
        })
    } else if found.len() > expected.len() {
        Some(IndexProblem::Long {
            entries: entries(found),
            expected: entries(expected),
        })
    } else {
        let differs = found
            .chunks(INDEX_ENTRY_BYTES)
            .zip(expected.chunks(INDEX_ENTRY_BYTES))
            .position(|(a, b)| a != b);
        differs.map(|entry| IndexProblem::Mismatch { entry: entry as u64 })
    }
}

impl<S: DurableStorage> SegmentLog<S> {
    /// Recover the segments under `dir` (a missing directory is an empty log) and open
    /// the last one for appending.
    ///
    /// Every record of every log is checksummed. Records at or beyond
    /// `durable_end_offset` (the caller's published frontier) are cut, as is a torn tail;
    /// damage below the frontier with valid data after it is reported as
    /// [`SegmentRecovery::corruption`] and the log is cut there. Whatever follows a cut
    /// (the rest of the file and every later segment) is removed from disk, so the log
    /// stays contiguous. An index that is missing, torn or disagrees with its log is
    /// rebuilt. Stray files are reported and left alone. Errors are storage failures
    /// only; damage is never an error and never applied.
    pub async fn open(
        storage: S,
        dir: &str,
        durable_end_offset: u64,
        options: SegmentOptions,
    ) -> Result<(Self, SegmentRecovery), SegmentError> {
        let mut recovery = Recovery::list(&storage, dir, durable_end_offset).await?;
        for number in 0..recovery.logs.len() {
            recovery.recover_log(number).await?;
        }
        let Recovery {
            mut report,
            logs,
            segments,
            dir_changed,
            ..
        } = recovery;
        if dir_changed {
            storage
                .sync_dir(dir)
                .await
                .map_err(io_error(dir, "syncing directory"))?;
        }

        let next_offset = segments.last().map_or(0, |s| s.end_offset);
        report.next_offset = next_offset;
        report.oldest_offset = segments.first().map_or(next_offset, |s| s.start_offset);
        report.segments = segments.len();
        report.missing = (next_offset < durable_end_offset).then_some(next_offset..durable_end_offset);
        let active = match segments.last() {
            None => None,
            Some(last) => Some(Self::open_active(&storage, dir, last).await?),
        };
        let log = Self {
            storage,
            dir: dir.to_owned(),
            options,
            segments,
            active,
            next_offset,
            synced_end_offset: next_offset,
            dir_dirty: false,
            dir_is_new: logs.is_empty(),
            poisoned: None,
        };
        Ok((log, report))
    }

    /// The last segment's log and index, opened for appending.
    async fn open_active(storage: &S, dir: &str, last: &SegmentSummary) -> Result<Active<S::File>, SegmentError> {
        let log_path = join(dir, &log_file_name(last.start_offset));
        let index_path = join(dir, &index_file_name(last.start_offset));
        let log = storage
            .open(&log_path, OpenMode::Existing)
            .await
            .map_err(io_error(&log_path, "opening"))?;
        let index = storage
            .open(&index_path, OpenMode::Existing)
            .await
            .map_err(io_error(&index_path, "opening"))?;
        Ok(Active {
            log,
            index,
            log_written: last.log_bytes,
            index_written: (last.end_offset - last.start_offset) * INDEX_ENTRY_BYTES as u64,
            pending_log: Vec::new(),
            pending_index: Vec::new(),
        })
    }

    /// The offset of the first valid record of any of `later` logs above `above`.
    async fn valid_record_in_later_logs(
        storage: &S,
        dir: &str,
        later: &[(u64, String)],
        above: u64,
    ) -> Result<Option<u64>, SegmentError> {
        for (_, name) in later {
            let path = join(dir, name);
            let file = storage
                .open(&path, OpenMode::Existing)
                .await
                .map_err(io_error(&path, "opening"))?;
            let first = first_record_offset(&file).await.map_err(io_error(&path, "reading"))?;
            if let Some(offset) = first.filter(|&offset| offset > above) {
                return Ok(Some(offset));
            }
        }
        Ok(None)
    }

    /// Compare a segment's index with the one derived from its log; rebuild it (written
    /// and synced through one handle) if they differ. Returns whether a file was created.
    async fn check_index(
        storage: &S,
        dir: &str,
        start: u64,
        entries: &[IndexEntry],
        present: bool,
        report: &mut SegmentRecovery,
    ) -> Result<bool, SegmentError> {
        let path = join(dir, &index_file_name(start));
        let expected: Vec<u8> = entries.iter().flat_map(encode_index_entry).collect();
        let problem = if present {
            let file = storage
                .open(&path, OpenMode::Existing)
                .await
                .map_err(io_error(&path, "opening"))?;
            let found = record::read_to_end(&file).await.map_err(io_error(&path, "reading"))?;
            index_problem(&found, &expected)
        } else {
            Some(IndexProblem::Missing)
        };
        let Some(problem) = problem else { return Ok(false) };
        let file = storage
            .open(&path, OpenMode::CreateOrOpen)
            .await
            .map_err(io_error(&path, "opening"))?;
        file.write_at(0, &expected)
            .await
            .map_err(io_error(&path, "rebuilding"))?;
        file.truncate(expected.len() as u64)
            .await
            .map_err(io_error(&path, "truncating"))?;
        file.sync().await.map_err(io_error(&path, "syncing"))?;
        report.indexes_rebuilt.push(IndexRebuild { file: path, problem });
        Ok(!present)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partition::StoredMessage;
    use crate::storage::segment::encode_message_into;

    fn log_bytes(start: u64, count: u64) -> Vec<u8> {
        let mut out = Vec::new();
        for offset in start..start + count {
            let message = StoredMessage {
                offset,
                timestamp_micros: offset,
                id: 1,
                payload: vec![7; 10],
            };
            encode_message_into(&mut out, &message);
        }
        out
    }

    #[test]
    fn segment_file_names_parse_only_in_their_exact_form() {
        assert_eq!(
            parse_segment_file_name(&log_file_name(42)),
            Some((42, SegmentFileKind::Log))
        );
        assert_eq!(
            parse_segment_file_name(&index_file_name(u64::MAX)),
            Some((u64::MAX, SegmentFileKind::Index))
        );
        for stray in [
            "42.log",
            "00000000000000000042.log.staging",
            "99999999999999999999.log",
            "x.index",
        ] {
            assert_eq!(parse_segment_file_name(stray), None, "{stray}");
        }
    }

    #[test]
    fn a_walk_stops_at_the_frontier_and_at_the_first_bad_byte() {
        let bytes = log_bytes(10, 4);
        let record = bytes.len() / 4;
        assert_eq!(verify_log_bytes(10, &bytes), Ok(4));
        let walk = walk_log(&bytes, 10, 12);
        assert_eq!(walk.entries.len(), 2);
        assert!(matches!(walk.stop, Some(Stop::Frontier { position }) if position == 2 * record));

        let mut damaged = bytes.clone();
        damaged[record + 45] ^= 1;
        let error = verify_log_bytes(10, &damaged).expect_err("damage");
        assert!(error.contains(&format!("byte {record} (offset 11)")), "{error}");
        assert_eq!(
            valid_record_after(&damaged, record, 11),
            Some((2 * record, 12)),
            "record 12 is intact"
        );
        assert_eq!(valid_record_after(&damaged, 2 * record, 12), Some((3 * record, 13)));
        assert_eq!(valid_record_after(&damaged, 3 * record, 13), None);
        assert!(
            verify_log_bytes(11, &bytes)
                .expect_err("wrong start")
                .contains("expected 11")
        );
    }

    #[test]
    fn index_problems_are_named() {
        let expected = vec![1; 3 * INDEX_ENTRY_BYTES];
        assert_eq!(index_problem(&expected, &expected), None);
        assert_eq!(
            index_problem(&expected[..30], &expected),
            Some(IndexProblem::Torn { bytes: 30 })
        );
        assert_eq!(
            index_problem(&expected[..24], &expected),
            Some(IndexProblem::Short {
                entries: 1,
                expected: 3
            })
        );
        assert_eq!(
            index_problem(&expected, &expected[..48]),
            Some(IndexProblem::Long {
                entries: 3,
                expected: 2
            })
        );
        let mut wrong = expected.clone();
        wrong[50] = 0;
        assert_eq!(
            index_problem(&wrong, &expected),
            Some(IndexProblem::Mismatch { entry: 2 })
        );
    }
}
