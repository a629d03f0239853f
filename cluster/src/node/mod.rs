//! A node: one replica of the cluster, split into shards, hosting the metadata group
//! (on shard 0) and one group per partition (on the shard its group id hashes to).
//!
//! The same code runs in production and in the simulator: [`Node::open`] builds the
//! shards on a [`StoreProvider`], and [`run_shard`] is each shard's pump (inbox and
//! tick, polled in a fixed order, never holding a borrow across an await). A frame that enters
//! on a shard that does not own its group is forwarded to the owner's inbox (a router
//! hop); see [`shard`].
//!
//! | file | what it holds |
//! |---|---|
//! | `shard.rs` | [`Shard`]: owned groups, routing, reconciliation with the directory, a peer's batches taken apart |
//! | `coalesce.rs` | each flush's liveness frames of several groups for one peer packed into batches |
//! | `shard/admission.rs` | admission of client requests: bound senders, sessions, permissions, a bounded wait for metadata the client has seen; `BindSession` |
//! | `directory.rs` | [`Directory`]: the partition groups in the applied metadata |
//! | `access.rs` | [`AccessView`] (sessions and permissions of the applied metadata) and [`Bindings`] (which sender is which client) |
//! | `stores.rs` | [`StoreProvider`], [`MemoryStores`]: one store per group |
//! | `status.rs` | [`GroupStatus`]: one node's view of one group, for clients and operators |
//! | `durable_stores.rs` | [`DurableStores`]: the stores on the production formats over the storage seam |

pub mod access;
pub mod coalesce;
pub mod directory;
pub mod durable_stores;
pub mod group_table;
pub mod shard;
pub mod status;
pub mod stores;

use std::cell::RefCell;
use std::rc::Rc;

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

pub use crate::routing::{METADATA_GROUP, SHARDS_MAX, owner_shard};
pub use access::{AccessView, BINDINGS_MAX, Bindings, Grant};
pub use directory::{Directory, PartitionSpec};
pub use durable_stores::{DurableReplicaStore, DurableStores, NodeIdentity, StoresOpenError, TestBreak};
pub use group_table::GroupTable;
pub use shard::{Forward, NodeShared, PARK_WAIT_TICKS, PARKED_REQUESTS_MAX, Shard, ShardStats, StorageFailure};
pub use status::{GROUP_STATUS_CODE, GroupStatus, HostedGroup, PartitionEntry};
pub use stores::{MemoryStores, StoreProvider};

use crate::partition::OwnerFence;
use crate::seam::{Bus, Inbox, InboxEvent, InboxPush, TICK};

/// Who a node is and how it is split.
#[derive(Clone, Debug)]
pub struct NodeConfig {
    /// The cluster id every frame carries.
    pub cluster: u64,
    /// This replica's index.
    pub replica: u8,
    /// Replicas in the cluster (every group has the same roster).
    pub replicas: u8,
    /// Shards, 1 to [`SHARDS_MAX`].
    pub shards: u8,
    /// Seeds every group's entropy (salts, tokens, boot nonces).
    pub entropy_seed: u64,
    /// The root user's password at genesis.
    pub root_password: String,
    /// The partition plane's consumer-group owner fence (disabled only by tests that
    /// prove the simulator notices).
    pub owner_fence: OwnerFence,
    /// Bounds of the journals: see [`JournalBounds`].
    pub journal: JournalBounds,
    /// Test-only: a deliberately broken answer to storage faults (production: `None`).
    pub storage_break: crate::vsr::StorageBreak,
    /// Simulation-only smaller bounds for every group's replicas (production: `OFF`,
    /// see [`crate::vsr::Buggify`]).
    pub buggify: crate::vsr::Buggify,
}

/// How much of its log each group keeps in memory (see `vsr::checkpoint`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JournalBounds {
    /// Ops the metadata group's journal (and WAL) holds.
    pub journal_slots: u64,
    /// Ops a partition group's prepare ring holds.
    pub ring_entries: u64,
    /// Frame bytes any group's journal holds, in bytes.
    pub ring_bytes: u64,
    /// Applied ops whose frames a journal keeps in memory (see
    /// `ReplicaConfig::applied_frames_in_memory_ops`).
    pub applied_frames_in_memory_ops: u64,
}

impl Default for JournalBounds {
    fn default() -> Self {
        Self {
            journal_slots: crate::vsr::constants::JOURNAL_SLOTS_DEFAULT,
            ring_entries: crate::vsr::constants::RING_ENTRIES_DEFAULT,
            ring_bytes: crate::vsr::constants::RING_BYTES_DEFAULT,
            applied_frames_in_memory_ops: crate::vsr::constants::JOURNAL_APPLIED_FRAMES_IN_MEMORY_OPS,
        }
    }
}

/// Counters of a node's shards, summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeStats {
    /// See [`ShardStats`].
    pub shard: ShardStats,
    /// Forwards dropped because the owner's inbox was full.
    pub forwards_dropped_full: u64,
}

impl std::ops::AddAssign for NodeStats {
    fn add_assign(&mut self, other: NodeStats) {
        let (mine, theirs) = (&mut self.shard, other.shard);
        mine.frames_routed += theirs.frames_routed;
        mine.frames_unknown_group += theirs.frames_unknown_group;
        mine.frames_rejected += theirs.frames_rejected;
        mine.batches_received += theirs.batches_received;
        mine.frames_refused_not_from_replica += theirs.frames_refused_not_from_replica;
        mine.groups_opened += theirs.groups_opened;
        mine.groups_closed += theirs.groups_closed;
        mine.groups_deleted_skipped += theirs.groups_deleted_skipped;
        mine.groups_open_failed += theirs.groups_open_failed;
        mine.requests_parked += theirs.requests_parked;
        mine.requests_parked_expired += theirs.requests_parked_expired;
        mine.requests_parked_full += theirs.requests_parked_full;
        mine.requests_unbound += theirs.requests_unbound;
        mine.requests_denied += theirs.requests_denied;
        mine.binds += theirs.binds;
        mine.binds_refused += theirs.binds_refused;
        mine.status_answered += theirs.status_answered;
        self.forwards_dropped_full += other.forwards_dropped_full;
    }
}

/// One replica process: its shards, sharing the partition directory.
pub struct Node<P: StoreProvider> {
    shards: Vec<Rc<RefCell<Shard<P>>>>,
    forwards_dropped_full: Rc<RefCell<u64>>,
    shared: NodeShared,
}

impl<P: StoreProvider + Clone> Node<P> {
    /// Open every shard of the node on `stores` (a restart if they hold anything).
    pub fn open(config: &NodeConfig, stores: P, incarnation: u64) -> Self {
        assert!(
            (1..=SHARDS_MAX).contains(&config.shards),
            "a node has 1 to {SHARDS_MAX} shards, not {}",
            config.shards
        );
        let shared = NodeShared::default();
        let shards = (0..config.shards)
            .map(|index| {
                Rc::new(RefCell::new(Shard::open(
                    index,
                    config.clone(),
                    stores.clone(),
                    incarnation,
                    &shared,
                )))
            })
            .collect();
        Self {
            shards,
            forwards_dropped_full: Rc::new(RefCell::new(0)),
            shared,
        }
    }
}

impl<P: StoreProvider> Node<P> {
    /// The shards.
    pub fn shards(&self) -> &[Rc<RefCell<Shard<P>>>] {
        &self.shards
    }

    /// Whether every group of this node holds its log in full
    /// ([`crate::vsr::Replica::caught_up`]) and every shard hosts the groups its
    /// directory lists: the node could lose no data by being the only copy of it.
    /// After a restart this takes rejoining each view and repairing what the disk
    /// lost (a partition WAL's unpublished tail).
    pub fn rejoined(&self) -> bool {
        self.shards.iter().all(|shard| {
            let shard = shard.borrow();
            shard.directory_current()
                && shard.reconciled_with_directory()
                && shard.metadata().is_none_or(|replica| replica.caught_up())
                && shard.partitions().values().all(|replica| replica.caught_up())
        })
    }

    /// A clean shutdown: make every group's journal durable (a partition WAL publishes
    /// its whole log), so stopping every node at once loses no acknowledged write of a
    /// `replicated` topic. Call it with the pumps stopped (no more input after it).
    /// Returns the groups flushed and the groups whose flush failed.
    pub fn flush_for_shutdown(&self) -> (u64, u64) {
        self.shards.iter().fold((0, 0), |(flushed, failed), shard| {
            let (shard_flushed, shard_failed) = shard.borrow_mut().flush_for_shutdown();
            (flushed + shard_flushed, failed + shard_failed)
        })
    }

    /// The storage failure that stopped this node, if any: one of its groups' stores
    /// failed for good ([`StorageFailure`]). From then on its shards drop every frame
    /// and tick, and whoever runs the node must end it (the production server exits
    /// with a distinct code for its supervisor; the simulator's harness crashes it and
    /// restarts it a moment later on the same disk).
    pub fn storage_failure(&self) -> Option<StorageFailure> {
        self.shared.storage_failure.get()
    }

    /// Counters summed over shards.
    pub fn stats(&self) -> NodeStats {
        let mut stats = NodeStats {
            forwards_dropped_full: *self.forwards_dropped_full.borrow(),
            ..NodeStats::default()
        };
        for shard in &self.shards {
            stats += NodeStats {
                shard: shard.borrow().stats(),
                forwards_dropped_full: 0,
            };
        }
        stats
    }

    /// The pump of every shard, given each shard's inbox (one per shard, in order).
    pub fn pumps<B: Bus>(&self, bus: &B, inboxes: &[Inbox]) -> Vec<impl Future<Output = ()> + use<B, P>> {
        assert_eq!(inboxes.len(), self.shards.len(), "one inbox per shard");
        let peers: Rc<[Inbox]> = inboxes.iter().cloned().collect();
        self.shards
            .iter()
            .enumerate()
            .map(|(index, shard)| {
                run_shard(
                    bus.clone(),
                    index,
                    peers.clone(),
                    shard.clone(),
                    self.forwards_dropped_full.clone(),
                )
            })
            .collect()
    }
}

/// One shard's pump: frames first (a burst drains before the tick), then notices of
/// closed peer connections, then the tick,
/// re-armed only after its work. Router hops go straight into the owner shard's inbox
/// with the original sender, so the owner answers the sender directly.
pub async fn run_shard<B: Bus, P: StoreProvider>(
    bus: B,
    index: usize,
    peers: Rc<[Inbox]>,
    shard: Rc<RefCell<Shard<P>>>,
    forwards_dropped_full: Rc<RefCell<u64>>,
) {
    /// What woke the pump, in the order it looks: its inbox, then its tick.
    enum Wake {
        Inbox(InboxEvent),
        Tick,
    }
    let inbox = peers[index].clone();
    let mut tick = bus.sleep(TICK);
    loop {
        // Biased on purpose, and by hand rather than a select macro: the order is the
        // determinism (frames, then closed-connection notices, then the tick), and one
        // poll of the inbox registers one waker for both of its queues.
        let wake = std::future::poll_fn(|cx| {
            if let Poll::Ready(event) = inbox.poll_next(cx) {
                return Poll::Ready(Wake::Inbox(event));
            }
            Pin::new(&mut tick).poll(cx).map(|()| Wake::Tick)
        })
        .await;
        match wake {
            Wake::Inbox(InboxEvent::Frame(from, frame)) => {
                let mut shard = shard.borrow_mut();
                shard.on_frame(from, frame, bus.realtime_micros());
                flush(&bus, &peers, &mut shard, &forwards_dropped_full);
            }
            Wake::Inbox(InboxEvent::Closed(peer)) => {
                shard.borrow_mut().on_peer_closed(peer, bus.realtime_micros());
            }
            Wake::Tick => {
                let mut shard = shard.borrow_mut();
                shard.tick(bus.realtime_micros());
                flush(&bus, &peers, &mut shard, &forwards_dropped_full);
                drop(shard);
                tick = bus.sleep(TICK);
            }
        }
    }
}

fn flush<B: Bus, P: StoreProvider>(
    bus: &B,
    peers: &[Inbox],
    shard: &mut Shard<P>,
    forwards_dropped_full: &RefCell<u64>,
) {
    let (outgoing, forwards) = shard.drain();
    for frame in coalesce::coalesce(outgoing, shard.replicas(), shard.cluster()) {
        bus.send(frame.to, frame.frame);
    }
    for forward in forwards {
        if peers[usize::from(forward.shard)].push(forward.from, forward.frame) == InboxPush::Full {
            *forwards_dropped_full.borrow_mut() += 1;
        }
    }
}

#[cfg(test)]
mod tests;
