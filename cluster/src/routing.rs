//! Which shard of a node owns a VSR group.
//!
//! Both the runtime (which hands each verified frame to the inbox of the shard that
//! owns its group) and the node (which opens each group on that shard) ask this, so it
//! sits below both: neither reaches into the other for it.

/// The metadata group's id.
pub const METADATA_GROUP: u64 = 0;

/// Most shards a node runs. One per core in production; the simulator sweeps 1 to 8.
pub const SHARDS_MAX: u8 = 8;

/// The shard that owns `group`: the metadata group lives on shard 0, a partition's
/// group on a shard picked by a hash of its id (so consecutive partitions spread).
pub fn owner_shard(group: u64, shards: u8) -> u8 {
    assert!((1..=SHARDS_MAX).contains(&shards), "{shards} shards");
    if group == METADATA_GROUP {
        return 0;
    }
    // The remainder is below `shards`, which fits u8.
    (crate::vsr::replica::mix(group) % u64::from(shards)) as u8
}
