//! Replica-level tests that need no network: boot, restart, durable state.

use std::rc::Rc;

use super::*;
use crate::vsr::replica::Outgoing;
use crate::vsr::store::StoredRecord;
use crate::wire::Header;

/// Counts applied ops; the digest is the count.
pub(super) struct Counter(pub(super) u64);

impl StateMachine for Counter {
    fn apply(&mut self, _header: &Header, _body: &[u8]) -> Vec<u8> {
        self.0 += 1;
        self.0.to_le_bytes().to_vec()
    }

    fn digest(&self) -> u128 {
        u128::from(self.0)
    }

    fn snapshot(&self) -> Vec<u8> {
        self.0.to_le_bytes().to_vec()
    }

    fn restore(&mut self, bytes: &[u8]) -> Result<(), crate::codec::DecodeError> {
        let mut reader = crate::codec::Reader::new(bytes);
        let count = reader.u64("count")?;
        reader.finish()?;
        self.0 = count;
        Ok(())
    }
}

/// A fresh replica `index` of the counter on an in-memory store.
pub(super) fn counter(index: u8) -> Replica<Counter, MemoryStore> {
    Replica::open(config(index), Counter(0), MemoryStore::new(), 0).expect("open")
}

/// Three fresh replicas of the counter on in-memory stores, indexes 0 to 2.
pub(super) fn three_counters() -> Vec<Replica<Counter, MemoryStore>> {
    (0..3u8).map(counter).collect()
}

pub(super) fn config(replica: u8) -> ReplicaConfig {
    ReplicaConfig {
        cluster: 7,
        group: 0,
        replica,
        replicas: 3,
        entropy_seed: 11,
        initial_view: 0,
        journal_ops_max: constants::JOURNAL_SLOTS_DEFAULT,
        journal_bytes_max: constants::RING_BYTES_DEFAULT,
        applied_frames_in_memory_ops: constants::JOURNAL_APPLIED_FRAMES_IN_MEMORY_OPS,
        transfer_on_rejoin: false,
        storage_break: StorageBreak::None,
        buggify: Default::default(),
    }
}

#[test]
fn a_fresh_replica_writes_its_superblock_so_a_restart_is_recognised() {
    // Found by the heavy sweep: a replica that crashed in view 0 had never written a
    // superblock, so its restart looked like a fresh boot and it led view 0 again on a
    // journal it had not verified.
    let store = MemoryStore::new();
    let fresh = Replica::open(config(0), Counter(0), store.clone(), 0).expect("open");
    assert_eq!(fresh.status(), Status::Normal);
    assert_eq!(
        store.superblock(),
        Some(Superblock::default()),
        "genesis superblock written at boot"
    );
    drop(fresh);
    let restarted = Replica::open(config(0), Counter(0), store, 1).expect("open");
    assert_eq!(restarted.status(), Status::Recovering);
}

#[test]
fn a_replica_whose_genesis_superblock_write_fails_still_counts_it() {
    let store = MemoryStore::new();
    store.set_fail_superblock_writes(true);
    let replica = Replica::open(config(1), Counter(0), store.clone(), 0).expect("open");
    assert_eq!(replica.stats().superblock_write_failures, 1);
    assert_eq!(store.superblock(), None);
}

#[test]
fn the_durable_commit_point_is_restored_on_restart() {
    let mut store = MemoryStore::new();
    store
        .write_superblock(Superblock {
            view: 4,
            log_view: 4,
            commit_max: 17,
        })
        .expect("memory store");
    let replica = Replica::open(config(2), Counter(0), store, 1).expect("open");
    assert_eq!((replica.view(), replica.log_view(), replica.commit_max()), (4, 4, 17));
    assert_eq!(
        replica.commit_min(),
        0,
        "nothing is applied until the replica adopts a view"
    );
}

pub(super) fn client_request(request: u64) -> Vec<u8> {
    let mut header = Header::new(crate::wire::Command::Request);
    header.cluster = 7;
    header.client = 0x5EED;
    header.request = request;
    header.operation = 1;
    crate::wire::seal_header(header, b"op")
}

#[test]
fn a_fresh_group_starts_in_its_initial_view_with_that_views_primary() {
    let replica = Replica::open(
        ReplicaConfig {
            initial_view: 5,
            ..config(2)
        },
        Counter(0),
        MemoryStore::new(),
        0,
    )
    .expect("open");
    assert_eq!(
        (replica.view(), replica.log_view(), replica.status()),
        (5, 5, Status::Normal)
    );
    assert!(replica.is_primary(), "view 5 of 3 replicas is led by replica 2");
}

#[test]
fn a_primary_that_loses_its_view_tells_clients_their_prepared_requests_are_not_committed() {
    let mut primary = counter(0);
    let client = crate::seam::ProcessId(9);
    primary.on_frame(client, &client_request(1), 0);
    assert_eq!(primary.head(), 1, "prepared, waiting for a quorum");
    primary.drain_outbox().for_each(drop);
    // Another replica's StartViewChange for view 1 with enough support moves it on.
    primary.start_view_change(1);
    let refusals: Vec<ClientError> = primary
        .drain_outbox()
        .filter(|out| out.to == client)
        .map(|out| {
            let (header, body) = crate::wire::open(&out.frame).expect("a sealed frame");
            assert_eq!((header.command, header.request), (crate::wire::Command::Refused, 1));
            ClientError::decode(body).expect("a refusal names its reason")
        })
        .collect();
    assert_eq!(refusals, vec![ClientError::TransientNotCommitted]);
}

#[test]
fn a_backup_refuses_requests_as_not_accepted() {
    let mut backup = counter(1);
    let client = crate::seam::ProcessId(9);
    backup.on_frame(client, &client_request(1), 0);
    let out: Vec<Outgoing> = backup.drain_outbox().collect();
    assert_eq!(out.len(), 1);
    let (header, body) = crate::wire::open(&out[0].frame).expect("a sealed frame");
    assert_eq!(header.command, crate::wire::Command::Refused);
    assert_eq!(ClientError::decode(body), Some(ClientError::TransientNotAccepted));
    assert_eq!(header.flags, 0, "the hint names view 0's primary");
    assert_eq!(backup.head(), 0, "nothing was prepared");
}

#[test]
fn a_primary_that_never_saw_a_clients_request_does_not_answer_it_when_leaving_its_view() {
    // Found by `--plane partition --faults heavy --shards 3` seed 12: a client table
    // entry applied from a prepare (no address known) held a placeholder address, and
    // the primary answered the client there, outside the world. The table now holds
    // no address at all for such a client.
    let mut replica = counter(0);
    replica.on_frame(crate::seam::ProcessId(9), &client_request(2), 0);
    assert_eq!(replica.pipeline.len(), 1);
    // As if the op had been inherited from a view change: no address for the client,
    // only a client-table entry from an earlier request applied as a backup.
    replica.pending_addresses.clear();
    replica.clients.record(0x5EED, 1, 0, Vec::new(), None);
    replica.drain_outbox().for_each(drop);
    replica.start_view_change(1);
    let out: Vec<Outgoing> = replica.drain_outbox().collect();
    assert!(!out.is_empty(), "the view change itself is announced");
    assert!(
        out.iter().all(|out| out.to.0 < 3),
        "only replicas are sent to: the client's address is unknown"
    );
}

#[test]
fn repair_asks_first_for_the_gap_that_blocks_applying_when_it_connects() {
    // Found by `--plane metadata --faults swarm ... --seed 58`: top-down repair kept
    // chasing new gaps at the top and never asked for op 18 again.
    let mut backup = counter(1);
    let mut primary = counter(0);
    for request in 1..=6 {
        primary.on_frame(crate::seam::ProcessId(9), &client_request(request), 0);
    }
    let prepares: Vec<Vec<u8>> = (1..=6).map(|op| prepare_frame(&primary, op)).collect();
    // The backup gets ops 1, 3, 4 and 6: gaps at 2 (above its commit point, under a
    // ready op) and 5 (the top run).
    for op in [1, 3, 4, 6] {
        backup.on_frame(crate::seam::ProcessId(0), &prepares[op - 1], 0);
    }
    backup.commit_max = 6;
    backup.commit_min = 1;
    assert_eq!(
        backup.repair_range(),
        Some((2, 2)),
        "the gap that blocks applying first"
    );
    // With the bottom gap filled, the top run is next.
    backup.on_frame(crate::seam::ProcessId(0), &prepares[1], 0);
    backup.commit_min = 4;
    assert_eq!(backup.repair_range(), Some((5, 5)));
}

#[test]
fn repair_takes_the_top_of_the_lowest_run_when_it_exceeds_the_window() {
    let mut backup = counter(1);
    let mut primary = counter(0);
    for request in 1..=8 {
        primary.on_frame(crate::seam::ProcessId(9), &client_request(request), 0);
    }
    let prepare = |op: u64| prepare_frame(&primary, op);
    // Held: 1, 5, 8. Missing: 2..=4 (under 5) and 6..=7 (under 8).
    for op in [1, 5, 8] {
        backup.on_frame(crate::seam::ProcessId(0), &prepare(op), 0);
    }
    backup.commit_max = 8;
    backup.commit_min = 1;
    backup.repair_window = 2;
    assert_eq!(
        backup.repair_range(),
        Some((3, 4)),
        "the top of the lowest run, right under a ready op, never the higher run first"
    );
}

#[test]
fn a_complete_log_carries_the_unapplied_ops_it_lacks_so_a_view_can_end_below_a_lost_op() {
    // Found by a fresh-seed campaign (issue #21: `--seed 9700131 --plane mixed --faults
    // swarm`, 6 replicas, on the build with WAL gap placeholders): after a whole-cluster
    // outage five replicas of a partition group had lost their unpublished tails; the
    // sixth had a complete log holding op 2 but not op 1, and had applied neither. Its
    // DoViewChange carried records from its commit point (2) only; the merge counts an
    // op below the carried window as held, so every new primary waited for op 1's body,
    // which nobody had (38 views, never Normal). A complete log now carries from the
    // first op it has not applied, and says what it lacks, so the merge ends the view
    // below the lost op.
    let primary = primary_with_ops(2);
    let mut backup = counter(1);
    backup.on_frame(crate::seam::ProcessId(0), &prepare_frame(&primary, 2), 0);
    backup.commit_max = 2;
    assert_eq!((backup.commit_min, backup.log_incomplete), (0, false));
    let log = backup.do_view_change_log();
    assert!(!log.incomplete);
    let carried: Vec<(u64, bool)> = log.records.iter().map(|(&op, record)| (op, record.present)).collect();
    assert_eq!(
        carried,
        vec![(1, false), (2, true)],
        "op 1, committed but not applied and not held, is carried as missing"
    );
    // A log that applied everything it knows committed carries from its commit point,
    // whose header anchors the merge.
    let mut caught_up = counter(2);
    for op in 1..=2 {
        caught_up.on_frame(crate::seam::ProcessId(0), &prepare_frame(&primary, op), 0);
    }
    caught_up.commit_max = 2;
    caught_up.commit_min = 2;
    assert_eq!(
        caught_up
            .do_view_change_log()
            .records
            .keys()
            .copied()
            .collect::<Vec<_>>(),
        vec![2]
    );
}

/// A primary with `ops` prepared ops, and a function returning op `op`'s prepare frame.
pub(super) fn primary_with_ops(ops: u64) -> Replica<Counter, MemoryStore> {
    let mut primary = counter(0);
    for request in 1..=ops {
        primary.on_frame(crate::seam::ProcessId(9), &client_request(request), 0);
    }
    primary.drain_outbox().for_each(drop);
    primary
}

pub(super) fn prepare_frame(primary: &Replica<Counter, MemoryStore>, op: u64) -> Vec<u8> {
    primary
        .journal
        .get(op)
        .and_then(|entry| entry.frame().cloned())
        .expect("the primary holds its prepares")
        .to_vec()
}

/// A primary with eight ops, and a backup holding only op 8 that knows all eight are
/// committed, its repair window `window` and no round outstanding.
pub(super) fn backup_missing_ops_under_8(
    window: u64,
) -> (Replica<Counter, MemoryStore>, Replica<Counter, MemoryStore>) {
    let primary = primary_with_ops(8);
    let mut backup = counter(1);
    backup.on_frame(crate::seam::ProcessId(0), &prepare_frame(&primary, 8), 0);
    backup.drain_outbox().for_each(drop);
    backup.repair_retry.stop();
    backup.commit_max = 8;
    backup.repair_window = window;
    (primary, backup)
}

/// The ranges of the RequestPrepares among `sent`.
pub(super) fn repair_ranges(sent: &[Outgoing]) -> Vec<(u64, u64)> {
    sent.iter()
        .filter_map(|out| crate::wire::open(&out.frame).ok().map(|(header, _)| header))
        .filter(|header| header.command == crate::wire::Command::RequestPrepares)
        .map(|header| (header.op, header.commit))
        .collect()
}

#[test]
fn a_repair_round_nobody_answered_keeps_its_window_and_one_answered_below_its_top_halves_it() {
    // Halving on every silent round shrank a restarted replica's window to one op while
    // a partition came and went (`--seed 1000016 --faults swarm --buggify`, issue #17).
    let (mut primary, mut backup) = backup_missing_ops_under_8(4);
    backup.repair();
    let request: Vec<Outgoing> = backup.drain_outbox().collect();
    assert_eq!(request.len(), 1);
    assert_eq!(repair_ranges(&request), vec![(4, 7)]);
    // Nothing comes back: after the retry the same range goes out, window unchanged.
    for _ in 0..constants::REPAIR_RETRY_TICKS {
        backup.tick(0);
    }
    assert_eq!(backup.repair_window, 4, "a silent round says nothing about the window");
    assert_eq!(repair_ranges(&backup.drain_outbox().collect::<Vec<_>>()), vec![(4, 7)]);
    // The primary answers with ops 4..=7; only op 4 gets through, not op 7 (the top,
    // which connects): the burst is being cut short, so the next round asks for less.
    primary.on_frame(crate::seam::ProcessId(1), &request[0].frame, 0);
    let answers: Vec<Outgoing> = primary.drain_outbox().collect();
    assert_eq!(answers.len(), 4, "the primary serves the four ops asked for");
    backup.on_frame(crate::seam::ProcessId(0), &answers[0].frame, 0);
    assert!(backup.journal.ready(4) && !backup.journal.ready(7));
    for _ in 0..constants::REPAIR_RETRY_TICKS {
        backup.tick(0);
    }
    assert_eq!(backup.repair_window, 2, "answers below the top: ask for less");
    // Op 4 now ready, the lowest run (1..=3) comes first, two ops at a time.
    assert_eq!(repair_ranges(&backup.drain_outbox().collect::<Vec<_>>()), vec![(2, 3)]);
}

#[test]
fn a_whole_group_restart_knows_its_commit_point_to_within_the_superblock_interval() {
    // Found by `--seed 1000006 --clients 8 --faults swarm` (issue #17): the commit point
    // was persisted only when a view started, so after a whole-cluster power outage a
    // 2-replica group knew nothing committed and re-replicated 466 ops before it could
    // commit anything new.
    let interval = constants::SUPERBLOCK_COMMIT_INTERVAL_OPS;
    let stores: Vec<MemoryStore> = (0..3).map(|_| MemoryStore::new()).collect();
    let mut replicas: Vec<_> = (0..3u8)
        .map(|index| Replica::open(config(index), Counter(0), stores[usize::from(index)].clone(), 0).expect("open"))
        .collect();
    let mut tick = 0;
    let mut commit = |replicas: &mut Vec<Replica<Counter, MemoryStore>>, requests: std::ops::RangeInclusive<u64>| {
        for request in requests {
            replicas[0].on_frame(crate::seam::ProcessId(9), &client_request(request), 0);
            exchange(replicas, &[0, 1, 2], 10, tick);
            tick += 10;
        }
        // A commit broadcast tells the backups the last commit point.
        exchange(replicas, &[0, 1, 2], constants::COMMIT_BROADCAST_TICKS + 10, tick);
        tick += constants::COMMIT_BROADCAST_TICKS + 10;
    };
    // Not on every commit: one op short of the interval, nothing new is persisted.
    commit(&mut replicas, 1..=interval - 1);
    for (index, store) in stores.iter().enumerate() {
        assert_eq!(replicas[index].commit_max(), interval - 1);
        assert_eq!(store.superblock().map(|superblock| superblock.commit_max), Some(0));
    }
    // At the interval, every replica persists what it knows committed.
    commit(&mut replicas, interval..=interval + 3);
    for (index, store) in stores.iter().enumerate() {
        let durable = store.superblock().expect("written").commit_max;
        assert!(
            (interval..=replicas[index].commit_max()).contains(&durable),
            "replica {index} persisted commit point {durable}"
        );
    }
    // Every replica restarts at once (a power outage): each knows that much committed.
    drop(replicas);
    let restarted: Vec<_> = (0..3u8)
        .map(|index| Replica::open(config(index), Counter(0), stores[usize::from(index)].clone(), 1).expect("open"))
        .collect();
    for replica in &restarted {
        assert_eq!(replica.status(), Status::Recovering);
        assert!(
            replica.commit_max() >= interval,
            "the restart knows the persisted commit point"
        );
    }
}

/// Four rounds of moving every replica's outbox to its receivers at `now`: each frame
/// sent is shown to `record`, and delivered if it is for a replica and `deliverable`
/// says so for its (sender, receiver, command).
fn deliver(
    replicas: &mut [Replica<Counter, MemoryStore>],
    now: u64,
    deliverable: impl Fn(usize, usize, crate::wire::Command) -> bool,
    mut record: impl FnMut(&[u8]),
) {
    for _ in 0..4 {
        let mut frames = Vec::new();
        for (index, replica) in replicas.iter_mut().enumerate() {
            for out in replica.drain_outbox() {
                frames.push((index, out));
            }
        }
        for (from, out) in frames {
            let to = out.to.0 as usize;
            record(&out.frame);
            let Ok((header, _)) = crate::wire::open(&out.frame) else {
                continue;
            };
            if to < replicas.len() && deliverable(from, to, header.command) {
                replicas[to].on_frame(crate::seam::ProcessId(from as u32), &out.frame, now);
            }
        }
    }
}

/// Deliver frames among the `live` replicas (frames to or from any other are lost) and
/// tick them, for `ticks` ticks of 10 ms.
pub(super) fn exchange(replicas: &mut [Replica<Counter, MemoryStore>], live: &[usize], ticks: u64, start_tick: u64) {
    exchange_cutting(replicas, live, start_tick..start_tick + ticks, |_, _, _| false);
}

/// How replica 1 loses op 1 from its disk in [`amnesia_scenario`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Loss {
    /// The record is gone and the store does not say so (the control run).
    Unadmitted,
    /// The record is gone and the store says its log may lack acknowledged ops.
    Admitted,
    /// The record is there but a bit of it rotted (it fails its checksum).
    Damaged,
    /// As `Damaged`, with the test-only broken answer that reads the damage as a torn
    /// tail nobody acknowledged ([`StorageBreak::CutDamageAsTornTail`]).
    DamageCutAsTornTail,
}

/// Op 1 commits on replicas 0 and 1 (replica 2 never sees it); replica 1 restarts
/// having lost it from its disk; replica 0 is gone for good. Returns replicas 1 and 2
/// after they have tried for a while to move on without replica 0.
fn amnesia_scenario(loss: Loss) -> Vec<Replica<Counter, MemoryStore>> {
    let mut stores: Vec<MemoryStore> = (0..3).map(|_| MemoryStore::new()).collect();
    let mut replicas: Vec<_> = (0..3u8)
        .map(|index| Replica::open(config(index), Counter(0), stores[usize::from(index)].clone(), 0).expect("open"))
        .collect();
    replicas[0].on_frame(crate::seam::ProcessId(9), &client_request(1), 0);
    exchange(&mut replicas, &[0, 1], 30, 0);
    assert_eq!(replicas[0].commit_min(), 1, "op 1 committed with replicas 0 and 1");
    assert_eq!(replicas[2].head(), 0, "replica 2 never saw op 1");

    // Replica 1 restarts without op 1 (a partition WAL's unpublished tail, discarded,
    // or a record that rotted on its disk).
    if matches!(loss, Loss::Damaged | Loss::DamageCutAsTornTail) {
        let Some((_, StoredRecord::Prepare(frame))) = stores[1].records().into_iter().find(|(op, _)| *op == 1) else {
            panic!("replica 1 stored op 1");
        };
        let mut rotten = frame.to_vec();
        let last = rotten.len() - 1;
        rotten[last] ^= 0x10;
        stores[1].write_prepare(1, &Rc::from(rotten)).expect("memory store");
    } else {
        stores[1].remove_prepare(1);
    }
    stores[1].set_may_lack_acknowledged_ops(loss == Loss::Admitted);
    let storage_break = if loss == Loss::DamageCutAsTornTail {
        StorageBreak::CutDamageAsTornTail
    } else {
        StorageBreak::None
    };
    let reopened = ReplicaConfig {
        storage_break,
        ..config(1)
    };
    replicas[1] = Replica::open(reopened, Counter(0), stores[1].clone(), 1).expect("open");
    exchange(&mut replicas, &[1, 2], 3_000, 30);
    replicas.into_iter().skip(1).collect()
}

#[test]
fn a_replica_that_lost_acknowledged_ops_cannot_outvote_a_committed_op() {
    // A view change counts a missing op as a nack. Replicas 1 and 2 form a view-change
    // quorum; if replica 1's log counted as complete, the two of them would prove op 1
    // "never acknowledged" and start a view without it, although op 1 committed. The
    // control run (a store that does not admit its loss) shows exactly that happens.
    let lost = |replicas: &[Replica<Counter, MemoryStore>]| {
        replicas
            .iter()
            .any(|replica| replica.status() == Status::Normal && replica.view() > 0 && replica.head() < 1)
    };
    let control = amnesia_scenario(Loss::Unadmitted);
    assert!(
        lost(&control),
        "without the rule, a view starts without the committed op 1"
    );
    let broken = amnesia_scenario(Loss::DamageCutAsTornTail);
    assert!(
        lost(&broken),
        "a damaged record cut as a torn tail (the test-only broken answer) loses the committed op 1"
    );

    for loss in [Loss::Admitted, Loss::Damaged] {
        let guarded = amnesia_scenario(loss);
        assert_guarded(&guarded, lost(&guarded));
    }
}

#[test]
fn a_replica_whose_record_rotted_holds_it_as_unknown_and_cannot_outvote_a_committed_op() {
    // Protocol-aware recovery: a record that fails its checksum may be an op this
    // replica acknowledged. It is neither applied nor read as "never had it".
    let guarded = amnesia_scenario(Loss::Damaged);
    assert!(
        guarded[0].log_incomplete(),
        "a damaged record leaves the log incomplete"
    );
    assert_eq!(guarded[0].commit_min(), 0, "the damaged op 1 was never applied");
    let lost = guarded
        .iter()
        .any(|replica| replica.status() == Status::Normal && replica.view() > 0 && replica.head() < 1);
    assert_guarded(&guarded, lost);
}

fn assert_guarded(guarded: &[Replica<Counter, MemoryStore>], lost: bool) {
    {
        assert!(!lost, "a view started without the committed op 1");
        assert!(
            guarded.iter().all(|replica| replica.status() != Status::Normal),
            "with one log possibly incomplete and replica 0 gone, no view can start: unavailable beats wrong"
        );
        assert!(guarded[0].log_incomplete());
        assert!(
            guarded[0].stats().do_view_changes_incomplete > 0,
            "replica 1 offered its log marked incomplete"
        );
    }
}

/// Deliver frames among the `live` replicas for the ticks in `ticks` (10 ms each) and
/// tick them, dropping frames to or from any other replica and every frame whose
/// (sender, receiver, command) `cut` matches.
pub(super) fn exchange_cutting(
    replicas: &mut [Replica<Counter, MemoryStore>],
    live: &[usize],
    ticks: std::ops::Range<u64>,
    cut: impl Fn(usize, usize, crate::wire::Command) -> bool,
) {
    for tick in ticks {
        let now = tick * 10_000;
        deliver(
            replicas,
            now,
            |from, to, command| live.contains(&from) && live.contains(&to) && !cut(from, to, command),
            |_| {},
        );
        for &index in live {
            replicas[index].tick(now);
        }
    }
}

#[test]
fn a_backup_repairs_from_another_peer_when_its_primary_never_answers() {
    // Issue #17 (`--seed 9900940 --faults swarm`, `--seed 9930017 --faults heavy`): a
    // backup asked only its primary for the ops it lacked, every 100 ticks, for as long
    // as that one link lost the answers, while the other backup held every op.
    use crate::wire::Command;
    let mut replicas = three_counters();
    replicas[0].on_frame(crate::seam::ProcessId(9), &client_request(1), 0);
    // Op 1 commits on replicas 0 and 1; replica 2 sees none of it.
    exchange_cutting(&mut replicas, &[0, 1, 2], 0..100, |from, to, _| from == 2 || to == 2);
    assert_eq!((replicas[0].commit_min(), replicas[1].commit_min()), (1, 1));
    assert_eq!(replicas[2].head(), 0);
    // Op 2 reaches every replica, so replica 2 holds op 2 (trusted) above its gap at
    // op 1; every repair between it and the primary is lost.
    replicas[0].on_frame(crate::seam::ProcessId(9), &client_request(2), 1_000_000);
    let repair = |command: Command| matches!(command, Command::RequestPrepares | Command::RepairPrepare);
    exchange_cutting(&mut replicas, &[0, 1, 2], 100..450, |from, to, command| {
        matches!((from, to), (0, 2) | (2, 0)) && repair(command)
    });
    assert_eq!(
        (replicas[2].status(), replicas[2].view(), replicas[2].head()),
        (Status::Normal, 0, 2),
        "replica 2 holds op 2"
    );
    assert_eq!(
        replicas[2].commit_min(),
        2,
        "replica 2 never repaired op 1 from replica 1 ({} repair requests)",
        replicas[2].stats().repair_requests
    );
    assert_eq!(
        replicas[2].state_machine().digest(),
        replicas[1].state_machine().digest()
    );
}

/// A request from client `client` (the primary prepares one op per client at a time).
fn request_from(client: u128, request: u64) -> Vec<u8> {
    let mut header = Header::new(crate::wire::Command::Request);
    header.cluster = 7;
    header.client = client;
    header.request = request;
    header.operation = 1;
    crate::wire::seal_header(header, b"op")
}

/// Eight ops prepared on every replica with every PrepareOk lost: the primary's
/// pipeline holds them all, uncommitted. Returns the tick reached.
fn pipeline_of_eight_unacknowledged(replicas: &mut [Replica<Counter, MemoryStore>]) -> u64 {
    use crate::wire::Command;
    for client in 1..=8u128 {
        replicas[0].on_frame(crate::seam::ProcessId(9), &request_from(client, 1), 0);
    }
    exchange_cutting(replicas, &[0, 1, 2], 0..20, |_, _, command| {
        command == Command::PrepareOk
    });
    assert_eq!(replicas[0].commit_max(), 0, "nothing acknowledged, nothing committed");
    assert!(
        replicas[1..].iter().all(|replica| replica.head() == 8),
        "every backup holds the eight ops"
    );
    20
}

#[test]
fn the_primary_resends_only_the_front_of_its_pipeline() {
    // Found by the outage phase (`--seed 70059 --faults swarm`, 2 replicas): resending
    // a whole pipeline at once overflowed small links, whose random drops took the
    // front as readily as the back, and a view's 42 inherited ops took over 20,000
    // ticks to commit.
    use crate::wire::Command;
    let mut replicas = three_counters();
    let tick = pipeline_of_eight_unacknowledged(&mut replicas);
    let mut resent = std::collections::BTreeSet::new();
    for tick in tick..tick + 1_000 {
        replicas[0].tick(tick * 10_000);
        for out in replicas[0].drain_outbox() {
            if let Ok((header, _)) = crate::wire::open(&out.frame)
                && header.command == Command::Prepare
            {
                resent.insert(header.op);
            }
        }
    }
    let window: Vec<u64> = (1..=constants::PREPARE_RESEND_WINDOW_OPS as u64).collect();
    assert_eq!(
        resent.into_iter().collect::<Vec<_>>(),
        window,
        "only the ops at the pipeline's front are resent while it does not commit"
    );
}

#[test]
fn a_backup_acknowledges_the_pipeline_front_again_when_the_commit_point_stalls() {
    // Found by the outage phase (`--seed 70059 --faults swarm`): a link up only in
    // short spells kept missing the primary's backed-off resends, so lost PrepareOks
    // were replaced slowly. A commit broadcast proves the link is up; a backup that
    // sees the commit point stand still between two of them acknowledges the front
    // again at once.
    use crate::wire::Command;
    let mut replicas = three_counters();
    let tick = pipeline_of_eight_unacknowledged(&mut replicas);
    // Every resent prepare is lost from now on; only broadcasts and acks get through.
    exchange_cutting(&mut replicas, &[0, 1, 2], tick..tick + 400, |_, _, command| {
        command == Command::Prepare
    });
    assert_eq!(
        (replicas[0].commit_max(), replicas[0].status(), replicas[0].view()),
        (8, Status::Normal, 0),
        "the primary committed every op from acknowledgements its broadcasts drew"
    );
}

#[test]
fn a_primary_never_prepares_a_request_older_than_one_of_the_same_client_it_has_not_applied() {
    // Found by a campaign (`--seed 9770026 --plane contended --faults split
    // --crash-primary --power-loss-prob 0.3`): a client gave up on request 9 (its
    // primary lost the view), sent request 10 to the new primary, and then a delayed
    // copy of request 9 reached that primary while 10 was still unapplied. The client
    // table knows only applied requests, so 9 was prepared behind 10 and applied after
    // it; a later resend of 10 would have executed it twice.
    let mut primary = counter(0);
    let client = crate::seam::ProcessId(9);
    primary.on_frame(client, &request_from(5, 10), 0);
    assert_eq!(primary.head(), 1, "request 10 is prepared, waiting for a quorum");
    primary.on_frame(client, &request_from(5, 9), 0);
    assert_eq!(primary.head(), 1, "the older request 9 is stale, not prepared");
    primary.on_frame(client, &request_from(5, 10), 0);
    assert_eq!(primary.head(), 1, "request 10 again is in flight, not prepared twice");
    primary.on_frame(client, &request_from(6, 1), 0);
    assert_eq!(primary.head(), 2, "another client's request is prepared");
    primary.on_frame(client, &request_from(5, 11), 0);
    assert_eq!(primary.head(), 3, "the client's newer request is prepared");
    let requests: Vec<(u128, u64)> = (1..=3)
        .map(|op| {
            let header = primary.journal.get(op).expect("journaled").header();
            (header.client, header.request)
        })
        .collect();
    assert_eq!(requests, vec![(5, 10), (6, 1), (5, 11)]);
}

#[test]
fn an_applied_ops_frame_leaves_memory_for_the_store_and_is_served_from_it() {
    // The journal keeps a repair window of applied frames in memory and only headers
    // below it; a peer further behind is served from the store, byte for byte.
    use crate::wire::Command;
    let mut replicas: Vec<_> = (0..3u8)
        .map(|index| {
            // As a disk store: a store sharing the journal's frames keeps them there.
            let store = MemoryStore::new();
            store.set_frames_not_shared(true);
            Replica::open(config(index), Counter(0), store, 0).expect("open")
        })
        .collect();
    let ops = constants::JOURNAL_APPLIED_FRAMES_IN_MEMORY_OPS + 40;
    for request in 1..=ops {
        replicas[0].on_frame(crate::seam::ProcessId(9), &client_request(request), 0);
        exchange_cutting(&mut replicas, &[0, 1, 2], request..request + 1, |_, _, _| false);
    }
    assert_eq!(replicas[0].commit_min(), ops, "every op applied on the primary");
    let journal = &replicas[0].journal;
    let old = journal.get(1).expect("op 1 is in the ring");
    assert!(old.body_in_store() && old.has_body() && old.frame().is_none());
    assert!(journal.ready(1), "an op whose frame is in the store is still held");
    let recent = ops - constants::JOURNAL_APPLIED_FRAMES_IN_MEMORY_OPS + 1;
    assert!(
        (recent..=ops).all(|op| journal.get(op).is_some_and(|entry| entry.frame().is_some())),
        "the last repair window of applied ops keeps its frames in memory"
    );
    assert!(
        (1..recent).all(|op| journal.get(op).is_some_and(crate::vsr::journal::Entry::body_in_store)),
        "older applied ops keep only their headers"
    );
    // Replica 2 asks for ops 1..=10: served from the store, the frames it stored.
    let mut ask = Header::new(Command::RequestPrepares);
    ask.cluster = 7;
    ask.replica = 2;
    ask.op = 1;
    ask.commit = 10;
    replicas[0].on_frame(crate::seam::ProcessId(2), &crate::wire::seal_header(ask, &[]), 0);
    let served: Vec<Vec<u8>> = replicas[0]
        .drain_outbox()
        .filter(|out| out.to.0 == 2)
        .filter_map(|out| {
            let (header, body) = crate::wire::open(&out.frame).ok()?;
            (header.command == Command::RepairPrepare).then(|| body.to_vec())
        })
        .collect();
    let stored: Vec<Vec<u8>> = (1..=10)
        .map(|op| replicas[0].store.read_prepare(op).expect("stored").to_vec())
        .collect();
    assert_eq!(served, stored, "ops 1..=10 are served, each as the store holds it");
    assert!(
        served
            .iter()
            .enumerate()
            .all(|(index, frame)| crate::wire::open(frame).is_ok_and(|(header, _)| header.op == index as u64 + 1)),
        "each served frame is its op's prepare"
    );
    // A store sharing the journal's frames (the in-memory one) keeps them in memory.
    let mut shared = three_counters();
    for request in 1..=ops {
        shared[0].on_frame(crate::seam::ProcessId(9), &client_request(request), 0);
        exchange_cutting(&mut shared, &[0, 1, 2], request..request + 1, |_, _, _| false);
    }
    assert_eq!(shared[0].commit_min(), ops);
    assert!(shared[0].journal.get(1).is_some_and(|entry| entry.frame().is_some()));
}

/// How a scripted run delivers ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ticking {
    /// Every tick runs, as before quiet ticks were skipped.
    EveryTickRuns,
    /// `tick` is called at every tick and returns at once on a quiet one.
    QuietTicksCounted,
    /// `tick` is called only when the replica says a tick runs, as a shard does; the
    /// ticks between are handed over in bulk before the next input or tick.
    CalledWhenDue,
}

/// One run of a three-replica group under a fixed script (requests, a primary cut off
/// long enough to lose its view, lost acknowledgements, a backup cut off and healed):
/// every frame sent, in order, the replica ticks that did not run (or were not even
/// called), and each replica's view and commit point at the end.
fn scripted_group_run(ticking: Ticking) -> (Vec<Vec<u8>>, u64, Vec<(u64, u64)>) {
    use crate::wire::Command;
    let mut replicas = three_counters();
    let (mut sent, mut skipped) = (Vec::new(), 0);
    let mut last_now = 0;
    for tick in 0..4_000u64 {
        let now = tick * 10_000;
        if ticking == Ticking::CalledWhenDue {
            // Every replica may take a frame now: hand it the ticks it was not called for.
            for replica in &mut replicas {
                replica.skip_quiet_ticks_to(tick, last_now);
            }
        }
        if tick % 7 == 0 && tick < 3_500 {
            let primary = replicas.iter().position(|replica| replica.is_primary()).unwrap_or(0);
            let client = u128::from(tick % 5) + 1;
            replicas[primary].on_frame(crate::seam::ProcessId(9), &request_from(client, tick + 1), now);
        }
        let cut = |from: usize, to: usize, command: Command| match tick {
            // The first primary alone: the others elect another.
            600..1_400 => from == 0 || to == 0,
            // Acknowledgements lost: the pipeline retransmits.
            1_800..2_000 => command == Command::PrepareOk,
            // A backup cut off falls behind, then repairs.
            2_300..2_900 => from == 2 || to == 2,
            _ => false,
        };
        deliver(
            &mut replicas,
            now,
            |from, to, command| !cut(from, to, command),
            |frame| sent.push(frame.to_vec()),
        );
        for replica in &mut replicas {
            match ticking {
                Ticking::EveryTickRuns => replica.ticks_quiet_ahead = 0,
                Ticking::QuietTicksCounted => skipped += u64::from(replica.ticks_quiet_ahead > 0),
                Ticking::CalledWhenDue => {
                    assert!(replica.next_tick_that_runs() >= tick, "a due tick was never called");
                    if replica.next_tick_that_runs() > tick {
                        skipped += 1;
                        continue;
                    }
                }
            }
            replica.tick(now);
        }
        last_now = now;
    }
    let ends = replicas
        .iter()
        .map(|replica| (replica.view(), replica.commit_min()))
        .collect();
    (sent, skipped, ends)
}

#[test]
fn ticks_skipped_as_quiet_leave_a_group_where_ticking_every_one_would() {
    let (sent_ticking, skipped_ticking, ends_ticking) = scripted_group_run(Ticking::EveryTickRuns);
    assert_eq!(skipped_ticking, 0);
    assert!(
        ends_ticking.iter().all(|&(view, commit)| view > 0 && commit > 300),
        "the script changed views and committed: {ends_ticking:?}"
    );
    for ticking in [Ticking::QuietTicksCounted, Ticking::CalledWhenDue] {
        let (sent, skipped, ends) = scripted_group_run(ticking);
        assert!(
            skipped > 6_000,
            "{ticking:?}: most of 12,000 replica ticks are quiet; {skipped} were skipped"
        );
        assert_eq!(ends, ends_ticking, "{ticking:?}");
        assert_eq!(sent.len(), sent_ticking.len(), "{ticking:?}: frames sent");
        let first_difference = sent.iter().zip(&sent_ticking).position(|(a, b)| a != b);
        assert_eq!(
            first_difference, None,
            "{ticking:?}: the same frames, in the same order"
        );
    }
}

#[test]
#[should_panic(expected = "were quiet")]
fn handing_over_a_tick_that_was_due_as_quiet_is_refused() {
    let mut primary = counter(0);
    primary.on_frame(crate::seam::ProcessId(9), &client_request(1), 0);
    let due = primary.next_tick_that_runs();
    // The prepare's retransmit (or a heartbeat) is due by then: skipping past it would
    // lose that firing.
    primary.skip_quiet_ticks_to(due + 1, 0);
}

#[test]
fn a_replica_stopped_by_its_store_skips_its_ticks_and_still_takes_no_input() {
    // A stopped replica's ticks are all quiet, so they are skipped; the frame after
    // them must find nothing to settle (a stopped replica's ticks did nothing).
    let store = MemoryStore::new();
    let mut primary = Replica::open(config(0), Counter(0), store.clone(), 0).expect("open");
    store.set_failure(Some("wal sync"));
    primary.on_frame(crate::seam::ProcessId(9), &client_request(1), 0);
    assert_eq!(primary.storage_failure(), Some("wal sync"));
    primary.drain_outbox().for_each(drop);
    for tick in 1..=1_000 {
        primary.tick(tick * 10_000);
    }
    assert!(primary.ticks_skipped > 900, "{} ticks skipped", primary.ticks_skipped);
    let dropped = primary.stats().frames_dropped_stopped;
    primary.on_frame(crate::seam::ProcessId(9), &client_request(2), 10_000_000);
    assert_eq!(primary.stats().frames_dropped_stopped, dropped + 1);
    assert_eq!(primary.ticks_skipped, 0, "the skipped ticks were settled (as nothing)");
    assert_eq!(primary.drain_outbox().count(), 0, "a stopped replica sends nothing");
}
