//! The simulated network: a deterministic packet simulator between processes.
//!
//! Models: one bounded link per ordered pair of processes (replica to replica,
//! client to replica, replica to client, client to client), an exponential one-way
//! delay with a floor, loss, replay (duplication), corruption, reordering among
//! packets that are due, per-path clogs, replica-only partitions (symmetric or
//! asymmetric, three shapes), per-link command filters, and crashed processes.
//! Every draw comes from [`SimRng`] streams derived from one seed, and nothing
//! iterates a hash map, so a seed replays bit for bit.
//!
//! Does not model: bandwidth or packet size, loopback traffic (a packet with
//! `from == to` is dropped at submit and counted in `dropped_loopback`; a process
//! talks to itself without the network), connection state (there are no
//! handshakes or resets: a crash only drops what is queued to the crashed process),
//! or clock skew (see `config.rs` for the clock parameters, read elsewhere).
//!
//! Two streams are drawn from: a packet stream (delays, eviction victims, delivery
//! order, the three per-packet coins, corruption positions) and a fault stream (the
//! partition state machine and clogs). So the partition and clog schedule of a seed
//! depends only on the seed and the tick count, not on the traffic.

pub mod config;
pub mod link;
pub mod partition;
pub mod stats;

use crate::replay::Replay;
use crate::rng::SimRng;
use config::NetworkConfig;
pub use link::CommandFilter;
use link::{Link, Packet, draw_delay};
use partition::{Partition, Step, mode_name, symmetry_name};
pub use stats::NetworkStats;

/// A process index: replicas are `0..replicas`, clients are `replicas..replicas+clients`.
pub type ProcessIndex = usize;

/// What the network carries. The simulator only needs to classify, copy and damage it.
pub trait Payload: Clone {
    /// The message type byte used for per-link filters and per-command counters.
    fn command(&self) -> u8;
    /// Damage the payload in transit (flip at least one bit), drawing positions from rng.
    fn corrupt(&mut self, rng: &mut SimRng);
}

impl Payload for Vec<u8> {
    /// The first byte, or 0 for an empty payload.
    fn command(&self) -> u8 {
        self.first().copied().unwrap_or(0)
    }

    /// Flips one random bit of one random byte (two draws); an empty payload is left
    /// alone and draws nothing.
    fn corrupt(&mut self, rng: &mut SimRng) {
        if self.is_empty() {
            return;
        }
        let byte = rng.index(self.len());
        let bit = rng.below(8);
        self[byte] ^= 1 << bit;
    }
}

/// A packet handed to its receiver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivered<P> {
    /// The sender.
    pub from: ProcessIndex,
    /// The receiver.
    pub to: ProcessIndex,
    /// The payload, damaged if `corrupted`.
    pub payload: P,
    /// Whether the corruption coin damaged this copy.
    pub corrupted: bool,
}

/// The network between `replicas + clients` processes. See the module docs.
#[derive(Debug)]
pub struct PacketSimulator<P> {
    config: NetworkConfig,
    replicas: usize,
    processes: usize,
    tick: u64,
    /// Indexed `from * processes + to`.
    links: Vec<Link<P>>,
    up: Vec<bool>,
    partition: Partition,
    automatic_clogs: bool,
    packet_rng: SimRng,
    fault_rng: SimRng,
    /// Scratch for one link's ready packets during `deliver_due` (kept to avoid allocating).
    ready: Vec<Packet<P>>,
    stats: NetworkStats,
    capacity: usize,
    delay_mean: f64,
    queued: usize,
    /// The partitions, heals and clogs `advance` made, on the network tick each was
    /// made at (a fault schedule's network events), while `keep_faults` says so: a run
    /// that records, replays into a shrink or traces its schedule keeps them; any
    /// other counts them only, so a soak run's memory does not grow with its faults.
    faults_made: Vec<(u64, NetworkFault)>,
    keep_faults: bool,
    /// How many of each `advance` made (kept or not).
    faults_counted: NetworkFaultCounts,
    /// A replayed schedule's network events: with one, `advance` draws no fault.
    replay: Option<Replay<NetworkFault>>,
}

/// A partition's shape: `side_a` against every other replica, packets dropped in the
/// cut direction(s). The network makes and replays it; a fault schedule records it as
/// is (the same fields, in the same order).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartitionCut {
    /// The replicas on side A.
    pub side_a: Vec<usize>,
    /// Packets from side A to side B are dropped.
    pub cut_a_to_b: bool,
    /// Packets from side B to side A are dropped.
    pub cut_b_to_a: bool,
}

/// How many faults of each kind the network made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetworkFaultCounts {
    /// Partitions started.
    pub partitions: u64,
    /// Partitions healed.
    pub heals: u64,
    /// Paths clogged.
    pub clogs: u64,
}

/// A network fault of a schedule (see `crate::fault_schedule`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetworkFault {
    /// The replicas split: `side_a` against the rest, in the cut direction(s).
    Partition(PartitionCut),
    /// The partition heals.
    Heal,
    /// Path `from -> to` (process indices) clogs for `ticks` ticks.
    Clog {
        /// Sender.
        from: ProcessIndex,
        /// Receiver.
        to: ProcessIndex,
        /// Ticks.
        ticks: u64,
    },
}

impl<P: Payload> PacketSimulator<P> {
    /// Reseed every draw of the network (packets and faults) for a branch of the run
    /// (see [`crate::timeline`]).
    pub fn branch(&mut self, key: crate::timeline::BranchKey) {
        self.packet_rng.branch(key);
        self.fault_rng.branch(key);
    }

    /// A network with every link empty and open, every process up, no partition and
    /// no clog, at tick 0. A `link_capacity_packets` of 0 is treated as 1.
    pub fn new(config: NetworkConfig, replicas: usize, clients: usize, seed: u64) -> Self {
        let processes = replicas + clients;
        let mut master = SimRng::new(seed);
        let packet_rng = SimRng::new(master.next_u64());
        let fault_rng = SimRng::new(master.next_u64());
        Self {
            capacity: config.link_capacity_packets.max(1),
            // Mean delays are small integers; the conversion is exact.
            delay_mean: config.one_way_delay_mean_ticks as f64,
            config,
            replicas,
            processes,
            tick: 0,
            links: (0..processes * processes).map(|_| Link::new()).collect(),
            up: vec![true; processes],
            partition: Partition::new(replicas),
            automatic_clogs: true,
            packet_rng,
            fault_rng,
            ready: Vec::new(),
            stats: NetworkStats::default(),
            queued: 0,
            faults_made: Vec::new(),
            keep_faults: true,
            faults_counted: NetworkFaultCounts::default(),
            replay: None,
        }
    }

    /// The configuration this network was built with.
    pub fn config(&self) -> &NetworkConfig {
        &self.config
    }

    /// How many replicas (processes `0..replicas`).
    pub fn replicas(&self) -> usize {
        self.replicas
    }

    /// How many processes, replicas and clients together.
    pub fn processes(&self) -> usize {
        self.processes
    }

    /// The current network tick, starting at 0.
    pub fn tick(&self) -> u64 {
        self.tick
    }

    #[inline]
    fn link_index(&self, from: ProcessIndex, to: ProcessIndex) -> usize {
        assert!(
            from < self.processes && to < self.processes,
            "link ({from}, {to}) out of range: {} processes",
            self.processes
        );
        from * self.processes + to
    }

    /// Sends `payload` from `from` to `to`, due at `tick + max(1, min, exponential(mean))`.
    /// Dropped (counted) if either end is crashed or `from == to`. A full link first
    /// evicts a random queued packet (counted). Partitions and filters are applied
    /// when the packet comes due, not here.
    #[inline]
    pub fn submit(&mut self, from: ProcessIndex, to: ProcessIndex, payload: P) {
        let index = self.link_index(from, to);
        self.stats.submitted += 1;
        if from == to {
            self.stats.dropped_loopback += 1;
            return;
        }
        if !self.up[from] || !self.up[to] {
            self.stats.dropped_crashed += 1;
            return;
        }
        let delay = draw_delay(
            &mut self.packet_rng,
            self.config.one_way_delay_min_ticks,
            self.delay_mean,
        );
        let packet = Packet {
            due: self.tick + delay,
            payload,
        };
        if self.links[index].push(packet, self.capacity, &mut self.packet_rng) {
            self.stats.evicted += 1;
        } else {
            self.queued += 1;
        }
    }

    /// Appends to `out` every packet due at or before the current tick, link by link
    /// in fixed order (from-major, then to), each link's ready packets in random
    /// order. Clogged paths hold their packets. For each packet, in this order: one
    /// draw picks it, then the loss, replay and corruption coins are always all
    /// drawn; then it is dropped if its path is cut, else dropped if the link's
    /// filter blocks its command, else lost by the loss coin, else delivered (with
    /// a clone re-queued by the replay coin, and the payload damaged by the
    /// corruption coin). Does not clear `out`.
    pub fn deliver_due(&mut self, out: &mut Vec<Delivered<P>>) {
        let now = self.tick;
        let n = self.processes;
        for from in 0..n {
            for to in 0..n {
                let link = &mut self.links[from * n + to];
                if link.queue.is_empty() || link.is_clogged(now) {
                    continue;
                }
                link.take_ready(now, &mut self.ready);
                // Nothing is queued to a crashed process (crash drains it, submit refuses).
                debug_assert!(self.ready.is_empty() || self.up[to]);
                self.queued -= self.ready.len();
                let cut = self.partition.is_cut(from, to);
                while !self.ready.is_empty() {
                    let pick = self.packet_rng.index(self.ready.len());
                    let Packet { mut payload, .. } = self.ready.swap_remove(pick);
                    let lost = self.packet_rng.chance(self.config.packet_loss_probability);
                    let replay = self.packet_rng.chance(self.config.packet_replay_probability);
                    let corrupt = self.packet_rng.chance(self.config.packet_corruption_probability);
                    let command = payload.command();
                    if cut {
                        self.stats.dropped_partitioned += 1;
                        continue;
                    }
                    if !link.filter.allows(command) {
                        self.stats.dropped_filtered += 1;
                        continue;
                    }
                    if lost {
                        self.stats.lost += 1;
                        continue;
                    }
                    if replay {
                        let delay = draw_delay(
                            &mut self.packet_rng,
                            self.config.one_way_delay_min_ticks,
                            self.delay_mean,
                        );
                        // The link gave up at least this packet's slot, so there is room.
                        debug_assert!(link.queue.len() < self.capacity);
                        link.queue.push(Packet {
                            due: now + delay,
                            payload: payload.clone(),
                        });
                        self.queued += 1;
                        self.stats.replayed += 1;
                    }
                    if corrupt {
                        payload.corrupt(&mut self.packet_rng);
                        self.stats.corrupted += 1;
                    }
                    self.stats.delivered += 1;
                    self.stats.delivered_by_command[usize::from(command)] += 1;
                    out.push(Delivered {
                        from,
                        to,
                        payload,
                        corrupted: corrupt,
                    });
                }
            }
        }
    }

    /// Ends the tick: `tick += 1`, then one step of the partition state machine,
    /// then the clog draws: every directed path (`from != to`) not clogged at the
    /// new tick clogs with `path_clog_probability` for
    /// `max(1, exponential(path_clog_duration_mean_ticks))` ticks. Allocation-free.
    pub fn advance(&mut self) {
        self.tick += 1;
        if self.replay.is_some() {
            self.advance_replayed();
            return;
        }
        match self.partition.step(&self.config, &mut self.fault_rng) {
            Step::Started => {
                self.stats.partitions_started += 1;
                if let Some((side_a, cut_a_to_b, cut_b_to_a)) = self.partition.current() {
                    let fault = NetworkFault::Partition(PartitionCut {
                        side_a,
                        cut_a_to_b,
                        cut_b_to_a,
                    });
                    self.note_fault(self.tick, fault);
                }
            }
            Step::Healed => {
                self.stats.partitions_healed += 1;
                self.note_fault(self.tick, NetworkFault::Heal);
            }
            Step::Unchanged => {}
        }
        if !self.automatic_clogs {
            return;
        }
        // A clog coin of probability 0 never lands, so its only effect is to advance
        // `fault_rng`, whose other reader is the partition machine. When that machine
        // can never draw either, the stream has no reader at all and the coins are
        // skipped (n * (n - 1) draws a tick, 2-3% of a faults-free run): the schedule
        // is the same with or without them. Otherwise they are drawn, so the partition
        // draws that follow stay where they were.
        if self.config.path_clog_probability == 0.0 && self.partition.never_draws(&self.config) {
            return;
        }
        let now = self.tick;
        let n = self.processes;
        let mean = self.config.path_clog_duration_mean_ticks as f64;
        for from in 0..n {
            for to in 0..n {
                let link = &mut self.links[from * n + to];
                if from == to || link.is_clogged(now) {
                    continue;
                }
                if self.fault_rng.chance(self.config.path_clog_probability) {
                    let ticks = self.fault_rng.exponential(mean).max(1);
                    link.clogged_until = now + ticks;
                    self.stats.clogs_started += 1;
                    self.note_fault(now, NetworkFault::Clog { from, to, ticks });
                }
            }
        }
    }

    /// `advance` under a replayed schedule: the events due now, in place of the
    /// partition and clog draws. Partitions and clogs the network was told to stop
    /// making (`calm`, `set_automatic_*`) are not made from the schedule either.
    fn advance_replayed(&mut self) {
        let now = self.tick;
        while let Some((_, fault)) = self.replay.as_mut().and_then(|replay| replay.next_due(now)) {
            let applied = match &fault {
                NetworkFault::Partition(cut) if self.partition.automatic() => {
                    self.partition.start_exact(&cut.side_a, cut.cut_a_to_b, cut.cut_b_to_a);
                    self.stats.partitions_started += 1;
                    true
                }
                NetworkFault::Heal if self.partition.automatic() && self.partition.is_partitioned() => {
                    self.partition.heal();
                    self.stats.partitions_healed += 1;
                    true
                }
                &NetworkFault::Clog { from, to, ticks }
                    if self.automatic_clogs && from < self.processes && to < self.processes && from != to =>
                {
                    let link = &mut self.links[from * self.processes + to];
                    let free = !link.is_clogged(now);
                    if free {
                        link.clogged_until = now + ticks;
                        self.stats.clogs_started += 1;
                    }
                    free
                }
                // Out of place now (partitions off, nothing to heal, a clog on a
                // path that is clogged already): skipped.
                _ => false,
            };
            if applied {
                self.note_fault(now, fault);
            }
        }
    }

    /// Replay these network faults (by network tick) in place of the partition and
    /// clog draws from now on.
    pub fn replay_faults(&mut self, faults: Vec<(u64, NetworkFault)>) {
        self.replay = Some(Replay::new(faults));
    }

    /// The partitions, heals and clogs made so far, by network tick (none kept after
    /// `keep_faults(false)`).
    pub fn faults_made(&self) -> &[(u64, NetworkFault)] {
        &self.faults_made
    }

    /// Keep every fault made (the default) or only count them from now on.
    pub fn keep_faults(&mut self, keep: bool) {
        self.keep_faults = keep;
    }

    /// How many partitions, heals and clogs were made so far, kept or not.
    pub fn faults_counted(&self) -> NetworkFaultCounts {
        self.faults_counted
    }

    fn note_fault(&mut self, tick: u64, fault: NetworkFault) {
        match fault {
            NetworkFault::Partition(_) => self.faults_counted.partitions += 1,
            NetworkFault::Heal => self.faults_counted.heals += 1,
            NetworkFault::Clog { .. } => self.faults_counted.clogs += 1,
        }
        if self.keep_faults {
            self.faults_made.push((tick, fault));
        }
    }

    /// Crashes `p`: submits from or to it are dropped, and everything queued to it
    /// now is dropped (counted in `dropped_crashed`). Packets it already sent stay in
    /// flight. Partitions, clogs and filters are unchanged.
    pub fn crash(&mut self, p: ProcessIndex) {
        assert!(p < self.processes, "crash({p}): only {} processes", self.processes);
        self.up[p] = false;
        for from in 0..self.processes {
            let queue = &mut self.links[from * self.processes + p].queue;
            self.stats.dropped_crashed += queue.len() as u64;
            self.queued -= queue.len();
            queue.clear();
        }
    }

    /// Brings `p` back up. A standing partition still applies to it.
    pub fn restart(&mut self, p: ProcessIndex) {
        assert!(p < self.processes, "restart({p}): only {} processes", self.processes);
        self.up[p] = true;
    }

    /// Whether `p` is up (not crashed).
    pub fn is_up(&self, p: ProcessIndex) -> bool {
        self.up[p]
    }

    /// Replaces the command filter of link `(from, to)`. Applies to packets already
    /// queued too, since filters are checked when a packet comes due.
    pub fn set_link_filter(&mut self, from: ProcessIndex, to: ProcessIndex, filter: CommandFilter) {
        let index = self.link_index(from, to);
        self.links[index].filter = filter;
    }

    /// The command filter of link `(from, to)`.
    pub fn link_filter(&self, from: ProcessIndex, to: ProcessIndex) -> CommandFilter {
        self.links[self.link_index(from, to)].filter
    }

    /// Starts a symmetric partition between the replicas in `side_a` and every other
    /// replica, replacing any standing one, and restarts the partitioned stability
    /// window. Clients are never cut. Panics if `side_a` names a non-replica.
    /// Counts as a started partition. Draws nothing.
    pub fn partition_now(&mut self, side_a: &[ProcessIndex]) {
        self.partition.start_manual(side_a);
        self.stats.partitions_started += 1;
    }

    /// Heals any standing partition (counted if one stood) and restarts the healed
    /// stability window. Draws nothing.
    pub fn heal_now(&mut self) {
        if self.partition.is_partitioned() {
            self.stats.partitions_healed += 1;
        }
        self.partition.heal();
    }

    /// Turns the partition state machine on (the default) or off. While off, `advance`
    /// neither starts nor heals partitions and draws nothing for them; a standing
    /// partition stands until `heal_now`. With mode `None` or fewer than two replicas
    /// the state machine never runs either way, so a `partition_now` there also
    /// stands until `heal_now`.
    pub fn set_automatic_partitions(&mut self, enabled: bool) {
        self.partition.set_automatic(enabled);
    }

    /// Turns the per-tick clog draws on (the default) or off. While off, `advance`
    /// draws nothing for clogs; clogs already standing run out on their own.
    pub fn set_automatic_clogs(&mut self, enabled: bool) {
        self.automatic_clogs = enabled;
    }

    /// Clogs path `(from, to)` for `ticks` ticks from now (extending a shorter
    /// standing clog). Counts as a started clog. Draws nothing.
    pub fn clog_path(&mut self, from: ProcessIndex, to: ProcessIndex, ticks: u64) {
        let index = self.link_index(from, to);
        let until = self.tick + ticks;
        let link = &mut self.links[index];
        link.clogged_until = link.clogged_until.max(until);
        self.stats.clogs_started += 1;
    }

    /// Heals any standing partition and ends every clog, and starts no new ones: the
    /// network of a heal or of the liveness phase's core (loss, delay and replay stay
    /// as the profile drew them). Draws nothing.
    pub fn calm(&mut self) {
        self.set_automatic_partitions(false);
        self.set_automatic_clogs(false);
        self.heal_now();
        self.unclog_all();
    }

    /// Ends every standing clog now. Draws nothing.
    pub fn unclog_all(&mut self) {
        for link in &mut self.links {
            link.clogged_until = 0;
        }
    }

    /// The network tick by which everything now in flight from `from` to `to` has
    /// come due and the path is no longer clogged: a connection's end (the reset a
    /// crash sends after the data it had sent) arrives no sooner, as TCP keeps a
    /// stream in order. A replay drawn later may still come after it.
    pub fn in_flight_due_by(&self, from: ProcessIndex, to: ProcessIndex) -> u64 {
        let link = &self.links[self.link_index(from, to)];
        let latest = link.queue.iter().map(|packet| packet.due).max().unwrap_or(0);
        latest.max(link.clogged_until)
    }

    /// Whether a partition stands (even one that happens to cut nothing).
    pub fn is_partitioned(&self) -> bool {
        self.partition.is_partitioned()
    }

    /// Whether path `(from, to)` holds its packets this tick.
    pub fn path_clogged(&self, from: ProcessIndex, to: ProcessIndex) -> bool {
        self.links[self.link_index(from, to)].is_clogged(self.tick)
    }

    /// Whether the standing partition drops packets from `from` to `to`. Only
    /// replica-to-replica paths can be cut.
    pub fn path_cut(&self, from: ProcessIndex, to: ProcessIndex) -> bool {
        self.partition.is_cut(from, to)
    }

    /// Packets in flight on every link (replays included).
    pub fn queued(&self) -> usize {
        self.queued
    }

    /// Totals since construction.
    pub fn stats(&self) -> &NetworkStats {
        &self.stats
    }

    /// The network parameters on one line, for run banners, e.g.
    /// `loss=0.02 replay=0.01 corrupt=0.001 delay=1..3 partition=isolate-single/asymmetric
    /// p_partition=0.005 p_unpartition=0.05 stability=20/40 clog=0.002 clog_ticks=10
    /// link_capacity=64` (`delay=min..mean`, `stability=partitioned/healed`).
    pub fn describe(&self) -> String {
        let c = &self.config;
        format!(
            "loss={} replay={} corrupt={} delay={}..{} partition={}/{} p_partition={} \
             p_unpartition={} stability={}/{} clog={} clog_ticks={} link_capacity={}",
            c.packet_loss_probability,
            c.packet_replay_probability,
            c.packet_corruption_probability,
            c.one_way_delay_min_ticks,
            c.one_way_delay_mean_ticks,
            mode_name(c.partition_mode),
            symmetry_name(c.partition_symmetry),
            c.partition_probability,
            c.unpartition_probability,
            c.partition_stability_ticks,
            c.unpartition_stability_ticks,
            c.path_clog_probability,
            c.path_clog_duration_mean_ticks,
            c.link_capacity_packets,
        )
    }
}

#[cfg(test)]
mod tests;
