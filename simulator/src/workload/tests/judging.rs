//! How answers are judged: wrong replies, wrong ids, state changed behind the shadow, malformed replies; seeds, client streams, weights and the action table.

use super::*;

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
    assert_some_failure(&workload, |f| f.contains("replied Ok, an outcome it does not declare"));
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
    for (plane, missing) in [
        ("partition", "an Appended send"),
        (
            "uniform",
            "a successful metadata create and a reply from a partition's group",
        ),
        (
            "lifecycle",
            "a StaleOwner refusal (the owner fence) and a SetGroupOwner Ok",
        ),
        ("metadata", "a successful metadata create"),
    ] {
        assert_eq!(workload.defining_outcome_missing(plane).as_deref(), Some(missing));
    }
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
