//! What a simulated replica keeps across a crash: either in-memory stores that never
//! lose a byte, or the production on-disk formats on a [`SimStorage`] disk that can lose
//! power.
//!
//! [`StorageModel::Sim`] is the default: a restarted replica boots through the real
//! recovery code (node superblock, group superblocks, metadata WAL, partition WALs that
//! discard their unpublished tail), on a disk that writes back pages in any order and
//! whose crash may be a power loss. [`StorageModel::Memory`] keeps the older in-memory
//! stores for tests that inject faults into them directly.

use std::fmt;
use std::rc::Rc;
use std::str::FromStr;

use cluster::metadata::Durability;
use cluster::node::{DurableReplicaStore, DurableStores, MemoryStores, StoreProvider};
use cluster::storage::tombstone_set::Settled;
use cluster::vsr::store::{Checkpoint, MemoryStore, ReplicaStore, StoreError, StoredRecord, Superblock};
use cluster::wire::HEADER_BYTES;

use crate::storage::SimStorage;

/// Which stores the harness gives its nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StorageModel {
    /// The production formats on a simulated disk (crashes may cut the power).
    #[default]
    Sim,
    /// In-memory stores: every write is durable, nothing is ever lost.
    Memory,
}

impl StorageModel {
    /// The name `--storage` takes.
    pub fn name(self) -> &'static str {
        match self {
            StorageModel::Sim => "sim",
            StorageModel::Memory => "memory",
        }
    }
}

impl fmt::Display for StorageModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for StorageModel {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "sim" => Ok(StorageModel::Sim),
            "memory" => Ok(StorageModel::Memory),
            other => Err(format!("storage model {other:?} is neither sim nor memory")),
        }
    }
}

/// A node's store provider in the simulator.
#[derive(Clone)]
pub enum SimStores {
    /// In memory.
    Memory(MemoryStores),
    /// On a simulated disk.
    Durable(DurableStores<SimStorage>),
}

impl fmt::Debug for SimStores {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimStores::Memory(stores) => write!(f, "SimStores::Memory({} groups)", stores.groups().len()),
            SimStores::Durable(stores) => write!(f, "SimStores::Durable({stores:?})"),
        }
    }
}

/// One group's store in the simulator.
#[derive(Debug)]
pub enum SimReplicaStore {
    /// In memory.
    Memory(MemoryStore),
    /// On a simulated disk (boxed: it holds open file handles and format state, and a
    /// replica keeps one per group).
    Durable(Box<DurableReplicaStore<SimStorage>>),
}

impl StoreProvider for SimStores {
    type Store = SimReplicaStore;

    fn open(&self, group: u64) -> Result<SimReplicaStore, StoreError> {
        match self {
            SimStores::Memory(stores) => stores.open(group).map(SimReplicaStore::Memory),
            SimStores::Durable(stores) => stores
                .open(group)
                .map(|store| SimReplicaStore::Durable(Box::new(store))),
        }
    }

    fn remove(&self, group: u64, settled: &dyn Settled) {
        match self {
            SimStores::Memory(stores) => stores.remove(group, settled),
            SimStores::Durable(stores) => stores.remove(group, settled),
        }
    }

    fn is_deleted(&self, group: u64) -> bool {
        match self {
            SimStores::Memory(stores) => stores.is_deleted(group),
            SimStores::Durable(stores) => stores.is_deleted(group),
        }
    }

    fn set_durability(&self, group: u64, durability: Durability) {
        match self {
            SimStores::Memory(stores) => stores.set_durability(group, durability),
            SimStores::Durable(stores) => stores.set_durability(group, durability),
        }
    }
}

impl ReplicaStore for SimReplicaStore {
    fn write_superblock(&mut self, superblock: Superblock) -> Result<(), StoreError> {
        match self {
            SimReplicaStore::Memory(store) => store.write_superblock(superblock),
            SimReplicaStore::Durable(store) => store.write_superblock(superblock),
        }
    }

    fn write_prepare(&mut self, op: u64, frame: &Rc<[u8]>) -> Result<(), StoreError> {
        match self {
            SimReplicaStore::Memory(store) => store.write_prepare(op, frame),
            SimReplicaStore::Durable(store) => store.write_prepare(op, frame),
        }
    }

    fn write_header(&mut self, op: u64, header: &[u8; HEADER_BYTES]) -> Result<(), StoreError> {
        match self {
            SimReplicaStore::Memory(store) => store.write_header(op, header),
            SimReplicaStore::Durable(store) => store.write_header(op, header),
        }
    }

    fn truncate_after(&mut self, op: u64) {
        match self {
            SimReplicaStore::Memory(store) => store.truncate_after(op),
            SimReplicaStore::Durable(store) => store.truncate_after(op),
        }
    }

    fn remove_prepare(&mut self, op: u64) {
        match self {
            SimReplicaStore::Memory(store) => store.remove_prepare(op),
            SimReplicaStore::Durable(store) => store.remove_prepare(op),
        }
    }

    fn superblock(&self) -> Option<Superblock> {
        match self {
            SimReplicaStore::Memory(store) => store.superblock(),
            SimReplicaStore::Durable(store) => store.superblock(),
        }
    }

    fn records(&self) -> Vec<(u64, StoredRecord)> {
        match self {
            SimReplicaStore::Memory(store) => store.records(),
            SimReplicaStore::Durable(store) => store.records(),
        }
    }

    fn read_prepare(&self, op: u64) -> Option<Rc<[u8]>> {
        match self {
            SimReplicaStore::Memory(store) => store.read_prepare(op),
            SimReplicaStore::Durable(store) => store.read_prepare(op),
        }
    }

    fn shares_frames_in_memory(&self) -> bool {
        match self {
            SimReplicaStore::Memory(store) => store.shares_frames_in_memory(),
            SimReplicaStore::Durable(store) => store.shares_frames_in_memory(),
        }
    }

    fn persisted(&self) -> bool {
        match self {
            SimReplicaStore::Memory(store) => store.persisted(),
            SimReplicaStore::Durable(store) => store.persisted(),
        }
    }

    fn may_lack_acknowledged_ops(&self) -> bool {
        match self {
            SimReplicaStore::Memory(store) => store.may_lack_acknowledged_ops(),
            SimReplicaStore::Durable(store) => store.may_lack_acknowledged_ops(),
        }
    }

    fn damaged_at_open(&self) -> u64 {
        match self {
            SimReplicaStore::Memory(store) => store.damaged_at_open(),
            SimReplicaStore::Durable(store) => store.damaged_at_open(),
        }
    }

    fn failure(&self) -> Option<&'static str> {
        match self {
            SimReplicaStore::Memory(store) => store.failure(),
            SimReplicaStore::Durable(store) => store.failure(),
        }
    }

    fn write_checkpoint(&mut self, op: u64, bytes: &Rc<[u8]>) -> Result<(), StoreError> {
        match self {
            SimReplicaStore::Memory(store) => store.write_checkpoint(op, bytes),
            SimReplicaStore::Durable(store) => store.write_checkpoint(op, bytes),
        }
    }

    fn checkpoint(&self) -> Result<Option<Checkpoint>, StoreError> {
        match self {
            SimReplicaStore::Memory(store) => store.checkpoint(),
            SimReplicaStore::Durable(store) => store.checkpoint(),
        }
    }

    fn discard_through(&mut self, op: u64) {
        match self {
            SimReplicaStore::Memory(store) => store.discard_through(op),
            SimReplicaStore::Durable(store) => store.discard_through(op),
        }
    }
}
