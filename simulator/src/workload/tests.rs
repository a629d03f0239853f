//! The workload driven against a real `MetadataState`, no network: request, decode,
//! apply with a made-up context, encode the reply, judge it.

use std::collections::BTreeSet;

use cluster::metadata::{ApplyContext, DEFAULT_ROOT_PASSWORD, MetadataOp, MetadataReply, MetadataState, Outcome};
use cluster::wire::{Command, Header};

use super::*;

/// A state machine stand-in: applies ops with op numbers 1, 2, 3, ..., increasing
/// timestamps and counter entropy.
struct Cluster {
    state: MetadataState,
    op_number: u64,
}

impl Cluster {
    fn new() -> Self {
        Self {
            state: MetadataState::new(DEFAULT_ROOT_PASSWORD, 0xC1_0057),
            op_number: 0,
        }
    }

    fn apply(&mut self, op: &MetadataOp) -> MetadataReply {
        self.op_number += 1;
        let context = ApplyContext {
            timestamp_micros: 1_767_225_600_000_000 + self.op_number * 10_000,
            op_number: self.op_number,
            view: 0,
            entropy: self.op_number.wrapping_mul(0x9E37_79B9_7F4A_7C15),
        };
        self.state.apply(op, &context)
    }
}

fn reply_header(operation: u8) -> Header {
    let mut header = Header::new(Command::Reply);
    header.operation = operation;
    header
}

/// One request of `client`: its op, decoded from the bytes the workload sent.
fn request(workload: &mut MetadataWorkload, client: usize) -> (u8, MetadataOp) {
    let (operation, body) = workload
        .next_request(client)
        .expect("the workload always has a request");
    let op = MetadataOp::decode(&body).expect("the workload sends ops that decode");
    assert_eq!(op.operation_code(), operation);
    let pending = workload.clients[client]
        .pending
        .as_ref()
        .expect("a request is outstanding");
    assert_eq!(Action::of(&op), Some(pending.action), "{op:?}");
    (operation, op)
}

/// One request of client 0 applied and answered.
fn step(workload: &mut MetadataWorkload, cluster: &mut Cluster) {
    let (operation, op) = request(workload, 0);
    let reply = cluster.apply(&op);
    workload.on_reply(0, &reply_header(operation), &reply.encode());
}

/// `ops` requests of one client; the comparison sums of a comparison every 100 ops.
fn run_one_client(seed: u64, ops: usize) -> (MetadataWorkload, Cluster, ShadowComparison) {
    // The metadata plane's own mix, which keeps the state deep enough for every action.
    let mut workload = MetadataWorkload::with_weights(seed, 1, ActionWeights::metadata_plane());
    let mut cluster = Cluster::new();
    let mut sums = ShadowComparison::default();
    for n in 1..=ops {
        step(&mut workload, &mut cluster);
        if n % 100 == 0 {
            let compared = workload
                .compare_with(&cluster.state)
                .unwrap_or_else(|error| panic!("seed {seed} after {n} ops: {error}"));
            sums.streams_compared += compared.streams_compared;
            sums.topics_compared += compared.topics_compared;
            sums.groups_compared += compared.groups_compared;
            sums.users_compared += compared.users_compared;
            sums.tokens_compared += compared.tokens_compared;
        }
    }
    (workload, cluster, sums)
}

#[test]
fn one_client_predicts_every_reply_and_matches_the_state() {
    let mut reached: BTreeSet<(&'static str, Outcome)> = BTreeSet::new();
    for seed in [1, 2, 3] {
        let (workload, cluster, sums) = run_one_client(seed, 2_000);
        assert_eq!(workload.failures(), &[] as &[String], "seed {seed}");
        let report = workload.report();
        assert_eq!(report.failures, 0);
        assert_eq!(report.requests_total(), 2_000);
        assert_eq!(report.replies_total(), 2_000);
        assert_eq!(report.replies_classified, 2_000);
        assert!(report.aims_missed.is_empty(), "seed {seed}: {:?}", report.aims_missed);
        for action in Action::ALL {
            let name = action.name();
            assert!(report.requests[name] > 0, "seed {seed}: {name} never issued");
            assert!(
                report.outcomes.contains_key(&(name, Outcome::Ok)),
                "seed {seed}: {name} never reached Ok"
            );
            assert!(
                report
                    .outcomes
                    .keys()
                    .any(|(action, outcome)| *action == name && *outcome != Outcome::Ok),
                "seed {seed}: {name} never reached an error"
            );
        }
        reached.extend(report.outcomes.keys().copied());
        let last = workload
            .compare_with(&cluster.state)
            .expect("the shadow matches at the end");
        assert!(!last.skipped && last.users_compared > 0, "{last}");
        for (what, count) in [
            ("streams", sums.streams_compared),
            ("topics", sums.topics_compared),
            ("groups", sums.groups_compared),
            ("users", sums.users_compared),
            ("tokens", sums.tokens_compared),
        ] {
            assert!(count > 0, "seed {seed}: no {what} compared");
        }
        assert!(report.to_string().contains("failures=0"), "{report}");
    }
    // Every declared outcome is reached on some seed, except the limits, which the
    // small name pools keep out of reach.
    for action in Action::ALL {
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
fn a_wrong_reply_is_reported_as_a_failed_prediction() {
    let mut workload = MetadataWorkload::new(9, 1);
    let mut cluster = Cluster::new();
    for _ in 0..2_000 {
        let (operation, op) = request(&mut workload, 0);
        let reply = cluster.apply(&op);
        if matches!(reply, MetadataReply::StreamCreated { .. }) {
            workload.on_reply(0, &reply_header(operation), &MetadataReply::NameAlreadyExists.encode());
            assert_eq!(workload.failures().len(), 1);
            assert!(
                workload.failures()[0].starts_with("CreateStream predicted Ok, got NameAlreadyExists"),
                "{:?}",
                workload.failures()
            );
            // The shadow followed the reply, so the stream the cluster did create is
            // now a difference the comparison names.
            let error = workload
                .compare_with(&cluster.state)
                .expect_err("the shadow missed a stream");
            assert!(error.contains("is in the cluster, not in the shadow"), "{error}");
            return;
        }
        workload.on_reply(0, &reply_header(operation), &reply.encode());
        assert!(workload.failures().is_empty(), "{:?}", workload.failures());
    }
    panic!("no stream was created in 2,000 ops");
}

#[test]
fn a_wrong_id_is_reported() {
    let mut workload = MetadataWorkload::new(9, 1);
    let mut cluster = Cluster::new();
    loop {
        let (operation, op) = request(&mut workload, 0);
        let reply = cluster.apply(&op);
        if let MetadataReply::StreamCreated { stream_id } = reply {
            let wrong = MetadataReply::StreamCreated {
                stream_id: stream_id + 5,
            };
            workload.on_reply(0, &reply_header(operation), &wrong.encode());
            assert_eq!(workload.failures().len(), 1, "{:?}", workload.failures());
            assert!(
                workload.failures()[0].contains("got stream id"),
                "{:?}",
                workload.failures()
            );
            return;
        }
        workload.on_reply(0, &reply_header(operation), &reply.encode());
    }
}

#[test]
fn state_changed_behind_the_shadows_back_fails_the_comparison() {
    let (workload, mut cluster, _) = run_one_client(4, 300);
    workload
        .compare_with(&cluster.state)
        .expect("equal before the intrusion");
    let reply = cluster.apply(&MetadataOp::CreateStream {
        name: "intruder".into(),
    });
    let MetadataReply::StreamCreated { stream_id } = reply else {
        panic!("the intruder stream was not created: {reply:?}")
    };
    let error = workload
        .compare_with(&cluster.state)
        .expect_err("an extra stream is a difference");
    assert!(
        error.contains(&format!(
            "stream {stream_id} (intruder) is in the cluster, not in the shadow"
        )),
        "{error}"
    );

    // A field change is named with its field.
    let (workload, mut cluster, _) = run_one_client(4, 300);
    let (user_id, user) = workload
        .shadow()
        .users
        .iter()
        .next()
        .map(|(id, user)| (*id, user.clone()))
        .expect("root exists");
    let reply = cluster.apply(&MetadataOp::UpdateUser {
        user_id,
        username: Some(format!("{}-renamed", user.username)),
        active: None,
    });
    assert_eq!(reply, MetadataReply::Ok);
    let error = workload
        .compare_with(&cluster.state)
        .expect_err("a renamed user is a difference");
    assert!(error.contains(&format!("user {user_id} username")), "{error}");
}

#[test]
fn malformed_undeclared_and_misnamed_replies_are_failures() {
    let mut workload = MetadataWorkload::new(5, 1);
    let (operation, _) = request(&mut workload, 0);
    workload.on_reply(0, &reply_header(operation), &[0xEE, 1, 2]);
    assert!(
        workload.failures()[0].starts_with("malformed reply"),
        "{:?}",
        workload.failures()
    );
    assert_eq!(workload.outstanding(), 0);

    let mut workload = MetadataWorkload::new(5, 1);
    let (operation, op) = request(&mut workload, 0);
    let action = Action::of(&op).expect("an action's op");
    let undeclared = Outcome::ALL
        .into_iter()
        .find(|outcome| !action.outcomes().contains(outcome))
        .expect("no action declares every outcome");
    let reply = match undeclared {
        Outcome::GroupNotFound => MetadataReply::GroupNotFound,
        Outcome::TokenExpired => MetadataReply::TokenExpired,
        _ => MetadataReply::UserInactive,
    };
    assert!(!action.outcomes().contains(&reply.outcome()));
    workload.on_reply(0, &reply_header(operation), &reply.encode());
    assert!(
        workload
            .failures()
            .iter()
            .any(|f| f.contains("an outcome it does not declare")),
        "{:?}",
        workload.failures()
    );
    assert_eq!(workload.report().replies_classified, 0);

    let mut workload = MetadataWorkload::new(5, 1);
    let mut cluster = Cluster::new();
    let (operation, op) = request(&mut workload, 0);
    let reply = cluster.apply(&op);
    workload.on_reply(0, &reply_header(operation.wrapping_add(1)), &reply.encode());
    assert_eq!(workload.failures().len(), 1, "{:?}", workload.failures());
    assert!(workload.failures()[0].contains("the reply names operation"));
}

#[test]
fn a_reply_with_nothing_outstanding_is_a_failure_and_the_comparison_waits_for_the_drain() {
    let mut workload = MetadataWorkload::new(6, 1);
    workload.on_reply(0, &reply_header(1), &MetadataReply::Ok.encode());
    assert!(workload.failures()[0].contains("no request outstanding"));

    let mut workload = MetadataWorkload::new(6, 1);
    let cluster = Cluster::new();
    request(&mut workload, 0);
    assert_eq!(workload.outstanding(), 1);
    assert!(workload.next_request(0).is_none(), "one request in flight per client");
    let error = workload.compare_with(&cluster.state).expect_err("not drained");
    assert!(error.contains("outstanding"), "{error}");
    workload.stop();
    assert!(workload.next_request(0).is_none());
}

fn op_sequence(seed: u64, ops: usize) -> Vec<Vec<u8>> {
    let mut workload = MetadataWorkload::new(seed, 1);
    let mut cluster = Cluster::new();
    let mut sent = Vec::new();
    for _ in 0..ops {
        let (operation, op) = request(&mut workload, 0);
        sent.push(op.encode());
        let reply = cluster.apply(&op);
        workload.on_reply(0, &reply_header(operation), &reply.encode());
    }
    sent
}

#[test]
fn same_seed_same_ops() {
    assert_eq!(op_sequence(77, 500), op_sequence(77, 500));
    assert_ne!(op_sequence(77, 500), op_sequence(78, 500));
}

#[test]
fn clients_draw_from_their_own_streams() {
    // Client 2's first request does not depend on whether clients 0 and 1 drew first,
    // nor client 0's on how many clients there are.
    let mut all = MetadataWorkload::new(11, 3);
    let first_of_0 = request(&mut all, 0).1;
    request(&mut all, 1);
    let after_others = request(&mut all, 2).1;
    let mut alone = MetadataWorkload::new(11, 3);
    assert_eq!(request(&mut alone, 2).1, after_others);
    let mut single = MetadataWorkload::new(11, 1);
    assert_eq!(request(&mut single, 0).1, first_of_0);
}

#[test]
fn several_clients_interleaved_pass_the_declared_outcome_checks_and_skip_the_comparison() {
    let clients = 3;
    let mut workload = MetadataWorkload::new(12, clients);
    let mut cluster = Cluster::new();
    for round in 0..700 {
        let requests: Vec<(usize, u8, MetadataOp)> = (0..clients)
            .map(|client| {
                let (operation, op) = request(&mut workload, client);
                (client, operation, op)
            })
            .collect();
        // Commit in a rotating order, reply in the reverse of it.
        let mut replies = Vec::new();
        for index in 0..clients {
            let (client, operation, op) = &requests[(index + round) % clients];
            replies.push((*client, *operation, cluster.apply(op)));
        }
        for (client, operation, reply) in replies.into_iter().rev() {
            workload.on_reply(client, &reply_header(operation), &reply.encode());
        }
    }
    assert_eq!(workload.failures(), &[] as &[String]);
    let report = workload.report();
    assert_eq!(report.replies_total(), 2_100);
    assert_eq!(report.replies_classified, 2_100);
    assert!(
        report.outcomes_reached() > WorkloadReport::outcomes_declared() / 2,
        "{report}"
    );
    let comparison = workload.compare_with(&cluster.state).expect("skipped, not failed");
    assert!(comparison.skipped);
    assert_eq!(comparison.streams_compared + comparison.users_compared, 0);
}

#[test]
fn weights_select_actions() {
    let weights = ActionWeights::from_fn(|action| u32::from(action == Action::DeleteStream));
    let mut workload = MetadataWorkload::with_weights(13, 1, weights);
    let mut cluster = Cluster::new();
    for _ in 0..50 {
        step(&mut workload, &mut cluster);
    }
    let report = workload.report();
    assert_eq!(report.requests["DeleteStream"], 50);
    assert_eq!(report.requests_total(), 50);
    // Nothing to delete: every aim at Ok was unreachable.
    assert!(report.aims_unreachable[&("DeleteStream", Outcome::Ok)] > 0);
    assert!(workload.failures().is_empty());

    let nothing = ActionWeights::from_fn(|_| 0);
    let mut idle = MetadataWorkload::with_weights(13, 1, nothing);
    assert!(idle.next_request(0).is_none());
}

#[test]
fn action_names_match_variants_and_outcomes_are_distinct() {
    assert_eq!(Action::COUNT, 16);
    for (index, action) in Action::ALL.iter().enumerate() {
        assert_eq!(*action as usize, index);
        assert_eq!(action.name(), format!("{action:?}"));
        let outcomes: BTreeSet<Outcome> = action.outcomes().iter().copied().collect();
        assert_eq!(outcomes.len(), action.outcomes().len(), "{action:?}");
        assert!(outcomes.contains(&Outcome::Ok), "{action:?}");
    }
}
