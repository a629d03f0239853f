//! The superblock, the metadata WAL and the partition WAL on simulated storage: round
//! trips, damage, torn tails, crashes at every step, power loss and writeback failure.
//!
//! `MemStorage` is used where a test damages bytes by hand; `SimStorage` where it needs
//! what a crash or a power loss really leaves (nothing is stable unless synced).

mod common;

use std::rc::Rc;

use cluster::seam::{DurableFile, DurableStorage, OpenMode};
use cluster::storage::partition_wal::{Durability, FRONTIER_FILE, PUBLISH_BYTES_INTERVAL, PartitionWal};
use cluster::storage::superblock::{
    Identity, SUPERBLOCK_COPIES, SUPERBLOCK_FILE, SUPERBLOCK_SLOT_BYTES, SuperblockError, SuperblockFile,
    SuperblockState, cluster_id,
};
use cluster::storage::wal::{
    GAP_RESERVED_PAYLOAD_MIN_BYTES, InterruptedRewrite, WAL_PATH, WAL_WRITE_BYTES_MAX, Wal, WalError,
};
use cluster::vsr::store::StoredRecord;
use cluster::wire::{self, Command, HEADER_BYTES, Header};
use futures::FutureExt;
use simulator::storage::{CrashKind, FaultKind, MemStorage, SimStorage, SimStorageOptions, TraceOp};

/// Every simulated storage future completes on its first poll.
fn ready<T>(future: impl Future<Output = T>) -> T {
    future
        .now_or_never()
        .expect("simulated storage completes on the first poll")
}

fn frame(op: u64, body_len: usize) -> Vec<u8> {
    let mut header = Header::new(Command::Prepare);
    header.op = op;
    header.view = 1;
    let body: Vec<u8> = (0..body_len).map(|index| (op as usize * 31 + index) as u8).collect();
    wire::seal_header(header, &body)
}

fn prepare(op: u64, body_len: usize) -> StoredRecord {
    StoredRecord::Prepare(Rc::from(frame(op, body_len)))
}

/// The header of `prepare(op, body_len)` alone, as a view change stores it.
fn header_only(op: u64, body_len: usize) -> StoredRecord {
    StoredRecord::Header(frame(op, body_len)[..HEADER_BYTES].to_vec())
}

fn identity() -> Identity {
    Identity {
        cluster: cluster_id("formats-test"),
        group: 0,
        replica: 0,
        replica_count: 3,
    }
}

fn state(view: u64) -> SuperblockState {
    SuperblockState {
        view,
        log_view: view,
        commit_max: view * 3,
        extension: b"checkpoint".to_vec(),
    }
}

/// Overwrite bytes of a file in place (damage on purpose).
fn damage<S: DurableStorage>(storage: &S, path: &str, offset: u64, bytes: &[u8]) {
    let file = ready(storage.open(path, OpenMode::Existing)).expect("open to damage");
    ready(file.write_at(offset, bytes)).expect("damage");
}

fn file_len<S: DurableStorage>(storage: &S, path: &str) -> u64 {
    let file = ready(storage.open(path, OpenMode::Existing)).expect("open");
    ready(file.len()).expect("len")
}

fn ops(records: &[(u64, StoredRecord)]) -> Vec<u64> {
    records.iter().map(|(op, _)| *op).collect()
}

// ---------------------------------------------------------------------------------
// Superblock

#[test]
fn superblock_a_damaged_copy_is_skipped_and_reported() {
    let storage = MemStorage::new();
    let mut superblock = ready(SuperblockFile::format(&storage, "", identity())).expect("format");
    ready(superblock.write(state(4))).expect("write");
    damage(&storage, SUPERBLOCK_FILE, SUPERBLOCK_SLOT_BYTES + 50, &[0xff; 8]);
    let (reopened, report) = ready(SuperblockFile::open(&storage, "", identity())).expect("open");
    assert_eq!(reopened.state(), &state(4));
    assert_eq!(
        report.damaged.iter().map(|damage| damage.copy).collect::<Vec<_>>(),
        vec![1]
    );
    assert!(
        report.damaged[0].reason.contains("checksum"),
        "{}",
        report.damaged[0].reason
    );
}

#[test]
fn superblock_with_every_copy_damaged_is_refused_not_reformatted() {
    let storage = MemStorage::new();
    ready(SuperblockFile::format(&storage, "", identity())).expect("format");
    for copy in 0..SUPERBLOCK_COPIES as u64 {
        damage(&storage, SUPERBLOCK_FILE, copy * SUPERBLOCK_SLOT_BYTES + 20, &[0xaa; 4]);
    }
    let error = ready(SuperblockFile::open(&storage, "", identity())).expect_err("no intact copy");
    let SuperblockError::NoIntactCopy { damaged, .. } = &error else {
        panic!("expected NoIntactCopy, got {error}");
    };
    assert_eq!(damaged.len(), SUPERBLOCK_COPIES);
    assert!(
        error.to_string().contains("every superblock copy is damaged"),
        "{error}"
    );
    // The damaged directory is still "formatted": format refuses to overwrite it.
    assert!(matches!(
        ready(SuperblockFile::format(&storage, "", identity())),
        Err(SuperblockError::AlreadyFormatted { .. })
    ));
}

#[test]
fn superblock_refuses_another_cluster_and_an_unformatted_directory() {
    let storage = MemStorage::new();
    let missing = ready(SuperblockFile::open(&storage, "", identity())).expect_err("not formatted");
    assert!(matches!(missing, SuperblockError::NotFormatted { .. }), "{missing}");
    ready(SuperblockFile::format(&storage, "", identity())).expect("format");
    let stranger = Identity {
        cluster: cluster_id("someone-else"),
        ..identity()
    };
    let error = ready(SuperblockFile::open(&storage, "", stranger)).expect_err("wrong cluster");
    let message = error.to_string();
    assert!(message.contains("belongs to another cluster"), "{message}");
    assert!(message.contains(&format!("{:#034x}", identity().cluster)), "{message}");
    assert!(message.contains(&format!("{:#034x}", stranger.cluster)), "{message}");
}

/// Halt the process after each call of a superblock write in turn, lose power, reopen:
/// the state is the old one or the new one, never an error, and the next write works.
#[test]
fn superblock_write_interrupted_at_every_step_keeps_an_intact_copy() {
    for halt in 0.. {
        let storage = SimStorage::new(SimStorageOptions::default());
        let mut superblock = ready(SuperblockFile::format(&storage, "", identity())).expect("format");
        ready(superblock.write(state(1))).expect("write");
        let start = storage.operations();
        storage.set_halt_after(Some(start + halt));
        let finished = ready(superblock.write(state(2))).is_ok();
        storage.crash(CrashKind::PowerLoss);
        let (mut reopened, report) = ready(SuperblockFile::open(&storage, "", identity()))
            .unwrap_or_else(|error| panic!("halt after call {halt}: {error}"));
        if finished {
            assert_eq!(reopened.state(), &state(2), "a write that returned Ok is durable");
        } else {
            assert!(
                [state(1), state(2)].contains(reopened.state()),
                "halt {halt}: {:?}",
                reopened.state()
            );
        }
        ready(reopened.write(state(3))).expect("write after recovery");
        let (again, _) = ready(SuperblockFile::open(&storage, "", identity())).expect("reopen");
        assert_eq!(again.state(), &state(3));
        if finished {
            assert!(report.damaged.is_empty() && report.stale.is_empty(), "{report:?}");
            break;
        }
    }
}

/// A half-finished write: the first half of the copies carries the new state, the rest
/// the old one; the newest wins and the rest are reported stale.
#[test]
fn superblock_newest_intact_copy_wins_over_stale_ones() {
    let storage = SimStorage::new(SimStorageOptions::default());
    let mut superblock = ready(SuperblockFile::format(&storage, "", identity())).expect("format");
    ready(superblock.write(state(1))).expect("write");
    // Calls of a write: write_at copy 0, copy 1, sync, copy 2, copy 3, sync.
    storage.set_halt_after(Some(storage.operations() + 2));
    assert!(ready(superblock.write(state(2))).is_err());
    storage.crash(CrashKind::PowerLoss);
    let (reopened, report) = ready(SuperblockFile::open(&storage, "", identity())).expect("open");
    assert_eq!(reopened.state(), &state(2));
    assert_eq!(report.stale, vec![2, 3]);
}

/// A crash anywhere in `format` leaves no superblock or a whole one.
#[test]
fn superblock_format_interrupted_at_every_step_is_unformatted_or_whole() {
    for halt in 0.. {
        let storage = SimStorage::new(SimStorageOptions::default());
        storage.set_halt_after(Some(halt));
        let finished = ready(SuperblockFile::format(&storage, "node", identity())).is_ok();
        storage.crash(CrashKind::PowerLoss);
        match ready(SuperblockFile::open(&storage, "node", identity())) {
            Ok((superblock, _)) => assert_eq!(superblock.state(), &SuperblockState::default()),
            Err(SuperblockError::NotFormatted { .. }) => {
                assert!(!finished, "a format that returned Ok must survive a power loss");
                ready(SuperblockFile::format(&storage, "node", identity())).expect("format again");
            }
            Err(error) => panic!("halt after call {halt}: {error}"),
        }
        if finished {
            break;
        }
    }
}

// ---------------------------------------------------------------------------------
// Metadata WAL

#[test]
fn wal_records_round_trip_through_a_reopen() {
    let storage = MemStorage::new();
    let (mut wal, recovery) = ready(Wal::open(&storage)).expect("open");
    assert_eq!(recovery, Default::default());
    let records = vec![(1, prepare(1, 10)), (2, header_only(2, 300)), (3, prepare(3, 0))];
    ready(wal.append_all(&records)).expect("append");
    ready(wal.sync()).expect("sync");
    assert_eq!(ready(wal.read(2)).expect("read"), Some(header_only(2, 300)));
    let (_, recovery) = ready(Wal::open(&storage)).expect("reopen");
    assert_eq!(recovery.records, records);
    assert!(recovery.damaged.is_empty() && recovery.torn_tail.is_none());
}

#[test]
fn wal_torn_tail_is_truncated_and_reported() {
    let storage = MemStorage::new();
    let (mut wal, _) = ready(Wal::open(&storage)).expect("open");
    for op in 1..=3 {
        ready(wal.append(op, &prepare(op, 100))).expect("append");
    }
    ready(wal.sync()).expect("sync");
    let full = file_len(&storage, WAL_PATH);
    // The last record reached the disk only in part.
    let file = ready(storage.open(WAL_PATH, OpenMode::Existing)).expect("open");
    ready(file.truncate(full - 30)).expect("tear");
    let (mut wal, recovery) = ready(Wal::open(&storage)).expect("reopen");
    assert_eq!(ops(&recovery.records), vec![1, 2]);
    let tail = recovery.torn_tail.expect("torn tail reported");
    assert_eq!(tail.bytes, full - 30 - tail.offset);
    assert_eq!(file_len(&storage, WAL_PATH), tail.offset, "the torn tail is cut away");
    assert!(recovery.damaged.is_empty());
    // The log goes on from the cut.
    ready(wal.append(3, &prepare(3, 5))).expect("append after recovery");
    ready(wal.sync()).expect("sync");
    let (_, recovery) = ready(Wal::open(&storage)).expect("reopen");
    assert_eq!(ops(&recovery.records), vec![1, 2, 3]);
    assert!(recovery.torn_tail.is_none());
}

#[test]
fn wal_corruption_in_the_middle_reports_the_op_range_and_keeps_later_records() {
    let storage = MemStorage::new();
    let (mut wal, _) = ready(Wal::open(&storage)).expect("open");
    for op in 1..=5 {
        ready(wal.append(op, &prepare(op, 64))).expect("append");
    }
    ready(wal.sync()).expect("sync");
    let record_bytes = file_len(&storage, WAL_PATH) / 5;
    // A bit flips inside op 3's record.
    damage(&storage, WAL_PATH, 2 * record_bytes + 100, &[0x5a]);
    let (_, recovery) = ready(Wal::open(&storage)).expect("reopen");
    assert_eq!(ops(&recovery.records), vec![1, 2, 4, 5]);
    assert_eq!(recovery.damaged.len(), 1);
    let damaged = &recovery.damaged[0];
    assert_eq!((damaged.after_op, damaged.before_op), (Some(2), Some(4)));
    assert_eq!(damaged.ops(), Some(3..=3));
    assert_eq!((damaged.offset, damaged.bytes), (2 * record_bytes, record_bytes));
    assert!(
        recovery.torn_tail.is_none(),
        "damage followed by valid records is not a tail"
    );
}

#[test]
fn wal_record_out_of_op_order_is_damage() {
    let storage = MemStorage::new();
    let (mut wal, _) = ready(Wal::open(&storage)).expect("open");
    for op in 1..=3 {
        ready(wal.append(op, &prepare(op, 8))).expect("append");
    }
    ready(wal.sync()).expect("sync");
    // A stale copy of op 1's record lands after op 3 (say, a misdirected write).
    let len = file_len(&storage, WAL_PATH);
    let record_bytes = len / 3;
    let file = ready(storage.open(WAL_PATH, OpenMode::Existing)).expect("open");
    let mut first = vec![0; record_bytes as usize];
    ready(file.read_at(0, &mut first)).expect("read");
    ready(file.write_at(len, &first)).expect("write");
    let (_, recovery) = ready(Wal::open(&storage)).expect("reopen");
    assert_eq!(ops(&recovery.records), vec![1, 2, 3]);
    let tail = recovery.torn_tail.expect("reported");
    assert!(tail.reason.contains("op 1 is not above the op 3"), "{}", tail.reason);
}

#[test]
fn wal_refuses_an_append_below_the_head() {
    let storage = MemStorage::new();
    let (mut wal, _) = ready(Wal::open(&storage)).expect("open");
    ready(wal.append(5, &prepare(5, 1))).expect("append");
    let error = ready(wal.append(5, &prepare(5, 1))).expect_err("out of order");
    assert!(
        matches!(error, WalError::OutOfOrder { op: 5, last_op: 5, .. }),
        "{error}"
    );
    let error = ready(wal.append(6, &prepare(7, 1))).expect_err("mismatched op");
    assert!(error.to_string().contains("op 7"), "{error}");
}

#[test]
fn wal_truncate_after_then_reopen_holds_the_new_view_s_ops() {
    let storage = MemStorage::new();
    let (mut wal, _) = ready(Wal::open(&storage)).expect("open");
    for op in 1..=5 {
        ready(wal.append(op, &prepare(op, 20))).expect("append");
    }
    ready(wal.sync()).expect("sync");
    ready(wal.truncate_after(3)).expect("truncate");
    assert_eq!(wal.last_op(), 3);
    ready(wal.append(4, &prepare(4, 77))).expect("append the new view's op 4");
    ready(wal.sync()).expect("sync");
    let (_, recovery) = ready(Wal::open(&storage)).expect("reopen");
    assert_eq!(ops(&recovery.records), vec![1, 2, 3, 4]);
    assert_eq!(recovery.records[3].1, prepare(4, 77));
}

#[test]
fn wal_replace_fills_a_header_in_place_inserts_into_a_gap_and_removes() {
    let storage = MemStorage::new();
    let (mut wal, _) = ready(Wal::open(&storage)).expect("open");
    let records = vec![(1, prepare(1, 10)), (2, header_only(2, 500)), (4, prepare(4, 10))];
    ready(wal.append_all(&records)).expect("append");
    ready(wal.sync()).expect("sync");
    let len = wal.len_bytes();
    // The body arrives: it takes the slot the header reserved.
    ready(wal.replace(2, &prepare(2, 500))).expect("replace");
    assert_eq!(wal.len_bytes(), len, "a header's slot holds its whole frame");
    // Repair fills the gap at 3: op 4 moves up.
    ready(wal.replace(3, &prepare(3, 33))).expect("insert");
    ready(wal.remove(1)).expect("remove");
    assert_eq!(
        wal.synced_bytes(),
        wal.len_bytes(),
        "replace and remove are durable on return"
    );
    let (_, recovery) = ready(Wal::open(&storage)).expect("reopen");
    assert_eq!(
        recovery.records,
        vec![(2, prepare(2, 500)), (3, prepare(3, 33)), (4, prepare(4, 10))]
    );
    assert!(recovery.damaged.is_empty() && recovery.torn_tail.is_none());
}

/// A batch larger than one write, one sync: every record survives a power loss.
#[test]
fn wal_batch_split_into_several_writes_is_durable_after_its_one_sync() {
    let storage = SimStorage::new(SimStorageOptions::default());
    let (mut wal, _) = ready(Wal::open(&storage)).expect("open");
    let records: Vec<(u64, StoredRecord)> = (1..=40).map(|op| (op, prepare(op, 64 * 1024))).collect();
    ready(wal.append_all(&records)).expect("append");
    assert!(
        wal.len_bytes() > 2 * WAL_WRITE_BYTES_MAX as u64,
        "the batch spans several writes"
    );
    let writes = storage
        .trace()
        .iter()
        .filter(|entry| entry.op == TraceOp::WriteAt && entry.path == WAL_PATH)
        .count();
    assert!(writes >= 3, "{writes} writes");
    ready(wal.sync()).expect("sync");
    storage.crash(CrashKind::PowerLoss);
    let (_, recovery) = ready(Wal::open(&storage)).expect("reopen");
    assert_eq!(recovery.records, records);
}

/// Unsynced appends are lost to a power loss without leaving damage.
#[test]
fn wal_unsynced_appends_vanish_cleanly_at_power_loss() {
    let storage = SimStorage::new(SimStorageOptions::default());
    let (mut wal, _) = ready(Wal::open(&storage)).expect("open");
    ready(wal.append(1, &prepare(1, 10))).expect("append");
    ready(wal.sync()).expect("sync");
    ready(wal.append(2, &prepare(2, 10))).expect("append, never synced");
    storage.crash(CrashKind::PowerLoss);
    let (_, recovery) = ready(Wal::open(&storage)).expect("reopen");
    assert_eq!(ops(&recovery.records), vec![1]);
    assert!(recovery.damaged.is_empty());
}

/// A writeback error is reported to the handle that wrote: the WAL's sync fails and
/// it stays poisoned; a fresh handle's sync would have said all is well.
#[test]
fn wal_sync_reports_a_writeback_failure_and_poisons_the_wal() {
    let storage = SimStorage::new(SimStorageOptions::default());
    let (mut wal, _) = ready(Wal::open(&storage)).expect("open");
    ready(wal.append(1, &prepare(1, 10))).expect("append");
    storage.fail_writeback(WAL_PATH).expect("fail writeback");
    let fresh = ready(storage.open(WAL_PATH, OpenMode::Existing)).expect("fresh handle");
    assert!(ready(fresh.sync()).is_ok(), "a fresh handle never hears of the failure");
    let error = ready(wal.sync()).expect_err("the writing handle hears of it");
    assert!(error.to_string().contains("writeback"), "{error}");
    let again = ready(wal.sync()).expect_err("poisoned");
    assert!(matches!(again, WalError::Poisoned { .. }), "{again}");
    assert!(matches!(
        ready(wal.append(2, &prepare(2, 1))),
        Err(WalError::Poisoned { .. })
    ));
    storage.crash(CrashKind::PowerLoss);
    let (_, recovery) = ready(Wal::open(&storage)).expect("reopen");
    assert!(recovery.records.is_empty(), "the lost append is not resurrected");
}

/// Stop or fail every call of an insert (in place, in the middle of the file, or moving
/// durable records) in turn, then lose
/// power (with background writeback off, and on under several seeds, so any subset of
/// the rewrite's pages may have reached the disk): boot finishes the rewrite or finds
/// it never started, and no record that was durable before it is lost or damaged.
#[test]
fn wal_insert_interrupted_at_every_step_loses_nothing_durable() {
    // Op 3 lies in a gap, so the log holds a placeholder for it sized like op 4's
    // record (9,000 bytes): a 7,000-byte prepare is written in place, in the middle
    // of the file; a 12,000-byte one moves ops 4 and 5.
    for inserted_body in [7000, 12000] {
        insert_interrupted_at_every_step(inserted_body);
    }
}

fn insert_interrupted_at_every_step(inserted_body: usize) {
    // Records of several pages each, so a rewrite that lands in part tears them.
    let before = vec![
        (1, prepare(1, 5000)),
        (2, prepare(2, 5000)),
        (4, header_only(4, 9000)),
        (5, prepare(5, 5000)),
    ];
    let mut after = before.clone();
    after.insert(2, (3, prepare(3, inserted_body)));
    let faults = [
        None,
        Some(FaultKind::FailBefore),
        Some(FaultKind::FailAfter),
        Some(FaultKind::TornWithError),
    ];
    let options = (0..4).map(|seed| SimStorageOptions {
        seed,
        writeback: seed > 0,
        ..SimStorageOptions::default()
    });
    for options in options {
        for fault in faults {
            for step in 0.. {
                let (storage, mut wal) = common::synced_wal(&options, &before);
                let position = storage.operations() + step;
                storage.stop_at(position, fault);
                let finished = ready(wal.replace(3, &prepare(3, inserted_body))).is_ok();
                let reached = storage.operations() > position;
                storage.crash(CrashKind::PowerLoss);
                let (_, recovery) = ready(Wal::open(&storage)).expect("reopen");
                let context = format!(
                    "body {inserted_body} seed {} writeback {} {fault:?} at step {step}: ops {:?} damaged {:?} tail {:?} rewrite {:?}",
                    options.seed,
                    options.writeback,
                    ops(&recovery.records),
                    recovery.damaged,
                    recovery.torn_tail,
                    recovery.interrupted_rewrite
                );
                assert!(recovery.damaged.is_empty() && recovery.torn_tail.is_none(), "{context}");
                if finished {
                    assert_eq!(recovery.records, after, "{context}");
                } else {
                    assert!(recovery.records == before || recovery.records == after, "{context}");
                }
                if !reached {
                    break;
                }
            }
        }
    }
}

#[test]
fn wal_rewrite_replayed_from_its_redo_is_reported() {
    let storage = SimStorage::new(SimStorageOptions::default());
    let (mut wal, _) = ready(Wal::open(&storage)).expect("open");
    ready(wal.append_all(&[(1, prepare(1, 10)), (3, prepare(3, 10))])).expect("append");
    ready(wal.sync()).expect("sync");
    // Op 2's placeholder holds 2 KiB; a larger prepare moves op 3. Calls of the
    // insert: read op 3 (to move it), write, truncate and sync the redo; the halt
    // stops it before the WAL itself is touched.
    let inserted = prepare(2, 3 * GAP_RESERVED_PAYLOAD_MIN_BYTES);
    storage.set_halt_after(Some(storage.operations() + 3));
    assert!(ready(wal.replace(2, &inserted)).is_err());
    storage.crash(CrashKind::PowerLoss);
    let (_, recovery) = ready(Wal::open(&storage)).expect("reopen");
    assert!(
        matches!(recovery.interrupted_rewrite, Some(InterruptedRewrite::Replayed { .. })),
        "{recovery:?}"
    );
    assert_eq!(ops(&recovery.records), vec![1, 2, 3]);
    let (_, clean) = ready(Wal::open(&storage)).expect("reopen again");
    assert_eq!(clean.interrupted_rewrite, None, "the redo is cleared once replayed");
}

// ---------------------------------------------------------------------------------
// Partition WAL

const GROUP: u64 = 1 << 32;
const DIR: &str = "partitions/1";

fn partition_wal_path() -> String {
    format!("{DIR}/wal")
}

#[test]
fn partition_persisted_append_survives_power_loss_and_the_replicated_tail_does_not() {
    let storage = SimStorage::new(SimStorageOptions::default());
    let (mut wal, recovery) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("open");
    assert_eq!(recovery.frontier, None);
    for op in 1..=3 {
        let appended = ready(wal.append(&[(op, &prepare(op, 50))], Durability::Replicated, 0)).expect("append");
        assert!(!appended.published);
    }
    let appended = ready(wal.append(&[(4, &prepare(4, 50))], Durability::Persisted, 4096)).expect("persisted");
    assert!(appended.published);
    let published = wal.published().expect("published");
    assert_eq!((published.last_op, published.segment_end_offset), (4, 4096));
    assert_eq!(published.durability, Durability::Persisted);
    // Back to replicated: the change of mode is published with the first such append.
    let switched = ready(wal.append(&[(5, &prepare(5, 50))], Durability::Replicated, 4096)).expect("append");
    assert!(
        switched.published,
        "a change of durability mode is published before it is acknowledged"
    );
    let published = wal.published().expect("published");
    assert_eq!((published.last_op, published.durability), (5, Durability::Replicated));
    for op in 6..=7 {
        let appended = ready(wal.append(&[(op, &prepare(op, 50))], Durability::Replicated, 4096)).expect("append");
        assert!(!appended.published);
    }
    storage.crash(CrashKind::PowerLoss);
    let (_, recovery) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("reopen");
    assert_eq!(ops(&recovery.records), vec![1, 2, 3, 4, 5]);
    assert_eq!(recovery.frontier, Some(published));
    assert!(recovery.damaged.is_empty());
}

/// The frontier says how everything after it was acknowledged: `persisted` only while
/// nothing replicated has been acknowledged since, which is what lets a restarted
/// replica know it lost no acknowledged op.
#[test]
fn partition_frontier_records_the_durability_mode_of_every_append_after_it() {
    let storage = SimStorage::new(SimStorageOptions::default());
    let (mut wal, _) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("open");
    ready(wal.append(&[(1, &prepare(1, 50))], Durability::Replicated, 0)).expect("append");
    ready(wal.append(&[(2, &prepare(2, 50))], Durability::Persisted, 0)).expect("persisted");
    storage.crash(CrashKind::Process);
    let (mut wal, recovery) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("reopen");
    let frontier = recovery.frontier.expect("published");
    assert_eq!((frontier.last_op, frontier.durability), (2, Durability::Persisted));
    ready(wal.append(&[(3, &prepare(3, 50))], Durability::Replicated, 0)).expect("append");
    storage.crash(CrashKind::PowerLoss);
    let (_, recovery) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("reopen");
    let frontier = recovery.frontier.expect("published");
    assert_eq!(
        (frontier.last_op, frontier.durability),
        (3, Durability::Replicated),
        "a replicated append after a persisted one published the change first"
    );
}

/// A process crash keeps the page cache: the unpublished tail is on disk and valid, and
/// boot discards it anyway, reporting how much.
#[test]
fn partition_boot_discards_valid_bytes_past_the_frontier() {
    let storage = SimStorage::new(SimStorageOptions::default());
    let (mut wal, _) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("open");
    ready(wal.append(&[(1, &prepare(1, 50))], Durability::Persisted, 0)).expect("persisted");
    // The first replicated append publishes the change of mode; the next ones do not.
    ready(wal.append(&[(2, &prepare(2, 50))], Durability::Replicated, 0)).expect("append");
    let published = wal.published_bytes();
    ready(wal.append(&[(3, &prepare(3, 50)), (4, &prepare(4, 50))], Durability::Replicated, 0)).expect("append");
    let unpublished = wal.unpublished_bytes();
    assert!(unpublished > 0);
    storage.crash(CrashKind::Process);
    let (wal, recovery) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("reopen");
    assert_eq!(ops(&recovery.records), vec![1, 2]);
    assert_eq!(recovery.discarded_bytes, unpublished);
    assert_eq!(wal.len_bytes(), published);
}

#[test]
fn partition_with_nothing_published_discards_everything() {
    let storage = MemStorage::new();
    let (mut wal, _) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("open");
    ready(wal.append(&[(1, &prepare(1, 10))], Durability::Replicated, 0)).expect("append");
    let written = wal.len_bytes();
    drop(wal);
    let (_, recovery) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("reopen");
    assert!(recovery.records.is_empty());
    assert_eq!((recovery.frontier, recovery.discarded_bytes), (None, written));
}

#[test]
fn partition_close_and_a_new_log_view_publish() {
    let storage = MemStorage::new();
    let (mut wal, _) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("open");
    ready(wal.append(&[(1, &prepare(1, 10))], Durability::Replicated, 0)).expect("append");
    ready(wal.on_log_view(3, 100)).expect("log view");
    assert_eq!(
        wal.published().map(|frontier| (frontier.log_view, frontier.last_op)),
        Some((3, 1))
    );
    ready(wal.append(&[(2, &prepare(2, 10))], Durability::Replicated, 100)).expect("append");
    ready(wal.close(200)).expect("close");
    let (_, recovery) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("reopen");
    assert_eq!(ops(&recovery.records), vec![1, 2]);
    let frontier = recovery.frontier.expect("published");
    assert_eq!(
        (frontier.log_view, frontier.segment_end_offset, frontier.sequence),
        (3, 200, 2)
    );
}

#[test]
fn partition_publishes_every_interval_of_unpublished_bytes() {
    let storage = MemStorage::new();
    let (mut wal, _) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("open");
    let body = wire::FRAME_BYTES_MAX - HEADER_BYTES;
    let mut published_at = None;
    for op in 1.. {
        let appended = ready(wal.append(&[(op, &prepare(op, body))], Durability::Replicated, 0)).expect("append");
        if appended.published {
            published_at = Some(op);
            break;
        }
        assert!(
            op < 200,
            "no publication after {} unpublished bytes",
            wal.unpublished_bytes()
        );
    }
    let record = wire::FRAME_BYTES_MAX as u64 + 40;
    assert_eq!(published_at, Some(PUBLISH_BYTES_INTERVAL.div_ceil(record)));
    assert_eq!(wal.unpublished_bytes(), 0);
}

#[test]
fn partition_torn_frontier_write_falls_back_to_the_previous_publication() {
    let storage = MemStorage::new();
    let (mut wal, _) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("open");
    ready(wal.append(&[(1, &prepare(1, 10))], Durability::Persisted, 0)).expect("publication 1");
    let first = wal.published().expect("published");
    ready(wal.append(&[(2, &prepare(2, 10))], Durability::Persisted, 0)).expect("publication 2");
    // Publication 2 (slot 0) tore.
    damage(&storage, &format!("{DIR}/{FRONTIER_FILE}"), 10, &[0xee; 4]);
    drop(wal);
    let (_, recovery) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("reopen");
    assert_eq!(recovery.frontier, Some(first));
    assert_eq!(ops(&recovery.records), vec![1]);
    assert_eq!(recovery.frontier_damage.len(), 1, "{:?}", recovery.frontier_damage);
}

#[test]
fn partition_damage_below_the_frontier_is_reported_with_its_ops() {
    let storage = MemStorage::new();
    let (mut wal, _) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("open");
    let records: Vec<(u64, StoredRecord)> = (1..=4).map(|op| (op, prepare(op, 60))).collect();
    let borrowed: Vec<(u64, &StoredRecord)> = records.iter().map(|(op, record)| (*op, record)).collect();
    ready(wal.append(&borrowed, Durability::Persisted, 0)).expect("append");
    let record_bytes = wal.len_bytes() / 4;
    drop(wal);
    damage(&storage, &partition_wal_path(), record_bytes + 70, &[1]);
    damage(&storage, &partition_wal_path(), 3 * record_bytes + 70, &[1]);
    let (_, recovery) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("reopen");
    assert_eq!(ops(&recovery.records), vec![1, 3]);
    let ranges: Vec<_> = recovery.damaged.iter().map(|damage| damage.ops()).collect();
    assert_eq!(ranges, vec![Some(2..=2), Some(4..=4)], "{:?}", recovery.damaged);
    assert_eq!(recovery.discarded_bytes, 0);
}

#[test]
fn partition_truncation_below_the_frontier_moves_it_down_first() {
    let storage = SimStorage::new(SimStorageOptions::default());
    let (mut wal, _) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("open");
    for op in 1..=4 {
        ready(wal.append(&[(op, &prepare(op, 30))], Durability::Persisted, 0)).expect("append");
    }
    // Stop right after the frontier moved down (write, sync), before the WAL is cut.
    let position = storage.operations() + 1;
    storage.set_halt_after(Some(position));
    assert!(ready(wal.truncate_after(2)).is_err());
    storage.crash(CrashKind::PowerLoss);
    let (mut wal, recovery) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("reopen");
    assert_eq!(ops(&recovery.records), vec![1, 2], "{recovery:?}");
    assert_eq!(recovery.frontier.map(|frontier| frontier.last_op), Some(2));
    assert!(recovery.discarded_bytes > 0 && recovery.damaged.is_empty());
    ready(wal.append(&[(3, &prepare(3, 99))], Durability::Persisted, 0)).expect("the new view's op 3");
    let (_, recovery) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("reopen");
    assert_eq!(recovery.records[2], (3, prepare(3, 99)));
}

/// A rewrite that moves published records, stopped after each of its calls in turn,
/// then a power loss (writeback off, then on under several seeds): nothing published
/// is lost or damaged, and the frontier always matches the file boot finds.
#[test]
fn partition_rewrite_of_published_records_survives_a_crash_at_every_step() {
    let before = [(1, prepare(1, 5000)), (2, header_only(2, 6000)), (4, prepare(4, 5000))];
    let options = (0..4).map(|seed| SimStorageOptions {
        seed,
        writeback: seed > 0,
        ..SimStorageOptions::default()
    });
    for options in options {
        for step in 0.. {
            let storage = SimStorage::new(options.clone());
            let (mut wal, _) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("open");
            let borrowed: Vec<(u64, &StoredRecord)> = before.iter().map(|(op, record)| (*op, record)).collect();
            ready(wal.append(&borrowed, Durability::Persisted, 7)).expect("append");
            ready(wal.replace(2, &prepare(2, 6000))).expect("in place");
            let position = storage.operations() + step;
            storage.set_halt_after(Some(position));
            let finished = ready(wal.replace(3, &prepare(3, 4000))).is_ok();
            let reached = storage.operations() > position;
            storage.crash(CrashKind::PowerLoss);
            let (_, recovery) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("reopen");
            let context = format!(
                "seed {} writeback {} step {step}: {}",
                options.seed,
                options.writeback,
                common::partition_wal_context(&recovery)
            );
            assert!(recovery.damaged.is_empty(), "{context}");
            let found = ops(&recovery.records);
            if finished {
                assert_eq!(found, vec![1, 2, 3, 4], "{context}");
            } else {
                assert!(found == vec![1, 2, 4] || found == vec![1, 2, 3, 4], "{context}");
            }
            assert_eq!(recovery.records[1], (2, prepare(2, 6000)), "{context}");
            assert_eq!(recovery.records.last(), Some(&(4, prepare(4, 5000))), "{context}");
            if !reached {
                break;
            }
        }
    }
}

#[test]
fn partition_publish_reports_a_writeback_failure_of_the_wal() {
    let storage = SimStorage::new(SimStorageOptions::default());
    let (mut wal, _) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("open");
    ready(wal.append(&[(1, &prepare(1, 10))], Durability::Persisted, 0)).expect("persisted");
    // The change of mode publishes op 2; op 3 stays unpublished.
    ready(wal.append(&[(2, &prepare(2, 10))], Durability::Replicated, 0)).expect("replicated");
    ready(wal.append(&[(3, &prepare(3, 10))], Durability::Replicated, 0)).expect("replicated");
    storage.fail_writeback(&partition_wal_path()).expect("fail writeback");
    let error = ready(wal.append(&[(4, &prepare(4, 10))], Durability::Persisted, 0)).expect_err("not durable");
    assert!(error.to_string().contains("writeback"), "{error}");
    assert_eq!(
        wal.published().map(|frontier| frontier.last_op),
        Some(2),
        "nothing lost was published"
    );
    storage.crash(CrashKind::PowerLoss);
    let (_, recovery) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("reopen");
    assert_eq!(ops(&recovery.records), vec![1, 2]);
    assert!(recovery.damaged.is_empty());
}

#[test]
fn partition_wal_of_another_group_is_refused() {
    let storage = MemStorage::new();
    let (mut wal, _) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("open");
    ready(wal.append(&[(1, &prepare(1, 10))], Durability::Persisted, 0)).expect("append");
    drop(wal);
    let error = ready(PartitionWal::open(&storage, DIR, GROUP + 1)).expect_err("wrong group");
    assert!(matches!(error, WalError::WrongGroup { .. }), "{error}");
    assert!(error.to_string().contains(&GROUP.to_string()), "{error}");
}
