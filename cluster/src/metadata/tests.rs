//! Behaviour of the metadata state machine, op by op, written as examples: each test
//! applies ops the way the metadata group would (increasing op numbers, a timestamp and
//! entropy per op) and checks the replies and the resulting state.

use std::collections::{BTreeMap, BTreeSet};

use super::*;

/// A state plus the op counter, view and clock a primary would supply.
/// The client id the test replica's ops come from.
const TEST_CLIENT: u128 = 0x7E57;

/// The user a reply says a login opened a session for.
fn logged_in(reply: &MetadataReply) -> Option<u32> {
    match reply {
        MetadataReply::LoggedIn { user_id, .. } => Some(*user_id),
        _ => None,
    }
}

struct Replica {
    state: MetadataState,
    op_number: u64,
    /// The view the next ops are prepared in; tests move it to see it recorded.
    view: u64,
    now_micros: u64,
    entropy_seed: u64,
}

impl Replica {
    fn new() -> Self {
        Self::with_entropy(0x5eed)
    }

    fn with_entropy(entropy_seed: u64) -> Self {
        Self {
            state: MetadataState::new("root-password", entropy_seed),
            op_number: 0,
            view: 0,
            now_micros: 1_000_000,
            entropy_seed,
        }
    }

    fn context(&mut self) -> ApplyContext {
        self.op_number += 1;
        self.now_micros += 1_000;
        ApplyContext {
            timestamp_micros: self.now_micros,
            op_number: self.op_number,
            view: self.view,
            entropy: self.entropy_seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ self.op_number,
            client: TEST_CLIENT,
            session: 0,
        }
    }

    fn apply(&mut self, op: MetadataOp) -> MetadataReply {
        let ctx = self.context();
        self.state.apply(&op, &ctx)
    }

    fn create_stream(&mut self, name: &str) -> u32 {
        match self.apply(MetadataOp::CreateStream { name: name.into() }) {
            MetadataReply::StreamCreated { stream_id } => stream_id,
            other => panic!("CreateStream {name}: {other:?}"),
        }
    }

    fn create_topic(&mut self, stream_id: u32, name: &str, partitions: u32) -> MetadataReply {
        self.apply(MetadataOp::CreateTopic {
            stream_id,
            name: name.into(),
            partitions,
            durability: Durability::Replicated,
            message_expiry_micros: 0,
        })
    }

    fn create_user(&mut self, username: &str, password: &str) -> u32 {
        let reply = self.apply(MetadataOp::CreateUser {
            username: username.into(),
            password: password.into(),
            active: true,
        });
        match reply {
            MetadataReply::UserCreated { user_id } => user_id,
            other => panic!("CreateUser {username}: {other:?}"),
        }
    }

    fn login(&mut self, username: &str, password: &str) -> MetadataReply {
        self.apply(MetadataOp::LoginUser {
            username: username.into(),
            password: password.into(),
        })
    }

    fn create_token(&mut self, user_id: u32, name: &str, expiry_micros: u64) -> String {
        let reply = self.apply(MetadataOp::CreatePersonalAccessToken {
            user_id,
            name: name.into(),
            expiry_micros,
        });
        match reply {
            MetadataReply::TokenCreated { token } => token,
            other => panic!("CreatePersonalAccessToken {name}: {other:?}"),
        }
    }
}

// ---- genesis ----

#[test]
fn genesis_holds_only_the_root_user_with_full_permissions() {
    let replica = Replica::new();
    let root = replica.state.user(ROOT_USER_ID).expect("root exists at genesis");
    assert_eq!(root.username, ROOT_USERNAME);
    assert!(root.active);
    assert_eq!(root.permissions, Permissions::full());
    assert!(replica.state.streams().is_empty());
    assert_eq!(replica.state.op_number_applied(), 0);
    assert_eq!(
        replica.state.summary(),
        "op=0 streams=0 topics=0 partitions=0 partitions_changed_at=0 groups=0 members=0 users=1 tokens=0"
    );
}

#[test]
fn root_logs_in_with_the_configured_password() {
    let mut replica = Replica::new();
    assert_eq!(logged_in(&replica.login("root", "root-password")), Some(ROOT_USER_ID));
    assert_eq!(replica.login("root", "guess"), MetadataReply::InvalidCredentials);
}

// ---- streams ----

#[test]
fn create_stream_then_the_same_name_again_is_name_already_exists() {
    let mut replica = Replica::new();
    assert_eq!(
        replica.apply(MetadataOp::CreateStream { name: "orders".into() }),
        MetadataReply::StreamCreated { stream_id: 0 }
    );
    assert_eq!(
        replica.apply(MetadataOp::CreateStream { name: "orders".into() }),
        MetadataReply::NameAlreadyExists
    );
    assert_eq!(
        replica.apply(MetadataOp::CreateStream { name: "Orders".into() }),
        MetadataReply::StreamCreated { stream_id: 1 },
        "names compare byte for byte"
    );
    let stream = replica.state.stream(0).expect("stream 0");
    assert_eq!(stream.name, "orders");
    assert_eq!(
        stream.created_at_micros, 1_001_000,
        "created at the first op's timestamp"
    );
}

#[test]
fn invalid_names_are_refused_everywhere() {
    let mut replica = Replica::new();
    let stream_id = replica.create_stream("s");
    for bad in ["", "new\nline", &"x".repeat(NAME_BYTES_MAX + 1)] {
        assert_eq!(
            replica.apply(MetadataOp::CreateStream { name: bad.into() }),
            MetadataReply::InvalidName
        );
        assert_eq!(replica.create_topic(stream_id, bad, 1), MetadataReply::InvalidName);
        let reply = replica.apply(MetadataOp::CreateUser {
            username: bad.into(),
            password: "pw".into(),
            active: true,
        });
        assert_eq!(reply, MetadataReply::InvalidName);
    }
    assert_eq!(replica.state.streams().len(), 1);
}

#[test]
fn update_stream_renames_but_not_onto_a_taken_name() {
    let mut replica = Replica::new();
    let a = replica.create_stream("a");
    replica.create_stream("b");
    let rename = |stream_id: u32, name: &str| MetadataOp::UpdateStream {
        stream_id,
        name: name.into(),
    };
    assert_eq!(replica.apply(rename(a, "b")), MetadataReply::NameAlreadyExists);
    assert_eq!(replica.apply(rename(a, "a")), MetadataReply::Ok, "its own name is fine");
    assert_eq!(replica.apply(rename(a, "c")), MetadataReply::Ok);
    assert_eq!(replica.state.stream(a).map(|s| s.name.as_str()), Some("c"));
    assert_eq!(replica.apply(rename(99, "d")), MetadataReply::StreamNotFound);
}

#[test]
fn delete_stream_of_a_missing_id_is_stream_not_found() {
    let mut replica = Replica::new();
    assert_eq!(
        replica.apply(MetadataOp::DeleteStream { stream_id: 7 }),
        MetadataReply::StreamNotFound
    );
}

#[test]
fn delete_stream_removes_its_topics_and_permissions_and_ids_are_not_reused() {
    let mut replica = Replica::new();
    let stream_id = replica.create_stream("s");
    replica.create_topic(stream_id, "t", 4);
    let user_id = replica.create_user("alice", "pw");
    let mut permissions = Permissions::default();
    permissions.streams.insert(stream_id, StreamPermissions::default());
    assert_eq!(
        replica.apply(MetadataOp::UpdatePermissions { user_id, permissions }),
        MetadataReply::Ok
    );
    assert_eq!(replica.apply(MetadataOp::DeleteStream { stream_id }), MetadataReply::Ok);
    assert_eq!(replica.state.partition_count(), 0);
    let alice = replica.state.user(user_id).expect("alice");
    assert!(alice.permissions.streams.is_empty());
    assert_eq!(replica.create_stream("s"), stream_id + 1);
}

// ---- topics ----

#[test]
fn create_topic_checks_partitions_stream_and_name_scope() {
    let mut replica = Replica::new();
    let s1 = replica.create_stream("s1");
    let s2 = replica.create_stream("s2");
    assert_eq!(replica.create_topic(s1, "t", 0), MetadataReply::InvalidPartitionCount);
    assert_eq!(
        replica.create_topic(s1, "t", PARTITIONS_PER_TOPIC_MAX + 1),
        MetadataReply::InvalidPartitionCount
    );
    assert_eq!(replica.create_topic(99, "t", 1), MetadataReply::StreamNotFound);
    assert_eq!(
        replica.create_topic(s1, "t", 3),
        MetadataReply::TopicCreated { topic_id: 0 }
    );
    assert_eq!(replica.create_topic(s1, "t", 3), MetadataReply::NameAlreadyExists);
    assert_eq!(
        replica.create_topic(s2, "t", 3),
        MetadataReply::TopicCreated { topic_id: 0 },
        "topic names and ids are per stream"
    );
    assert_eq!(replica.state.partition_count(), 6);
    let topic = replica.state.topic(s1, 0).expect("topic");
    assert_eq!((topic.partitions.len(), topic.durability), (3, Durability::Replicated));
}

#[test]
fn update_and_delete_topic() {
    let mut replica = Replica::new();
    let stream_id = replica.create_stream("s");
    replica.create_topic(stream_id, "a", 1);
    replica.create_topic(stream_id, "b", 1);
    let update = |topic_id: u32, name: &str| MetadataOp::UpdateTopic {
        stream_id,
        topic_id,
        name: name.into(),
        durability: Durability::Persisted,
        message_expiry_micros: 60_000_000,
    };
    assert_eq!(replica.apply(update(0, "b")), MetadataReply::NameAlreadyExists);
    assert_eq!(replica.apply(update(0, "a2")), MetadataReply::Ok);
    let topic = replica.state.topic(stream_id, 0).expect("topic 0");
    assert_eq!(topic.name, "a2");
    assert_eq!(topic.durability, Durability::Persisted);
    assert_eq!(topic.message_expiry_micros, 60_000_000);
    assert_eq!(replica.apply(update(9, "z")), MetadataReply::TopicNotFound);
    let delete = |topic_id: u32| MetadataOp::DeleteTopic { stream_id, topic_id };
    assert_eq!(replica.apply(delete(0)), MetadataReply::Ok);
    assert_eq!(replica.apply(delete(0)), MetadataReply::TopicNotFound);
    assert_eq!(
        replica.apply(MetadataOp::DeleteTopic {
            stream_id: 42,
            topic_id: 1
        }),
        MetadataReply::StreamNotFound
    );
}

// ---- partitions ----

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
    let mut replica = Replica::new();
    let stream_id = replica.create_stream("s");
    replica.create_topic(stream_id, "t", 2);
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

#[test]
fn create_partitions_checks_stream_topic_then_count_then_the_cluster_limit() {
    let mut replica = Replica::new();
    let stream_id = replica.create_stream("s");
    replica.create_topic(stream_id, "t", PARTITIONS_PER_TOPIC_MAX - 1);
    assert_eq!(replica.create_partitions(99, 0, 0), MetadataReply::StreamNotFound);
    assert_eq!(replica.create_partitions(stream_id, 9, 0), MetadataReply::TopicNotFound);
    assert_eq!(
        replica.create_partitions(stream_id, 0, 0),
        MetadataReply::InvalidPartitionCount
    );
    assert_eq!(
        replica.create_partitions(stream_id, 0, 2),
        MetadataReply::InvalidPartitionCount,
        "past PARTITIONS_PER_TOPIC_MAX"
    );
    assert_eq!(
        replica.create_partitions(stream_id, 0, u32::MAX),
        MetadataReply::InvalidPartitionCount,
        "no overflow"
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
    let mut replica = Replica::new();
    let stream_id = replica.create_stream("s");
    replica.create_topic(stream_id, "t", 4);
    let created_at = replica.op_number;
    assert_eq!(replica.delete_partitions(99, 0, 1), MetadataReply::StreamNotFound);
    assert_eq!(replica.delete_partitions(stream_id, 5, 1), MetadataReply::TopicNotFound);
    assert_eq!(
        replica.delete_partitions(stream_id, 0, 0),
        MetadataReply::InvalidPartitionCount
    );
    assert_eq!(
        replica.delete_partitions(stream_id, 0, 4),
        MetadataReply::InvalidPartitionCount,
        "a topic keeps at least one partition"
    );
    assert_eq!(
        replica.delete_partitions(stream_id, 0, u32::MAX),
        MetadataReply::InvalidPartitionCount
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
    let mut replica = Replica::new();
    let stream_id = replica.create_stream("s");
    replica.create_topic(stream_id, "t", 1);
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

// ---- consumer groups ----

#[test]
fn consumer_groups_are_named_per_topic_and_deleted_by_id() {
    let mut replica = Replica::new();
    let stream_id = replica.create_stream("s");
    replica.create_topic(stream_id, "t", 2);
    let create = |topic_id: u32, name: &str| MetadataOp::CreateConsumerGroup {
        stream_id,
        topic_id,
        name: name.into(),
    };
    assert_eq!(
        replica.apply(create(0, "g")),
        MetadataReply::GroupCreated { group_id: 0 }
    );
    assert_eq!(replica.apply(create(0, "g")), MetadataReply::NameAlreadyExists);
    assert_eq!(replica.apply(create(5, "g")), MetadataReply::TopicNotFound);
    let delete = |group_id: u32| MetadataOp::DeleteConsumerGroup {
        stream_id,
        topic_id: 0,
        group_id,
    };
    assert_eq!(replica.apply(delete(3)), MetadataReply::GroupNotFound);
    assert_eq!(replica.apply(delete(0)), MetadataReply::Ok);
    assert_eq!(
        replica.apply(create(0, "g")),
        MetadataReply::GroupCreated { group_id: 1 }
    );
}

// ---- consumer group membership ----

/// Joins member `member_id` to group 0 of topic 0 of `stream_id`.
fn join_group_0(stream_id: u32, member_id: u32) -> MetadataOp {
    MetadataOp::JoinConsumerGroup {
        stream_id,
        topic_id: 0,
        group_id: 0,
        member_id,
    }
}

/// Removes member `member_id` from group 0 of topic 0 of `stream_id`.
fn leave_group_0(stream_id: u32, member_id: u32) -> MetadataOp {
    MetadataOp::LeaveConsumerGroup {
        stream_id,
        topic_id: 0,
        group_id: 0,
        member_id,
    }
}

impl Replica {
    /// Stream "s" with topic "t" of `partitions` partitions and its group "g" (id 0);
    /// the stream's id.
    fn stream_with_group(&mut self, partitions: u32) -> u32 {
        let stream_id = self.create_stream("s");
        self.create_topic(stream_id, "t", partitions);
        self.apply(MetadataOp::CreateConsumerGroup {
            stream_id,
            topic_id: 0,
            name: "g".into(),
        });
        stream_id
    }
}

#[test]
fn join_and_leave_bump_the_generation_and_refuse_duplicates_and_strangers() {
    let mut replica = Replica::new();
    let stream_id = replica.stream_with_group(2);
    let join = |member_id: u32| join_group_0(stream_id, member_id);
    let leave = |member_id: u32| leave_group_0(stream_id, member_id);
    let group = |replica: &Replica| replica.state.topic(stream_id, 0).expect("topic").consumer_groups[&0].clone();
    assert_eq!(group(&replica).generation, 0);
    assert!(group(&replica).members.is_empty());

    assert_eq!(replica.apply(join(7)), MetadataReply::Joined { generation: 1 });
    assert_eq!(replica.apply(join(3)), MetadataReply::Joined { generation: 2 });
    assert_eq!(replica.apply(join(7)), MetadataReply::AlreadyMember);
    assert_eq!(replica.apply(leave(9)), MetadataReply::MemberNotFound);
    assert_eq!(group(&replica).generation, 2, "refused ops leave the generation");
    assert_eq!(group(&replica).members, BTreeSet::from([3, 7]));
    assert_eq!(replica.apply(leave(7)), MetadataReply::Left { generation: 3 });
    assert_eq!(replica.apply(leave(7)), MetadataReply::MemberNotFound);
    assert_eq!(replica.apply(join(7)), MetadataReply::Joined { generation: 4 });
    assert_eq!(group(&replica).members, BTreeSet::from([3, 7]));
    let partitions_changed_at = replica.state.partitions_changed_at();
    assert_ne!(
        partitions_changed_at, replica.op_number,
        "membership is not a partition change"
    );
}

#[test]
fn membership_ops_check_stream_topic_then_group() {
    let mut replica = Replica::new();
    let stream_id = replica.create_stream("s");
    replica.create_topic(stream_id, "t", 1);
    let join = |stream_id: u32, topic_id: u32, group_id: u32| MetadataOp::JoinConsumerGroup {
        stream_id,
        topic_id,
        group_id,
        member_id: 1,
    };
    let leave = |stream_id: u32, topic_id: u32, group_id: u32| MetadataOp::LeaveConsumerGroup {
        stream_id,
        topic_id,
        group_id,
        member_id: 1,
    };
    for op in [join, leave] {
        assert_eq!(replica.apply(op(9, 9, 9)), MetadataReply::StreamNotFound);
        assert_eq!(replica.apply(op(stream_id, 9, 9)), MetadataReply::TopicNotFound);
        assert_eq!(replica.apply(op(stream_id, 0, 9)), MetadataReply::GroupNotFound);
    }
}

#[test]
fn a_full_group_is_limit_reached_but_a_member_can_still_leave() {
    let mut replica = Replica::new();
    let stream_id = replica.stream_with_group(1);
    let join = |member_id: u32| join_group_0(stream_id, member_id);
    let members = u32::try_from(MEMBERS_PER_GROUP_MAX).expect("a small bound");
    for member_id in 0..members {
        assert!(replica.apply(join(member_id)).is_ok());
    }
    assert_eq!(
        replica.apply(join(members)),
        MetadataReply::LimitReached {
            what: Limit::MembersPerGroup
        }
    );
    assert_eq!(
        replica.apply(join(0)),
        MetadataReply::AlreadyMember,
        "checked before the limit"
    );
    assert_eq!(
        replica.apply(leave_group_0(stream_id, 0)),
        MetadataReply::Left {
            generation: u64::from(members) + 1
        }
    );
    assert!(replica.apply(join(members)).is_ok());
}

// ---- users ----

#[test]
fn create_user_checks_password_and_unique_username() {
    let mut replica = Replica::new();
    let create = |username: &str, password: &str| MetadataOp::CreateUser {
        username: username.into(),
        password: password.into(),
        active: true,
    };
    assert_eq!(replica.apply(create("alice", "")), MetadataReply::InvalidPassword);
    assert_eq!(
        replica.apply(create("alice", "pw")),
        MetadataReply::UserCreated { user_id: 1 }
    );
    assert_eq!(replica.apply(create("alice", "pw2")), MetadataReply::NameAlreadyExists);
    assert_eq!(replica.apply(create("root", "pw")), MetadataReply::NameAlreadyExists);
    let alice = replica.state.user(1).expect("alice");
    assert_eq!(
        alice.permissions,
        Permissions::default(),
        "new users hold no permissions"
    );
    assert_ne!(alice.password_hash, 0);
}

#[test]
fn update_user_renames_and_deactivates() {
    let mut replica = Replica::new();
    let user_id = replica.create_user("alice", "pw");
    replica.create_user("bob", "pw");
    let update = |username: Option<&str>, active: Option<bool>| MetadataOp::UpdateUser {
        user_id,
        username: username.map(str::to_owned),
        active,
    };
    assert_eq!(
        replica.apply(update(Some("bob"), None)),
        MetadataReply::NameAlreadyExists
    );
    assert_eq!(replica.apply(update(Some("alicia"), Some(false))), MetadataReply::Ok);
    assert_eq!(replica.login("alicia", "pw"), MetadataReply::UserInactive);
    assert_eq!(replica.login("alice", "pw"), MetadataReply::InvalidCredentials);
    assert_eq!(replica.apply(update(None, Some(true))), MetadataReply::Ok);
    assert_eq!(logged_in(&replica.login("alicia", "pw")), Some(user_id));
    assert_eq!(
        replica.apply(MetadataOp::UpdateUser {
            user_id: 77,
            username: None,
            active: None
        }),
        MetadataReply::UserNotFound
    );
}

#[test]
fn root_cannot_be_deleted_deactivated_or_have_its_permissions_changed() {
    let mut replica = Replica::new();
    let root = ROOT_USER_ID;
    assert_eq!(
        replica.apply(MetadataOp::DeleteUser { user_id: root }),
        MetadataReply::CannotModifyRoot
    );
    assert_eq!(
        replica.apply(MetadataOp::UpdateUser {
            user_id: root,
            username: None,
            active: Some(false)
        }),
        MetadataReply::CannotModifyRoot
    );
    assert_eq!(
        replica.apply(MetadataOp::UpdatePermissions {
            user_id: root,
            permissions: Permissions::default()
        }),
        MetadataReply::CannotModifyRoot
    );
    let root_user = replica.state.user(root).expect("root");
    assert!(root_user.active);
    assert_eq!(root_user.permissions, Permissions::full());
}

#[test]
fn delete_user_removes_the_user_and_its_tokens() {
    let mut replica = Replica::new();
    let user_id = replica.create_user("alice", "pw");
    let token = replica.create_token(user_id, "ci", 0);
    assert_eq!(replica.apply(MetadataOp::DeleteUser { user_id }), MetadataReply::Ok);
    assert_eq!(
        replica.apply(MetadataOp::DeleteUser { user_id }),
        MetadataReply::UserNotFound
    );
    assert_eq!(
        replica.apply(MetadataOp::LoginWithPersonalAccessToken { token }),
        MetadataReply::InvalidCredentials
    );
}

#[test]
fn change_password_with_a_wrong_current_password_is_invalid_credentials() {
    let mut replica = Replica::new();
    let user_id = replica.create_user("alice", "old");
    let change = |current: &str, new: &str| MetadataOp::ChangePassword {
        user_id,
        current_password: current.into(),
        new_password: new.into(),
    };
    assert_eq!(replica.apply(change("wrong", "new")), MetadataReply::InvalidCredentials);
    assert_eq!(replica.apply(change("old", "")), MetadataReply::InvalidPassword);
    let salt_before = replica.state.user(user_id).map(|u| u.salt);
    assert_eq!(replica.apply(change("old", "new")), MetadataReply::Ok);
    assert_ne!(
        replica.state.user(user_id).map(|u| u.salt),
        salt_before,
        "a new password gets a new salt"
    );
    assert_eq!(replica.login("alice", "old"), MetadataReply::InvalidCredentials);
    assert_eq!(logged_in(&replica.login("alice", "new")), Some(user_id));
    assert_eq!(
        replica.apply(MetadataOp::ChangePassword {
            user_id: 50,
            current_password: "x".into(),
            new_password: "y".into()
        }),
        MetadataReply::UserNotFound
    );
}

#[test]
fn login_does_not_reveal_which_usernames_exist() {
    let mut replica = Replica::new();
    replica.create_user("alice", "pw");
    assert_eq!(replica.login("nobody", "pw"), MetadataReply::InvalidCredentials);
    assert_eq!(replica.login("alice", "nope"), MetadataReply::InvalidCredentials);
}

#[test]
fn update_permissions_requires_existing_streams() {
    let mut replica = Replica::new();
    let user_id = replica.create_user("alice", "pw");
    let stream_id = replica.create_stream("s");
    let mut permissions = Permissions::default();
    permissions.global.read_streams = true;
    permissions.streams.insert(
        stream_id,
        StreamPermissions {
            manage_topics: false,
            read: true,
            write: true,
        },
    );
    let mut dangling = permissions.clone();
    dangling.streams.insert(stream_id + 10, StreamPermissions::default());
    assert_eq!(
        replica.apply(MetadataOp::UpdatePermissions {
            user_id,
            permissions: dangling
        }),
        MetadataReply::StreamNotFound
    );
    assert_eq!(
        replica.apply(MetadataOp::UpdatePermissions {
            user_id,
            permissions: permissions.clone()
        }),
        MetadataReply::Ok
    );
    assert_eq!(replica.state.user(user_id).map(|u| &u.permissions), Some(&permissions));
    assert_eq!(
        replica.apply(MetadataOp::UpdatePermissions {
            user_id: 9,
            permissions
        }),
        MetadataReply::UserNotFound
    );
}

// ---- personal access tokens ----

#[test]
fn a_token_is_valid_before_its_expiry_and_expired_from_it_on() {
    let mut replica = Replica::new();
    let user_id = replica.create_user("alice", "pw");
    let created_at = replica.now_micros + 1_000;
    let token = replica.create_token(user_id, "ci", 5_000);
    let stored = &replica.state.user(user_id).expect("alice").tokens["ci"];
    assert_eq!(stored.expires_at_micros, Some(created_at + 5_000));
    assert_ne!(stored.token_hash, 0);
    assert_eq!(token.len(), TOKEN_CHARS);

    let login = MetadataOp::LoginWithPersonalAccessToken { token: token.clone() };
    // Each op advances the clock by 1 ms; the token lives 5 ms.
    for _ in 0..4 {
        assert_eq!(logged_in(&replica.apply(login.clone())), Some(user_id));
    }
    assert_eq!(replica.now_micros, created_at + 4_000);
    assert_eq!(
        replica.apply(login.clone()),
        MetadataReply::TokenExpired,
        "at its expiry"
    );
    assert_eq!(replica.apply(login), MetadataReply::TokenExpired);
}

#[test]
fn a_token_with_zero_expiry_never_expires_and_can_be_deleted() {
    let mut replica = Replica::new();
    let user_id = replica.create_user("alice", "pw");
    let token = replica.create_token(user_id, "forever", 0);
    replica.now_micros = u64::MAX / 2;
    let login = MetadataOp::LoginWithPersonalAccessToken { token };
    assert_eq!(logged_in(&replica.apply(login.clone())), Some(user_id));
    let delete = MetadataOp::DeletePersonalAccessToken {
        user_id,
        name: "forever".into(),
    };
    assert_eq!(replica.apply(delete.clone()), MetadataReply::Ok);
    assert_eq!(replica.apply(delete), MetadataReply::TokenNotFound);
    assert_eq!(replica.apply(login), MetadataReply::InvalidCredentials);
}

#[test]
fn token_names_are_unique_per_user_and_inactive_users_cannot_use_tokens() {
    let mut replica = Replica::new();
    let alice = replica.create_user("alice", "pw");
    let bob = replica.create_user("bob", "pw");
    let token = replica.create_token(alice, "ci", 0);
    let again = MetadataOp::CreatePersonalAccessToken {
        user_id: alice,
        name: "ci".into(),
        expiry_micros: 0,
    };
    assert_eq!(replica.apply(again), MetadataReply::NameAlreadyExists);
    let bobs = replica.create_token(bob, "ci", 0);
    assert_ne!(token, bobs);
    let missing_user = MetadataOp::CreatePersonalAccessToken {
        user_id: 99,
        name: "ci".into(),
        expiry_micros: 0,
    };
    assert_eq!(replica.apply(missing_user), MetadataReply::UserNotFound);
    replica.apply(MetadataOp::UpdateUser {
        user_id: alice,
        username: None,
        active: Some(false),
    });
    assert_eq!(
        replica.apply(MetadataOp::LoginWithPersonalAccessToken { token }),
        MetadataReply::UserInactive
    );
}

// ---- limits ----

#[test]
fn the_stream_limit_is_reported_as_limit_reached() {
    let mut replica = Replica::new();
    for index in 0..STREAMS_MAX {
        replica.create_stream(&format!("s{index}"));
    }
    assert_eq!(
        replica.apply(MetadataOp::CreateStream {
            name: "one-more".into()
        }),
        MetadataReply::LimitReached { what: Limit::Streams }
    );
}

#[test]
fn the_cluster_wide_partition_limit_is_enforced() {
    let mut replica = Replica::new();
    let stream_id = replica.create_stream("s");
    let topics = PARTITIONS_TOTAL_MAX / u64::from(PARTITIONS_PER_TOPIC_MAX);
    for index in 0..topics {
        let reply = replica.create_topic(stream_id, &format!("t{index}"), PARTITIONS_PER_TOPIC_MAX);
        assert!(reply.is_ok(), "{reply:?}");
    }
    assert_eq!(replica.state.partition_count(), PARTITIONS_TOTAL_MAX);
    assert_eq!(
        replica.create_topic(stream_id, "last", 1),
        MetadataReply::LimitReached {
            what: Limit::PartitionsTotal
        }
    );
}

#[test]
fn token_and_group_limits_are_enforced() {
    let mut replica = Replica::new();
    let user_id = replica.create_user("alice", "pw");
    for index in 0..TOKENS_PER_USER_MAX {
        replica.create_token(user_id, &format!("t{index}"), 0);
    }
    let one_more = MetadataOp::CreatePersonalAccessToken {
        user_id,
        name: "extra".into(),
        expiry_micros: 0,
    };
    assert_eq!(
        replica.apply(one_more),
        MetadataReply::LimitReached {
            what: Limit::TokensPerUser
        }
    );
    let stream_id = replica.create_stream("s");
    replica.create_topic(stream_id, "t", 1);
    let group = |name: String| MetadataOp::CreateConsumerGroup {
        stream_id,
        topic_id: 0,
        name,
    };
    for index in 0..CONSUMER_GROUPS_PER_TOPIC_MAX {
        assert!(replica.apply(group(format!("g{index}"))).is_ok());
    }
    assert_eq!(
        replica.apply(group("extra".into())),
        MetadataReply::LimitReached {
            what: Limit::ConsumerGroupsPerTopic
        }
    );
}

#[test]
fn an_exhausted_id_counter_is_limit_reached_and_never_wraps() {
    let mut replica = Replica::new();
    replica.state.next_stream_id = u32::MAX - 1;
    assert_eq!(replica.create_stream("last"), u32::MAX - 1);
    assert_eq!(
        replica.apply(MetadataOp::CreateStream { name: "wraps".into() }),
        MetadataReply::LimitReached { what: Limit::Ids }
    );
    assert_eq!(replica.state.next_stream_id, u32::MAX, "a failed op leaves the counter");
}

// ---- determinism and digests ----

fn a_busy_history() -> Vec<MetadataOp> {
    let mut permissions = Permissions::default();
    permissions.streams.insert(0, StreamPermissions::default());
    vec![
        MetadataOp::CreateStream { name: "orders".into() },
        MetadataOp::CreateTopic {
            stream_id: 0,
            name: "eu".into(),
            partitions: 8,
            durability: Durability::Persisted,
            message_expiry_micros: 0,
        },
        MetadataOp::CreateConsumerGroup {
            stream_id: 0,
            topic_id: 0,
            name: "billing".into(),
        },
        MetadataOp::CreateUser {
            username: "alice".into(),
            password: "pw".into(),
            active: true,
        },
        MetadataOp::UpdatePermissions {
            user_id: 1,
            permissions,
        },
        MetadataOp::CreatePersonalAccessToken {
            user_id: 1,
            name: "ci".into(),
            expiry_micros: 10_000,
        },
        MetadataOp::CreateStream { name: "orders".into() },
        MetadataOp::LoginUser {
            username: "alice".into(),
            password: "pw".into(),
        },
        MetadataOp::JoinConsumerGroup {
            stream_id: 0,
            topic_id: 0,
            group_id: 0,
            member_id: 42,
        },
        MetadataOp::CreatePartitions {
            stream_id: 0,
            topic_id: 0,
            count: 2,
        },
    ]
}

#[test]
fn two_replicas_fed_the_same_ops_and_contexts_have_equal_digests() {
    let mut a = Replica::new();
    let mut b = Replica::new();
    for op in a_busy_history() {
        let reply_a = a.apply(op.clone());
        let reply_b = b.apply(op);
        assert_eq!(reply_a, reply_b);
        assert_eq!(a.state.digest(), b.state.digest());
    }
    assert_eq!(a.state, b.state);
    assert_eq!(
        a.state.summary(),
        "op=10 streams=1 topics=1 partitions=10 partitions_changed_at=10 groups=1 members=1 users=2 tokens=1"
    );
}

#[test]
fn different_entropy_gives_a_different_password_hash_and_token() {
    let mut a = Replica::with_entropy(1);
    let mut b = Replica::with_entropy(2);
    let alice_a = a.create_user("alice", "same password");
    let alice_b = b.create_user("alice", "same password");
    let (user_a, user_b) = (a.state.user(alice_a), b.state.user(alice_b));
    assert_ne!(user_a.map(|u| u.password_hash), user_b.map(|u| u.password_hash));
    assert_ne!(user_a.map(|u| u.salt), user_b.map(|u| u.salt));
    assert_ne!(a.create_token(alice_a, "ci", 0), b.create_token(alice_b, "ci", 0));
    assert_ne!(a.state.digest(), b.state.digest());
    // Both still verify their own password.
    assert!(a.login("alice", "same password").is_ok());
    assert!(b.login("alice", "same password").is_ok());
}

#[test]
fn a_failed_op_changes_nothing_but_the_applied_op_number() {
    let mut replica = Replica::new();
    replica.create_stream("s");
    let before = replica.state.clone();
    assert_eq!(
        replica.apply(MetadataOp::CreateStream { name: "s".into() }),
        MetadataReply::NameAlreadyExists
    );
    assert_eq!(replica.state.op_number_applied(), before.op_number_applied() + 1);
    replica.state.op_number_applied = before.op_number_applied;
    assert_eq!(replica.state, before);
}

#[test]
fn every_applied_op_moves_the_digest() {
    let mut replica = Replica::new();
    let mut digests = BTreeSet::from([replica.state.digest()]);
    for op in a_busy_history() {
        replica.apply(op);
        assert!(digests.insert(replica.state.digest()), "the op number alone changes it");
    }
}

#[test]
#[should_panic(expected = "applied after op")]
fn applying_an_op_number_twice_is_a_bug() {
    let mut state = MetadataState::new("pw", 0);
    let ctx = ApplyContext {
        timestamp_micros: 1,
        op_number: 1,
        view: 0,
        entropy: 0,
        client: TEST_CLIENT,
        session: 0,
    };
    state.apply(&MetadataOp::CreateStream { name: "a".into() }, &ctx);
    state.apply(&MetadataOp::CreateStream { name: "b".into() }, &ctx);
}

// ---- snapshot ----

#[test]
fn the_state_round_trips_through_its_canonical_encoding() {
    let mut replica = Replica::new();
    for op in a_busy_history() {
        replica.apply(op);
    }
    let bytes = replica.state.encode_state();
    let decoded = MetadataState::decode_state(&bytes).expect("a state's own bytes decode");
    assert_eq!(decoded, replica.state);
    assert_eq!(decoded.digest(), replica.state.digest());
    let genesis = MetadataState::new("pw", 1);
    assert_eq!(MetadataState::decode_state(&genesis.encode_state()), Ok(genesis));
}

#[test]
fn truncated_or_damaged_snapshots_are_rejected() {
    let mut replica = Replica::new();
    for op in a_busy_history() {
        replica.apply(op);
    }
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
    let mut replica = Replica::new();
    for op in a_busy_history() {
        replica.apply(op);
    }
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

    let mut future = replica.state.clone();
    future.partitions_changed_at = future.op_number_applied + 1;
    assert_eq!(invalid(&future), "partitions changed at an op not yet applied");

    let mut stale = replica.state.clone();
    stale.partitions_changed_at -= 1;
    assert_eq!(invalid(&stale), "a partition was created after partitions last changed");

    let mut misnumbered = replica.state.clone();
    topic(&mut misnumbered).partitions[1].group_id = partition_group_id(2, 5);
    assert_eq!(
        invalid(&misnumbered),
        "a partition group id does not end in the partition id"
    );

    let mut unapplied = replica.state.clone();
    let last = unapplied.op_number_applied + 1;
    topic(&mut unapplied).partitions[0].group_id = partition_group_id(last, 0);
    assert_eq!(invalid(&unapplied), "a partition group id names an op not applied");

    let mut out_of_order = replica.state.clone();
    topic(&mut out_of_order).partitions[0].group_id = partition_group_id(9, 0);
    assert_eq!(
        invalid(&out_of_order),
        "a partition was created before a lower-numbered one"
    );

    let mut shared = replica.state.clone();
    let copy = topic(&mut shared).clone();
    let stream = shared.streams.get_mut(&0).expect("stream 0");
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
    assert_eq!(invalid(&shared), "two partitions share a group id");

    let mut empty = replica.state.clone();
    topic(&mut empty).partitions.clear();
    assert_eq!(invalid(&empty), "a topic has no partitions");

    let mut crowd = replica.state.clone();
    let group = topic(&mut crowd).consumer_groups.get_mut(&0).expect("group 0");
    group.members.insert(43);
    assert_eq!(
        invalid(&crowd),
        "a consumer group's generation does not fit its members and the op number"
    );
    let mut ancient = replica.state.clone();
    let beyond = ancient.op_number_applied + 1;
    let group = topic(&mut ancient).consumer_groups.get_mut(&0).expect("group 0");
    group.generation = beyond;
    assert_eq!(
        invalid(&ancient),
        "a consumer group's generation does not fit its members and the op number"
    );
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

// ---- sessions and authorisation ----

/// Apply `op` as sent by `client` in its current session, authorised (as the state
/// machine does).
fn apply_as(replica: &mut Replica, client: u128, op: MetadataOp) -> MetadataReply {
    let session = replica.state.sessions().get(client).map_or(0, |session| session.id);
    apply_in(replica, client, session, op)
}

/// Apply `op` as sent by `client` in `session`, authorised.
fn apply_in(replica: &mut Replica, client: u128, session: u64, op: MetadataOp) -> MetadataReply {
    let mut ctx = replica.context();
    ctx.client = client;
    ctx.session = session;
    replica.state.apply_request(&op, &ctx)
}

fn login(username: &str, password: &str) -> MetadataOp {
    MetadataOp::LoginUser {
        username: username.into(),
        password: password.into(),
    }
}

#[test]
fn a_client_without_a_session_is_unauthenticated_and_changes_nothing() {
    let mut replica = Replica::new();
    let before = replica.state.digest();
    let reply = apply_as(&mut replica, 42, MetadataOp::CreateStream { name: "s".into() });
    assert_eq!(reply, MetadataReply::Unauthenticated);
    let after = replica.state.clone();
    assert!(after.streams().is_empty());
    assert_ne!(after.digest(), before, "only the applied op number moved");
}

#[test]
fn a_login_opens_a_session_for_its_client_and_a_second_login_replaces_it() {
    let mut replica = Replica::new();
    let reply = apply_as(&mut replica, 42, login(ROOT_USERNAME, "root-password"));
    let MetadataReply::LoggedIn {
        user_id,
        session,
        secret,
    } = reply
    else {
        panic!("root logs in: {reply:?}");
    };
    assert_eq!(user_id, ROOT_USER_ID);
    let opened = *replica.state.sessions().get(42).expect("a session for client 42");
    assert_eq!(
        (opened.id, opened.secret, opened.user_id),
        (session, secret, ROOT_USER_ID)
    );
    assert!(replica.state.sessions().get(43).is_none(), "only the sender's");
    // A failed login leaves the session as it was.
    assert_eq!(
        apply_as(&mut replica, 42, login(ROOT_USERNAME, "guess")),
        MetadataReply::InvalidCredentials
    );
    assert_eq!(replica.state.sessions().get(42).map(|s| s.id), Some(session));
    assert!(matches!(
        apply_as(&mut replica, 42, MetadataOp::CreateStream { name: "s".into() }),
        MetadataReply::StreamCreated { .. }
    ));
    // An op sent in another session (an older one, delayed) is not the client's now.
    assert_eq!(
        apply_in(
            &mut replica,
            42,
            session + 1,
            MetadataOp::CreateStream { name: "t".into() }
        ),
        MetadataReply::Unauthenticated
    );
    // Sessions survive a snapshot round trip.
    let decoded = MetadataState::decode_state(&replica.state.encode_state()).expect("decodes");
    assert_eq!(decoded, replica.state);
}

#[test]
fn a_users_permissions_decide_what_its_session_may_do() {
    let mut replica = Replica::new();
    apply_as(&mut replica, 42, login(ROOT_USERNAME, "root-password"));
    let stream_id = match apply_as(&mut replica, 42, MetadataOp::CreateStream { name: "s".into() }) {
        MetadataReply::StreamCreated { stream_id } => stream_id,
        other => panic!("{other:?}"),
    };
    let user_id = match apply_as(
        &mut replica,
        42,
        MetadataOp::CreateUser {
            username: "bob".into(),
            password: "pw".into(),
            active: true,
        },
    ) {
        MetadataReply::UserCreated { user_id } => user_id,
        other => panic!("{other:?}"),
    };
    // Client 7 logs in as bob, who may do nothing yet but manage his own credentials.
    assert_eq!(logged_in(&apply_as(&mut replica, 7, login("bob", "pw"))), Some(user_id));
    let topic = || MetadataOp::CreateTopic {
        stream_id,
        name: "t".into(),
        partitions: 1,
        durability: Durability::Replicated,
        message_expiry_micros: 0,
    };
    assert_eq!(apply_as(&mut replica, 7, topic()), MetadataReply::PermissionDenied);
    assert_eq!(
        apply_as(&mut replica, 7, MetadataOp::DeleteUser { user_id: ROOT_USER_ID }),
        MetadataReply::PermissionDenied
    );
    let own_password = MetadataOp::ChangePassword {
        user_id,
        current_password: "pw".into(),
        new_password: "pw2".into(),
    };
    assert_eq!(apply_as(&mut replica, 7, own_password), MetadataReply::Ok);
    // Root grants bob the stream's topics: now he may.
    let mut permissions = Permissions::default();
    permissions.streams.insert(
        stream_id,
        StreamPermissions {
            manage_topics: true,
            ..Default::default()
        },
    );
    assert_eq!(
        apply_as(&mut replica, 42, MetadataOp::UpdatePermissions { user_id, permissions }),
        MetadataReply::Ok
    );
    assert_eq!(
        apply_as(&mut replica, 7, topic()),
        MetadataReply::TopicCreated { topic_id: 0 }
    );
    // Deactivated: his session authorises nothing any more.
    assert_eq!(
        apply_as(
            &mut replica,
            42,
            MetadataOp::UpdateUser {
                user_id,
                username: None,
                active: Some(false),
            }
        ),
        MetadataReply::Ok
    );
    assert_eq!(
        apply_as(&mut replica, 7, MetadataOp::DeleteTopic { stream_id, topic_id: 0 }),
        MetadataReply::Unauthenticated
    );
}
