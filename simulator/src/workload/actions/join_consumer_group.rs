//! `JoinConsumerGroup`: add a member to a consumer group; the group's generation goes
//! up by one, which is what lets `SetGroupOwner` hand its partitions over again.

use cluster::metadata::{MEMBERS_PER_GROUP_MAX, MetadataReply};

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::{self, MEMBER_POOL_SIZE, Shadow, ShadowGroup};

/// The action's name.
pub const NAME: &str = "JoinConsumerGroup";

/// Outcomes it can produce (`LimitReached`: [`MEMBERS_PER_GROUP_MAX`] members, out of
/// reach of the member pool but declared, as the state machine can answer it).
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, StreamNotFound, TopicNotFound, GroupNotFound, AlreadyMember, LimitReached);

fn full(group: &ShadowGroup) -> bool {
    group.members.len() >= MEMBERS_PER_GROUP_MAX
}

/// A pool member id `group` does not have.
fn newcomer(group: &ShadowGroup, rng: &mut SimRng) -> Option<u32> {
    let free: Vec<u32> = (0..MEMBER_POOL_SIZE).filter(|m| !group.members.contains(m)).collect();
    shadow::pick(&free, rng).copied()
}

fn has_newcomer(group: &ShadowGroup) -> bool {
    (0..MEMBER_POOL_SIZE).any(|m| !group.members.contains(&m))
}

/// (stream, topic, group, member): a member of one of the client's groups (shared with
/// `LeaveConsumerGroup`, which aims `Ok` where this aims `AlreadyMember`).
pub(super) fn some_member(scope: &Scope<'_>, rng: &mut SimRng) -> Option<(u32, u32, u32, u32)> {
    let (s, t, g) = scope.pick_group_where(rng, |group| !group.members.is_empty())?;
    let members: Vec<u32> = scope.shadow.topic(s, t)?.groups.get(&g)?.members.iter().copied().collect();
    Some((s, t, g, *shadow::pick(&members, rng)?))
}

/// (stream, topic, group, member) for an aim at `GroupNotFound`, `TopicNotFound` or
/// `StreamNotFound`: absent ids below the client's and any pool member (shared with
/// `LeaveConsumerGroup`).
pub(super) fn member_of_missing_group(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<(u32, u32, u32, u32)> {
    let (s, t, g) = match aim {
        Outcome::GroupNotFound => scope.missing_group(rng)?,
        _ => {
            let (s, t) = scope.missing_topic(rng, aim)?;
            (s, t, 0)
        }
    };
    Some((s, t, g, rng.below(u64::from(MEMBER_POOL_SIZE)) as u32))
}

/// `Ok`: a group of the client's with room and a pool member not in it;
/// `AlreadyMember`: one of its members; `LimitReached`: only a full group;
/// `GroupNotFound`, `TopicNotFound`, `StreamNotFound`: absent ids below the client's.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let shadow = scope.shadow;
    let (stream_id, topic_id, group_id, member_id) = match aim {
        Outcome::Ok | Outcome::LimitReached => {
            let want_full = aim == Outcome::LimitReached;
            let (s, t, g) = scope.pick_group_where(rng, |group| full(group) == want_full && has_newcomer(group))?;
            let group = shadow.topic(s, t)?.groups.get(&g)?;
            (s, t, g, newcomer(group, rng)?)
        }
        Outcome::AlreadyMember => some_member(scope, rng)?,
        Outcome::GroupNotFound | Outcome::TopicNotFound | Outcome::StreamNotFound => {
            member_of_missing_group(scope, rng, aim)?
        }
        _ => return None,
    };
    metadata_plan!(JoinConsumerGroup { stream_id, topic_id, group_id, member_id })
}

/// Checks in the state machine's order: stream, topic, group, membership, room.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let_metadata_op!(JoinConsumerGroup { stream_id, topic_id, group_id, member_id } = request);
    let topic = topic_or_return!(scope, stream_id, topic_id);
    let outcome = match topic.groups.get(group_id) {
        None => Outcome::GroupNotFound,
        Some(group) if group.members.contains(member_id) => Outcome::AlreadyMember,
        Some(group) if full(group) => Outcome::LimitReached,
        Some(_) => Outcome::Ok,
    };
    outcome.into()
}

/// `Joined`: the member is in, and the generation is one more than before (the group
/// is the client's, so the shadow knows the one before).
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let_metadata_answer!(JoinConsumerGroup { stream_id, topic_id, group_id, member_id }, reply = answered);
    match reply {
        MetadataReply::Joined { generation } => {
            let Some(group) = shadow.group_mut(*stream_id, *topic_id, *group_id) else {
                return;
            };
            let expected = group.generation + 1;
            group.members.insert(*member_id);
            group.generation = *generation;
            if *generation != expected {
                shadow.note_mismatch(format!(
                    "{NAME} of member {member_id} to group {group_id} (stream {stream_id} topic {topic_id}) answered generation {generation}, the shadow predicted {expected}"
                ));
            }
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
