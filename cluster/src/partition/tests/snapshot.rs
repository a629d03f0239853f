//! Tests of a partition's snapshot: encode_state, decode_state (every malformed shape refused), and a machine restored from one.

use super::*;

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
