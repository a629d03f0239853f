//! The final log settling the sends whose outcome was unknown.

use super::history::{Histories, Input, ObjectKey, Output};
use crate::linearizability::{PartitionInput, PartitionOutput};

const GROUP: u64 = 0x2800;

fn send(histories: &mut Histories, ids: &[u128], tick: u64) -> usize {
    histories.invoke(
        ObjectKey::Partition(GROUP),
        Input::Partition(PartitionInput::Send { ids: ids.to_vec() }),
        0,
        tick,
    )
}

/// Record `input` from client 1, invoked at `tick` and answered `output` five ticks later.
fn answered(histories: &mut Histories, input: PartitionInput, tick: u64, output: PartitionOutput) {
    let index = histories.invoke(ObjectKey::Partition(GROUP), Input::Partition(input), 1, tick);
    histories.complete(ObjectKey::Partition(GROUP), index, tick + 5, Output::Partition(output));
}

fn answered_send(histories: &mut Histories, ids: &[u128], base_offset: u64, tick: u64) {
    let last_offset = base_offset + ids.len() as u64 - 1;
    let send = PartitionInput::Send { ids: ids.to_vec() };
    answered(
        histories,
        send,
        tick,
        PartitionOutput::Appended {
            base_offset,
            last_offset,
        },
    );
}

fn answered_purge(histories: &mut Histories, tick: u64) {
    answered(histories, PartitionInput::Purge, tick, PartitionOutput::Ok);
}

fn answered_poll(histories: &mut Histories, offset: u64, tick: u64, next_offset: u64, messages: &[(u64, u128)]) {
    let poll = PartitionInput::Poll { offset, count: 1 };
    let messages = messages.to_vec();
    answered(histories, poll, tick, PartitionOutput::Polled { next_offset, messages });
}

#[test]
fn an_ambiguous_send_found_in_the_final_log_took_effect_at_its_offsets() {
    let mut histories = Histories::default();
    answered_send(&mut histories, &[1], 0, 10);
    send(&mut histories, &[2, 3], 20);
    let settled = histories
        .settle_sends(GROUP, &[(0, 1), (1, 2), (2, 3)], 3, 100)
        .expect("consistent");
    assert_eq!((settled.took_effect, settled.never_took_effect), (1, 0));
    assert_eq!(histories.operations(), 2);
    let report = histories.check(100, 1, settled);
    assert_eq!(report.ambiguous, 0, "{report}");
    assert!(report.violation.is_none(), "{report:?}");
}

#[test]
fn an_ambiguous_send_missing_from_the_final_log_with_no_purge_after_it_never_took_effect() {
    let mut histories = Histories::default();
    answered_send(&mut histories, &[1], 0, 10);
    send(&mut histories, &[2], 20);
    let settled = histories.settle_sends(GROUP, &[(0, 1)], 1, 100).expect("consistent");
    assert_eq!((settled.took_effect, settled.never_took_effect), (0, 1));
    assert_eq!(histories.operations(), 1, "the send that never took effect is voided");
}

#[test]
fn after_a_purge_only_the_offsets_handed_out_tell_whether_an_unseen_send_took_effect() {
    // An answered send, an unanswered one, then a purge that could have dropped the
    // unanswered one's message.
    let history = || {
        let mut histories = Histories::default();
        answered_send(&mut histories, &[1], 0, 10);
        send(&mut histories, &[2], 20);
        answered_purge(&mut histories, 30);
        histories
    };
    // Two offsets handed out: the unknown send took one of them.
    let mut histories = history();
    let settled = histories.settle_sends(GROUP, &[], 2, 100).expect("consistent");
    assert_eq!((settled.took_effect, settled.never_took_effect), (0, 0));
    assert_eq!(histories.operations(), 3, "still ambiguous");
    // One offset handed out, the answered send's: the unknown one never took effect.
    let settled = history().settle_sends(GROUP, &[], 1, 100).expect("consistent");
    assert_eq!((settled.took_effect, settled.never_took_effect), (0, 1));
}

#[test]
fn a_final_log_that_contradicts_the_answers_is_an_error() {
    let mut histories = Histories::default();
    answered_send(&mut histories, &[1], 0, 10);
    let twice = histories
        .settle_sends(GROUP, &[(0, 1), (1, 1)], 2, 100)
        .expect_err("an id twice");
    assert!(twice.contains("twice"), "{twice}");
    let lost = histories
        .settle_sends(GROUP, &[], 0, 100)
        .expect_err("an acknowledged offset lost");
    assert!(lost.contains("account for 1 offsets"), "{lost}");

    let mut histories = Histories::default();
    send(&mut histories, &[2, 3], 20);
    let cut = histories
        .settle_sends(GROUP, &[(0, 2)], 1, 100)
        .expect_err("half a batch");
    assert!(cut.contains("only partly"), "{cut}");

    // A poll may return any part of a batch, and a purge after it drops the rest.
    let mut histories = Histories::default();
    send(&mut histories, &[2, 3], 20);
    answered_poll(&mut histories, 1, 30, 2, &[(1, 3)]);
    answered_purge(&mut histories, 40);
    let settled = histories.settle_sends(GROUP, &[], 2, 100).expect("consistent");
    assert_eq!(
        (settled.took_effect, settled.never_took_effect),
        (1, 0),
        "seen at offset 1 as its second message"
    );

    // A message a poll saw, missing from the final log with no purge after: lost.
    let mut histories = Histories::default();
    answered_send(&mut histories, &[1], 0, 10);
    answered_poll(&mut histories, 0, 30, 1, &[(0, 1)]);
    let lost = histories
        .settle_sends(GROUP, &[], 1, 100)
        .expect_err("a polled message lost");
    assert!(lost.contains("no purge came after"), "{lost}");
}
