//! The harness's share of a fault schedule (see `crate::fault_schedule`): the crashes,
//! restarts, disk-error windows and rots it decided, kept as events, and, when a
//! schedule is replayed, those events handed back in place of the crash injector's
//! draws and the budget's turn.
//!
//! Replayed events still answer to the budget the run's own draws answer to: a crash
//! comes only while more than the larger quorum of replicas is up and whole, a disk
//! error window opens only on a replica that is up while more than that quorum is
//! whole, so an edited schedule (a shrink's) cannot take the cluster beyond the
//! faults it promises to survive. A replayed event that does not fit when its tick
//! comes is skipped, and so not recorded again.

use std::collections::BTreeMap;

use super::Harness;
use super::crash::{CrashAction, Moment, ReplicaLife};
use crate::fault_schedule::{DiskErrorsOn, Fault, FaultEvent, FaultSchedule, Replay};

/// The harness's events of a schedule being replayed.
#[derive(Clone, Debug)]
pub(super) struct HarnessReplay {
    /// Crashes and restarts.
    pub(super) crashes: Replay<Fault>,
    /// Disk-error window changes.
    pub(super) disk: Replay<DiskErrorsOn>,
    /// The window as the schedule last set it.
    pub(super) disk_on: Option<DiskErrorsOn>,
    /// Rots, by replica.
    pub(super) rot: Replay<usize>,
}

impl HarnessReplay {
    /// The harness's events of `events` (the others belong to other consumers).
    pub(super) fn new(events: &[FaultEvent]) -> Self {
        let mut crashes = Vec::new();
        let mut disk = Vec::new();
        let mut rot = Vec::new();
        for event in events {
            match &event.fault {
                Fault::Crash { .. } | Fault::Restart { .. } => crashes.push((event.tick, event.fault.clone())),
                Fault::DiskErrors { on } => disk.push((event.tick, *on)),
                Fault::Rot { replica } => rot.push((event.tick, *replica)),
                Fault::Partition(_) | Fault::Heal | Fault::Clog { .. } | Fault::Outage => {}
            }
        }
        Self {
            crashes: Replay::new(crashes),
            disk: Replay::new(disk),
            disk_on: None,
            rot: Replay::new(rot),
        }
    }

    /// The crashes and restarts scheduled for `tick` (events of earlier ticks that
    /// never came due, because crashes were off, are dropped).
    pub(super) fn crashes_at(&mut self, tick: u64) -> Vec<Fault> {
        let mut due = Vec::new();
        while let Some((at, fault)) = self.crashes.next_due(tick) {
            if at == tick {
                due.push(fault);
            }
        }
        due
    }

    /// The disk-error window as the schedule has it at `tick`.
    pub(super) fn disk_at(&mut self, tick: u64) -> DiskErrorsOn {
        while let Some((_, on)) = self.disk.next_due(tick) {
            self.disk_on = Some(on);
        }
        self.disk_on.unwrap_or(DiskErrorsOn::Nobody)
    }

    /// Whether the schedule rots `replica` as it restarts at `tick`.
    pub(super) fn rots(&mut self, tick: u64, replica: usize) -> bool {
        self.rot.discard_before(tick);
        self.rot.pop_if(tick, |&scheduled| scheduled == replica)
    }
}

impl Harness {
    /// The scheduled crashes and restarts that fit now, as the injector's actions with
    /// each crash's scheduled power cut: a restart of a replica that is down; a crash
    /// of one that is up while more than the larger quorum is up and whole (the
    /// injector's own budget), at most one a tick, as the injector makes them.
    pub(super) fn scheduled_crash_actions(
        &self,
        scheduled: Vec<Fault>,
        lives: &[ReplicaLife],
    ) -> Vec<(CrashAction, Option<bool>)> {
        let mut actions = Vec::new();
        let mut restarted = Vec::new();
        let mut crashed = false;
        for fault in scheduled {
            match fault {
                Fault::Restart { replica, incarnation } if lives.get(replica).is_some_and(|life| !life.up) => {
                    restarted.push(replica);
                    actions.push((CrashAction::Restart { replica, incarnation }, None));
                }
                Fault::Crash {
                    replica,
                    power_loss,
                    moment,
                } if !crashed
                    && !restarted.contains(&replica)
                    && lives.get(replica).is_some_and(|life| life.up)
                    && lives.iter().filter(|life| life.up && life.rejoined).count() > self.quorum_live_min =>
                {
                    crashed = true;
                    let moment = moment.and_then(|name| Moment::ALL.into_iter().find(|m| m.name() == name));
                    actions.push((CrashAction::Crash { replica, moment }, Some(power_loss)));
                }
                skipped => tracing::debug!(?skipped, "scheduled fault does not fit now; skipped"),
            }
        }
        actions
    }

    /// Replay `schedule` in place of the crash, power-loss, disk-error-window, rot,
    /// partition and clog draws from now on (outages are the run's: see
    /// `fuzz::outage`). Call before the first step.
    pub fn replay_faults(&mut self, schedule: &FaultSchedule) {
        self.replay = Some(HarnessReplay::new(&schedule.events));
        let (replicas, clients) = (self.replica_count, self.clients.len());
        let network = schedule
            .events
            .iter()
            .filter_map(|event| Some((event.tick, event.fault.to_network(replicas, clients)?)))
            .collect();
        self.simulation.network_mut().replay_faults(network);
    }

    /// Keep every fault event made from now on (the default), or only count them: a
    /// run keeps them only when something reads them (`--record-faults`, `--trace`, a
    /// shrink's candidates), so a long run's memory does not grow with its faults.
    pub fn keep_fault_events(&mut self, keep: bool) {
        self.keep_fault_events = keep;
        self.simulation.network_mut().keep_faults(keep);
    }

    /// Note a fault the harness made.
    pub(super) fn note_fault(&mut self, event: FaultEvent) {
        *self.faults_counted.entry(event.fault.kind()).or_default() += 1;
        if self.keep_fault_events {
            self.faults_made.push(event);
        }
    }

    /// How many faults of each kind the harness and the network made so far, kept or
    /// not (a run's outages are added by the run).
    pub fn faults_counted(&self) -> BTreeMap<&'static str, u64> {
        let mut counts = self.faults_counted.clone();
        let network = self.simulation.network().faults_counted();
        for (kind, count) in [
            ("partition", network.partitions),
            ("heal", network.heals),
            ("clog", network.clogs),
        ] {
            if count > 0 {
                *counts.entry(kind).or_default() += count;
            }
        }
        counts
    }

    /// The faults the harness and the network made so far, as a schedule (a run's
    /// outages are added by the run); empty unless they are kept.
    pub fn faults_made(&self) -> Vec<FaultEvent> {
        let replicas = self.replica_count;
        let network = self
            .simulation
            .network()
            .faults_made()
            .iter()
            .map(|(tick, fault)| FaultEvent {
                tick: *tick,
                fault: Fault::from_network(fault, replicas),
            });
        self.faults_made.iter().cloned().chain(network).collect()
    }
}
