//! `CreateConsumerGroup`: a consumer group on a topic, with a name unique among the
//! topic's groups, no members and generation 0.

use std::collections::BTreeSet;

use cluster::metadata::{CONSUMER_GROUPS_PER_TOPIC_MAX, MetadataReply, is_valid_name};

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::{self, GROUP_PREFIX, Shadow, ShadowGroup, ShadowTopic};

/// The action's name.
pub const NAME: &str = "CreateConsumerGroup";

/// Outcomes it can produce (`LimitReached`: the topic's groups full, or its group id
/// counter spent).
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, NameAlreadyExists, StreamNotFound, TopicNotFound, InvalidName, LimitReached);

fn groups_full(topic: &ShadowTopic) -> bool {
    topic.groups.len() >= CONSUMER_GROUPS_PER_TOPIC_MAX || topic.next_group_id == u32::MAX
}

fn name_taken(topic: &ShadowTopic, name: &str) -> bool {
    topic.groups.values().any(|group| group.name == name)
}

fn fresh_group_name(scope: &Scope<'_>, (stream_id, topic_id): (u32, u32), rng: &mut SimRng) -> Option<String> {
    let topic = scope.shadow.topic(stream_id, topic_id)?;
    scope.fresh_name(GROUP_PREFIX, rng, |n| name_taken(topic, n))
}

/// `Ok`: one of the client's topics with room and a fresh name; `NameAlreadyExists`:
/// a name the topic's groups hold; `StreamNotFound`; `TopicNotFound`: an absent topic
/// of one of the client's streams; `InvalidName`; `LimitReached`: only when a topic's
/// groups are full.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let shadow = scope.shadow;
    let has_fresh_name = |t: &ShadowTopic| scope.has_fresh_name(GROUP_PREFIX, |n| name_taken(t, n));
    let (stream_id, topic_id, name) = match aim {
        Outcome::Ok => {
            let ids = scope.pick_topic_where(rng, |t| !groups_full(t) && has_fresh_name(t))?;
            (ids.0, ids.1, fresh_group_name(scope, ids, rng)?)
        }
        Outcome::LimitReached => {
            let ids = scope.pick_topic_where(rng, |t| groups_full(t) && has_fresh_name(t))?;
            (ids.0, ids.1, fresh_group_name(scope, ids, rng)?)
        }
        Outcome::NameAlreadyExists => {
            let (stream_id, topic_id) = scope.pick_topic_where(rng, |t| !t.groups.is_empty())?;
            let names: Vec<&str> = shadow
                .topic(stream_id, topic_id)?
                .groups
                .values()
                .map(|group| group.name.as_str())
                .collect();
            (stream_id, topic_id, (*shadow::pick(&names, rng)?).to_owned())
        }
        Outcome::StreamNotFound | Outcome::TopicNotFound => {
            let (stream_id, topic_id) = scope.missing_topic(rng, aim)?;
            (stream_id, topic_id, scope.any_name(GROUP_PREFIX, rng))
        }
        Outcome::InvalidName => scope.invalid_name_in_topic(rng),
        _ => return None,
    };
    metadata_plan!(CreateConsumerGroup { stream_id, topic_id, name })
}

/// Checks in the state machine's order: name, stream, topic, uniqueness, room, id counter.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let_metadata_op!(CreateConsumerGroup { stream_id, topic_id, name } = request);
    if !is_valid_name(name) {
        return Outcome::InvalidName.into();
    }
    let topic = topic_or_return!(scope, stream_id, topic_id);
    let outcome = if name_taken(topic, name) {
        Outcome::NameAlreadyExists
    } else if groups_full(topic) {
        Outcome::LimitReached
    } else {
        Outcome::Ok
    };
    outcome.into()
}

/// `GroupCreated`: the group exists under the id the cluster assigned, empty, at
/// generation 0.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let_metadata_answer!(CreateConsumerGroup { stream_id, topic_id, name }, reply = answered);
    match reply {
        MetadataReply::GroupCreated { group_id } => {
            let Some(topic) = shadow.topic_mut(*stream_id, *topic_id) else {
                return;
            };
            let assigned = shadow::advance_counter(&mut topic.next_group_id, *group_id);
            topic.groups.insert(
                *group_id,
                ShadowGroup {
                    name: name.clone(),
                    members: BTreeSet::new(),
                    generation: 0,
                },
            );
            if let Err(predicted) = assigned {
                shadow.note_mismatch(format!(
                    "{NAME} in stream {stream_id} topic {topic_id} got group id {group_id}, the shadow predicted {predicted}"
                ));
            }
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
