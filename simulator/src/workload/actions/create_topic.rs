//! `CreateTopic`: a topic in a stream, with a partition count, durability and message
//! expiry.

use std::collections::BTreeMap;

use cluster::metadata::{
    MetadataOp, MetadataReply, Outcome, PARTITIONS_PER_TOPIC_MAX, PARTITIONS_TOTAL_MAX, TOPICS_PER_STREAM_MAX,
    is_valid_name,
};

use crate::rng::SimRng;
use crate::workload::shadow::{self, PARTITIONS_DRAW_MAX, Shadow, ShadowStream, ShadowTopic, TOPIC_PREFIX};

/// The action's name.
pub const NAME: &str = "CreateTopic";

/// Outcomes it can produce (`LimitReached`: the stream's topics full, the cluster's
/// partitions full, or the stream's topic id counter spent).
pub const OUTCOMES: &[Outcome] = &[
    Outcome::Ok,
    Outcome::NameAlreadyExists,
    Outcome::StreamNotFound,
    Outcome::InvalidName,
    Outcome::InvalidPartitionCount,
    Outcome::LimitReached,
];

/// Whether `op` is a `CreateTopic`.
pub fn matches(op: &MetadataOp) -> bool {
    matches!(op, MetadataOp::CreateTopic { .. })
}

fn topics_full(stream: &ShadowStream) -> bool {
    stream.topics.len() >= TOPICS_PER_STREAM_MAX || stream.next_topic_id == u32::MAX
}

fn name_taken(stream: &ShadowStream, name: &str) -> bool {
    stream.topics.values().any(|topic| topic.name == name)
}

fn has_fresh_name(stream: &ShadowStream) -> bool {
    (0..shadow::NAME_POOL_SIZE).any(|i| !name_taken(stream, &shadow::pool_name(TOPIC_PREFIX, i)))
}

fn fresh_topic_name(shadow: &Shadow, stream_id: u32, rng: &mut SimRng) -> Option<String> {
    let stream = shadow.streams.get(&stream_id)?;
    shadow::fresh_name(TOPIC_PREFIX, rng, |n| name_taken(stream, n))
}

/// Partitions the cluster still has room for.
fn partitions_left(shadow: &Shadow) -> u64 {
    PARTITIONS_TOTAL_MAX.saturating_sub(shadow.partition_count())
}

fn small_partitions(rng: &mut SimRng) -> u32 {
    rng.range_inclusive(1, u64::from(PARTITIONS_DRAW_MAX)) as u32
}

/// `Ok`: a stream with room and a fresh name, 1 to [`PARTITIONS_DRAW_MAX`] partitions
/// (within the cluster's room); `NameAlreadyExists`: a topic name the stream holds;
/// `StreamNotFound`: an absent stream; `InvalidName`; `InvalidPartitionCount`: 0 or
/// above [`PARTITIONS_PER_TOPIC_MAX`]; `LimitReached`: only when the shadow is at a
/// bound (topics per stream, or fewer than a topic's worth of partitions left).
pub fn generate(shadow: &Shadow, rng: &mut SimRng, aim: Outcome) -> Option<MetadataOp> {
    let left = partitions_left(shadow);
    let (stream_id, name, partitions) = match aim {
        Outcome::Ok => {
            let draw_max = u64::from(PARTITIONS_DRAW_MAX).min(left);
            if draw_max == 0 {
                return None;
            }
            let stream_id = shadow.pick_stream_where(rng, |s| !topics_full(s) && has_fresh_name(s))?;
            let name = fresh_topic_name(shadow, stream_id, rng)?;
            // draw_max <= PARTITIONS_DRAW_MAX, so it fits.
            (stream_id, name, rng.range_inclusive(1, draw_max) as u32)
        }
        Outcome::NameAlreadyExists => {
            let stream_id = shadow.pick_stream_where(rng, |s| !s.topics.is_empty())?;
            let names: Vec<&str> = shadow.streams[&stream_id]
                .topics
                .values()
                .map(|t| t.name.as_str())
                .collect();
            let name = (*shadow::pick(&names, rng)?).to_owned();
            (stream_id, name, small_partitions(rng))
        }
        Outcome::StreamNotFound => (
            shadow.absent_stream_id(rng),
            shadow::any_pool_name(TOPIC_PREFIX, rng),
            small_partitions(rng),
        ),
        Outcome::InvalidName => {
            let stream_id = any_stream_id(shadow, rng);
            (stream_id, shadow::invalid_name(rng), small_partitions(rng))
        }
        Outcome::InvalidPartitionCount => {
            let stream_id = any_stream_id(shadow, rng);
            let partitions = if shadow::coin(rng) {
                0
            } else {
                PARTITIONS_PER_TOPIC_MAX + 1 + rng.below(u64::from(PARTITIONS_DRAW_MAX)) as u32
            };
            (stream_id, shadow::any_pool_name(TOPIC_PREFIX, rng), partitions)
        }
        Outcome::LimitReached => {
            if let Some(stream_id) = shadow.pick_stream_where(rng, |s| topics_full(s) && has_fresh_name(s)) {
                let name = fresh_topic_name(shadow, stream_id, rng)?;
                (stream_id, name, small_partitions(rng))
            } else if left < u64::from(PARTITIONS_PER_TOPIC_MAX) {
                let stream_id = shadow.pick_stream_where(rng, |s| !topics_full(s) && has_fresh_name(s))?;
                let name = fresh_topic_name(shadow, stream_id, rng)?;
                // left + 1 <= PARTITIONS_PER_TOPIC_MAX, so it fits.
                let partitions = rng.range_inclusive(left + 1, u64::from(PARTITIONS_PER_TOPIC_MAX)) as u32;
                (stream_id, name, partitions)
            } else {
                return None;
            }
        }
        _ => return None,
    };
    Some(MetadataOp::CreateTopic {
        stream_id,
        name,
        partitions,
        durability: shadow::durability(rng),
        message_expiry_micros: shadow::expiry(rng),
    })
}

/// An existing stream or an absent one, for aims decided before the stream is looked up.
fn any_stream_id(shadow: &Shadow, rng: &mut SimRng) -> u32 {
    match shadow.pick_stream(rng) {
        Some(id) if shadow::coin(rng) => id,
        _ => shadow.absent_stream_id(rng),
    }
}

/// Checks in the state machine's order: name, partition count, stream, uniqueness,
/// topics per stream, partitions in the cluster, id counter.
pub fn predict(shadow: &Shadow, op: &MetadataOp) -> Outcome {
    let MetadataOp::CreateTopic {
        stream_id,
        name,
        partitions,
        ..
    } = op
    else {
        super::wrong_op(NAME, op)
    };
    if !is_valid_name(name) {
        return Outcome::InvalidName;
    }
    if !(1..=PARTITIONS_PER_TOPIC_MAX).contains(partitions) {
        return Outcome::InvalidPartitionCount;
    }
    let Some(stream) = shadow.streams.get(stream_id) else {
        return Outcome::StreamNotFound;
    };
    if name_taken(stream, name) {
        Outcome::NameAlreadyExists
    } else if stream.topics.len() >= TOPICS_PER_STREAM_MAX
        || shadow.partition_count() + u64::from(*partitions) > PARTITIONS_TOTAL_MAX
        || stream.next_topic_id == u32::MAX
    {
        Outcome::LimitReached
    } else {
        Outcome::Ok
    }
}

/// `TopicCreated`: the topic exists under the id the cluster assigned.
pub fn observe(shadow: &mut Shadow, op: &MetadataOp, reply: &MetadataReply) {
    let MetadataOp::CreateTopic {
        stream_id,
        name,
        partitions,
        durability,
        message_expiry_micros,
    } = op
    else {
        super::wrong_op(NAME, op)
    };
    match reply {
        MetadataReply::TopicCreated { topic_id } => {
            let Some(stream) = shadow.streams.get_mut(stream_id) else {
                return;
            };
            let assigned = shadow::advance_counter(&mut stream.next_topic_id, *topic_id);
            stream.topics.insert(
                *topic_id,
                ShadowTopic {
                    name: name.clone(),
                    partitions: *partitions,
                    durability: *durability,
                    message_expiry_micros: *message_expiry_micros,
                    groups: BTreeMap::new(),
                    next_group_id: 0,
                },
            );
            if let Err(predicted) = assigned {
                shadow.note_id_mismatch(format!(
                    "{NAME} in stream {stream_id} got topic id {topic_id}, the shadow predicted {predicted}"
                ));
            }
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
