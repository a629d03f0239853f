//! `DeleteConsumerGroup`: delete a consumer group from its topic.

use cluster::metadata::{MetadataOp, MetadataReply, Outcome};

use crate::rng::SimRng;
use crate::workload::shadow::{self, Shadow};

/// The action's name.
pub const NAME: &str = "DeleteConsumerGroup";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = &[
    Outcome::Ok,
    Outcome::StreamNotFound,
    Outcome::TopicNotFound,
    Outcome::GroupNotFound,
];

/// Whether `op` is a `DeleteConsumerGroup`.
pub fn matches(op: &MetadataOp) -> bool {
    matches!(op, MetadataOp::DeleteConsumerGroup { .. })
}

/// `Ok`: an existing group; `StreamNotFound`; `TopicNotFound`: an absent topic of an
/// existing stream; `GroupNotFound`: an absent group of an existing topic.
pub fn generate(shadow: &Shadow, rng: &mut SimRng, aim: Outcome) -> Option<MetadataOp> {
    let (stream_id, topic_id, group_id) = match aim {
        Outcome::Ok => {
            let (stream_id, topic_id) = shadow.pick_topic_where(rng, |t| !t.groups.is_empty())?;
            let group_id = shadow::pick_key(&shadow.topic(stream_id, topic_id)?.groups, rng)?;
            (stream_id, topic_id, group_id)
        }
        Outcome::StreamNotFound => (
            shadow.absent_stream_id(rng),
            rng.below(shadow::ABSENT_ID_SPAN) as u32,
            rng.below(shadow::ABSENT_ID_SPAN) as u32,
        ),
        Outcome::TopicNotFound => {
            let stream_id = shadow.pick_stream(rng)?;
            let stream = &shadow.streams[&stream_id];
            let topic_id = shadow::absent_key(&stream.topics, stream.next_topic_id, rng);
            (stream_id, topic_id, rng.below(shadow::ABSENT_ID_SPAN) as u32)
        }
        Outcome::GroupNotFound => {
            let (stream_id, topic_id) = shadow.pick_topic_where(rng, |_| true)?;
            let topic = shadow.topic(stream_id, topic_id)?;
            (
                stream_id,
                topic_id,
                shadow::absent_key(&topic.groups, topic.next_group_id, rng),
            )
        }
        _ => return None,
    };
    Some(MetadataOp::DeleteConsumerGroup {
        stream_id,
        topic_id,
        group_id,
    })
}

/// Checks in the state machine's order: stream, topic, group.
pub fn predict(shadow: &Shadow, op: &MetadataOp) -> Outcome {
    let MetadataOp::DeleteConsumerGroup {
        stream_id,
        topic_id,
        group_id,
    } = op
    else {
        super::wrong_op(NAME, op)
    };
    let Some(stream) = shadow.streams.get(stream_id) else {
        return Outcome::StreamNotFound;
    };
    match stream.topics.get(topic_id) {
        None => Outcome::TopicNotFound,
        Some(topic) if !topic.groups.contains_key(group_id) => Outcome::GroupNotFound,
        Some(_) => Outcome::Ok,
    }
}

/// `Ok`: the group is gone.
pub fn observe(shadow: &mut Shadow, op: &MetadataOp, reply: &MetadataReply) {
    let MetadataOp::DeleteConsumerGroup {
        stream_id,
        topic_id,
        group_id,
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
                topic.groups.remove(group_id);
            }
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
