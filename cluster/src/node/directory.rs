//! The partition directory: which partition groups exist, as of the metadata this
//! node has applied.
//!
//! The metadata group's shard publishes it after each apply that created or removed a
//! partition; every shard reconciles its groups against it (opens the ones it owns
//! that it lacks, drops the ones that are gone). A replica that is behind on metadata
//! simply does not host a new partition yet; frames for it are dropped and counted,
//! and VSR's resends deliver them once it catches up.

use std::collections::BTreeMap;

use crate::metadata::{Durability, MetadataState};

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
