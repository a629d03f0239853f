//! `SetGroupOwner`: hand a partition to a consumer group member at the group's current
//! metadata generation (what a rebalance after a join or leave does). The partition
//! refuses a generation not above the one it holds (`StaleGeneration`).

use cluster::partition::{GroupOwner, PartitionOp, PartitionReply};

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::{self, Shadow, ShadowPartition};

/// The action's name.
pub const NAME: &str = "SetGroupOwner";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, StaleGeneration);

/// The generation `partition` holds for `group_id` (0 when the group owns none).
fn held(partition: &ShadowPartition, group_id: u32) -> u64 {
    partition.owners.get(&group_id).map_or(0, |owner| owner.generation)
}

/// `Ok`: a partition of the client's and a group of its topic whose metadata
/// generation moved past the one the partition holds, handed to a member (another than
/// the current owner when there is one); `StaleGeneration`: a group the partition holds
/// an owner for, at that generation or below (or a group it holds none for, at 0).
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let shadow = scope.shadow;
    let (at, group_id, member_id, generation) = match aim {
        Outcome::Ok => {
            let handable = |topic: &shadow::ShadowTopic, partition: &ShadowPartition| {
                topic
                    .groups
                    .iter()
                    .any(|(id, group)| !group.members.is_empty() && group.generation > held(partition, *id))
            };
            let at = scope.pick_partition_where(rng, handable)?;
            let (topic, partition) = (shadow.topic(at.stream_id, at.topic_id)?, shadow.partition(&at)?);
            let groups: Vec<u32> = topic
                .groups
                .iter()
                .filter(|(id, group)| !group.members.is_empty() && group.generation > held(partition, **id))
                .map(|(id, _)| *id)
                .collect();
            let group_id = *shadow::pick(&groups, rng)?;
            let group = &topic.groups[&group_id];
            let current = partition.owners.get(&group_id).map(|owner| owner.member_id);
            let others: Vec<u32> = group.members.iter().copied().filter(|m| Some(*m) != current).collect();
            let all: Vec<u32> = group.members.iter().copied().collect();
            let member_id = *shadow::pick(&others, rng).or_else(|| shadow::pick(&all, rng))?;
            (at, group_id, member_id, group.generation)
        }
        Outcome::StaleGeneration => {
            let at = scope.pick_partition_where(rng, |topic, partition| {
                !partition.owners.is_empty() || !topic.groups.is_empty()
            })?;
            let (topic, partition) = (shadow.topic(at.stream_id, at.topic_id)?, shadow.partition(&at)?);
            let (group_id, generation) = match shadow::pick_key(&partition.owners, rng) {
                Some(group_id) => (group_id, rng.range_inclusive(0, held(partition, group_id))),
                None => (shadow::pick_key(&topic.groups, rng)?, 0),
            };
            let member_id = rng.below(u64::from(shadow::MEMBER_POOL_SIZE)) as u32;
            (at, group_id, member_id, generation)
        }
        _ => return None,
    };
    let op = PartitionOp::SetGroupOwner {
        group_id,
        member_id,
        generation,
    };
    Some(Request::Partition { at, op }.into())
}

/// `Ok` for a generation above the one the partition holds.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let (at, PartitionOp::SetGroupOwner {
        group_id, generation, ..
    }) = super::partition_op(NAME, request)
    else {
        super::wrong_op(NAME, request)
    };
    let current = scope.shadow.partition(&at).map_or(0, |partition| held(partition, *group_id));
    if *generation > current {
        Outcome::Ok.into()
    } else {
        Outcome::StaleGeneration.into()
    }
}

/// `Ok`: the member owns the partition for the group at that generation; the owner it
/// replaced becomes a former owner.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let (at, op, reply) = super::partition_answer(NAME, answered);
    let PartitionOp::SetGroupOwner {
        group_id,
        member_id,
        generation,
    } = op
    else {
        super::wrong_op(NAME, answered.request)
    };
    match reply {
        PartitionReply::Ok => {
            if let Some(partition) = shadow.partition_mut(&at) {
                partition.set_owner(
                    *group_id,
                    GroupOwner {
                        member_id: *member_id,
                        generation: *generation,
                    },
                );
            }
        }
        other => super::unexpected_partition_reply(shadow, NAME, &other),
    }
}
