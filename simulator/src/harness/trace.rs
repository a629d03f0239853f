//! `--trace`: what the harness tells the run's [`TraceRecorder`] each tick.
//!
//! Observes, after every step: each replica's status, view, commit and head in every
//! group its node hosts (the recorder keeps changes only), checkpoints, groups a node
//! stopped hosting, faults its disk injected, the disk-error windows and rots the
//! harness decided, the partitions, heals and clogs the network made, and each
//! client's requests from send to answer (seen through its counters, so a request
//! sent and answered within one tick is a span of length zero). Crashes, power cuts,
//! fail-stops and restarts are told as they happen (`Harness::end_process`,
//! `restart_now`). Nothing here draws or changes what the run does: with tracing off
//! none of it runs.

use std::collections::BTreeMap;

use cluster::vsr::Status;

use super::{CheckFailure, Disk, Harness};
use crate::fault_schedule::{DiskErrorsOn, Fault, process_name};
use crate::network::NetworkFault;
use crate::trace::{Lane, TraceRecorder};

/// One replica of one group as the trace last saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seen {
    status: Status,
    view: u64,
    commit: u64,
    head: u64,
    checkpoint: u64,
    /// The tick it was last seen hosted at.
    tick: u64,
}

/// The recorder and what the harness saw last, to tell only what changed.
#[derive(Debug)]
pub(super) struct HarnessTrace {
    pub(super) recorder: TraceRecorder,
    /// Per (replica, group) hosted by a live node, what the last look saw: one search
    /// per replica and group each tick, and the recorder is told only of changes.
    seen: BTreeMap<(usize, u64), Seen>,
    /// Per replica, the disk faults injected at the last look.
    injected: Vec<u64>,
    /// How many of the harness's and the network's faults were told.
    faults_told: (usize, usize),
    /// Per client: (requests sent, outstanding, denied, not committed) at the last look.
    clients: Vec<(u64, bool, u64, u64)>,
    /// Whether a partition stood at the last look, as the trace has told it.
    partitioned: bool,
}

/// The status as the trace names it.
fn status_name(status: Status) -> &'static str {
    match status {
        Status::Normal => "normal",
        Status::ViewChange => "view-change",
        Status::Recovering => "recovering",
    }
}

impl HarnessTrace {
    pub(super) fn new(replicas: usize, clients: usize) -> Self {
        Self {
            recorder: TraceRecorder::new(replicas, clients),
            seen: BTreeMap::new(),
            injected: vec![0; replicas],
            faults_told: (0, 0),
            clients: vec![(0, false, 0, 0); clients],
            partitioned: false,
        }
    }
}

/// A replica's disk injected faults since the last look: one mark for them.
fn trace_disk(recorder: &mut TraceRecorder, injected: &mut [u64], index: usize, disk: &Disk, tick: u64) {
    if let Disk::Sim(storage) = disk {
        let total = storage.injected().total();
        if total > injected[index] {
            let detail = format!("{} disk fault(s) injected", total - injected[index]);
            recorder.fault(tick, Lane::Replica(index), "disk-fault", detail);
            injected[index] = total;
        }
    }
}

impl Harness {
    /// Record a timeline of the run from now on (see [`crate::trace`]).
    pub fn enable_trace(&mut self) {
        self.trace = Some(Box::new(HarnessTrace::new(self.replica_count, self.clients.len())));
    }

    /// The failing check, as the trace's final mark; then every open span closes.
    /// Returns the recorder (`None` without `enable_trace`).
    pub fn finish_trace(&mut self, failure: Option<&CheckFailure>) -> Option<TraceRecorder> {
        self.trace_tick();
        let tick = self.simulation.tick();
        let mut trace = self.trace.take()?;
        if let Some(failure) = failure {
            trace
                .recorder
                .failure(failure.tick, failure.check, &failure.to_string());
        }
        trace.recorder.finish(tick);
        Some(trace.recorder)
    }

    /// Tell the trace about a fault of the whole cluster (an outage) as it happens.
    pub fn trace_cluster_fault(&mut self, kind: &'static str, detail: String) {
        let tick = self.simulation.tick();
        if let Some(trace) = &mut self.trace {
            trace.recorder.fault(tick, Lane::Cluster, kind, detail);
        }
    }

    /// Tell the trace about a fault on a replica as it happens.
    pub(super) fn trace_fault(&mut self, replica: usize, kind: &'static str, detail: String) {
        let tick = self.simulation.tick();
        if let Some(trace) = &mut self.trace {
            trace.recorder.fault(tick, Lane::Replica(replica), kind, detail);
        }
    }

    /// Tell the trace what changed in this tick (see the module docs): each replica's
    /// groups and disk, the schedule's and the network's new faults, the clients'
    /// requests.
    pub(super) fn trace_tick(&mut self) {
        let Some(mut trace) = self.trace.take() else {
            return;
        };
        let tick = self.simulation.tick();
        self.trace_replicas(&mut trace, tick);
        self.trace_schedule_faults(&mut trace);
        self.trace_network_faults(&mut trace, tick);
        self.trace_clients(&mut trace, tick);
        self.trace = Some(trace);
    }

    /// Each replica's groups (status and view, commit, head, checkpoint, groups
    /// closed) and its disk's injected faults.
    fn trace_replicas(&self, trace: &mut HarnessTrace, tick: u64) {
        let recorder = &mut trace.recorder;
        for (index, slot) in self.slots.iter().enumerate() {
            let replica_groups = (index, 0)..=(index, u64::MAX);
            let Some(node) = &slot.node else {
                // Its spans were closed by the crash; a restart reports everything anew.
                let gone: Vec<(usize, u64)> = trace.seen.range(replica_groups).map(|(key, _)| *key).collect();
                for key in gone {
                    trace.seen.remove(&key);
                }
                trace_disk(recorder, &mut trace.injected, index, &slot.disk, tick);
                continue;
            };
            for shard in node.shards() {
                let shard = shard.borrow();
                let metadata = shard.metadata().map(|replica| {
                    (
                        0,
                        replica.status(),
                        replica.view(),
                        replica.commit_min(),
                        replica.head(),
                        replica.checkpoint_op(),
                    )
                });
                let partitions = shard.partitions().iter().map(|(group, replica)| {
                    (
                        *group,
                        replica.status(),
                        replica.view(),
                        replica.commit_min(),
                        replica.head(),
                        replica.checkpoint_op(),
                    )
                });
                for (group, status, view, commit, head, checkpoint) in metadata.into_iter().chain(partitions) {
                    let now = Seen {
                        status,
                        view,
                        commit,
                        head,
                        checkpoint,
                        tick,
                    };
                    let before = trace.seen.insert((index, group), now);
                    if before.is_none_or(|before| (before.status, before.view) != (status, view)) {
                        recorder.replica_state(tick, index, group, status_name(status), view);
                    }
                    if before.is_none_or(|before| before.commit != commit) {
                        recorder.commit(tick, index, group, commit);
                    }
                    if before.is_none_or(|before| before.head != head) {
                        recorder.head(tick, index, group, head);
                    }
                    if checkpoint > before.map_or(0, |before| before.checkpoint) {
                        recorder.checkpoint(tick, index, group, checkpoint);
                    }
                }
            }
            // Groups the node no longer hosts (deleted, or closed) were not seen now.
            let closed: Vec<(usize, u64)> = trace
                .seen
                .range(replica_groups)
                .filter(|(_, seen)| seen.tick < tick)
                .map(|(key, _)| *key)
                .collect();
            for key in closed {
                recorder.group_closed(tick, index, key.1);
                trace.seen.remove(&key);
            }
            trace_disk(recorder, &mut trace.injected, index, &slot.disk, tick);
        }
    }

    /// The schedule's faults made since the last tick that are told here (disk-error
    /// windows and rot; crashes and restarts are told as they happen).
    fn trace_schedule_faults(&self, trace: &mut HarnessTrace) {
        let recorder = &mut trace.recorder;
        for event in &self.faults_made[trace.faults_told.0..] {
            match &event.fault {
                Fault::DiskErrors { on } => {
                    let (lane, kind) = match on {
                        DiskErrorsOn::Replica(replica) => (Lane::Replica(*replica), "disk-errors-on"),
                        DiskErrorsOn::Everyone => (Lane::Cluster, "disk-errors-on"),
                        DiskErrorsOn::Nobody => (Lane::Cluster, "disk-errors-off"),
                    };
                    recorder.fault(event.tick, lane, kind, "writes and syncs may fail".to_owned());
                }
                Fault::Rot { replica } => recorder.fault(
                    event.tick,
                    Lane::Replica(*replica),
                    "rot",
                    "one stable bit rotted".to_owned(),
                ),
                // Told as they happen, with fail-stops and supervisor restarts.
                _ => {}
            }
        }
        trace.faults_told.0 = self.faults_made.len();
    }

    /// The network's faults made since the last tick, and partitions the harness made
    /// or healed itself.
    fn trace_network_faults(&self, trace: &mut HarnessTrace, tick: u64) {
        let recorder = &mut trace.recorder;
        let network = self.simulation.network().faults_made();
        for (at, fault) in &network[trace.faults_told.1..] {
            let replicas = self.replica_count;
            let (kind, detail) = match fault {
                NetworkFault::Partition(cut) => (
                    "partition",
                    format!(
                        "side A {:?} against the rest, cut {}",
                        cut.side_a,
                        match (cut.cut_a_to_b, cut.cut_b_to_a) {
                            (true, true) => "both ways",
                            (true, false) => "A to B",
                            _ => "B to A",
                        }
                    ),
                ),
                NetworkFault::Heal => ("heal", "the partition heals".to_owned()),
                NetworkFault::Clog { from, to, ticks } => (
                    "clog",
                    format!(
                        "{} -> {} for {ticks} ticks",
                        process_name(*from, replicas),
                        process_name(*to, replicas)
                    ),
                ),
            };
            trace.partitioned = match fault {
                NetworkFault::Partition(_) => true,
                NetworkFault::Heal => false,
                NetworkFault::Clog { .. } => trace.partitioned,
            };
            recorder.fault(*at, Lane::Network, kind, detail);
        }
        // Partitions the harness made or healed itself (the liveness phase's cut-offs,
        // the heal before the drain) are no schedule events, but a timeline without
        // them would show a partition standing to the end.
        let partitioned = self.simulation.network().is_partitioned();
        if partitioned != trace.partitioned {
            let (kind, detail) = if partitioned {
                ("partition", "made by the harness (the liveness phase's cut-off)")
            } else {
                ("heal", "by the harness (the liveness phase or the drain)")
            };
            recorder.fault(tick, Lane::Network, kind, detail.to_owned());
            trace.partitioned = partitioned;
        }
        trace.faults_told.1 = network.len();
    }

    /// Each client's requests sent and answered since the last tick.
    fn trace_clients(&self, trace: &mut HarnessTrace, tick: u64) {
        let recorder = &mut trace.recorder;
        for (client, stats) in self.clients.iter().enumerate() {
            let stats = stats.borrow();
            let (sent, outstanding, denied, not_committed) = trace.clients[client];
            if stats.requests > sent && outstanding {
                // Answered and followed by the next within one tick.
                recorder.request_answered(tick, client, sent, "reply");
            }
            if stats.requests > sent {
                let what = format!("op {} to group {:#x}", stats.last_operation, stats.last_group);
                recorder.request_sent(tick, client, stats.requests, &what);
            }
            let answered_now = (outstanding || stats.requests > sent) && !stats.outstanding;
            if answered_now {
                let outcome = if stats.denied > denied {
                    "denied"
                } else if stats.not_committed > not_committed {
                    "not committed"
                } else {
                    "reply"
                };
                recorder.request_answered(tick, client, stats.requests, outcome);
            }
            trace.clients[client] = (stats.requests, stats.outstanding, stats.denied, stats.not_committed);
        }
    }
}
