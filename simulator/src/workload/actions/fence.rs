//! Consumers as the partition owner fence sees them, shared by the offset actions:
//! drawing one the fence lets through or one it refuses, predicting the fence, and
//! checking what a refusal reports.
//!
//! The fence: a group offset write (store or delete) must come from the group's owner
//! of the partition at the owner's generation; a group with no owner yet accepts any
//! member; a standalone consumer is never fenced. It is checked before the offset.

use cluster::partition::{Consumer, GroupOwner};

use crate::rng::SimRng;
use crate::workload::request::PartitionAt;
use crate::workload::scope::Scope;
use crate::workload::shadow::{self, MEMBER_POOL_SIZE, Shadow, ShadowPartition};

/// A consumer whose writes to the partition at `at` pass the fence: a standalone
/// consumer, or (for a consumer group of the topic) the owner at its generation, or
/// when the group has no owner yet, a member at the group's generation.
pub fn allowed_consumer(scope: &Scope<'_>, at: &PartitionAt, rng: &mut SimRng) -> Consumer {
    let single = |rng: &mut SimRng| Consumer::Single {
        consumer_id: rng.below(u64::from(MEMBER_POOL_SIZE)) as u32,
    };
    let (Some(topic), Some(partition)) = (
        scope.shadow.topic(at.stream_id, at.topic_id),
        scope.shadow.partition(at),
    ) else {
        return single(rng);
    };
    if shadow::coin(rng) {
        return single(rng);
    }
    let Some(group_id) = shadow::pick_key(&topic.groups, rng) else {
        return single(rng);
    };
    if let Some(owner) = partition.owners.get(&group_id) {
        return Consumer::Group {
            group_id,
            member_id: owner.member_id,
            generation: owner.generation,
        };
    }
    let group = &topic.groups[&group_id];
    let members: Vec<u32> = group.members.iter().copied().collect();
    let member_id = match shadow::pick(&members, rng) {
        Some(member) => *member,
        None => rng.below(u64::from(MEMBER_POOL_SIZE)) as u32,
    };
    Consumer::Group {
        group_id,
        member_id,
        generation: group.generation,
    }
}

/// A group consumer the fence refuses on `partition`: for a group with an owner, a
/// former owner after a hand-off when there was one, else another member at the
/// owner's generation. `None` if no group owns the partition.
pub fn stale_consumer(partition: &ShadowPartition, rng: &mut SimRng) -> Option<Consumer> {
    let group_id = shadow::pick_key(&partition.owners, rng)?;
    let owner = partition.owners[&group_id];
    // Generations only grow, so a former owner is never the current one, except after
    // a whole-cluster power outage took a `replicated` partition's newer owners back:
    // leave out any former that is the owner again.
    let formers: Vec<GroupOwner> = partition
        .former_owners
        .get(&group_id)
        .map(|formers| formers.iter().copied().filter(|former| *former != owner).collect())
        .unwrap_or_default();
    let stale = match shadow::pick(&formers, rng) {
        Some(former) => *former,
        None => GroupOwner {
            // Any pool member other than the owner: the owner + 1..POOL, wrapped.
            member_id: (owner.member_id + 1 + rng.below(u64::from(MEMBER_POOL_SIZE - 1)) as u32) % MEMBER_POOL_SIZE,
            generation: owner.generation,
        },
    };
    Some(Consumer::Group {
        group_id,
        member_id: stale.member_id,
        generation: stale.generation,
    })
}

/// Whether the fence lets `consumer` write to `partition`.
pub fn passes(partition: &ShadowPartition, consumer: &Consumer) -> bool {
    match *consumer {
        Consumer::Single { .. } => true,
        Consumer::Group {
            group_id,
            member_id,
            generation,
        } => partition.fence_allows(group_id, member_id, generation),
    }
}

/// Note a `StaleOwner` refusal reporting a generation other than the owner's.
pub fn check_refusal(
    shadow: &mut Shadow,
    action: &str,
    at: &PartitionAt,
    consumer: &Consumer,
    current_generation: u64,
) {
    let Consumer::Group { group_id, .. } = *consumer else {
        return;
    };
    let owner = shadow
        .partition(at)
        .and_then(|partition| partition.owners.get(&group_id).copied());
    if owner.map(|owner| owner.generation) != Some(current_generation) {
        shadow.note_mismatch(format!(
            "{action} on group {:#x} was refused StaleOwner at generation {current_generation}; the shadow's owner of group {group_id} is {owner:?}",
            at.group
        ));
    }
}
