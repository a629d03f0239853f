//! The sweeps, one module each.

pub mod frames;
mod metadata_wal_append;
mod metadata_wal_gap_fill;
mod metadata_wal_truncate;
pub mod partition_wal_publish;
pub mod segment_append_roll;
pub mod snapshot_write;
pub mod state_transfer_install;
mod superblock_write;
mod tombstone_log_append;

use super::Sweep;

/// Every sweep, in `--list` order.
pub fn all() -> Vec<Box<dyn Sweep>> {
    vec![
        Box::new(superblock_write::SuperblockWrite),
        Box::new(metadata_wal_append::MetadataWalAppend),
        Box::new(metadata_wal_gap_fill::MetadataWalGapFill),
        Box::new(metadata_wal_truncate::MetadataWalTruncate),
        Box::new(partition_wal_publish::PartitionWalPublish),
        Box::new(segment_append_roll::SegmentAppendRoll),
        Box::new(snapshot_write::SnapshotWrite),
        Box::new(state_transfer_install::StateTransferInstall),
        Box::new(tombstone_log_append::TombstoneLogAppend),
        Box::new(tombstone_log_append::TombstoneLogCompact),
    ]
}
