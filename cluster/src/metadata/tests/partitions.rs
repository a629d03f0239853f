//! Tests of a topic's partitions: created with their groups, added, removed, and what deletion leaves.

use super::*;

impl Replica {
    fn create_partitions(&mut self, stream_id: u32, topic_id: u32, count: u32) -> MetadataReply {
        self.apply(MetadataOp::CreatePartitions {
            stream_id,
            topic_id,
            count,
        })
    }

    fn delete_partitions(&mut self, stream_id: u32, topic_id: u32, count: u32) -> MetadataReply {
        self.apply(MetadataOp::DeletePartitions {
            stream_id,
            topic_id,
            count,
        })
    }

    /// (id, group id, created in view) of every partition of a topic.
    fn partitions_of(&self, stream_id: u32, topic_id: u32) -> Vec<(u32, u64, u64)> {
        self.state
            .topic(stream_id, topic_id)
            .map(|topic| {
                topic
                    .partitions
                    .iter()
                    .map(|p| (p.id, p.group_id, p.created_in_view))
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[test]
fn a_topic_created_at_op_x_has_partition_groups_from_x_and_its_view() {
    let mut replica = Replica::new();
    let stream_id = replica.create_stream("s");
    replica.view = 3;
    assert_eq!(
        replica.create_topic(stream_id, "t", 3),
        MetadataReply::TopicCreated { topic_id: 0 }
    );
    let x = replica.op_number;
    assert_eq!(x, 2);
    assert_eq!(
        replica.partitions_of(stream_id, 0),
        vec![
            (0, partition_group_id(x, 0), 3),
            (1, partition_group_id(x, 1), 3),
            (2, partition_group_id(x, 2), 3),
        ]
    );
    assert_eq!(partition_group_id(x, 1), (2 << PARTITION_ID_BITS) | 1);
    assert_eq!(replica.state.partitions_changed_at(), x);
}

#[test]
fn create_partitions_appends_ids_with_group_ids_from_its_own_op() {
    let (mut replica, stream_id) = Replica::with_topic(2);
    let created_at = replica.op_number;
    replica.view = 7;
    assert_eq!(
        replica.create_partitions(stream_id, 0, 3),
        MetadataReply::PartitionsCreated { first_partition_id: 2 }
    );
    let y = replica.op_number;
    assert_eq!(
        replica.partitions_of(stream_id, 0),
        vec![
            (0, partition_group_id(created_at, 0), 0),
            (1, partition_group_id(created_at, 1), 0),
            (2, partition_group_id(y, 2), 7),
            (3, partition_group_id(y, 3), 7),
            (4, partition_group_id(y, 4), 7),
        ]
    );
    assert_eq!(replica.state.partition_count(), 5);
    assert_eq!(replica.state.partitions_changed_at(), y);
}

/// A partition-count op (`CreatePartitions` or `DeletePartitions`) on stream
/// `stream_id`'s topic 0 refuses, in the state machine's order: an absent stream, an
/// absent topic, a count of zero, `too_many` (a count past the topic's bounds, and
/// why), and `u32::MAX` (no overflow).
fn assert_partition_count_checked(
    mut op: impl FnMut(u32, u32, u32) -> MetadataReply,
    stream_id: u32,
    (too_many, why): (u32, &str),
) {
    assert_eq!(op(99, 0, 1), MetadataReply::StreamNotFound);
    assert_eq!(op(stream_id, 9, 1), MetadataReply::TopicNotFound);
    assert_eq!(op(stream_id, 0, 0), MetadataReply::InvalidPartitionCount, "none");
    assert_eq!(
        op(stream_id, 0, too_many),
        MetadataReply::InvalidPartitionCount,
        "{why}"
    );
    assert_eq!(
        op(stream_id, 0, u32::MAX),
        MetadataReply::InvalidPartitionCount,
        "no overflow"
    );
}

#[test]
fn create_partitions_checks_stream_topic_then_count_then_the_cluster_limit() {
    let (mut replica, stream_id) = Replica::with_topic(PARTITIONS_PER_TOPIC_MAX - 1);
    assert_partition_count_checked(
        |stream, topic, count| replica.create_partitions(stream, topic, count),
        stream_id,
        (2, "past PARTITIONS_PER_TOPIC_MAX"),
    );
    assert_eq!(
        replica.create_partitions(stream_id, 0, 1),
        MetadataReply::PartitionsCreated {
            first_partition_id: PARTITIONS_PER_TOPIC_MAX - 1
        }
    );
    // Fill the cluster, leaving one partition of room, then ask for two.
    let full_topics = PARTITIONS_TOTAL_MAX / u64::from(PARTITIONS_PER_TOPIC_MAX) - 1;
    for index in 0..full_topics - 1 {
        let reply = replica.create_topic(stream_id, &format!("full{index}"), PARTITIONS_PER_TOPIC_MAX);
        assert!(reply.is_ok(), "{reply:?}");
    }
    let filler = replica.create_topic(stream_id, "filler", PARTITIONS_PER_TOPIC_MAX - 2);
    assert!(filler.is_ok(), "{filler:?}");
    let MetadataReply::TopicCreated { topic_id: small } = replica.create_topic(stream_id, "small", 1) else {
        panic!("the small topic fits");
    };
    assert_eq!(replica.state.partition_count(), PARTITIONS_TOTAL_MAX - 1);
    assert_eq!(
        replica.create_partitions(stream_id, small, 2),
        MetadataReply::LimitReached {
            what: Limit::PartitionsTotal
        }
    );
    assert!(replica.create_partitions(stream_id, small, 1).is_ok());
}

#[test]
fn delete_partitions_removes_the_highest_and_keeps_at_least_one() {
    let (mut replica, stream_id) = Replica::with_topic(4);
    let created_at = replica.op_number;
    assert_partition_count_checked(
        |stream, topic, count| replica.delete_partitions(stream, topic, count),
        stream_id,
        (4, "a topic keeps at least one partition"),
    );
    assert_eq!(
        replica.state.partitions_changed_at(),
        created_at,
        "failed ops do not move it"
    );
    assert_eq!(replica.delete_partitions(stream_id, 0, 3), MetadataReply::Ok);
    let deleted_at = replica.op_number;
    assert_eq!(
        replica.partitions_of(stream_id, 0),
        vec![(0, partition_group_id(created_at, 0), 0)]
    );
    assert_eq!(replica.state.partitions_changed_at(), deleted_at);
    // Partition 1 again: the same id, a new incarnation with a new group.
    assert_eq!(
        replica.create_partitions(stream_id, 0, 1),
        MetadataReply::PartitionsCreated { first_partition_id: 1 }
    );
    let recreated = replica.partitions_of(stream_id, 0)[1];
    assert_eq!(recreated.0, 1);
    assert_ne!(recreated.1, partition_group_id(created_at, 1));
    assert_eq!(recreated.1, partition_group_id(replica.op_number, 1));
}

#[test]
fn partitions_changed_at_moves_only_when_partitions_come_or_go() {
    let mut replica = Replica::new();
    assert_eq!(replica.state.partitions_changed_at(), 0);
    let a = replica.create_stream("a");
    let b = replica.create_stream("b");
    assert_eq!(
        replica.state.partitions_changed_at(),
        0,
        "a new stream has no partitions"
    );
    replica.create_topic(a, "t", 1);
    replica.create_topic(a, "u", 2);
    replica.create_topic(b, "t", 1);
    let last_create = replica.op_number;
    assert_eq!(replica.state.partitions_changed_at(), last_create);

    // Failed ops and ops that touch no partition leave it.
    assert_eq!(replica.create_topic(a, "t", 1), MetadataReply::NameAlreadyExists);
    assert_eq!(replica.create_topic(a, "v", 0), MetadataReply::InvalidPartitionCount);
    assert_eq!(replica.create_partitions(a, 9, 1), MetadataReply::TopicNotFound);
    assert_eq!(replica.delete_partitions(a, 0, 1), MetadataReply::InvalidPartitionCount);
    assert_eq!(
        replica.apply(MetadataOp::DeleteTopic {
            stream_id: a,
            topic_id: 9
        }),
        MetadataReply::TopicNotFound
    );
    assert_eq!(
        replica.apply(MetadataOp::DeleteStream { stream_id: 99 }),
        MetadataReply::StreamNotFound
    );
    let empty = replica.create_stream("empty");
    assert_eq!(
        replica.apply(MetadataOp::DeleteStream { stream_id: empty }),
        MetadataReply::Ok
    );
    assert_eq!(replica.state.partitions_changed_at(), last_create);

    assert_eq!(
        replica.apply(MetadataOp::DeleteTopic {
            stream_id: a,
            topic_id: 1
        }),
        MetadataReply::Ok
    );
    assert_eq!(replica.state.partitions_changed_at(), replica.op_number);
    assert_eq!(replica.state.partition_count(), 2);
    assert_eq!(
        replica.apply(MetadataOp::DeleteStream { stream_id: b }),
        MetadataReply::Ok
    );
    assert_eq!(replica.state.partitions_changed_at(), replica.op_number);
    assert_eq!(replica.state.partition_count(), 1);
}

#[test]
fn partitions_iterate_in_stream_topic_and_partition_id_order() {
    let mut replica = Replica::new();
    let a = replica.create_stream("a");
    let b = replica.create_stream("b");
    replica.create_topic(b, "t", 1);
    replica.create_topic(a, "t", 2);
    replica.create_topic(a, "u", 1);
    let listed: Vec<(u32, u32, u32, String)> = replica
        .state
        .partitions()
        .map(|(stream_id, topic_id, topic, partition)| (stream_id, topic_id, partition.id, topic.name.clone()))
        .collect();
    assert_eq!(
        listed,
        vec![
            (a, 0, 0, "t".to_owned()),
            (a, 0, 1, "t".to_owned()),
            (a, 1, 0, "u".to_owned()),
            (b, 0, 0, "t".to_owned()),
        ]
    );
    assert_eq!(
        u64::try_from(listed.len()).expect("small"),
        replica.state.partition_count()
    );
}

#[test]
fn an_op_number_too_large_for_a_group_id_creates_no_partitions() {
    let (mut replica, stream_id) = Replica::with_topic(1);
    replica.op_number = PARTITION_GROUP_OP_LIMIT - 1;
    let before = replica.state.clone();
    assert_eq!(
        replica.create_topic(stream_id, "u", 1),
        MetadataReply::LimitReached { what: Limit::Ids }
    );
    assert_eq!(
        replica.create_partitions(stream_id, 0, 1),
        MetadataReply::LimitReached { what: Limit::Ids }
    );
    assert_eq!(
        replica.state.stream(stream_id).map(|s| s.next_topic_id),
        before.stream(stream_id).map(|s| s.next_topic_id),
        "a refused topic takes no id"
    );
    assert_eq!(replica.state.partitions_changed_at(), before.partitions_changed_at());
    assert_eq!(
        replica.delete_partitions(stream_id, 0, 1),
        MetadataReply::InvalidPartitionCount
    );
}

#[test]
fn the_machine_takes_the_view_and_op_from_the_prepare_header() {
    use crate::vsr::StateMachine;
    use crate::wire::{Command, Header};

    let mut machine = MetadataMachine::new(1, DEFAULT_ROOT_PASSWORD);
    let mut apply = |op: MetadataOp, op_number: u64, view: u64| {
        let mut header = Header::new(Command::Prepare);
        header.operation = op.operation_code();
        header.op = op_number;
        header.view = view;
        header.timestamp = op_number * 1_000;
        header.client = TEST_CLIENT;
        // Every op after the login (op 1) is sent in its session.
        header.context = u128::from(op_number > 1);
        MetadataReply::decode(&machine.apply(&header, &op.encode())).expect("a reply")
    };
    let login = MetadataOp::LoginUser {
        username: ROOT_USERNAME.into(),
        password: DEFAULT_ROOT_PASSWORD.into(),
    };
    assert_eq!(logged_in(&apply(login, 1, 2)), Some(ROOT_USER_ID));
    apply(MetadataOp::CreateStream { name: "s".into() }, 2, 2);
    let reply = apply(
        MetadataOp::CreateTopic {
            stream_id: 0,
            name: "t".into(),
            partitions: 2,
            durability: Durability::Replicated,
            message_expiry_micros: 0,
        },
        5,
        4,
    );
    assert_eq!(reply, MetadataReply::TopicCreated { topic_id: 0 });
    let partitions: Vec<(u32, u64, u64)> = machine
        .state()
        .partitions()
        .map(|(_, _, _, p)| (p.id, p.group_id, p.created_in_view))
        .collect();
    assert_eq!(
        partitions,
        vec![(0, partition_group_id(5, 0), 4), (1, partition_group_id(5, 1), 4)]
    );
    assert_eq!(machine.state().partitions_changed_at(), 5);
}
