//! How a partition's VSR group id is derived from the metadata op that created it.
//!
//! Models: one rule, [`partition_group_id`], that every replica and every client
//! applies alike, so a group id never has to be stored anywhere but the metadata state
//! and never has to be asked for: a client that created a topic or partitions computes
//! the group ids from its reply header's `op` field.
//!
//! Why the op number: group ids must be unique per *incarnation* of a partition. A
//! partition deleted and later re-created (same stream, topic and partition id) must
//! never share a group id with its predecessor, or replicas still holding the old
//! incarnation's journal would join the new group and hand it stale prepares. Op
//! numbers of the metadata log are never reused, and one op creates each partition id
//! at most once, so `(op, partition id)` names an incarnation uniquely.
//!
//! Group 0 is the metadata group (the header's `group` field, `wire::header`). Applied
//! ops are numbered from 1, so a partition group id is never 0.
//!
//! Does not model: which replicas host a group (placement) or the group's own views.

use super::limits::PARTITIONS_PER_TOPIC_MAX;

/// Low bits of a partition group id that hold the partition id. 10 bits hold
/// `0..1024`, every id a topic can have (asserted below); the other 54 bits hold the
/// creating op number.
pub const PARTITION_ID_BITS: u32 = 10;

// Every partition id must fit in its bits, or two partitions of one op would collide.
const _: () = assert!(PARTITIONS_PER_TOPIC_MAX <= 1 << PARTITION_ID_BITS);

/// The first op number whose partition group ids would not fit in 64 bits (2^54). An
/// op at or above it that would create partitions is refused with `LimitReached { Ids }`
/// rather than silently losing the op's high bits (which could alias an older
/// incarnation). Unreachable in practice: a million metadata ops a second take over
/// 500 years to get there.
pub const PARTITION_GROUP_OP_LIMIT: u64 = 1 << (u64::BITS - PARTITION_ID_BITS);

/// The VSR group id of partition `partition_id` created by the metadata op numbered
/// `created_at_op`: `(created_at_op << PARTITION_ID_BITS) | partition_id`.
///
/// A `TopicCreated` reply at op X means partition p of the new topic is replicated by
/// group `partition_group_id(X, p)`; a `PartitionsCreated` reply at op Y means each
/// new partition p has group `partition_group_id(Y, p)`. X and Y are the reply
/// header's `op`. See the module docs for why ids are derived this way.
///
/// Meaningful for `created_at_op` in `1..PARTITION_GROUP_OP_LIMIT` and `partition_id`
/// below `PARTITIONS_PER_TOPIC_MAX` (the state machine only creates such partitions);
/// outside that range the high bits of the op or of the partition id are lost or
/// overlap, and the result names no real group.
pub const fn partition_group_id(created_at_op: u64, partition_id: u32) -> u64 {
    // Plain shift and or: never panics (the shift amount is a constant below 64).
    (created_at_op << PARTITION_ID_BITS) | partition_id as u64
}

/// The op number a partition group id was derived from (its high bits).
pub(super) const fn group_created_at_op(group_id: u64) -> u64 {
    group_id >> PARTITION_ID_BITS
}

/// The partition id a partition group id was derived from (its low bits).
pub(super) const fn group_partition_id(group_id: u64) -> u64 {
    group_id & ((1 << PARTITION_ID_BITS) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_ids_pack_the_op_above_the_partition_id() {
        assert_eq!(partition_group_id(1, 0), 1 << 10);
        assert_eq!(partition_group_id(7, 3), 7 * 1024 + 3);
        let last = PARTITIONS_PER_TOPIC_MAX - 1;
        let id = partition_group_id(PARTITION_GROUP_OP_LIMIT - 1, last);
        assert_eq!(group_created_at_op(id), PARTITION_GROUP_OP_LIMIT - 1);
        assert_eq!(group_partition_id(id), u64::from(last));
        assert_eq!(id, u64::MAX, "the largest valid group id uses every bit");
    }

    #[test]
    fn incarnations_never_share_a_group_id_and_none_is_the_metadata_group() {
        let mut seen = std::collections::BTreeSet::new();
        for op in 1..=64 {
            for partition in 0..PARTITIONS_PER_TOPIC_MAX {
                let id = partition_group_id(op, partition);
                assert_ne!(id, 0);
                assert!(seen.insert(id), "op {op} partition {partition}");
            }
        }
    }
}
