//! A node's routing and reconciliation, driven by hand (no bus): frames in, frames and
//! router hops out.

use super::*;
use crate::metadata::{DEFAULT_ROOT_PASSWORD, Durability, MetadataOp};
use crate::seam::ProcessId;
use crate::wire::{self, Command, Header};

use std::cell::RefCell;
use std::rc::Rc;

const CLUSTER: u64 = 0xC1;

fn config(shards: u8) -> NodeConfig {
    NodeConfig {
        cluster: CLUSTER,
        replica: 0,
        replicas: 1,
        shards,
        entropy_seed: 7,
        root_password: DEFAULT_ROOT_PASSWORD.to_owned(),
        owner_fence: OwnerFence::Enforced,
        journal: Default::default(),
        storage_break: Default::default(),
        buggify: Default::default(),
    }
}

thread_local! {
    /// The session the test client sends in (set by its logins).
    static SESSION: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn request(group: u64, request: u64, operation: u8, body: &[u8]) -> Vec<u8> {
    let mut header = Header::new(Command::Request);
    header.context = u128::from(SESSION.with(std::cell::Cell::get));
    header.cluster = CLUSTER;
    header.group = group;
    header.client = 0x5EED;
    header.request = request;
    header.operation = operation;
    wire::seal_header(header, body)
}

/// Log client 0x5EED in as root (request 1) from `ProcessId(9)` and bind that sender to
/// the session on `shard` (shard 0 of a one-replica node): what every test client does
/// before its first request.
fn log_in<P: StoreProvider>(shard: &Rc<RefCell<Shard<P>>>) -> (u64, u128) {
    let login = MetadataOp::LoginUser {
        username: crate::metadata::ROOT_USERNAME.into(),
        password: DEFAULT_ROOT_PASSWORD.into(),
    };
    shard.borrow_mut().on_frame(
        ProcessId(9),
        request(METADATA_GROUP, 1, login.operation_code(), &login.encode()),
        0,
    );
    let (outgoing, _) = shard.borrow_mut().drain();
    let (session, secret) = outgoing
        .iter()
        .find_map(|out| {
            let (_, body) = wire::open(&out.frame).ok()?;
            match crate::metadata::MetadataReply::decode(body).ok()? {
                crate::metadata::MetadataReply::LoggedIn { session, secret, .. } => Some((session, secret)),
                _ => None,
            }
        })
        .expect("root logs in");
    SESSION.with(|current| current.set(session));
    let bind = bind_frame(1, session, secret);
    shard.borrow_mut().on_frame(ProcessId(9), bind, 0);
    let (outgoing, _) = shard.borrow_mut().drain();
    assert_eq!(
        bind_answer(&outgoing),
        crate::metadata::MetadataReply::SessionBound { user_id: 0 }
    );
    (session, secret)
}

/// Hand `frame` from `from` to the shard (at 3,000 us) and take what it sent.
fn answers<P: StoreProvider>(
    shard: &Rc<RefCell<Shard<P>>>,
    from: ProcessId,
    frame: Vec<u8>,
) -> Vec<crate::vsr::replica::Outgoing> {
    shard.borrow_mut().on_frame(from, frame, 3_000);
    shard.borrow_mut().drain().0
}

/// Send one message to `group` as request `request_number` from `from`: the shard
/// replies that it was prepared and committed as the group's op 1 (`why` says what
/// the test expects to have allowed it).
#[track_caller]
fn assert_first_send_committed<P: StoreProvider>(
    shard: &Rc<RefCell<Shard<P>>>,
    from: ProcessId,
    group: u64,
    request_number: u64,
    why: &str,
) {
    let outgoing = answers(shard, from, send_one(group, request_number));
    let (reply, _) = wire::open(&outgoing[0].frame).expect("a sealed frame");
    assert_eq!((reply.command, reply.op), (Command::Reply, 1), "{why}");
}

/// A node of `shards` shards on `stores`, its shard 0, and client 0x5EED logged in as
/// root on it (request 1).
fn logged_in_node(shards: u8, stores: MemoryStores) -> (Node<MemoryStores>, Rc<RefCell<Shard<MemoryStores>>>) {
    let node = Node::open(&config(shards), stores, 0);
    let shard0 = node.shards()[0].clone();
    log_in(&shard0);
    (node, shard0)
}

fn bind_frame(request_number: u64, session: u64, secret: u128) -> Vec<u8> {
    let body = crate::metadata::BindSession { session, secret }.encode();
    request(
        METADATA_GROUP,
        request_number,
        crate::metadata::BIND_SESSION_CODE,
        &body,
    )
}

fn bind_answer(outgoing: &[crate::vsr::replica::Outgoing]) -> crate::metadata::MetadataReply {
    assert_eq!(outgoing.len(), 1, "one answer to a bind");
    let (header, body) = wire::open(&outgoing[0].frame).expect("a sealed frame");
    assert_eq!(
        (header.command, header.operation),
        (Command::Reply, crate::metadata::BIND_SESSION_CODE)
    );
    crate::metadata::MetadataReply::decode(body).expect("a metadata reply")
}

fn refusal(outgoing: &[crate::vsr::replica::Outgoing]) -> Option<crate::vsr::ClientError> {
    assert_eq!(outgoing.len(), 1, "one answer");
    let (header, body) = wire::open(&outgoing[0].frame).expect("a sealed frame");
    assert_eq!(header.command, Command::Refused);
    crate::vsr::ClientError::decode(body)
}

/// Request numbers of the two ops: 2 and 3 (the login is 1).
fn create_topic(request_number: u64, partitions: u32) -> Vec<u8> {
    let ops = [
        MetadataOp::CreateStream { name: "s".into() },
        MetadataOp::CreateTopic {
            stream_id: 0,
            name: "t".into(),
            partitions,
            durability: Durability::Replicated,
            message_expiry_micros: 0,
        },
    ];
    let op = &ops[usize::from(request_number > 1)];
    request(METADATA_GROUP, request_number + 1, op.operation_code(), &op.encode())
}

#[test]
fn the_metadata_group_lives_on_shard_0_and_partitions_spread_over_every_shard() {
    for shards in 1..=SHARDS_MAX {
        assert_eq!(owner_shard(METADATA_GROUP, shards), 0);
        let mut used = vec![0; usize::from(shards)];
        for partition in 0..64 {
            let group = crate::metadata::partition_group_id(5, partition);
            let shard = owner_shard(group, shards);
            assert!(shard < shards);
            assert_eq!(shard, owner_shard(group, shards), "a pure function of the group");
            used[usize::from(shard)] += 1;
        }
        assert!(used.iter().all(|count| *count > 0), "{shards} shards: {used:?}");
    }
}

#[test]
fn a_committed_create_topic_opens_one_group_per_partition_on_its_owner_shard() {
    let (node, shard0) = logged_in_node(3, MemoryStores::new());
    for number in 1..=2 {
        shard0
            .borrow_mut()
            .on_frame(ProcessId(9), create_topic(number, 6), 1_000);
        let (outgoing, forwards) = shard0.borrow_mut().drain();
        assert!(forwards.is_empty(), "metadata frames are shard 0's own");
        assert_eq!(outgoing.len(), 1, "a group of one commits at once and replies");
    }
    for shard in node.shards() {
        shard.borrow_mut().tick(2_000);
    }
    let state = shard0
        .borrow()
        .metadata()
        .expect("shard 0")
        .state_machine()
        .state()
        .clone();
    let directory = Directory::from_metadata(&state);
    assert_eq!(directory.partitions.len(), 6);
    let mut hosted = 0;
    for (index, shard) in node.shards().iter().enumerate() {
        for group in shard.borrow().partitions().keys() {
            assert_eq!(
                usize::from(owner_shard(*group, 3)),
                index,
                "group {group:#x} on its owner"
            );
            assert!(directory.partitions.contains_key(group));
            hosted += 1;
        }
    }
    assert_eq!(hosted, 6, "every partition is hosted exactly once");
    assert_eq!(node.stats().shard.groups_opened, 6);
}

#[test]
fn a_frame_on_the_wrong_shard_takes_one_router_hop_and_unknown_groups_are_counted() {
    let node = Node::open(&config(2), MemoryStores::new(), 0);
    let shard1 = node.shards()[1].clone();
    // The metadata group is shard 0's: a request arriving on shard 1 is forwarded.
    shard1.borrow_mut().on_frame(ProcessId(9), create_topic(1, 1), 0);
    let (outgoing, forwards) = shard1.borrow_mut().drain();
    assert!(outgoing.is_empty());
    assert_eq!(forwards.len(), 1);
    assert_eq!((forwards[0].shard, forwards[0].from), (0, ProcessId(9)));
    assert_eq!(shard1.borrow().stats().frames_routed, 1);
    // A partition group nobody created: dropped and counted, not an error.
    let group = (1..)
        .map(|op| crate::metadata::partition_group_id(op, 0))
        .find(|group| owner_shard(*group, 2) == 1)
        .expect("some group hashes to shard 1");
    shard1
        .borrow_mut()
        .on_frame(ProcessId(9), request(group, 1, 64, &[]), 0);
    assert_eq!(shard1.borrow().stats().frames_unknown_group, 1);
    // The client is told at once (never taken), so it tries elsewhere.
    let (outgoing, _) = shard1.borrow_mut().drain();
    assert_eq!(outgoing.len(), 1);
    let (refusal, body) = wire::open(&outgoing[0].frame).expect("a sealed frame");
    assert_eq!((refusal.command, refusal.group), (Command::Refused, group));
    assert_eq!(
        crate::vsr::ClientError::decode(body),
        Some(crate::vsr::ClientError::TransientNotAccepted)
    );
    // A frame whose header does not verify never reaches routing.
    let mut corrupt = create_topic(1, 1);
    corrupt[40] ^= 1;
    shard1.borrow_mut().on_frame(ProcessId(9), corrupt, 0);
    assert_eq!(shard1.borrow().stats().frames_rejected, 1);
}

/// A one-shard node on `stores`, logged in, with two topics of two partitions each
/// (requests 2 and 3).
fn node_with_two_topics(stores: &MemoryStores) -> (Node<MemoryStores>, Rc<RefCell<Shard<MemoryStores>>>) {
    let (node, shard) = logged_in_node(1, stores.clone());
    for number in 1..=2 {
        shard.borrow_mut().on_frame(ProcessId(9), create_topic(number, 2), 0);
    }
    (node, shard)
}

/// The first topic of the first stream, deleted.
const DELETE_FIRST_TOPIC: MetadataOp = MetadataOp::DeleteTopic {
    stream_id: 0,
    topic_id: 0,
};

#[test]
fn deleting_a_topic_closes_its_groups_and_removes_their_stores() {
    let stores = MemoryStores::new();
    let (_node, shard) = node_with_two_topics(&stores);
    shard.borrow_mut().tick(0);
    assert_eq!(shard.borrow().partitions().len(), 2);
    assert_eq!(stores.groups().len(), 3, "metadata and two partitions");
    send_metadata(&shard, ProcessId(9), 4, &DELETE_FIRST_TOPIC, 0);
    assert!(shard.borrow().partitions().is_empty());
    assert_eq!(stores.groups(), vec![METADATA_GROUP]);
    assert_eq!(shard.borrow().stats().groups_closed, 2);
}

#[test]
fn a_restarted_node_never_reopens_a_partition_it_deleted() {
    // The scenario of `--plane uniform --clients 3 --faults heavy --seed 22 --shards 2`
    // (a deleted partition reopened afresh during replay), end to end on one node. A
    // group of one replays all three ops in one step, so this passes even without the
    // fix; `a_directory_listing_a_deleted_group_does_not_reopen_it` pins the tombstone.
    let stores = MemoryStores::new();
    let (node, shard) = node_with_two_topics(&stores);
    send_metadata(&shard, ProcessId(9), 4, &DELETE_FIRST_TOPIC, 0);
    drop((shard, node));
    // Restart on the same stores: the metadata replica recovers alone (a group of
    // one starts a view change after its unanswered probes) and replays all three ops.
    let node = Node::open(&config(1), stores.clone(), 1);
    let shard = node.shards()[0].clone();
    for tick in 0..2_000 {
        shard.borrow_mut().tick(tick);
        shard.borrow_mut().drain();
    }
    let metadata = shard.borrow().metadata().map(|replica| replica.commit_min());
    assert_eq!(metadata, Some(4), "the metadata log was replayed");
    assert!(shard.borrow().partitions().is_empty());
    assert_eq!(
        node.stats().shard.groups_opened,
        0,
        "the deleted groups were never reopened"
    );
}

#[test]
fn a_directory_listing_a_deleted_group_does_not_reopen_it() {
    let stores = MemoryStores::new();
    // A group shard 1 owns (shard 0 would republish the directory from its own,
    // genesis, metadata).
    let group = (1..)
        .map(|op| crate::metadata::partition_group_id(op, 0))
        .find(|group| owner_shard(*group, 2) == 1)
        .expect("some group hashes to shard 1");
    stores.open(group).expect("memory stores always open");
    stores.remove(group, &crate::storage::tombstone_set::NothingSettled);
    let spec = PartitionSpec {
        group,
        stream_id: 0,
        topic_id: 0,
        partition_id: 0,
        created_in_view: 0,
        message_expiry_micros: 0,
        durability: crate::metadata::Durability::Replicated,
    };
    let shared = NodeShared::default();
    *shared.directory.borrow_mut() = Directory {
        version: 2,
        partitions: [(group, spec)].into(),
    };
    let mut shard = Shard::open(1, config(2), stores.clone(), 1, &shared);
    shard.tick(0);
    assert!(shard.partitions().is_empty());
    assert_eq!(shard.stats().groups_deleted_skipped, 1);
    assert!(stores.get(group).is_none(), "no store was recreated");
}

#[test]
fn an_oversized_batch_is_refused_by_the_primary_without_preparing_an_op() {
    // Found measuring memory (`--plane uniform ... --journal-slots 80 --ring-entries 256
    // --seed 25` peaked at 99 MB): every oversized batch, over half a megabyte, was
    // replicated into three rings and WALs only to be refused on apply.
    let (_node, shard, group) = node_with_a_partition();
    let oversized = crate::partition::PartitionOp::SendMessages {
        messages: (0..crate::partition::BATCH_BYTES_MAX / crate::partition::PAYLOAD_BYTES_MAX + 1)
            .map(|id| crate::partition::Message {
                id: id as u128,
                payload: vec![7; crate::partition::PAYLOAD_BYTES_MAX],
            })
            .collect(),
    };
    shard.borrow_mut().on_frame(
        ProcessId(9),
        request(group, 4, oversized.operation_code(), &oversized.encode()),
        3_000,
    );
    let (outgoing, _) = shard.borrow_mut().drain();
    assert_eq!(outgoing.len(), 1, "answered at once");
    let (reply, body) = wire::open(&outgoing[0].frame).expect("a sealed frame");
    assert_eq!((reply.command, reply.op), (Command::Reply, 0), "a reply naming no op");
    assert_eq!(
        crate::partition::PartitionReply::decode(body),
        Ok(crate::partition::PartitionReply::BatchTooLarge)
    );
    let shard = shard.borrow();
    let replica = &shard.partitions()[&group];
    assert_eq!(replica.head(), 0, "nothing was prepared");
    assert_eq!(replica.stats().requests_refused_before_prepare, 1);
}

/// The session the test client (id `0x5EED`) holds in the node's applied metadata.
fn client_session<P: StoreProvider>(shard: &Rc<RefCell<Shard<P>>>) -> Option<crate::metadata::Session> {
    shard
        .borrow()
        .metadata()
        .expect("shard 0")
        .state_machine()
        .state()
        .sessions()
        .get(0x5EED)
        .copied()
}

/// Send metadata `op` as request `request_number` from `from` at `now_micros` and drain
/// what the shard answered.
fn send_metadata<P: StoreProvider>(
    shard: &Rc<RefCell<Shard<P>>>,
    from: ProcessId,
    request_number: u64,
    op: &MetadataOp,
    now_micros: u64,
) -> (Vec<crate::vsr::replica::Outgoing>, Vec<crate::node::Forward>) {
    shard.borrow_mut().on_frame(
        from,
        request(METADATA_GROUP, request_number, op.operation_code(), &op.encode()),
        now_micros,
    );
    shard.borrow_mut().drain()
}

/// A one-shard node with client 0x5EED logged in as root and a topic of one partition;
/// returns the partition's group.
fn node_with_a_partition() -> (Node<MemoryStores>, Rc<RefCell<Shard<MemoryStores>>>, u64) {
    let (node, shard) = logged_in_node(1, MemoryStores::new());
    for number in 1..=2 {
        shard
            .borrow_mut()
            .on_frame(ProcessId(9), create_topic(number, 1), 1_000);
        shard.borrow_mut().drain();
    }
    shard.borrow_mut().tick(2_000);
    shard.borrow_mut().drain();
    let group = *shard
        .borrow()
        .partitions()
        .keys()
        .next()
        .expect("the partition's group");
    (node, shard, group)
}

fn send_one(group: u64, request_number: u64) -> Vec<u8> {
    let send = crate::partition::PartitionOp::SendMessages {
        messages: vec![crate::partition::Message {
            id: 1,
            payload: vec![1, 2, 3],
        }],
    };
    request(group, request_number, send.operation_code(), &send.encode())
}

#[test]
fn a_request_from_an_unbound_sender_is_refused_unbound_and_served_once_it_binds() {
    let (_node, shard, group) = node_with_a_partition();
    // Same client id, another sender (a reconnect): not bound here.
    let outgoing = answers(&shard, ProcessId(10), send_one(group, 4));
    assert_eq!(refusal(&outgoing), Some(crate::vsr::ClientError::Unbound));
    assert_eq!(shard.borrow().partitions()[&group].head(), 0, "nothing prepared");
    assert_eq!(shard.borrow().stats().requests_unbound, 1);
    // It binds the session it logged in with, then resends: served.
    let session = client_session(&shard);
    let session = session.expect("the login opened a session");
    let outgoing = answers(&shard, ProcessId(10), bind_frame(4, session.id, session.secret));
    assert_eq!(
        bind_answer(&outgoing),
        crate::metadata::MetadataReply::SessionBound { user_id: 0 }
    );
    assert_first_send_committed(&shard, ProcessId(10), group, 4, "prepared and committed as op 1");
}

#[test]
fn a_bind_with_a_wrong_secret_or_session_is_refused_and_a_corrupted_one_is_dropped() {
    let (_node, shard, group) = node_with_a_partition();
    let session = client_session(&shard);
    let session = session.expect("the login opened a session");
    for (id, secret) in [(session.id, session.secret ^ 1), (session.id + 1, session.secret)] {
        let outgoing = answers(&shard, ProcessId(10), bind_frame(4, id, secret));
        assert_eq!(bind_answer(&outgoing), crate::metadata::MetadataReply::SessionRefused);
    }
    assert_eq!(shard.borrow().stats().binds_refused, 2);
    let outgoing = answers(&shard, ProcessId(10), send_one(group, 4));
    assert_eq!(refusal(&outgoing), Some(crate::vsr::ClientError::Unbound));
    // A malformed bind body is dropped and counted, never a panic.
    let rejected = shard.borrow().stats().frames_rejected;
    shard.borrow_mut().on_frame(
        ProcessId(10),
        request(METADATA_GROUP, 5, crate::metadata::BIND_SESSION_CODE, &[1, 2, 3]),
        3_000,
    );
    assert!(shard.borrow_mut().drain().0.is_empty());
    assert_eq!(shard.borrow().stats().frames_rejected, rejected + 1);
    // A bind whose body the network flipped a bit of (the header still verifies) is
    // dropped like any corrupted frame, never refused as a wrong secret: found by
    // `--plane uniform --faults swarm --crash-prob 0.01 --restart-prob 0.05 --seed 13`,
    // where the refusal made the client give up its session.
    let mut corrupted = bind_frame(6, session.id, session.secret);
    let last = corrupted.len() - 1;
    corrupted[last] ^= 0x08;
    shard.borrow_mut().on_frame(ProcessId(10), corrupted, 3_000);
    assert!(shard.borrow_mut().drain().0.is_empty(), "no answer to a corrupted bind");
    assert_eq!(shard.borrow().stats().frames_rejected, rejected + 2);
    assert_eq!(shard.borrow().stats().binds_refused, 2, "not counted as a refused bind");
}

#[test]
fn a_partition_request_without_its_permission_is_denied_before_anything_is_prepared() {
    let (_node, shard, group) = node_with_a_partition();
    // Root creates a user with no permissions; the client logs in as that user.
    let ops = [
        MetadataOp::CreateUser {
            username: "reader".into(),
            password: "pw".into(),
            active: true,
        },
        MetadataOp::LoginUser {
            username: "reader".into(),
            password: "pw".into(),
        },
    ];
    for (number, op) in ops.iter().enumerate() {
        send_metadata(&shard, ProcessId(9), 4 + number as u64, op, 3_000);
    }
    let session = client_session(&shard);
    let session = session.expect("the second login replaced the session");
    assert_eq!(session.user_id, 1);
    SESSION.with(|current| current.set(session.id));
    // The login's reply bound its sender to the new session on this node: no rebind.
    let outgoing = answers(&shard, ProcessId(9), send_one(group, 6));
    assert_eq!(refusal(&outgoing), Some(crate::vsr::ClientError::PermissionDenied));
    assert_eq!(shard.borrow().partitions()[&group].head(), 0, "nothing prepared");
    assert_eq!(shard.borrow().stats().requests_denied, 1);
    // A metadata op the user may not do is refused when applied (a committed op).
    let create = MetadataOp::CreateStream { name: "x".into() };
    let (outgoing, _) = send_metadata(&shard, ProcessId(9), 7, &create, 3_000);
    let (reply, body) = wire::open(&outgoing[0].frame).expect("a sealed frame");
    assert_eq!(reply.command, Command::Reply);
    assert_eq!(
        crate::metadata::MetadataReply::decode(body),
        Ok(crate::metadata::MetadataReply::PermissionDenied)
    );
}

#[test]
fn a_request_whose_client_saw_newer_metadata_waits_then_is_refused_not_accepted() {
    let (_node, shard, group) = node_with_a_partition();
    let applied = shard.borrow().metadata().expect("shard 0").commit_min();
    let mut frame = send_one(group, 4);
    let (mut header, body) = wire::open(&frame).map(|(h, b)| (h, b.to_vec())).expect("sealed");
    header.commit = applied + 1;
    frame = wire::seal_header(header, &body);
    shard.borrow_mut().on_frame(ProcessId(9), frame, 3_000);
    assert!(shard.borrow_mut().drain().0.is_empty(), "held, not answered");
    assert_eq!(shard.borrow().stats().requests_parked, 1);
    for tick in 0..PARK_WAIT_TICKS {
        shard.borrow_mut().tick(4_000 + tick);
        let (outgoing, _) = shard.borrow_mut().drain();
        let refused: Vec<_> = outgoing
            .iter()
            .filter(|out| wire::open(&out.frame).is_ok_and(|(h, _)| h.command == Command::Refused))
            .collect();
        if tick + 1 < PARK_WAIT_TICKS {
            assert!(refused.is_empty(), "still waiting at tick {tick}");
        } else {
            assert_eq!(refused.len(), 1, "refused once the wait is over");
            let (_, body) = wire::open(&refused[0].frame).expect("sealed");
            assert_eq!(
                crate::vsr::ClientError::decode(body),
                Some(crate::vsr::ClientError::TransientNotAccepted)
            );
        }
    }
    assert_eq!(shard.borrow().stats().requests_parked_expired, 1);
    assert_eq!(shard.borrow().partitions()[&group].head(), 0, "nothing prepared");
}

#[test]
fn a_request_replayed_from_an_older_session_does_not_act_as_the_newer_one() {
    // Found by `--plane partition --faults heavy --clients 8 --crash-prob 0.01
    // --restart-prob 0.05 --seed 45`: a send denied to a user without permission was
    // replayed by the network after its client had logged back in as root, and was
    // appended as root (the shadow never saw those messages).
    let (_node, shard, group) = node_with_a_partition();
    let old = SESSION.with(std::cell::Cell::get);
    let login = MetadataOp::LoginUser {
        username: crate::metadata::ROOT_USERNAME.into(),
        password: DEFAULT_ROOT_PASSWORD.into(),
    };
    send_metadata(&shard, ProcessId(9), 4, &login, 3_000);
    let new = client_session(&shard).map(|s| s.id);
    let new = new.expect("the second login opened a session");
    assert_ne!(new, old);
    // The login's reply bound the sender to the new session; a frame naming the old
    // one is not admitted.
    SESSION.with(|current| current.set(old));
    let outgoing = answers(&shard, ProcessId(9), send_one(group, 5));
    assert_eq!(refusal(&outgoing), Some(crate::vsr::ClientError::Unbound));
    assert_eq!(shard.borrow().partitions()[&group].head(), 0, "nothing prepared");
    SESSION.with(|current| current.set(new));
    assert_first_send_committed(&shard, ProcessId(9), group, 5, "sent in the current session: appended");
}

/// A batch from a peer replica is taken apart and each frame handled as if it had come
/// alone: routed to its own shard, answered by its own group. One from a client, or
/// damaged, is refused whole.
#[test]
fn a_peer_s_batch_is_taken_apart_and_each_frame_routed_on_its_own() {
    let node = Node::open(
        &NodeConfig {
            replicas: 3,
            ..config(2)
        },
        MemoryStores::new(),
        0,
    );
    let shard0 = node.shards()[0].clone();
    // Replica 1 restarted and asks who leads the metadata group (replica 0, view 0);
    // its Commit for a partition group owned by shard 1 rides in the same batch.
    let mut probe = Header::new(Command::RequestStartView);
    probe.cluster = CLUSTER;
    probe.group = METADATA_GROUP;
    probe.replica = 1;
    probe.nonce = 77;
    let other_group = (1..)
        .map(|op| crate::metadata::partition_group_id(op, 0))
        .find(|group| owner_shard(*group, 2) == 1)
        .expect("some group hashes to shard 1");
    let mut heartbeat = Header::new(Command::Commit);
    heartbeat.cluster = CLUSTER;
    heartbeat.group = other_group;
    heartbeat.replica = 1;
    let inner = [wire::seal_header(probe, &[]), wire::seal_header(heartbeat, &[])];
    let batch = wire::batch::pack(CLUSTER, inner.iter().map(Vec::as_slice));

    shard0.borrow_mut().on_frame(ProcessId(1), batch.clone(), 0);
    let (outgoing, forwards) = shard0.borrow_mut().drain();
    let answer = outgoing
        .iter()
        .map(|out| (out.to, wire::open(&out.frame).expect("sealed").0))
        .find(|(_, header)| header.command == Command::StartView)
        .expect("the probe in the batch was answered");
    assert_eq!((answer.0, answer.1.nonce), (ProcessId(1), 77));
    assert_eq!(forwards.len(), 1, "the other group's frame hops to its shard");
    assert_eq!((forwards[0].shard, forwards[0].from), (1, ProcessId(1)));
    assert_eq!(forwards[0].frame, inner[1]);
    assert_eq!(shard0.borrow().stats().batches_received, 1);
    assert_eq!(shard0.borrow().stats().frames_rejected, 0);

    // From a client, or naming another cluster: refused whole, nothing answered or
    // forwarded.
    shard0.borrow_mut().on_frame(ProcessId(9), batch.clone(), 0);
    let foreign = wire::batch::pack(CLUSTER + 1, inner.iter().map(Vec::as_slice));
    shard0.borrow_mut().on_frame(ProcessId(1), foreign, 0);
    // Damaged in transit (the header still verifies; the body does not).
    let mut damaged = batch;
    let last = damaged.len() - 1;
    damaged[last] ^= 1;
    shard0.borrow_mut().on_frame(ProcessId(1), damaged, 0);
    let (outgoing, forwards) = shard0.borrow_mut().drain();
    assert!(outgoing.is_empty() && forwards.is_empty());
    // The client's batch is refused before it is opened: only a replica speaks the
    // protocol; the other two are refused as batches.
    assert_eq!(shard0.borrow().stats().frames_refused_not_from_replica, 1);
    assert_eq!(shard0.borrow().stats().frames_rejected, 2);
    assert_eq!(shard0.borrow().stats().batches_received, 1);
}

#[test]
fn the_metadata_group_repairs_while_partition_groups_hold_every_repair_place() {
    // `--seed 11000072 --replicas 5 --journal-slots 80`: eight partition groups whose
    // peers had deleted them asked for repair nobody answered, holding every repair
    // place of their shard, while the metadata replica, 100 ops behind, waited for a
    // place for 2,000 ticks: the deletion that would have closed those groups was
    // among the ops it could not fetch. The metadata group is outside the budget.
    let stores = MemoryStores::new();
    let (_node, shard) = node_with_two_topics(&stores);
    let shard = shard.borrow();
    let metadata = shard.metadata().expect("shard 0 hosts the metadata group");
    assert!(
        metadata.budget.is_none(),
        "the metadata group never waits for a catch-up place"
    );
    assert!(!shard.partitions().is_empty(), "the topics' partition groups are open");
    for (group, replica) in shard.partitions().iter() {
        assert!(
            replica.budget.is_some(),
            "partition group {group:#x} shares the shard's budget"
        );
    }
}
