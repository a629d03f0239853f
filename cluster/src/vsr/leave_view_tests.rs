//! Leaving a view: a quorum's votes, fast failover on a closed connection, and a view
//! that never starts twice (see `vsr::leave_view` and issue #44).

use super::constants::{LIVENESS_WINDOW_TICKS, PRIMARY_CLOSED_CONFIRM_TICKS};
use super::tests::{Counter, config, counter, exchange, exchange_cutting, three_counters};
use super::*;
use crate::seam::ProcessId;
use crate::wire::{Command, Header};

/// Every replica's (status, view), in order.
fn views(replicas: &[Replica<Counter, MemoryStore>]) -> Vec<(Status, u64)> {
    replicas
        .iter()
        .map(|replica| (replica.status(), replica.view()))
        .collect()
}

#[test]
fn a_replica_that_hears_nothing_cannot_end_a_view_the_others_hear() {
    // The disruptive replica of `--seed 7700009`: replica 2 can send but receives
    // nothing. Its liveness window runs out again and again; the view must stand.
    let mut replicas = three_counters();
    exchange_cutting(&mut replicas, &[0, 1, 2], 0..4 * LIVENESS_WINDOW_TICKS, |_, to, _| {
        to == 2
    });
    assert_eq!(
        views(&replicas),
        [(Status::Normal, 0); 3],
        "one replica's vote is not a quorum: view 0 stands"
    );
    assert!(replicas[2].leaving, "the cut-off replica wants out");
    assert!(!replicas[1].leaving, "the replica that hears its primary does not");
}

#[test]
fn a_quorum_of_votes_leaves_the_view() {
    // Replica 0 (view 0's primary) is gone: both backups vote and move on together.
    let mut replicas = three_counters();
    exchange(&mut replicas, &[1, 2], LIVENESS_WINDOW_TICKS + 100, 0);
    assert_eq!(
        views(&replicas[1..]),
        [(Status::Normal, 1); 2],
        "view 1, led by replica 1"
    );
    assert!(replicas[1].is_primary());
}

#[test]
fn a_vote_withdrawn_does_not_join_a_later_one() {
    // Replica 2 misses its primary for a window and votes, then hears it again and
    // withdraws; much later replica 1 misses it once. The stale vote must not make a
    // quorum with the new one: nobody votes at the same time, nobody leaves.
    let mut replicas = three_counters();
    let window = LIVENESS_WINDOW_TICKS;
    exchange_cutting(&mut replicas, &[0, 1, 2], 0..window + 60, |from, to, _| {
        from == 0 && to == 2
    });
    assert!(replicas[2].leaving, "replica 2 voted");
    exchange(&mut replicas, &[0, 1, 2], 200, window + 60);
    assert!(!replicas[2].leaving, "and withdrew once it heard its primary");
    let start = window + 260;
    exchange_cutting(&mut replicas, &[0, 1, 2], start..start + window + 60, |from, to, _| {
        from == 0 && to == 1
    });
    assert!(replicas[1].leaving, "replica 1 voted");
    assert_eq!(
        views(&replicas),
        [(Status::Normal, 0); 3],
        "one fresh vote is no quorum"
    );
}

#[test]
fn a_closed_connection_from_the_primary_ends_its_view_after_the_confirmation_wait() {
    let ticks = PRIMARY_CLOSED_CONFIRM_TICKS + 30;
    // Control: silence alone waits the whole liveness window.
    let mut silent = three_counters();
    exchange(&mut silent, &[1, 2], ticks, 0);
    assert_eq!(views(&silent[1..]), [(Status::Normal, 0); 2]);
    // The transport reports replica 0's connection closed on both backups.
    let mut replicas = three_counters();
    for backup in &mut replicas[1..] {
        backup.on_peer_closed(0, 0);
    }
    exchange(&mut replicas, &[1, 2], ticks, 0);
    assert_eq!(
        views(&replicas[1..]),
        [(Status::Normal, 1); 2],
        "view 1 within the wait"
    );
}

#[test]
fn a_closed_connection_from_a_primary_that_still_broadcasts_changes_nothing() {
    // A live primary whose connection dropped and came back: its next broadcast
    // restores the whole window, so the view stands.
    let mut replicas = three_counters();
    for backup in &mut replicas[1..] {
        backup.on_peer_closed(0, 0);
    }
    exchange(&mut replicas, &[0, 1, 2], 4 * PRIMARY_CLOSED_CONFIRM_TICKS, 0);
    assert_eq!(views(&replicas), [(Status::Normal, 0); 3]);
    assert_eq!(
        replicas[1].peers_closed, 0,
        "a frame from the peer withdrew the evidence"
    );
}

#[test]
fn a_restarted_primary_never_starts_its_view_again() {
    // Found by the nightly (`--seed 9991613 --plane contended --faults split
    // --buggify`): replica 1 led view 1, lost power and came back Recovering in view 1;
    // replica 0, partitioned through view 1's start, heard of view 1 and went into a
    // view change for it. Its StartViewChange(1) made the restarted primary join that
    // view change and start view 1 a second time, with another log: a poll answered in
    // one of the two view 1s could not be linearized.
    let store = MemoryStore::new();
    let initial = ReplicaConfig {
        initial_view: 1,
        ..config(1)
    };
    let primary = Replica::open(initial, Counter(0), store.clone(), 0).expect("open");
    assert!(primary.is_primary() && primary.log_view() == 1);
    drop(primary);
    let mut restarted = Replica::open(initial, Counter(0), store, 1).expect("restart");
    assert_eq!(
        (restarted.status(), restarted.view(), restarted.log_view()),
        (Status::Recovering, 1, 1)
    );
    let mut start_view_change = Header::new(Command::StartViewChange);
    start_view_change.cluster = 7;
    start_view_change.replica = 0;
    start_view_change.view = 1;
    restarted.on_frame(ProcessId(0), &crate::wire::seal_header(start_view_change, &[]), 0);
    assert_eq!(
        (restarted.status(), restarted.view()),
        (Status::Recovering, 1),
        "a replica whose log is view 1's never goes back into a view change for view 1"
    );
}

#[test]
fn a_recovering_replica_follows_a_view_change_for_a_later_view_at_once() {
    // Replicas restarted together no longer each wait out their probes: one that hears
    // a view change for a later view joins it.
    let mut recovering = counter(2);
    recovering.drain_outbox().for_each(drop);
    let store = recovering.store.clone();
    drop(recovering);
    let mut recovering = Replica::open(config(2), Counter(0), store, 1).expect("restart");
    assert_eq!(recovering.status(), Status::Recovering);
    let mut start_view_change = Header::new(Command::StartViewChange);
    start_view_change.cluster = 7;
    start_view_change.replica = 1;
    start_view_change.view = 1;
    recovering.on_frame(ProcessId(1), &crate::wire::seal_header(start_view_change, &[]), 0);
    assert_eq!((recovering.status(), recovering.view()), (Status::ViewChange, 1));
}

#[test]
fn a_leave_view_naming_no_status_is_rejected_before_anything_is_done() {
    // Hostile input: a well-formed LeaveView whose flags name no status. The primary
    // must neither answer it with a StartView nor count it as a vote.
    let mut primary = counter(0);
    primary.drain_outbox().for_each(drop);
    let mut vote = Header::new(Command::LeaveView);
    vote.cluster = 7;
    vote.replica = 1;
    vote.view = 0;
    vote.flags = 7;
    primary.on_frame(ProcessId(1), &crate::wire::seal_header(vote, &[]), 0);
    assert_eq!(primary.stats().frames_rejected, 1);
    assert_eq!(primary.drain_outbox().count(), 0, "nothing is sent for it");
    assert!(primary.leave_votes.iter().all(Option::is_none), "and it is no vote");
}

#[test]
fn a_replica_restarted_in_a_later_view_is_followed_by_the_healthy_pair() {
    // `--seed 9997270 --plane partition --faults split`: replica 2 moved to view 1 on a
    // quorum's votes, the other voter withdrew, and replica 2 restarted recovering in
    // view 1. It can never come back to view 0, so a Normal replica in view 0 that hears
    // its vote to leave view 1 must follow it into that view change, not wait for ever.
    let mut backup = counter(1);
    backup.drain_outbox().for_each(drop);
    assert_eq!((backup.status(), backup.view()), (Status::Normal, 0));
    let mut vote = Header::new(Command::LeaveView);
    vote.cluster = 7;
    vote.replica = 2;
    vote.view = 1;
    vote.flags = super::leave_view::LEAVE_VIEW_FROM_RECOVERING;
    backup.on_frame(ProcessId(2), &crate::wire::seal_header(vote, &[]), 0);
    assert_eq!(
        (backup.status(), backup.view()),
        (Status::ViewChange, 1),
        "the healthy replica follows the restarted one's view"
    );
}
