//! `CreateConsumerGroup`: a consumer group on a topic, with a name unique among the
//! topic's groups.

use cluster::metadata::{CONSUMER_GROUPS_PER_TOPIC_MAX, MetadataOp, MetadataReply, Outcome, is_valid_name};

use crate::rng::SimRng;
use crate::workload::shadow::{self, GROUP_PREFIX, Shadow, ShadowTopic};

/// The action's name.
pub const NAME: &str = "CreateConsumerGroup";

/// Outcomes it can produce (`LimitReached`: the topic's groups full, or its group id
/// counter spent).
pub const OUTCOMES: &[Outcome] = &[
    Outcome::Ok,
    Outcome::NameAlreadyExists,
    Outcome::StreamNotFound,
    Outcome::TopicNotFound,
    Outcome::InvalidName,
    Outcome::LimitReached,
];

/// Whether `op` is a `CreateConsumerGroup`.
pub fn matches(op: &MetadataOp) -> bool {
    matches!(op, MetadataOp::CreateConsumerGroup { .. })
}

fn groups_full(topic: &ShadowTopic) -> bool {
    topic.groups.len() >= CONSUMER_GROUPS_PER_TOPIC_MAX || topic.next_group_id == u32::MAX
}

fn name_taken(topic: &ShadowTopic, name: &str) -> bool {
    topic.groups.values().any(|group| group == name)
}

fn has_fresh_name(topic: &ShadowTopic) -> bool {
    (0..shadow::NAME_POOL_SIZE).any(|i| !name_taken(topic, &shadow::pool_name(GROUP_PREFIX, i)))
}

fn fresh_group_name(shadow: &Shadow, (stream_id, topic_id): (u32, u32), rng: &mut SimRng) -> Option<String> {
    let topic = shadow.topic(stream_id, topic_id)?;
    shadow::fresh_name(GROUP_PREFIX, rng, |n| name_taken(topic, n))
}

/// `Ok`: a topic with room and a fresh name; `NameAlreadyExists`: a name the topic's
/// groups hold; `StreamNotFound`; `TopicNotFound`: an absent topic of an existing
/// stream; `InvalidName`; `LimitReached`: only when a topic's groups are full.
pub fn generate(shadow: &Shadow, rng: &mut SimRng, aim: Outcome) -> Option<MetadataOp> {
    let (stream_id, topic_id, name) = match aim {
        Outcome::Ok => {
            let ids = shadow.pick_topic_where(rng, |t| !groups_full(t) && has_fresh_name(t))?;
            (ids.0, ids.1, fresh_group_name(shadow, ids, rng)?)
        }
        Outcome::LimitReached => {
            let ids = shadow.pick_topic_where(rng, |t| groups_full(t) && has_fresh_name(t))?;
            (ids.0, ids.1, fresh_group_name(shadow, ids, rng)?)
        }
        Outcome::NameAlreadyExists => {
            let (stream_id, topic_id) = shadow.pick_topic_where(rng, |t| !t.groups.is_empty())?;
            let names: Vec<&str> = shadow
                .topic(stream_id, topic_id)?
                .groups
                .values()
                .map(String::as_str)
                .collect();
            (stream_id, topic_id, (*shadow::pick(&names, rng)?).to_owned())
        }
        Outcome::StreamNotFound => (
            shadow.absent_stream_id(rng),
            rng.below(shadow::ABSENT_ID_SPAN) as u32,
            shadow::any_pool_name(GROUP_PREFIX, rng),
        ),
        Outcome::TopicNotFound => {
            let stream_id = shadow.pick_stream(rng)?;
            let stream = &shadow.streams[&stream_id];
            let topic_id = shadow::absent_key(&stream.topics, stream.next_topic_id, rng);
            (stream_id, topic_id, shadow::any_pool_name(GROUP_PREFIX, rng))
        }
        Outcome::InvalidName => match shadow.pick_topic_where(rng, |_| true) {
            Some((stream_id, topic_id)) if shadow::coin(rng) => (stream_id, topic_id, shadow::invalid_name(rng)),
            _ => (
                shadow.absent_stream_id(rng),
                rng.below(shadow::ABSENT_ID_SPAN) as u32,
                shadow::invalid_name(rng),
            ),
        },
        _ => return None,
    };
    Some(MetadataOp::CreateConsumerGroup {
        stream_id,
        topic_id,
        name,
    })
}

/// Checks in the state machine's order: name, stream, topic, uniqueness, room, id counter.
pub fn predict(shadow: &Shadow, op: &MetadataOp) -> Outcome {
    let MetadataOp::CreateConsumerGroup {
        stream_id,
        topic_id,
        name,
    } = op
    else {
        super::wrong_op(NAME, op)
    };
    if !is_valid_name(name) {
        return Outcome::InvalidName;
    }
    let Some(stream) = shadow.streams.get(stream_id) else {
        return Outcome::StreamNotFound;
    };
    let Some(topic) = stream.topics.get(topic_id) else {
        return Outcome::TopicNotFound;
    };
    if name_taken(topic, name) {
        Outcome::NameAlreadyExists
    } else if groups_full(topic) {
        Outcome::LimitReached
    } else {
        Outcome::Ok
    }
}

/// `GroupCreated`: the group exists under the id the cluster assigned.
pub fn observe(shadow: &mut Shadow, op: &MetadataOp, reply: &MetadataReply) {
    let MetadataOp::CreateConsumerGroup {
        stream_id,
        topic_id,
        name,
    } = op
    else {
        super::wrong_op(NAME, op)
    };
    match reply {
        MetadataReply::GroupCreated { group_id } => {
            let topic = shadow
                .streams
                .get_mut(stream_id)
                .and_then(|stream| stream.topics.get_mut(topic_id));
            let Some(topic) = topic else {
                return;
            };
            let assigned = shadow::advance_counter(&mut topic.next_group_id, *group_id);
            topic.groups.insert(*group_id, name.clone());
            if let Err(predicted) = assigned {
                shadow.note_id_mismatch(format!(
                    "{NAME} in stream {stream_id} topic {topic_id} got group id {group_id}, the shadow predicted {predicted}"
                ));
            }
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
