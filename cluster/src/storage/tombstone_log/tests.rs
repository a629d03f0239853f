//! The tombstone log on real files: what survives a reopen, a torn tail, damage in the
//! middle, a failed append, and a data directory in the older format.

use std::cell::Cell;
use std::io;
use std::rc::Rc;

use futures::FutureExt;

use super::*;
use crate::runtime::DiskStorage;
use crate::storage::snapshot_file::write_snapshot;
use crate::storage::tombstone_set::{Known, NothingSettled};

/// DiskStorage calls block and complete at once: their futures are always ready.
fn ready<T>(future: impl std::future::Future<Output = T>) -> T {
    future.now_or_never().expect("DiskStorage futures are always ready")
}

fn temp_storage(name: &str) -> (DiskStorage, std::path::PathBuf) {
    let root = std::env::temp_dir().join(format!("cluster-tombstones-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    (DiskStorage::new(&root).expect("temp dir"), root)
}

fn open<S: DurableStorage>(storage: &S) -> Result<TombstoneLog<S>, TombstoneError> {
    TombstoneLog::open(storage.clone(), storage)
}

/// How many ids the log's set covers.
fn ids_covered<S: DurableStorage>(log: &TombstoneLog<S>) -> u64 {
    log.set().ranges().map(|(first, last)| last - first + 1).sum()
}

fn log_len(root: &std::path::Path) -> u64 {
    std::fs::metadata(root.join(TOMBSTONE_LOG_PATH))
        .expect("the log exists")
        .len()
}

/// The log file holds exactly `records` whole records.
#[track_caller]
fn assert_records_on_disk(root: &std::path::Path, records: u64, why: &str) {
    assert_eq!(log_len(root), records * TOMBSTONE_RECORD_BYTES as u64, "{why}");
}

#[test]
fn every_deleted_group_survives_a_reopen_at_one_record_per_delete() {
    let (storage, root) = temp_storage("reopen");
    let mut log = open(&storage).expect("an empty data dir has no tombstones");
    assert!(log.is_empty());
    assert!(!root.join(TOMBSTONE_LOG_PATH).exists(), "boot writes nothing");
    for group in 0..100u64 {
        ready(log.append(0xc00 + group, &NothingSettled)).expect("append");
        assert_records_on_disk(&root, group + 1, "one record per delete");
    }
    let log = open(&storage).expect("reopen");
    assert_eq!(ids_covered(&log), 100);
    assert!((0..100).all(|group| log.contains(0xc00 + group)));
    assert!(!log.contains(0xc00 + 100), "only what was deleted");
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn a_torn_last_record_is_ignored_and_cut_by_the_next_append() {
    for (case, tail) in [
        ("half", vec![0x5A; TOMBSTONE_RECORD_BYTES / 2]),
        ("zeros", vec![0; 3 * TOMBSTONE_RECORD_BYTES]),
        ("garbage", vec![0x5A; 2 * TOMBSTONE_RECORD_BYTES + 7]),
    ] {
        let (storage, root) = temp_storage(&format!("torn-{case}"));
        let mut log = open(&storage).expect("open");
        for group in [1, 2, 3] {
            ready(log.append(group, &NothingSettled)).expect("append");
        }
        let mut bytes = std::fs::read(root.join(TOMBSTONE_LOG_PATH)).expect("read");
        bytes.extend_from_slice(&tail);
        std::fs::write(root.join(TOMBSTONE_LOG_PATH), &bytes).expect("write");

        let mut log = open(&storage).unwrap_or_else(|error| panic!("{case}: a torn tail boots: {error}"));
        assert_eq!(ids_covered(&log), 3, "{case}");
        ready(log.append(4, &NothingSettled)).expect("append after the torn tail");
        assert_records_on_disk(&root, 4, "{case}: the tail was cut");
        let log = open(&storage).expect("reopen");
        assert!([1, 2, 3, 4].iter().all(|&group| log.contains(group)), "{case}: {log:?}");
        let _ = std::fs::remove_dir_all(root);
    }
}

#[test]
fn damage_in_the_middle_refuses_the_boot_and_names_its_offset() {
    let (storage, root) = temp_storage("middle");
    let mut log = open(&storage).expect("open");
    for group in [1, 2, 3] {
        ready(log.append(group, &NothingSettled)).expect("append");
    }
    let mut bytes = std::fs::read(root.join(TOMBSTONE_LOG_PATH)).expect("read");
    bytes[TOMBSTONE_RECORD_BYTES + 33] ^= 0x01; // the second record's key
    std::fs::write(root.join(TOMBSTONE_LOG_PATH), &bytes).expect("write");

    let error = open(&storage).expect_err("a lost tombstone must not boot");
    match &error {
        TombstoneError::Damaged { offset, reason } => {
            assert_eq!(*offset, TOMBSTONE_RECORD_BYTES as u64);
            assert!(reason.contains("checksum"), "{reason}");
        }
        other => panic!("not damage: {other:?}"),
    }
    let text = error.to_string();
    assert!(
        text.contains(TOMBSTONE_LOG_PATH) && text.contains("offset 40"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn a_record_of_another_kind_is_damage_not_a_tombstone() {
    let (storage, root) = temp_storage("kind");
    let mut log = open(&storage).expect("open");
    ready(log.append(7, &NothingSettled)).expect("append");
    let mut bytes = record::encode(TOMBSTONE_MAGIC, RANGE_LAST_KIND + 1, 8, &[]);
    bytes.extend(record::encode(TOMBSTONE_MAGIC, TOMBSTONE_KIND, 9, &[]));
    let mut file = std::fs::read(root.join(TOMBSTONE_LOG_PATH)).expect("read");
    file.extend(bytes);
    std::fs::write(root.join(TOMBSTONE_LOG_PATH), &file).expect("write");
    let error = open(&storage).expect_err("an unknown record between tombstones");
    assert!(error.to_string().contains("kind 4"), "{error}");
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn a_data_dir_in_the_older_format_keeps_its_tombstones() {
    let (storage, root) = temp_storage("legacy");
    let ids: Vec<u8> = [0xc00u64, 0xc01, 0x3000]
        .iter()
        .flat_map(|id| id.to_le_bytes())
        .collect();
    ready(write_snapshot(&storage, LEGACY_DELETED_PATH, 3, &ids)).expect("older file");

    let mut log = open(&storage).expect("open");
    assert!(
        [0xc00, 0xc01, 0x3000].iter().all(|&group| log.contains(group)),
        "{log:?}"
    );
    ready(log.append(0x3001, &NothingSettled)).expect("append");
    let log = open(&storage).expect("reopen");
    assert_eq!(ids_covered(&log), 4, "both files count: {log:?}");
    assert!(log.contains(0x3001) && log.contains(0xc00));

    std::fs::write(root.join(LEGACY_DELETED_PATH), b"not a snapshot").expect("write");
    let error = open(&storage).expect_err("a damaged older file");
    assert!(error.to_string().starts_with(LEGACY_DELETED_PATH), "{error}");
    let _ = std::fs::remove_dir_all(root);
}

/// DiskStorage whose file syncs fail while `fail_syncs` is above zero (one per sync).
#[derive(Clone)]
struct FailingSyncs {
    inner: DiskStorage,
    fail_syncs: Rc<Cell<u32>>,
    /// Syncs let through before `fail_syncs` starts failing them.
    skip_syncs: Rc<Cell<u32>>,
}

struct FailingSyncsFile {
    inner: <DiskStorage as DurableStorage>::File,
    fail_syncs: Rc<Cell<u32>>,
    skip_syncs: Rc<Cell<u32>>,
}

impl DurableStorage for FailingSyncs {
    type File = FailingSyncsFile;
    async fn open(&self, path: &str, mode: OpenMode) -> io::Result<FailingSyncsFile> {
        Ok(FailingSyncsFile {
            inner: self.inner.open(path, mode).await?,
            fail_syncs: self.fail_syncs.clone(),
            skip_syncs: self.skip_syncs.clone(),
        })
    }

    crate::forward_to_inner!(rename, remove, remove_dir, list, sync_dir);
}

impl DurableFile for FailingSyncsFile {
    async fn sync(&self) -> io::Result<()> {
        if self.skip_syncs.get() > 0 {
            self.skip_syncs.set(self.skip_syncs.get() - 1);
            return self.inner.sync().await;
        }
        if self.fail_syncs.get() > 0 {
            self.fail_syncs.set(self.fail_syncs.get() - 1);
            return Err(io::Error::other("injected sync failure"));
        }
        self.inner.sync().await
    }

    crate::forward_to_inner!(read_at, write_at, append, len, truncate);
}

#[test]
fn a_failed_append_is_written_over_by_the_next_never_left_in_the_middle() {
    let (inner, root) = temp_storage("failed-append");
    let storage = FailingSyncs {
        inner,
        fail_syncs: Rc::new(Cell::new(0)),
        skip_syncs: Rc::new(Cell::new(0)),
    };
    let mut log = open(&storage).expect("open");
    ready(log.append(1, &NothingSettled)).expect("append");
    storage.fail_syncs.set(1);
    let error = ready(log.append(2, &NothingSettled)).expect_err("the sync fails");
    assert!(error.to_string().contains("syncing"), "{error}");
    assert!(
        log.contains(2),
        "this process treats the group as deleted whatever the disk did"
    );
    // The failed record's bytes are in the file: a later record must not land after them.
    assert_records_on_disk(&root, 2, "the failed record is in the file");
    ready(log.append(3, &NothingSettled)).expect("append after the failure");
    assert_records_on_disk(&root, 2, "written over the failed record");

    let log = open(&storage).expect("no damage in the middle after a failed append");
    assert!(log.contains(1) && log.contains(3), "{log:?}");
    assert!(!log.contains(2), "the failed delete's record was replaced, not kept");
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn compaction_keeps_the_log_as_small_as_its_ranges_and_every_tombstone_survives_it() {
    let (storage, root) = temp_storage("compact");
    let mut log = open(&storage).expect("open");
    log.set_compact_records_min(8);
    // Groups as the node names them, (op << 10) | partition, deleted in creation order
    // while the group of op 1 stays live: every gap after it is settled and dead.
    let live = 1u64 << 10;
    let deleted: Vec<u64> = (2..200u64).map(|op| op << 10 | (op % 4)).collect();
    for &group in &deleted {
        let known = Known {
            through: ((group >> 10) << 10) | 1023,
            live: vec![live],
        };
        ready(log.append(group, &known)).expect("append");
        assert!(log.records() < 16, "compacted as it goes: {} records", log.records());
    }
    assert!(log.compactions() > 10, "{} compactions", log.compactions());
    assert_eq!(log.set().range_count(), 1, "{log:?}");
    assert!(!root.join(TOMBSTONE_LOG_TMP_PATH).exists(), "renamed over the log");

    let log = open(&storage).expect("reopen");
    assert!(deleted.iter().all(|&group| log.contains(group)), "{log:?}");
    assert!(!log.contains(live), "a live group is never covered");
    assert!(!log.contains(200 << 10), "nor a group of an op not yet settled");
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn a_compaction_cut_short_leaves_the_old_log_and_its_leftover_is_cleared_by_the_next() {
    let (inner, root) = temp_storage("compact-fails");
    let storage = FailingSyncs {
        inner,
        fail_syncs: Rc::new(Cell::new(0)),
        skip_syncs: Rc::new(Cell::new(0)),
    };
    let mut log = open(&storage).expect("open");
    log.set_compact_records_min(4);
    for group in [10, 11, 12] {
        ready(log.append(group, &NothingSettled)).expect("append");
    }
    // The fourth append's sync succeeds; the compaction's sync of the new file fails.
    storage.skip_syncs.set(1);
    storage.fail_syncs.set(1);
    ready(log.append(13, &NothingSettled)).expect("the append stands though its compaction failed");
    assert_eq!(log.compactions(), 0);
    assert!(
        root.join(TOMBSTONE_LOG_TMP_PATH).exists(),
        "the cut-short compaction's file"
    );
    assert_records_on_disk(&root, 4, "the old log is still the log");

    ready(log.append(14, &NothingSettled)).expect("append");
    assert_eq!(log.compactions(), 1, "the next append compacts, over the leftover");
    assert!(!root.join(TOMBSTONE_LOG_TMP_PATH).exists());
    assert_records_on_disk(&root, 2, "one range: its first and last ids");
    let log = open(&storage).expect("reopen");
    assert_eq!(log.set().ranges().collect::<Vec<_>>(), vec![(10, 14)]);
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn a_range_whose_last_record_is_damaged_with_records_after_it_refuses_the_boot() {
    let (storage, root) = temp_storage("range-damage");
    let mut log = open(&storage).expect("open");
    log.set_compact_records_min(4);
    for group in [10, 11, 12, 13] {
        ready(log.append(group, &NothingSettled)).expect("append");
    }
    assert_eq!(log.compactions(), 1);
    for group in [20, 30] {
        ready(log.append(group, &NothingSettled)).expect("append");
    }
    // The compacted log: range 10..=13 (two records), then the appended 20 and 30.
    assert_records_on_disk(&root, 4, "a range of two records, a single, an append");
    let mut bytes = std::fs::read(root.join(TOMBSTONE_LOG_PATH)).expect("read");
    bytes[TOMBSTONE_RECORD_BYTES + 3] ^= 0x40;
    std::fs::write(root.join(TOMBSTONE_LOG_PATH), &bytes).expect("write");
    let error = open(&storage).expect_err("a range cut in the middle of the log");
    assert!(
        error.to_string().contains("offset 0") && error.to_string().contains("range from 0xa"),
        "{error}"
    );
    let _ = std::fs::remove_dir_all(root);
}
