//! Where each group's replica keeps its journal and superblock.
//!
//! A node hosts one VSR group for metadata and one per partition; each group gets its
//! own [`ReplicaStore`], opened when the group is created on this node and removed
//! when the partition is deleted. [`MemoryStores`] keeps them in memory and shares
//! them between clones, so the simulator can keep a node's stores across a crash and
//! hand them to the restarted node. Durable stores on the storage seam come with the
//! storage issue.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use crate::metadata::Durability;
use crate::storage::tombstone_set::{Settled, TombstoneSet};
use crate::vsr::{MemoryStore, ReplicaStore, StoreError};

/// Opens and removes the per-group stores of one node.
///
/// Removing a group's store leaves a tombstone: a node replaying its metadata log
/// after a restart passes the create of a partition it has since deleted, and without
/// the tombstone it would open that group afresh, in the group's first view, having
/// forgotten every promise it made in later views.
pub trait StoreProvider: 'static {
    /// The store type.
    type Store: ReplicaStore;
    /// The store of `group`: the one it kept if it ever wrote, else an empty one. An
    /// error (a damaged superblock, another cluster's data) means the group must not
    /// run on this node: booting it as fresh could forget promises it made.
    fn open(&self, group: u64) -> Result<Self::Store, StoreError>;
    /// Forget `group`'s store (its partition was deleted) and remember that it was.
    /// `settled` (the directory the delete was seen in) says which ids around it name
    /// no group that can still be live, so the tombstones may cover them too and stay
    /// as few ranges as there are live groups (`storage::tombstone_set`).
    fn remove(&self, group: u64, settled: &dyn Settled);
    /// Whether `group` must never be opened (its store was removed, or it is a settled
    /// id that names no group).
    fn is_deleted(&self, group: u64) -> bool;
    /// The durability of `group`'s topic changed (or is first known): a `persisted`
    /// partition makes every prepare durable before acknowledging it. Stores that are
    /// always durable ignore it.
    fn set_durability(&self, group: u64, durability: Durability) {
        let _ = (group, durability);
    }
}

/// In-memory stores by group id, shared between clones (the simulator keeps one clone
/// per replica across crashes; the node gets another).
#[derive(Clone, Default)]
pub struct MemoryStores {
    stores: Rc<RefCell<BTreeMap<u64, MemoryStore>>>,
    /// Groups whose stores were removed, as ranges (`storage::tombstone_set`).
    deleted: Rc<RefCell<TombstoneSet>>,
}

impl MemoryStores {
    /// No stores yet (a fresh node).
    pub fn new() -> Self {
        Self::default()
    }

    /// The store of `group`, if it exists (for fault injection and tests).
    pub fn get(&self, group: u64) -> Option<MemoryStore> {
        self.stores.borrow().get(&group).cloned()
    }

    /// Groups with a store.
    pub fn groups(&self) -> Vec<u64> {
        self.stores.borrow().keys().copied().collect()
    }
}

impl StoreProvider for MemoryStores {
    type Store = MemoryStore;

    fn open(&self, group: u64) -> Result<MemoryStore, StoreError> {
        assert!(
            !self.is_deleted(group),
            "group {group:#x} was deleted; it is never opened again"
        );
        Ok(self.stores.borrow_mut().entry(group).or_default().clone())
    }

    fn remove(&self, group: u64, settled: &dyn Settled) {
        self.stores.borrow_mut().remove(&group);
        self.deleted.borrow_mut().insert(group, settled);
    }

    fn is_deleted(&self, group: u64) -> bool {
        self.deleted.borrow().contains(group)
    }
}
