//! Checkpoints, the journal's bounds and state transfer, on three replicas exchanging
//! frames directly (no network model): what a lagging or restarted replica does.

use super::constants::{CHECKPOINT_RETRY_TICKS, JOURNAL_OPS_MIN};
use super::tests::{Counter, client_request, config, exchange};
use super::*;

/// The smallest journal: a checkpoint every 16 applied ops.
fn small(replica: u8) -> ReplicaConfig {
    ReplicaConfig {
        journal_ops_max: JOURNAL_OPS_MIN,
        ..config(replica)
    }
}

fn cluster(stores: &[MemoryStore]) -> Vec<Replica<Counter, MemoryStore>> {
    (0..3u8)
        .map(|index| Replica::open(small(index), Counter(0), stores[usize::from(index)].clone(), 0).expect("open"))
        .collect()
}

/// Commit requests `from..=to` one at a time among `live` (replica 0 leads view 0).
/// Returns the tick reached.
fn write(
    replicas: &mut [Replica<Counter, MemoryStore>],
    live: &[usize],
    requests: std::ops::RangeInclusive<u64>,
    mut tick: u64,
) -> u64 {
    for request in requests {
        replicas[0].on_frame(ProcessId(9), &client_request(request), tick * 10_000);
        exchange(replicas, live, 3, tick);
        tick += 3;
    }
    tick
}

use crate::seam::ProcessId;

/// How often this thread's code hit `mark` since the last `coverage::reset`.
fn hits_of(mark: crate::coverage::Mark) -> u64 {
    crate::coverage::hits()
        .into_iter()
        .find(|(hit, _)| *hit == mark)
        .map_or(0, |(_, hits)| hits)
}

#[test]
fn the_journal_stays_within_its_cap_while_checkpoints_advance() {
    let stores: Vec<MemoryStore> = (0..3).map(|_| MemoryStore::new()).collect();
    let mut replicas = cluster(&stores);
    let tick = write(&mut replicas, &[0, 1, 2], 1..=300, 0);
    // A commit heartbeat tells the backups the last op committed.
    exchange(&mut replicas, &[0, 1, 2], 60, tick);
    for replica in &replicas {
        assert_eq!(replica.commit_min(), 300);
        let (entries, _) = replica.journal_size();
        assert!(
            entries as u64 <= JOURNAL_OPS_MIN,
            "replica {} holds {entries} entries, over its cap of {JOURNAL_OPS_MIN}",
            replica.index()
        );
        assert!(replica.checkpoint_op() >= 300 - 16, "a checkpoint every 16 ops");
        assert!(replica.journal_floor() > 0, "ops below the checkpoint were evicted");
        assert!(replica.stats().checkpoints_written >= 17);
    }
    // The store forgot what the ring evicted, and kept every op the ring holds (the
    // ring reads applied ops' frames back from it).
    let kept: Vec<u64> = stores[1].records().into_iter().map(|(op, _)| op).collect();
    let floor = replicas[1].journal_floor();
    assert_eq!(kept, (floor + 1..=300).collect::<Vec<u64>>());
}

#[test]
fn a_backup_a_little_behind_repairs_from_the_ring_without_a_transfer() {
    let stores: Vec<MemoryStore> = (0..3).map(|_| MemoryStore::new()).collect();
    let mut replicas = cluster(&stores);
    let tick = write(&mut replicas, &[0, 1, 2], 1..=100, 0);
    exchange(&mut replicas, &[0, 1, 2], 60, tick);
    // Replica 2 misses 20 ops: fewer than the ring keeps below the checkpoint.
    let tick = write(&mut replicas, &[0, 1], 101..=120, tick + 60);
    assert_eq!(replicas[2].commit_min(), 100);
    exchange(&mut replicas, &[0, 1, 2], 200, tick);
    assert_eq!(replicas[2].commit_min(), 120, "caught up");
    assert_eq!(replicas[2].stats().transfers_started, 0, "repair sufficed");
    assert_eq!(replicas[0].stats().range_evicted_sent, 0);
}

/// Commit 10 ops on all three, then 200 more without replica 2: the primary's ring (80
/// entries) evicts where it stopped, so it can catch up only by state transfer.
/// Returns the tick reached.
fn cut_off_replica_2_past_the_ring(replicas: &mut [Replica<Counter, MemoryStore>]) -> u64 {
    let tick = write(replicas, &[0, 1, 2], 1..=10, 0);
    exchange(replicas, &[0, 1, 2], 60, tick);
    let tick = write(replicas, &[0, 1], 11..=210, tick + 60);
    assert_eq!(replicas[2].commit_min(), 10);
    tick
}

#[test]
fn a_backup_cut_off_past_the_ring_catches_up_by_state_transfer() {
    let stores: Vec<MemoryStore> = (0..3).map(|_| MemoryStore::new()).collect();
    let mut replicas = cluster(&stores);
    let tick = cut_off_replica_2_past_the_ring(&mut replicas);
    assert!(
        replicas[0].journal_floor() > 11,
        "the ops replica 2 needs left the ring"
    );
    exchange(&mut replicas, &[0, 1, 2], 300, tick);
    let (primary, lagging) = (&replicas[0], &replicas[2]);
    assert_eq!(lagging.commit_min(), 210, "caught up");
    assert_eq!(lagging.state_machine().digest(), primary.state_machine().digest());
    assert!(
        primary.stats().range_evicted_sent >= 1,
        "the primary said the range was evicted"
    );
    assert_eq!(lagging.stats().transfers_installed, 1);
    assert_eq!(
        lagging.stats().transfers_stale,
        0,
        "the pinned ring connected the install"
    );
    // The installed checkpoint is durable: a restart comes back from it.
    let restarted = Replica::open(small(2), Counter(0), stores[2].clone(), 1).expect("open");
    assert!(restarted.commit_min() >= 200, "booted from the transferred checkpoint");
    assert_eq!(restarted.state_machine().0, restarted.commit_min());
}

#[test]
fn a_transferred_checkpoint_is_installed_only_once_durable() {
    // Seed 353000081 (`--branch 3801:1`, contended, split, power loss, buggify): a
    // replica installed a transferred checkpoint at op 120 in memory, its disk refused
    // the write, and nothing retried it (no op was applied after). It counted op 120
    // as held, crashed, booted from its older checkpoint without it, and offered its
    // log as complete: a view change could have lost a committed op.
    let stores: Vec<MemoryStore> = (0..3).map(|_| MemoryStore::new()).collect();
    let mut replicas = cluster(&stores);
    let tick = cut_off_replica_2_past_the_ring(&mut replicas);
    // Replica 2's disk refuses checkpoints while it catches up: the transfer arrives
    // whole and is refused, the state and the journal as they were.
    stores[2].set_fail_checkpoint_writes(true);
    exchange(&mut replicas, &[0, 1, 2], 300, tick);
    let lagging = &replicas[2];
    assert!(stores[2].checkpoint_write_attempts() >= 1, "the transfer was tried");
    assert_eq!(lagging.stats().transfers_installed, 0);
    assert!(lagging.stats().transfers_abandoned >= 1);
    assert_eq!(
        lagging.stats().checkpoint_write_failures,
        stores[2].checkpoint_write_attempts()
    );
    assert_eq!(lagging.commit_min(), 10, "nothing installed in memory only");
    assert_eq!(lagging.state_machine().0, 10, "the state went back to the applied one");
    assert_eq!(lagging.checkpoint_op(), 0);
    assert!(lagging.journal_floor() <= lagging.checkpoint_op());
    // The disk recovers: the catch-up asks again and installs a durable checkpoint.
    stores[2].set_fail_checkpoint_writes(false);
    exchange(&mut replicas, &[0, 1, 2], 600, tick + 300);
    let lagging = &replicas[2];
    assert_eq!(lagging.commit_min(), 210, "caught up");
    assert!(lagging.stats().transfers_installed >= 1);
    assert!(lagging.checkpoint_op() > 10, "the install is the durable checkpoint");
    let restarted = Replica::open(small(2), Counter(0), stores[2].clone(), 1).expect("open");
    assert_eq!(
        restarted.commit_min(),
        lagging.checkpoint_op(),
        "booted from the transferred checkpoint"
    );
}

#[test]
fn a_restart_boots_from_its_checkpoint_and_replays_only_the_ops_above_it() {
    let stores: Vec<MemoryStore> = (0..3).map(|_| MemoryStore::new()).collect();
    let mut replicas = cluster(&stores);
    let tick = write(&mut replicas, &[0, 1, 2], 1..=100, 0);
    let checkpoint = replicas[1].checkpoint_op();
    assert!(checkpoint > 0);
    replicas[1] = Replica::open(small(1), Counter(0), stores[1].clone(), 1).expect("open");
    assert_eq!(
        replicas[1].commit_min(),
        checkpoint,
        "the state comes from the checkpoint"
    );
    assert_eq!(replicas[1].state_machine().0, checkpoint);
    assert_eq!(replicas[1].status(), Status::Recovering);
    exchange(&mut replicas, &[0, 1, 2], 300, tick);
    assert_eq!(replicas[1].status(), Status::Normal);
    assert_eq!(replicas[1].commit_min(), 100);
    assert_eq!(replicas[1].stats().transfers_started, 0, "its own log connected");
}

#[test]
fn a_checkpoint_that_does_not_decode_refuses_to_boot() {
    let store = MemoryStore::new();
    let mut writer = store.clone();
    writer
        .write_superblock(Superblock::default())
        .expect("memory store writes");
    writer
        .write_checkpoint(5, &std::rc::Rc::from(b"not a checkpoint".to_vec()))
        .expect("memory store writes");
    let error = Replica::open(small(0), Counter(0), store, 1).err().expect("refused");
    assert_eq!(error.what, "checkpoint refused at boot");
}

/// What [`checkpointed_cluster`] returns: the replicas, each op's frame, the tick.
type Checkpointed = (
    Vec<Replica<Counter, MemoryStore>>,
    std::collections::BTreeMap<u64, std::rc::Rc<[u8]>>,
    u64,
);

/// Three replicas after 120 requests with the smallest journal (so every backup has
/// evicted ops below a checkpoint), the primary's frame of every op, and the tick.
fn checkpointed_cluster() -> Checkpointed {
    let stores: Vec<MemoryStore> = (0..3).map(|_| MemoryStore::new()).collect();
    let mut replicas = cluster(&stores);
    let mut frames = std::collections::BTreeMap::new();
    let mut tick = 0;
    for request in 1..=120 {
        tick = write(&mut replicas, &[0, 1, 2], request..=request, tick);
        let op = replicas[0].head();
        let frame = replicas[0].journal.get(op).and_then(|entry| entry.frame().cloned());
        frames.insert(op, frame.expect("the primary holds its head"));
    }
    exchange(&mut replicas, &[0, 1, 2], 60, tick);
    (replicas, frames, tick)
}

#[test]
fn a_retransmitted_prepare_of_the_checkpoint_floor_is_acknowledged_not_journaled() {
    // Found by `workload-fuzz --plane uniform --faults light --crash-prob 0.02
    // --restart-prob 0.02 --journal-slots 80 --ring-entries 256 --ticks 20000 --seed 5`:
    // a retransmit of the op a checkpoint had made the journal's floor looked like a
    // held header missing its body, and was put in place of the floor.
    let (mut replicas, frames, tick) = checkpointed_cluster();
    let backup = &mut replicas[1];
    let floor = backup.journal_floor();
    assert!(floor > 0, "ops were evicted below a checkpoint");
    backup.drain_outbox().for_each(drop);
    backup.on_frame(ProcessId(0), &frames[&floor], (tick + 60) * 10_000);
    let acknowledged = backup.drain_outbox().any(|out| {
        crate::wire::open(&out.frame)
            .is_ok_and(|(header, _)| header.command == crate::wire::Command::PrepareOk && header.op == floor)
    });
    assert!(
        acknowledged,
        "the floor op is held (as the checkpoint): acknowledged again"
    );
    assert_eq!(backup.journal_floor(), floor, "the floor stays a header");
    assert!(
        backup.journal.get(floor).is_some_and(|entry| entry.frame().is_none()),
        "the floor holds no body"
    );
}

#[test]
fn a_backup_acknowledges_ops_it_holds_only_in_its_checkpoint() {
    // Found by the first nightly spec run (`--seed 1000001`, small journals): after a
    // whole-cluster outage a 2-replica group's primary started its view alone at a
    // commit point below its backup's checkpoint, and resent those ops for 20,000 ticks;
    // the backup, holding them only inside its checkpoint, dropped the prepares as
    // stale. Ops below the floor are committed (applied), so the current primary's
    // prepare at one is the op the checkpoint holds: acknowledge it, unless the floor's
    // header shows the prepare is a different one.
    let (mut replicas, frames, tick) = checkpointed_cluster();
    let backup = &mut replicas[1];
    let floor = backup.journal_floor();
    assert!(floor > 8, "ops were evicted below a checkpoint");
    assert!(
        backup.journal.get(floor - 1).is_none(),
        "below the floor nothing is held"
    );
    let acknowledges = |backup: &mut Replica<Counter, MemoryStore>, frame: &[u8], op: u64| {
        backup.drain_outbox().for_each(drop);
        backup.on_frame(ProcessId(0), frame, (tick + 60) * 10_000);
        backup.drain_outbox().any(|out| {
            crate::wire::open(&out.frame)
                .is_ok_and(|(header, _)| header.command == crate::wire::Command::PrepareOk && header.op == op)
        })
    };
    // Just below the floor (checked against the floor's parent), and further down
    // (nothing left to check it against: committed, so it is the op).
    for op in [floor - 1, floor - 8] {
        assert!(
            acknowledges(backup, &frames[&op], op),
            "op {op} below floor {floor} is acknowledged"
        );
    }
    // A different prepare at the op below the floor: its checksum is not the floor's
    // parent, so it is not the op the checkpoint holds.
    let (header, body) = crate::wire::open(&frames[&(floor - 1)]).expect("a valid frame");
    let mut other = header;
    other.request += 1_000;
    let forged = crate::wire::seal_header(other, body);
    assert!(
        !acknowledges(backup, &forged, floor - 1),
        "a prepare the floor's header disowns is not acknowledged"
    );
    assert_eq!(backup.journal_floor(), floor, "nothing was journaled below the floor");
}

#[test]
fn a_failed_checkpoint_is_retried_once_a_second_not_after_every_input() {
    // Found on loopback nodes: a checkpoint refused by the disk was encoded again after
    // every frame and tick, and the shard, busy encoding, missed its heartbeats.
    let stores: Vec<MemoryStore> = (0..3).map(|_| MemoryStore::new()).collect();
    for store in &stores {
        store.set_fail_checkpoint_writes(true);
    }
    let mut replicas = cluster(&stores);
    // 15 ops: one below the first checkpoint (every 16 applied ops).
    let tick = write(&mut replicas, &[0, 1, 2], 1..=15, 0);
    assert_eq!(stores[0].checkpoint_write_attempts(), 0);
    // Op 16 is due; every input for the next 90 ticks (frames, commits, heartbeats)
    // finds it still due.
    let tick = write(&mut replicas, &[0, 1, 2], 16..=16, tick);
    exchange(&mut replicas, &[0, 1, 2], 90, tick);
    assert_eq!(stores[0].checkpoint_write_attempts(), 1, "one attempt, then the wait");
    assert_eq!(replicas[0].checkpoint_op(), 0);
    // The disk recovers; after the wait the next attempt succeeds.
    for store in &stores {
        store.set_fail_checkpoint_writes(false);
    }
    exchange(&mut replicas, &[0, 1, 2], CHECKPOINT_RETRY_TICKS, tick + 90);
    assert_eq!(
        stores[0].checkpoint_write_attempts(),
        2,
        "retried once the wait was over"
    );
    assert_eq!(replicas[0].checkpoint_op(), 16);
    assert_eq!(replicas[0].stats().checkpoint_write_failures, 1);
}

#[test]
fn repair_asks_for_no_op_above_what_the_journal_can_hold() {
    // `--seed 783 --plane metadata --faults swarm`: a backup 535 ops behind with a
    // 1,024-slot journal asked for the newest committed op, whose answer it then
    // dropped as beyond its journal, every 100 ticks until the run ended.
    let mut backup = Replica::open(small(1), Counter(0), MemoryStore::new(), 0).expect("open");
    let mut commit = crate::wire::Header::new(crate::wire::Command::Commit);
    commit.cluster = 7;
    commit.replica = 0;
    commit.commit = 10 * JOURNAL_OPS_MIN;
    let frame = crate::wire::seal_header(commit, &[]);
    backup.on_frame(ProcessId(0), &frame, 0);
    assert_eq!(backup.commit_max(), 10 * JOURNAL_OPS_MIN);
    let mut asked = None;
    for tick in 1..=200 {
        backup.tick(tick * 10_000);
        for out in backup.drain_outbox() {
            if let Ok((header, _)) = crate::wire::open(&out.frame)
                && header.command == crate::wire::Command::RequestPrepares
            {
                asked.get_or_insert((header.op, header.commit));
            }
        }
    }
    let (first, last) = asked.expect("the backup asks for the ops it lacks");
    assert!(
        (1..=JOURNAL_OPS_MIN).contains(&first) && last <= JOURNAL_OPS_MIN,
        "asked for {first}..={last}, beyond the {JOURNAL_OPS_MIN} ops its journal holds above its checkpoint"
    );
}

#[test]
fn a_replica_that_starts_its_view_as_primary_drops_the_transfer_it_had_in_flight() {
    // `--seed 10001315 --plane lifecycle --faults light --journal-slots 80`: the metadata
    // group's would-be primary started a state transfer during its view change; repair
    // completed its log first and the view started; the transfer's last chunk then
    // arrived and was installed three ops above the inherited pipeline's front, so the
    // commit point passed ops the pipeline still had to commit. A primary whose log is
    // complete has nothing to fetch: the view's start drops the transfer.
    use super::constants::LIVENESS_WINDOW_TICKS;
    use super::tests::{exchange_cutting, three_counters};
    use crate::wire::Command;
    crate::coverage::reset();
    let mut replicas = three_counters();
    // Replica 0 (view 0's primary) is gone; replica 2's DoViewChange is held back, so
    // replica 1 waits as view 1's primary with only its own.
    let until_view_change = LIVENESS_WINDOW_TICKS + 100;
    exchange_cutting(&mut replicas, &[1, 2], 0..until_view_change, |from, _, command| {
        from == 2 && command == Command::DoViewChange
    });
    assert_eq!((replicas[1].status(), replicas[1].view()), (Status::ViewChange, 1));
    assert!(replicas[1].do_view_change_sent, "it voted for itself");
    // A peer says the ops it lacks left its ring: it starts a transfer from that peer.
    let mut evicted = replicas[1].header(Command::RangeEvicted);
    evicted.replica = 2;
    evicted.view = 1;
    evicted.op = 100;
    replicas[1].on_frame(
        ProcessId(2),
        &crate::wire::seal_header(evicted, &[]),
        until_view_change * 10_000,
    );
    assert!(
        replicas[1].transferring(),
        "a would-be primary may fetch what its log lacks"
    );
    // Replica 2's DoViewChange arrives (the transfer's chunks do not): the merged log is
    // empty, so replica 1's is complete and its view starts.
    exchange_cutting(
        &mut replicas,
        &[1, 2],
        until_view_change..until_view_change + 100,
        |_, _, command| command == Command::RequestCheckpoint || command == Command::CheckpointChunk,
    );
    let primary = &replicas[1];
    assert_eq!((primary.status(), primary.view()), (Status::Normal, 1));
    assert!(primary.is_primary());
    assert!(!primary.transferring(), "the view's start dropped the transfer");
    assert_eq!(primary.stats().transfers_abandoned, 1);
    let dropped = hits_of(crate::coverage::Mark::TransferDroppedLeading);
    assert_eq!(dropped, 1, "the drop is marked");
}

#[test]
fn a_served_pin_whose_last_chunk_left_is_released_soon_when_the_install_goes_unheard() {
    // `--seed 10002124 --replicas 5 --journal-slots 80`: after a whole-cluster outage a
    // primary served two transfers, and both receivers' asks for the ops above (the
    // one frame that says "installed") never arrived. Each pin held one
    // of the shard's two transfer places for the full idle bound, 1,000 ticks, and
    // the group's last two replicas were refused until the commit-stuck check fired.
    use super::constants::{TRANSFER_PIN_IDLE_TICKS_MAX, TRANSFER_PIN_SHIPPED_IDLE_TICKS_MAX};
    use crate::wire::Command;
    let stores: Vec<MemoryStore> = (0..3).map(|_| MemoryStore::new()).collect();
    let mut replicas = cluster(&stores);
    let tick = write(&mut replicas, &[0, 1, 2], 1..=20, 0);
    exchange(&mut replicas, &[0, 1, 2], 60, tick);
    let mut now = (tick + 60) * 10_000;
    // Replica 2 asks replica 0 for its checkpoint; the state fits one chunk, which
    // leaves at once. Replica 2 is never heard from again.
    let mut ask = replicas[2].header(Command::RequestCheckpoint);
    ask.op = 0;
    ask.commit = 0;
    let served = &mut replicas[0];
    served.drain_outbox().for_each(drop);
    served.on_frame(ProcessId(2), &crate::wire::seal_header(ask, &[]), now);
    let chunks = served
        .drain_outbox()
        .filter(|out| out.to == ProcessId(2) && crate::wire::peek_command(&out.frame) == Command::CheckpointChunk as u8)
        .count();
    assert_eq!(chunks, 1, "the whole checkpoint in one chunk");
    assert_eq!(served.pinned_op(), Some(20), "pinned at its applied head");
    for _ in 0..TRANSFER_PIN_SHIPPED_IDLE_TICKS_MAX {
        now += 10_000;
        served.tick(now);
    }
    assert_eq!(
        served.pinned_op(),
        Some(20),
        "a re-ask for a lost last chunk has time to arrive"
    );
    now += 10_000;
    served.tick(now);
    assert_eq!(
        served.pinned_op(),
        None,
        "released after {} ticks, not {TRANSFER_PIN_IDLE_TICKS_MAX}",
        TRANSFER_PIN_SHIPPED_IDLE_TICKS_MAX + 1
    );
}

#[test]
fn a_start_view_below_an_op_the_replica_applied_is_left_not_adopted() {
    // `--seed 300000003 --replicas 5 --plane contended --faults split --buggify`: a
    // replica gathering an older view's logs installed, by state transfer, a checkpoint
    // a later view had committed, and then went on with the older view: its merge (and
    // a StartView of that view would be the same) ended below ops it had applied, and
    // the truncation's assertion stopped the run. A view's log holds every op committed
    // before it, so one ending below an applied op was replaced before it could start.
    use super::tests::three_counters;
    use crate::wire::Command;
    crate::coverage::reset();
    let mut replicas = three_counters();
    let tick = write(&mut replicas, &[0, 1, 2], 1..=6, 0);
    exchange(&mut replicas, &[0, 1, 2], 60, tick);
    let applied = replicas[2].commit_min();
    let head = replicas[2].journal.head();
    assert!(applied >= 4, "the backup applied ops: {applied}");
    // A StartView of view 1 from its primary (replica 1) whose log ends below them.
    let start_view = |op: u64| {
        let mut header = replicas[1].header(Command::StartView);
        header.view = 1;
        header.log_view = 1;
        header.op = op;
        header.commit = op;
        let mut body = Vec::new();
        for entry in replicas[2].journal.range(1, op) {
            body.extend_from_slice(&entry.header().to_bytes());
        }
        crate::wire::seal_header(header, &body)
    };
    let (stale, current) = (start_view(applied - 1), start_view(head));
    let backup = &mut replicas[2];
    backup.on_frame(ProcessId(1), &stale, 1_000_000_000);
    assert_eq!(
        (backup.status(), backup.view()),
        (Status::Normal, 0),
        "the stale view is left"
    );
    assert_eq!(backup.commit_min(), applied, "nothing applied is undone");
    assert_eq!(backup.journal.head(), head, "nothing is cut from the log");
    let left = hits_of(crate::coverage::Mark::ViewChangeStaleBelowApplied);
    assert_eq!(left, 1, "the stale view is marked");
    // The same view ending at the backup's head is adopted: the guard is for logs below
    // an applied op only.
    backup.on_frame(ProcessId(1), &current, 1_000_100_000);
    assert_eq!(
        (backup.status(), backup.view()),
        (Status::Normal, 1),
        "a view at its head is adopted"
    );
    assert_eq!(backup.commit_min(), applied);
}
