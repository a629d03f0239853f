//! The whole-cluster power outage, a phase of a consensus run: every replica loses
//! power at the same tick (a data-centre outage) and all start again.
//!
//! The crash injector never takes more replicas than the cluster can lose, so this is
//! the only fault that tests what a power loss of everyone costs, which is what a
//! topic's durability mode promises: a `persisted` topic loses nothing acknowledged,
//! a `replicated` one may lose a suffix of what it acknowledged (see
//! `workload::outage`). The phase, top to bottom:
//!
//! 1. quiet: the workload stops handing out requests and the run goes on until none is
//!    outstanding (at most [`OUTAGE_QUIET_TICKS_MAX`]; still busy, the outage is
//!    skipped and counted): with nothing in flight, every acknowledged write is known;
//! 2. dark: crashes and disk faults stop, every live replica loses power, and the
//!    cluster stays down for [`OUTAGE_DARK_TICKS`]; then every replica starts again;
//! 3. recovery: the cluster must settle (every group in one view, everything committed
//!    applied everywhere) within [`OUTAGE_RECOVERY_TICKS_MAX`] ticks in which no
//!    partition cuts one replica from another, under the profile's other network
//!    faults: failing that is a liveness failure (`outage recovery`). Ticks under a
//!    partition do not count (the network, not the cluster, keeps it from settling);
//!    a partition that outlasts [`OUTAGE_RECOVERY_CUT_TICKS_MAX`] (only a replayed
//!    schedule holds one that long) leaves the outage unjudged, and counted;
//! 4. judgement: every partition the shadow holds is judged against its primary's
//!    state by its topic's durability (`outage durability` on a violation), and what a
//!    `replicated` partition lost is counted and forgotten (the state checker's and the
//!    checkpoint checker's record of its ops above the recovered commit too);
//! 5. the workload and the faults go on.
//!
//! Metadata is synced before every acknowledgement, so it must come back whole: the
//! state checker (every replica re-applies from its disk) and the end-of-run oracle
//! judge it as always.

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

use super::settle::settled;
use crate::harness::{CheckFailure, Harness};
use crate::replay::Replay;
use crate::rng::SimRng;
use crate::workload::MetadataWorkload;
use crate::workload::outage::OutageLoss;

/// Ticks the run waits for outstanding requests before an outage. A request is
/// answered within a few liveness windows under any profile; 20 s of cluster time
/// without a quiet moment means the cluster is struggling, and the outage waits for
/// another draw (counted as skipped).
pub const OUTAGE_QUIET_TICKS_MAX: u64 = 2_000;

/// Ticks the cluster stays dark: 1 s, long enough for every client to time out and
/// retry into the void, short against the run.
pub const OUTAGE_DARK_TICKS: u64 = 100;

/// Ticks the cluster may take to settle after an outage: the drain's bound
/// (`cluster_run::drain::QUIESCE_TICKS_MAX`), for the same reason (a wedge fails, it does not hang).
pub const OUTAGE_RECOVERY_TICKS_MAX: u64 = 20_000;

/// Ticks of recovery under a partition after which the outage is left unjudged: the
/// profiles' partitions heal within a few hundred ticks, so only a replayed or edited
/// schedule that never heals one gets here, and such a run says nothing of recovery.
pub const OUTAGE_RECOVERY_CUT_TICKS_MAX: u64 = 4 * OUTAGE_RECOVERY_TICKS_MAX;

/// Salts the storage seed into the outage coin's stream (derived without drawing, so
/// turning outages on shifts no other draw).
const OUTAGE_SALT: u64 = 0x0D7A_6E00_5EED_0003;

/// What the run's outages did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutageStats {
    /// Outages cut.
    pub outages: u64,
    /// Outages drawn but skipped because requests stayed outstanding.
    pub skipped_busy: u64,
    /// Outages left unjudged because a partition outlasted the recovery.
    pub unjudged_cut: u64,
    /// What the partitions lost, summed over outages.
    pub loss: OutageLoss,
}

impl fmt::Display for OutageStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let loss = self.loss;
        write!(
            f,
            "outages: cut={} skipped_busy={} partitions_judged={} persisted_intact={} messages_compared={} \
             replicated_messages_lost={} replicated_offsets_or_owners_reverted={}",
            self.outages,
            self.skipped_busy,
            loss.partitions,
            loss.persisted_intact,
            loss.messages_compared,
            loss.messages_lost,
            loss.offsets_or_owners_reverted
        )?;
        if self.unjudged_cut > 0 {
            write!(f, " unjudged_partitioned={}", self.unjudged_cut)?;
        }
        Ok(())
    }
}

/// The run's outages: when they come, and what they did.
pub struct Outages {
    rng: SimRng,
    /// Per tick of the run (not of the drain).
    probability: f64,
    /// What happened so far.
    pub stats: OutageStats,
    /// The ticks outages came at (the run's fault schedule's outage events).
    made: Vec<u64>,
    /// A replayed schedule's outage ticks, in place of the coin.
    replay: Option<Replay<()>>,
}

impl Outages {
    /// Reseed the outage coin for a branch of the run (see [`crate::timeline`]). A
    /// replayed schedule's outages stay where the schedule puts them.
    pub fn branch(&mut self, key: crate::timeline::BranchKey) {
        self.rng.branch(key);
    }

    /// Outages with `probability` per tick, drawn from the run's storage seed.
    pub fn new(storage_seed: u64, probability: f64) -> Self {
        Self {
            rng: SimRng::new(storage_seed ^ OUTAGE_SALT),
            probability,
            stats: OutageStats::default(),
            made: Vec::new(),
            replay: None,
        }
    }

    /// Whether outages may come at all.
    pub fn enabled(&self) -> bool {
        self.probability > 0.0 || self.replay.is_some()
    }

    /// Replay outages at these ticks (a schedule's) in place of the coin, which is
    /// then never drawn (it decides nothing else).
    pub fn replay(&mut self, ticks: Vec<u64>) {
        self.replay = Some(Replay::new(ticks.into_iter().map(|tick| (tick, ()))));
    }

    /// Whether an outage comes now, at the harness's `tick` (one draw per tick, only
    /// when enabled; or the replayed schedule's word).
    pub fn due(&mut self, tick: u64) -> bool {
        let due = match &mut self.replay {
            Some(replay) => {
                replay.discard_before(tick);
                replay.pop_if(tick, |()| true)
            }
            None => self.probability > 0.0 && self.rng.chance(self.probability),
        };
        if due {
            self.made.push(tick);
        }
        due
    }

    /// The ticks outages came at so far.
    pub fn made(&self) -> &[u64] {
        &self.made
    }

    /// Run one outage (the module doc's phases).
    pub fn run(&mut self, harness: &mut Harness, workload: &Rc<RefCell<MetadataWorkload>>) -> Result<(), CheckFailure> {
        workload.borrow_mut().set_paused(true);
        let result = self.cut_and_judge(harness, workload);
        workload.borrow_mut().set_paused(false);
        result
    }

    fn cut_and_judge(
        &mut self,
        harness: &mut Harness,
        workload: &Rc<RefCell<MetadataWorkload>>,
    ) -> Result<(), CheckFailure> {
        // 1. Quiet.
        let mut quiet = false;
        for _ in 0..OUTAGE_QUIET_TICKS_MAX {
            if workload.borrow().outstanding() == 0 {
                quiet = true;
                break;
            }
            harness.step()?;
        }
        if !quiet {
            self.stats.skipped_busy += 1;
            return Ok(());
        }
        // 2. Dark.
        tracing::info!("whole-cluster power outage");
        harness.disable_crashes();
        harness.power_outage_now();
        self.stats.outages += 1;
        for _ in 0..OUTAGE_DARK_TICKS {
            harness.step()?;
        }
        harness.restart_all();
        // 3. Recovery, timed only while no partition cuts a replica from another.
        let mut recovered = false;
        let (mut open_ticks, mut cut_ticks) = (0u64, 0u64);
        while open_ticks < OUTAGE_RECOVERY_TICKS_MAX {
            if settled(harness) {
                recovered = true;
                break;
            }
            if replicas_cut_apart(harness) {
                cut_ticks += 1;
                if cut_ticks > OUTAGE_RECOVERY_CUT_TICKS_MAX {
                    self.stats.unjudged_cut += 1;
                    return Ok(());
                }
            } else {
                open_ticks += 1;
            }
            harness.step()?;
        }
        let tick = harness.simulation().tick();
        if !recovered {
            return Err(CheckFailure {
                check: "outage recovery",
                detail: format!(
                    "after a whole-cluster power outage every replica is up, but the cluster has not settled on one \
                     view with everything committed applied within {OUTAGE_RECOVERY_TICKS_MAX} ticks with no \
                     partition standing ({cut_ticks} more ticks under one)"
                ),
                tick,
            });
        }
        // 4. Judgement.
        let primary_state = |group: u64| {
            harness
                .partition_replicas(group)
                .into_iter()
                .find(|(_, replica)| replica.is_primary())
                .map(|(_, replica)| (replica.state_machine().state().clone(), replica.commit_max()))
        };
        let recovered: Vec<(u64, Option<(cluster::partition::PartitionState, u64)>)> = workload
            .borrow()
            .partition_groups()
            .into_iter()
            .map(|group| (group, primary_state(group)))
            .collect();
        let loss = workload
            .borrow_mut()
            .rebase_after_outage(|group| {
                recovered
                    .iter()
                    .find(|(at, _)| *at == group)
                    .and_then(|(_, state)| state.as_ref().map(|(state, _)| state.clone()))
            })
            .map_err(|detail| CheckFailure {
                check: "outage durability",
                detail,
                tick,
            })?;
        self.stats.loss = self.stats.loss.plus(loss);
        let may_lose = workload.borrow().partition_groups_that_may_lose_ops();
        for (group, state) in &recovered {
            if let (true, Some((_, commit))) = (may_lose.contains(group), state) {
                harness.forget_commits_above(*group, *commit);
            }
        }
        // 5. On.
        harness.enable_crashes();
        Ok(())
    }
}

/// Whether a partition now cuts some live replica from another, either way.
fn replicas_cut_apart(harness: &Harness) -> bool {
    let live: Vec<usize> = harness.live_replicas().iter().map(|(index, _)| *index).collect();
    let network = harness.simulation().network();
    live.iter()
        .any(|&from| live.iter().any(|&to| from != to && network.path_cut(from, to)))
}
