//! `DeleteTopic`: delete a topic with its partitions (their groups vanish) and its
//! consumer groups.

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::Shadow;

/// The action's name.
pub const NAME: &str = "DeleteTopic";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, StreamNotFound, TopicNotFound);

/// `Ok`: one of the client's topics; `StreamNotFound`: an absent stream;
/// `TopicNotFound`: an absent topic of one of the client's streams.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let (stream_id, topic_id) = match aim {
        Outcome::Ok => scope.pick_topic_where(rng, |_| true)?,
        Outcome::StreamNotFound | Outcome::TopicNotFound => scope.missing_topic(rng, aim)?,
        _ => return None,
    };
    metadata_plan!(DeleteTopic { stream_id, topic_id })
}

/// Checks in the state machine's order: stream, topic.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let_metadata_op!(DeleteTopic { stream_id, topic_id } = request);
    let outcome = match scope.shadow.streams.get(stream_id) {
        None => Outcome::StreamNotFound,
        Some(stream) if !stream.topics.contains_key(topic_id) => Outcome::TopicNotFound,
        Some(_) => Outcome::Ok,
    };
    outcome.into()
}

/// `Ok`: the topic is gone with its partitions and groups.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let_metadata_answer!(DeleteTopic { stream_id, topic_id }, reply = answered);
    if super::replied_ok(shadow, NAME, reply)
        && let Some(stream) = shadow.streams.get_mut(stream_id)
    {
        stream.topics.remove(topic_id);
    }
}
