//! The workload driven against real state machines, no network: each request is
//! applied to a `MetadataState` or to the `PartitionState` of its group (polls are
//! answered from it), the reply is sealed into a header the way a replica would, and
//! the workload judges it.

use std::collections::{BTreeMap, BTreeSet};

use cluster::metadata::{
    ApplyContext, DEFAULT_ROOT_PASSWORD, Durability, MetadataOp, MetadataReply, MetadataState, partition_group_id,
};
use cluster::partition::{
    self, Consumer, Message, OwnerFence, POLL_MESSAGES_CODE, PartitionOp, PartitionReply, PartitionState, PollReply,
    PollRequest, PolledMessage,
};
use cluster::vsr::ClientError;
use cluster::wire::{Command, Header};

use super::*;
use crate::executor::Fnv1a64;
use crate::harness::client::client_id;

/// Simulated time per request, in microseconds: 50 ms, so a topic whose messages
/// expire after a second sees retention within twenty requests.
const TICK_MICROS: u64 = 50_000;

/// The cluster, as state machines: the metadata, and one partition state per group in
/// it (created and dropped as the metadata creates and deletes partitions).
struct Cluster {
    metadata: MetadataState,
    op_number: u64,
    partitions: BTreeMap<u64, (PartitionState, u64)>,
    fence: OwnerFence,
    now_micros: u64,
    /// Test-only: answer partition requests without checking the session's permission
    /// (a node with the check removed).
    skip_partition_permissions: bool,
}

impl Cluster {
    fn new() -> Self {
        Self::with_fence(OwnerFence::Enforced)
    }

    fn with_fence(fence: OwnerFence) -> Self {
        Self {
            metadata: MetadataState::new(DEFAULT_ROOT_PASSWORD, 0xC1_0057),
            op_number: 0,
            partitions: BTreeMap::new(),
            fence,
            now_micros: 1_767_225_600_000_000,
            skip_partition_permissions: false,
        }
    }

    /// Why a node would refuse `client`'s partition request, if it would.
    fn refusal(&self, client: usize, request: &ClientRequest) -> Option<ClientError> {
        let stream_id = self
            .metadata
            .partitions()
            .find(|(_, _, _, partition)| partition.group_id == request.group)
            .map(|(stream_id, ..)| stream_id)?;
        let need = cluster::partition::need_of_operation(request.operation, stream_id)?;
        if self.skip_partition_permissions {
            return None;
        }
        let session = self
            .metadata
            .sessions()
            .get(client_id(client))
            .map_or(0, |session| session.id);
        match self.metadata.session_user(client_id(client), session) {
            Err(_) => Some(ClientError::Unauthenticated),
            Ok((user_id, permissions)) if !permissions.allows(user_id, need) => Some(ClientError::PermissionDenied),
            Ok(_) => None,
        }
    }

    /// Apply one metadata op sent by `client`, authorised as the state machine does.
    fn apply_as(&mut self, client: usize, op: &MetadataOp) -> MetadataReply {
        self.apply_with(client_id(client), op)
    }

    /// Apply one metadata op as the cluster's own test client (no session needed:
    /// unauthorised), then open and close partition groups as the metadata says.
    fn apply(&mut self, op: &MetadataOp) -> MetadataReply {
        self.apply_with(0, op)
    }

    /// Apply one metadata op (ops numbered 1, 2, 3, ..., counter entropy) from `client`
    /// (0: unauthorised), then open and close partition groups as the metadata says.
    fn apply_with(&mut self, client: u128, op: &MetadataOp) -> MetadataReply {
        self.op_number += 1;
        let context = ApplyContext {
            timestamp_micros: self.now_micros,
            op_number: self.op_number,
            view: 0,
            entropy: self.op_number.wrapping_mul(0x9E37_79B9_7F4A_7C15),
            client,
            // Requests come one at a time here: each is sent in its client's session.
            session: self.metadata.sessions().get(client).map_or(0, |session| session.id),
        };
        let reply = if client == 0 {
            self.metadata.apply(op, &context)
        } else {
            self.metadata.apply_request(op, &context)
        };
        let live: BTreeMap<u64, u64> = self
            .metadata
            .partitions()
            .map(|(_, _, _, p)| (p.group_id, p.message_expiry_micros))
            .collect();
        self.partitions.retain(|group, _| live.contains_key(group));
        for (group, expiry) in live {
            self.partitions
                .entry(group)
                .or_insert_with(|| (PartitionState::new(expiry, self.fence), 0));
        }
        reply
    }

    /// Answer one request of `client` as a node would: the reply header names its
    /// operation, group, op number and (for committed ops) the prepare's timestamp. A
    /// metadata op is authorised when applied, a partition request before it is
    /// answered (refused `PermissionDenied` or `Unauthenticated` as a node does).
    fn answer(&mut self, client: usize, request: &ClientRequest) -> (Header, Vec<u8>) {
        self.now_micros += TICK_MICROS;
        let mut header = Header::new(Command::Reply);
        header.operation = request.operation;
        header.group = request.group;
        header.timestamp = self.now_micros;
        if request.group == request::METADATA_GROUP {
            let op = MetadataOp::decode(&request.body).expect("the workload sends metadata ops that decode");
            let reply = self.apply_as(client, &op);
            header.op = self.op_number;
            return (header, reply.encode());
        }
        if let Some(refused) = self.refusal(client, request) {
            let mut header = Header::new(Command::Refused);
            header.operation = request.operation;
            header.group = request.group;
            return (header, refused.encode().to_vec());
        }
        let (state, op_number) = self
            .partitions
            .get_mut(&request.group)
            .expect("the workload sends only to partitions that exist");
        if request.operation == POLL_MESSAGES_CODE {
            let poll = PollRequest::decode(&request.body).expect("the workload sends polls that decode");
            header.op = *op_number;
            return (header, state.poll(&poll).encode());
        }
        let op = PartitionOp::decode(&request.body).expect("the workload sends partition ops that decode");
        assert_eq!(op.operation_code(), request.operation);
        *op_number += 1;
        header.op = *op_number;
        let context = partition::ApplyContext {
            timestamp_micros: self.now_micros,
            op_number: *op_number,
        };
        (header, state.apply(&op, &context).encode())
    }

    fn groups(&self) -> BTreeSet<u64> {
        self.partitions.keys().copied().collect()
    }
}

/// One request of `client`, answered and judged.
fn step(workload: &mut MetadataWorkload, cluster: &mut Cluster, client: usize) -> Option<(ClientRequest, Header)> {
    let request = workload.next_request(client)?;
    let (header, body) = cluster.answer(client, &request);
    workload.on_reply(client, &header, &body);
    Some((request, header))
}

/// Let `client` send its first request, a login as root, if it has not yet.
fn log_in(workload: &mut MetadataWorkload, cluster: &mut Cluster, client: usize) {
    if !workload.shadow.sessions.contains_key(&client) {
        let (request, _) = step(workload, cluster, client).expect("a login");
        assert_eq!(
            request.operation,
            MetadataOp::LoginUser {
                username: String::new(),
                password: String::new(),
            }
            .operation_code()
        );
    }
}

/// Put `request` first in `client`'s queue, as if `action` had drawn it aiming at `aim`.
fn script(workload: &mut MetadataWorkload, client: usize, action: Action, aim: Outcome, request: Request) {
    workload.clients[client].queued.push_front(Step {
        action,
        aim,
        aimed: true,
        request,
        step: 1,
        steps: 1,
    });
}

/// Send a scripted request, answer it, judge it; the decoded reply.
fn send(
    workload: &mut MetadataWorkload,
    cluster: &mut Cluster,
    action: Action,
    aim: Outcome,
    request: Request,
) -> (Reply, Header) {
    let decoder = request.clone();
    log_in(workload, cluster, 0);
    script(workload, 0, action, aim, request);
    let sent = workload.next_request(0).expect("a scripted request is sent");
    let (header, body) = cluster.answer(0, &sent);
    workload.on_reply(0, &header, &body);
    (
        decoder.decode_reply(&body).expect("the cluster's replies decode"),
        header,
    )
}

fn no_failures(workload: &MetadataWorkload) {
    assert_eq!(workload.failures(), &[] as &[String]);
}

/// Everything the end-of-run oracle compares: the metadata, the set of partition
/// groups, every partition. Returns the sums compared.
fn compare_all(workload: &MetadataWorkload, cluster: &Cluster) -> (ShadowComparison, PartitionComparison) {
    let metadata = workload
        .compare_with(&cluster.metadata)
        .unwrap_or_else(|error| panic!("{error}"));
    let expected: BTreeSet<u64> = workload.partition_groups().into_iter().collect();
    assert_eq!(
        expected,
        cluster.groups(),
        "the shadow's partition groups are the cluster's"
    );
    let mut sums = PartitionComparison::default();
    for (group, (state, _)) in &cluster.partitions {
        let compared = workload
            .compare_partition(*group, state)
            .unwrap_or_else(|error| panic!("group {group:#x}: {error}"));
        sums.messages_compared += compared.messages_compared;
        sums.offsets_compared += compared.offsets_compared;
        sums.owners_compared += compared.owners_compared;
    }
    (metadata, sums)
}

fn metadata(op: MetadataOp) -> Request {
    Request::Metadata(op)
}

/// A stream "s" with topic "t" of `partitions` partitions expiring after `expiry`,
/// created by scripted requests; the topic's partitions.
fn stream_with_topic(
    workload: &mut MetadataWorkload,
    cluster: &mut Cluster,
    partitions: u32,
    expiry: u64,
) -> Vec<PartitionAt> {
    let (reply, _) = send(
        workload,
        cluster,
        Action::CreateStream,
        Outcome::Ok,
        metadata(MetadataOp::CreateStream { name: "s".into() }),
    );
    let Reply::Metadata(MetadataReply::StreamCreated { stream_id }) = reply else {
        panic!("{reply:?}")
    };
    let create = MetadataOp::CreateTopic {
        stream_id,
        name: "t".into(),
        partitions,
        durability: Durability::Replicated,
        message_expiry_micros: expiry,
    };
    let (reply, header) = send(workload, cluster, Action::CreateTopic, Outcome::Ok, metadata(create));
    let Reply::Metadata(MetadataReply::TopicCreated { topic_id }) = reply else {
        panic!("{reply:?}")
    };
    (0..partitions)
        .map(|partition_id| PartitionAt {
            stream_id,
            topic_id,
            partition_id,
            group: partition_group_id(header.op, partition_id),
        })
        .collect()
}

fn batch(ids: std::ops::Range<u128>) -> PartitionOp {
    PartitionOp::SendMessages {
        messages: ids
            .map(|id| Message {
                id,
                payload: id.to_le_bytes()[..4].to_vec(),
            })
            .collect(),
    }
}

// ---- the shadow, by example ----

#[test]
fn group_ids_come_from_the_op_in_the_create_topic_reply_header() {
    let mut workload = MetadataWorkload::new(1, 1);
    let mut cluster = Cluster::new();
    let partitions = stream_with_topic(&mut workload, &mut cluster, 3, 0);
    // The login was op 1, CreateStream op 2, CreateTopic op 3: partition p is group
    // (3 << 10) | p.
    assert_eq!(workload.partition_groups(), vec![3 << 10, (3 << 10) | 1, (3 << 10) | 2]);
    assert_eq!(partitions[2].group, partition_group_id(3, 2));
    // CreatePartitions continues the ids, with groups from its own op (4).
    let (reply, header) = send(
        &mut workload,
        &mut cluster,
        Action::CreatePartitions,
        Outcome::Ok,
        metadata(MetadataOp::CreatePartitions {
            stream_id: partitions[0].stream_id,
            topic_id: partitions[0].topic_id,
            count: 2,
        }),
    );
    assert_eq!(
        reply,
        Reply::Metadata(MetadataReply::PartitionsCreated { first_partition_id: 3 })
    );
    assert_eq!(header.op, 4);
    let groups = workload.partition_groups();
    assert!(groups.contains(&partition_group_id(4, 3)) && groups.contains(&partition_group_id(4, 4)));
    no_failures(&workload);
    compare_all(&workload, &cluster);

    // A reply naming another op would give the partitions groups that are not theirs:
    // the comparison with the cluster says so.
    let mut workload = MetadataWorkload::new(1, 1);
    let mut cluster = Cluster::new();
    stream_with_topic(&mut workload, &mut cluster, 1, 0);
    script(
        &mut workload,
        0,
        Action::CreatePartitions,
        Outcome::Ok,
        metadata(MetadataOp::CreatePartitions {
            stream_id: 0,
            topic_id: 0,
            count: 1,
        }),
    );
    let request = workload.next_request(0).expect("scripted");
    let (mut header, body) = cluster.answer(0, &request);
    header.op += 7;
    workload.on_reply(0, &header, &body);
    let error = workload.compare_with(&cluster.metadata).expect_err("wrong group id");
    assert!(error.contains("partitions (id, group, message expiry)"), "{error}");
}

#[test]
fn the_shadow_predicts_the_offsets_of_consecutive_sends() {
    let mut workload = MetadataWorkload::new(2, 1);
    let mut cluster = Cluster::new();
    let at = stream_with_topic(&mut workload, &mut cluster, 1, 0)[0];
    for (first, last) in [(0, 9), (10, 10), (11, 30)] {
        let request = Request::Partition {
            at,
            op: batch(first..last + 1),
        };
        let (reply, _) = send(
            &mut workload,
            &mut cluster,
            Action::SendMessages,
            Outcome::Appended,
            request,
        );
        assert_eq!(
            reply,
            Reply::Partition(PartitionReply::Appended {
                base_offset: first as u64,
                last_offset: last as u64,
            })
        );
    }
    let log = &workload.shadow().partition(&at).expect("the partition").log;
    assert_eq!(log.next_offset(), 31);
    assert_eq!(log.message(11).map(|m| m.id), Some(11));
    no_failures(&workload);
    let (_, sums) = compare_all(&workload, &cluster);
    assert_eq!(sums.messages_compared, 31);

    // An Appended reply at other offsets is a failure naming both.
    script(
        &mut workload,
        0,
        Action::SendMessages,
        Outcome::Appended,
        Request::Partition { at, op: batch(0..2) },
    );
    let request = workload.next_request(0).expect("scripted");
    let mut header = Header::new(Command::Reply);
    header.operation = request.operation;
    header.group = request.group;
    let wrong = PartitionReply::Appended {
        base_offset: 40,
        last_offset: 41,
    };
    workload.on_reply(0, &header, &wrong.encode());
    assert_eq!(workload.failures().len(), 1, "{:?}", workload.failures());
    let failure = &workload.failures()[0];
    assert!(
        failure.contains("appended at offsets 40..=41, the shadow predicted 31..=32")
            && failure.contains("SendMessages"),
        "{failure}"
    );
}

#[test]
fn a_former_owner_writing_after_a_hand_off_is_predicted_stale_owner() {
    for fence in [OwnerFence::Enforced, OwnerFence::DisabledForTest] {
        let mut workload = MetadataWorkload::new(3, 1);
        let mut cluster = Cluster::with_fence(fence);
        let at = stream_with_topic(&mut workload, &mut cluster, 1, 0)[0];
        let (s, t) = (at.stream_id, at.topic_id);
        let create = MetadataOp::CreateConsumerGroup {
            stream_id: s,
            topic_id: t,
            name: "g".into(),
        };
        send(
            &mut workload,
            &mut cluster,
            Action::CreateConsumerGroup,
            Outcome::Ok,
            metadata(create),
        );
        let join = |member_id| {
            metadata(MetadataOp::JoinConsumerGroup {
                stream_id: s,
                topic_id: t,
                group_id: 0,
                member_id,
            })
        };
        let hand = |member_id, generation| Request::Partition {
            at,
            op: PartitionOp::SetGroupOwner {
                group_id: 0,
                member_id,
                generation,
            },
        };
        // Member 1 joins (generation 1) and owns the partition; member 2 joins
        // (generation 2) and the partition is handed to it.
        send(
            &mut workload,
            &mut cluster,
            Action::JoinConsumerGroup,
            Outcome::Ok,
            join(1),
        );
        send(
            &mut workload,
            &mut cluster,
            Action::SetGroupOwner,
            Outcome::Ok,
            hand(1, 1),
        );
        send(
            &mut workload,
            &mut cluster,
            Action::JoinConsumerGroup,
            Outcome::Ok,
            join(2),
        );
        send(
            &mut workload,
            &mut cluster,
            Action::SetGroupOwner,
            Outcome::Ok,
            hand(2, 2),
        );
        // Handing it over again at generation 2 is refused.
        send(
            &mut workload,
            &mut cluster,
            Action::SetGroupOwner,
            Outcome::StaleGeneration,
            hand(1, 2),
        );
        no_failures(&workload);

        // The former owner writes the group's offset. The workload draws exactly that.
        workload.weights = ActionWeights::from_fn(|action| u32::from(action == Action::StoreStaleOwnerOffset));
        let (request, _) = step(&mut workload, &mut cluster, 0).expect("a stale write is drawn");
        let op = PartitionOp::decode(&request.body).expect("decodes");
        let PartitionOp::StoreConsumerOffset {
            consumer:
                Consumer::Group {
                    group_id: 0,
                    member_id: 1,
                    generation: 1,
                },
            ..
        } = op
        else {
            panic!("not the former owner: {op:?}")
        };
        match fence {
            OwnerFence::Enforced => {
                no_failures(&workload);
                assert_eq!(
                    workload.outcome_count(Action::StoreStaleOwnerOffset, Outcome::StaleOwner),
                    1
                );
                let (_, sums) = compare_all(&workload, &cluster);
                assert_eq!(sums.owners_compared, 1);
            }
            // Without the fence the write goes through: exactly the bug the
            // prediction catches.
            OwnerFence::DisabledForTest => {
                // (Ok, or OffsetBeyondLog for an offset past the log: the fence no
                // longer answers first.)
                assert!(
                    workload
                        .failures()
                        .iter()
                        .any(|f| f.starts_with("StoreStaleOwnerOffset predicted StaleOwner, got ")),
                    "{:?}",
                    workload.failures()
                );
            }
        }
    }
}

#[test]
fn polls_are_judged_message_by_message() {
    let mut workload = MetadataWorkload::new(4, 1);
    let mut cluster = Cluster::new();
    let at = stream_with_topic(&mut workload, &mut cluster, 1, 0)[0];
    send(
        &mut workload,
        &mut cluster,
        Action::SendMessages,
        Outcome::Appended,
        Request::Partition { at, op: batch(0..5) },
    );
    let poll = |offset, count| Request::Poll {
        at,
        poll: PollRequest { offset, count },
    };
    let (reply, _) = send(
        &mut workload,
        &mut cluster,
        Action::PollMessages,
        Outcome::Polled,
        poll(2, 10),
    );
    let Reply::Poll(polled) = reply else { panic!() };
    assert_eq!(polled.next_offset, 5);
    assert_eq!(
        polled.messages.iter().map(|m| m.offset).collect::<Vec<_>>(),
        vec![2, 3, 4]
    );
    send(
        &mut workload,
        &mut cluster,
        Action::PollMessages,
        Outcome::PolledNothing,
        poll(5, 10),
    );
    send(
        &mut workload,
        &mut cluster,
        Action::PollMessages,
        Outcome::PolledNothing,
        poll(0, 0),
    );
    no_failures(&workload);

    // Wrong answers, each a failure of its own kind.
    let good = cluster.partitions[&at.group]
        .0
        .poll(&PollRequest { offset: 1, count: 2 });
    let mut forged_payload = good.clone();
    forged_payload.messages[1].payload.push(0xFF);
    let mut never_committed = good.clone();
    never_committed.next_offset = 7;
    never_committed.messages.push(PolledMessage {
        offset: 3,
        timestamp_micros: 0,
        id: 99,
        payload: vec![],
    });
    never_committed.messages.push(PolledMessage {
        offset: 4,
        timestamp_micros: 0,
        id: 4,
        payload: vec![],
    });
    never_committed.messages.push(PolledMessage {
        offset: 5,
        timestamp_micros: 0,
        id: 5,
        payload: vec![],
    });
    let skipped_ahead = PollReply {
        next_offset: 5,
        messages: good.messages[1..].to_vec(),
    };
    for (reply, expected) in [
        (forged_payload, "the shadow holds"),
        (never_committed, "which the shadow never saw committed"),
        (skipped_ahead, "started at 2; the retained log starts at 0"),
    ] {
        let mut judged = MetadataWorkload::new(4, 1);
        judged.shadow = workload.shadow.clone();
        script(&mut judged, 0, Action::PollMessages, Outcome::Polled, poll(1, 2));
        let request = judged.next_request(0).expect("scripted");
        let mut header = Header::new(Command::Reply);
        header.operation = request.operation;
        header.group = request.group;
        judged.on_reply(0, &header, &reply.encode());
        assert!(
            judged.failures().iter().any(|f| f.contains(expected)),
            "{expected}: {:?}",
            judged.failures()
        );
    }
}

#[test]
fn purges_retention_and_segment_deletion_are_tracked_without_guessing() {
    let mut workload = MetadataWorkload::new(5, 1);
    let mut cluster = Cluster::new();
    // A one-second expiry: with 50 ms per request, sealed segments expire soon.
    let expiring = stream_with_topic(&mut workload, &mut cluster, 1, 1_000_000)[0];
    let mut next_id = 0;
    let mut send_batch = |workload: &mut MetadataWorkload, cluster: &mut Cluster, at: PartitionAt| {
        let request = Request::Partition {
            at,
            op: batch(next_id..next_id + 100),
        };
        next_id += 100;
        send(workload, cluster, Action::SendMessages, Outcome::Appended, request);
    };
    for _ in 0..45 {
        send_batch(&mut workload, &mut cluster, expiring);
    }
    let oldest = cluster.partitions[&expiring.group].0.log().oldest_offset();
    assert!(oldest > 0, "retention dropped sealed segments");
    // The shadow does not know where the log starts, only that it is at or above 0;
    // a poll from 0 reveals it.
    let log = &workload.shadow().partition(&expiring).expect("exists").log;
    assert!(!log.floor_exact());
    let poll = Request::Poll {
        at: expiring,
        poll: PollRequest { offset: 0, count: 5 },
    };
    send(&mut workload, &mut cluster, Action::PollMessages, Outcome::Polled, poll);
    let log = &workload.shadow().partition(&expiring).expect("exists").log;
    assert_eq!((log.floor(), log.floor_exact()), (oldest, true));
    no_failures(&workload);

    // Segment deletion on a partition without expiry: the reply's count is held to
    // what is possible, and the floor becomes inexact until a poll reveals it.
    let (reply, _) = send(
        &mut workload,
        &mut cluster,
        Action::CreateTopic,
        Outcome::Ok,
        metadata(MetadataOp::CreateTopic {
            stream_id: expiring.stream_id,
            name: "kept".into(),
            partitions: 1,
            durability: Durability::Persisted,
            message_expiry_micros: 0,
        }),
    );
    let Reply::Metadata(MetadataReply::TopicCreated { topic_id }) = reply else {
        panic!()
    };
    let kept = workload
        .shadow()
        .partitions()
        .find(|(at, _)| at.topic_id == topic_id && at.stream_id == expiring.stream_id)
        .map(|(at, _)| at)
        .expect("the new topic's partition");
    for _ in 0..25 {
        send_batch(&mut workload, &mut cluster, kept);
    }
    let delete = Request::Partition {
        at: kept,
        op: PartitionOp::DeleteSegments { count: 1 },
    };
    let (reply, _) = send(
        &mut workload,
        &mut cluster,
        Action::DeleteSegments,
        Outcome::SegmentsDeleted,
        delete,
    );
    assert_eq!(reply, Reply::Partition(PartitionReply::SegmentsDeleted { count: 1 }));
    assert!(!workload.shadow().partition(&kept).expect("exists").log.floor_exact());
    compare_all(&workload, &cluster);

    // A purge empties it, exactly.
    let purge = Request::Partition {
        at: kept,
        op: PartitionOp::Purge,
    };
    send(&mut workload, &mut cluster, Action::PurgeTopic, Outcome::Ok, purge);
    let log = &workload.shadow().partition(&kept).expect("exists").log;
    assert_eq!(
        (log.floor(), log.floor_exact(), log.possibly_retained()),
        (2_500, true, 0)
    );
    let poll = Request::Poll {
        at: kept,
        poll: PollRequest { offset: 0, count: 5 },
    };
    send(
        &mut workload,
        &mut cluster,
        Action::PollMessages,
        Outcome::PolledNothing,
        poll,
    );
    no_failures(&workload);
    compare_all(&workload, &cluster);
}

#[test]
fn a_purge_stream_plan_purges_every_partition_one_request_at_a_time() {
    let mut workload = MetadataWorkload::new(6, 1);
    let mut cluster = Cluster::new();
    let partitions = stream_with_topic(&mut workload, &mut cluster, 3, 0);
    for at in &partitions {
        send(
            &mut workload,
            &mut cluster,
            Action::SendMessages,
            Outcome::Appended,
            Request::Partition {
                at: *at,
                op: batch(0..4),
            },
        );
    }
    workload.weights = ActionWeights::from_fn(|action| u32::from(action == Action::PurgeStream));
    let mut purged = Vec::new();
    for _ in 0..3 {
        let (request, _) = step(&mut workload, &mut cluster, 0).expect("a plan step");
        assert_eq!(PartitionOp::decode(&request.body), Ok(PartitionOp::Purge));
        purged.push(request.group);
    }
    assert_eq!(purged, partitions.iter().map(|at| at.group).collect::<Vec<_>>());
    assert_eq!(workload.report().requests["PurgeStream"], 3);
    for at in &partitions {
        assert_eq!(
            workload.shadow().partition(at).expect("exists").log.possibly_retained(),
            0
        );
    }
    no_failures(&workload);
    compare_all(&workload, &cluster);
}

// ---- whole runs ----

/// Times a client may find nothing to send (a plane whose actions need partitions
/// before any exist idles until a create is drawn) before a run is declared stuck.
const IDLE_ASKS_MAX: usize = 1_000;

/// `requests` requests of one client under `weights`, compared every 250.
fn run_one_client(seed: u64, requests: usize, weights: ActionWeights) -> (MetadataWorkload, Cluster) {
    let (workload, cluster, _) = run_one_client_compared(seed, requests, weights);
    (workload, cluster)
}

/// As [`run_one_client`], with the sums of what the partition comparisons compared.
fn run_one_client_compared(
    seed: u64,
    requests: usize,
    weights: ActionWeights,
) -> (MetadataWorkload, Cluster, PartitionComparison) {
    let mut workload = MetadataWorkload::with_weights(seed, 1, weights);
    let mut cluster = Cluster::new();
    let mut sums = PartitionComparison::default();
    let (mut sent, mut idle) = (0, 0);
    while sent < requests {
        if step(&mut workload, &mut cluster, 0).is_none() {
            idle += 1;
            assert!(idle < IDLE_ASKS_MAX, "seed {seed}: stuck after {sent} requests");
            continue;
        }
        sent += 1;
        assert!(workload.failures().is_empty(), "seed {seed}: {:?}", workload.failures());
        if sent % 250 == 0 {
            let (_, compared) = compare_all(&workload, &cluster);
            sums.messages_compared += compared.messages_compared;
            sums.offsets_compared += compared.offsets_compared;
            sums.owners_compared += compared.owners_compared;
        }
    }
    (workload, cluster, sums)
}

#[test]
fn one_client_predicts_every_metadata_reply_and_matches_the_state() {
    let weights = ActionWeights::metadata_plane();
    let mut reached: BTreeSet<(&'static str, Outcome)> = BTreeSet::new();
    for seed in [1, 2, 3] {
        let (workload, cluster) = run_one_client(seed, 2_000, weights.clone());
        let report = workload.report();
        assert_eq!(report.failures, 0);
        assert_eq!((report.requests_total(), report.replies_classified), (2_000, 2_000));
        assert!(report.aims_missed.is_empty(), "seed {seed}: {:?}", report.aims_missed);
        for action in Action::ALL.iter().filter(|action| weights.weight(**action) > 0) {
            let name = action.name();
            assert!(
                report.outcomes.contains_key(&(name, Outcome::Ok)),
                "seed {seed}: {name} never Ok"
            );
            assert!(
                report.outcomes.keys().any(|(a, o)| *a == name && *o != Outcome::Ok),
                "seed {seed}: {name} never reached an error"
            );
        }
        reached.extend(report.outcomes.keys().copied());
        let (last, _) = compare_all(&workload, &cluster);
        assert!(last.users_compared > 0 && last.streams_compared > 0, "{last}");
        assert_eq!(workload.defining_outcome_missing("metadata"), None);
    }
    // Every declared outcome of the plane's actions is reached on some seed, except
    // the limits, which the small name pools keep out of reach.
    for action in Action::ALL.iter().filter(|action| weights.weight(**action) > 0) {
        for outcome in action.outcomes() {
            if *outcome != Outcome::LimitReached {
                assert!(
                    reached.contains(&(action.name(), *outcome)),
                    "{} never reached {outcome:?}",
                    action.name()
                );
            }
        }
    }
}

/// FNV-1a-64 over the first 3,000 ops of seeds 1..=4 of the metadata plane (each op's
/// length then bytes): those seeds must keep replaying the same ops.
///
/// Re-locks (each intended):
/// - first locked before the partition actions were appended, and kept through it;
/// - re-locked when the metadata plane began warming up with a successful create
///   (`WarmUp::MetadataCreate`): under heavy faults and crashes a run may get only a
///   handful of requests through, and a third of its runs never created anything;
/// - re-locked when every client began with a login as root (requests act as their
///   session's user) and `RequestAsUser` was appended (weight 2 on this plane).
const METADATA_PLANE_OPS_FINGERPRINT: u64 = 0xf8d3_dca6_d0d6_bac9;

#[test]
fn the_metadata_plane_draws_the_ops_it_drew_before_the_partition_actions() {
    let mut hash = Fnv1a64::default();
    for seed in 1..=4 {
        let mut workload = MetadataWorkload::with_weights(seed, 1, ActionWeights::metadata_plane());
        let mut cluster = Cluster::new();
        for _ in 0..3_000 {
            let (request, _) = step(&mut workload, &mut cluster, 0).expect("a request");
            hash.write(&(request.body.len() as u64).to_le_bytes());
            hash.write(&request.body);
        }
    }
    assert_eq!(hash.finish(), METADATA_PLANE_OPS_FINGERPRINT);
}

#[test]
fn every_plane_passes_with_one_client_and_sees_its_defining_outcomes() {
    let mut reached: BTreeSet<(&'static str, Outcome)> = BTreeSet::new();
    for plane in Plane::ALL {
        let mut sums = PartitionComparison::default();
        for seed in [1, 2] {
            let (workload, _, compared) = run_one_client_compared(seed, 3_000, plane.weights());
            assert_eq!(
                workload.defining_outcome_missing(plane.name()),
                None,
                "{plane:?} seed {seed}: {}",
                workload.report()
            );
            sums.messages_compared += compared.messages_compared;
            sums.offsets_compared += compared.offsets_compared;
            sums.owners_compared += compared.owners_compared;
            reached.extend(workload.report().outcomes.keys().copied());
        }
        // (Uniform draws purges as often as sends, so its partitions are mostly empty
        // when compared; its defining outcomes are checked above.)
        if matches!(plane, Plane::Partition | Plane::Mixed | Plane::Lifecycle) {
            assert!(
                sums.messages_compared > 0 && sums.offsets_compared > 0,
                "{plane:?}: {sums:?}"
            );
        }
        if plane == Plane::Lifecycle {
            assert!(sums.owners_compared > 0, "{plane:?}: {sums:?}");
        }
    }
    // Across the planes, every action appended for partitions reaches every outcome it
    // declares but the limits the pools keep out of reach.
    for action in &Action::ALL[Action::SendMessages as usize..] {
        for outcome in action.outcomes() {
            if *outcome != Outcome::LimitReached {
                assert!(
                    reached.contains(&(action.name(), *outcome)),
                    "{} never reached {outcome:?}",
                    action.name()
                );
            }
        }
    }
}

#[test]
fn several_clients_interleaved_never_false_fail_and_still_match_the_cluster() {
    for (plane, clients) in [
        (Plane::Uniform, 3),
        (Plane::Partition, 4),
        (Plane::Lifecycle, 3),
        (Plane::Mixed, 2),
    ] {
        let mut workload = MetadataWorkload::with_weights(12, clients, plane.weights());
        let mut cluster = Cluster::new();
        for round in 0..700 {
            let sent: Vec<(usize, ClientRequest)> = (0..clients)
                .filter_map(|client| workload.next_request(client).map(|request| (client, request)))
                .collect();
            // Commit in a rotating order, reply in the reverse of it.
            let mut replies = Vec::new();
            for index in 0..sent.len() {
                let (client, request) = &sent[(index + round) % sent.len()];
                replies.push((*client, cluster.answer(*client, request)));
            }
            for (client, (header, body)) in replies.into_iter().rev() {
                workload.on_reply(client, &header, &body);
            }
            assert_eq!(workload.failures(), &[] as &[String], "{plane:?} round {round}");
        }
        let report = workload.report();
        assert_eq!(report.replies_total(), report.replies_classified);
        assert!(report.replies_total() > 1_000, "{plane:?}: {report}");
        // Predictions stayed exact: no aim was missed.
        assert!(report.aims_missed.is_empty(), "{plane:?}: {:?}", report.aims_missed);
        assert_eq!(
            workload.defining_outcome_missing(plane.name()),
            None,
            "{plane:?}: {report}"
        );
        // After the drain (nothing outstanding here), the shadow is exact.
        compare_all(&workload, &cluster);
    }
}

#[test]
fn several_clients_keep_to_their_own_namespaces() {
    let mut workload = MetadataWorkload::with_weights(13, 2, Plane::Mixed.weights());
    let mut cluster = Cluster::new();
    for _ in 0..400 {
        for client in 0..2 {
            step(&mut workload, &mut cluster, client);
        }
    }
    no_failures(&workload);
    let shadow = workload.shadow();
    assert!(shadow.streams.len() >= 2);
    for stream in shadow.streams.values() {
        assert!(
            stream.name.starts_with(&format!("c{}-stream-", stream.owner)),
            "{}",
            stream.name
        );
    }
    for user in shadow.users.values() {
        match user.owner {
            Some(owner) => assert!(user.username.starts_with(&format!("c{owner}-user-"))),
            None => assert_eq!(user.username, "root", "nobody renames root when clients share it"),
        }
    }
}

// ---- judging ----

#[test]
fn a_wrong_reply_is_reported_as_a_failed_prediction() {
    let mut workload = MetadataWorkload::new(9, 1);
    let mut cluster = Cluster::new();
    for _ in 0..2_000 {
        let request = workload.next_request(0).expect("a request");
        let (header, body) = cluster.answer(0, &request);
        if let Ok(MetadataReply::StreamCreated { .. }) = MetadataReply::decode(&body)
            && request.group == request::METADATA_GROUP
        {
            workload.on_reply(0, &header, &MetadataReply::NameAlreadyExists.encode());
            assert_eq!(workload.failures().len(), 1);
            let failure = &workload.failures()[0];
            assert!(
                failure.starts_with("CreateStream predicted Ok, got NameAlreadyExists: CreateStream (aim Ok, client 0, request CreateStream"),
                "{failure}"
            );
            // The shadow followed the reply, so the stream the cluster did create is
            // now a difference the comparison names.
            let error = workload
                .compare_with(&cluster.metadata)
                .expect_err("the shadow missed a stream");
            assert!(error.contains("is in the cluster, not in the shadow"), "{error}");
            return;
        }
        workload.on_reply(0, &header, &body);
        no_failures(&workload);
    }
    panic!("no stream was created in 2,000 requests");
}

#[test]
fn a_wrong_id_is_reported() {
    let mut workload = MetadataWorkload::new(9, 1);
    let mut cluster = Cluster::new();
    loop {
        let request = workload.next_request(0).expect("a request");
        let (header, body) = cluster.answer(0, &request);
        if request.group == request::METADATA_GROUP
            && let Ok(MetadataReply::StreamCreated { stream_id }) = MetadataReply::decode(&body)
        {
            let wrong = MetadataReply::StreamCreated {
                stream_id: stream_id + 5,
            };
            workload.on_reply(0, &header, &wrong.encode());
            assert_eq!(workload.failures().len(), 1, "{:?}", workload.failures());
            assert!(
                workload.failures()[0].contains("got stream id"),
                "{:?}",
                workload.failures()
            );
            return;
        }
        workload.on_reply(0, &header, &body);
    }
}

#[test]
fn state_changed_behind_the_shadows_back_fails_the_comparison() {
    let (workload, mut cluster) = run_one_client(4, 300, ActionWeights::metadata_plane());
    compare_all(&workload, &cluster);
    let reply = cluster.apply(&MetadataOp::CreateStream {
        name: "intruder".into(),
    });
    let MetadataReply::StreamCreated { stream_id } = reply else {
        panic!("the intruder stream was not created: {reply:?}")
    };
    let error = workload
        .compare_with(&cluster.metadata)
        .expect_err("an extra stream is a difference");
    assert!(
        error.contains(&format!(
            "stream {stream_id} (intruder) is in the cluster, not in the shadow"
        )),
        "{error}"
    );

    // A partition written behind the shadow's back: its messages are differences.
    let (workload, mut cluster) = run_one_client(4, 600, Plane::Partition.weights());
    let (group, (state, _)) = cluster.partitions.iter_mut().next().expect("a partition exists");
    let context = partition::ApplyContext {
        timestamp_micros: 1,
        op_number: 1_000,
    };
    state.apply(&batch(7..8), &context);
    let error = workload.compare_partition(*group, state).expect_err("an extra message");
    assert!(error.contains("next offset"), "{error}");
    assert!(
        workload.compare_partition(0xDEAD, state).is_err(),
        "a group the shadow does not know is a difference"
    );
}

#[test]
fn malformed_undeclared_and_misnamed_replies_are_failures() {
    let header_for = |request: &ClientRequest| {
        let mut header = Header::new(Command::Reply);
        header.operation = request.operation;
        header.group = request.group;
        header
    };
    let mut workload = MetadataWorkload::new(5, 1);
    let request = workload.next_request(0).expect("a request");
    workload.on_reply(0, &header_for(&request), &[0xEE, 1, 2]);
    assert!(
        workload.failures()[0].starts_with("malformed reply to "),
        "{:?}",
        workload.failures()
    );
    assert_eq!(workload.outstanding(), 0);

    // A declared-outcome check: StoreStaleOwnerOffset declares only StaleOwner.
    let mut workload = MetadataWorkload::new(5, 1);
    let mut cluster = Cluster::new();
    let at = stream_with_topic(&mut workload, &mut cluster, 1, 0)[0];
    let stale = Request::Partition {
        at,
        op: PartitionOp::StoreConsumerOffset {
            consumer: Consumer::Single { consumer_id: 1 },
            offset: 0,
        },
    };
    let classified = workload.report().replies_classified;
    script(
        &mut workload,
        0,
        Action::StoreStaleOwnerOffset,
        Outcome::StaleOwner,
        stale,
    );
    let request = workload.next_request(0).expect("scripted");
    assert!(
        workload.failures()[0].starts_with("workload bug: "),
        "{:?}",
        workload.failures()
    );
    workload.on_reply(0, &header_for(&request), &PartitionReply::Ok.encode());
    assert!(
        workload
            .failures()
            .iter()
            .any(|f| f.contains("replied Ok, an outcome it does not declare")),
        "{:?}",
        workload.failures()
    );
    assert_eq!(workload.report().replies_classified, classified);

    // The reply must name the request's operation and group.
    let mut workload = MetadataWorkload::new(5, 1);
    let mut cluster = Cluster::new();
    let request = workload.next_request(0).expect("a request");
    let (mut header, body) = cluster.answer(0, &request);
    header.group = 3;
    workload.on_reply(0, &header, &body);
    assert_eq!(workload.failures().len(), 1, "{:?}", workload.failures());
    assert!(
        workload.failures()[0].contains("the reply names operation"),
        "{:?}",
        workload.failures()
    );
}

#[test]
fn a_reply_with_nothing_outstanding_is_a_failure_and_the_comparison_waits_for_the_drain() {
    let mut workload = MetadataWorkload::new(6, 1);
    workload.on_reply(0, &Header::new(Command::Reply), &MetadataReply::Ok.encode());
    assert!(workload.failures()[0].contains("no request outstanding"));

    let mut workload = MetadataWorkload::new(6, 1);
    let cluster = Cluster::new();
    workload.next_request(0).expect("a request");
    assert_eq!(workload.outstanding(), 1);
    assert!(workload.next_request(0).is_none(), "one request in flight per client");
    let error = workload.compare_with(&cluster.metadata).expect_err("not drained");
    assert!(error.contains("outstanding"), "{error}");
    workload.stop();
    assert!(workload.next_request(0).is_none());
}

fn request_sequence(seed: u64, requests: usize) -> Vec<ClientRequest> {
    let mut workload = MetadataWorkload::new(seed, 1);
    let mut cluster = Cluster::new();
    (0..requests)
        .map(|_| step(&mut workload, &mut cluster, 0).expect("a request").0)
        .collect()
}

#[test]
fn same_seed_same_requests() {
    assert_eq!(request_sequence(77, 500), request_sequence(77, 500));
    assert_ne!(request_sequence(77, 500), request_sequence(78, 500));
}

#[test]
fn clients_draw_from_their_own_streams() {
    // Client 2's first request does not depend on whether clients 0 and 1 drew first.
    let mut all = MetadataWorkload::new(11, 3);
    all.next_request(0).expect("a request");
    all.next_request(1).expect("a request");
    let after_others = all.next_request(2).expect("a request");
    let mut alone = MetadataWorkload::new(11, 3);
    assert_eq!(alone.next_request(2), Some(after_others));
}

#[test]
fn weights_select_actions_and_planes_name_their_tables() {
    let weights = ActionWeights::from_fn(|action| u32::from(action == Action::DeleteStream));
    let mut workload = MetadataWorkload::with_weights(13, 1, weights);
    let mut cluster = Cluster::new();
    // The first request is the login, outside any draw.
    log_in(&mut workload, &mut cluster, 0);
    for _ in 0..50 {
        step(&mut workload, &mut cluster, 0);
    }
    let report = workload.report();
    assert_eq!((report.requests["DeleteStream"], report.requests_total()), (50, 51));
    // Nothing to delete: every aim at Ok was unreachable.
    assert!(report.aims_unreachable[&("DeleteStream", Outcome::Ok)] > 0);
    no_failures(&workload);

    // Logged in, then idle.
    let mut idle = MetadataWorkload::with_weights(13, 1, ActionWeights::from_fn(|_| 0));
    log_in(&mut idle, &mut Cluster::new(), 0);
    assert!(idle.next_request(0).is_none());
    // Partition actions with no partition to aim at: idle, not failing.
    let sends = ActionWeights::from_fn(|action| u32::from(action == Action::SendMessages));
    let mut waiting = MetadataWorkload::with_weights(13, 1, sends);
    log_in(&mut waiting, &mut Cluster::new(), 0);
    assert!(waiting.next_request(0).is_none());
    no_failures(&waiting);

    for plane in Plane::ALL {
        assert_eq!(Plane::from_name(plane.name()), Some(plane));
        assert_eq!(ActionWeights::for_plane(plane.name()), Some(plane.weights()));
    }
    assert_eq!(ActionWeights::for_plane("echo"), None);
    assert_eq!(
        Plane::Uniform.weights(),
        ActionWeights::uniform()
            .with_success_weight(weights::DEEP_PLANE_SUCCESS_WEIGHT)
            .with_partitions_budget(weights::CHURN_PLANE_PARTITIONS_BUDGET)
            .with_warm_up(weights::WarmUp::PartitionAppend)
    );
    assert_eq!(Plane::Metadata.weights().warm_up(), weights::WarmUp::MetadataCreate);
    assert_eq!(Plane::Metadata.weights().partitions_budget(), u64::MAX);
    assert_eq!(
        Plane::Partition.weights().partitions_budget(),
        weights::PARTITION_PLANE_PARTITIONS_BUDGET
    );
    assert_eq!(
        Plane::Metadata.weights().success_weight(),
        1,
        "the metadata plane's aims stay uniform"
    );
    let metadata = Plane::Metadata.weights();
    // The partition actions weigh nothing on the metadata plane; `RequestAsUser`, appended
    // after them, makes metadata requests there (a stream create) and does weigh.
    assert!(
        Action::ALL[Action::SendMessages as usize..Action::RequestAsUser as usize]
            .iter()
            .all(|a| metadata.weight(*a) == 0)
    );
    assert!(metadata.weight(Action::RequestAsUser) > 0);
    let lifecycle = Plane::Lifecycle.weights();
    for action in [
        Action::CreateTopic,
        Action::DeleteTopic,
        Action::JoinConsumerGroup,
        Action::SetGroupOwner,
        Action::StoreStaleOwnerOffset,
        Action::StoreConsumerOffset,
        Action::SendMessages,
    ] {
        assert!(lifecycle.weight(action) > 0, "{action:?}");
    }
}

#[test]
fn a_plane_that_missed_its_defining_outcomes_says_which() {
    let workload = MetadataWorkload::new(14, 1);
    assert_eq!(
        workload.defining_outcome_missing("partition").as_deref(),
        Some("an Appended send")
    );
    assert_eq!(
        workload.defining_outcome_missing("uniform").as_deref(),
        Some("a successful metadata create and a reply from a partition's group")
    );
    assert_eq!(
        workload.defining_outcome_missing("lifecycle").as_deref(),
        Some("a StaleOwner refusal (the owner fence) and a SetGroupOwner Ok")
    );
    assert_eq!(
        workload.defining_outcome_missing("metadata").as_deref(),
        Some("a successful metadata create")
    );
    assert!(workload.defining_outcome_missing("echo").is_some());
}

#[test]
fn actions_are_appended_named_after_their_variants_with_distinct_outcomes() {
    const { assert!(Action::COUNT >= 25) };
    for (index, action) in Action::ALL.iter().enumerate() {
        assert_eq!(*action as usize, index);
        assert_eq!(action.name(), format!("{action:?}"));
        let outcomes: BTreeSet<Outcome> = action.outcomes().iter().copied().collect();
        assert_eq!(outcomes.len(), action.outcomes().len(), "{action:?}");
        assert!(!outcomes.is_empty(), "{action:?}");
    }
    for (bit, outcome) in Outcome::ALL.iter().enumerate() {
        assert_eq!(*outcome as usize, bit);
        assert_eq!(OutcomeSet::one(*outcome).exact(), Some(*outcome));
    }
    let both = OutcomeSet::one(Outcome::Ok).with(Outcome::LimitReached);
    assert_eq!(
        (both.exact(), format!("{both:?}")),
        (None, "{Ok, LimitReached}".to_owned())
    );
}

#[test]
fn an_actions_first_declared_outcome_is_its_success() {
    // The success weight weighs the first declared outcome: it must be what the action
    // exists to produce.
    for action in Action::ALL {
        let first = action.outcomes()[0];
        let expected = match action {
            Action::SendMessages => Outcome::Appended,
            Action::PollMessages => Outcome::Polled,
            Action::StoreStaleOwnerOffset => Outcome::StaleOwner,
            Action::DeleteSegments => Outcome::SegmentsDeleted,
            Action::SendOversizedBatch => Outcome::BatchTooLarge,
            Action::RequestAsUser => Outcome::PermissionDenied,
            _ => Outcome::Ok,
        };
        assert_eq!(first, expected, "{action:?}");
    }
    // Weighted: the success comes first far more often than any other aim.
    let weights = ActionWeights::uniform().with_success_weight(4);
    let mut rng = SimRng::new(7);
    let aims = Action::CreateTopic.outcomes();
    let firsts = (0..1_000)
        .filter(|_| weights.pick_aim(Action::CreateTopic, aims, &mut rng) == 0)
        .count();
    // 4 / (4 + 5) of the draws, give or take.
    assert!((380..520).contains(&firsts), "{firsts}");
}

// ---- sessions and permissions ----

#[test]
fn a_node_that_skips_the_partition_permission_check_is_caught() {
    // Load-bearing: `RequestAsUser` predicts a send or poll by a user without the
    // permission is refused; a cluster that lets it through contradicts the shadow.
    let weights = ActionWeights::from_fn(|action| match action {
        Action::CreateStream | Action::CreateTopic | Action::CreateUser => 2,
        Action::SendMessages | Action::RequestAsUser => 3,
        _ => 0,
    });
    let run = |skip: bool| {
        let mut workload = MetadataWorkload::with_weights(21, 1, weights.clone());
        let mut cluster = Cluster::new();
        cluster.skip_partition_permissions = skip;
        for _ in 0..400 {
            step(&mut workload, &mut cluster, 0);
        }
        workload
    };
    let checked = run(false);
    no_failures(&checked);
    let denied = checked
        .report()
        .outcomes
        .get(&("RequestAsUser", Outcome::PermissionDenied))
        .copied();
    assert!(
        denied.unwrap_or(0) > 0,
        "denials were predicted and seen: {:?}",
        checked.report().outcomes
    );
    let unchecked = run(true);
    assert!(
        unchecked
            .failures()
            .iter()
            .any(|failure| failure.contains("RequestAsUser predicted PermissionDenied")),
        "{:?}",
        unchecked.failures()
    );
}
