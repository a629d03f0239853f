//! `DeleteTopic`: delete a topic with its consumer groups.

use cluster::metadata::{MetadataOp, MetadataReply, Outcome};

use crate::rng::SimRng;
use crate::workload::shadow::{self, Shadow};

/// The action's name.
pub const NAME: &str = "DeleteTopic";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = &[Outcome::Ok, Outcome::StreamNotFound, Outcome::TopicNotFound];

/// Whether `op` is a `DeleteTopic`.
pub fn matches(op: &MetadataOp) -> bool {
    matches!(op, MetadataOp::DeleteTopic { .. })
}

/// `Ok`: an existing topic; `StreamNotFound`: an absent stream; `TopicNotFound`: an
/// absent topic of an existing stream.
pub fn generate(shadow: &Shadow, rng: &mut SimRng, aim: Outcome) -> Option<MetadataOp> {
    let (stream_id, topic_id) = match aim {
        Outcome::Ok => shadow.pick_topic_where(rng, |_| true)?,
        Outcome::StreamNotFound => (shadow.absent_stream_id(rng), rng.below(shadow::ABSENT_ID_SPAN) as u32),
        Outcome::TopicNotFound => {
            let stream_id = shadow.pick_stream(rng)?;
            let stream = &shadow.streams[&stream_id];
            (stream_id, shadow::absent_key(&stream.topics, stream.next_topic_id, rng))
        }
        _ => return None,
    };
    Some(MetadataOp::DeleteTopic { stream_id, topic_id })
}

/// Checks in the state machine's order: stream, topic.
pub fn predict(shadow: &Shadow, op: &MetadataOp) -> Outcome {
    let MetadataOp::DeleteTopic { stream_id, topic_id } = op else {
        super::wrong_op(NAME, op)
    };
    match shadow.streams.get(stream_id) {
        None => Outcome::StreamNotFound,
        Some(stream) if !stream.topics.contains_key(topic_id) => Outcome::TopicNotFound,
        Some(_) => Outcome::Ok,
    }
}

/// `Ok`: the topic is gone with its groups.
pub fn observe(shadow: &mut Shadow, op: &MetadataOp, reply: &MetadataReply) {
    let MetadataOp::DeleteTopic { stream_id, topic_id } = op else {
        super::wrong_op(NAME, op)
    };
    match reply {
        MetadataReply::Ok => {
            if let Some(stream) = shadow.streams.get_mut(stream_id) {
                stream.topics.remove(topic_id);
            }
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
