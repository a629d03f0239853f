//! The partition directory: which partition groups exist, as of the metadata this
//! node has applied.
//!
//! The metadata group's shard publishes it after each apply that created or removed a
//! partition; every shard reconciles its groups against it (opens the ones it owns
//! that it lacks, drops the ones that are gone). A replica that is behind on metadata
//! simply does not host a new partition yet; frames for it are dropped and counted,
//! and VSR's resends deliver them once it catches up.

use std::collections::BTreeMap;

use crate::metadata::{Durability, MetadataState, PARTITION_GROUP_OP_LIMIT, PARTITION_ID_BITS};
use crate::storage::tombstone_set::Settled;

/// What a node needs to host one partition's group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionSpec {
    /// The VSR group id (unique per partition incarnation).
    pub group: u64,
    /// The stream.
    pub stream_id: u32,
    /// The topic.
    pub topic_id: u32,
    /// The partition.
    pub partition_id: u32,
    /// The view the group starts in (the metadata view its create was prepared in).
    pub created_in_view: u64,
    /// Message expiry fixed at creation (0 = never).
    pub message_expiry_micros: u64,
    /// The topic's durability now (it may change after creation).
    pub durability: Durability,
}

/// Every partition in the applied metadata, by group id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Directory {
    /// The metadata op that last changed the partition set (`partitions_changed_at`).
    pub version: u64,
    /// Partitions by group id.
    pub partitions: BTreeMap<u64, PartitionSpec>,
}

impl Directory {
    /// The directory of `state`.
    pub fn from_metadata(state: &MetadataState) -> Self {
        let partitions = state
            .partitions()
            .map(|(stream_id, topic_id, topic, partition)| {
                (
                    partition.group_id,
                    PartitionSpec {
                        group: partition.group_id,
                        stream_id,
                        topic_id,
                        partition_id: partition.id,
                        created_in_view: partition.created_in_view,
                        message_expiry_micros: partition.message_expiry_micros,
                        durability: topic.durability,
                    },
                )
            })
            .collect();
        Self {
            version: state.partitions_changed_at(),
            partitions,
        }
    }
}

/// The directory knows every partition the applied metadata holds: every group id
/// whose creating op is at or below its version either names a listed partition or
/// names none for good (op numbers are never reused, and the partition set has not
/// changed since that op).
impl Settled for Directory {
    fn settled_through(&self) -> u64 {
        if self.version >= PARTITION_GROUP_OP_LIMIT {
            // No group can be created at or past the limit: everything is settled.
            return u64::MAX;
        }
        (self.version << PARTITION_ID_BITS) | ((1 << PARTITION_ID_BITS) - 1)
    }

    fn any_live_in(&self, low: u64, high: u64) -> bool {
        self.partitions.range(low..=high).next().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::partition_group_id;
    use crate::storage::tombstone_set::TombstoneSet;

    fn spec(group: u64) -> PartitionSpec {
        PartitionSpec {
            group,
            stream_id: 1,
            topic_id: 1,
            partition_id: 0,
            created_in_view: 0,
            message_expiry_micros: 0,
            durability: Durability::Replicated,
        }
    }

    #[test]
    fn deletes_seen_in_a_directory_fill_only_gaps_of_settled_ops_with_no_listed_partition() {
        // As of op 100, the partitions of ops 10 and 60 are live.
        let live = [partition_group_id(10, 0), partition_group_id(60, 2)];
        let directory = Directory {
            version: 100,
            partitions: live.iter().map(|&group| (group, spec(group))).collect(),
        };
        assert_eq!(directory.settled_through(), partition_group_id(100, 1023));
        let mut tombstones = TombstoneSet::new();
        for op in [5, 20, 30, 70, 90] {
            tombstones.insert(partition_group_id(op, 1), &directory);
        }
        assert_eq!(
            tombstones.ranges().collect::<Vec<_>>(),
            vec![
                (partition_group_id(5, 1), partition_group_id(5, 1)),
                (partition_group_id(20, 1), partition_group_id(30, 1)),
                (partition_group_id(70, 1), partition_group_id(90, 1)),
            ],
            "the live partitions of ops 10 and 60 keep their gaps open"
        );
        assert!(live.iter().all(|&group| !tombstones.contains(group)));
        // An op after the directory's version may still create partitions.
        tombstones.insert(partition_group_id(150, 0), &directory);
        assert!(!tombstones.contains(partition_group_id(120, 0)));
    }
}
