//! Repair rounds ask only for what the asker lacks, and a peer serves only that.

use super::repair::{REPAIR_HELD_BITMAP_BYTES, RepairAsk};
use super::tests::{counter, prepare_frame, primary_with_ops, repair_ranges};
use super::*;
use crate::vsr::journal::Entry;
use crate::vsr::replica::Outgoing;
use crate::wire::{Command, Header};

/// The ops of the RepairPrepare answers among `sent`, in order.
fn served_ops(sent: &[Outgoing]) -> Vec<u64> {
    sent.iter()
        .filter_map(|out| crate::wire::open(&out.frame).ok())
        .filter(|(header, _)| header.command == Command::RepairPrepare)
        .filter_map(|(_, body)| crate::wire::open(body).ok().map(|(inner, _)| inner.op))
        .collect()
}

/// Hand `backup` op `op`'s prepare as a restart would: its body, not yet proven.
fn hold_unproven(backup: &mut Replica<tests::Counter, MemoryStore>, frame: &[u8]) {
    let (header, _) = crate::wire::open(frame).expect("a sealed prepare");
    backup
        .journal
        .put(Entry::new(header, Some(std::rc::Rc::from(frame)), false));
}

#[test]
fn a_restarted_replica_asks_only_for_the_ops_it_lacks_and_proves_the_rest_from_the_chain() {
    // Found by `--seed 90000049 --plane metadata --faults swarm --storage-faults
    // budgeted`: a replica restarted with ops 961..=1265 on disk, unproven, and 1266..
    // missing. Each round asked for 128 ops, most of them ones it held; on a link that
    // carries nine packets the answers it had pushed out the ones it lacked, and it
    // applied 511 ops in 1,851 ticks.
    let mut primary = primary_with_ops(8);
    let mut backup = counter(1);
    // Op 8 arrives from the primary (proven); ops 2, 3 and 5 are on disk, unproven.
    backup.on_frame(crate::seam::ProcessId(0), &prepare_frame(&primary, 8), 0);
    for op in [2, 3, 5] {
        hold_unproven(&mut backup, &prepare_frame(&primary, op));
    }
    backup.drain_outbox().for_each(drop);
    backup.repair_retry.stop();
    backup.commit_max = 8;
    let held = (1 << (2 - 1)) | (1 << (3 - 1)) | (1 << (5 - 1));
    assert_eq!(
        backup.repair_ask(),
        Some(RepairAsk {
            first: 1,
            last: 7,
            held
        }),
        "ops 1..=7 under the proven op 8, less the three held"
    );
    backup.repair();
    let request: Vec<Outgoing> = backup.drain_outbox().collect();
    assert_eq!(request.len(), 1);
    primary.on_frame(crate::seam::ProcessId(1), &request[0].frame, 0);
    let answers: Vec<Outgoing> = primary.drain_outbox().collect();
    assert_eq!(
        served_ops(&answers),
        vec![1, 4, 6, 7],
        "the primary serves what the backup lacks"
    );
    // The answers land top down in any order; the held ops are proven by the chain.
    for answer in answers.iter().rev() {
        backup.on_frame(crate::seam::ProcessId(0), &answer.frame, 0);
    }
    assert!(
        (1..=8).all(|op| backup.journal.ready(op)),
        "every op is proven and held: {:?}",
        (1..=8).filter(|&op| !backup.journal.ready(op)).collect::<Vec<_>>()
    );
}

#[test]
fn the_window_counts_the_ops_asked_for_not_the_ones_held_between_them() {
    let primary = primary_with_ops(10);
    let mut backup = counter(1);
    backup.on_frame(crate::seam::ProcessId(0), &prepare_frame(&primary, 10), 0);
    for op in [3, 5, 6, 8] {
        hold_unproven(&mut backup, &prepare_frame(&primary, op));
    }
    backup.commit_max = 10;
    backup.repair_window = 3;
    // Asked: 9, 7, 4 (the window's three); held between them: 8, 6, 5. Op 3 (held) and
    // below wait for a later round.
    let ask = backup.repair_ask().expect("ops to repair");
    assert_eq!((ask.first, ask.last), (4, 9));
    assert_eq!(ask.held, (1 << (5 - 4)) | (1 << (6 - 4)) | (1 << (8 - 4)));
}

#[test]
fn a_held_op_whose_op_above_is_trusted_is_asked_for_again() {
    // A buffered answer is drained only when the op above it is filled by a repair; if
    // the op above is trusted some other way, leaving the buffered op out of every
    // round would wait for a drain that never comes.
    let primary = primary_with_ops(4);
    let mut backup = counter(1);
    backup.on_frame(crate::seam::ProcessId(0), &prepare_frame(&primary, 4), 0);
    let (header, _) = crate::wire::open(&prepare_frame(&primary, 3)).expect("a sealed prepare");
    backup
        .repair_buffer
        .insert(3, (header, std::rc::Rc::from(prepare_frame(&primary, 3))));
    backup.commit_max = 4;
    let ask = backup.repair_ask().expect("ops to repair");
    assert_eq!((ask.first, ask.last, ask.held), (1, 3, 0), "op 3 is the top: asked for");
}

#[test]
fn a_repair_request_with_a_malformed_held_bitmap_is_refused() {
    let mut primary = primary_with_ops(4);
    let rejected = primary.stats.frames_rejected;
    let mut ask = Header::new(Command::RequestPrepares);
    ask.cluster = 7;
    ask.replica = 1;
    ask.op = 1;
    ask.commit = 4;
    for body in [vec![0xFF; 5], vec![0; REPAIR_HELD_BITMAP_BYTES + 1]] {
        primary.on_frame(crate::seam::ProcessId(1), &crate::wire::seal_header(ask, &body), 0);
        assert!(served_ops(&primary.drain_outbox().collect::<Vec<_>>()).is_empty());
    }
    assert_eq!(primary.stats.frames_rejected, rejected + 2);
    // A well-formed bitmap leaves out exactly the ops it names.
    let held: u128 = 0b1010;
    primary.on_frame(
        crate::seam::ProcessId(1),
        &crate::wire::seal_header(ask, &held.to_le_bytes()),
        0,
    );
    assert_eq!(served_ops(&primary.drain_outbox().collect::<Vec<_>>()), vec![1, 3]);
}

/// A backup holding op 8 of a primary's eight, its first repair round (ops 6 and 7)
/// sent, and the primary's answers to it.
fn first_repair_round() -> (Replica<tests::Counter, MemoryStore>, Vec<Outgoing>) {
    let (mut primary, mut backup) = super::tests::backup_missing_ops_under_8(2);
    backup.repair();
    assert_eq!(
        backup.repair_retry.after,
        constants::REPAIR_RETRY_TICKS,
        "nothing measured yet: the longest wait"
    );
    let request: Vec<Outgoing> = backup.drain_outbox().collect();
    primary.on_frame(crate::seam::ProcessId(1), &request[0].frame, 0);
    let answers: Vec<Outgoing> = primary.drain_outbox().collect();
    assert_eq!(served_ops(&answers), vec![6, 7]);
    (backup, answers)
}

#[test]
fn a_repair_round_answered_fast_shortens_the_wait_for_the_next_and_a_timeout_doubles_it() {
    // Found by `--seed 87000422 --plane metadata --faults swarm` (10% loss, 10-tick
    // round trips): every lost request or answer cost a 100-tick wait, and a replica
    // took 1,473 ticks to apply 105 ops.
    let (mut backup, answers) = first_repair_round();
    for _ in 0..10 {
        backup.tick(0);
    }
    for answer in &answers {
        backup.on_frame(crate::seam::ProcessId(0), &answer.frame, 0);
    }
    assert!(backup.journal.ready(6) && backup.journal.ready(7));
    // A 10-tick round trip measured: the next round waits three of them (the round trip
    // plus four times half of it, on a first sample).
    let second_round: Vec<Outgoing> = backup.drain_outbox().collect();
    assert_eq!(super::tests::repair_ranges(&second_round), vec![(2, 5)]);
    assert_eq!(backup.repair_retry.after, 30);
    // That round goes unanswered: it is retried after 30 ticks, not 100, and the retry
    // waits twice as long.
    for _ in 0..29 {
        backup.tick(0);
    }
    assert!(super::tests::repair_ranges(&backup.drain_outbox().collect::<Vec<_>>()).is_empty());
    backup.tick(0);
    let retried: Vec<Outgoing> = backup.drain_outbox().collect();
    assert_eq!(super::tests::repair_ranges(&retried).len(), 1, "retried after 30 ticks");
    assert_eq!(backup.repair_retry.after, 60);
}

#[test]
fn an_answer_to_another_request_fills_its_op_but_measures_no_round_trip() {
    let (mut backup, answers) = first_repair_round();
    for _ in 0..10 {
        backup.tick(0);
    }
    // The top's answer, as if to an older request of the same range.
    let (mut outer, body) = crate::wire::open(&answers[1].frame).expect("sealed");
    outer.nonce ^= 1;
    backup.on_frame(crate::seam::ProcessId(0), &crate::wire::seal_header(outer, body), 0);
    assert!(backup.journal.ready(7), "the answer is a good prepare all the same");
    let next_round: Vec<Outgoing> = backup.drain_outbox().collect();
    assert_eq!(super::tests::repair_ranges(&next_round).len(), 1);
    assert_eq!(
        backup.repair_retry.after,
        constants::REPAIR_RETRY_TICKS,
        "no round trip was measured"
    );
}

/// Op `op`'s prepare as a backup (replica 2) would serve it: not vouched for by the
/// primary, so only the chain above can prove it.
fn served_by_a_backup(primary: &Replica<tests::Counter, MemoryStore>, op: u64) -> Vec<u8> {
    let mut outer = Header::new(Command::RepairPrepare);
    outer.cluster = 7;
    outer.replica = 2;
    outer.view = primary.view;
    crate::wire::seal_header(outer, &prepare_frame(primary, op))
}

#[test]
fn a_buffered_answer_under_a_held_op_is_proven_once_the_chain_reaches_the_held_op() {
    // Ops the asker holds are left out of a round, so the answers under one of them
    // meet no answer above them: the chain walk proves the held op, and the buffered
    // answer under it must be drained from there, not asked for again.
    let primary = primary_with_ops(8);
    let mut backup = counter(1);
    backup.on_frame(crate::seam::ProcessId(0), &prepare_frame(&primary, 8), 0);
    hold_unproven(&mut backup, &prepare_frame(&primary, 6));
    backup.commit_max = 8;
    // Op 5 arrives first: nothing above it is trusted yet, so it waits in the buffer.
    backup.on_frame(crate::seam::ProcessId(2), &served_by_a_backup(&primary, 5), 0);
    assert!(backup.repair_buffer.contains_key(&5) && !backup.journal.ready(5));
    // Op 7 arrives, proven by op 8; the walk proves the held op 6, and op 6 op 5.
    backup.on_frame(crate::seam::ProcessId(2), &served_by_a_backup(&primary, 7), 0);
    assert!(
        (5..=8).all(|op| backup.journal.ready(op)),
        "ops 5..=8 proven: {:?}",
        (5..=8).map(|op| backup.journal.ready(op)).collect::<Vec<_>>()
    );
    assert!(backup.repair_buffer.is_empty());
}

#[test]
fn a_backup_that_missed_uncommitted_prepares_fetches_them_when_the_commit_point_stalls() {
    // Found by `--seed 94000062 --plane uniform --faults heavy --journal-slots 80`: the
    // primary prepared op 1 while a one-way partition cut it off from replica 2 and
    // replica 1 (the next in its prepare chain) was down. Only the primary's resends
    // could bring the op, and their backoff, grown while the link was cut, stayed at
    // up to 800 ticks after it healed: replica 2 waited 2,700 ticks for one op while
    // the group could commit nothing without it.
    let mut primary = primary_with_ops(4);
    let mut backup = counter(1);
    // Ops 1 and 2 reach the backup; its acknowledgements commit them. Ops 3 and 4 are
    // lost on the way.
    for op in [1, 2] {
        backup.on_frame(crate::seam::ProcessId(0), &prepare_frame(&primary, op), 0);
    }
    for ok in backup.drain_outbox() {
        primary.on_frame(crate::seam::ProcessId(1), &ok.frame, 0);
    }
    primary.drain_outbox().for_each(drop);
    assert_eq!(
        primary.commit_max, 2,
        "ops 1 and 2 are committed by the backup's acknowledgements"
    );

    // A broadcast whose commit point moved: the ops above may still be in flight, so
    // the backup asks for nothing.
    primary.broadcast_commit();
    let broadcast: Vec<Outgoing> = primary.drain_outbox().filter(|out| out.to.0 == 1).collect();
    let (heartbeat, _) = crate::wire::open(&broadcast[0].frame).expect("a sealed heartbeat");
    assert_eq!(
        (heartbeat.command, heartbeat.op),
        (Command::Commit, 4),
        "the broadcast names the head"
    );
    backup.on_frame(crate::seam::ProcessId(0), &broadcast[0].frame, 0);
    assert!(
        repair_ranges(&backup.drain_outbox().collect::<Vec<_>>()).is_empty(),
        "the commit point moved since the last broadcast: nothing is asked for"
    );

    // The next broadcast finds it where it was: the backup fetches ops 3 and 4 from the
    // primary (no other replica can vouch for ops whose headers it never saw).
    primary.broadcast_commit();
    let broadcast: Vec<Outgoing> = primary.drain_outbox().filter(|out| out.to.0 == 1).collect();
    backup.on_frame(crate::seam::ProcessId(0), &broadcast[0].frame, 0);
    let request: Vec<Outgoing> = backup.drain_outbox().collect();
    assert!(request.iter().all(|out| out.to.0 == 0), "asked of the primary");
    assert_eq!(repair_ranges(&request), vec![(3, 4)], "one round: ops 3..=4");

    // The answers are journaled and acknowledged, and the primary commits them.
    for ask in request.iter().filter(|out| out.to.0 == 0) {
        primary.on_frame(crate::seam::ProcessId(1), &ask.frame, 0);
    }
    let answers: Vec<Outgoing> = primary.drain_outbox().collect();
    assert_eq!(served_ops(&answers), vec![3, 4]);
    for answer in &answers {
        backup.on_frame(crate::seam::ProcessId(0), &answer.frame, 0);
    }
    assert!(backup.journal.ready(3) && backup.journal.ready(4));
    for ok in backup.drain_outbox() {
        primary.on_frame(crate::seam::ProcessId(1), &ok.frame, 0);
    }
    assert_eq!(
        primary.commit_max, 4,
        "the backup's acknowledgements commit ops 3 and 4"
    );
}

#[test]
fn a_stalled_head_heard_in_an_earlier_view_is_not_fetched() {
    // The head a broadcast named belongs to its view: after a view change the log above
    // the new primary's head may have been cut, and asking for it would ask for ops
    // that no longer exist.
    let mut backup = counter(1);
    assert_eq!(backup.repair_range(), None, "a fresh backup lacks nothing it knows of");
    backup.stalled_head_heard = (backup.view, 8);
    assert_eq!(backup.repair_range(), Some((1, 8)), "the view it was heard in: fetched");
    backup.stalled_head_heard = (backup.view + 1, 8);
    assert_eq!(backup.repair_range(), None, "another view: not fetched");
}
