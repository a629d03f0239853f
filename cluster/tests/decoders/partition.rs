//! Partition: ops, replies, polls, index entries, the state snapshot.

#[allow(unused_imports)]
use crate::{memory::*, metadata::*, storage_boot::*, storage_logs::*, support::*, vsr_node::*, wire::*};

// ---------------------------------------------------------------------------------------
// Partition: ops, replies, polls, index entries, the state snapshot
// ---------------------------------------------------------------------------------------

pub(crate) fn consumer() -> impl Strategy<Value = Consumer> {
    #[rustfmt::skip]
    let consumers = prop_oneof![
        arbitrary! { Consumer::Single { consumer_id: any::<u32>() } },
        arbitrary! { Consumer::Group { group_id: any::<u32>(), member_id: any::<u32>(), generation: any::<u64>() } },
    ];
    consumers
}

pub(crate) fn messages(max: usize) -> impl Strategy<Value = Vec<Message>> {
    prop::collection::vec(arbitrary! { Message { id: any::<u128>(), payload: bytes(48) } }, 0..max)
}

pub(crate) fn partition_op() -> impl Strategy<Value = PartitionOp> {
    #[rustfmt::skip]
    let ops = prop_oneof![
        arbitrary! { PartitionOp::SendMessages { messages: messages(6) } },
        arbitrary! { PartitionOp::StoreConsumerOffset { consumer: consumer(), offset: any::<u64>() } },
        arbitrary! { PartitionOp::DeleteConsumerOffset { consumer: consumer() } },
        arbitrary! { PartitionOp::SetGroupOwner { group_id: any::<u32>(), member_id: any::<u32>(), generation: any::<u64>() } },
        Just(PartitionOp::Purge).boxed(),
        arbitrary! { PartitionOp::DeleteSegments { count: any::<u32>() } },
    ];
    ops
}

pub(crate) fn partition_reply() -> impl Strategy<Value = PartitionReply> {
    prop_oneof![
        (any::<u64>(), any::<u64>()).prop_map(|(a, b)| PartitionReply::Appended {
            base_offset: a.min(b),
            last_offset: a.max(b),
        }),
        Just(PartitionReply::Ok),
        any::<u32>().prop_map(|count| PartitionReply::SegmentsDeleted { count }),
        Just(PartitionReply::EmptyBatch),
        Just(PartitionReply::BatchTooLarge),
        any::<u64>().prop_map(|next_offset| PartitionReply::OffsetBeyondLog { next_offset }),
        any::<u64>().prop_map(|current_generation| PartitionReply::StaleOwner { current_generation }),
        Just(PartitionReply::StaleGeneration),
    ]
}

pub(crate) fn polled_message() -> impl Strategy<Value = PolledMessage> {
    arbitrary! { PolledMessage { offset: any::<u64>(), timestamp_micros: any::<u64>(), id: any::<u128>(), payload: bytes(64) } }
}

/// A poll answer as a primary gives one: consecutive offsets below the next offset.
pub(crate) fn poll_reply() -> impl Strategy<Value = PollReply> {
    (0u64..1 << 40, prop::collection::vec(polled_message(), 0..5), 0u64..10).prop_map(|(first, messages, gap)| {
        let messages: Vec<PolledMessage> = messages
            .into_iter()
            .zip(first..)
            .map(|(message, offset)| PolledMessage { offset, ..message })
            .collect();
        PollReply {
            next_offset: first + messages.len() as u64 + gap,
            messages,
        }
    })
}

/// The ops a partition state is built from (small, so states stay small).
pub(crate) fn partition_history_op() -> impl Strategy<Value = PartitionOp> {
    prop_oneof![
        4 => messages(20).prop_map(|messages| PartitionOp::SendMessages { messages }),
        2 => ((0u32..3).prop_map(|consumer_id| Consumer::Single { consumer_id }), 0u64..40)
            .prop_map(|(consumer, offset)| PartitionOp::StoreConsumerOffset { consumer, offset }),
        1 => ((0u32..3), (0u32..3), (1u64..4)).prop_map(|(group_id, member_id, generation)| {
            PartitionOp::SetGroupOwner { group_id, member_id, generation }
        }),
        1 => ((0u32..3), (0u32..3), (0u64..4), 0u64..40).prop_map(|(group_id, member_id, generation, offset)| {
            PartitionOp::StoreConsumerOffset {
                consumer: Consumer::Group { group_id, member_id, generation },
                offset,
            }
        }),
        1 => Just(PartitionOp::Purge),
        1 => (0u32..3).prop_map(|count| PartitionOp::DeleteSegments { count }),
    ]
}

pub(crate) fn apply_partition_ops(state: &mut PartitionState, ops: &[PartitionOp]) {
    for (index, op) in ops.iter().enumerate() {
        let op_number = index as u64 + 1;
        let context = PartitionContext {
            timestamp_micros: 1_000_000 + op_number * 10_000,
            op_number,
        };
        state.apply(op, &context);
    }
}

/// A partition state reached by applying ops (retention, purges and segment deletions
/// included).
pub(crate) fn partition_state() -> impl Strategy<Value = PartitionState> {
    (prop::collection::vec(partition_history_op(), 0..12), 0u64..50_000).prop_map(|(ops, expiry)| {
        let mut state = PartitionState::new(expiry, OwnerFence::Enforced);
        apply_partition_ops(&mut state, &ops);
        state
    })
}

/// A state with several segments (a segment rolls every `SEGMENT_MESSAGES_MAX`
/// messages), built once per case from two full batches.
pub(crate) fn multi_segment_partition_state(payload: u8) -> PartitionState {
    let batch = |first: u128| PartitionOp::SendMessages {
        messages: (first..first + MESSAGES_PER_BATCH_MAX as u128)
            .map(|id| Message {
                id,
                payload: vec![payload; (id % 5) as usize],
            })
            .collect(),
    };
    let mut state = PartitionState::new(0, OwnerFence::Enforced);
    apply_partition_ops(
        &mut state,
        &[
            batch(0),
            batch(1_000),
            PartitionOp::StoreConsumerOffset {
                consumer: Consumer::Single { consumer_id: 1 },
                offset: 1_500,
            },
            PartitionOp::SetGroupOwner {
                group_id: 2,
                member_id: 3,
                generation: 4,
            },
        ],
    );
    assert!(state.log().segments().len() >= 2);
    state
}

pub(crate) fn decode_partition_state(bytes: &[u8]) -> Result<PartitionState, DecodeError> {
    PartitionState::decode_state(bytes, OwnerFence::Enforced)
}

/// The partition op codec.
const PARTITION_OPS: Codec<PartitionOp, DecodeError> = Codec {
    encode: PartitionOp::encode,
    decode: PartitionOp::decode,
};

/// The partition state's snapshot codec.
const PARTITION_STATES: Codec<PartitionState, DecodeError> = Codec {
    encode: PartitionState::encode_state,
    decode: decode_partition_state,
};

snapshot_properties! {
    PARTITION_STATES, partition_state();
    partition_states_round_trip_through_their_snapshot,
    random_bytes_never_panic_the_partition_snapshot_decoder,
    a_damaged_partition_snapshot_decodes_to_an_error_or_to_exactly_its_bytes,
}

codec_properties! {
    Codec { encode: PartitionReply::encode, decode: PartitionReply::decode }, partition_reply(), garbage: 32;
    partition_replies_round_trip_and_decode_canonically
}

codec_properties! {
    Codec { encode: PolledMessage::encode, decode: PolledMessage::decode }, polled_message(), garbage: 128;
    polled_messages_round_trip_and_decode_canonically
}

codec_properties! {
    Codec { encode: PollReply::encode, decode: PollReply::decode }, poll_reply(), garbage: 512;
    poll_replies_round_trip_and_decode_canonically
}

tagged_codec_properties! {
    PARTITION_OPS, partition_op(), garbage: 512, codes: 60u8..72;
    partition_ops_round_trip_through_their_encoding,
    random_bytes_never_panic_the_partition_op_decoder,
    a_damaged_partition_op_decodes_to_an_error_or_to_exactly_its_bytes,
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn partition_length_prefixes_beyond_their_bounds_are_refused_before_allocating(
        count in beyond(MESSAGES_PER_BATCH_MAX as u64),
        payload in beyond(PAYLOAD_BYTES_MAX as u64),
        polled in beyond(POLL_MESSAGES_MAX as u64),
        tail in bytes(16),
    ) {
        // MESSAGES_PER_BATCH_MAX bounds a batch's message list, PAYLOAD_BYTES_MAX one
        // payload, POLL_MESSAGES_MAX a poll answer's message list.
        let send = PartitionOp::SendMessages { messages: Vec::new() }.encode()[0];
        let claim = [&[send][..], &varint(count), &tail].concat();
        check_too_long(PartitionOp::decode(&claim), "message count")?;
        let claim = [&[send, 1][..], &[0; 16], &varint(payload), &tail].concat();
        check_too_long(PartitionOp::decode(&claim), "message payload")?;
        let claim = [&[0u8; 32][..], &varint(payload), &tail].concat();
        check_too_long(PolledMessage::decode(&claim), "message payload")?;
        let claim = [&[0u8; 8][..], &varint(polled), &tail].concat();
        check_too_long(PollReply::decode(&claim), "polled message count")?;
        // A count within its bound but with nothing behind it: truncated, and what was
        // reserved for it is bounded by MESSAGES_PER_BATCH_MAX.
        let claim = [&[send][..], &varint(MESSAGES_PER_BATCH_MAX as u64), &tail].concat();
        let decoded = PartitionOp::decode(&claim);
        prop_assert!(matches!(decoded, Err(DecodeError::Truncated { .. })), "{decoded:?}");
    }

    #[test]
    fn poll_requests_round_trip_and_decode_canonically(
        offset in any::<u64>(),
        count in any::<u32>(),
        damage in damage(),
        input in bytes(32),
    ) {
        let request = PollRequest { offset, count };
        let codec = Codec { encode: PollRequest::encode, decode: PollRequest::decode };
        codec.round_trips(&request)?;
        codec.damaged(&request, &[POLL_MESSAGES_CODE], &damage)?;
        codec.canonical(&input)?;
    }

    #[test]
    fn index_entries_decode_exactly_24_bytes_and_nothing_else(
        offset in any::<u64>(),
        position in any::<u64>(),
        timestamp_micros in any::<u64>(),
        input in bytes(64),
    ) {
        let entry = IndexEntry { offset, position, timestamp_micros };
        prop_assert_eq!(decode_index_entry(&encode_index_entry(&entry)), Ok(entry));
        match decode_index_entry(&input) {
            Ok(decoded) => prop_assert_eq!(&encode_index_entry(&decoded)[..], &input[..]),
            Err(_) => prop_assert_ne!(input.len(), INDEX_ENTRY_BYTES),
        }
    }

    #[test]
    fn partition_snapshot_counts_beyond_their_bounds_are_refused_before_allocating(
        segments in (1u64 << 24) + 1..=u64::MAX,
        messages in 1_001u64..=u64::MAX,
        payload in (512u64 * 1024 + 1)..=u64::MAX,
        tail in bytes(16),
    ) {
        // SNAPSHOT_SEGMENTS_MAX (1 << 24) segments, SEGMENT_MESSAGES_MAX (1,000) messages
        // per segment, BATCH_BYTES_MAX (512 KiB) per payload.
        let claim = [&[0u8; 16][..], &varint(segments), &tail].concat();
        check_too_long(decode_partition_state(&claim), "segment count")?;
        let claim = [&[0u8; 16][..], &[1], &[0; 8], &varint(messages), &tail].concat();
        check_too_long(decode_partition_state(&claim), "segment message count")?;
        let claim = [&[0u8; 16][..], &[1], &[0; 8], &[1], &[0; 32], &varint(payload), &tail].concat();
        check_too_long(decode_partition_state(&claim), "message payload")?;
    }
}

#[test]
pub(crate) fn a_damaged_multi_segment_snapshot_decodes_to_an_error_or_to_exactly_its_bytes() {
    // Each case builds, copies and damages a snapshot of two thousand messages.
    check_few(32, (any::<u8>(), damage()), |(payload, damage)| {
        let state = multi_segment_partition_state(payload);
        let bytes = state.encode_state();
        let decoded = decode_partition_state(&bytes);
        prop_assert_eq!(decoded.as_ref(), Ok(&state));
        let donor = multi_segment_partition_state(payload.wrapping_add(1)).encode_state();
        PARTITION_STATES.damaged(&state, &donor, &damage).map(|_| ())
    });
}
