//! The figures of a consensus run, gathered once at its end: one type prints every
//! output line after the run's phases and fills the run's report (which the campaign
//! copies into its run record), so a new figure is added in one place.
//!
//! Gathering only reads the harness and the workload; the lines are a pure function of
//! the run, so two runs of one command print them byte for byte.

use std::io::{self, Write};

use cluster::node::NodeStats;

use crate::adversary::AdversaryStats;

use super::super::liveness::{LIVENESS_TICKS_MAX, LivenessOutcome};
use super::super::outage::OutageStats;
use super::super::timeliness::TimelinessFigures;
use super::super::{RunReport, packets_line};
use super::oracle::Compared;
use super::setup::World;
use crate::executor::Fnv1a64;
use crate::fault_schedule::{Fault, FaultEvent, FaultSchedule, summary_line};
use crate::harness::catch_up::CatchUpCounters;
use crate::harness::client::ClientStats;
use crate::harness::crash::Moment;
use crate::harness::failover::FailoverFigures;
use crate::harness::{HarnessStats, StorageFaultCounts, StorageModel};
use crate::network::NetworkStats;
use crate::workload::{LinearizabilityReport, WorkloadReport};

use super::super::FuzzArgs;

/// The clients' counters, summed over every client.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ClientTotals {
    requests: u64,
    replies: u64,
    resends: u64,
    redirects: u64,
    refusals: u64,
    not_committed: u64,
    replies_stale: u64,
    binds: u64,
    binds_refused: u64,
    unbound: u64,
    denied: u64,
    /// FNV-1a-64 over each client's reply hash, in client order.
    reply_hash: u64,
}

impl ClientTotals {
    fn of(clients: &[ClientStats]) -> Self {
        let sum = |field: fn(&ClientStats) -> u64| clients.iter().map(field).sum::<u64>();
        let mut replies = Fnv1a64::default();
        for client in clients {
            replies.write(&client.reply_hash.to_le_bytes());
        }
        Self {
            requests: sum(|c| c.requests),
            replies: sum(|c| c.replies),
            resends: sum(|c| c.resends),
            redirects: sum(|c| c.redirects),
            refusals: sum(|c| c.refusals),
            not_committed: sum(|c| c.not_committed),
            replies_stale: sum(|c| c.replies_stale),
            binds: sum(|c| c.binds),
            binds_refused: sum(|c| c.binds_refused),
            unbound: sum(|c| c.unbound),
            denied: sum(|c| c.denied),
            reply_hash: replies.finish(),
        }
    }
}

/// Everything a consensus run prints after its banner (but the coverage and verdict
/// lines, which every plane shares) and records in its report.
pub(super) struct Summary {
    /// How the liveness phase went, if it ran and passed.
    pub liveness: Option<LivenessOutcome>,
    /// How quickly a healed drain elected and caught up, if it was healed.
    pub drain_timeliness: Option<TimelinessFigures>,
    /// The tick the fault phase ended at.
    pub ran: u64,
    /// The tick the run ended at (after the liveness phase and the drain).
    pub ticks: u64,
    /// Requests the workload handed out.
    pub requests_handed_out: u64,
    /// Every client's counters, summed.
    pub clients: ClientTotals,
    /// The harness's crash and restart counters.
    pub harness: HarnessStats,
    /// Replicas down at the end.
    pub still_down: usize,
    /// With `--crash-moments`, the crashes at each protocol moment.
    pub moments: Option<[u64; 3]>,
    /// The network's counters.
    pub packets: NetworkStats,
    /// The faults the run injected, outages included: every event when the run kept
    /// them (`FuzzArgs::keeps_fault_schedule`), else none; handed to the report.
    pub faults: FaultSchedule,
    /// The `fault schedule:` line: how many of each kind, kept or not.
    pub faults_line: String,
    /// What the outages did, when outages were on.
    pub outages: Option<OutageStats>,
    /// What the disks suffered (simulated storage only).
    pub storage: Option<StorageFaultCounts>,
    /// Catch-up counters: repairs, checkpoints, transfers.
    pub catch_up: CatchUpCounters,
    /// Checkpoint states compared across replicas.
    pub checkpoint_states_compared: u64,
    /// Primary losses, their failover times, and spurious view changes.
    pub failover: FailoverFigures,
    /// The most entries and frame bytes a journal held.
    pub journal_peak: (usize, u64),
    /// The live nodes' counters (this incarnation).
    pub nodes: NodeStats,
    /// What the adversary sent and how many of its frames reached a replica; `None`
    /// without one.
    pub adversary: Option<(AdversaryStats, u64)>,
    /// Branch points of the run's timeline taken, and how many it holds (`--branch`).
    pub branches: (usize, usize),
    /// Ops committed, over every group's canonical chain.
    pub commits: u64,
    /// Committed ops checked against the canonical chains, over every replica.
    pub ops_compared: u64,
    /// Ops committed in the metadata group.
    pub metadata_commits: u64,
    /// Groups with a state checker.
    pub groups_checked: usize,
    /// What the oracle compared (`None` when it found a disagreement).
    pub oracle: Option<Compared>,
    /// The workload's counters.
    pub workload: WorkloadReport,
    /// The shared objects' requests by kind, and their linearizability check.
    pub contended: Option<(Vec<String>, LinearizabilityReport)>,
    /// One line per replica: its groups' status.
    pub status_lines: Vec<String>,
    /// The executor's schedule hash at the end.
    pub schedule_hash: u64,
    /// Executor polls made.
    pub polls: u64,
    /// Replica-group ticks (`Harness::group_ticks`).
    pub group_ticks: u64,
}

impl Summary {
    /// Read the run's figures from the world at its end.
    pub(super) fn gather(
        args: &FuzzArgs,
        world: &World,
        ran: u64,
        liveness: Option<LivenessOutcome>,
        drain_timeliness: Option<TimelinessFigures>,
        oracle: Option<Compared>,
        linearizability: Option<LinearizabilityReport>,
    ) -> Self {
        let harness = &world.harness;
        let workload = world.workload.borrow();
        let simulation = harness.simulation();
        let clients = harness.client_stats();
        let mut nodes = NodeStats::default();
        for (_, node) in harness.live_nodes() {
            nodes += node.stats();
        }
        let adversary = simulation
            .adversary_stats()
            .map(|stats| (stats, simulation.adversary_delivered_total()));
        let mut counted = harness.faults_counted();
        if !world.outages.made().is_empty() {
            *counted.entry(Fault::Outage.kind()).or_default() += world.outages.made().len() as u64;
        }
        let faults_line = summary_line(&counted);
        let faults = if args.keeps_fault_schedule() {
            FaultSchedule::new(
                harness
                    .faults_made()
                    .into_iter()
                    .chain(world.outages.made().iter().map(|&tick| FaultEvent {
                        tick,
                        fault: Fault::Outage,
                    }))
                    .collect(),
            )
        } else {
            FaultSchedule::default()
        };
        let contended = linearizability.map(|report| {
            let requests = workload
                .contended()
                .map(|contended| {
                    contended
                        .requests()
                        .iter()
                        .map(|(kind, count)| format!("{}={count}", kind.name()))
                        .collect()
                })
                .unwrap_or_default();
            (requests, report)
        });
        Self {
            liveness,
            drain_timeliness,
            ran,
            ticks: simulation.tick(),
            requests_handed_out: workload.handed_out(),
            clients: ClientTotals::of(&clients),
            harness: harness.stats(),
            still_down: simulation.process_count() - clients.len() - harness.live_replicas().len(),
            moments: args.run.crash_moments.then(|| harness.stats().moment_crashes),
            packets: simulation.network().stats().clone(),
            faults,
            faults_line,
            outages: world.outages.enabled().then_some(world.outages.stats),
            storage: (args.run.storage == StorageModel::Sim).then(|| harness.storage_fault_counts()),
            catch_up: harness.catch_up(),
            checkpoint_states_compared: harness.checkpoints_compared(),
            failover: harness.failover(),
            journal_peak: harness.journal_peak(),
            nodes,
            adversary,
            branches: (harness.branches_taken(), harness.branches().len()),
            commits: harness.commits_total(),
            ops_compared: harness.ops_compared_total(),
            metadata_commits: harness.checker().commits(),
            groups_checked: harness.groups_checked(),
            oracle,
            workload: workload.report(),
            contended,
            status_lines: harness.status_lines(),
            schedule_hash: simulation.executor().schedule_hash(),
            polls: simulation.executor().totals().0,
            group_ticks: harness.group_ticks(),
        }
    }

    /// The linearizability check's report, when the run had shared objects.
    pub(super) fn linearizability(&self) -> Option<&LinearizabilityReport> {
        self.contended.as_ref().map(|(_, report)| report)
    }

    /// The figures a campaign records, into the run's report.
    pub(super) fn record(&mut self, report: &mut RunReport) {
        report.ticks = self.ticks;
        report.requests = self.requests_handed_out;
        report.faults = std::mem::take(&mut self.faults);
        report.polls = self.polls;
        report.group_ticks = self.group_ticks;
        report.schedule_hash = self.schedule_hash;
        report.checkpoints = self.catch_up.checkpoints;
        report.transfers_installed = self.catch_up.transfers_installed;
        report.failover = self.failover.clone();
        report.adversary = self
            .adversary
            .map_or((0, 0), |(stats, delivered)| (stats.total(), delivered));
        report.commits = self.commits;
        report.ops_compared = self.ops_compared;
    }

    /// Print the lines, in their fixed order.
    pub(super) fn print(&self, out: &mut dyn Write) -> io::Result<()> {
        if let Some(outcome) = &self.liveness {
            writeln!(
                out,
                "liveness: core {:?} settled {} groups and answered every request in {} ticks (bound {LIVENESS_TICKS_MAX})",
                outcome.core, outcome.groups, outcome.ticks,
            )?;
        }
        for (phase, figures) in [
            ("liveness", self.liveness.as_ref().map(|outcome| outcome.timeliness)),
            ("drain", self.drain_timeliness),
        ] {
            if let Some(f) = figures {
                writeln!(
                    out,
                    "timeliness ({phase}): elections={} election_ticks_max={} catch_ups={} catch_up_ticks_max={} \
                     ops_behind_max={} slack_ticks_min={} loss_ppm_max={}",
                    f.elections,
                    f.election_ticks_max,
                    f.catch_ups,
                    f.catch_up_ticks_max,
                    f.ops_behind_max,
                    f.slack_ticks_min,
                    f.loss_ppm_max
                )?;
            }
        }
        let c = &self.clients;
        let h = &self.harness;
        writeln!(
            out,
            "ran {} ticks (+{} drain); requests={} replies={} resends={} redirects={} not_accepted={} not_committed={} \
             stale_replies={}; crashes={} power_losses={} restarts={} still down: {}",
            self.ran,
            self.ticks - self.ran,
            c.requests,
            c.replies,
            c.resends,
            c.redirects,
            c.refusals,
            c.not_committed,
            c.replies_stale,
            h.crashes,
            h.power_losses,
            h.restarts,
            self.still_down,
        )?;
        if let Some(counts) = self.moments {
            let named: Vec<String> = Moment::ALL
                .iter()
                .zip(counts)
                .map(|(moment, count)| format!("{}={count}", moment.name()))
                .collect();
            writeln!(out, "crash moments: {}", named.join(" "))?;
        }
        writeln!(out, "{}", packets_line(&self.packets))?;
        writeln!(out, "{}", self.faults_line)?;
        if let Some(outages) = &self.outages {
            writeln!(out, "{outages}")?;
        }
        if let Some(storage) = &self.storage {
            writeln!(out, "{storage}")?;
        }
        let (peak_entries, peak_bytes) = self.journal_peak;
        writeln!(
            out,
            "{} checkpoint_states_compared={} journal_peak_entries={peak_entries} journal_peak_bytes={peak_bytes}",
            self.catch_up, self.checkpoint_states_compared
        )?;
        writeln!(out, "failover: {}", self.failover.line())?;
        self.print_nodes(out)?;
        if let Some((sent, delivered)) = &self.adversary {
            writeln!(
                out,
                "adversary: sent={} forged_votes={} forged_numbers={} forged_prepares={} replays={} \
                 foreign_cluster={} batches={} reached_a_replica={delivered} refused={delivered} \
                 refused_by_live_nodes_this_incarnation={} (every frame that reached a replica was refused: \
                 checked each tick)",
                sent.total(),
                sent.forged_votes,
                sent.forged_numbers,
                sent.forged_prepares,
                sent.replays,
                sent.foreign_cluster,
                sent.batches,
                self.nodes.shard.frames_refused_not_from_replica
            )?;
        }
        let (taken, held) = self.branches;
        if held > 0 {
            writeln!(
                out,
                "timeline: {taken} of {held} branch points taken{}",
                if taken < held {
                    " (the run ended before the rest's ticks)"
                } else {
                    ""
                }
            )?;
        }
        let mut compared = format!(
            "compared: commits={} ops_compared={} metadata_commits={} groups_checked={}",
            self.commits, self.ops_compared, self.metadata_commits, self.groups_checked
        );
        for (name, value) in self.oracle.iter().flatten() {
            compared.push_str(&format!(" {name}={value}"));
        }
        writeln!(out, "{compared}")?;
        writeln!(out, "{}", self.workload)?;
        if let Some((requests, linearizability)) = &self.contended {
            writeln!(out, "contended: {}", requests.join(" "))?;
            writeln!(out, "{linearizability}")?;
        }
        let outcomes: Vec<String> = self
            .workload
            .outcomes
            .iter()
            .map(|((action, outcome), count)| format!("{action}/{outcome:?}={count}"))
            .collect();
        writeln!(out, "outcomes: {}", outcomes.join(" "))?;
        for line in &self.status_lines {
            writeln!(out, "{line}")?;
        }
        writeln!(
            out,
            "schedule_hash={:#018x} reply_hash={:#018x} polls={}",
            self.schedule_hash, self.clients.reply_hash, self.polls
        )
    }

    /// The `nodes:` and `sessions:` lines: the live nodes' counters beside the
    /// clients' view of the same sessions.
    fn print_nodes(&self, out: &mut dyn Write) -> io::Result<()> {
        let shard = &self.nodes.shard;
        writeln!(
            out,
            "nodes (live, this incarnation): router_hops={} unknown_group_frames={} rejected_headers={} groups_opened={} \
             groups_closed={} forwards_dropped_full={}",
            shard.frames_routed,
            shard.frames_unknown_group,
            shard.frames_rejected,
            shard.groups_opened,
            shard.groups_closed,
            self.nodes.forwards_dropped_full
        )?;
        let c = &self.clients;
        writeln!(
            out,
            "sessions: binds_sent={} binds_refused={} unbound_refusals={} denied={} (nodes, this incarnation: binds={} \
             binds_refused={} unbound={} denied={} parked={} parked_expired={} parked_full={})",
            c.binds,
            c.binds_refused,
            c.unbound,
            c.denied,
            shard.binds,
            shard.binds_refused,
            shard.requests_unbound,
            shard.requests_denied,
            shard.requests_parked,
            shard.requests_parked_expired,
            shard.requests_parked_full
        )
    }
}
