//! `UpdateTopic`: rename a topic or change its durability or message expiry (existing
//! partitions keep the expiry they were created with).

use cluster::metadata::is_valid_name;

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::{self, Shadow, TOPIC_PREFIX};

/// The action's name.
pub const NAME: &str = "UpdateTopic";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, NameAlreadyExists, StreamNotFound, TopicNotFound, InvalidName);

/// `Ok`: one of the client's topics, a fresh name or its own; `NameAlreadyExists`: a
/// sibling's name; `StreamNotFound`; `TopicNotFound`: an absent topic of one of the
/// client's streams; `InvalidName`.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let shadow = scope.shadow;
    let (stream_id, topic_id, name) = match aim {
        Outcome::Ok => {
            let (stream_id, topic_id) = scope.pick_topic_where(rng, |_| true)?;
            let stream = &shadow.streams[&stream_id];
            let fresh = scope.fresh_name(TOPIC_PREFIX, rng, |n| stream.topics.values().any(|t| t.name == n));
            let name = match fresh {
                Some(name) if shadow::coin(rng) => name,
                _ => stream.topics[&topic_id].name.clone(),
            };
            (stream_id, topic_id, name)
        }
        Outcome::NameAlreadyExists => {
            let stream_id = scope.pick_stream_where(rng, |s| s.topics.len() >= 2)?;
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
        Outcome::StreamNotFound | Outcome::TopicNotFound => {
            let (stream_id, topic_id) = scope.missing_topic(rng, aim)?;
            (stream_id, topic_id, scope.any_name(TOPIC_PREFIX, rng))
        }
        Outcome::InvalidName => scope.invalid_name_in_topic(rng),
        _ => return None,
    };
    metadata_plan!(UpdateTopic { stream_id, topic_id, name, durability: shadow::durability(rng), message_expiry_micros: shadow::expiry(rng) })
}

/// Checks in the state machine's order: name, stream, topic, uniqueness among siblings.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let_metadata_op!(UpdateTopic { stream_id, topic_id, name, .. } = request);
    if !is_valid_name(name) {
        return Outcome::InvalidName.into();
    }
    let Some(stream) = scope.shadow.streams.get(stream_id) else {
        return Outcome::StreamNotFound.into();
    };
    let outcome = if !stream.topics.contains_key(topic_id) {
        Outcome::TopicNotFound
    } else if stream.topics.iter().any(|(id, t)| id != topic_id && t.name == *name) {
        Outcome::NameAlreadyExists
    } else {
        Outcome::Ok
    };
    outcome.into()
}

/// `Ok`: the topic has the new name, durability and expiry.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let_metadata_answer!(UpdateTopic { stream_id, topic_id, name, durability, message_expiry_micros }, reply = answered);
    if super::replied_ok(shadow, NAME, reply)
        && let Some(topic) = shadow.topic_mut(*stream_id, *topic_id)
    {
        topic.name = name.clone();
        topic.set_durability(*durability);
        topic.message_expiry_micros = *message_expiry_micros;
    }
}
