//! `LeaveConsumerGroup`: remove a member from a consumer group; the generation goes up
//! by one.

use cluster::metadata::MetadataReply;

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::{self, MEMBER_POOL_SIZE, Shadow};

use super::join_consumer_group::{member_of_missing_group, some_member};

/// The action's name.
pub const NAME: &str = "LeaveConsumerGroup";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, StreamNotFound, TopicNotFound, GroupNotFound, MemberNotFound);

/// `Ok`: a member of a group of the client's; `MemberNotFound`: a pool member not in
/// it; `GroupNotFound`, `TopicNotFound`, `StreamNotFound`: absent ids below the client's.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let shadow = scope.shadow;
    let (stream_id, topic_id, group_id, member_id) = match aim {
        Outcome::Ok => some_member(scope, rng)?,
        Outcome::MemberNotFound => {
            let (s, t, g) =
                scope.pick_group_where(rng, |group| (0..MEMBER_POOL_SIZE).any(|m| !group.members.contains(&m)))?;
            let group = shadow.topic(s, t)?.groups.get(&g)?;
            let absent: Vec<u32> = (0..MEMBER_POOL_SIZE).filter(|m| !group.members.contains(m)).collect();
            (s, t, g, *shadow::pick(&absent, rng)?)
        }
        Outcome::GroupNotFound | Outcome::TopicNotFound | Outcome::StreamNotFound => {
            member_of_missing_group(scope, rng, aim)?
        }
        _ => return None,
    };
    metadata_plan!(LeaveConsumerGroup { stream_id, topic_id, group_id, member_id })
}

/// Checks in the state machine's order: stream, topic, group, membership.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let_metadata_op!(LeaveConsumerGroup { stream_id, topic_id, group_id, member_id } = request);
    let topic = topic_or_return!(scope, stream_id, topic_id);
    let outcome = match topic.groups.get(group_id) {
        None => Outcome::GroupNotFound,
        Some(group) if !group.members.contains(member_id) => Outcome::MemberNotFound,
        Some(_) => Outcome::Ok,
    };
    outcome.into()
}

/// `Left`: the member is out, and the generation is one more than before.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let_metadata_answer!(LeaveConsumerGroup { stream_id, topic_id, group_id, member_id }, reply = answered);
    match reply {
        MetadataReply::Left { generation } => {
            let Some(group) = shadow.group_mut(*stream_id, *topic_id, *group_id) else {
                return;
            };
            let expected = group.generation + 1;
            group.members.remove(member_id);
            group.generation = *generation;
            if *generation != expected {
                shadow.note_mismatch(format!(
                    "{NAME} of member {member_id} from group {group_id} (stream {stream_id} topic {topic_id}) answered generation {generation}, the shadow predicted {expected}"
                ));
            }
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
