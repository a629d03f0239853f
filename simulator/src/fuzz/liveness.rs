//! The liveness phase, between the fault phase and the drain: a healthy quorum must
//! make progress on its own within a bound.
//!
//! The drain only asks the cluster to settle eventually, with every replica back, so a
//! bug that stops a healthy majority (a backup that never answers repair, a view change
//! that waits for a replica that is gone) passes as long as the last replica's return
//! unblocks it. This phase, after the VOPR's "core", picks a *core*: a set of replicas
//! large enough both to change views and to commit (`max(quorum_view_change,
//! quorum_replication)`), drawn from the seed among the replicas that are whole when
//! the phase starts (up, every group holding its log in full, hosting every group: the
//! crash injector's own test, [`Harness::wholes`]). Only a whole replica can be asked to
//! lead without the others: one that booted from a power loss may lack a `replicated`
//! topic's unsynced tail, and a core of such replicas rightly waits for a peer that
//! holds it. When fewer replicas are whole than a core needs (an outage just ended), the
//! core is every replica. The core is kept up (restarted if down); every link among the
//! core and to the clients is healed (no partitions, no clogs; loss, delay and replay
//! stay as the profile drew them); crashes and disk faults stop. Replicas outside the
//! core are down for the phase (crashed if they were up). No new requests start.
//!
//! Within [`LIVENESS_TICKS_MAX`] ticks: every group (the metadata group and every
//! partition group the core's primary lists) must have a primary in the core, Normal,
//! that has committed everything it holds; every core replica must be Normal in its
//! view and have applied that; and every outstanding request must be answered. A miss
//! fails the run with a `liveness` check naming the group, the core and what is stuck.
//!
//! What it does not model: a core that loses a member mid-phase (crashes stop), or
//! slow disks (disk faults stop with the crashes).

use cluster::vsr::Status;
use cluster::vsr::constants::{quorum_replication, quorum_view_change};

use super::settle::groups_known_to;
use super::timeliness::{Member, Timeliness, TimelinessFigures, group_members};
use crate::harness::{CheckFailure, Harness};
use crate::rng::SimRng;
use crate::workload::MetadataWorkload;

/// Ticks a healed core has to settle every group and answer every request. Each of a
/// few view changes (election timeout plus backoff, up to about 1,000 ticks under
/// loss), a repair of what a restarted replica lacks (a journal's worth in windows of
/// `REPAIR_PREPARES_MAX`), a state transfer, and clients' resends with backoff fit in
/// it. Measured on 605 passing runs (five configurations from metadata/heavy to five
/// replicas under swarm and eight clients on small journals, 10,000 ticks, crashes and
/// power loss): median 439 ticks, 99th percentile 2,213, slowest 4,689 (a five-replica
/// swarm run), so the bound leaves twice the slowest. A healthy quorum that needs longer
/// is stuck.
pub const LIVENESS_TICKS_MAX: u64 = 10_000;

/// Mixed into the run's seed to draw the core, so the draw takes nothing from the
/// streams the rest of the run uses (the fault phase replays the same with or
/// without the liveness phase).
const CORE_SEED_SALT: u64 = 0xC0DE_C0DE_11FE_0001;

/// Incarnation numbers of core replicas restarted by this phase (distinct from the
/// crash injector's and the heal's, for the logs).
const CORE_RESTART_INCARNATION: u64 = 0x11FE_0000;

/// The core: `wholes[i]` says whether replica `i` is whole; the core is drawn from the
/// whole replicas with the run's seed, or is every replica when too few are whole.
pub(super) fn choose_core(seed: u64, wholes: &[bool]) -> Vec<usize> {
    let replicas = wholes.len();
    let size = quorum_view_change(replicas).max(quorum_replication(replicas));
    assert!(size <= replicas && size >= 1, "core of {size} from {replicas} replicas");
    let mut candidates: Vec<usize> = (0..replicas).filter(|&replica| wholes[replica]).collect();
    if candidates.len() < size {
        return (0..replicas).collect();
    }
    let mut rng = SimRng::new(seed ^ CORE_SEED_SALT);
    // A partial Fisher-Yates shuffle: the first `size` candidates are the core.
    for position in 0..size {
        let pick = position + rng.index(candidates.len() - position);
        candidates.swap(position, pick);
    }
    let mut core = candidates[..size].to_vec();
    core.sort_unstable();
    core
}

/// How the phase went.
pub(super) struct LivenessOutcome {
    /// The core.
    pub core: Vec<usize>,
    /// Ticks the core took to settle.
    pub ticks: u64,
    /// Groups checked settled at the end (metadata plus partitions).
    pub groups: usize,
    /// How quickly the core elected and caught up, against the timeliness bounds.
    pub timeliness: TimelinessFigures,
}

/// Run the phase: heal the core, then step until it has settled (Ok) or the bound ran
/// out (a `liveness` failure) or a per-tick check failed.
pub(super) fn run(
    harness: &mut Harness,
    workload: &std::cell::RefCell<MetadataWorkload>,
    seed: u64,
    replicas: usize,
) -> Result<LivenessOutcome, CheckFailure> {
    let wholes = harness.wholes();
    assert_eq!(wholes.len(), replicas, "one wholeness per replica");
    let core = choose_core(seed, &wholes);
    workload.borrow_mut().stop();
    harness.disable_crashes();
    let outside: Vec<usize> = (0..replicas).filter(|replica| !core.contains(replica)).collect();
    harness.simulation_mut().network_mut().calm();
    // The replicas outside the core stop (a crash, not a partition: a partition cuts
    // only replica links, and two cut-off replicas naming each other as primary kept
    // the simulator's client bouncing between them, an open client finding of its own,
    // `--seed 1000059`); the heal after the phase restarts them.
    let live: Vec<usize> = harness.live_replicas().iter().map(|(index, _)| *index).collect();
    for &replica in outside.iter().filter(|replica| live.contains(replica)) {
        harness.crash_now(replica);
    }
    // And stay down: a node that fail-stopped just before the phase would otherwise be
    // started by its supervisor mid-phase, and lead the view the core changes to
    // (`--seed 6000006 --replicas 5 --faults light`: replica 1 fail-stopped at the end
    // of the fault phase, came back 100 ticks later and led view 6 from outside).
    for &replica in &outside {
        harness.keep_down(replica);
    }
    let live: Vec<usize> = harness.live_replicas().iter().map(|(index, _)| *index).collect();
    for &replica in core.iter().filter(|replica| !live.contains(replica)) {
        harness.restart_now(replica, CORE_RESTART_INCARNATION + replica as u64);
    }
    let started = harness.simulation().tick();
    let mut timeliness = Timeliness::new(harness, "liveness", core.clone(), outside.len(), network_loss(harness));
    loop {
        timeliness.observe(harness, &groups(harness, &core))?;
        let stuck = stuck(harness, workload, &core);
        let Some(stuck) = stuck else {
            return Ok(LivenessOutcome {
                ticks: harness.simulation().tick() - started,
                groups: groups(harness, &core).len(),
                core,
                timeliness: timeliness.figures(),
            });
        };
        if harness.simulation().tick() - started >= LIVENESS_TICKS_MAX {
            return Err(CheckFailure {
                check: "liveness",
                detail: format!(
                    "{stuck}; after {LIVENESS_TICKS_MAX} ticks with the core {core:?} healed and up (replicas {outside:?} \
                     down)"
                ),
                tick: harness.simulation().tick(),
            });
        }
        // A per-tick check that fails now (a commit stuck for its window, say) failed
        // with the core healed: say so after the signature's part of the message.
        harness.step().map_err(|mut failure| {
            failure.detail = format!("{}; in the liveness phase, core {core:?}", failure.detail);
            failure
        })?;
    }
}

/// The chance the network loses or corrupts a packet, which the phase keeps.
pub(super) fn network_loss(harness: &Harness) -> f64 {
    let config = harness.simulation().network().config();
    config.packet_loss_probability + config.packet_corruption_probability
}

/// The groups the core must settle: the metadata group and every partition group in
/// the directory of the core's metadata primary (or of any core replica, if none is
/// primary yet).
fn groups(harness: &Harness, core: &[usize]) -> Vec<u64> {
    groups_known_to(harness, Some(core))
}

/// What keeps the core from being settled, or None when it is.
fn stuck(harness: &Harness, workload: &std::cell::RefCell<MetadataWorkload>, core: &[usize]) -> Option<String> {
    for group in groups(harness, core) {
        let members: Vec<Member> = group_members(harness, group)
            .into_iter()
            .filter(|member| core.contains(&member.replica))
            .collect();
        if members.len() < core.len() {
            let hosting: Vec<usize> = members.iter().map(|member| member.replica).collect();
            return Some(format!("group {group:#x} is hosted by core replicas {hosting:?} only"));
        }
        let mut primaries = members
            .iter()
            .filter(|member| member.primary && member.status == Status::Normal);
        let (Some(primary), None) = (primaries.next(), primaries.next()) else {
            return Some(format!("group {group:#x} has no primary in the core"));
        };
        if primary.head != primary.commit_max {
            return Some(format!(
                "group {group:#x}'s primary (replica {}) has committed {} of the {} ops it holds",
                primary.replica, primary.commit_max, primary.head
            ));
        }
        for member in &members {
            if member.status != Status::Normal || member.view != primary.view {
                return Some(format!(
                    "group {group:#x}: core replica {} is {:?} in view {}, the primary's view is {}",
                    member.replica, member.status, member.view, primary.view
                ));
            }
            if member.commit_min != primary.commit_max {
                return Some(format!(
                    "group {group:#x}: core replica {} has applied {} of {} committed ops",
                    member.replica, member.commit_min, primary.commit_max
                ));
            }
        }
    }
    let outstanding = workload.borrow().outstanding();
    (outstanding > 0).then(|| format!("{outstanding} client requests are unanswered"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_core_is_a_quorum_of_whole_replicas_or_every_replica_when_too_few_are_whole() {
        for replicas in 1..=6_usize {
            let size = quorum_view_change(replicas).max(quorum_replication(replicas));
            for seed in 0..64_u64 {
                // Replica `seed % replicas` is not whole; the rest are.
                let broken = (seed as usize) % replicas;
                let wholes: Vec<bool> = (0..replicas).map(|replica| replica != broken).collect();
                let core = choose_core(seed, &wholes);
                assert!(core.windows(2).all(|pair| pair[0] < pair[1]), "{core:?}");
                assert_eq!(core, choose_core(seed, &wholes), "the draw replays");
                if replicas > size {
                    assert_eq!(core.len(), size, "{replicas} replicas: {core:?}");
                    assert!(!core.contains(&broken), "{replicas} replicas: {core:?} holds {broken}");
                } else {
                    assert_eq!(core, (0..replicas).collect::<Vec<_>>(), "too few whole: every replica");
                }
            }
        }
    }

    #[test]
    fn different_seeds_draw_different_cores() {
        let cores: std::collections::BTreeSet<Vec<usize>> = (0..64).map(|seed| choose_core(seed, &[true; 5])).collect();
        assert!(cores.len() > 3, "{cores:?}");
    }
}
