//! `DeleteConsumerGroup`: delete a consumer group from its topic. (Partitions keep the
//! group's offsets and owners: group ids are never reused, so they name nothing.)

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::{self, Shadow};

/// The action's name.
pub const NAME: &str = "DeleteConsumerGroup";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, StreamNotFound, TopicNotFound, GroupNotFound);

/// `Ok`: a group of one of the client's topics; `StreamNotFound`; `TopicNotFound`: an
/// absent topic of one of its streams; `GroupNotFound`: an absent group of one of its
/// topics.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let shadow = scope.shadow;
    let (stream_id, topic_id, group_id) = match aim {
        Outcome::Ok => {
            let (stream_id, topic_id) = scope.pick_topic_where(rng, |t| !t.groups.is_empty())?;
            let group_id = shadow::pick_key(&shadow.topic(stream_id, topic_id)?.groups, rng)?;
            (stream_id, topic_id, group_id)
        }
        Outcome::StreamNotFound | Outcome::TopicNotFound => {
            let (stream_id, topic_id) = scope.missing_topic(rng, aim)?;
            (stream_id, topic_id, rng.below(shadow::ABSENT_ID_SPAN) as u32)
        }
        Outcome::GroupNotFound => scope.missing_group(rng)?,
        _ => return None,
    };
    metadata_plan!(DeleteConsumerGroup { stream_id, topic_id, group_id })
}

/// Checks in the state machine's order: stream, topic, group.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let_metadata_op!(DeleteConsumerGroup { stream_id, topic_id, group_id } = request);
    let topic = topic_or_return!(scope, stream_id, topic_id);
    if topic.groups.contains_key(group_id) {
        Outcome::Ok.into()
    } else {
        Outcome::GroupNotFound.into()
    }
}

/// `Ok`: the group is gone.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let_metadata_answer!(DeleteConsumerGroup { stream_id, topic_id, group_id }, reply = answered);
    if super::replied_ok(shadow, NAME, reply)
        && let Some(topic) = shadow.topic_mut(*stream_id, *topic_id)
    {
        topic.groups.remove(group_id);
    }
}
