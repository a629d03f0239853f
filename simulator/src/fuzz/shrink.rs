//! `--shrink`: from a failing run to a smaller one that fails the same way.
//!
//! A candidate is the failing command with one thing taken away; it is kept when it
//! still fails with the same failure signature (`crate::signature`: the check and
//! the words of its message, numbers aside). The passes, in order, each on the best
//! run so far:
//!
//! 0. the timeline's branch points (`--branch`), the latest first: each dropped
//!    point brings the run closer to its seed's own;
//! 1. fault classes off one at a time: outages, crashes, power cuts, partitions,
//!    clogs, disk-error windows, rot (from the schedule), then the seeded per-packet
//!    and per-call faults (packet loss, replay, corruption, clock skew, slow disks)
//!    and `--buggify` (by their flags);
//! 2. a smaller world: one client, one shard, fewer replicas (events naming a process
//!    the world no longer has are left out);
//! 3. fewer fault events: delta debugging (Zeller and Hildebrandt's ddmin, removing
//!    ever smaller chunks) over the recorded schedule;
//! 4. ticks: stop at the failing tick (a failure during the fault phase), else try a
//!    quarter, a half and three quarters of the ticks;
//! 5. fewer requests (`--requests-max`, halved while it still fails, then bisected).
//!
//! Cutting ticks last leaves the earlier passes the whole run to fail in: a failure
//! that moves a little later when a fault goes is still the same failure.
//!
//! Every candidate replays a fault schedule (`--faults-from`), so the final repro is
//! one command plus one schedule file. The search is a pure function of the command
//! and the build, bounded by [`ShrinkBounds::runs`] candidate runs; the wall-clock
//! bound may stop it sooner, which the output says (only then can two shrinks differ).
//!
//! Does not shrink: the seed (another seed is another run, not a smaller one), the
//! shape a swarm profile draws (it comes from the seed; such candidates change
//! nothing and are not kept), or what the workload draws.

use std::io::{self, Write};

use super::{FuzzArgs, RunReport, Verdict};
use crate::fault_schedule::{Fault, FaultClass, FaultEvent, FaultSchedule};
use crate::signature::signature;

/// Candidate runs the passes after delta debugging keep for themselves: the failing
/// tick (one run, or three fractions) and the request budget (about a dozen). Delta
/// debugging alone can spend any budget on a long schedule; without this reserve a run
/// whose schedule is long would never have its ticks cut.
pub const SHRINK_TAIL_RESERVE_RUNS: u64 = 24;

/// The share of the wall-clock bound delta debugging may use, for the same reason: a
/// long schedule whose candidates take half a second each (eight contended clients,
/// thousands of clogs) used the whole minute and kept its ticks.
pub const SHRINK_DDMIN_TIME_SHARE_MAX: f64 = 0.8;

/// The bounds of one shrink.
#[derive(Clone, Copy, Debug)]
pub struct ShrinkBounds {
    /// Candidate runs at most (the deterministic bound).
    pub runs: u64,
}

/// How big a run is, in the units a shrink reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunSize {
    /// Ticks simulated (drain included).
    pub ticks: u64,
    /// `--ticks`: ticks of workload and faults.
    pub fault_ticks: u64,
    /// Fault events injected.
    pub events: usize,
    /// Replicas.
    pub replicas: usize,
    /// Clients.
    pub clients: usize,
    /// Shards per replica.
    pub shards: usize,
    /// Requests handed out.
    pub requests: u64,
    /// Of the crashes, those that cut the power.
    pub power_losses: usize,
    /// Branch points of the run's timeline (`--branch`).
    pub branches: usize,
}

impl RunSize {
    fn of(args: &FuzzArgs, report: &RunReport) -> Self {
        Self {
            ticks: report.ticks,
            fault_ticks: args.ticks,
            events: report.faults.events.len(),
            replicas: report.shape.0,
            clients: report.shape.1,
            shards: report.shape.2,
            requests: report.requests,
            power_losses: report
                .faults
                .events
                .iter()
                .filter(|event| event.fault.kind() == "power-loss")
                .count(),
            branches: args.branch.len(),
        }
    }
}

/// What a shrink found.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The failure signature every kept candidate shares.
    pub signature: String,
    /// The failing run's size.
    pub original: RunSize,
    /// The smallest failing run's size.
    pub shrunk: RunSize,
    /// The smallest failing run's arguments; its schedule is in `schedule`.
    pub args: FuzzArgs,
    /// The smallest failing run's fault schedule (write it, then point `--faults-from`
    /// at it).
    pub schedule: FaultSchedule,
    /// The smallest failing run's verdict text.
    pub failure: String,
    /// The kept steps, in order, one line each.
    pub steps: Vec<String>,
    /// Candidate runs made.
    pub runs: u64,
    /// Why the search ended early, if it did (`None`: every pass ran to the end).
    pub stopped_early: Option<&'static str>,
}

impl Shrunk {
    /// Ratio of the original's fault ticks to the shrunk run's.
    pub fn ticks_ratio(&self) -> f64 {
        self.original.fault_ticks as f64 / self.shrunk.fault_ticks.max(1) as f64
    }

    /// Ratio of the original's fault events to the shrunk run's (`events + 1` each,
    /// so a schedule shrunk to nothing counts as a finite ratio).
    pub fn events_ratio(&self) -> f64 {
        (self.original.events + 1) as f64 / (self.shrunk.events + 1) as f64
    }

    /// The one-line summary: how much smaller, unit by unit.
    pub fn summary(&self) -> String {
        let (a, b) = (&self.original, &self.shrunk);
        format!(
            "shrunk after {} candidate runs{}: ticks {} -> {} ({:.1}x), fault events {} -> {} ({:.1}x), replicas {} -> {}, \
             clients {} -> {}, shards {} -> {}, requests {} -> {}",
            self.runs,
            match self.stopped_early {
                Some(why) => format!(" (stopped early: {why})"),
                None => String::new(),
            },
            a.fault_ticks,
            b.fault_ticks,
            self.ticks_ratio(),
            a.events,
            b.events,
            self.events_ratio(),
            a.replicas,
            b.replicas,
            a.clients,
            b.clients,
            a.shards,
            b.shards,
            a.requests,
            b.requests
        )
    }
}

/// One candidate's outcome: its failure signature (if it failed) and report.
struct Attempt {
    signature: Option<String>,
    failure: String,
    report: Option<RunReport>,
}

/// Run `args` with `seed`, its output thrown away, a panic counted as a failure
/// (signed as the campaign signs one).
fn attempt(args: &FuzzArgs, seed: u64) -> Attempt {
    let mut sink = io::sink();
    let mut args = args.clone();
    // The shrink reads the events each run made.
    args.keep_fault_schedule = true;
    match crate::panic_report::catch_run(|| super::run(&args, seed, &mut sink)) {
        Ok(Ok(report)) => match &report.verdict {
            Verdict::Failed(reason) => Attempt {
                signature: Some(signature(reason)),
                failure: reason.clone(),
                report: Some(report),
            },
            _ => Attempt {
                signature: None,
                failure: String::new(),
                report: Some(report),
            },
        },
        Ok(Err(_)) => Attempt {
            signature: None,
            failure: String::new(),
            report: None,
        },
        Err(payload) => {
            let (signature, failure) = crate::panic_report::describe_panic(payload.as_ref());
            Attempt {
                signature: Some(signature),
                failure,
                report: None,
            }
        }
    }
}

/// The search's state: the best failing run so far and the budget.
struct Search<'a> {
    seed: u64,
    signature: String,
    best: FuzzArgs,
    best_report: RunReport,
    best_failure: String,
    steps: Vec<String>,
    runs: u64,
    bounds: ShrinkBounds,
    time_used: &'a mut dyn FnMut() -> f64,
    stopped_early: Option<&'static str>,
    /// Delta debugging stopped at its share of the runs (the tail passes still ran).
    ddmin_cut_short: bool,
    out: &'a mut dyn Write,
}

impl Search<'_> {
    /// Whether the budget allows another candidate (and notes why not).
    fn may_run(&mut self) -> bool {
        if self.stopped_early.is_some() {
            return false;
        }
        if self.runs >= self.bounds.runs {
            self.stopped_early = Some("--shrink-runs reached");
        } else if (self.time_used)() >= 1.0 {
            self.stopped_early = Some("--shrink-seconds reached");
        }
        self.stopped_early.is_none()
    }

    /// Try `candidate`; keep it if it fails the same way and is smaller in some unit
    /// and larger in none. Returns whether it was kept.
    fn try_candidate(&mut self, what: &str, mut candidate: FuzzArgs) -> io::Result<bool> {
        if !self.may_run() {
            return Ok(false);
        }
        self.runs += 1;
        let outcome = attempt(&candidate, self.seed);
        let (Some(signature), Some(report)) = (outcome.signature, outcome.report) else {
            return Ok(false);
        };
        if signature != self.signature {
            return Ok(false);
        }
        let before = RunSize::of(&self.best, &self.best_report);
        let after = RunSize::of(&candidate, &report);
        let smaller = after.fault_ticks < before.fault_ticks
            || after.events < before.events
            || after.replicas < before.replicas
            || after.clients < before.clients
            || after.shards < before.shards
            || after.requests < before.requests
            || after.power_losses < before.power_losses
            || after.branches < before.branches
            || candidate_drops_a_flag(&self.best, &candidate);
        let larger = after.fault_ticks > before.fault_ticks
            || after.branches > before.branches
            || after.replicas > before.replicas
            || after.clients > before.clients
            || after.shards > before.shards;
        if !smaller || larger {
            return Ok(false);
        }
        // The run it made, not the one asked for: events that did not fit are gone.
        candidate.schedule = Some(report.faults.clone());
        let line = format!(
            "shrink step {}: {what}: still fails (ticks {}, fault events {}, replicas {}, clients {}, shards {}, requests {})",
            self.steps.len() + 1,
            after.fault_ticks,
            after.events,
            after.replicas,
            after.clients,
            after.shards,
            after.requests
        );
        writeln!(self.out, "{line}")?;
        self.steps.push(line);
        self.best = candidate;
        self.best_report = report;
        self.best_failure = outcome.failure;
        Ok(true)
    }

    fn schedule(&self) -> FaultSchedule {
        self.best.schedule.clone().unwrap_or_default()
    }

    /// Pass 0: the timeline's branch points, the latest first (a run with fewer is
    /// closer to its seed's own run; the fault schedule it replays keeps the faults,
    /// while the workload, the packet coins and the scheduler follow the remaining
    /// points).
    fn branches(&mut self) -> io::Result<()> {
        for index in (0..self.best.branch.len()).rev() {
            let mut candidate = self.best.clone();
            let dropped = candidate.branch.points()[index];
            candidate.branch = candidate.branch.without(index);
            self.try_candidate(&format!("branch point {dropped} dropped"), candidate)?;
        }
        Ok(())
    }

    /// Pass 4: the failing tick, or fractions of the ticks.
    fn ticks(&mut self) -> io::Result<()> {
        let ticks = self.best.ticks;
        if let (Some(enough), Some(failed_at)) = (self.best_report.failure_fault_ticks, self.best_report.failure_tick)
            && enough < ticks
        {
            let mut candidate = self.best.clone();
            candidate.ticks = enough;
            // The network's events are stamped one tick on (see `fault_schedule`).
            candidate.schedule = Some(self.schedule().until(failed_at + 1));
            if self.try_candidate(&format!("stop at the failing tick (--ticks {enough})"), candidate)? {
                return Ok(());
            }
        }
        for quarters in 1..4 {
            let cut = ticks * quarters / 4;
            if cut == 0 || cut >= self.best.ticks {
                continue;
            }
            let mut candidate = self.best.clone();
            candidate.ticks = cut;
            if self.try_candidate(&format!("--ticks {cut}"), candidate)? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Pass 1: fault classes off, one at a time.
    fn classes(&mut self, resolved: &crate::profile::ResolvedProfile) -> io::Result<()> {
        for class in FaultClass::ALL {
            let schedule = self.schedule();
            if !schedule.has(class) {
                continue;
            }
            let mut candidate = self.best.clone();
            candidate.schedule = Some(schedule.without(class));
            self.try_candidate(&format!("fault class `{}` off", class.name()), candidate)?;
        }
        let network = &resolved.network;
        type Switch = (&'static str, bool, fn(&mut FuzzArgs));
        let switches: [Switch; 6] = [
            (
                "packet loss off (--packet-loss 0)",
                network.packet_loss_probability > 0.0,
                |args| args.run.network.packet_loss = Some(0.0),
            ),
            (
                "packet replay off (--packet-replay 0)",
                network.packet_replay_probability > 0.0,
                |args| args.run.network.packet_replay = Some(0.0),
            ),
            (
                "packet corruption off (--packet-corruption 0)",
                network.packet_corruption_probability > 0.0,
                |args| args.run.network.packet_corruption = Some(0.0),
            ),
            (
                "clock skew off (--clock-offset-max 0 --clock-drift-max 0)",
                network.clock_offset_max_micros > 0 || network.clock_drift_max_ppm > 0,
                |args| {
                    args.run.network.clock_offset_max = Some(0);
                    args.run.network.clock_drift_max = Some(0);
                },
            ),
            (
                "slow disks off (--disk-slow-prob 0)",
                self.best
                    .run
                    .disk_slow_prob
                    .unwrap_or(resolved.storage.disk_slow_probability)
                    > 0.0,
                |args| args.run.disk_slow_prob = Some(0.0),
            ),
            ("--buggify off", self.best.run.buggify, |args| args.run.buggify = false),
        ];
        for (what, on, switch_off) in switches {
            if on {
                let mut candidate = self.best.clone();
                switch_off(&mut candidate);
                self.try_candidate(what, candidate)?;
            }
        }
        Ok(())
    }

    /// Pass 3: ddmin over the schedule's events: remove chunks (their complements
    /// kept, with the heal of every partition they keep, see [`without_chunk`]),
    /// halving the chunk size whenever a whole sweep removed nothing. A sweep
    /// goes on after a removal from where it was (the chunks before it were just
    /// found to be needed), a common economy on Zeller's algorithm.
    fn events(&mut self) -> io::Result<()> {
        let runs_max = self.bounds.runs.saturating_sub(SHRINK_TAIL_RESERVE_RUNS);
        let mut size = self.schedule().events.len().div_ceil(2);
        while size > 0 {
            let mut start = 0;
            let mut removed_any = false;
            loop {
                let events = self.schedule().events;
                if self.runs >= runs_max || (self.time_used)() >= SHRINK_DDMIN_TIME_SHARE_MAX {
                    self.ddmin_cut_short = true;
                    return Ok(());
                }
                if start >= events.len() || self.stopped_early.is_some() {
                    break;
                }
                let end = (start + size).min(events.len());
                let kept = without_chunk(&events, start..end);
                if kept.len() == events.len() {
                    // The chunk held only heals of partitions that stay: nothing to try.
                    start = end;
                    continue;
                }
                let mut candidate = self.best.clone();
                candidate.schedule = Some(FaultSchedule::new(kept));
                let what = format!("without fault events {}..{} of {}", start + 1, end, events.len());
                if self.try_candidate(&what, candidate)? {
                    removed_any = true;
                } else {
                    start = end;
                }
            }
            if self.stopped_early.is_some() {
                return Ok(());
            }
            if !removed_any {
                if size == 1 {
                    return Ok(());
                }
                size = size.div_ceil(2);
            }
        }
        Ok(())
    }

    /// Pass 2: one client, one shard, fewer replicas.
    fn world(&mut self) -> io::Result<()> {
        let (replicas, clients, shards) = self.best_report.shape;
        if clients > 1 {
            for fewer in [1, clients / 2].into_iter().filter(|&c| c >= 1 && c < clients) {
                let mut candidate = self.best.clone();
                candidate.run.clients = fewer as u32;
                candidate.schedule = Some(self.schedule().within(replicas, fewer));
                if self.try_candidate(&format!("--clients {fewer}"), candidate)? {
                    break;
                }
            }
        }
        if shards > 1 {
            let mut candidate = self.best.clone();
            candidate.shards = 1;
            self.try_candidate("--shards 1", candidate)?;
        }
        let clients = self.best_report.shape.1;
        for fewer in 1..replicas {
            let mut candidate = self.best.clone();
            candidate.run.replicas = fewer as u32;
            candidate.schedule = Some(self.schedule().within(fewer, clients));
            if self.try_candidate(&format!("--replicas {fewer}"), candidate)? {
                break;
            }
        }
        Ok(())
    }

    /// Pass 5: fewer requests, halving while it fails, then a few bisection steps.
    fn requests(&mut self) -> io::Result<()> {
        /// Bisection steps after the halving: enough to land within an eighth of the
        /// last gap, few enough that this pass stays cheap.
        const REQUEST_BISECTION_STEPS_MAX: u32 = 3;
        let mut failing = self.best_report.requests;
        let mut passing = 0;
        while failing > 1 {
            let half = failing / 2;
            let mut candidate = self.best.clone();
            candidate.requests_max = Some(half);
            if !self.try_candidate(&format!("--requests-max {half}"), candidate)? {
                passing = half;
                break;
            }
            failing = self.best_report.requests.min(half);
        }
        for _ in 0..REQUEST_BISECTION_STEPS_MAX {
            let middle = passing + (failing - passing) / 2;
            if middle <= passing || middle >= failing {
                break;
            }
            let mut candidate = self.best.clone();
            candidate.requests_max = Some(middle);
            if self.try_candidate(&format!("--requests-max {middle}"), candidate)? {
                failing = self.best_report.requests.min(middle);
            } else {
                passing = middle;
            }
        }
        Ok(())
    }
}

/// Whether `candidate` turns off a seeded fault flag `best` has on (a smaller run in
/// kind, though no counted unit moves).
fn candidate_drops_a_flag(best: &FuzzArgs, candidate: &FuzzArgs) -> bool {
    let zeroed = |before: Option<f64>, after: Option<f64>| after == Some(0.0) && before != Some(0.0);
    zeroed(best.run.network.packet_loss, candidate.run.network.packet_loss)
        || zeroed(best.run.network.packet_replay, candidate.run.network.packet_replay)
        || zeroed(
            best.run.network.packet_corruption,
            candidate.run.network.packet_corruption,
        )
        || (candidate.run.network.clock_offset_max == Some(0) && best.run.network.clock_offset_max != Some(0))
        || zeroed(best.run.disk_slow_prob, candidate.run.disk_slow_prob)
        || (best.run.buggify && !candidate.run.buggify)
}

/// Shrink the failing run `args` with `seed`, printing each kept step to `out`.
/// `time_used` is asked before every candidate: the share of the wall-clock bound
/// spent so far (1.0 and above: out of time; delta debugging stops at
/// [`SHRINK_DDMIN_TIME_SHARE_MAX`]). Returns `Ok(None)` if the run does
/// not fail (nothing to shrink), with the reason printed.
pub fn shrink(
    args: &FuzzArgs,
    seed: u64,
    bounds: ShrinkBounds,
    time_used: &mut dyn FnMut() -> f64,
    out: &mut dyn Write,
) -> io::Result<Option<Shrunk>> {
    let original = attempt(args, seed);
    let (Some(signature), Some(report)) = (original.signature.clone(), original.report) else {
        writeln!(
            out,
            "shrink: the run does not fail{}; nothing to shrink",
            if original.signature.is_some() {
                " with a report (it panicked: only a failed check can be replayed from its schedule)"
            } else {
                ""
            }
        )?;
        return Ok(None);
    };
    let Ok((_, resolved)) = super::configure(args, seed) else {
        return Ok(None);
    };
    writeln!(out, "shrink: signature `{signature}`")?;
    let mut best = args.clone();
    best.schedule = Some(report.faults.clone());
    best.faults_from = None;
    let original_size = RunSize::of(args, &report);
    let mut search = Search {
        seed,
        signature,
        best,
        best_report: report,
        best_failure: original.failure,
        steps: Vec::new(),
        runs: 1,
        bounds,
        time_used,
        stopped_early: None,
        ddmin_cut_short: false,
        out,
    };
    search.branches()?;
    search.classes(&resolved)?;
    search.world()?;
    search.events()?;
    search.ticks()?;
    search.requests()?;
    let shrunk = Shrunk {
        signature: search.signature,
        original: original_size,
        shrunk: RunSize::of(&search.best, &search.best_report),
        schedule: search.best.schedule.clone().unwrap_or_default(),
        args: search.best,
        failure: search.best_failure,
        steps: search.steps,
        runs: search.runs,
        stopped_early: search.stopped_early.or(search
            .ddmin_cut_short
            .then_some("delta debugging reached its share of --shrink-runs or --shrink-seconds")),
    };
    writeln!(search.out, "{}", shrunk.summary())?;
    Ok(Some(shrunk))
}

/// `events` without those in `chunk`, except the heal that ended each partition kept:
/// a candidate that keeps a partition and drops its heal cuts replicas off for the rest
/// of the run, and a check that then finds them unsettled fails with the signature of
/// the original, fair failure (a partition that healed), so the shrink would end on an
/// unfair run. A partition and its heal go together, or the partition goes alone.
fn without_chunk(events: &[FaultEvent], chunk: std::ops::Range<usize>) -> Vec<FaultEvent> {
    let mut kept: Vec<bool> = (0..events.len()).map(|index| !chunk.contains(&index)).collect();
    for index in 0..events.len() {
        if kept[index] && matches!(events[index].fault, Fault::Partition(_)) {
            // The next heal in the original ends this partition (or a later one that
            // replaced it).
            if let Some(heal) = (index + 1..events.len()).find(|&later| matches!(events[later].fault, Fault::Heal)) {
                kept[heal] = true;
            }
        }
    }
    events
        .iter()
        .zip(kept)
        .filter(|&(_, kept)| kept)
        .map(|(event, _)| event.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::PartitionCut;

    fn event(tick: u64, fault: Fault) -> FaultEvent {
        FaultEvent { tick, fault }
    }

    fn partition() -> Fault {
        Fault::Partition(PartitionCut {
            side_a: vec![1],
            cut_a_to_b: true,
            cut_b_to_a: true,
        })
    }

    fn clog(ticks: u64) -> Fault {
        Fault::Clog {
            from: "r0".into(),
            to: "r1".into(),
            ticks,
        }
    }

    #[test]
    fn a_kept_partition_keeps_its_heal_and_a_dropped_one_lets_it_go() {
        let events = vec![
            event(10, partition()),
            event(20, clog(5)),
            event(30, Fault::Heal),
            event(40, clog(6)),
        ];
        let ticks = |kept: Vec<FaultEvent>| kept.iter().map(|event| event.tick).collect::<Vec<_>>();
        assert_eq!(
            ticks(without_chunk(&events, 1..3)),
            vec![10, 30, 40],
            "the heal stays with its partition"
        );
        assert_eq!(
            ticks(without_chunk(&events, 0..1)),
            vec![20, 30, 40],
            "a heal alone is harmless"
        );
        assert_eq!(ticks(without_chunk(&events, 0..3)), vec![40]);
        assert_eq!(
            ticks(without_chunk(&events, 2..3)),
            vec![10, 20, 30, 40],
            "nothing removable"
        );
    }
}
