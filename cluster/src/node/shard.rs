//! One shard of a node: the groups it owns, the router hop for frames that entered on
//! the wrong shard, and reconciliation of its partition groups with the directory.
//!
//! Frames enter a node on any shard (in production, whichever shard's connection they
//! arrived on; in the simulator, a shard drawn from the entry-shard seed stream). The
//! shard reads the header's group, and if another shard owns the group it forwards the
//! frame there unopened (a router hop). A frame for a group this node does not host
//! (not created here yet, or already deleted) is dropped and counted: it is not an
//! error, VSR resends it. A frame whose header does not verify is dropped and counted.
//!
//! Client requests pass admission first (`admission.rs`: bindings, sessions,
//! permissions, and a bounded wait for metadata the client has seen).
//!
//! Does not model: cross-thread shards (every shard of a node runs on one thread and
//! the directory is shared by reference; production threads would pass it as a message).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use super::access::{AccessView, Bindings};
use super::directory::Directory;
use super::group_table::GroupTable;
use super::stores::StoreProvider;
use super::{NodeConfig, owner_shard};
use crate::metadata::{MetadataMachine, MetadataState};
use crate::partition::PartitionMachine;
use crate::routing::METADATA_GROUP;
use crate::seam::ProcessId;
use crate::vsr::budget::CatchUpBudget;
use crate::vsr::replica::Outgoing;
use crate::vsr::{ClientError, Replica, ReplicaConfig, Status, seal_refusal};
use crate::wire::{Command, HEADER_BYTES, Header};

/// Counters of one shard.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShardStats {
    /// Frames forwarded to the shard that owns their group.
    pub frames_routed: u64,
    /// Frames for a group this node does not host (not created yet, or deleted).
    pub frames_unknown_group: u64,
    /// Frames whose header failed to verify (dropped before routing), and batches
    /// refused whole (damaged, not whole frames, nested, or not from a replica).
    pub frames_rejected: u64,
    /// Batches taken apart (`wire::batch`); their frames are then counted as any other.
    pub batches_received: u64,
    /// Protocol frames (anything but a request) from a process that is not a replica,
    /// refused unread.
    pub frames_refused_not_from_replica: u64,
    /// Partition groups opened.
    pub groups_opened: u64,
    /// Partition groups dropped (deleted partitions).
    pub groups_closed: u64,
    /// Directory entries not opened because this node already deleted the group.
    pub groups_deleted_skipped: u64,
    /// Groups whose store refused to open (damaged superblock, another cluster's or
    /// replica's data): they do not run here, and frames for them count as unknown.
    pub groups_open_failed: u64,
    /// Client requests held while this node's metadata caught up with the client's.
    pub requests_parked: u64,
    /// Of those, refused after waiting `PARK_WAIT_TICKS`.
    pub requests_parked_expired: u64,
    /// Client requests refused at once because `PARKED_REQUESTS_MAX` were waiting.
    pub requests_parked_full: u64,
    /// Client requests from a sender not bound to the client's current session.
    pub requests_unbound: u64,
    /// Partition requests refused for the session's user (`PermissionDenied` or
    /// `Unauthenticated`).
    pub requests_denied: u64,
    /// Sessions bound (`BindSession` answered `SessionBound`).
    pub binds: u64,
    /// `BindSession` answered `SessionRefused`.
    pub binds_refused: u64,
    /// Status requests answered (`node::status`).
    pub status_answered: u64,
}

/// A frame to hand to another shard of this node.
#[derive(Debug)]
pub struct Forward {
    /// The owning shard.
    pub shard: u8,
    /// Who sent it.
    pub from: ProcessId,
    /// The frame, unopened.
    pub frame: Vec<u8>,
}

mod admission;
pub use admission::{PARK_WAIT_TICKS, PARKED_REQUESTS_MAX};

/// What every shard of one node shares: the directory and access view shard 0
/// publishes, the node's bindings, and whether the node has stopped.
#[derive(Clone, Debug, Default)]
pub struct NodeShared {
    /// The partition directory.
    pub directory: Rc<RefCell<Directory>>,
    /// The access view.
    pub access: Rc<RefCell<AccessView>>,
    /// The bindings.
    pub bindings: Rc<RefCell<Bindings>>,
    /// The first storage failure of any group on any shard: the node fail-stops.
    pub storage_failure: Rc<Cell<Option<StorageFailure>>>,
}

/// A group whose store failed for good, which stops the whole node (fail-stop): the
/// node exits and a supervisor starts it again, booting from what the disk holds. The
/// choice over reopening just the group: a disk that failed one file's sync is
/// suspect for every file, and a fresh process is the one way to open every file
/// anew (a handle that lived through a failed writeback may report a later sync as
/// good over lost bytes); its peers elect a new primary meanwhile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StorageFailure {
    /// The group whose store failed.
    pub group: u64,
    /// What failed (the store's words).
    pub what: &'static str,
}

impl std::fmt::Display for StorageFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "group {:#x}: {}", self.group, self.what)
    }
}

type PartitionReplica<P> = Replica<PartitionMachine, <P as StoreProvider>::Store>;
type MetadataReplica<P> = Replica<MetadataMachine, <P as StoreProvider>::Store>;

/// One shard: the groups it owns.
pub struct Shard<P: StoreProvider> {
    index: u8,
    config: NodeConfig,
    incarnation: u64,
    stores: P,
    metadata: Option<MetadataReplica<P>>,
    partitions: GroupTable<PartitionReplica<P>>,
    directory: Rc<RefCell<Directory>>,
    /// Sessions and permissions of the applied metadata, shared by the node's shards.
    access: Rc<RefCell<AccessView>>,
    /// Which sender the node knows as which client, shared by the node's shards.
    bindings: Rc<RefCell<Bindings>>,
    /// The node's fail-stop flag, shared by its shards.
    storage_failure: Rc<Cell<Option<StorageFailure>>>,
    /// Requests waiting for the node's metadata (see `admission.rs`).
    parked: VecDeque<admission::Parked>,
    /// Ticks since this shard opened.
    ticks: u64,
    /// Ticks delivered to the partition groups so far, run or counted (the count
    /// [`Replica::skip_quiet_ticks_to`] brings a group up to before it takes a frame,
    /// and the index of the tick a walk delivers; see `vsr::idle_ticks`).
    group_ticks: u64,
    /// The lowest count of delivered ticks at which a partition group's tick runs
    /// ([`Replica::next_tick_that_runs`]): until then no group needs its tick, and the
    /// shard does not walk them. Never later than the truth (an input only ever lowers
    /// it here; a walk sets it exactly), so a walk may find nothing due, never miss one.
    partitions_due_at: u64,
    /// The realtime of the last tick, for the ticks a group is handed in bulk.
    last_tick_realtime_micros: u64,
    /// Partition groups with a repair session or a transfer served when last looked
    /// at, ascending: the rest count for nothing in the catch-up budget, and a group's
    /// count changes only on its own inputs and ticks, so only these are summed.
    catching_up: Vec<u64>,
    /// Groups that took a frame or ran a tick since [`Shard::take_touched_groups`]
    /// (repeats allowed), kept only once [`Shard::track_touched_groups`] turned it on:
    /// a simulator's per-tick checks look at these and skip the rest.
    touched: Option<Vec<u64>>,
    /// Partition groups opened or closed so far: a change tells whoever walks this
    /// shard's groups in order that the order moved.
    group_set_changes: u64,
    /// The directory version this shard last reconciled with.
    reconciled: Option<u64>,
    stats: ShardStats,
    /// The catch-up allowance every group of this shard shares.
    budget: Rc<CatchUpBudget>,
    outbox: Vec<Outgoing>,
    forwards: Vec<Forward>,
}

impl<P: StoreProvider> Shard<P> {
    /// Shard `index` of a node; shard 0 also hosts the metadata group.
    pub fn open(index: u8, config: NodeConfig, stores: P, incarnation: u64, shared: &NodeShared) -> Self {
        assert!(index < config.shards, "shard {index} of {}", config.shards);
        let mut stats = ShardStats::default();
        let budget = Rc::new(CatchUpBudget::default());
        let mut refused = None;
        let metadata = if index == 0 {
            match stores.open(METADATA_GROUP) {
                Ok(store) => match Replica::open(
                    config.replica_config(METADATA_GROUP, 0),
                    MetadataMachine::new(config.cluster, &config.root_password),
                    store,
                    incarnation,
                ) {
                    // No catch-up budget for the metadata group: which partition
                    // groups a node hosts follows from it (a deleted group goes once
                    // the deletion is applied here), so it must never wait behind
                    // them. A partition group whose peers already deleted it asks for
                    // repair that nobody answers, and eight such held every repair
                    // place of a shard while its metadata replica, which would have
                    // applied the deletion, waited for one (seed 11000072). One group
                    // with its own repair window cannot flood a link.
                    Ok(replica) => Some(replica),
                    Err(error) => {
                        tracing::error!(replica = config.replica, %error, "metadata group refused its disk");
                        stats.groups_open_failed += 1;
                        refused = Some(error.what);
                        None
                    }
                },
                Err(error) => {
                    tracing::error!(replica = config.replica, %error, "metadata group store refused to open");
                    stats.groups_open_failed += 1;
                    refused = Some(error.what);
                    None
                }
            }
        } else {
            None
        };
        let mut shard = Self {
            index,
            config,
            incarnation,
            stores,
            metadata,
            partitions: GroupTable::new(),
            directory: shared.directory.clone(),
            access: shared.access.clone(),
            bindings: shared.bindings.clone(),
            storage_failure: shared.storage_failure.clone(),
            parked: VecDeque::new(),
            ticks: 0,
            group_ticks: 0,
            partitions_due_at: 0,
            last_tick_realtime_micros: 0,
            catching_up: Vec::new(),
            touched: None,
            group_set_changes: 0,
            reconciled: None,
            stats,
            budget,
            outbox: Vec::new(),
            forwards: Vec::new(),
        };
        if let Some(replica) = shard.metadata.as_ref() {
            note_storage_failure(&shard.storage_failure, METADATA_GROUP, replica);
        }
        if let Some(what) = refused {
            // A node does not run without its metadata group: fail-stop.
            refuse_group(&shard.storage_failure, METADATA_GROUP, what);
        }
        shard.publish_directory();
        shard.publish_access();
        shard
    }

    /// The storage failure that stopped this node, if any (see [`StorageFailure`]).
    /// Once set, the node's shards take no more input and the node must exit.
    pub fn storage_failure(&self) -> Option<StorageFailure> {
        self.storage_failure.get()
    }

    /// This shard's index.
    pub fn index(&self) -> u8 {
        self.index
    }

    /// The metadata replica (shard 0 only).
    pub fn metadata(&self) -> Option<&MetadataReplica<P>> {
        self.metadata.as_ref()
    }

    /// The partition replicas this shard hosts, by group id.
    pub fn partitions(&self) -> &GroupTable<PartitionReplica<P>> {
        &self.partitions
    }

    /// Whether this shard hosts what the current directory lists (it reconciles on its
    /// next tick after the directory changes).
    pub fn reconciled_with_directory(&self) -> bool {
        self.reconciled == Some(self.directory.borrow().version)
    }

    /// Shard 0: whether the directory lists the partition set of everything its
    /// metadata replica knows to be committed (other shards: true). Until then a
    /// shard can be reconciled with a directory that lacks groups the cluster created,
    /// and the node is not yet hosting every group it will host.
    pub fn directory_current(&self) -> bool {
        self.metadata.as_ref().is_none_or(|metadata| {
            metadata.status() == Status::Normal
                && metadata.commit_min() == metadata.commit_max()
                && self.directory.borrow().version == metadata.state_machine().state().partitions_changed_at()
        })
    }

    /// Whether this node's tombstones cover `group`: it never opens the group again.
    /// The tombstones may cover a settled id before the shard that hosts it has seen its
    /// delete (`storage::tombstone_set`), so "no op of it is applied here again" also
    /// needs that no shard of the node hosts it.
    pub fn group_deleted(&self, group: u64) -> bool {
        self.stores.is_deleted(group)
    }

    /// Counters of this shard.
    pub fn stats(&self) -> ShardStats {
        self.stats
    }

    /// From now on, note every group that takes a frame or runs a tick, for
    /// [`Shard::take_touched_groups`] (off by default: nobody drains it in production).
    pub fn track_touched_groups(&mut self) {
        self.touched.get_or_insert_with(Vec::new);
    }

    /// Move the groups touched since the last call into `into` (ascending, no
    /// repeats appended), or return false if tracking is off. A group not among them
    /// took no frame and ran no tick, so its [`Replica::activity`] did not move.
    pub fn take_touched_groups(&mut self, into: &mut Vec<u64>) -> bool {
        let Some(touched) = self.touched.as_mut() else {
            return false;
        };
        touched.sort_unstable();
        touched.dedup();
        into.append(touched);
        true
    }

    /// How many times this shard opened or closed a partition group.
    pub fn group_set_changes(&self) -> u64 {
        self.group_set_changes
    }

    /// The cluster's id (every frame names it).
    pub fn cluster(&self) -> u64 {
        self.config.cluster
    }

    /// Replicas in the cluster (addresses below this are replicas, the rest clients).
    pub fn replicas(&self) -> u8 {
        self.config.replicas
    }

    /// Take the frames to send and the frames to forward to other shards.
    pub fn drain(&mut self) -> (Vec<Outgoing>, Vec<Forward>) {
        (std::mem::take(&mut self.outbox), std::mem::take(&mut self.forwards))
    }

    /// Feed one frame that arrived on this shard (from the network or a router hop).
    /// A forwarded frame always lands on its owner: `owner_shard` is a pure function
    /// of the group, so a frame is never forwarded twice.
    pub fn on_frame(&mut self, from: ProcessId, frame: Vec<u8>, realtime_micros: u64) {
        if self.storage_failure.get().is_some() {
            return;
        }
        let Some(header) = frame
            .get(..HEADER_BYTES)
            .and_then(|bytes| Header::decode_verified(bytes).ok())
        else {
            self.stats.frames_rejected += 1;
            return;
        };
        // Only a replica speaks the protocol: anyone else (a client's connection, or in
        // the simulator any process that is not a replica) may only ask. The transport
        // already holds client connections to requests and authenticates peers; this
        // holds every path to the same rule.
        if from.0 >= u32::from(self.config.replicas) && header.command != Command::Request {
            self.stats.frames_refused_not_from_replica += 1;
            return;
        }
        if header.command == Command::Batch {
            self.on_batch(from, &header, &frame, realtime_micros);
            return;
        }
        let owner = owner_shard(header.group, self.config.shards);
        if owner != self.index {
            self.stats.frames_routed += 1;
            self.forwards.push(Forward {
                shard: owner,
                from,
                frame,
            });
            return;
        }
        if header.command == Command::Request && header.client != 0 {
            tracing::trace!(
                replica = self.config.replica,
                shard = self.index,
                group = header.group,
                client = header.client,
                request = header.request,
                operation = header.operation,
                "client request"
            );
            if !self.admit(from, &header, &frame) {
                return;
            }
        }
        if header.group == METADATA_GROUP {
            let Some(metadata) = self.metadata.as_mut() else {
                unreachable!("group 0 is owned by shard 0, which hosts the metadata replica");
            };
            metadata.on_frame_with_header(from, &header, &frame, realtime_micros);
            note_storage_failure(&self.storage_failure, METADATA_GROUP, metadata);
            if let Some(touched) = self.touched.as_mut() {
                touched.push(METADATA_GROUP);
            }
            self.drain_metadata_outbox();
            self.publish_directory();
            self.publish_access();
        } else if let Some(replica) = self.partitions.get_mut(&header.group) {
            replica.skip_quiet_ticks_to(self.group_ticks, self.last_tick_realtime_micros);
            replica.on_frame_with_header(from, &header, &frame, realtime_micros);
            note_storage_failure(&self.storage_failure, header.group, replica);
            replica.move_outbox_into(&mut self.outbox);
            self.partitions_due_at = self.partitions_due_at.min(replica.next_tick_that_runs());
            note_catching_up(&mut self.catching_up, header.group, replica);
            if let Some(touched) = self.touched.as_mut() {
                touched.push(header.group);
            }
        } else {
            self.stats.frames_unknown_group += 1;
            if header.command == Command::Request && header.client != 0 {
                self.refuse_unknown_group(from, &header);
            }
            return;
        }
        self.reconcile();
    }

    /// A batch of liveness frames from another replica (`wire::batch`): each inner
    /// frame is taken as if it had arrived alone, verified, routed and counted on its
    /// own. A batch names group 0, so the transport hands it to shard 0, which forwards
    /// the frames of other shards' groups as it would any frame that entered on it. A batch from anything but another replica of this cluster, damaged, or not
    /// made of whole frames is refused whole; batches do not nest.
    fn on_batch(&mut self, from: ProcessId, header: &Header, frame: &[u8], realtime_micros: u64) {
        let from_peer = from.0 < u32::from(self.config.replicas) && from.0 != u32::from(self.config.replica);
        let frames = crate::wire::open_body_with(header, frame, crate::wire::Checksums::Verify)
            .ok()
            .filter(|_| from_peer && header.cluster == self.config.cluster)
            .and_then(|body| crate::wire::batch::unpack(body).ok());
        let Some(frames) = frames else {
            self.stats.frames_rejected += 1;
            return;
        };
        self.stats.batches_received += 1;
        for inner in frames {
            // Not a batch (`unpack` refused nesting), so this does not come back here.
            self.on_frame(from, inner.to_vec(), realtime_micros);
        }
    }

    /// The transport reports the connection from `peer` closed: every hosted group
    /// hears of it (each decides whether it leads it; see
    /// [`crate::vsr::Replica::on_peer_closed`]). A notice naming anything but another
    /// replica is ignored.
    pub fn on_peer_closed(&mut self, peer: ProcessId, realtime_micros: u64) {
        if self.storage_failure.get().is_some() {
            return;
        }
        let Some(peer) = u8::try_from(peer.0)
            .ok()
            .filter(|&peer| peer < self.config.replicas && peer != self.config.replica)
        else {
            return;
        };
        crate::cover!(PeerConnectionClosed);
        if let Some(metadata) = self.metadata.as_mut() {
            metadata.on_peer_closed(peer, realtime_micros);
        }
        for replica in self.partitions.values_mut() {
            replica.skip_quiet_ticks_to(self.group_ticks, self.last_tick_realtime_micros);
            replica.on_peer_closed(peer, realtime_micros);
            self.partitions_due_at = self.partitions_due_at.min(replica.next_tick_that_runs());
        }
    }

    /// A client asked for a group this node does not host (it has not applied the
    /// create yet, or the partition is gone): say so at once, never taken, naming the
    /// next replica to try, instead of leaving the client to its resend timeout.
    fn refuse_unknown_group(&mut self, to: ProcessId, request: &Header) {
        let mut sender = Header::new(Command::Refused);
        sender.cluster = self.config.cluster;
        sender.group = request.group;
        sender.replica = self.config.replica;
        let next = (self.config.replica + 1) % self.config.replicas;
        let frame = seal_refusal(sender, request, next, ClientError::TransientNotAccepted);
        self.outbox.push(Outgoing { to, frame });
    }

    /// A clean shutdown: make every hosted group's journal durable. Returns how many
    /// groups were flushed and how many failed (their unpublished tail is lost at the
    /// next boot, as after a crash, and repaired from the other replicas).
    pub fn flush_for_shutdown(&mut self) -> (u64, u64) {
        let metadata = self.metadata.iter_mut().map(|replica| replica.flush_for_shutdown());
        let partitions = self.partitions.values_mut().map(|replica| replica.flush_for_shutdown());
        metadata
            .chain(partitions)
            .fold((0, 0), |(flushed, failed), result| match result {
                Ok(()) => (flushed + 1, failed),
                Err(_) => (flushed, failed + 1),
            })
    }

    /// One tick for every hosted group. The partition groups are walked only on a
    /// tick when one of them is due (see `vsr::idle_ticks`): the others would only
    /// count it, and each is handed the ticks it missed before it next takes one.
    pub fn tick(&mut self, realtime_micros: u64) {
        if self.storage_failure.get().is_some() {
            return;
        }
        self.reconcile();
        let (sessions, served) = self.catch_up_load();
        self.budget.new_tick(sessions, served);
        if let Some(metadata) = self.metadata.as_mut() {
            tick_group(
                metadata,
                METADATA_GROUP,
                realtime_micros,
                &self.storage_failure,
                &mut self.touched,
            );
            self.drain_metadata_outbox();
        }
        let tick = self.group_ticks;
        if tick >= self.partitions_due_at {
            // Some group's tick runs now: bring every group up to this tick and deliver
            // it (the quiet ones only count it), and learn when the next one is due.
            let mut due = u64::MAX;
            self.catching_up.clear();
            for (&group, replica) in self.partitions.iter_mut() {
                replica.skip_quiet_ticks_to(tick, self.last_tick_realtime_micros);
                tick_group(
                    replica,
                    group,
                    realtime_micros,
                    &self.storage_failure,
                    &mut self.touched,
                );
                replica.move_outbox_into(&mut self.outbox);
                due = due.min(replica.next_tick_that_runs());
                if is_catching_up(replica) {
                    self.catching_up.push(group);
                }
            }
            self.partitions_due_at = due;
        }
        self.group_ticks = tick + 1;
        self.last_tick_realtime_micros = realtime_micros;
        self.publish_directory();
        self.publish_access();
        self.reconcile();
        self.ticks += 1;
        self.unpark(realtime_micros);
    }

    /// Repair sessions and transfers served by this shard's partition groups now, for
    /// the catch-up budget (the metadata group is outside it: see `open`). Summed over
    /// the groups that had any when last looked at, which is all of them: a group's
    /// count changes only on its own inputs and ticks, after each of which it is looked
    /// at. Debug builds recount every group now and then.
    fn catch_up_load(&self) -> (u32, u32) {
        let (mut sessions, mut served) = (0u32, 0u32);
        for group in &self.catching_up {
            if let Some(replica) = self.partitions.get(group) {
                sessions += u32::from(replica.repair_session_active());
                served += replica.transfers_serving() as u32;
            }
        }
        if cfg!(debug_assertions) && self.ticks.is_multiple_of(CATCH_UP_RECOUNT_INTERVAL_TICKS) {
            let recount = self
                .partitions
                .values()
                .fold((0u32, 0u32), |(sessions, served), replica| {
                    (
                        sessions + u32::from(replica.repair_session_active()),
                        served + replica.transfers_serving() as u32,
                    )
                });
            assert_eq!(
                (sessions, served),
                recount,
                "the groups catching up, summed, are every group's"
            );
        }
        (sessions, served)
    }

    /// Shard 0: publish the partition set of the applied metadata if it changed, once
    /// the metadata replica has applied everything it knows to be committed. A replica
    /// replaying its log after a restart would otherwise open, one frame after another,
    /// groups that a later op it already holds deletes.
    fn publish_directory(&mut self) {
        let Some(metadata) = self.metadata.as_ref() else { return };
        if metadata.status() != Status::Normal || metadata.commit_min() != metadata.commit_max() {
            return;
        }
        let state: &MetadataState = metadata.state_machine().state();
        if self.directory.borrow().version != state.partitions_changed_at() {
            *self.directory.borrow_mut() = Directory::from_metadata(state);
        }
    }

    /// Open the partition groups this shard owns that the directory lists, and drop
    /// the ones it no longer lists.
    fn reconcile(&mut self) {
        let directory = self.directory.borrow();
        if self.reconciled == Some(directory.version) {
            return;
        }
        let shards = self.config.shards;
        let index = self.index;
        let gone: Vec<u64> = self
            .partitions
            .keys()
            .filter(|group| !directory.partitions.contains_key(group))
            .copied()
            .collect();
        for group in gone {
            self.partitions.remove(&group);
            self.catching_up.retain(|&busy| busy != group);
            self.group_set_changes += 1;
            self.stores.remove(group, &*directory);
            self.stats.groups_closed += 1;
            tracing::info!(replica = self.config.replica, group, "partition group closed");
        }
        for spec in directory
            .partitions
            .values()
            .filter(|spec| owner_shard(spec.group, shards) == index)
        {
            if self.partitions.contains_key(&spec.group) {
                // A topic's durability can change after its partitions exist.
                self.stores.set_durability(spec.group, spec.durability);
                continue;
            }
            if self.stores.is_deleted(spec.group) {
                // Deleted here already; this directory is from before the delete.
                self.stats.groups_deleted_skipped += 1;
                continue;
            }
            // Before the store opens: a persisted partition publishes from its first write.
            self.stores.set_durability(spec.group, spec.durability);
            let store = match self.stores.open(spec.group) {
                Ok(store) => store,
                Err(error) => {
                    tracing::error!(replica = self.config.replica, group = spec.group, %error, "partition store refused to open");
                    self.stats.groups_open_failed += 1;
                    refuse_group(&self.storage_failure, spec.group, error.what);
                    break;
                }
            };
            let mut replica = match Replica::open(
                self.config.replica_config(spec.group, spec.created_in_view),
                PartitionMachine::new(spec.message_expiry_micros, self.config.owner_fence),
                store,
                self.incarnation,
            ) {
                Ok(replica) => replica,
                Err(error) => {
                    tracing::error!(replica = self.config.replica, group = spec.group, %error, "partition group refused its disk");
                    self.stats.groups_open_failed += 1;
                    refuse_group(&self.storage_failure, spec.group, error.what);
                    break;
                }
            };
            replica.set_catch_up_budget(self.budget.clone());
            note_storage_failure(&self.storage_failure, spec.group, &replica);
            // It takes ticks from the next one delivered, as every group does.
            replica.start_tick_count_at(self.group_ticks);
            self.partitions_due_at = self.partitions_due_at.min(replica.next_tick_that_runs());
            note_catching_up(&mut self.catching_up, spec.group, &replica);
            tracing::info!(
                replica = self.config.replica,
                group = spec.group,
                view = spec.created_in_view,
                "partition group opened"
            );
            self.partitions.insert(spec.group, replica);
            self.stats.groups_opened += 1;
            self.group_set_changes += 1;
        }
        self.reconciled = Some(directory.version);
    }
}

/// How often, in ticks, a debug build recounts every group's catch-up load against
/// the sum over the groups catching up: often enough that a group missed by the
/// bookkeeping is caught within a short run, rarely enough that the recount does not
/// put back the walk over every group that the bookkeeping saves.
const CATCH_UP_RECOUNT_INTERVAL_TICKS: u64 = 64;

/// Whether `replica` counts in the catch-up budget now.
fn is_catching_up<S: crate::vsr::StateMachine, T: crate::vsr::store::ReplicaStore>(replica: &Replica<S, T>) -> bool {
    replica.repair_session_active() || replica.transfers_serving() > 0
}

/// Keep `group` in `catching_up` (ascending) exactly when `replica` counts in the
/// catch-up budget.
fn note_catching_up<S: crate::vsr::StateMachine, T: crate::vsr::store::ReplicaStore>(
    catching_up: &mut Vec<u64>,
    group: u64,
    replica: &Replica<S, T>,
) {
    match (catching_up.binary_search(&group), is_catching_up(replica)) {
        (Err(at), true) => catching_up.insert(at, group),
        (Ok(at), false) => {
            catching_up.remove(at);
        }
        _ => {}
    }
}

/// A group's store refused to open (an I/O error, or damage boot cannot repair yet):
/// the node fail-stops rather than run without the group for good (its replica would
/// never answer again, and frames for it would only be counted).
fn refuse_group(flag: &Cell<Option<StorageFailure>>, group: u64, what: &'static str) {
    if flag.get().is_none() {
        flag.set(Some(StorageFailure { group, what }));
    }
}

/// Tick `replica` (group `group`), raise the node's fail-stop flag if it stopped, and
/// note the group in `touched` (if tracked) when the tick ran something.
#[inline]
fn tick_group<S: crate::vsr::StateMachine, T: crate::vsr::store::ReplicaStore>(
    replica: &mut Replica<S, T>,
    group: u64,
    realtime_micros: u64,
    flag: &Cell<Option<StorageFailure>>,
    touched: &mut Option<Vec<u64>>,
) {
    let activity = replica.activity();
    replica.tick(realtime_micros);
    note_storage_failure(flag, group, replica);
    if let Some(touched) = touched.as_mut()
        && replica.activity() != activity
    {
        touched.push(group);
    }
}

/// Raise the node's fail-stop flag if `replica` stopped on a storage failure (the
/// first failure wins; later ones change nothing).
fn note_storage_failure<S: crate::vsr::StateMachine, T: crate::vsr::store::ReplicaStore>(
    flag: &Cell<Option<StorageFailure>>,
    group: u64,
    replica: &Replica<S, T>,
) {
    if flag.get().is_none()
        && let Some(what) = replica.storage_failure()
    {
        flag.set(Some(StorageFailure { group, what }));
    }
}

impl NodeConfig {
    /// The replica configuration of `group` on this node.
    pub fn replica_config(&self, group: u64, initial_view: u64) -> ReplicaConfig {
        ReplicaConfig {
            cluster: self.cluster,
            group,
            replica: self.replica,
            replicas: self.replicas,
            // Each group draws its own entropy, so two groups' salts never coincide.
            entropy_seed: crate::vsr::replica::mix(self.entropy_seed ^ crate::vsr::replica::mix(group)),
            initial_view,
            journal_ops_max: if group == METADATA_GROUP {
                self.journal.journal_slots
            } else {
                self.journal.ring_entries
            },
            journal_bytes_max: self.journal.ring_bytes,
            applied_frames_in_memory_ops: self.journal.applied_frames_in_memory_ops,
            transfer_on_rejoin: group == METADATA_GROUP,
            storage_break: self.storage_break,
            buggify: self.buggify,
        }
    }
}
