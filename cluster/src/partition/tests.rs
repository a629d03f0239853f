//! Examples of the partition plane: codecs, the log, the rules, and the VSR machine.

use super::*;
use crate::codec::assert_cuts_and_padding_refused;
use crate::vsr::StateMachine;
use crate::wire::{Command, Header};

/// A day, in microseconds: the retention period used by the examples.
const DAY_MICROS: u64 = 86_400 * 1_000_000;

fn at(timestamp_micros: u64, op_number: u64) -> ApplyContext {
    ApplyContext {
        timestamp_micros,
        op_number,
    }
}

fn batch(count: usize, payload_bytes: usize) -> PartitionOp {
    PartitionOp::SendMessages {
        messages: (0..count)
            .map(|i| Message {
                id: i as u128,
                payload: vec![i as u8; payload_bytes],
            })
            .collect(),
    }
}

fn group(group_id: u32, member_id: u32, generation: u64) -> Consumer {
    Consumer::Group {
        group_id,
        member_id,
        generation,
    }
}

fn every_op() -> Vec<PartitionOp> {
    vec![
        PartitionOp::SendMessages {
            messages: vec![
                Message {
                    id: u128::MAX,
                    payload: b"hello".to_vec(),
                },
                Message { id: 7, payload: vec![] },
            ],
        },
        PartitionOp::StoreConsumerOffset {
            consumer: Consumer::Single { consumer_id: 3 },
            offset: 42,
        },
        PartitionOp::StoreConsumerOffset {
            consumer: group(1, 2, u64::MAX),
            offset: 0,
        },
        PartitionOp::DeleteConsumerOffset {
            consumer: Consumer::Single { consumer_id: u32::MAX },
        },
        PartitionOp::DeleteConsumerOffset {
            consumer: group(9, 8, 7),
        },
        PartitionOp::SetGroupOwner {
            group_id: 5,
            member_id: 6,
            generation: 1,
        },
        PartitionOp::Purge,
        PartitionOp::DeleteSegments { count: u32::MAX },
    ]
}

fn every_reply() -> Vec<PartitionReply> {
    vec![
        PartitionReply::Appended {
            base_offset: 10,
            last_offset: 19,
        },
        PartitionReply::Ok,
        PartitionReply::SegmentsDeleted { count: 3 },
        PartitionReply::EmptyBatch,
        PartitionReply::BatchTooLarge,
        PartitionReply::OffsetBeyondLog { next_offset: 5 },
        PartitionReply::StaleOwner { current_generation: 3 },
        PartitionReply::StaleGeneration,
    ]
}

/// xorshift64: a fixed stream of test bytes (no OS randomness).
fn garbage(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn every_op_round_trips_with_a_stable_code() {
    let codes: Vec<u8> = every_op().iter().map(PartitionOp::operation_code).collect();
    assert_eq!(codes, vec![64, 65, 65, 66, 66, 67, 68, 69]);
    for op in every_op() {
        let bytes = op.encode();
        assert_eq!(bytes[0], op.operation_code());
        assert_eq!(PartitionOp::decode(&bytes), Ok(op));
    }
}

#[test]
fn the_shape_of_a_body_is_what_decoding_it_gives_and_it_accepts_exactly_what_decode_accepts() {
    for op in every_op() {
        let bytes = op.encode();
        let batch = match &op {
            PartitionOp::SendMessages { messages } => {
                Some((messages.len(), messages.iter().map(|m| m.payload.len()).sum()))
            }
            _ => None,
        };
        assert_eq!(
            PartitionOp::decode_shape(&bytes),
            Ok(OpShape {
                operation: op.operation_code(),
                batch
            }),
            "{op:?}"
        );
        for cut in 0..bytes.len() {
            assert_eq!(
                PartitionOp::decode_shape(&bytes[..cut]).err(),
                PartitionOp::decode(&bytes[..cut]).err(),
                "{op:?} cut at {cut}"
            );
        }
    }
    let mut accepted = 0;
    for seed in 0..2_000u64 {
        let bytes = garbage(seed, (seed % 64) as usize);
        let (shape, decoded) = (PartitionOp::decode_shape(&bytes), PartitionOp::decode(&bytes));
        assert_eq!(shape.as_ref().err(), decoded.as_ref().err(), "seed {seed}");
        if let (Ok(shape), Ok(op)) = (shape, decoded) {
            accepted += 1;
            assert_eq!(shape.operation, op.operation_code(), "seed {seed}");
        }
    }
    assert!(
        accepted > 0,
        "some garbage decodes, so both paths compared accepted bodies"
    );
}

#[test]
fn every_reply_round_trips_and_classifies() {
    for reply in every_reply() {
        assert_eq!(PartitionReply::decode(&reply.encode()), Ok(reply));
    }
    let successes: Vec<bool> = every_reply().iter().map(|r| r.outcome().is_success()).collect();
    assert_eq!(successes, vec![true, true, true, false, false, false, false, false]);
    assert_eq!(
        PartitionReply::StaleOwner { current_generation: 9 }.outcome(),
        PartitionOutcome::StaleOwner
    );
}

#[test]
fn truncated_or_padded_bodies_are_refused() {
    for op in every_op() {
        assert_cuts_and_padding_refused(&op.encode(), Some(0), PartitionOp::decode);
    }
    for reply in every_reply() {
        assert_cuts_and_padding_refused(&reply.encode(), None, PartitionReply::decode);
    }
}

#[test]
fn garbage_never_panics_and_metadata_codes_are_not_partition_ops() {
    for seed in 0..2_000u64 {
        let bytes = garbage(seed, (seed % 64) as usize);
        if let Ok(op) = PartitionOp::decode(&bytes) {
            assert_eq!(op.encode(), bytes, "decoding is canonical");
        }
        if let Ok(reply) = PartitionReply::decode(&bytes) {
            assert_eq!(reply.encode(), bytes, "decoding is canonical");
        }
    }
    for code in 0..OPERATION_CODE_MIN {
        assert_eq!(
            PartitionOp::decode(&[code]),
            Err(DecodeError::UnknownCode {
                field: "operation code",
                code
            })
        );
    }
    // Consumer kind 0 is not a valid wire value.
    assert_eq!(
        PartitionOp::decode(&[65, 0, 0, 0, 0, 0]),
        Err(DecodeError::UnknownCode {
            field: "consumer kind",
            code: 0
        })
    );
}

#[test]
fn hostile_lengths_are_refused_before_allocation() {
    // A batch claiming one more message than allowed.
    let mut bytes = vec![64];
    let mut count = MESSAGES_PER_BATCH_MAX as u64 + 1;
    while count >= 0x80 {
        bytes.push((count as u8 & 0x7f) | 0x80);
        count >>= 7;
    }
    bytes.push(count as u8);
    assert!(matches!(
        PartitionOp::decode(&bytes),
        Err(DecodeError::TooLong {
            field: "message count",
            ..
        })
    ));
    // One message whose payload claims u64::MAX bytes.
    let mut bytes = vec![64, 1];
    bytes.extend_from_slice(&[0; 16]);
    bytes.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
    assert!(matches!(
        PartitionOp::decode(&bytes),
        Err(DecodeError::TooLong {
            field: "message payload",
            ..
        })
    ));
    // An Appended reply whose last offset is below its base.
    let mut bytes = vec![1];
    bytes.extend_from_slice(&5u64.to_le_bytes());
    bytes.extend_from_slice(&4u64.to_le_bytes());
    assert!(PartitionReply::decode(&bytes).is_err());
}

#[test]
fn offsets_are_consecutive_across_batches_and_a_segment_roll() {
    let mut state = PartitionState::new(0, OwnerFence::Enforced);
    let first = state.apply(&batch(SEGMENT_MESSAGES_MAX - 1, 4), &at(1, 1));
    assert_eq!(
        first,
        PartitionReply::Appended {
            base_offset: 0,
            last_offset: SEGMENT_MESSAGES_MAX as u64 - 2
        }
    );
    let second = state.apply(&batch(3, 4), &at(2, 2));
    let base = SEGMENT_MESSAGES_MAX as u64 - 1;
    assert_eq!(
        second,
        PartitionReply::Appended {
            base_offset: base,
            last_offset: base + 2
        }
    );
    let segments = state.log().segments();
    assert_eq!(segments.len(), 2, "the second batch rolled the segment");
    assert_eq!(segments[0].len(), SEGMENT_MESSAGES_MAX);
    assert_eq!(segments[1].base_offset(), SEGMENT_MESSAGES_MAX as u64);
    let offsets: Vec<u64> = segments.iter().flat_map(|s| s.messages()).map(|m| m.offset).collect();
    let expected: Vec<u64> = (0..SEGMENT_MESSAGES_MAX as u64 + 2).collect();
    assert_eq!(offsets, expected);
    let read = state.log().read(base, 10);
    assert_eq!(
        read.iter().map(|m| m.offset).collect::<Vec<_>>(),
        vec![base, base + 1, base + 2]
    );
    assert_eq!(read[0].timestamp_micros, 2);
}

#[test]
fn a_segment_also_rolls_on_bytes() {
    let mut log = PartitionLog::new();
    let payload_bytes = (SEGMENT_BYTES_MAX / 4) as usize;
    for _ in 0..4 {
        log.append(0, 0, &vec![0; payload_bytes]);
    }
    // Each message carries a header too, so the fourth no longer fits.
    assert_eq!(log.segments().len(), 2);
    assert_eq!(log.segments()[1].base_offset(), 3);
    assert!(log.segments().iter().all(|s| s.bytes() <= SEGMENT_BYTES_MAX));
}

#[test]
fn index_entries_take_24_bytes_and_positions_grow() {
    let entry = IndexEntry {
        offset: 1,
        position: u64::MAX,
        timestamp_micros: 3,
    };
    let bytes = encode_index_entry(&entry);
    assert_eq!(bytes.len(), INDEX_ENTRY_BYTES);
    assert_eq!(decode_index_entry(&bytes), Ok(entry));
    assert!(decode_index_entry(&bytes[..23]).is_err());
    assert!(decode_index_entry(&[0; 25]).is_err());

    let mut log = PartitionLog::new();
    for (i, len) in [0usize, 5, 100, 1].into_iter().enumerate() {
        log.append(10 + i as u64, 0, &vec![0; len]);
    }
    let segment = &log.segments()[0];
    assert_eq!(segment.index_bytes().len(), 4 * INDEX_ENTRY_BYTES);
    let entries: Vec<IndexEntry> = (0..4).filter_map(|i| segment.index_entry(i)).collect();
    let positions: Vec<u64> = entries.iter().map(|e| e.position).collect();
    let h = MESSAGE_HEADER_BYTES;
    assert_eq!(positions, vec![0, h, 2 * h + 5, 3 * h + 105]);
    assert_eq!(entries[2].offset, 2);
    assert_eq!(entries[2].timestamp_micros, 12);
    assert_eq!(segment.index_entry(4), None);
    assert_eq!(segment.bytes(), 4 * h + 106);
}

#[test]
fn retention_drops_old_segments_only_and_never_the_active_one() {
    let mut log = PartitionLog::new();
    let per = SEGMENT_MESSAGES_MAX as u64;
    // Three full segments at days 1, 2, 3, then an active one at day 4.
    for day in 1..=4u64 {
        for _ in 0..per {
            log.append(day * DAY_MICROS, 0, &[]);
        }
    }
    log.append(4 * DAY_MICROS, 0, &[]);
    assert_eq!(log.segments().len(), 5);
    assert_eq!(log.apply_retention(10 * DAY_MICROS, 0), 0, "expiry 0 keeps everything");

    // At day 4 with a 2.5-day expiry, only day 1's segment is older than day 1.5.
    assert_eq!(log.apply_retention(4 * DAY_MICROS, 2 * DAY_MICROS + DAY_MICROS / 2), 1);
    assert_eq!(log.oldest_offset(), per);
    assert!(log.read(per - 1, 10).is_empty(), "below the retained start");
    assert_eq!(log.read(per, 1)[0].offset, per);

    // Far in the future everything has expired, but the active segment stays.
    assert_eq!(log.apply_retention(100 * DAY_MICROS, DAY_MICROS), 3);
    assert_eq!(log.segments().len(), 1);
    assert_eq!(log.oldest_offset(), 4 * per);
    assert_eq!(log.next_offset(), 4 * per + 1);
    assert_eq!(log.read(4 * per, 10).len(), 1);
    assert!(log.read(log.next_offset(), 10).is_empty(), "at next_offset");
}

#[test]
fn reads_are_bounded() {
    let mut log = PartitionLog::new();
    for _ in 0..(READ_MESSAGES_MAX + 5) {
        log.append(0, 0, &[]);
    }
    assert_eq!(log.read(0, usize::MAX).len(), READ_MESSAGES_MAX);
    assert_eq!(log.read(3, 2).len(), 2);
    assert!(log.read(0, 0).is_empty());
}

#[test]
fn the_state_applies_retention_at_the_prepare_timestamp() {
    let mut state = PartitionState::new(DAY_MICROS, OwnerFence::Enforced);
    state.apply(&batch(SEGMENT_MESSAGES_MAX, 1), &at(DAY_MICROS, 1));
    state.apply(&batch(1, 1), &at(2 * DAY_MICROS, 2));
    assert_eq!(state.log().oldest_offset(), 0);
    // Any later op (even a refused one) carries a timestamp that expires day 1.
    state.apply(&batch(0, 0), &at(3 * DAY_MICROS, 3));
    assert_eq!(state.log().oldest_offset(), SEGMENT_MESSAGES_MAX as u64);
}

#[test]
fn empty_and_oversized_batches_are_refused_and_change_nothing() {
    let mut state = PartitionState::new(0, OwnerFence::Enforced);
    let before = state.digest();
    assert_eq!(state.apply(&batch(0, 0), &at(1, 1)), PartitionReply::EmptyBatch);
    assert_eq!(
        state.apply(&batch(MESSAGES_PER_BATCH_MAX + 1, 0), &at(1, 2)),
        PartitionReply::BatchTooLarge
    );
    let too_many_bytes = BATCH_BYTES_MAX / PAYLOAD_BYTES_MAX + 1;
    assert_eq!(
        state.apply(&batch(too_many_bytes, PAYLOAD_BYTES_MAX), &at(1, 3)),
        PartitionReply::BatchTooLarge
    );
    assert_eq!(state.digest(), before);
    assert_eq!(state.next_offset(), 0);
}

#[test]
fn consumer_offsets_beyond_the_log_are_refused() {
    let mut state = PartitionState::new(0, OwnerFence::Enforced);
    state.apply(&batch(5, 1), &at(1, 1));
    let consumer = Consumer::Single { consumer_id: 1 };
    let store = |offset| PartitionOp::StoreConsumerOffset { consumer, offset };
    assert_eq!(
        state.apply(&store(6), &at(2, 2)),
        PartitionReply::OffsetBeyondLog { next_offset: 5 }
    );
    assert_eq!(state.consumer_offset(consumer.key()), None);
    assert_eq!(state.apply(&store(5), &at(3, 3)), PartitionReply::Ok);
    assert_eq!(state.consumer_offset(ConsumerKey::Single(1)), Some(5));
    assert_eq!(
        state.apply(&store(2), &at(4, 4)),
        PartitionReply::Ok,
        "a consumer may rewind"
    );
    assert_eq!(state.consumer_offset(ConsumerKey::Single(1)), Some(2));
}

#[test]
fn a_stale_owner_is_fenced_and_the_current_owner_accepted() {
    let mut state = PartitionState::new(0, OwnerFence::Enforced);
    state.apply(&batch(10, 1), &at(1, 1));
    let store = |consumer, offset| PartitionOp::StoreConsumerOffset { consumer, offset };

    // No owner yet: any member may write, and no owner is implied.
    assert_eq!(state.apply(&store(group(7, 1, 0), 1), &at(2, 2)), PartitionReply::Ok);
    assert_eq!(state.group_owner(7), None);

    let hand_to = |member_id, generation| PartitionOp::SetGroupOwner {
        group_id: 7,
        member_id,
        generation,
    };
    assert_eq!(state.apply(&hand_to(1, 1), &at(3, 3)), PartitionReply::Ok);
    assert_eq!(state.apply(&hand_to(2, 2), &at(4, 4)), PartitionReply::Ok);

    let stale = PartitionReply::StaleOwner { current_generation: 2 };
    assert_eq!(
        state.apply(&store(group(7, 1, 1), 4), &at(5, 5)),
        stale,
        "old owner, old generation"
    );
    assert_eq!(
        state.apply(&store(group(7, 1, 2), 4), &at(5, 6)),
        stale,
        "not the owner"
    );
    assert_eq!(
        state.apply(&store(group(7, 2, 1), 4), &at(5, 7)),
        stale,
        "owner, older generation"
    );
    assert_eq!(
        state.apply(&store(group(7, 2, 3), 4), &at(5, 8)),
        stale,
        "future generation"
    );
    let delete = PartitionOp::DeleteConsumerOffset {
        consumer: group(7, 1, 1),
    };
    assert_eq!(state.apply(&delete, &at(5, 9)), stale, "deletes are fenced too");
    assert_eq!(state.consumer_offset(ConsumerKey::Group(7)), Some(1));

    assert_eq!(state.apply(&store(group(7, 2, 2), 4), &at(6, 10)), PartitionReply::Ok);
    assert_eq!(state.consumer_offset(ConsumerKey::Group(7)), Some(4));
    // Another group is unaffected by group 7's owner.
    assert_eq!(state.apply(&store(group(8, 1, 1), 3), &at(6, 11)), PartitionReply::Ok);
}

#[test]
fn set_group_owner_needs_a_higher_generation() {
    let mut state = PartitionState::new(0, OwnerFence::Enforced);
    let set = |member_id, generation| PartitionOp::SetGroupOwner {
        group_id: 1,
        member_id,
        generation,
    };
    assert_eq!(
        state.apply(&set(1, 0), &at(1, 1)),
        PartitionReply::StaleGeneration,
        "0 is not above none"
    );
    assert_eq!(state.apply(&set(1, 5), &at(1, 2)), PartitionReply::Ok);
    assert_eq!(state.apply(&set(2, 5), &at(1, 3)), PartitionReply::StaleGeneration);
    assert_eq!(state.apply(&set(2, 4), &at(1, 4)), PartitionReply::StaleGeneration);
    assert_eq!(
        state.group_owner(1),
        Some(GroupOwner {
            member_id: 1,
            generation: 5
        })
    );
    assert_eq!(state.apply(&set(2, 6), &at(1, 5)), PartitionReply::Ok);
    assert_eq!(state.group_owner(1).map(|o| o.member_id), Some(2));
}

#[test]
fn deleting_a_missing_offset_is_ok_and_changes_nothing() {
    let mut a = PartitionState::new(0, OwnerFence::Enforced);
    let mut b = PartitionState::new(0, OwnerFence::Enforced);
    let delete = PartitionOp::DeleteConsumerOffset {
        consumer: Consumer::Single { consumer_id: 4 },
    };
    let before = a.digest();
    assert_eq!(a.apply(&delete, &at(1, 1)), PartitionReply::Ok);
    assert_eq!(b.apply(&delete, &at(1, 1)), PartitionReply::Ok);
    assert_eq!(a.digest(), before);
    assert_eq!(a, b);

    a.apply(
        &PartitionOp::StoreConsumerOffset {
            consumer: Consumer::Single { consumer_id: 4 },
            offset: 0,
        },
        &at(2, 2),
    );
    assert_ne!(a.digest(), before);
    assert_eq!(a.apply(&delete, &at(3, 3)), PartitionReply::Ok);
    assert_eq!(a.digest(), before, "deleting the stored offset restores the state");
}

fn scenario() -> Vec<(PartitionOp, ApplyContext)> {
    vec![
        (batch(3, 2), at(10, 1)),
        (
            PartitionOp::StoreConsumerOffset {
                consumer: Consumer::Single { consumer_id: 1 },
                offset: 2,
            },
            at(11, 2),
        ),
        (
            PartitionOp::SetGroupOwner {
                group_id: 1,
                member_id: 2,
                generation: 1,
            },
            at(12, 3),
        ),
        (
            PartitionOp::StoreConsumerOffset {
                consumer: group(1, 2, 1),
                offset: 3,
            },
            at(13, 4),
        ),
        (
            PartitionOp::DeleteConsumerOffset {
                consumer: Consumer::Single { consumer_id: 1 },
            },
            at(14, 5),
        ),
        (batch(1, 0), at(15, 6)),
    ]
}

#[test]
fn same_ops_same_digest_and_every_change_moves_it() {
    let mut a = PartitionState::new(DAY_MICROS, OwnerFence::Enforced);
    let mut b = PartitionState::new(DAY_MICROS, OwnerFence::Enforced);
    for (op, context) in scenario() {
        let before = a.digest();
        let reply = a.apply(&op, &context);
        assert_eq!(b.apply(&op, &context), reply);
        assert!(reply.outcome().is_success(), "{op:?}");
        assert_ne!(a.digest(), before, "{op:?} changed the state");
        assert_eq!(a.digest(), b.digest());
    }
    // The same payload at a different timestamp is a different log.
    let mut c = PartitionState::new(DAY_MICROS, OwnerFence::Enforced);
    c.apply(&batch(1, 1), &at(1, 1));
    let mut d = PartitionState::new(DAY_MICROS, OwnerFence::Enforced);
    d.apply(&batch(1, 1), &at(2, 1));
    assert_ne!(c.digest(), d.digest());
    // The expiry setting is part of the state.
    assert_ne!(
        PartitionState::new(0, OwnerFence::Enforced).digest(),
        PartitionState::new(1, OwnerFence::Enforced).digest()
    );
}

fn prepare(op: &PartitionOp, context: &ApplyContext) -> Header {
    let mut header = Header::new(Command::Prepare);
    header.operation = op.operation_code();
    header.timestamp = context.timestamp_micros;
    header.op = context.op_number;
    header
}

#[test]
fn the_machine_gives_identical_replies_and_digests() {
    let mut a = PartitionMachine::new(DAY_MICROS, OwnerFence::Enforced);
    let mut b = PartitionMachine::new(DAY_MICROS, OwnerFence::Enforced);
    for (op, context) in scenario() {
        let header = prepare(&op, &context);
        let body = op.encode();
        assert!(a.validate_request(header.operation, &body));
        let reply = a.apply(&header, &body);
        assert_eq!(b.apply(&header, &body), reply);
        assert!(PartitionReply::decode(&reply).is_ok_and(|r| r.outcome().is_success()));
        assert_eq!(a.digest(), b.digest());
    }
    assert_eq!(a.state().next_offset(), 4);
    assert_eq!(a.state().log().read(3, 1)[0].timestamp_micros, 15);
}

#[test]
fn the_machine_answers_malformed_bodies_with_nothing_and_changes_nothing() {
    let mut machine = PartitionMachine::new(0, OwnerFence::Enforced);
    let before = machine.digest();
    let op = batch(1, 1);
    let header = prepare(&op, &at(1, 1));
    let body = op.encode();
    assert_eq!(machine.apply(&header, &body[..body.len() - 1]), Vec::<u8>::new());
    let mut wrong = header;
    wrong.operation = 65;
    assert!(!machine.validate_request(65, &body), "the code must match the body");
    assert!(!machine.validate_request(64, &[64]));
    assert_eq!(machine.apply(&wrong, &body), Vec::<u8>::new());
    assert_eq!(machine.digest(), before);
}

/// A state with `sealed` full segments and an active one holding one message: offsets
/// `0..sealed * SEGMENT_MESSAGES_MAX + 1`, the batch of segment `i` stamped `i + 1`.
fn with_sealed_segments(sealed: usize) -> PartitionState {
    let mut state = PartitionState::new(0, OwnerFence::Enforced);
    for i in 0..sealed as u64 {
        state.apply(&batch(SEGMENT_MESSAGES_MAX, 1), &at(i + 1, i + 1));
    }
    state.apply(&batch(1, 1), &at(sealed as u64 + 1, sealed as u64 + 1));
    assert_eq!(state.log().segments().len(), sealed + 1);
    state
}

fn poll(state: &PartitionState, offset: u64, count: u32) -> Vec<u64> {
    state
        .poll(&PollRequest { offset, count })
        .messages
        .iter()
        .map(|m| m.offset)
        .collect()
}

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
    let gap = PollReply {
        next_offset: 10,
        messages: vec![message(1), message(3)],
    };
    assert!(matches!(
        PollReply::decode(&gap.encode()),
        Err(DecodeError::InvalidState { .. })
    ));
    let beyond = PollReply {
        next_offset: 2,
        messages: vec![message(1), message(2)],
    };
    assert!(matches!(
        PollReply::decode(&beyond.encode()),
        Err(DecodeError::InvalidState { .. })
    ));
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
    for seed in 0..2_000u64 {
        let bytes = garbage(seed, (seed % 80) as usize);
        if let Ok(reply) = PollReply::decode(&bytes) {
            assert_eq!(reply.encode(), bytes, "decoding is canonical");
        }
        if let Ok(request) = PollRequest::decode(&bytes) {
            assert_eq!(request.encode(), bytes, "decoding is canonical");
        }
    }
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

// ---- snapshots: encode_state / decode_state / restore ----

/// Decodes `state`'s own bytes and checks the result is the same state, digest and all.
fn assert_round_trips(state: &PartitionState) {
    let bytes = state.encode_state();
    let decoded = PartitionState::decode_state(&bytes, OwnerFence::Enforced).expect("a state's own bytes decode");
    assert_eq!(&decoded, state);
    assert_eq!(decoded.digest(), state.digest());
    assert_eq!(
        decoded.log().segments(),
        state.log().segments(),
        "sizes and index entries rebuilt"
    );
}

/// Eight messages of [`PAYLOAD_BYTES_MAX`] each: half a megabyte, so 32 such batches
/// fill a 16 MiB segment by bytes long before it fills by count.
fn big_batch() -> PartitionOp {
    batch(8, PAYLOAD_BYTES_MAX)
}

#[test]
fn a_busy_partition_state_round_trips_through_every_stage_of_its_life() {
    let mut state = PartitionState::new(DAY_MICROS, OwnerFence::Enforced);
    assert_round_trips(&state);

    // Two segments rolled by count, at time 1.
    state.apply(&batch(SEGMENT_MESSAGES_MAX, 3), &at(1, 1));
    state.apply(&batch(SEGMENT_MESSAGES_MAX, 0), &at(1, 2));
    // Then 320 messages of 64 KiB at time 2: one segment rolled by bytes, and the rest.
    for op in 3..43 {
        state.apply(&big_batch(), &at(2, op));
    }
    let sizes: Vec<usize> = state.log().segments().iter().map(|s| s.len()).collect();
    assert_eq!(
        sizes,
        vec![1_000, 1_000, 255, 65],
        "rolled by count twice, then by bytes"
    );

    let owner = group(1, 10, 2);
    let ops = [
        PartitionOp::StoreConsumerOffset {
            consumer: Consumer::Single { consumer_id: u32::MAX },
            offset: 7,
        },
        PartitionOp::StoreConsumerOffset {
            consumer: Consumer::Single { consumer_id: 3 },
            offset: 2_320,
        },
        PartitionOp::SetGroupOwner {
            group_id: 1,
            member_id: 10,
            generation: 2,
        },
        PartitionOp::SetGroupOwner {
            group_id: 9,
            member_id: 4,
            generation: u64::MAX,
        },
        PartitionOp::StoreConsumerOffset {
            consumer: owner,
            offset: 1_500,
        },
        // A group without owner: written, and no owner recorded.
        PartitionOp::StoreConsumerOffset {
            consumer: group(0, 1, 1),
            offset: 0,
        },
    ];
    for (i, op) in ops.iter().enumerate() {
        assert_eq!(state.apply(op, &at(3, 100 + i as u64)), PartitionReply::Ok);
    }
    assert_round_trips(&state);

    // A day later retention drops the two segments stamped 1; those stamped 2 stay.
    state.apply(
        &PartitionOp::StoreConsumerOffset {
            consumer: owner,
            offset: 2_000,
        },
        &at(DAY_MICROS + 2, 200),
    );
    assert_eq!(state.log().oldest_offset(), 2_000);
    assert_round_trips(&state);

    // Purge leaves one empty segment at the next offset; offsets and owners stay.
    state.apply(&PartitionOp::Purge, &at(DAY_MICROS + 3, 201));
    assert_eq!(state.log().segments().len(), 1);
    assert!(state.log().segments()[0].is_empty());
    assert_round_trips(&state);

    // Appends after the purge continue from the next offset.
    state.apply(&batch(3, 5), &at(DAY_MICROS + 4, 202));
    assert_eq!(state.log().segments()[0].base_offset(), 2_320);
    assert_round_trips(&state);
}

#[test]
fn the_decoded_state_takes_the_fence_it_is_given() {
    let state = with_sealed_segments(1);
    let decoded = PartitionState::decode_state(&state.encode_state(), OwnerFence::DisabledForTest);
    let decoded = decoded.expect("a state's own bytes decode");
    assert_eq!(decoded.fence(), OwnerFence::DisabledForTest);
    assert_eq!(decoded.digest(), state.digest(), "the fence is not replicated state");
}

/// A small state touching every part of the encoding: a purged log (based above 0)
/// with messages again, single and group offsets, two owners.
fn a_small_state_with_everything() -> PartitionState {
    let mut state = PartitionState::new(DAY_MICROS, OwnerFence::Enforced);
    state.apply(&batch(3, 4), &at(1, 1));
    state.apply(&PartitionOp::Purge, &at(2, 2));
    state.apply(&batch(2, 9), &at(3, 3));
    let ops = [
        PartitionOp::StoreConsumerOffset {
            consumer: Consumer::Single { consumer_id: 3 },
            offset: 4,
        },
        PartitionOp::SetGroupOwner {
            group_id: 2,
            member_id: 1,
            generation: 1,
        },
        PartitionOp::SetGroupOwner {
            group_id: 5,
            member_id: 1,
            generation: 3,
        },
        PartitionOp::StoreConsumerOffset {
            consumer: group(2, 1, 1),
            offset: 5,
        },
    ];
    for (i, op) in ops.iter().enumerate() {
        assert_eq!(state.apply(op, &at(4, 4 + i as u64)), PartitionReply::Ok);
    }
    state
}

#[test]
fn every_truncation_of_a_state_is_refused_with_an_error() {
    let bytes = a_small_state_with_everything().encode_state();
    for len in 0..bytes.len() {
        assert!(
            PartitionState::decode_state(&bytes[..len], OwnerFence::Enforced).is_err(),
            "a {len}-byte prefix of {} decoded",
            bytes.len()
        );
    }
    // A log of several segments is some 80 KB: every 61st prefix and the whole tail,
    // where the last segment, offsets and owners end.
    let bytes = with_sealed_segments(2).encode_state();
    let tail = bytes.len().saturating_sub(300);
    for len in (0..tail).step_by(61).chain(tail..bytes.len()) {
        assert!(
            PartitionState::decode_state(&bytes[..len], OwnerFence::Enforced).is_err(),
            "a {len}-byte prefix of {} decoded",
            bytes.len()
        );
    }
}

#[test]
fn a_trailing_byte_is_refused() {
    let mut bytes = a_small_state_with_everything().encode_state();
    bytes.push(0);
    assert_eq!(
        PartitionState::decode_state(&bytes, OwnerFence::Enforced),
        Err(DecodeError::TrailingBytes { count: 1 })
    );
}

/// A state encoding written by hand, field by field as `encode_state` lays it out:
/// every message gets timestamp 1, id 0 and a zero payload of `payload_bytes`.
struct Snapshot {
    next_offset: u64,
    /// Each segment's base and its messages' offsets.
    segments: Vec<(u64, Vec<u64>)>,
    payload_bytes: usize,
    /// (key tag, id, offset): tag 1 single, 2 group.
    consumer_offsets: Vec<(u8, u32, u64)>,
    /// (group id, member id, generation).
    owners: Vec<(u32, u32, u64)>,
}

impl Snapshot {
    /// One segment at 0 holding offsets 0 and 1; nothing else.
    fn two_messages() -> Self {
        Self {
            next_offset: 2,
            segments: vec![(0, vec![0, 1])],
            payload_bytes: 0,
            consumer_offsets: Vec::new(),
            owners: Vec::new(),
        }
    }

    /// [`Snapshot::two_messages`] with these consumer offsets.
    fn with_offsets(consumer_offsets: Vec<(u8, u32, u64)>) -> Self {
        Self {
            consumer_offsets,
            ..Self::two_messages()
        }
    }

    /// [`Snapshot::two_messages`] with these group owners.
    fn with_owners(owners: Vec<(u32, u32, u64)>) -> Self {
        Self {
            owners,
            ..Self::two_messages()
        }
    }

    fn encode(&self) -> Vec<u8> {
        let mut w = crate::codec::Writer::new();
        w.u64(DAY_MICROS);
        w.u64(self.next_offset);
        w.len(self.segments.len());
        for (base, offsets) in &self.segments {
            w.u64(*base);
            w.len(offsets.len());
            for offset in offsets {
                w.u64(*offset);
                w.u64(1);
                w.u128(0);
                w.bytes(&vec![0; self.payload_bytes]);
            }
        }
        w.len(self.consumer_offsets.len());
        for &(tag, id, offset) in &self.consumer_offsets {
            w.u8(tag);
            w.u32(id);
            w.u64(offset);
        }
        w.len(self.owners.len());
        for &(group_id, member_id, generation) in &self.owners {
            w.u32(group_id);
            w.u32(member_id);
            w.u64(generation);
        }
        w.finish()
    }

    fn decode(&self) -> Result<PartitionState, DecodeError> {
        PartitionState::decode_state(&self.encode(), OwnerFence::Enforced)
    }
}

fn invalid(what: &'static str) -> Result<PartitionState, DecodeError> {
    Err(DecodeError::InvalidState { what })
}

#[test]
fn a_hand_written_snapshot_decodes_to_the_state_that_applying_gives() {
    let snapshot = Snapshot {
        consumer_offsets: vec![(1, 3, 2), (2, 3, 1)],
        owners: vec![(3, 7, 4)],
        ..Snapshot::two_messages()
    };
    let mut state = PartitionState::new(DAY_MICROS, OwnerFence::Enforced);
    let empty = Message { id: 0, payload: vec![] };
    let ops = [
        PartitionOp::SendMessages {
            messages: vec![empty.clone(), empty],
        },
        PartitionOp::StoreConsumerOffset {
            consumer: Consumer::Single { consumer_id: 3 },
            offset: 2,
        },
        PartitionOp::SetGroupOwner {
            group_id: 3,
            member_id: 7,
            generation: 4,
        },
        PartitionOp::StoreConsumerOffset {
            consumer: group(3, 7, 4),
            offset: 1,
        },
    ];
    for op in ops {
        state.apply(&op, &at(1, 1));
    }
    assert_eq!(
        state.encode_state(),
        snapshot.encode(),
        "the hand-written layout is encode_state's"
    );
    assert!(snapshot.decode().is_ok());
}

#[test]
fn a_gap_in_offsets_or_between_segments_is_refused() {
    let gap_in_segment = Snapshot {
        next_offset: 3,
        segments: vec![(0, vec![0, 2])],
        ..Snapshot::two_messages()
    };
    assert_eq!(
        gap_in_segment.decode(),
        invalid("message offsets are not consecutive from their segment's base")
    );
    let not_from_base = Snapshot {
        segments: vec![(5, vec![0, 1])],
        ..Snapshot::two_messages()
    };
    assert_eq!(
        not_from_base.decode(),
        invalid("message offsets are not consecutive from their segment's base")
    );
    let full: Vec<u64> = (0..SEGMENT_MESSAGES_MAX as u64).collect();
    let gap_between_segments = Snapshot {
        next_offset: 1_002,
        segments: vec![(0, full.clone()), (1_001, vec![1_001])],
        ..Snapshot::two_messages()
    };
    assert_eq!(
        gap_between_segments.decode(),
        invalid("a segment does not start where the previous one ends")
    );
    let contiguous = Snapshot {
        next_offset: 1_001,
        segments: vec![(0, full), (1_000, vec![1_000])],
        ..Snapshot::two_messages()
    };
    assert!(contiguous.decode().is_ok(), "the same log without the gap decodes");
}

#[test]
fn the_next_offset_must_be_the_end_of_the_last_segment() {
    for next_offset in [0, 1, 3, u64::MAX] {
        let snapshot = Snapshot {
            next_offset,
            ..Snapshot::two_messages()
        };
        assert_eq!(
            snapshot.decode(),
            invalid("the next offset is not the end of the last segment")
        );
    }
    let no_segments = Snapshot {
        next_offset: 0,
        segments: Vec::new(),
        ..Snapshot::two_messages()
    };
    assert_eq!(
        no_segments.decode(),
        invalid("a log without segments (even an empty log has its active segment)")
    );
    // A base so high its messages would pass u64::MAX: refused, not an overflow panic.
    let overflowing = Snapshot {
        next_offset: 0,
        segments: vec![(u64::MAX, vec![u64::MAX, 0])],
        ..Snapshot::two_messages()
    };
    assert!(overflowing.decode().is_err());
}

#[test]
fn segments_must_roll_exactly_where_append_rolls_them() {
    // Rolled early: the first segment had room for offset 1.
    let early = Snapshot {
        segments: vec![(0, vec![0]), (1, vec![1])],
        ..Snapshot::two_messages()
    };
    assert_eq!(
        early.decode(),
        invalid("a segment starts although the previous one had room for its first message")
    );
    // An empty segment is a new or purged log's only segment, never one of several.
    let full: Vec<u64> = (0..SEGMENT_MESSAGES_MAX as u64).collect();
    let empty_active = Snapshot {
        next_offset: 1_000,
        segments: vec![(0, full), (1_000, Vec::new())],
        ..Snapshot::two_messages()
    };
    assert_eq!(
        empty_active.decode(),
        invalid("an empty segment beside others (only a new or purged log has one, alone)")
    );
    // Past the count: refused from the count alone.
    let too_many = Snapshot {
        next_offset: 1_001,
        segments: vec![(0, (0..=SEGMENT_MESSAGES_MAX as u64).collect())],
        ..Snapshot::two_messages()
    };
    assert!(matches!(
        too_many.decode(),
        Err(DecodeError::TooLong {
            field: "segment message count",
            ..
        })
    ));
    // Past the bytes: 31 messages of half a megabyte fit in 16 MiB, a 32nd does not.
    let overfull = Snapshot {
        next_offset: 32,
        segments: vec![(0, (0..32).collect())],
        payload_bytes: BATCH_BYTES_MAX,
        ..Snapshot::two_messages()
    };
    assert_eq!(
        overfull.decode(),
        invalid("a segment holds more than append puts in one before rolling")
    );
    let rolled = Snapshot {
        segments: vec![(0, (0..31).collect()), (31, vec![31])],
        ..overfull
    };
    assert!(rolled.decode().is_ok(), "the same messages rolled at the 32nd decode");
}

#[test]
fn a_payload_larger_than_a_batch_is_refused() {
    let snapshot = Snapshot {
        payload_bytes: BATCH_BYTES_MAX + 1,
        ..Snapshot::two_messages()
    };
    assert!(matches!(
        snapshot.decode(),
        Err(DecodeError::TooLong {
            field: "message payload",
            ..
        })
    ));
}

#[test]
fn consumer_offset_keys_must_ascend_strictly_and_have_known_tags() {
    let non_canonical = Err(DecodeError::NonCanonical {
        field: "consumer offset key",
    });
    // Single consumers sort before groups, whatever the ids.
    let group_before_single = Snapshot::with_offsets(vec![(2, 1, 0), (1, 5, 0)]);
    assert_eq!(group_before_single.decode(), non_canonical);
    let repeated = Snapshot::with_offsets(vec![(1, 3, 0), (1, 3, 1)]);
    assert_eq!(repeated.decode(), non_canonical);
    let descending = Snapshot::with_offsets(vec![(1, 4, 0), (1, 3, 0)]);
    assert_eq!(descending.decode(), non_canonical);
    let unknown_tag = Snapshot::with_offsets(vec![(3, 1, 0)]);
    assert_eq!(
        unknown_tag.decode(),
        Err(DecodeError::UnknownCode {
            field: "consumer key tag",
            code: 3
        })
    );
    let beyond_the_log = Snapshot::with_offsets(vec![(1, 1, 3)]);
    assert_eq!(
        beyond_the_log.decode(),
        invalid("a consumer offset beyond the next offset")
    );
    let ascending = Snapshot::with_offsets(vec![(1, 3, 0), (1, 4, 2), (2, 1, 1)]);
    assert!(ascending.decode().is_ok());
}

#[test]
fn group_owners_must_ascend_strictly_and_hold_a_generation() {
    let non_canonical = Err(DecodeError::NonCanonical {
        field: "group owner id",
    });
    let descending = Snapshot::with_owners(vec![(4, 1, 1), (2, 1, 1)]);
    assert_eq!(descending.decode(), non_canonical);
    let repeated = Snapshot::with_owners(vec![(4, 1, 1), (4, 2, 2)]);
    assert_eq!(repeated.decode(), non_canonical);
    let generation_zero = Snapshot::with_owners(vec![(4, 1, 0)]);
    assert_eq!(generation_zero.decode(), invalid("a group owner at generation 0"));
}

#[test]
fn hostile_counts_are_refused_before_anything_is_read() {
    use super::state::{SNAPSHOT_CONSUMER_OFFSETS_MAX, SNAPSHOT_GROUP_OWNERS_MAX, SNAPSHOT_SEGMENTS_MAX};

    let mut w = crate::codec::Writer::new();
    w.u64(0);
    w.u64(0);
    w.varint(SNAPSHOT_SEGMENTS_MAX as u64 + 1);
    assert!(matches!(
        PartitionState::decode_state(&w.finish(), OwnerFence::Enforced),
        Err(DecodeError::TooLong {
            field: "segment count",
            ..
        })
    ));
    // A claim within the bound but far beyond the input fails as truncated, having
    // read only what is there.
    let mut w = crate::codec::Writer::new();
    w.u64(0);
    w.u64(0);
    w.varint(SNAPSHOT_SEGMENTS_MAX as u64);
    assert!(matches!(
        PartitionState::decode_state(&w.finish(), OwnerFence::Enforced),
        Err(DecodeError::Truncated { .. })
    ));
    // The map bounds are the key spaces: a larger count cannot be strictly ascending.
    assert_eq!(SNAPSHOT_CONSUMER_OFFSETS_MAX as u64, 2 * (u64::from(u32::MAX) + 1));
    assert_eq!(SNAPSHOT_GROUP_OWNERS_MAX as u64, u64::from(u32::MAX) + 1);
    let mut bytes = Snapshot::two_messages().encode();
    bytes.truncate(bytes.len() - 2);
    let mut w = crate::codec::Writer::new();
    w.varint(u64::MAX);
    bytes.extend(w.finish());
    assert!(matches!(
        PartitionState::decode_state(&bytes, OwnerFence::Enforced),
        Err(DecodeError::TooLong {
            field: "consumer offset count",
            ..
        })
    ));
}

#[test]
fn garbage_never_decodes_as_a_state_and_never_panics() {
    for seed in 0..200 {
        let bytes = garbage(seed, (seed as usize * 7) % 300);
        assert!(PartitionState::decode_state(&bytes, OwnerFence::Enforced).is_err());
    }
}

#[test]
fn a_machine_restored_from_a_snapshot_carries_on_like_the_original() {
    let mut original = PartitionMachine::new(DAY_MICROS, OwnerFence::Enforced);
    let ops = [batch(SEGMENT_MESSAGES_MAX, 2), batch(4, 2)];
    for (i, op) in ops.iter().enumerate() {
        original.apply(&prepare(op, &at(1, i as u64 + 1)), &op.encode());
    }
    // A replica that starts over takes the snapshot, not the history.
    let mut restored = PartitionMachine::new(0, OwnerFence::Enforced);
    assert_eq!(restored.restore(&original.snapshot()), Ok(()));
    assert_eq!(restored, original);
    assert_eq!(restored.state().message_expiry_micros(), DAY_MICROS);

    let next = batch(1, 1);
    let header = prepare(&next, &at(DAY_MICROS + 2, 3));
    assert_eq!(
        restored.apply(&header, &next.encode()),
        original.apply(&header, &next.encode())
    );
    assert_eq!(restored.digest(), original.digest());
    assert_eq!(restored.state().log().oldest_offset(), 1_000, "retention ran alike");
}

#[test]
fn a_machine_keeps_its_own_fence_when_restored() {
    let original = PartitionMachine::new(0, OwnerFence::Enforced);
    let mut test_machine = PartitionMachine::new(0, OwnerFence::DisabledForTest);
    assert_eq!(test_machine.restore(&original.snapshot()), Ok(()));
    assert_eq!(test_machine.state().fence(), OwnerFence::DisabledForTest);
}

#[test]
fn restoring_bytes_that_are_not_a_snapshot_leaves_the_machine_unchanged() {
    let mut machine = PartitionMachine::new(DAY_MICROS, OwnerFence::Enforced);
    let op = batch(3, 2);
    machine.apply(&prepare(&op, &at(1, 1)), &op.encode());
    let before = machine.clone();
    let snapshot = machine.snapshot();

    let mut padded = snapshot.clone();
    padded.push(0);
    let mut rejected = vec![
        Vec::new(),
        snapshot[..snapshot.len() - 1].to_vec(),
        padded,
        Snapshot::two_messages().encode()[..20].to_vec(),
    ];
    rejected.extend((1..20).map(|seed| garbage(seed, 64)));
    for bytes in rejected {
        assert!(machine.restore(&bytes).is_err());
        assert_eq!(machine, before);
    }
    // The empty state's snapshot is a snapshot: restoring it does replace the state.
    assert_eq!(
        machine.restore(&PartitionMachine::new(0, OwnerFence::Enforced).snapshot()),
        Ok(())
    );
    assert_eq!(machine.state().next_offset(), 0);
}

/// A tiny deterministic generator for the examples below (xorshift64*).
struct Draw(u64);

impl Draw {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// The replica applies committed bodies without decoding a batch's messages into
/// buffers of their own (`apply_encoded`); that path must do exactly what applying the
/// decoded op does: the same reply, the same state, byte for byte, over batches that
/// roll segments, expire, are refused, and bodies that do not decode or name another op.
#[test]
fn applying_an_encoded_body_matches_applying_the_decoded_op() {
    let mut draw = Draw(0x9E37_79B9_7F4A_7C15);
    let mut decoded = PartitionState::new(DAY_MICROS, OwnerFence::Enforced);
    let mut encoded = PartitionState::new(DAY_MICROS, OwnerFence::Enforced);
    let mut appended = 0u64;
    let (mut segments_max, mut dropped_any) = (0, false);
    for step in 0..3_000u64 {
        let op = match draw.below(10) {
            0 => PartitionOp::SendMessages { messages: Vec::new() },
            // Over the batch's byte bound (one past the message bound would not decode).
            1 => batch(BATCH_BYTES_MAX / PAYLOAD_BYTES_MAX + 1, PAYLOAD_BYTES_MAX),
            2 => PartitionOp::StoreConsumerOffset {
                consumer: Consumer::Single { consumer_id: 7 },
                offset: draw.below(appended + 2),
            },
            3 if draw.below(8) == 0 => PartitionOp::DeleteSegments {
                count: draw.below(3) as u32,
            },
            _ => PartitionOp::SendMessages {
                messages: (0..1 + draw.below(40))
                    .map(|i| Message {
                        id: u128::from(step) << 64 | u128::from(i),
                        payload: (0..draw.below(600)).map(|b| (b ^ step) as u8).collect(),
                    })
                    .collect(),
            },
        };
        // Time moves on by up to half a day, so retention drops segments now and then.
        let context = at(step * (DAY_MICROS / 2 / 100) * draw.below(3), step);
        let body = op.encode();
        let want = decoded.apply(&op, &context);
        let got = encoded.apply_encoded(op.operation_code(), &body, &context);
        assert_eq!(got, Some(want), "step {step}: op code {}", op.operation_code());
        assert_eq!(encoded.encode_state(), decoded.encode_state(), "step {step}");
        appended = decoded.log().next_offset();
        segments_max = segments_max.max(decoded.log().segments().len());
        dropped_any |= decoded.log().oldest_offset() > 0;

        // A body cut short, or named as another op, is refused and changes nothing.
        let before = encoded.encode_state();
        if body.len() > 1 {
            let cut = 1 + draw.below(body.len() as u64 - 1) as usize;
            assert_eq!(encoded.apply_encoded(op.operation_code(), &body[..cut], &context), None);
        }
        let other = if op.operation_code() == OPERATION_CODE_MIN {
            OPERATION_CODE_MIN + 4
        } else {
            OPERATION_CODE_MIN
        };
        assert_eq!(encoded.apply_encoded(other, &body, &context), None);
        assert_eq!(
            encoded.encode_state(),
            before,
            "step {step}: a refused body changed the state"
        );
    }
    assert!(
        segments_max > 2 && dropped_any,
        "the example rolled and dropped segments: {segments_max} at most, dropped {dropped_any}"
    );
}

/// A segment keeps its payloads end to end in one buffer; reading from any offset, a
/// segment's messages from any position, and its index must give each message back
/// whole and in place.
#[test]
fn every_message_reads_back_from_its_segment_whole() {
    let mut draw = Draw(42);
    let mut log = PartitionLog::new();
    let mut model: Vec<(u128, Vec<u8>)> = Vec::new();
    for i in 0..2_500u64 {
        let payload: Vec<u8> = (0..draw.below(300)).map(|b| (b * 7 + i) as u8).collect();
        let offset = log.append(i, u128::from(i) * 3, &payload);
        assert_eq!(offset, model.len() as u64);
        model.push((u128::from(i) * 3, payload));
    }
    assert!(log.segments().len() >= 3);
    for segment in log.segments() {
        let base = segment.base_offset();
        for position in 0..=segment.len() {
            let from: Vec<_> = segment.messages_from(position).collect();
            assert_eq!(from.len(), segment.len() - position);
            for (k, message) in from.iter().enumerate() {
                let offset = base + (position + k) as u64;
                assert_eq!(Some(*message), segment.message(position + k));
                assert_eq!(message.offset, offset);
                assert_eq!(message.timestamp_micros, offset);
                assert_eq!(
                    (message.id, message.payload),
                    (model[offset as usize].0, &model[offset as usize].1[..])
                );
                let entry = segment.index_entry(position + k).expect("an index entry per message");
                assert_eq!(entry.offset, offset);
            }
        }
        assert_eq!(segment.message(segment.len()), None);
    }
    for start in [0, 1, 999, 1_000, 1_001, 2_499] {
        let read = log.read(start, READ_MESSAGES_MAX);
        assert_eq!(read.len(), (2_500 - start as usize).min(READ_MESSAGES_MAX));
        for (k, message) in read.iter().enumerate() {
            assert_eq!(message.to_owned().payload, model[start as usize + k].1);
        }
    }
}
