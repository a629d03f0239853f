//! The on-disk formats of a partition's data and of the metadata snapshot, run on the
//! simulator's storages (and once on real files): message segments and their recovery,
//! the atomically replaced snapshot file, and the state-transfer install protocol.
//!
//! Every future these storages return completes on its first poll, so the tests drive
//! them with `now_or_never` and read top to bottom like the code they exercise.

use std::collections::BTreeMap;
use std::future::Future;

use cluster::partition::StoredMessage;
use cluster::runtime::DiskStorage;
use cluster::seam::{DurableFile, DurableStorage, OpenMode};
use cluster::storage::install::{
    INSTALL_BACKUP_DIR, InstallError, InstallFile, InstallRecovery, MANIFEST_NAME, install, recover_install,
    stage_file, staging_name,
};
use cluster::storage::record::read_to_end;
use cluster::storage::segment::{
    IndexProblem, SegmentLog, SegmentOptions, SegmentRecovery, index_file_name, log_file_name, message_record_bytes,
    parse_segment_file_name,
};
use cluster::storage::snapshot_file::{
    Snapshot, SnapshotFileError, read_snapshot, remove_leftover_tmp, tmp_path, write_snapshot,
};
use futures::FutureExt;
use simulator::storage::{CrashKind, MemStorage, SimFile, SimStorage, SimStorageOptions, TraceOp};

#[path = "storage_formats_segments/install.rs"]
mod install;
use install::{assert_no_leftovers, segment_set};

/// The partition directory every test uses.
const DIR: &str = "partitions/7";

/// Payload bytes of [`fixed`] messages: with the 40-byte record header and the 24 bytes
/// of timestamp and id, each record is exactly 100 bytes.
const FIXED_PAYLOAD_BYTES: usize = 36;

/// Three fixed records per segment.
const THREE_PER_SEGMENT: SegmentOptions = SegmentOptions { segment_bytes_max: 300 };

fn ready<T>(future: impl Future<Output = T>) -> T {
    future
        .now_or_never()
        .expect("storage futures complete on their first poll")
}

/// A message whose size varies with its offset, tagged so two logs differ.
fn message(offset: u64, tag: &str) -> StoredMessage {
    let body = format!("{tag} message {offset};");
    StoredMessage {
        offset,
        timestamp_micros: 1_000 + offset * 10,
        id: (u128::from(offset) << 64) | 7,
        payload: body.repeat(1 + (offset % 3) as usize).into_bytes(),
    }
}

/// A message whose record is exactly 100 bytes. Its timestamp depends on the tag too,
/// so two logs of the same sizes still have different indexes.
fn fixed(offset: u64, tag: &str) -> StoredMessage {
    let mut payload = format!("{tag}{offset:>10}").into_bytes();
    payload.resize(FIXED_PAYLOAD_BYTES, b'.');
    let tag_micros: u64 = tag.bytes().map(u64::from).sum();
    StoredMessage {
        offset,
        timestamp_micros: 1_000 + offset * 10 + tag_micros,
        id: u128::from(offset),
        payload,
    }
}

fn open<S: DurableStorage>(storage: &S, frontier: u64, options: SegmentOptions) -> (SegmentLog<S>, SegmentRecovery) {
    ready(SegmentLog::open(storage.clone(), DIR, frontier, options)).expect("open segments")
}

fn append_all<S: DurableStorage>(log: &mut SegmentLog<S>, messages: impl IntoIterator<Item = StoredMessage>) {
    for message in messages {
        ready(log.append(&message)).expect("append");
    }
    ready(log.sync()).expect("sync");
}

/// Every message the log holds, read through the index in small steps.
fn read_all<S: DurableStorage>(log: &mut SegmentLog<S>) -> Vec<StoredMessage> {
    let mut out = Vec::new();
    let mut offset = log.oldest_offset();
    while offset < log.next_offset() {
        let batch = ready(log.read(offset, 4)).expect("read");
        assert!(
            !batch.is_empty(),
            "read at {offset} below next_offset {} returned nothing",
            log.next_offset()
        );
        offset += batch.len() as u64;
        out.extend(batch);
    }
    out
}

fn file_bytes<S: DurableStorage>(storage: &S, path: &str) -> Vec<u8> {
    let file = ready(storage.open(path, OpenMode::Existing)).unwrap_or_else(|error| panic!("{path}: {error}"));
    ready(read_to_end(&file)).expect("read file")
}

/// Replace a file's contents, durably.
fn put_file<S: DurableStorage>(storage: &S, path: &str, bytes: &[u8]) {
    let file = ready(storage.open(path, OpenMode::CreateOrOpen)).expect("open");
    ready(file.truncate(0)).expect("truncate");
    ready(file.write_at(0, bytes)).expect("write");
    ready(file.sync()).expect("sync");
}

fn list<S: DurableStorage>(storage: &S, dir: &str) -> Vec<String> {
    ready(storage.list(dir)).unwrap_or_default()
}

/// Segment files by name, with their contents.
type Files = BTreeMap<String, Vec<u8>>;

/// The segment files of [`DIR`] with their contents.
fn segment_files<S: DurableStorage>(storage: &S) -> Files {
    list(storage, DIR)
        .into_iter()
        .filter(|name| parse_segment_file_name(name).is_some())
        .map(|name| {
            let bytes = file_bytes(storage, &format!("{DIR}/{name}"));
            (name, bytes)
        })
        .collect()
}

fn path(name: &str) -> String {
    format!("{DIR}/{name}")
}

// ---- segments ---------------------------------------------------------------------

#[test]
fn messages_round_trip_through_segments_and_a_reopen() {
    let storage = MemStorage::new();
    let options = SegmentOptions {
        segment_bytes_max: 1_000,
    };
    let (mut log, report) = open(&storage, 0, options);
    assert!(report.is_clean() && report.segments == 0, "{report:?}");
    let written: Vec<StoredMessage> = (0..50).map(|offset| message(offset, "a")).collect();
    append_all(&mut log, written.clone());
    assert!(log.segments().len() > 3, "small segments roll: {:?}", log.segments());
    assert_eq!(read_all(&mut log), written);
    assert_eq!(ready(log.read(17, 1)).expect("read"), vec![written[17].clone()]);
    assert!(
        ready(log.read(50, 10)).expect("read").is_empty(),
        "nothing at next_offset"
    );
    drop(log);

    let (mut log, report) = open(&storage, 50, options);
    assert!(report.is_clean(), "{report:?}");
    assert_eq!((report.oldest_offset, report.next_offset), (0, 50));
    assert_eq!(read_all(&mut log), written);
    append_all(&mut log, [message(50, "a")]);
    assert_eq!(
        ready(log.read(49, 10)).expect("read"),
        vec![written[49].clone(), message(50, "a")]
    );
}

#[test]
fn the_active_segment_rolls_before_it_would_exceed_segment_bytes_max() {
    assert_eq!(message_record_bytes(FIXED_PAYLOAD_BYTES), 100);
    let storage = MemStorage::new();
    let (mut log, _) = open(&storage, 0, THREE_PER_SEGMENT);
    append_all(&mut log, (0..7).map(|offset| fixed(offset, "r")));
    let starts: Vec<(u64, u64)> = log.segments().iter().map(|s| (s.start_offset, s.end_offset)).collect();
    assert_eq!(starts, vec![(0, 3), (3, 6), (6, 7)]);
    let sizes: Vec<(String, usize)> = segment_files(&storage)
        .into_iter()
        .map(|(name, bytes)| (name, bytes.len()))
        .collect();
    assert_eq!(
        sizes,
        vec![
            (index_file_name(0), 72),
            (log_file_name(0), 300),
            (index_file_name(3), 72),
            (log_file_name(3), 300),
            (index_file_name(6), 24),
            (log_file_name(6), 100),
        ]
    );
}

#[test]
fn records_beyond_the_durable_frontier_are_discarded_and_counted() {
    let storage = MemStorage::new();
    let (mut log, _) = open(&storage, 0, THREE_PER_SEGMENT);
    append_all(&mut log, (0..10).map(|offset| fixed(offset, "old")));
    drop(log);

    // The caller published offsets 0..5: 5..10 were never promised durable.
    let (mut log, report) = open(&storage, 5, THREE_PER_SEGMENT);
    assert_eq!((report.next_offset, report.segments), (5, 2));
    assert_eq!(report.beyond_frontier.messages, 5);
    assert_eq!(report.beyond_frontier.bytes, 500);
    assert_eq!(
        (
            report.torn_tail.clone(),
            report.corruption.clone(),
            report.missing.clone()
        ),
        (None, None, None)
    );
    assert_eq!(
        report.removed_files,
        vec![
            path(&log_file_name(6)),
            path(&index_file_name(6)),
            path(&log_file_name(9)),
            path(&index_file_name(9))
        ]
    );
    assert_eq!(
        file_bytes(&storage, &path(&log_file_name(3))).len(),
        200,
        "segment 3 cut after offset 4"
    );
    assert_eq!(
        read_all(&mut log),
        (0..5).map(|offset| fixed(offset, "old")).collect::<Vec<_>>()
    );

    // The offsets are handed out again, and the new bytes are what reads see.
    append_all(&mut log, (5..8).map(|offset| fixed(offset, "new")));
    drop(log);
    let (mut log, report) = open(&storage, 8, THREE_PER_SEGMENT);
    assert!(report.is_clean(), "{report:?}");
    let expected: Vec<StoredMessage> = (0..5)
        .map(|offset| fixed(offset, "old"))
        .chain((5..8).map(|offset| fixed(offset, "new")))
        .collect();
    assert_eq!(read_all(&mut log), expected);
}

#[test]
fn a_torn_log_tail_is_cut_and_reported() {
    let storage = MemStorage::new();
    let (mut log, _) = open(&storage, 0, SegmentOptions::default());
    append_all(&mut log, (0..5).map(|offset| fixed(offset, "t")));
    drop(log);
    let log_path = path(&log_file_name(0));
    let mut bytes = file_bytes(&storage, &log_path);
    bytes.truncate(bytes.len() - 30);
    put_file(&storage, &log_path, &bytes);

    // Beyond the frontier a torn record is just more unpublished bytes.
    let (_, report) = ready(SegmentLog::open(storage.clone(), DIR, 4, SegmentOptions::default())).expect("open");
    assert_eq!((report.next_offset, report.torn_tail.clone()), (4, None));
    assert_eq!(
        report.beyond_frontier,
        cluster::storage::segment::Discarded { messages: 0, bytes: 70 }
    );

    // Below it, the tail was promised: the cut is reported, and what is missing.
    let mut bytes = file_bytes(&storage, &log_path);
    bytes.extend_from_slice(&[0xAB; 70]);
    put_file(&storage, &log_path, &bytes);
    let (mut log, report) = open(&storage, 5, SegmentOptions::default());
    let torn = report.torn_tail.clone().expect("a torn tail");
    assert_eq!(
        (torn.file.as_str(), torn.position, torn.offset, torn.bytes),
        (log_path.as_str(), 400, 4, 70)
    );
    assert_eq!(
        (report.next_offset, report.missing.clone(), report.corruption.clone()),
        (4, Some(4..5), None)
    );
    assert_eq!(file_bytes(&storage, &log_path).len(), 400);
    assert_eq!(read_all(&mut log).len(), 4);
}

#[test]
fn a_missing_torn_or_wrong_index_is_rebuilt_from_the_log() {
    let storage = MemStorage::new();
    let (mut log, _) = open(&storage, 0, SegmentOptions::default());
    let written: Vec<StoredMessage> = (0..6).map(|offset| message(offset, "i")).collect();
    append_all(&mut log, written.clone());
    drop(log);
    let index_path = path(&index_file_name(0));
    let good = file_bytes(&storage, &index_path);

    let mut wrong = good.clone();
    wrong[24 * 3 + 8] ^= 0x01; // entry 3's position
    let damages: [(&str, Option<Vec<u8>>, IndexProblem); 4] = [
        ("missing", None, IndexProblem::Missing),
        ("torn", Some(good[..30].to_vec()), IndexProblem::Torn { bytes: 30 }),
        (
            "short",
            Some(good[..48].to_vec()),
            IndexProblem::Short {
                entries: 2,
                expected: 6,
            },
        ),
        ("wrong", Some(wrong), IndexProblem::Mismatch { entry: 3 }),
    ];
    for (what, damaged, problem) in damages {
        match damaged {
            None => ready(storage.remove(&index_path)).expect("remove index"),
            Some(bytes) => put_file(&storage, &index_path, &bytes),
        }
        let (mut log, report) = open(&storage, 6, SegmentOptions::default());
        assert_eq!(report.indexes_rebuilt.len(), 1, "{what}: {report:?}");
        assert_eq!(report.indexes_rebuilt[0].problem, problem, "{what}");
        assert_eq!((report.next_offset, report.corruption.clone()), (6, None), "{what}");
        assert_eq!(file_bytes(&storage, &index_path), good, "{what}: rebuilt byte for byte");
        assert_eq!(read_all(&mut log), written, "{what}");
    }
}

#[test]
fn corruption_below_the_frontier_is_reported_with_its_offsets_and_never_served() {
    let storage = MemStorage::new();
    let (mut log, _) = open(&storage, 0, SegmentOptions::default());
    append_all(&mut log, (0..10).map(|offset| fixed(offset, "c")));
    drop(log);
    let log_path = path(&log_file_name(0));
    let mut bytes = file_bytes(&storage, &log_path);
    bytes[4 * 100 + 70] ^= 0x40; // a bit in record 4's payload: valid records follow
    put_file(&storage, &log_path, &bytes);

    let (mut log, report) = open(&storage, 10, SegmentOptions::default());
    let corruption = report.corruption.clone().expect("corruption reported");
    assert_eq!(
        (corruption.file.as_str(), corruption.position),
        (log_path.as_str(), 400)
    );
    assert_eq!(
        corruption.damaged,
        4..5,
        "record 4 is bad; record 5 was found valid after it"
    );
    assert!(corruption.why.contains("checksum"), "{}", corruption.why);
    assert_eq!(
        report.missing,
        Some(4..10),
        "everything from the damage on must be repaired"
    );
    assert_eq!(
        report.after_damage.messages, 5,
        "5..10 were valid but cannot be applied past a hole"
    );
    assert_eq!(report.torn_tail, None);
    assert_eq!(
        read_all(&mut log),
        (0..4).map(|offset| fixed(offset, "c")).collect::<Vec<_>>()
    );
}

#[test]
fn a_gap_between_segments_below_the_frontier_is_corruption() {
    let storage = MemStorage::new();
    let (mut log, _) = open(&storage, 0, THREE_PER_SEGMENT);
    append_all(&mut log, (0..9).map(|offset| fixed(offset, "g")));
    drop(log);
    ready(storage.remove(&path(&log_file_name(3)))).expect("lose a middle segment");
    let (_, report) = open(&storage, 9, THREE_PER_SEGMENT);
    let corruption = report.corruption.clone().expect("a gap is corruption");
    assert_eq!((corruption.file, corruption.damaged), (path(&log_file_name(6)), 3..6));
    assert_eq!((report.next_offset, report.missing.clone()), (3, Some(3..9)));
    assert_eq!(report.after_damage.messages, 3);
    assert!(
        report.removed_files.contains(&path(&index_file_name(3))),
        "orphan index removed: {report:?}"
    );
}

#[test]
fn retention_deletes_whole_sealed_segments_and_never_the_active_one() {
    let storage = MemStorage::new();
    let (mut log, _) = open(&storage, 0, THREE_PER_SEGMENT);
    append_all(&mut log, (0..7).map(|offset| fixed(offset, "k")));

    let report = ready(log.delete_below(4)).expect("retention");
    assert_eq!(
        (report.segments, report.messages, report.bytes),
        (1, 3, 300),
        "only 0..3 is wholly below 4"
    );
    let report = ready(log.delete_below(u64::MAX)).expect("retention");
    assert_eq!(report.segments, 1, "3..6 goes, 6..7 is active and stays");
    assert_eq!(ready(log.delete_older_than(u64::MAX)).expect("retention").segments, 0);
    assert_eq!((log.oldest_offset(), log.next_offset()), (6, 7));
    assert_eq!(
        segment_files(&storage).keys().cloned().collect::<Vec<_>>(),
        vec![index_file_name(6), log_file_name(6)]
    );

    append_all(&mut log, (7..10).map(|offset| fixed(offset, "k")));
    // Segment 6..9 is sealed; its newest message is offset 8. 9..10 is active.
    let newest = fixed(8, "k").timestamp_micros;
    assert_eq!(log.segments()[0].newest_timestamp_micros, Some(newest));
    assert_eq!(
        ready(log.delete_older_than(newest)).expect("retention").segments,
        0,
        "not older than itself"
    );
    assert_eq!(ready(log.delete_older_than(newest + 1)).expect("retention").segments, 1);
    assert_eq!(
        ready(log.delete_older_than(u64::MAX)).expect("retention").segments,
        0,
        "the active one stays"
    );
    drop(log);
    let (mut log, report) = open(&storage, 10, THREE_PER_SEGMENT);
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(read_all(&mut log), vec![fixed(9, "k")]);
}

#[test]
fn purge_keeps_the_next_offset_across_a_reopen() {
    let storage = MemStorage::new();
    let (mut log, _) = open(&storage, 0, THREE_PER_SEGMENT);
    append_all(&mut log, (0..5).map(|offset| fixed(offset, "p")));
    assert_eq!(ready(log.purge()).expect("purge").messages, 5);
    drop(log);
    let (log, report) = open(&storage, 5, THREE_PER_SEGMENT);
    assert_eq!((report.oldest_offset, report.next_offset, report.segments), (5, 5, 1));
    assert_eq!(log.next_offset(), 5, "offsets never restart at 0");
}

#[test]
fn stray_files_are_reported_and_left_alone() {
    let storage = MemStorage::new();
    let (mut log, _) = open(&storage, 0, SegmentOptions::default());
    append_all(&mut log, [fixed(0, "s")]);
    drop(log);
    put_file(&storage, &path("notes.txt"), b"hello");
    put_file(&storage, &path("0.log"), b"not a segment name");
    let (_, report) = open(&storage, 1, SegmentOptions::default());
    assert_eq!(report.stray_files, vec![path("0.log"), path("notes.txt")]);
    assert!(report.is_clean());
    assert_eq!(file_bytes(&storage, &path("notes.txt")), b"hello");
}

#[test]
fn segments_recover_at_every_crash_point_of_appends_and_syncs() {
    // Appends 0..8 with a sync after every third; for every trace position, every crash
    // kind and writeback on and off: recovery with the last frontier a sync reported
    // returns exactly the synced messages and reports nothing lost.
    let run = |storage: &SimStorage| -> u64 {
        let mut synced = 0;
        let Ok((mut log, _)) = ready(SegmentLog::open(storage.clone(), DIR, 0, THREE_PER_SEGMENT)) else {
            return synced;
        };
        for offset in 0..8 {
            if ready(log.append(&fixed(offset, "x"))).is_err() {
                return synced;
            }
            if offset % 3 == 2 || offset == 7 {
                if ready(log.sync()).is_err() {
                    return synced;
                }
                synced = log.synced_end_offset();
            }
        }
        synced
    };
    let mut cases = 0;
    for writeback in [false, true] {
        let options = SimStorageOptions {
            seed: 11,
            writeback,
            ..SimStorageOptions::default()
        };
        let total = {
            let storage = SimStorage::new(options.clone());
            assert_eq!(run(&storage), 8);
            storage.operations()
        };
        for halt in 0..total {
            for crash in CrashKind::ALL {
                let storage = SimStorage::new(SimStorageOptions {
                    halt_after: Some(halt),
                    ..options.clone()
                });
                let synced = run(&storage);
                storage.crash(crash);
                let (mut log, report) = open(&storage, synced, THREE_PER_SEGMENT);
                let context = format!("halt after {halt}, {crash:?}, writeback {writeback}: {report:?}");
                assert_eq!(report.next_offset, synced, "{context}");
                assert!(
                    report.corruption.is_none() && report.torn_tail.is_none() && report.missing.is_none(),
                    "{context}"
                );
                assert_eq!(
                    read_all(&mut log),
                    (0..synced).map(|o| fixed(o, "x")).collect::<Vec<_>>(),
                    "{context}"
                );
                cases += 1;
            }
        }
    }
    assert!(cases > 100, "only {cases} crash cases ran");
}

// ---- snapshot file ----------------------------------------------------------------

const SNAPSHOT: &str = "metadata/snapshot";

#[test]
fn a_snapshot_round_trips_and_a_missing_one_is_none() {
    let storage = MemStorage::new();
    assert_eq!(ready(read_snapshot(&storage, SNAPSHOT)).expect("read"), None);
    ready(write_snapshot(&storage, SNAPSHOT, 41, b"state at op 41")).expect("write");
    ready(write_snapshot(&storage, SNAPSHOT, 42, b"state at op 42")).expect("replace");
    let read = ready(read_snapshot(&storage, SNAPSHOT)).expect("read");
    assert_eq!(
        read,
        Some(Snapshot {
            key: 42,
            bytes: b"state at op 42".to_vec()
        })
    );
    assert_eq!(
        list(&storage, "metadata"),
        vec!["snapshot".to_owned()],
        "no .tmp left behind"
    );
}

#[test]
fn a_crash_at_any_step_of_a_snapshot_write_keeps_the_old_snapshot_or_the_new_one() {
    let mut cases = 0;
    for writeback in [false, true] {
        let options = SimStorageOptions {
            seed: 3,
            writeback,
            ..SimStorageOptions::default()
        };
        let setup = |storage: &SimStorage| {
            ready(write_snapshot(storage, SNAPSHOT, 1, b"old")).expect("old snapshot");
            storage.operations()
        };
        let (start, end) = {
            let storage = SimStorage::new(options.clone());
            let start = setup(&storage);
            ready(write_snapshot(&storage, SNAPSHOT, 2, b"new")).expect("new snapshot");
            (start, storage.operations())
        };
        for halt in start.saturating_sub(1)..end {
            for crash in CrashKind::ALL {
                let storage = SimStorage::new(options.clone());
                setup(&storage);
                storage.set_halt_after(Some(halt));
                let wrote = ready(write_snapshot(&storage, SNAPSHOT, 2, b"new")).is_ok();
                storage.crash(crash);
                ready(remove_leftover_tmp(&storage, SNAPSHOT)).expect("boot cleanup");
                let read = ready(read_snapshot(&storage, SNAPSHOT))
                    .expect("never corrupt")
                    .expect("never absent");
                let context = format!("halt after {halt}, {crash:?}, writeback {writeback}");
                assert!(read.key == 1 || read.key == 2, "{context}");
                assert_eq!(
                    read.bytes,
                    if read.key == 1 {
                        b"old".to_vec()
                    } else {
                        b"new".to_vec()
                    },
                    "{context}"
                );
                if wrote {
                    assert_eq!(read.key, 2, "{context}: an acknowledged write was lost");
                }
                assert!(!storage.exists(&tmp_path(SNAPSHOT)), "{context}: .tmp survived boot");
                cases += 1;
            }
        }
    }
    assert!(cases > 20, "only {cases} crash cases ran");
}

#[test]
fn a_crash_before_the_rename_keeps_the_old_snapshot_and_boot_removes_the_tmp() {
    let storage = MemStorage::new();
    ready(write_snapshot(&storage, SNAPSHOT, 1, b"old")).expect("write");
    // What a writer that died before its rename leaves: a partial .tmp.
    put_file(&storage, &tmp_path(SNAPSHOT), b"half a rec");
    assert_eq!(
        ready(read_snapshot(&storage, SNAPSHOT)).expect("read").map(|s| s.key),
        Some(1)
    );
    assert!(ready(remove_leftover_tmp(&storage, SNAPSHOT)).expect("cleanup"));
    assert!(
        !ready(remove_leftover_tmp(&storage, SNAPSHOT)).expect("cleanup"),
        "nothing left the second time"
    );
    assert_eq!(list(&storage, "metadata"), vec!["snapshot".to_owned()]);
}

#[test]
fn a_corrupt_snapshot_is_an_error_naming_the_file_never_absent() {
    let storage = MemStorage::new();
    ready(write_snapshot(&storage, SNAPSHOT, 9, b"acknowledged metadata")).expect("write");
    let good = file_bytes(&storage, SNAPSHOT);
    let mut flipped = good.clone();
    flipped[50] ^= 0x08;
    let mut trailing = good.clone();
    trailing.extend_from_slice(b"junk");
    for (what, bytes, expect) in [
        ("flipped bit", flipped, "checksum"),
        ("empty", Vec::new(), "end of log"),
        ("torn", good[..good.len() - 3].to_vec(), "truncated"),
        ("trailing bytes", trailing, "4 bytes follow"),
    ] {
        put_file(&storage, SNAPSHOT, &bytes);
        let error = ready(read_snapshot(&storage, SNAPSHOT)).expect_err(what);
        assert!(matches!(error, SnapshotFileError::Corrupt { .. }), "{what}: {error:?}");
        let text = error.to_string();
        assert!(text.contains(SNAPSHOT) && text.contains(expect), "{what}: {text}");
    }
}

// ---- real files -------------------------------------------------------------------

#[test]
fn the_formats_work_on_real_files() {
    let root = std::env::temp_dir().join(format!("storage-formats-segments-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let storage = DiskStorage::new(&root).expect("temp dir");

    // Segments, with a torn tail made by the filesystem's own truncate.
    let (mut log, _) = open(&storage, 0, THREE_PER_SEGMENT);
    append_all(&mut log, (0..5).map(|offset| fixed(offset, "disk")));
    drop(log);
    let file = root.join(DIR).join(log_file_name(3));
    let handle = std::fs::OpenOptions::new().write(true).open(&file).expect("open");
    handle.set_len(150).expect("tear");
    let (mut log, report) = open(&storage, 5, THREE_PER_SEGMENT);
    assert_eq!((report.next_offset, report.torn_tail.map(|t| t.offset)), (4, Some(4)));
    assert_eq!(
        report.indexes_rebuilt.len(),
        1,
        "the index had an entry for the torn record"
    );
    assert_eq!(read_all(&mut log).len(), 4);
    drop(log);

    // A snapshot.
    ready(write_snapshot(&storage, SNAPSHOT, 3, b"on disk")).expect("write snapshot");
    assert_eq!(
        ready(read_snapshot(&storage, SNAPSHOT)).expect("read").map(|s| s.bytes),
        Some(b"on disk".to_vec())
    );

    // An install (a subdirectory for the backup, renames, directory syncs).
    let new = segment_set(8, "disk-new");
    let staged: Vec<InstallFile> = new
        .iter()
        .map(|(name, bytes)| ready(stage_file(&storage, DIR, name, bytes)).expect("stage"))
        .collect();
    ready(install(&storage, DIR, &staged)).expect("install on disk");
    assert_eq!(segment_files(&storage), new);
    assert_no_leftovers(&storage, "on disk");
    std::fs::remove_dir_all(&root).expect("cleanup");
}
