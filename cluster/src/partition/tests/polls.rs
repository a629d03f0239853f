//! Tests of polls, purges and segment deletion: what a poll returns (bounded by count
//! and bytes, from retained messages, nothing below a purge), the poll codecs, and the
//! owner fence and queries through the machine.

use super::*;

#[test]
fn a_poll_encoded_straight_from_the_log_is_the_poll_reply_encoded() {
    let state = with_sealed_segments(2);
    let next = state.next_offset();
    let mut compared = 0;
    for offset in [
        0,
        1,
        SEGMENT_MESSAGES_MAX as u64 - 1,
        SEGMENT_MESSAGES_MAX as u64,
        next - 1,
        next,
        next + 5,
    ] {
        for count in [0, 1, 7, POLL_MESSAGES_MAX as u32, u32::MAX] {
            let request = PollRequest { offset, count };
            assert_eq!(
                state.poll_encoded(&request),
                state.poll(&request).encode(),
                "offset {offset} count {count}"
            );
            compared += usize::from(!state.poll(&request).messages.is_empty());
        }
    }
    assert!(compared > 0, "some polls returned messages");
}

#[test]
fn purge_drops_every_message_but_keeps_the_next_offset_consumer_offsets_and_owners() {
    let mut state = with_sealed_segments(2);
    let next_offset = state.next_offset();
    let owner = PartitionOp::SetGroupOwner {
        group_id: 1,
        member_id: 2,
        generation: 1,
    };
    state.apply(&owner, &at(10, 10));
    let offsets = [(Consumer::Single { consumer_id: 5 }, 7), (group(1, 2, 1), next_offset)];
    for (consumer, offset) in offsets {
        let store = PartitionOp::StoreConsumerOffset { consumer, offset };
        assert_eq!(state.apply(&store, &at(11, 11)), PartitionReply::Ok);
    }
    let consumer_offsets: Vec<_> = state.consumer_offsets().collect();
    let group_owners: Vec<_> = state.group_owners().collect();
    assert_eq!(
        consumer_offsets,
        vec![(ConsumerKey::Single(5), 7), (ConsumerKey::Group(1), next_offset)]
    );

    assert_eq!(state.apply(&PartitionOp::Purge, &at(12, 12)), PartitionReply::Ok);
    assert_eq!(state.next_offset(), next_offset, "offsets are never reused");
    assert_eq!(state.log().oldest_offset(), next_offset, "nothing retained");
    assert_eq!(state.log().segments().len(), 1, "one empty active segment remains");
    assert!(state.log().segments()[0].is_empty());
    assert_eq!(state.consumer_offsets().collect::<Vec<_>>(), consumer_offsets);
    assert_eq!(state.group_owners().collect::<Vec<_>>(), group_owners);

    // Purging an empty log is Ok and changes nothing.
    let purged = state.digest();
    assert_eq!(state.apply(&PartitionOp::Purge, &at(13, 13)), PartitionReply::Ok);
    assert_eq!(state.digest(), purged);

    // The next append continues where the log left off.
    assert_eq!(
        state.apply(&batch(2, 1), &at(14, 14)),
        PartitionReply::Appended {
            base_offset: next_offset,
            last_offset: next_offset + 1
        }
    );
}

#[test]
fn delete_segments_drops_the_oldest_sealed_ones_never_the_active_one_and_says_how_many() {
    let mut state = with_sealed_segments(3);
    let next_offset = state.next_offset();
    let per = SEGMENT_MESSAGES_MAX as u64;
    let delete = |count| PartitionOp::DeleteSegments { count };

    let before = state.digest();
    assert_eq!(
        state.apply(&delete(0), &at(10, 10)),
        PartitionReply::SegmentsDeleted { count: 0 }
    );
    assert_eq!(state.digest(), before, "count 0 is a no-op");

    assert_eq!(
        state.apply(&delete(2), &at(11, 11)),
        PartitionReply::SegmentsDeleted { count: 2 }
    );
    assert_eq!(state.log().oldest_offset(), 2 * per);
    assert_eq!(
        poll(&state, 0, 1),
        vec![2 * per],
        "a poll below the log starts at the oldest"
    );

    assert_eq!(
        state.apply(&delete(u32::MAX), &at(12, 12)),
        PartitionReply::SegmentsDeleted { count: 1 },
        "only one sealed segment was left"
    );
    assert_eq!(state.log().segments().len(), 1);
    assert_eq!(state.log().oldest_offset(), 3 * per);
    assert_eq!(
        state.apply(&delete(5), &at(13, 13)),
        PartitionReply::SegmentsDeleted { count: 0 },
        "the active segment is never deleted"
    );
    assert_eq!(poll(&state, 0, 10), vec![3 * per]);
    assert_eq!(state.next_offset(), next_offset);

    let mut empty = PartitionState::new(0, OwnerFence::Enforced);
    assert_eq!(
        empty.apply(&delete(1), &at(1, 1)),
        PartitionReply::SegmentsDeleted { count: 0 }
    );
}

#[test]
fn a_poll_returns_retained_messages_from_the_offset_in_order() {
    let mut state = PartitionState::new(0, OwnerFence::Enforced);
    state.apply(&batch(6, 3), &at(100, 1));
    state.apply(&batch(4, 3), &at(200, 2));

    let reply = state.poll(&PollRequest { offset: 3, count: 4 });
    assert_eq!(reply.next_offset, 10);
    let offsets: Vec<u64> = reply.messages.iter().map(|m| m.offset).collect();
    assert_eq!(offsets, vec![3, 4, 5, 6]);
    let stored = state.log().read(3, 4);
    for (polled, stored) in reply.messages.iter().zip(stored) {
        assert_eq!(*polled, PolledMessage::from(stored));
    }
    assert_eq!(reply.messages[2].timestamp_micros, 100);
    assert_eq!(reply.messages[3].timestamp_micros, 200);
    assert_eq!(reply.messages[3].id, 0, "the first message of the second batch");

    assert_eq!(poll(&state, 8, 100), vec![8, 9], "fewer left than asked");
    assert_eq!(poll(&state, 10, 5), Vec::<u64>::new(), "at the end");
    assert_eq!(poll(&state, u64::MAX, 5), Vec::<u64>::new(), "past the end");
    assert_eq!(poll(&state, 0, 0), Vec::<u64>::new(), "count 0 answers no messages");
    assert_eq!(state.poll(&PollRequest { offset: 0, count: 0 }).next_offset, 10);
}

#[test]
fn a_poll_is_bounded_by_count_and_by_payload_bytes() {
    let mut state = PartitionState::new(0, OwnerFence::Enforced);
    state.apply(&batch(POLL_MESSAGES_MAX * 2 + 5, 0), &at(1, 1));
    assert_eq!(poll(&state, 0, u32::MAX).len(), POLL_MESSAGES_MAX);
    assert_eq!(poll(&state, 7, 3), vec![7, 8, 9]);

    // Full batches of the largest messages: one reply holds exactly one batch's worth.
    let mut big = PartitionState::new(0, OwnerFence::Enforced);
    let per_batch = BATCH_BYTES_MAX / PAYLOAD_BYTES_MAX;
    big.apply(&batch(per_batch, PAYLOAD_BYTES_MAX), &at(1, 1));
    big.apply(&batch(per_batch, PAYLOAD_BYTES_MAX), &at(2, 2));
    let reply = big.poll(&PollRequest {
        offset: 0,
        count: u32::MAX,
    });
    assert_eq!(reply.messages.len(), POLL_REPLY_PAYLOAD_BYTES_MAX / PAYLOAD_BYTES_MAX);
    let payload_bytes: usize = reply.messages.iter().map(|m| m.payload.len()).sum();
    assert!(payload_bytes <= POLL_REPLY_PAYLOAD_BYTES_MAX);
    assert!(reply.encode().len() + crate::wire::HEADER_BYTES <= crate::wire::FRAME_BYTES_MAX);
    let rest = big.poll(&PollRequest {
        offset: reply.messages.len() as u64,
        count: u32::MAX,
    });
    assert_eq!(rest.messages.len(), 2 * per_batch - reply.messages.len());
}

#[test]
fn after_a_purge_a_poll_returns_nothing_below_the_next_offset() {
    let mut state = PartitionState::new(0, OwnerFence::Enforced);
    state.apply(&batch(5, 1), &at(1, 1));
    state.apply(&PartitionOp::Purge, &at(2, 2));
    let reply = state.poll(&PollRequest { offset: 0, count: 10 });
    assert!(reply.messages.is_empty());
    assert_eq!(reply.next_offset, 5);
    state.apply(&batch(1, 1), &at(3, 3));
    assert_eq!(poll(&state, 0, 10), vec![5], "only what was appended after the purge");
}

#[test]
fn poll_codecs_round_trip_and_refuse_trailing_bytes() {
    let request = PollRequest {
        offset: u64::MAX,
        count: 7,
    };
    let bytes = request.encode();
    assert_eq!(bytes[0], POLL_MESSAGES_CODE);
    assert_eq!(POLL_MESSAGES_CODE, 70);
    assert_eq!(PollRequest::decode(&bytes), Ok(request));
    assert_cuts_and_padding_refused(&bytes, Some(0), PollRequest::decode);
    // A poll is not a committed op, and a committed op is not a poll.
    assert_eq!(
        PartitionOp::decode(&bytes),
        Err(DecodeError::UnknownCode {
            field: "operation code",
            code: POLL_MESSAGES_CODE
        })
    );
    assert!(PollRequest::decode(&PartitionOp::Purge.encode()).is_err());

    let mut state = PartitionState::new(0, OwnerFence::Enforced);
    state.apply(&batch(3, 2), &at(9, 1));
    let replies = [
        state.poll(&PollRequest { offset: 0, count: 3 }),
        state.poll(&PollRequest { offset: 3, count: 3 }),
    ];
    for reply in replies {
        let bytes = reply.encode();
        assert_eq!(PollReply::decode(&bytes), Ok(reply.clone()));
        assert_cuts_and_padding_refused(&bytes, Some(0), PollReply::decode);
    }
    let message = PolledMessage {
        offset: 1,
        timestamp_micros: 2,
        id: u128::MAX,
        payload: b"abc".to_vec(),
    };
    assert_eq!(PolledMessage::decode(&message.encode()), Ok(message.clone()));
    let mut padded = message.encode();
    padded.push(0);
    assert_eq!(
        PolledMessage::decode(&padded),
        Err(DecodeError::TrailingBytes { count: 1 })
    );
}

#[test]
fn a_poll_reply_that_breaks_the_log_shape_does_not_decode() {
    let message = |offset| PolledMessage {
        offset,
        timestamp_micros: 0,
        id: 0,
        payload: vec![],
    };
    // A gap between offsets; a message at or past the next offset.
    for (next_offset, offsets) in [(10, [1, 3]), (2, [1, 2])] {
        let reply = PollReply {
            next_offset,
            messages: offsets.into_iter().map(message).collect(),
        };
        assert!(
            matches!(
                PollReply::decode(&reply.encode()),
                Err(DecodeError::InvalidState { .. })
            ),
            "{offsets:?} below {next_offset}"
        );
    }
    let too_many = PollReply {
        next_offset: u64::MAX,
        messages: (0..=POLL_MESSAGES_MAX as u64).map(message).collect(),
    };
    assert!(matches!(
        PollReply::decode(&too_many.encode()),
        Err(DecodeError::TooLong {
            field: "polled message count",
            ..
        })
    ));
    let too_big = PollReply {
        next_offset: u64::MAX,
        messages: (0..=(POLL_REPLY_PAYLOAD_BYTES_MAX / PAYLOAD_BYTES_MAX) as u64)
            .map(|offset| PolledMessage {
                payload: vec![0; PAYLOAD_BYTES_MAX],
                ..message(offset)
            })
            .collect(),
    };
    assert!(matches!(
        PollReply::decode(&too_big.encode()),
        Err(DecodeError::TooLong {
            field: "poll reply payload bytes",
            ..
        })
    ));
    assert_garbage_decodes_canonically(80, PollReply::decode, PollReply::encode);
    assert_garbage_decodes_canonically(80, PollRequest::decode, PollRequest::encode);
}

#[test]
fn the_owner_fence_refuses_a_stale_owner_when_enforced_and_allows_it_when_disabled_for_test() {
    let mut enforced = PartitionState::new(0, OwnerFence::Enforced);
    let mut disabled = PartitionState::new(0, OwnerFence::DisabledForTest);
    assert_eq!(enforced.fence(), OwnerFence::Enforced);
    assert_eq!(disabled.fence(), OwnerFence::DisabledForTest);
    let setup = [
        batch(10, 1),
        PartitionOp::SetGroupOwner {
            group_id: 7,
            member_id: 1,
            generation: 1,
        },
        PartitionOp::StoreConsumerOffset {
            consumer: group(7, 1, 1),
            offset: 4,
        },
        PartitionOp::SetGroupOwner {
            group_id: 7,
            member_id: 2,
            generation: 2,
        },
    ];
    for (i, op) in setup.iter().enumerate() {
        let context = at(1, i as u64 + 1);
        assert_eq!(enforced.apply(op, &context), disabled.apply(op, &context));
    }
    assert_eq!(enforced.digest(), disabled.digest(), "the switch is not in the digest");

    // Member 1 lost ownership at generation 2 but still writes at generation 1.
    let stale = PartitionOp::StoreConsumerOffset {
        consumer: group(7, 1, 1),
        offset: 9,
    };
    assert_eq!(
        enforced.apply(&stale, &at(2, 5)),
        PartitionReply::StaleOwner { current_generation: 2 }
    );
    assert_eq!(enforced.consumer_offset(ConsumerKey::Group(7)), Some(4));
    assert_eq!(disabled.apply(&stale, &at(2, 5)), PartitionReply::Ok);
    assert_eq!(
        disabled.consumer_offset(ConsumerKey::Group(7)),
        Some(9),
        "the stale write lands: the bug the fence prevents"
    );
    let stale_delete = PartitionOp::DeleteConsumerOffset {
        consumer: group(7, 1, 1),
    };
    assert!(matches!(
        enforced.apply(&stale_delete, &at(2, 6)),
        PartitionReply::StaleOwner { .. }
    ));
    assert_eq!(disabled.apply(&stale_delete, &at(2, 6)), PartitionReply::Ok);
    assert_eq!(disabled.consumer_offset(ConsumerKey::Group(7)), None);
}

#[test]
fn the_machine_answers_polls_as_queries_and_never_prepares_them() {
    let mut machine = PartitionMachine::new(0, OwnerFence::Enforced);
    let op = batch(3, 1);
    let context = at(5, 1);
    machine.apply(&prepare(&op, &context), &op.encode());

    let request = PollRequest { offset: 1, count: 10 };
    let body = request.encode();
    assert!(
        !PartitionMachine::validate(POLL_MESSAGES_CODE, &body),
        "a query is never prepared"
    );
    assert!(!machine.validate_request(POLL_MESSAGES_CODE, &body));
    let queries: Vec<u8> = (0..=u8::MAX).filter(|&code| machine.is_query(code)).collect();
    assert_eq!(queries, vec![POLL_MESSAGES_CODE]);

    let before = machine.digest();
    let answer = machine.query(POLL_MESSAGES_CODE, &body);
    let reply = answer.as_deref().map(PollReply::decode);
    assert_eq!(reply, Some(Ok(machine.state().poll(&request))));
    assert_eq!(poll(machine.state(), 1, 10), vec![1, 2]);
    assert_eq!(machine.digest(), before, "a query changes nothing");

    assert_eq!(machine.query(POLL_MESSAGES_CODE, &body[1..]), None, "malformed body");
    assert_eq!(machine.query(POLL_MESSAGES_CODE, &op.encode()), None, "not a poll body");
    assert_eq!(machine.query(64, &body), None, "not a query code");

    // Were a poll ever committed, applying it changes nothing and answers nothing.
    let mut header = prepare(&op, &at(6, 2));
    header.operation = POLL_MESSAGES_CODE;
    assert_eq!(machine.apply(&header, &body), Vec::<u8>::new());
    assert_eq!(machine.digest(), before);
}

#[test]
fn purge_and_delete_segments_apply_identically_through_the_machine() {
    let mut a = PartitionMachine::new(0, OwnerFence::Enforced);
    let mut b = PartitionMachine::new(0, OwnerFence::DisabledForTest);
    let ops = [
        batch(SEGMENT_MESSAGES_MAX, 1),
        batch(1, 1),
        PartitionOp::DeleteSegments { count: 3 },
        PartitionOp::Purge,
    ];
    let mut replies = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let header = prepare(op, &at(1, i as u64 + 1));
        let body = op.encode();
        assert!(PartitionMachine::validate(header.operation, &body));
        let reply = a.apply(&header, &body);
        assert_eq!(b.apply(&header, &body), reply);
        assert_eq!(a.digest(), b.digest());
        replies.push(PartitionReply::decode(&reply));
    }
    assert_eq!(replies[2], Ok(PartitionReply::SegmentsDeleted { count: 1 }));
    assert_eq!(replies[3], Ok(PartitionReply::Ok));
    assert_eq!(a.state().log().oldest_offset(), SEGMENT_MESSAGES_MAX as u64 + 1);
}
