//! `CreatePartitions`: append partitions to a topic. The new partitions' ids continue
//! the topic's, and their group ids come from the reply header's `op`.

use cluster::metadata::{MetadataReply, PARTITIONS_PER_TOPIC_MAX};

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::{Global, Scope};
use crate::workload::shadow::{self, PARTITIONS_DRAW_MAX, Shadow, TOPIC_PARTITIONS_GROWN_MAX};

/// The action's name.
pub const NAME: &str = "CreatePartitions";

/// Outcomes it can produce (`LimitReached`: the cluster's partitions full).
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, StreamNotFound, TopicNotFound, InvalidPartitionCount, LimitReached);

/// `Ok`: a topic of the client's below [`TOPIC_PARTITIONS_GROWN_MAX`] partitions, grown
/// by 1 to [`PARTITIONS_DRAW_MAX`] within that and the cluster's room;
/// `InvalidPartitionCount`: 0, or past `PARTITIONS_PER_TOPIC_MAX`; `LimitReached`: more
/// than the cluster has room for even if no other client held any; `TopicNotFound`,
/// `StreamNotFound`: absent ids below the client's.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let shadow = scope.shadow;
    let left = scope.partitions_left();
    let (stream_id, topic_id, count) = match aim {
        Outcome::Ok => {
            let (s, t) = scope.pick_topic_where(rng, |topic| topic.partition_count() < TOPIC_PARTITIONS_GROWN_MAX)?;
            let room = TOPIC_PARTITIONS_GROWN_MAX - shadow.topic(s, t)?.partition_count();
            let draw_max = u64::from(room.min(PARTITIONS_DRAW_MAX)).min(scope.partitions_to_create());
            if draw_max == 0 {
                return None;
            }
            // draw_max <= PARTITIONS_DRAW_MAX, so it fits.
            (s, t, rng.range_inclusive(1, draw_max) as u32)
        }
        Outcome::InvalidPartitionCount => {
            let (s, t) = scope.pick_topic_where(rng, |_| true)?;
            let count = if shadow::coin(rng) {
                0
            } else {
                let room = PARTITIONS_PER_TOPIC_MAX - shadow.topic(s, t)?.partition_count();
                room + 1 + rng.below(u64::from(PARTITIONS_DRAW_MAX)) as u32
            };
            (s, t, count)
        }
        Outcome::LimitReached => {
            let (s, t) = scope.pick_topic_where(rng, |topic| {
                u64::from(PARTITIONS_PER_TOPIC_MAX - topic.partition_count()) > left
            })?;
            let room = PARTITIONS_PER_TOPIC_MAX - shadow.topic(s, t)?.partition_count();
            // left < room <= PARTITIONS_PER_TOPIC_MAX, so it fits.
            (s, t, rng.range_inclusive(left + 1, u64::from(room)) as u32)
        }
        Outcome::TopicNotFound | Outcome::StreamNotFound => {
            let (s, t) = scope.missing_topic(rng, aim)?;
            (s, t, 1)
        }
        _ => return None,
    };
    metadata_plan!(CreatePartitions { stream_id, topic_id, count })
}

/// Checks in the state machine's order: stream, topic, count, the cluster's room.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let_metadata_op!(CreatePartitions { stream_id, topic_id, count } = request);
    let topic = topic_or_return!(scope, stream_id, topic_id);
    if *count == 0 || u64::from(topic.partition_count()) + u64::from(*count) > u64::from(PARTITIONS_PER_TOPIC_MAX) {
        return Outcome::InvalidPartitionCount.into();
    }
    super::within(scope.room(Global::Partitions, u64::from(*count)))
}

/// `PartitionsCreated`: the first new id is the topic's partition count before (the
/// topic is the client's, so the shadow knows it), and partitions
/// `first..first + count` are replicated by groups `partition_group_id(reply op, id)`.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let_metadata_answer!(CreatePartitions { stream_id, topic_id, count }, reply = answered);
    match reply {
        MetadataReply::PartitionsCreated { first_partition_id } => {
            let created_at = answered.header.op;
            super::create_topic::note_reused_groups(shadow, created_at, *first_partition_id, *count);
            let Some(topic) = shadow.topic_mut(*stream_id, *topic_id) else {
                return;
            };
            let expected = topic.partition_count();
            topic.add_partitions(*count, created_at);
            if *first_partition_id != expected {
                shadow.note_mismatch(format!(
                    "{NAME} in stream {stream_id} topic {topic_id} answered first partition {first_partition_id}, the shadow predicted {expected}"
                ));
            }
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
