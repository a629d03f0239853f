//! Tests of the metadata snapshot and of a machine restored from one.

use super::*;

/// A replica that applied [`a_busy_history`], op by op.
fn a_busy_replica() -> Replica {
    let mut replica = Replica::new();
    for op in a_busy_history() {
        replica.apply(op);
    }
    replica
}

#[test]
fn the_state_round_trips_through_its_canonical_encoding() {
    let replica = a_busy_replica();
    let bytes = replica.state.encode_state();
    let decoded = MetadataState::decode_state(&bytes).expect("a state's own bytes decode");
    assert_eq!(decoded, replica.state);
    assert_eq!(decoded.digest(), replica.state.digest());
    let genesis = MetadataState::new("pw", 1);
    assert_eq!(MetadataState::decode_state(&genesis.encode_state()), Ok(genesis));
}

#[test]
fn truncated_or_damaged_snapshots_are_rejected() {
    let replica = a_busy_replica();
    let bytes = replica.state.encode_state();
    for len in 0..bytes.len() {
        assert!(MetadataState::decode_state(&bytes[..len]).is_err(), "cut at {len}");
    }
    // Flip every byte in turn: either rejected, or (e.g. inside a hash or timestamp)
    // decoded into a different but valid state that re-encodes to the flipped bytes.
    for index in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[index] ^= 0xff;
        if let Ok(state) = MetadataState::decode_state(&damaged) {
            assert_eq!(state.encode_state(), damaged);
        }
    }
    // A second stream with the first one's name breaks uniqueness.
    let mut twins = replica.state.clone();
    let mut copy = twins.streams[&0].clone();
    copy.id = 1;
    copy.topics.clear();
    twins.streams.insert(1, copy);
    twins.next_stream_id = 2;
    assert_eq!(
        MetadataState::decode_state(&twins.encode_state()),
        Err(DecodeError::InvalidState {
            what: "a name appears twice in one scope"
        })
    );
    // Root must survive.
    let mut rootless = replica.state.clone();
    rootless.users.remove(&ROOT_USER_ID);
    assert!(matches!(
        MetadataState::decode_state(&rootless.encode_state()),
        Err(DecodeError::InvalidState { .. })
    ));
}

#[test]
fn snapshots_with_impossible_partitions_or_memberships_are_rejected() {
    let replica = a_busy_replica();
    let invalid = |state: &MetadataState| match MetadataState::decode_state(&state.encode_state()) {
        Err(DecodeError::InvalidState { what }) => what,
        other => panic!("decoded {other:?}"),
    };
    fn topic(state: &mut MetadataState) -> &mut Topic {
        state
            .streams
            .get_mut(&0)
            .and_then(|s| s.topics.get_mut(&0))
            .expect("topic 0 of stream 0")
    }

    // Each damage to a valid state, and what decoding it must refuse it with.
    type Damage = fn(&mut MetadataState);
    let damages: [(Damage, &str); 9] = [
        (
            |state| state.partitions_changed_at = state.op_number_applied + 1,
            "partitions changed at an op not yet applied",
        ),
        (
            |state| state.partitions_changed_at -= 1,
            "a partition was created after partitions last changed",
        ),
        (
            |state| topic(state).partitions[1].group_id = partition_group_id(2, 5),
            "a partition group id does not end in the partition id",
        ),
        (
            |state| {
                let last = state.op_number_applied + 1;
                topic(state).partitions[0].group_id = partition_group_id(last, 0);
            },
            "a partition group id names an op not applied",
        ),
        (
            |state| topic(state).partitions[0].group_id = partition_group_id(9, 0),
            "a partition was created before a lower-numbered one",
        ),
        (
            |state| {
                let copy = topic(state).clone();
                let stream = state.streams.get_mut(&0).expect("stream 0");
                stream.topics.insert(
                    1,
                    Topic {
                        id: 1,
                        name: "copy".into(),
                        consumer_groups: BTreeMap::new(),
                        ..copy
                    },
                );
                stream.next_topic_id = 2;
            },
            "two partitions share a group id",
        ),
        (|state| topic(state).partitions.clear(), "a topic has no partitions"),
        (
            |state| {
                let group = topic(state).consumer_groups.get_mut(&0).expect("group 0");
                group.members.insert(43);
            },
            "a consumer group's generation does not fit its members and the op number",
        ),
        (
            |state| {
                let beyond = state.op_number_applied + 1;
                let group = topic(state).consumer_groups.get_mut(&0).expect("group 0");
                group.generation = beyond;
            },
            "a consumer group's generation does not fit its members and the op number",
        ),
    ];
    for (damage, refusal) in damages {
        let mut state = replica.state.clone();
        damage(&mut state);
        assert_eq!(invalid(&state), refusal);
    }
}

// ---- restoring the machine from a snapshot ----

/// A machine that applied [`a_busy_history`] through prepare headers, as a replica does.
fn a_busy_machine() -> MetadataMachine {
    use crate::vsr::StateMachine;
    use crate::wire::{Command, Header};

    let mut machine = MetadataMachine::new(1, DEFAULT_ROOT_PASSWORD);
    for (i, op) in a_busy_history().into_iter().enumerate() {
        let mut header = Header::new(Command::Prepare);
        header.operation = op.operation_code();
        header.op = i as u64 + 1;
        header.timestamp = (i as u64 + 1) * 1_000;
        header.nonce = 0x5eed + i as u64;
        machine.apply(&header, &op.encode());
    }
    machine
}

#[test]
fn a_machine_restored_from_a_snapshot_has_the_same_state_and_digest() {
    use crate::vsr::StateMachine;

    let original = a_busy_machine();
    let mut restored = MetadataMachine::new(2, "another-password");
    assert_eq!(restored.restore(&original.snapshot()), Ok(()));
    assert_eq!(restored.state(), original.state());
    assert_eq!(restored.digest(), original.digest());
    assert_eq!(restored.snapshot(), original.snapshot());
}

#[test]
fn restoring_bytes_that_are_not_a_snapshot_leaves_the_machine_unchanged() {
    use crate::vsr::StateMachine;

    let mut machine = a_busy_machine();
    let before = machine.state().clone();
    let snapshot = machine.snapshot();
    let mut padded = snapshot.clone();
    padded.push(0);
    let mut flipped = snapshot.clone();
    // The stream count (one): the bytes after it no longer line up.
    flipped[24] ^= 0x01;
    for bytes in [
        Vec::new(),
        snapshot[..snapshot.len() - 1].to_vec(),
        padded,
        flipped,
        vec![0xff; 64],
    ] {
        assert!(machine.restore(&bytes).is_err(), "{bytes:?} restored");
        assert_eq!(machine.state(), &before);
    }
}
