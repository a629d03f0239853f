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

use crate::vsr::{MemoryStore, ReplicaStore};

/// Opens and removes the per-group stores of one node.
pub trait StoreProvider: 'static {
    /// The store type.
    type Store: ReplicaStore;
    /// The store of `group`: the one it kept if it ever wrote, else an empty one.
    fn open(&self, group: u64) -> Self::Store;
    /// Forget `group`'s store (its partition was deleted).
    fn remove(&self, group: u64);
}

/// In-memory stores by group id, shared between clones (the simulator keeps one clone
/// per replica across crashes; the node gets another).
#[derive(Clone, Default)]
pub struct MemoryStores {
    stores: Rc<RefCell<BTreeMap<u64, MemoryStore>>>,
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

    fn open(&self, group: u64) -> MemoryStore {
        self.stores.borrow_mut().entry(group).or_default().clone()
    }

    fn remove(&self, group: u64) {
        self.stores.borrow_mut().remove(&group);
    }
}
