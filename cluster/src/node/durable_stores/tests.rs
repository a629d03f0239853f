//! Tests of `durable_stores`.

use super::*;
use crate::runtime::DiskStorage;
use crate::storage::snapshot_file::{SNAPSHOT_BYTES_MAX, tmp_path};
use crate::storage::wal::tests::{prepare, temp_root};

const PARTITION: u64 = 0x0123_4567_89ab_cdef;

fn identity() -> NodeIdentity {
    NodeIdentity {
        cluster: 7,
        replica: 1,
        replica_count: 3,
    }
}

fn frame(op: u64) -> Rc<[u8]> {
    match prepare(op) {
        StoredRecord::Prepare(frame) => frame,
        StoredRecord::Header(_) => unreachable!("prepare() builds a whole frame"),
    }
}

fn ops(store: &DurableReplicaStore<DiskStorage>) -> Vec<u64> {
    store.records().into_iter().map(|(op, _)| op).collect()
}

/// Open `group`'s store (a partition as `persisted`: every prepare published, so a
/// reopen keeps them all).
fn open_group(storage: &DiskStorage, group: u64) -> Result<DurableReplicaStore<DiskStorage>, StoreError> {
    let stores = DurableStores::open(storage.clone(), identity()).expect("node storage");
    stores.set_durability(PARTITION, TopicDurability::Persisted);
    StoreProvider::open(&stores, group)
}

#[test]
fn a_checkpoint_round_trips_and_a_reopened_store_sees_it() {
    let root = temp_root("stores-checkpoint");
    let storage = DiskStorage::new(&root).expect("temp dir");
    for group in [METADATA_GROUP, PARTITION] {
        let mut store = open_group(&storage, group).expect("open");
        assert_eq!(store.checkpoint(), Ok(None), "never written");
        let first: Rc<[u8]> = Rc::from(&b"state after op 4"[..]);
        store.write_checkpoint(4, &first).expect("write");
        let second: Rc<[u8]> = Rc::from(vec![9; 3 * 1024 * 1024]);
        store.write_checkpoint(9, &second).expect("write a larger one");
        assert_eq!(store.checkpoint(), Ok(Some((9, second.clone()))));
        drop(store);
        let reopened = open_group(&storage, group).expect("reopen");
        assert_eq!(reopened.checkpoint(), Ok(Some((9, second))));
        let dir = root.join(DurableStores::<DiskStorage>::group_dir(group));
        assert!(dir.join(CHECKPOINT_FILE).exists());
        assert!(!dir.join(tmp_path(CHECKPOINT_FILE)).exists());
    }
    std::fs::remove_dir_all(root).expect("cleanup");
}

#[test]
fn a_damaged_checkpoint_is_never_read_as_none_the_group_boots_with_an_incomplete_log() {
    let root = temp_root("stores-checkpoint-damaged");
    let storage = DiskStorage::new(&root).expect("temp dir");
    let mut store = open_group(&storage, PARTITION).expect("open");
    store.write_checkpoint(12, &Rc::from(&b"state"[..])).expect("write");
    drop(store);
    let path = root
        .join(DurableStores::<DiskStorage>::group_dir(PARTITION))
        .join(CHECKPOINT_FILE);
    let mut bytes = std::fs::read(&path).expect("read");
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&path, &bytes).expect("damage");
    let damaged = open_group(&storage, PARTITION).expect("a damaged checkpoint does not refuse the open");
    assert_eq!(damaged.checkpoint(), Ok(None), "not trusted");
    assert!(
        damaged.may_lack_acknowledged_ops() && damaged.damaged_at_open() == 1,
        "and not taken for none: the log is incomplete"
    );
    drop(damaged);
    std::fs::write(&path, b"").expect("truncate to empty");
    let empty = open_group(&storage, PARTITION).expect("open");
    assert!(empty.damaged_at_open() == 1, "an empty checkpoint file is damage too");
    drop(empty);
    // A leftover tmp from an interrupted write is removed at open, and is no error.
    std::fs::remove_file(&path).expect("remove");
    let tmp = path.with_file_name(tmp_path(CHECKPOINT_FILE));
    std::fs::write(&tmp, b"half").expect("tmp");
    let store = open_group(&storage, PARTITION).expect("a missing checkpoint is none");
    assert_eq!(store.checkpoint(), Ok(None));
    assert_eq!(store.damaged_at_open(), 0, "missing is not damaged");
    assert!(!tmp.exists());
    std::fs::remove_dir_all(root).expect("cleanup");
}

#[test]
fn a_checkpoint_above_the_snapshot_limit_is_an_error_and_keeps_the_previous_one() {
    let root = temp_root("stores-checkpoint-large");
    let storage = DiskStorage::new(&root).expect("temp dir");
    let mut store = open_group(&storage, METADATA_GROUP).expect("open");
    let small: Rc<[u8]> = Rc::from(&b"small"[..]);
    store.write_checkpoint(3, &small).expect("write");
    let huge: Rc<[u8]> = Rc::from(vec![0; SNAPSHOT_BYTES_MAX + 1]);
    let error = store.write_checkpoint(8, &huge).expect_err("too large");
    assert!(error.what.contains("SNAPSHOT_BYTES_MAX"), "{error}");
    assert_eq!(store.checkpoint(), Ok(Some((3, small.clone()))));
    drop(store);
    assert_eq!(
        open_group(&storage, METADATA_GROUP).expect("reopen").checkpoint(),
        Ok(Some((3, small)))
    );
    std::fs::remove_dir_all(root).expect("cleanup");
}

/// A gap placeholder (or a removed op) above the persisted commit point may be an
/// op whose fill a lying disk dropped whole after it was acknowledged: it reads back
/// valid and vacant, so the reopened log may not be offered as complete. At or
/// below the commit point (or the checkpoint) a vacant slot is a committed op still
/// to repair and leaves the log complete.
#[test]
fn a_vacant_slot_above_the_commit_point_leaves_the_log_incomplete() {
    let root = temp_root("stores-vacant-slot");
    let storage = DiskStorage::new(&root).expect("temp dir");
    for group in [METADATA_GROUP, PARTITION] {
        for (commit_max, checkpoint_op, complete) in [(2, 0, false), (3, 0, false), (4, 0, true), (2, 4, true)] {
            std::fs::remove_dir_all(&root).expect("reset");
            std::fs::create_dir_all(&root).expect("reset");
            let mut store = open_group(&storage, group).expect("open");
            // Ops 1-2, then 6 above a gap: the WAL reserves placeholders for 3-5.
            for op in [1, 2, 6] {
                store.write_prepare(op, &frame(op)).expect("prepare");
            }
            // Repair fills 5 from the top down; 3 and 4 stay vacant.
            store.write_prepare(5, &frame(5)).expect("fill");
            if checkpoint_op > 0 {
                store
                    .write_checkpoint(checkpoint_op, &Rc::from(&b"state"[..]))
                    .expect("checkpoint");
            }
            store
                .write_superblock(Superblock {
                    view: 1,
                    log_view: 1,
                    commit_max,
                })
                .expect("superblock");
            drop(store);
            let reopened = open_group(&storage, group).expect("reopen");
            assert_eq!(
                ops(&reopened),
                vec![1, 2, 5, 6],
                "group {group:x}: vacant slots hold no record"
            );
            assert_eq!(
                reopened.may_lack_acknowledged_ops(),
                !complete,
                "group {group:x}, commit_max {commit_max}, checkpoint {checkpoint_op}: vacant ops 3-4"
            );
            assert_eq!(reopened.damaged_at_open(), 0, "nothing is damaged");
        }
    }
    std::fs::remove_dir_all(root).expect("cleanup");
}

#[test]
fn a_rotted_record_in_the_middle_of_a_wal_leaves_the_log_incomplete_never_cut() {
    let root = temp_root("stores-rotted-record");
    let storage = DiskStorage::new(&root).expect("temp dir");
    for (group, wal) in [
        (METADATA_GROUP, "metadata/wal".to_owned()),
        (
            PARTITION,
            format!("{}/wal", DurableStores::<DiskStorage>::group_dir(PARTITION)),
        ),
    ] {
        let mut store = open_group(&storage, group).expect("open");
        for op in 1..=9 {
            store.write_prepare(op, &frame(op)).expect("prepare");
        }
        store.write_superblock(Superblock::default()).expect("superblock");
        drop(store);
        let fresh = open_group(&storage, group).expect("reopen");
        assert!(
            !fresh.may_lack_acknowledged_ops(),
            "an intact persisted log is complete"
        );
        drop(fresh);
        let path = root.join(&wal);
        let mut bytes = std::fs::read(&path).expect("read the WAL");
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x04;
        std::fs::write(&path, &bytes).expect("rot one bit");
        let reopened = open_group(&storage, group).expect("a damaged record does not refuse the open");
        assert!(
            reopened.may_lack_acknowledged_ops(),
            "group {group:#x}: a rotted record may be an acknowledged op"
        );
        let kept = ops(&reopened);
        assert!(
            kept.len() < 9 && kept.contains(&9),
            "group {group:#x}: kept {kept:?}: held, not cut"
        );
    }
    std::fs::remove_dir_all(root).expect("cleanup");
}

#[test]
fn a_rotted_newest_frontier_slot_leaves_a_persisted_partition_log_incomplete() {
    // Every prepare of a `persisted` partition is published before it is
    // acknowledged, each publication in the other of two frontier slots. Rot the
    // newest slot and boot falls back to the older one, discarding the ops published
    // since: ops this replica acknowledged. Its log must not be offered as complete.
    let root = temp_root("stores-rotted-frontier");
    let storage = DiskStorage::new(&root).expect("temp dir");
    let mut store = open_group(&storage, PARTITION).expect("open");
    for op in 1..=5 {
        store.write_prepare(op, &frame(op)).expect("prepare");
    }
    store.write_superblock(Superblock::default()).expect("superblock");
    drop(store);
    let intact = open_group(&storage, PARTITION).expect("reopen");
    assert!(
        !intact.may_lack_acknowledged_ops(),
        "an intact persisted log is complete"
    );
    assert_eq!(ops(&intact), vec![1, 2, 3, 4, 5]);
    drop(intact);
    let path = root.join(format!(
        "{}/frontier",
        DurableStores::<DiskStorage>::group_dir(PARTITION)
    ));
    let mut bytes = std::fs::read(&path).expect("read the frontier");
    // Find the newest slot: rot each in turn on a copy and keep the rot that loses ops.
    let original = bytes.clone();
    let mut lost_ops = false;
    for slot in 0..2usize {
        bytes.clone_from(&original);
        bytes[slot * 4096 + 40] ^= 0x10;
        std::fs::write(&path, &bytes).expect("rot one bit");
        let reopened = open_group(&storage, PARTITION).expect("a damaged frontier slot does not refuse the open");
        let kept = ops(&reopened);
        lost_ops |= kept.len() < 5;
        assert!(
            reopened.may_lack_acknowledged_ops(),
            "slot {slot} rotted (kept {kept:?}): a frontier that may have lost its newest publication may have \
             lost acknowledged ops"
        );
        drop(reopened);
        std::fs::write(&path, &original).expect("restore");
    }
    assert!(
        lost_ops,
        "rotting the newest slot loses the ops published since the older one"
    );
    std::fs::remove_dir_all(root).expect("cleanup");
}

/// A disk whose reads of one byte range of files named `*<suffix>` always fail (an
/// unreadable sector that no retry gets past).
#[derive(Clone, Debug)]
struct Unreadable {
    inner: DiskStorage,
    suffix: &'static str,
    bad: std::ops::Range<u64>,
    /// The sector fails only while this is set (a test may turn it on after boot's
    /// scan read the file whole).
    armed: Rc<Cell<bool>>,
}

fn armed() -> Rc<Cell<bool>> {
    Rc::new(Cell::new(true))
}

#[derive(Debug)]
struct UnreadableFile {
    inner: crate::runtime::DiskFile,
    bad: Option<std::ops::Range<u64>>,
    armed: Rc<Cell<bool>>,
}

impl DurableStorage for Unreadable {
    type File = UnreadableFile;
    async fn open(&self, path: &str, mode: crate::seam::OpenMode) -> std::io::Result<UnreadableFile> {
        Ok(UnreadableFile {
            inner: self.inner.open(path, mode).await?,
            bad: path.ends_with(self.suffix).then(|| self.bad.clone()),
            armed: Rc::clone(&self.armed),
        })
    }

    crate::forward_to_inner!(rename, remove, remove_dir, list, sync_dir);
}

impl crate::seam::DurableFile for UnreadableFile {
    async fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        let end = offset + buf.len() as u64;
        if self.armed.get() && self.bad.as_ref().is_some_and(|bad| offset < bad.end && bad.start < end) {
            return Err(std::io::Error::other("unreadable sector"));
        }
        self.inner.read_at(offset, buf).await
    }

    crate::forward_to_inner!(write_at, append, len, sync, truncate);
}

#[test]
fn an_unreadable_page_in_the_middle_of_a_wal_is_held_as_damage_never_cut() {
    // A read error the retries do not get past is answered as corruption is: the
    // records on that page are held but unknown, the log is not offered as complete,
    // and the records after it are kept.
    let root = temp_root("stores-unreadable-page");
    let storage = DiskStorage::new(&root).expect("temp dir");
    let ops_written = 400;
    let mut store = open_group(&storage, METADATA_GROUP).expect("open");
    for op in 1..=ops_written {
        store.write_prepare(op, &frame(op)).expect("prepare");
    }
    store.write_superblock(Superblock::default()).expect("superblock");
    drop(store);
    let wal_len = std::fs::metadata(root.join("metadata/wal")).expect("the WAL").len();
    assert!(wal_len > 4 * 4096, "the WAL spans several pages ({wal_len} bytes)");
    let page = wal_len / 2 / 4096 * 4096;
    let unreadable = Unreadable {
        inner: storage.clone(),
        suffix: "metadata/wal",
        bad: page..page + 4096,
        armed: armed(),
    };
    let stores = DurableStores::open(unreadable, identity()).expect("node storage");
    let reopened = StoreProvider::open(&stores, METADATA_GROUP).expect("an unreadable page does not refuse the open");
    assert!(
        reopened.may_lack_acknowledged_ops(),
        "an unreadable record may be an acknowledged op"
    );
    assert!(reopened.damaged_at_open() > 0, "counted as damage");
    let kept: Vec<u64> = reopened.records().into_iter().map(|(op, _)| op).collect();
    assert!(
        kept.len() < ops_written as usize && kept.contains(&ops_written) && kept.contains(&1),
        "held, not cut: kept {} of {ops_written}",
        kept.len()
    );
    std::fs::remove_dir_all(root).expect("cleanup");
}

#[test]
fn a_record_the_boot_scan_read_but_the_load_cannot_is_held_as_missing_not_forgotten() {
    // Boot scans the WAL whole, then the replica loads each record the scan found by
    // reading it again. A read that fails for good in between (a sector gone bad)
    // used to drop the record silently, and the log was offered as complete without
    // it: an op this replica acknowledged could be outvoted.
    let root = temp_root("stores-unreadable-at-load");
    let storage = DiskStorage::new(&root).expect("temp dir");
    let mut store = open_group(&storage, METADATA_GROUP).expect("open");
    for op in 1..=3 {
        store.write_prepare(op, &frame(op)).expect("prepare");
    }
    store.write_superblock(Superblock::default()).expect("superblock");
    drop(store);
    let sector = armed();
    sector.set(false);
    let later = Unreadable {
        inner: storage.clone(),
        suffix: "metadata/wal",
        bad: 0..u64::MAX,
        armed: Rc::clone(&sector),
    };
    let stores = DurableStores::open(later, identity()).expect("node storage");
    let reopened = StoreProvider::open(&stores, METADATA_GROUP).expect("open");
    assert!(
        !reopened.may_lack_acknowledged_ops(),
        "the scan read every record whole"
    );
    sector.set(true);
    assert!(reopened.records().is_empty(), "no record can be read back now");
    assert!(
        reopened.may_lack_acknowledged_ops(),
        "a record that could not be loaded may be an acknowledged op"
    );
    std::fs::remove_dir_all(root).expect("cleanup");
}

#[test]
fn an_unreadable_superblock_copy_is_a_damaged_copy_the_others_stand_in_for() {
    let root = temp_root("stores-unreadable-superblock");
    let storage = DiskStorage::new(&root).expect("temp dir");
    let mut store = open_group(&storage, METADATA_GROUP).expect("open");
    let written = Superblock {
        view: 3,
        log_view: 3,
        commit_max: 0,
    };
    store.write_superblock(written).expect("superblock");
    drop(store);
    let first_copy = Unreadable {
        inner: storage.clone(),
        suffix: "groups/0000000000000000/superblock",
        bad: 0..1,
        armed: armed(),
    };
    let stores = DurableStores::open(first_copy, identity()).expect("node storage");
    let reopened = StoreProvider::open(&stores, METADATA_GROUP).expect("three copies remain");
    assert_eq!(reopened.superblock(), Some(written));
    drop(reopened);
    // With every copy unreadable the group refuses to open (and its node fails
    // stop, naming the file in its log): never booted as fresh.
    let every_copy = Unreadable {
        inner: storage.clone(),
        suffix: "groups/0000000000000000/superblock",
        bad: 0..u64::MAX,
        armed: armed(),
    };
    let stores = DurableStores::open(every_copy, identity()).expect("node storage");
    let refused = StoreProvider::open(&stores, METADATA_GROUP).expect_err("no copy can be read");
    assert!(refused.what.contains("superblock refused"), "{}", refused.what);
    std::fs::remove_dir_all(root).expect("cleanup");
}

#[test]
fn discard_through_drops_the_records_the_checkpoint_covers_and_survives_a_reopen() {
    let root = temp_root("stores-discard");
    let storage = DiskStorage::new(&root).expect("temp dir");
    for group in [METADATA_GROUP, PARTITION] {
        let mut store = open_group(&storage, group).expect("open");
        for op in 1..=10 {
            store.write_prepare(op, &frame(op)).expect("prepare");
        }
        // Nothing is discarded that no durable checkpoint covers.
        store.discard_through(8);
        assert_eq!(ops(&store), (1..=10).collect::<Vec<_>>());
        store.write_checkpoint(6, &Rc::from(&b"state"[..])).expect("checkpoint");
        // Capped at the checkpoint's op.
        store.discard_through(8);
        assert_eq!(ops(&store), vec![7, 8, 9, 10], "group {group:#x}");
        store.write_prepare(11, &frame(11)).expect("prepare after the drop");
        drop(store);
        let mut store = open_group(&storage, group).expect("reopen");
        assert_eq!(ops(&store), vec![7, 8, 9, 10, 11], "group {group:#x}");
        assert_eq!(store.checkpoint().expect("checkpoint").map(|(op, _)| op), Some(6));
        store
            .write_checkpoint(11, &Rc::from(&b"later"[..]))
            .expect("checkpoint");
        store.discard_through(11);
        // A partition WAL keeps its last record (see `PartitionWal::discard_through`).
        let expected = if group == METADATA_GROUP { vec![] } else { vec![11] };
        assert_eq!(ops(&store), expected, "group {group:#x}");
        drop(store);
        assert_eq!(ops(&open_group(&storage, group).expect("reopen")), expected);
    }
    std::fs::remove_dir_all(root).expect("cleanup");
}

/// What broke: a replica that installed a peer's checkpoint at op C and then
/// journaled op C+1 into its empty WAL wrote placeholders (room for a gap's ops,
/// see `GAP_RESERVED_OPS_MAX`) for the ops below C, which no one will ever send it
/// again: up to 1 MiB of padding per WAL, held until a prefix drop. A durable
/// checkpoint now sets the floor below which nothing is reserved, at write and
/// again at open.
#[test]
fn a_wal_reserves_no_room_for_ops_its_durable_checkpoint_covers() {
    let root = temp_root("stores-gap-floor");
    let storage = DiskStorage::new(&root).expect("temp dir");
    let wal_bytes = |group: u64| {
        let path = if group == METADATA_GROUP {
            root.join("metadata").join("wal")
        } else {
            root.join(format!("groups/{group:016x}")).join("wal")
        };
        std::fs::metadata(path).expect("the WAL").len()
    };
    let one_record = {
        let mut store = open_group(&storage, PARTITION).expect("open");
        store.write_prepare(1, &frame(1)).expect("prepare");
        drop(store);
        wal_bytes(PARTITION)
    };
    for group in [METADATA_GROUP, PARTITION + 1] {
        // The negative space first: above a gap with no checkpoint under it, the
        // gap's ops get room reserved.
        let mut store = open_group(&storage, group).expect("open");
        store.write_prepare(50, &frame(50)).expect("prepare above a gap");
        assert!(
            wal_bytes(group) > 10 * one_record,
            "group {group:#x}: placeholders reserve room for ops 1..=49 ({} bytes)",
            wal_bytes(group)
        );
        drop(store);
    }
    // A checkpoint installed into an empty log, then the op above it; and the same
    // with a restart in between, where the floor comes back at open from the
    // durable checkpoint.
    for restart_between in [false, true] {
        let root = temp_root(&format!("stores-gap-floor-restart-{restart_between}"));
        let storage = DiskStorage::new(&root).expect("temp dir");
        let mut store = open_group(&storage, PARTITION).expect("open");
        store
            .write_checkpoint(500, &Rc::from(&b"installed"[..]))
            .expect("checkpoint");
        if restart_between {
            drop(store);
            store = open_group(&storage, PARTITION).expect("reopen");
        }
        store
            .write_prepare(501, &frame(501))
            .expect("the op after the checkpoint");
        let wal = root.join(format!("groups/{PARTITION:016x}")).join("wal");
        let bytes = std::fs::metadata(wal).expect("the WAL").len();
        assert!(
            bytes < 2 * one_record,
            "restart between: {restart_between}: nothing reserved below the checkpoint ({bytes} bytes, one \
             record is {one_record})"
        );
        assert_eq!(ops(&store), vec![501]);
        drop(store);
        std::fs::remove_dir_all(root).expect("cleanup");
    }
    std::fs::remove_dir_all(root).expect("cleanup");
}

/// Open `group`'s store as [`open_group`] does, with `test_break`.
fn open_group_broken(
    storage: &DiskStorage,
    group: u64,
    test_break: Option<TestBreak>,
) -> Result<DurableReplicaStore<DiskStorage>, StoreError> {
    let stores = DurableStores::open(storage.clone(), identity())
        .expect("node storage")
        .with_test_break(test_break);
    stores.set_durability(PARTITION, TopicDurability::Persisted);
    StoreProvider::open(&stores, group)
}

/// The partition WAL's last publication, as the store holds it.
fn published(store: &DurableReplicaStore<DiskStorage>) -> Option<crate::storage::partition_wal::Frontier> {
    match &store.log {
        Log::Partition(wal) => wal.published(),
        Log::Metadata(_) => None,
    }
}

#[test]
fn the_wal_drop_last_record_break_silently_forgets_the_metadata_wal_s_last_synced_record() {
    let root = temp_root("stores-test-break-metadata");
    let storage = DiskStorage::new(&root).expect("temp dir");
    let wal_path = root.join("metadata/wal");
    let mut store = open_group(&storage, METADATA_GROUP).expect("open");
    for op in 1..=5 {
        // Synced before it returns: what a PrepareOk acknowledges.
        store.write_prepare(op, &frame(op)).expect("prepare");
    }
    store.write_superblock(Superblock::default()).expect("superblock");
    drop(store);
    let whole = std::fs::read(&wal_path).expect("the WAL");

    let broken = open_group_broken(&storage, METADATA_GROUP, Some(TestBreak::WalDropLastRecord)).expect("open");
    assert_eq!(
        ops(&broken),
        vec![1, 2, 3, 4],
        "the last record is gone, the earlier ones remain"
    );
    assert!(
        !broken.may_lack_acknowledged_ops() && broken.damaged_at_open() == 0,
        "the break claims an intact log (a genuine torn tail would mark it incomplete)"
    );
    drop(broken);
    let cut = std::fs::read(&wal_path).expect("the WAL");
    assert!(
        cut.len() < whole.len() && whole.starts_with(&cut),
        "cut at the record's start: {} of {} bytes kept",
        cut.len(),
        whole.len()
    );

    let healthy = open_group_broken(&storage, METADATA_GROUP, None).expect("reopen");
    assert_eq!(
        ops(&healthy),
        vec![1, 2, 3, 4],
        "the cut was durable; nothing further changed"
    );
    assert!(!healthy.may_lack_acknowledged_ops() && healthy.damaged_at_open() == 0);
    drop(healthy);
    assert_eq!(std::fs::read(&wal_path).expect("the WAL"), cut, "the file is untouched");
    std::fs::remove_dir_all(root).expect("cleanup");
}

#[test]
fn the_wal_drop_last_record_break_silently_forgets_a_partition_wal_s_last_published_record() {
    let root = temp_root("stores-test-break-partition");
    let storage = DiskStorage::new(&root).expect("temp dir");
    let dir = root.join(DurableStores::<DiskStorage>::group_dir(PARTITION));
    let mut store = open_group(&storage, PARTITION).expect("open");
    for op in 1..=5 {
        // `persisted`: published before it returns, what a PrepareOk acknowledges.
        store.write_prepare(op, &frame(op)).expect("prepare");
    }
    store.write_superblock(Superblock::default()).expect("superblock");
    let before = published(&store).expect("published");
    assert_eq!(before.last_op, 5);
    drop(store);

    let broken = open_group_broken(&storage, PARTITION, Some(TestBreak::WalDropLastRecord)).expect("open");
    assert_eq!(
        ops(&broken),
        vec![1, 2, 3, 4],
        "the last record is gone, the earlier ones remain"
    );
    assert!(
        !broken.may_lack_acknowledged_ops() && broken.damaged_at_open() == 0,
        "the break claims an intact persisted log"
    );
    let frontier = published(&broken).expect("published");
    let wal_bytes = std::fs::metadata(dir.join("wal")).expect("the WAL").len();
    assert_eq!(
        (frontier.last_op, frontier.wal_bytes),
        (4, wal_bytes),
        "the frontier moved back with the record"
    );
    assert!(wal_bytes < before.wal_bytes);
    assert_eq!(
        (frontier.durability, frontier.log_view),
        (before.durability, before.log_view),
        "still `persisted`: nothing says an acknowledged op may be missing"
    );
    drop(broken);

    let healthy = open_group_broken(&storage, PARTITION, None).expect("reopen");
    assert_eq!(
        ops(&healthy),
        vec![1, 2, 3, 4],
        "the cut was durable; nothing further changed"
    );
    assert!(!healthy.may_lack_acknowledged_ops() && healthy.damaged_at_open() == 0);
    assert_eq!(
        published(&healthy),
        Some(frontier),
        "no new publication: the frontier was already whole"
    );
    assert_eq!(std::fs::metadata(dir.join("wal")).expect("the WAL").len(), wal_bytes);
    std::fs::remove_dir_all(root).expect("cleanup");
}

#[test]
fn a_backup_whose_node_still_thinks_a_topic_replicated_publishes_a_prepare_its_primary_marked_persisted() {
    // Found by a fresh campaign (`--seed 9997019 --plane mixed --faults split`): a
    // topic changed to `persisted`; the partition's primary knew, a backup's node had
    // not applied the change yet, acknowledged two prepares unpublished, and a
    // whole-cluster power outage took them: 48 acknowledged messages gone.
    let root = temp_root("stores-test-demanded-persisted");
    let storage = DiskStorage::new(&root).expect("temp dir");
    let stores = DurableStores::open(storage.clone(), identity()).expect("node storage");
    // This node's view of the topic: still `replicated`.
    stores.set_durability(PARTITION, TopicDurability::Replicated);
    let mut store = StoreProvider::open(&stores, PARTITION).expect("open");
    assert!(!store.persisted(), "the node's own view is replicated");
    store.write_prepare(1, &frame(1)).expect("an unmarked prepare");
    assert!(
        published(&store).is_none_or(|frontier| frontier.last_op < 1),
        "an unmarked prepare of a replicated topic is not published before its ack"
    );
    let mut header = crate::wire::Header::new(crate::wire::Command::Prepare);
    header.op = 2;
    header.flags = crate::wire::PREPARE_FLAG_PERSISTED;
    let marked: Rc<[u8]> = Rc::from(crate::wire::seal_header(header, &[2; 33]));
    store.write_prepare(2, &marked).expect("a marked prepare");
    let frontier = published(&store).expect("the marked prepare published the frontier");
    assert_eq!(
        frontier.last_op, 2,
        "durable before write_prepare returned (the ack follows it)"
    );
    drop(store);
    drop(stores);
    std::fs::remove_dir_all(root).expect("cleanup");
}
