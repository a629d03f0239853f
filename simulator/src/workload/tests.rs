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

mod judging;
mod shadow;

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

/// Asserts that each of `actions` reached every outcome it declares, by (action name,
/// outcome) as a report counts them, except `LimitReached`: the tests' small name pools
/// keep the limits out of reach.
#[track_caller]
fn assert_every_outcome_but_limits_reached<'a>(
    actions: impl IntoIterator<Item = &'a Action>,
    reached: &BTreeSet<(&str, Outcome)>,
) {
    for action in actions {
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

/// Asserts that some failure of `workload` passes `matches`, listing every failure
/// when none does.
#[track_caller]
fn assert_some_failure(workload: &MetadataWorkload, matches: impl Fn(&str) -> bool) {
    let failures = workload.failures();
    assert!(failures.iter().any(|failure| matches(failure)), "{failures:?}");
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
    assert_every_outcome_but_limits_reached(
        Action::ALL.iter().filter(|action| weights.weight(**action) > 0),
        &reached,
    );
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
    assert_every_outcome_but_limits_reached(&Action::ALL[Action::SendMessages as usize..], &reached);
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
    assert_some_failure(&unchecked, |failure| {
        failure.contains("RequestAsUser predicted PermissionDenied")
    });
}
