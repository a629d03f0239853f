//! `UpdateTopic`: rename a topic or change its durability or message expiry.

use cluster::metadata::{MetadataOp, MetadataReply, Outcome, is_valid_name};

use crate::rng::SimRng;
use crate::workload::shadow::{self, Shadow, TOPIC_PREFIX};

/// The action's name.
pub const NAME: &str = "UpdateTopic";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = &[
    Outcome::Ok,
    Outcome::NameAlreadyExists,
    Outcome::StreamNotFound,
    Outcome::TopicNotFound,
    Outcome::InvalidName,
];

/// Whether `op` is an `UpdateTopic`.
pub fn matches(op: &MetadataOp) -> bool {
    matches!(op, MetadataOp::UpdateTopic { .. })
}

/// `Ok`: an existing topic, a fresh name or its own; `NameAlreadyExists`: a sibling's
/// name; `StreamNotFound`; `TopicNotFound`: an absent topic of an existing stream;
/// `InvalidName`.
pub fn generate(shadow: &Shadow, rng: &mut SimRng, aim: Outcome) -> Option<MetadataOp> {
    let (stream_id, topic_id, name) = match aim {
        Outcome::Ok => {
            let (stream_id, topic_id) = shadow.pick_topic_where(rng, |_| true)?;
            let stream = &shadow.streams[&stream_id];
            let fresh = shadow::fresh_name(TOPIC_PREFIX, rng, |n| stream.topics.values().any(|t| t.name == n));
            let name = match fresh {
                Some(name) if shadow::coin(rng) => name,
                _ => stream.topics[&topic_id].name.clone(),
            };
            (stream_id, topic_id, name)
        }
        Outcome::NameAlreadyExists => {
            let stream_id = shadow.pick_stream_where(rng, |s| s.topics.len() >= 2)?;
            let topics = &shadow.streams[&stream_id].topics;
            let ids: Vec<u32> = topics.keys().copied().collect();
            let topic_id = *shadow::pick(&ids, rng)?;
            let others: Vec<&str> = topics
                .iter()
                .filter(|(id, _)| **id != topic_id)
                .map(|(_, t)| t.name.as_str())
                .collect();
            (stream_id, topic_id, (*shadow::pick(&others, rng)?).to_owned())
        }
        Outcome::StreamNotFound => (
            shadow.absent_stream_id(rng),
            rng.below(shadow::ABSENT_ID_SPAN) as u32,
            shadow::any_pool_name(TOPIC_PREFIX, rng),
        ),
        Outcome::TopicNotFound => {
            let stream_id = shadow.pick_stream(rng)?;
            let stream = &shadow.streams[&stream_id];
            let topic_id = shadow::absent_key(&stream.topics, stream.next_topic_id, rng);
            (stream_id, topic_id, shadow::any_pool_name(TOPIC_PREFIX, rng))
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
    Some(MetadataOp::UpdateTopic {
        stream_id,
        topic_id,
        name,
        durability: shadow::durability(rng),
        message_expiry_micros: shadow::expiry(rng),
    })
}

/// Checks in the state machine's order: name, stream, topic, uniqueness among siblings.
pub fn predict(shadow: &Shadow, op: &MetadataOp) -> Outcome {
    let MetadataOp::UpdateTopic {
        stream_id,
        topic_id,
        name,
        ..
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
    if !stream.topics.contains_key(topic_id) {
        Outcome::TopicNotFound
    } else if stream.topics.iter().any(|(id, t)| id != topic_id && t.name == *name) {
        Outcome::NameAlreadyExists
    } else {
        Outcome::Ok
    }
}

/// `Ok`: the topic has the new name, durability and expiry.
pub fn observe(shadow: &mut Shadow, op: &MetadataOp, reply: &MetadataReply) {
    let MetadataOp::UpdateTopic {
        stream_id,
        topic_id,
        name,
        durability,
        message_expiry_micros,
    } = op
    else {
        super::wrong_op(NAME, op)
    };
    match reply {
        MetadataReply::Ok => {
            let topic = shadow
                .streams
                .get_mut(stream_id)
                .and_then(|stream| stream.topics.get_mut(topic_id));
            if let Some(topic) = topic {
                topic.name = name.clone();
                topic.durability = *durability;
                topic.message_expiry_micros = *message_expiry_micros;
            }
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
