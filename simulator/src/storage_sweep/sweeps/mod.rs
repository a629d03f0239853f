//! The sweeps, one module each.

mod frames;
mod metadata_wal_append;
mod metadata_wal_truncate;
mod superblock_write;

use super::Sweep;

/// Every sweep, in `--list` order.
pub fn all() -> Vec<Box<dyn Sweep>> {
    vec![
        Box::new(superblock_write::SuperblockWrite),
        Box::new(metadata_wal_append::MetadataWalAppend),
        Box::new(metadata_wal_truncate::MetadataWalTruncate),
    ]
}
