//! Checkpoints on simulated storage: a checkpoint write and a WAL prefix drop
//! (`discard_through`), each stopped or failed at every one of its storage calls in
//! turn, then a crash. Recovery must find the old state or the new one, whole: never a
//! WAL missing a record above the checkpoint, never a damaged record, never a
//! checkpoint that reads as absent or broken.

mod common;

use std::rc::Rc;

use cluster::node::{DurableStores, METADATA_GROUP, NodeIdentity, StoreProvider};
use cluster::storage::partition_wal::{Durability, FRONTIER_FILE, PartitionWal};
use cluster::storage::superblock::cluster_id;
use cluster::storage::wal::{Wal, WalRecovery};
use cluster::vsr::store::{ReplicaStore, StoredRecord};
use cluster::wire::{self, Command, Header};
use futures::FutureExt;
use simulator::storage::{CrashKind, FaultKind, PlannedFault, SimStorage, SimStorageOptions, TraceOp};

/// Every simulated storage future completes on its first poll.
fn ready<T>(future: impl Future<Output = T>) -> T {
    future
        .now_or_never()
        .expect("simulated storage completes on the first poll")
}

fn frame(op: u64, body_len: usize) -> Rc<[u8]> {
    let mut header = Header::new(Command::Prepare);
    header.op = op;
    header.view = 1;
    let body: Vec<u8> = (0..body_len).map(|index| (op as usize * 31 + index) as u8).collect();
    Rc::from(wire::seal_header(header, &body))
}

fn prepare(op: u64, body_len: usize) -> StoredRecord {
    StoredRecord::Prepare(frame(op, body_len))
}

fn ops(records: &[(u64, StoredRecord)]) -> Vec<u64> {
    records.iter().map(|(op, _)| *op).collect()
}

/// Ops 1..=8, several pages each, so a copy that lands in part tears them.
fn eight_records() -> Vec<(u64, StoredRecord)> {
    (1..=8).map(|op| (op, prepare(op, 3000 + op as usize * 700))).collect()
}

/// The op every discard here drops through.
const THROUGH: u64 = 5;

/// No fault (the process halts after the position instead), then each fault that
/// reports itself. A write that tears silently is a lying disk, beyond what the formats
/// claim to survive, except where a test aims it at one frontier slot.
const FAULTS: [Option<FaultKind>; 4] = [
    None,
    Some(FaultKind::FailBefore),
    Some(FaultKind::FailAfter),
    Some(FaultKind::TornWithError),
];

/// Background writeback off (nothing stable unless synced), then on under several
/// seeds (any subset of what is dirty may be stable at the crash).
fn storage_options() -> impl Iterator<Item = SimStorageOptions> {
    (0..4).map(|seed| SimStorageOptions {
        seed,
        writeback: seed > 0,
        ..SimStorageOptions::default()
    })
}

/// Stop or fail the call at `position` from now on.
fn wal_context(recovery: &WalRecovery) -> String {
    format!(
        "ops {:?} damaged {:?} tail {:?} rewrite {:?} leftover {}",
        ops(&recovery.records),
        recovery.damaged,
        recovery.torn_tail,
        recovery.interrupted_rewrite,
        recovery.removed_prefix_drop_leftover
    )
}

/// The metadata WAL's prefix drop, stopped or failed at each call, then a crash of
/// either kind: the WAL is the old one or the new one, whole. If the drop failed
/// without a crash, the WAL is either usable (nothing was touched) or refuses writes
/// (poisoned after the rename): an append it accepts survives the power loss.
#[test]
fn metadata_wal_discard_interrupted_at_every_step_keeps_every_record_above_the_op() {
    let before = eight_records();
    let after: Vec<(u64, StoredRecord)> = before.iter().filter(|(op, _)| *op > THROUGH).cloned().collect();
    for options in storage_options() {
        for crash in CrashKind::ALL {
            for fault in FAULTS {
                for step in 0.. {
                    let (storage, mut wal) = common::synced_wal(&options, &before);
                    let position = storage.operations() + step;
                    storage.stop_at(position, fault);
                    let discarded = ready(wal.discard_through(THROUGH));
                    let reached = storage.operations() > position;
                    let finished = matches!(discarded, Ok(Some(_)));
                    // Whatever the drop left, an append the WAL accepts and syncs is
                    // durable (the halt refuses it).
                    let extra = (9, prepare(9, 100));
                    let appended = ready(async {
                        wal.append(extra.0, &extra.1).await?;
                        wal.sync().await
                    })
                    .is_ok();
                    drop(wal);
                    storage.crash(crash);
                    let (_, recovery) = ready(Wal::open(&storage)).expect("reopen");
                    let context = format!(
                        "seed {} writeback {} {crash} {fault:?} at step {step}: finished {finished} appended \
                         {appended}: {}",
                        options.seed,
                        options.writeback,
                        wal_context(&recovery)
                    );
                    assert!(recovery.damaged.is_empty() && recovery.torn_tail.is_none(), "{context}");
                    let mut records = recovery.records.clone();
                    if appended {
                        assert!(
                            records.pop() == Some(extra.clone()),
                            "an accepted append is lost: {context}"
                        );
                    } else if records.last() == Some(&extra) {
                        // Written but unacknowledged: it may survive.
                        records.pop();
                    }
                    if finished {
                        assert!(records == after, "{context}");
                    } else {
                        assert!(records == before || records == after, "{context}");
                    }
                    if !reached {
                        break;
                    }
                }
            }
        }
    }
}

const GROUP: u64 = 1 << 32;
const DIR: &str = "groups/0000000100000000";

/// The partition WAL's drop between its two publications, stopped or failed at each
/// call, then a crash: boot finds every published record, no damage, and a frontier
/// that matches the file, so a persisted append after recovery survives a power loss.
#[test]
fn partition_wal_discard_interrupted_at_every_step_keeps_every_published_record() {
    let before = eight_records();
    let after: Vec<(u64, StoredRecord)> = before.iter().filter(|(op, _)| *op > THROUGH).cloned().collect();
    let borrowed: Vec<(u64, &StoredRecord)> = before.iter().map(|(op, record)| (*op, record)).collect();
    for options in storage_options() {
        for crash in CrashKind::ALL {
            for fault in FAULTS {
                for step in 0.. {
                    let storage = SimStorage::new(options.clone());
                    let (mut wal, _) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("open");
                    ready(wal.append(&borrowed, Durability::Persisted, 3)).expect("append");
                    let position = storage.operations() + step;
                    storage.stop_at(position, fault);
                    let finished = matches!(ready(wal.discard_through(THROUGH)), Ok(Some(_)));
                    let reached = storage.operations() > position;
                    drop(wal);
                    storage.crash(crash);
                    let (mut wal, recovery) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("reopen");
                    let context = format!(
                        "seed {} writeback {} {crash} {fault:?} at step {step}: finished {finished}: {}",
                        options.seed,
                        options.writeback,
                        common::partition_wal_context(&recovery)
                    );
                    assert!(recovery.damaged.is_empty(), "{context}");
                    if finished {
                        assert!(recovery.records == after, "{context}");
                    } else {
                        assert!(recovery.records == before || recovery.records == after, "{context}");
                    }
                    let published = wal.published().expect("published");
                    assert_eq!(published.wal_bytes, wal.len_bytes(), "{context}");
                    assert_eq!(published.last_op, 8, "{context}");
                    ready(wal.append(&[(9, &prepare(9, 100))], Durability::Persisted, 4)).expect("append");
                    drop(wal);
                    storage.crash(CrashKind::PowerLoss);
                    let (_, again) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("reopen again");
                    assert!(again.damaged.is_empty(), "{context}: {again:?}");
                    assert_eq!(ops(&again.records).last(), Some(&9), "{context}");
                    if !reached {
                        break;
                    }
                }
            }
        }
    }
}

/// After a drop, a frontier slot that tears silently must not let boot fall back to a
/// publication of the old, longer file: that length would cover unpublished bytes of
/// the new one. Both slots name the new file before the drop returns, so boot trusts
/// exactly what was published, whichever slot tore.
#[test]
fn partition_wal_discard_with_a_silently_torn_frontier_slot_trusts_only_what_it_published() {
    let before = eight_records();
    let published: Vec<u64> = ops(&before).into_iter().filter(|op| *op > THROUGH).collect();
    // `replicated` throughout: nothing publishes but the discard itself.
    let borrowed: Vec<(u64, &StoredRecord)> = before.iter().map(|(op, record)| (*op, record)).collect();
    let frontier_path = format!("{DIR}/{FRONTIER_FILE}");
    // Where the drop writes the frontier after its rename, from a run without faults.
    let frontier_writes: Vec<u64> = {
        let storage = SimStorage::new(SimStorageOptions::default());
        let (mut wal, _) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("open");
        ready(wal.append(&borrowed, Durability::Replicated, 3)).expect("append");
        let start = storage.operations();
        ready(wal.discard_through(THROUGH))
            .expect("discard")
            .expect("worth doing");
        let trace: Vec<_> = storage
            .trace()
            .into_iter()
            .filter(|entry| entry.position >= start)
            .collect();
        let renamed = trace
            .iter()
            .find(|entry| entry.op == TraceOp::Rename)
            .expect("the drop renames")
            .position;
        trace
            .iter()
            .filter(|entry| entry.position > renamed && entry.op == TraceOp::WriteAt && entry.path == frontier_path)
            .map(|entry| entry.position)
            .collect()
    };
    assert_eq!(frontier_writes.len(), 2, "one write per slot after the rename");
    // Seeds draw how much of the slot lands; a tear that lands nothing leaves the slot's
    // previous publication (of the old file) in place, which is the case that matters.
    for (position, seed) in frontier_writes
        .into_iter()
        .flat_map(|position| (0..16).map(move |seed| (position, seed)))
    {
        for crash in CrashKind::ALL {
            let storage = SimStorage::new(SimStorageOptions {
                seed,
                ..SimStorageOptions::default()
            });
            let (mut wal, _) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("open");
            ready(wal.append(&borrowed, Durability::Replicated, 3)).expect("append");
            storage.arm_fault(Some(PlannedFault {
                position,
                kind: FaultKind::TornSilent,
            }));
            ready(wal.discard_through(THROUGH)).expect("a silent tear reports success");
            // Small unpublished appends: they end below the old file's length.
            for op in 9..=11 {
                let appended = ready(wal.append(&[(op, &prepare(op, 10))], Durability::Replicated, 3));
                assert!(!appended.expect("replicated").published);
            }
            drop(wal);
            storage.crash(crash);
            let (_, recovery) = ready(PartitionWal::open(&storage, DIR, GROUP)).expect("reopen");
            let context = format!(
                "tear at {position}, seed {seed}, {crash}: ops {:?} frontier {:?} damaged {:?} frontier damage {:?}",
                ops(&recovery.records),
                recovery.frontier,
                recovery.damaged,
                recovery.frontier_damage
            );
            assert!(recovery.damaged.is_empty(), "{context}");
            assert_eq!(ops(&recovery.records), published, "{context}");
        }
    }
}

fn node() -> NodeIdentity {
    NodeIdentity {
        cluster: cluster_id("checkpoint-test"),
        replica: 0,
        replica_count: 3,
    }
}

fn stores(storage: &SimStorage) -> DurableStores<SimStorage> {
    let stores = DurableStores::open(storage.clone(), node()).expect("node storage");
    stores.set_durability(GROUP, cluster::metadata::Durability::Persisted);
    stores
}

/// A checkpoint write stopped or failed at each call, then a crash: the group opens
/// with the old checkpoint or the new one (the new one if the write returned Ok), never
/// an error and never none.
#[test]
fn checkpoint_write_interrupted_at_every_step_leaves_the_old_or_the_new_checkpoint() {
    let old: Rc<[u8]> = Rc::from(vec![1; 10_000]);
    let new: Rc<[u8]> = Rc::from(vec![2; 20_000]);
    for options in storage_options() {
        for crash in CrashKind::ALL {
            for fault in FAULTS {
                for step in 0.. {
                    let storage = SimStorage::new(options.clone());
                    let mut store = stores(&storage).open(GROUP).expect("open");
                    store.write_checkpoint(4, &old).expect("first checkpoint");
                    let position = storage.operations() + step;
                    storage.stop_at(position, fault);
                    let finished = store.write_checkpoint(9, &new).is_ok();
                    let reached = storage.operations() > position;
                    drop(store);
                    storage.crash(crash);
                    let context = format!(
                        "seed {} writeback {} {crash} {fault:?} at step {step}: finished {finished}",
                        options.seed, options.writeback
                    );
                    let store = stores(&storage)
                        .open(GROUP)
                        .unwrap_or_else(|error| panic!("{context}: {error}"));
                    let found = store
                        .checkpoint()
                        .unwrap_or_else(|error| panic!("{context}: {error}"))
                        .unwrap_or_else(|| panic!("{context}: no checkpoint"));
                    if finished {
                        assert_eq!(found, (9, new.clone()), "{context}");
                    } else {
                        assert!(found == (4, old.clone()) || found == (9, new.clone()), "{context}");
                    }
                    if !reached {
                        break;
                    }
                }
            }
        }
    }
}

/// The store's discard, as the replica calls it after a checkpoint, stopped at each
/// call and followed by a power loss: the reopened store holds the checkpoint and every
/// record above it, for the metadata WAL and a partition's.
#[test]
fn store_discard_interrupted_at_every_step_keeps_the_checkpoint_and_every_record_above_it() {
    for group in [METADATA_GROUP, GROUP] {
        for options in storage_options() {
            for step in 0.. {
                let storage = SimStorage::new(options.clone());
                let mut store = stores(&storage).open(group).expect("open");
                for op in 1..=8 {
                    store.write_prepare(op, &frame(op, 2000)).expect("prepare");
                }
                store
                    .write_checkpoint(THROUGH, &Rc::from(&b"state"[..]))
                    .expect("checkpoint");
                let position = storage.operations() + step;
                storage.set_halt_after(Some(position));
                store.discard_through(THROUGH);
                let reached = storage.operations() > position;
                drop(store);
                storage.crash(CrashKind::PowerLoss);
                let store = stores(&storage).open(group).expect("reopen");
                let found: Vec<u64> = store.records().into_iter().map(|(op, _)| op).collect();
                let context = format!(
                    "group {group:#x} seed {} writeback {} step {step}: ops {found:?}",
                    options.seed, options.writeback
                );
                assert_eq!(
                    store.checkpoint().expect("checkpoint").map(|(op, _)| op),
                    Some(THROUGH),
                    "{context}"
                );
                assert!(
                    found == (1..=8).collect::<Vec<_>>() || found == vec![6, 7, 8],
                    "{context}"
                );
                if !reached {
                    assert_eq!(found, vec![6, 7, 8], "{context}");
                    break;
                }
            }
        }
    }
}
