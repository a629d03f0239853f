//! Examples of the partition plane: codecs, the log, the rules, and the VSR machine.

use super::*;
use crate::codec::assert_cuts_and_padding_refused;
use crate::vsr::StateMachine;
use crate::wire::{Command, Header};

mod polls;
mod snapshot;

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

/// `decode` never panics on garbage (2,000 seeds, lengths below `lengths`), and any
/// garbage it accepts encodes back to the same bytes: one encoding per value.
fn assert_garbage_decodes_canonically<T>(
    lengths: u64,
    decode: impl Fn(&[u8]) -> Result<T, DecodeError>,
    encode: impl Fn(&T) -> Vec<u8>,
) {
    for seed in 0..2_000u64 {
        let bytes = garbage(seed, (seed % lengths) as usize);
        if let Ok(value) = decode(&bytes) {
            assert_eq!(encode(&value), bytes, "decoding is canonical");
        }
    }
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
    assert_garbage_decodes_canonically(64, PartitionOp::decode, PartitionOp::encode);
    assert_garbage_decodes_canonically(64, PartitionReply::decode, PartitionReply::encode);
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
    // (member, generation) of each stale write, in op order from op 5.
    for (op, (member, generation, why)) in [
        (1, 1, "old owner, old generation"),
        (1, 2, "not the owner"),
        (2, 1, "owner, older generation"),
        (2, 3, "future generation"),
    ]
    .into_iter()
    .enumerate()
    {
        let at_op = at(5, 5 + op as u64);
        assert_eq!(
            state.apply(&store(group(7, member, generation), 4), &at_op),
            stale,
            "{why}"
        );
    }
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

/// A tiny deterministic generator for the examples of these tests (xorshift64*).
struct Draw(u64);

impl Draw {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}
