//! The shadow, by example: group ids from the create reply, offsets of consecutive sends, stale owners, polls judged message by message, purges and retention.

use super::*;

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
                assert_some_failure(&workload, |f| {
                    f.starts_with("StoreStaleOwnerOffset predicted StaleOwner, got ")
                });
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
