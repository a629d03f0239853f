//! What the shadow learns from a whole-cluster power outage: each partition's state as
//! the cluster recovered it, judged against its topic's durability mode.
//!
//! A `persisted` topic publishes every prepare before it is acknowledged, so after any
//! power loss a partition persisted since its creation holds exactly what the shadow
//! predicts: any difference is a lost acknowledged write. One whose topic became
//! `persisted` later must hold every message from the offset it became persisted at
//! (`ShadowPartition::persisted_from`); what it acknowledged before may not have been
//! published. A `replicated` topic acknowledges once its WAL has queued a
//! prepare; a write is safe while a replica that holds it stays up, and an outage
//! takes them all, so its partitions may come back at an earlier op: its messages a
//! prefix of the shadow's (never a different message at an offset the shadow holds),
//! consumer offsets and group owners as they were at that op. The shadow counts what
//! was lost, then takes the recovered state as its own, so the run goes on exact.
//!
//! Does not check: that the op a replicated partition came back at is at or above its
//! last publication (the shadow does not see publications), or that the consumer
//! offsets and owners it came back with are ones it had at that op (the shadow keeps
//! no history of them).

use std::collections::BTreeMap;

use cluster::partition::PartitionState;

use super::shadow_partition::{ShadowLog, ShadowMessage, ShadowPartition};

/// What one partition lost in an outage, as its durability mode allows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutageLoss {
    /// Partitions judged.
    pub partitions: u64,
    /// Of those, `persisted` partitions found exactly as predicted.
    pub persisted_intact: u64,
    /// Acknowledged messages of `replicated` partitions the outage took.
    pub messages_lost: u64,
    /// Consumer offsets and group owners of `replicated` partitions that came back
    /// different (an earlier value, or none).
    pub offsets_or_owners_reverted: u64,
    /// Messages compared with the recovered log.
    pub messages_compared: u64,
}

impl OutageLoss {
    /// Both counts added.
    pub fn plus(self, other: OutageLoss) -> OutageLoss {
        OutageLoss {
            partitions: self.partitions + other.partitions,
            persisted_intact: self.persisted_intact + other.persisted_intact,
            messages_lost: self.messages_lost + other.messages_lost,
            offsets_or_owners_reverted: self.offsets_or_owners_reverted + other.offsets_or_owners_reverted,
            messages_compared: self.messages_compared + other.messages_compared,
        }
    }
}

/// Judge `recovered` (the partition's state on its primary after the outage) against
/// `partition` and its durability history, then make the shadow hold it. `Err` names
/// what no durability mode allows.
pub fn rebase(partition: &mut ShadowPartition, recovered: &PartitionState) -> Result<OutageLoss, String> {
    let mut loss = OutageLoss {
        partitions: 1,
        ..OutageLoss::default()
    };
    if partition.persisted_since_creation {
        let mut differences = Vec::new();
        let (messages, _, _) = partition.compare(recovered, &mut differences);
        if !differences.is_empty() {
            return Err(format!(
                "persisted partition {} (group {:#x}) came back from a whole-cluster power outage without \
                 acknowledged state: {}",
                partition.id,
                partition.group,
                differences.join("; ")
            ));
        }
        loss.persisted_intact = 1;
        loss.messages_compared = messages;
        return Ok(loss);
    }
    let log = recovered.log();
    let shadow_next = partition.log.next_offset();
    if log.next_offset() > shadow_next {
        return Err(format!(
            "replicated partition {} (group {:#x}) came back from a whole-cluster power outage with next offset {}, \
             past the {shadow_next} the shadow saw acknowledged (nothing was in flight)",
            partition.id,
            partition.group,
            log.next_offset()
        ));
    }
    let mut messages = Vec::new();
    for message in log.segments().iter().flat_map(|segment| segment.messages()) {
        let actual = ShadowMessage::observed(message.id, message.payload, message.timestamp_micros);
        if let Some(expected) = partition.log.message(message.offset) {
            loss.messages_compared += 1;
            if *expected != actual {
                return Err(format!(
                    "replicated partition {} (group {:#x}) came back from a whole-cluster power outage with a \
                     different message at offset {}: shadow {expected:?}, cluster {actual:?} (an outage may take a \
                     suffix, never change what stays)",
                    partition.id, partition.group, message.offset
                ));
            }
        }
        messages.push(actual);
    }
    let oldest = log.oldest_offset().min(log.next_offset());
    // usize -> u64 is lossless on every supported target.
    if messages.len() as u64 != log.next_offset() - oldest {
        return Err(format!(
            "replicated partition {} (group {:#x}) came back with {} messages retained from offset {oldest} to its \
             next offset {}: a gap",
            partition.id,
            partition.group,
            messages.len(),
            log.next_offset()
        ));
    }
    if let Some(from) = partition.persisted_from
        && shadow_next > from
        && log.next_offset() < shadow_next
    {
        return Err(format!(
            "partition {} (group {:#x}), persisted since offset {from}, came back from a whole-cluster power outage \
             with next offset {}: the messages it acknowledged at offsets {}..{shadow_next} are gone",
            partition.id,
            partition.group,
            log.next_offset(),
            log.next_offset().max(from)
        ));
    }
    loss.messages_lost = shadow_next - log.next_offset();
    let offsets: BTreeMap<_, _> = recovered.consumer_offsets().collect();
    let owners: BTreeMap<_, _> = recovered.group_owners().collect();
    loss.offsets_or_owners_reverted =
        differing_keys(&partition.offsets, &offsets) + differing_keys(&partition.owners, &owners);
    partition.log = ShadowLog::recovered(oldest, messages);
    partition.offsets = offsets;
    // An owner the outage took back is not remembered as a former one: the same member
    // may be handed the partition again at the same generation, and would not be stale.
    partition.owners = owners;
    Ok(loss)
}

/// Keys whose values differ between `a` and `b` (present on one side only included).
fn differing_keys<K: Ord, V: PartialEq>(a: &BTreeMap<K, V>, b: &BTreeMap<K, V>) -> u64 {
    let only_or_changed = a.iter().filter(|(key, value)| b.get(key) != Some(value)).count();
    let only_b = b.keys().filter(|key| !a.contains_key(key)).count();
    // usize -> u64 is lossless on every supported target.
    (only_or_changed + only_b) as u64
}
