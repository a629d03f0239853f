//! `Simulation`: one tick at a time, the executor, the network and every process.
//!
//! A step is one tick (10 ms of virtual time), in four phases:
//!
//! 1. advance the clock by one tick (every due timer fires: pump ticks, resends),
//!    then run the executor until no task is ready;
//! 2. deliver every packet due this tick into an inbox of its process (a replica with
//!    several shards gets it on a shard drawn from the entry-shard seed stream, as a
//!    production node gets it on whichever shard's connection it arrived), run again;
//! 3. drain every outbox into the packet simulator (so nothing sent this tick can
//!    arrive this tick);
//! 4. advance the network (partitions and clogs start or end).
//!
//! A crashed replica's connections close: with [`Simulation::notify_closed_connections`]
//! on, every other live replica gets a closed-connection notice ([`Inbox::push_closed`],
//! on every shard) one mean link delay after the crash, behind the packets the process
//! sent before it, as its kernel resets the connections. Across a partition the reset
//! waits until the cut heals (a peer's next packet to the dead port is answered with
//! one). A machine that loses its power ([`Ending::PowerLoss`]) resets nothing, and a
//! paused, partitioned or clogged process sends no notice (its connections stay open);
//! neither does a client.
//!
//! A process can *stall* (its thread blocked in a slow disk call): whoever owns its
//! storage adds ticks to its stall counter ([`Simulation::set_stall_source`]); before
//! phase 3 the simulation turns a non-zero counter into a pause of that many ticks.
//! While paused its tasks are not polled, frames wait in its inboxes, and what it had
//! queued to send stays in its outbox: nothing it does is seen until the pause ends
//! (also what it did earlier in the stalled tick, a simplification).
//!
//! After each run to quiescence every live, unpaused process's inbox must be empty: a frame
//! still waiting means something queued it without waking its reader (a lost wakeup),
//! which in production the next tick would hide. What a process *is* (echo service,
//! cluster shard) is decided by whoever spawns its tasks; this module only hosts them.

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::rc::Rc;

use cluster::seam::{Inbox, InboxPush, ProcessId, TICK_MICROS};
use cluster::wire;

use crate::adversary::{Adversary, AdversaryStats};
use crate::bus::{Outbox, SimBus};
use crate::clock::SimClock;
use crate::executor::{DetExecutor, ExecutorError};
use crate::network::config::NetworkConfig;
use crate::network::{Delivered, PacketSimulator, Payload};
use crate::rng::SimRng;
use crate::seeds::SimSeeds;

/// A frame on the simulated wire. Its command is read where the wire format keeps it,
/// and corruption flips one bit anywhere, which the receiver's checksum must catch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireFrame(pub Vec<u8>);

impl Payload for WireFrame {
    fn command(&self) -> u8 {
        wire::peek_command(&self.0)
    }

    fn corrupt(&mut self, rng: &mut SimRng) {
        if self.0.is_empty() {
            return;
        }
        let byte = rng.index(self.0.len());
        let bit = rng.below(8);
        self.0[byte] ^= 1 << bit;
    }
}

/// Why a simulation cannot continue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimulationError {
    /// The executor failed (e.g. a spinning task).
    Executor(ExecutorError),
    /// A live process's inbox held frames when no task was ready.
    LostWakeup {
        /// The process.
        process: ProcessId,
        /// Frames waiting.
        frames: usize,
        /// The tick it was seen at.
        tick: u64,
    },
}

impl fmt::Display for SimulationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimulationError::Executor(error) => write!(f, "{error}"),
            SimulationError::LostWakeup { process, frames, tick } => write!(
                f,
                "lost wakeup: {process} inbox holds {frames} frame(s) at quiescence (tick {tick})"
            ),
        }
    }
}

impl std::error::Error for SimulationError {}

impl From<ExecutorError> for SimulationError {
    fn from(error: ExecutorError) -> Self {
        SimulationError::Executor(error)
    }
}

/// The shape of a simulated world.
#[derive(Clone, Debug)]
pub struct SimulationConfig {
    /// Replica processes (`0..replicas`).
    pub replicas: usize,
    /// Client processes (`replicas..replicas + clients`).
    pub clients: usize,
    /// Shards (inboxes) per replica process; clients always have one.
    pub shards: usize,
    /// The network they share.
    pub network: NetworkConfig,
    /// Per tick, the probability that the adversary (see [`crate::adversary`]) sends a
    /// replica a forged, replayed or foreign frame; 0 for none (it then draws nothing).
    pub adversary_probability: f64,
}

impl SimulationConfig {
    /// `replicas` replicas of `shards` shards each and `clients` clients on a perfect
    /// network (no loss, no partitions, the shortest delays): a world whose only faults
    /// are the ones a test injects itself.
    pub fn perfect(replicas: usize, clients: usize, shards: usize) -> Self {
        Self {
            replicas,
            clients,
            shards,
            network: NetworkConfig::perfect(),
            adversary_probability: 0.0,
        }
    }
}

/// Counters the simulation keeps itself (the network and executor keep their own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimulationStats {
    /// Frames put into inboxes.
    pub frames_delivered: u64,
    /// Of those, frames the network corrupted on the way (each must be rejected by
    /// its receiver's checksum).
    pub frames_delivered_corrupted: u64,
    /// Frames dropped because the receiving inbox was full.
    pub frames_dropped_inbox_full: u64,
    /// Frames sent to a process id outside the world (a routing bug in the sender).
    pub frames_unroutable: u64,
    /// Crashes performed.
    pub crashes: u64,
    /// Restarts performed.
    pub restarts: u64,
    /// Closed-connection notices handed to live replicas (see the module doc).
    pub close_notices_delivered: u64,
}

struct Process {
    /// One per shard; index 0 is the process's main inbox.
    inboxes: Vec<Inbox>,
    outbox: Outbox,
    up: bool,
    /// Ticks of stall its storage reported and the simulation has not yet applied.
    stall_source: Option<Rc<std::cell::Cell<u64>>>,
    /// The tick its current stall ends (it runs again in that tick's step).
    paused_until: Option<u64>,
}

/// How a process ends (see [`Simulation::crash`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The process dies and its machine's kernel resets its connections.
    Process,
    /// The machine loses its power: nothing is reset, peers hear only silence.
    PowerLoss,
}

/// A simulated world of replicas and clients.
pub struct Simulation {
    seeds: SimSeeds,
    executor: DetExecutor,
    network: PacketSimulator<WireFrame>,
    clock: Rc<SimClock>,
    processes: Vec<Process>,
    tick: u64,
    stats: SimulationStats,
    deliveries: Vec<Delivered<WireFrame>>,
    /// Draws the shard a packet enters a replica on (its own stream: the shard count
    /// never shifts another fault class's draws).
    entry_shard: SimRng,
    /// Whether a crash sends closed-connection notices (see the module doc).
    close_notices: bool,
    /// Notices on their way: (due network tick, receiver, crashed peer), in crash order.
    closes_in_flight: Vec<(u64, usize, usize)>,
    /// The adversary, when the run has one.
    adversary: Option<Adversary>,
    /// Per process since it last started: the adversary's frames handed to it, (in
    /// range, out of range: refused at decode).
    adversary_delivered: Vec<(u64, u64)>,
    /// The adversary's frames handed to any replica over the whole run.
    adversary_delivered_total: u64,
}

impl Simulation {
    /// A world for `seed`. No process runs anything until tasks are spawned for it.
    pub fn new(seed: u64, config: &SimulationConfig) -> Self {
        let seeds = SimSeeds::derive(seed);
        let clock = SimClock::new(
            seeds.clock,
            config.replicas,
            config.clients,
            config.network.clock_offset_max_micros,
            config.network.clock_drift_max_ppm,
        );
        assert!(config.shards >= 1, "a replica has at least one shard");
        let processes = (0..config.replicas + config.clients)
            .map(|index| Process {
                inboxes: (0..if index < config.replicas { config.shards } else { 1 })
                    .map(|_| Inbox::new())
                    .collect(),
                outbox: Rc::new(RefCell::new(Vec::new())),
                up: true,
                stall_source: None,
                paused_until: None,
            })
            .collect();
        Self {
            seeds,
            executor: DetExecutor::new(seeds.executor),
            network: PacketSimulator::new(config.network.clone(), config.replicas, config.clients, seeds.network),
            clock: Rc::new(clock),
            processes,
            tick: 0,
            stats: SimulationStats::default(),
            deliveries: Vec::new(),
            entry_shard: SimRng::new(seeds.entry_shard),
            close_notices: false,
            closes_in_flight: Vec::new(),
            adversary: (config.adversary_probability > 0.0).then(|| Adversary::new(seed, config.adversary_probability)),
            adversary_delivered: vec![(0, 0); config.replicas + config.clients],
            adversary_delivered_total: 0,
        }
    }

    /// What the adversary sent so far; `None` if the run has none.
    pub fn adversary_stats(&self) -> Option<AdversaryStats> {
        self.adversary.as_ref().map(Adversary::stats)
    }

    /// The adversary's frames handed to any replica over the whole run.
    pub fn adversary_delivered_total(&self) -> u64 {
        self.adversary_delivered_total
    }

    /// The adversary's frames handed to `process` since it last started: (in range,
    /// out of range).
    pub fn adversary_delivered(&self, process: usize) -> (u64, u64) {
        self.adversary_delivered.get(process).copied().unwrap_or((0, 0))
    }

    /// The adversary's move this tick (it watched what replicas sent as it was
    /// delivered): maybe send a frame of its own to an up, unpaused replica (from its own process id, past every process).
    fn adversary_turn(&mut self) {
        let Some(adversary) = self.adversary.as_mut() else {
            return;
        };
        let replicas = self.network.replicas();
        let Some(forged) = adversary.forge() else { return };
        let up: Vec<usize> = (0..replicas)
            .filter(|&index| self.processes[index].up && self.processes[index].paused_until.is_none())
            .collect();
        let Some(target) = adversary.target(&up) else { return };
        let slot = &self.processes[target];
        let shard = adversary.entry_shard(slot.inboxes.len());
        // Process counts are far below u32::MAX.
        let outsider = ProcessId(self.processes.len() as u32);
        if slot.inboxes[shard].push(outsider, forged.frame) == InboxPush::Queued {
            self.adversary_delivered_total += 1;
            let delivered = &mut self.adversary_delivered[target];
            if forged.out_of_range {
                delivered.1 += 1;
            } else {
                delivered.0 += 1;
            }
        }
    }

    /// Whether a replica's crash closes its connections where its peers can see it
    /// (see the module doc). Off by default: only a world whose replica tasks take
    /// the notices (the cluster's shard pumps) may turn it on, since a notice nobody
    /// takes is a lost wakeup.
    pub fn notify_closed_connections(&mut self, on: bool) {
        self.close_notices = on;
    }

    /// Reseed the world's choice streams for a branch of the run (see
    /// [`crate::timeline`]): the network, the executor's task picks, the shard a
    /// packet enters on, and the adversary. Clocks keep their offsets and drifts.
    pub fn branch(&mut self, key: crate::timeline::BranchKey) {
        self.network.branch(key);
        self.executor.branch(key);
        self.entry_shard.branch(key);
        if let Some(adversary) = &mut self.adversary {
            adversary.branch(key);
        }
    }

    /// The seeds of this run.
    pub fn seeds(&self) -> &SimSeeds {
        &self.seeds
    }

    /// Ticks stepped so far.
    pub fn tick(&self) -> u64 {
        self.tick
    }

    /// Processes in the world.
    pub fn process_count(&self) -> usize {
        self.processes.len()
    }

    /// The bus of process `process`.
    pub fn bus(&self, process: ProcessId) -> SimBus {
        SimBus::new(
            process,
            self.executor.handle(),
            self.processes[process.index()].outbox.clone(),
            self.clock.clone(),
        )
    }

    /// The (first) inbox of process `process`.
    pub fn inbox(&self, process: ProcessId) -> Inbox {
        self.processes[process.index()].inboxes[0].clone()
    }

    /// Every inbox of process `process`, one per shard.
    pub fn inboxes(&self, process: ProcessId) -> Vec<Inbox> {
        self.processes[process.index()].inboxes.clone()
    }

    /// Spawn a task owned by `process` (dropped if it crashes).
    pub fn spawn(&self, process: ProcessId, task: impl Future<Output = ()> + 'static) {
        assert!(self.processes[process.index()].up, "spawning on crashed {process}");
        self.executor.spawn(Some(process), task);
    }

    /// Whether `process` is up.
    pub fn is_up(&self, process: ProcessId) -> bool {
        self.processes[process.index()].up
    }

    /// Let `process` stall: every tick added to `source` (by its storage, on a slow
    /// call) pauses it that much longer (see the module doc).
    pub fn set_stall_source(&mut self, process: ProcessId, source: Rc<std::cell::Cell<u64>>) {
        self.processes[process.index()].stall_source = Some(source);
    }

    /// Whether `process` is stalled now.
    pub fn is_paused(&self, process: ProcessId) -> bool {
        self.processes[process.index()].paused_until.is_some()
    }

    /// Crash `process`: drop its tasks mid-await, its unsent outbox and its inbox, and
    /// everything in flight to it; with `Ending::Process`, its peers see its
    /// connections close (see the module doc). Its storage (kept by the caller) survives.
    pub fn crash(&mut self, process: ProcessId, ending: Ending) {
        let slot = &mut self.processes[process.index()];
        assert!(slot.up, "crashing {process}, which is already down");
        slot.up = false;
        // A process that ends is blocked in nothing; a stall it had not served yet
        // ends with it (the executor ends its pause in `abort_owner`).
        slot.paused_until = None;
        if let Some(source) = &slot.stall_source {
            source.set(0);
        }
        slot.outbox.borrow_mut().clear();
        for inbox in &slot.inboxes {
            while inbox.try_recv().is_some() {}
        }
        self.executor.abort_owner(process);
        self.network.crash(process.index());
        self.stats.crashes += 1;
        let replicas = self.network.replicas();
        if self.close_notices && ending == Ending::Process && process.index() < replicas {
            // The reset travels like a packet, one mean delay, behind whatever the
            // process sent before it (a stream stays in order: a commit broadcast
            // overtaken by the reset would make the peer think it alive again).
            let config = self.network.config();
            let delay = config
                .one_way_delay_mean_ticks
                .max(config.one_way_delay_min_ticks)
                .max(1);
            let now = self.network.tick();
            for peer in 0..replicas {
                if peer != process.index() && self.processes[peer].up {
                    let due = (now + delay).max(self.network.in_flight_due_by(process.index(), peer));
                    self.closes_in_flight.push((due, peer, process.index()));
                }
            }
        }
    }

    /// Bring `process` back up with a fresh inbox and outbox; the caller spawns its tasks.
    pub fn restart(&mut self, process: ProcessId) {
        let slot = &mut self.processes[process.index()];
        assert!(!slot.up, "restarting {process}, which is up");
        slot.up = true;
        for inbox in &mut slot.inboxes {
            *inbox = Inbox::new();
        }
        self.adversary_delivered[process.index()] = (0, 0);
        slot.outbox = Rc::new(RefCell::new(Vec::new()));
        self.network.restart(process.index());
        self.stats.restarts += 1;
    }

    /// Run one tick (the four phases in the module docs).
    pub fn step(&mut self) -> Result<(), SimulationError> {
        // 1. Time.
        self.tick += 1;
        crate::log::set_tick(self.tick);
        for (index, slot) in self.processes.iter_mut().enumerate() {
            if slot.paused_until.is_some_and(|until| until <= self.tick) {
                slot.paused_until = None;
                self.executor.resume_owner(ProcessId(index as u32));
            }
        }
        self.executor.advance_time(self.tick * TICK_MICROS);
        self.run_to_quiescence()?;

        // 2. Deliveries due this tick.
        let mut deliveries = std::mem::take(&mut self.deliveries);
        self.network.deliver_due(&mut deliveries);
        for delivered in deliveries.drain(..) {
            let slot = &self.processes[delivered.to];
            if !slot.up {
                continue;
            }
            // Process indices fit u32: the world is built from a usize count far below it.
            let from = ProcessId(delivered.from as u32);
            let corrupted = delivered.corrupted;
            if let Some(adversary) = self.adversary.as_mut()
                && delivered.from < self.network.replicas()
                && !corrupted
            {
                adversary.watch(&delivered.payload.0);
            }
            let shard = if slot.inboxes.len() > 1 {
                // The count is a small usize, so the draw fits back.
                self.entry_shard.below(slot.inboxes.len() as u64) as usize
            } else {
                0
            };
            match slot.inboxes[shard].push(from, delivered.payload.0) {
                InboxPush::Queued => {
                    self.stats.frames_delivered += 1;
                    self.stats.frames_delivered_corrupted += u64::from(corrupted);
                }
                InboxPush::Full => self.stats.frames_dropped_inbox_full += 1,
            }
        }
        self.deliveries = deliveries;
        if self.adversary.is_some() {
            self.adversary_turn();
        }
        self.deliver_close_notices();
        self.run_to_quiescence()?;

        // Stalls the storage reported this tick begin now (see the module doc).
        for (index, slot) in self.processes.iter_mut().enumerate() {
            let Some(stall_ticks) = slot.stall_source.as_ref().map(|source| source.replace(0)) else {
                continue;
            };
            if stall_ticks > 0 && slot.up {
                let until = slot.paused_until.unwrap_or(self.tick) + stall_ticks;
                slot.paused_until = Some(until);
                self.executor.pause_owner(ProcessId(index as u32));
            }
        }

        // 3. Outboxes onto the wire, in process order (a paused process's wait).
        for (index, slot) in self.processes.iter().enumerate() {
            if slot.paused_until.is_some() {
                continue;
            }
            for (to, frame) in slot.outbox.borrow_mut().drain(..) {
                if to.index() >= self.processes.len() {
                    self.stats.frames_unroutable += 1;
                    continue;
                }
                self.network.submit(index, to.index(), WireFrame(frame));
            }
        }

        // 4. The network's own clock.
        self.network.advance();
        Ok(())
    }

    /// Hand every closed-connection notice due by now to its receiver, if it is up:
    /// after the tick's packets, so one due with the last packet the crashed process
    /// sent comes behind it.
    fn deliver_close_notices(&mut self) {
        if self.closes_in_flight.is_empty() {
            return;
        }
        // On the network's clock, as packets are (it advances at the end of a step).
        let now = self.network.tick();
        let processes = &self.processes;
        let network = &self.network;
        let stats = &mut self.stats;
        self.closes_in_flight.retain(|&(due, to, from)| {
            if due > now || network.path_cut(from, to) {
                // Not yet, or a partition holds it until it heals.
                return true;
            }
            if processes[to].up {
                // Indices fit u32 (see `step`).
                for inbox in &processes[to].inboxes {
                    inbox.push_closed(ProcessId(from as u32));
                }
                stats.close_notices_delivered += 1;
            }
            false
        });
    }

    fn run_to_quiescence(&mut self) -> Result<(), SimulationError> {
        self.executor.run_until_idle()?;
        for (index, slot) in self.processes.iter().enumerate() {
            for inbox in &slot.inboxes {
                let waiting = inbox.len() + inbox.closed_waiting();
                if slot.up && slot.paused_until.is_none() && waiting > 0 {
                    return Err(SimulationError::LostWakeup {
                        process: ProcessId(index as u32),
                        frames: waiting,
                        tick: self.tick,
                    });
                }
            }
        }
        Ok(())
    }

    /// The packet simulator (statistics, manual partitions, filters).
    pub fn network(&self) -> &PacketSimulator<WireFrame> {
        &self.network
    }

    /// The packet simulator, mutably (manual partitions, filters).
    pub fn network_mut(&mut self) -> &mut PacketSimulator<WireFrame> {
        &mut self.network
    }

    /// The executor (schedule hash, totals).
    pub fn executor(&self) -> &DetExecutor {
        &self.executor
    }

    /// The simulation's own counters.
    pub fn stats(&self) -> SimulationStats {
        self.stats
    }
}
