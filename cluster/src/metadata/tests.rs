//! Behaviour of the metadata state machine, op by op, written as examples: each test
//! applies ops the way the metadata group would (increasing op numbers, a timestamp and
//! entropy per op) and checks the replies and the resulting state.

use std::collections::{BTreeMap, BTreeSet};

use super::*;

mod partitions;
mod snapshot;
mod users;

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

    /// A fresh replica with stream "s" holding topic "t" of `partitions` partitions (ops
    /// 1 and 2); returns it and the stream's id.
    fn with_topic(partitions: u32) -> (Self, u32) {
        let mut replica = Self::new();
        let stream_id = replica.create_stream("s");
        replica.create_topic(stream_id, "t", partitions);
        (replica, stream_id)
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
    let (mut replica, stream_id) = Replica::with_topic(4);
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

// ---- consumer groups ----

#[test]
fn consumer_groups_are_named_per_topic_and_deleted_by_id() {
    let (mut replica, stream_id) = Replica::with_topic(2);
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
    let (mut replica, stream_id) = Replica::with_topic(1);
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
