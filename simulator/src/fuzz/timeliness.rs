//! Slow is a bug too: once the faults stop, recovery must finish within bounds derived
//! from the design's own timeouts, not merely before the phase's generous limit.
//!
//! The liveness phase (a healed core) and the drain (everything back) only ask the
//! cluster to settle eventually (10,000 and 20,000 ticks). A change that makes a view
//! change wait a few extra windows, or a repair ask for one op a round, still settles
//! inside those and passes. This tracker watches every group each tick of those phases
//! and fails the run, with the figures, when a group misses one of two bounds:
//!
//! - **Election**: from the tick every expected replica hosts the group (the phase's
//!   start for the metadata group; a partition group opens on a node only once that
//!   node's metadata names it) until one of them is a Normal primary with every other
//!   Normal in its view, at most [`Bounds::election_ticks_max`]. A group that is
//!   elected and then loses its view again keeps counting from the same start, so a
//!   view churning in a healed world runs the bound out too.
//! - **Catch-up**: from that election, every member (the primary included: it must
//!   commit what it inherited) must have applied everything the primary held at the
//!   election, `N` ops behind, within [`Bounds::catch_up_ticks_max`] of `N` (plus a
//!   state transfer's chunks when the member is behind the primary's journal).
//!
//! Each bound counts the protocol's own timeouts for the rounds the work needs, plus
//! the resends a lossy network may cost: enough that a healthy exchange needs more
//! with a probability under [`TIMELINESS_MISS_PARTS_PER_BILLION`] per billion. The loss
//! rate is the larger of the profile's (loss plus corruption, which the phases keep)
//! and the one the network showed since the phase began (lost, corrupted and evicted
//! packets over those submitted): a congested link's evictions are packet loss the
//! profile's rate does not state, and a bound that ignored them would fail runs for
//! the network's slowness rather than the cluster's. (Making liveness traffic survive
//! congestion is the cluster's job; until it does, congestion widens the bound, it
//! does not excuse it.) What the bounds do not cover: slow disks (the phases stop disk
//! faults).

use std::collections::BTreeMap;

use cluster::node::METADATA_GROUP;
use cluster::vsr::Status;
use cluster::vsr::constants::{
    COMMIT_BROADCAST_TICKS, LIVENESS_WINDOW_TICKS, PIPELINE_PREPARES_MAX, PREPARE_RESEND_WINDOW_OPS,
    REPAIR_PREPARES_MAX, REPAIR_RETRY_TICKS, REQUEST_START_VIEW_TICKS, TRANSFER_CHUNK_BYTES, TRANSFER_RETRY_TICKS,
    VIEW_CHANGE_ESCALATE_TICKS,
};

use crate::harness::{CheckFailure, Harness};

/// How unlikely (per billion) a bound's resend allowance is to fall short for a
/// healthy exchange on a lossy link. A nightly checks a few million bounds (thousands
/// of runs, dozens of groups, a few replicas each), so one in a billion is a false alarm
/// every few hundred nights.
pub const TIMELINESS_MISS_PARTS_PER_BILLION: u64 = 1;

/// Resends a bound allows at most, whatever the loss rate (a profile losing half its
/// packets needs 60 for one in a billion; past that a bound says nothing).
const RESENDS_MAX: u64 = 64;

/// One replica's part of a group, as the tracker reads it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Member {
    pub replica: usize,
    pub status: Status,
    pub view: u64,
    pub primary: bool,
    pub commit_min: u64,
    pub commit_max: u64,
    pub head: u64,
    pub journal_floor: u64,
    pub checkpoint_bytes: u64,
}

/// The bounds of one phase.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// Resends an exchange may need (see [`resends_for_loss`]).
    pub resends: u64,
    /// Expected replicas that are down for the phase: consecutive views whose primary
    /// is one of them each cost an escalation.
    pub outside: u64,
}

/// Packets the network must have carried in a phase before its observed loss rate
/// counts: a handful of packets says nothing about a rate.
const OBSERVED_LOSS_PACKETS_MIN: u64 = 200;

/// A probability in parts per million (rounded; 0 to 1,000,000).
pub fn ppm(probability: f64) -> u64 {
    (probability.clamp(0.0, 1.0) * 1_000_000.0).round() as u64
}

/// Resends that make a request-and-answer exchange, each packet lost (or corrupted)
/// with probability `per_packet_ppm` per million, succeed with all but
/// [`TIMELINESS_MISS_PARTS_PER_BILLION`]: the smallest `k` with `fail^k` under it,
/// where `fail = 1 - (1 - per_packet)^2`. Integer arithmetic, so the figure is the
/// same on every machine.
pub fn resends_for_loss(per_packet_ppm: u64) -> u64 {
    let per_packet_ppm = u128::from(per_packet_ppm.min(1_000_000));
    let through_ppm = 1_000_000 - per_packet_ppm;
    let fail_ppm = 1_000_000 - through_ppm * through_ppm / 1_000_000;
    // The chance all `k` attempts fail, in parts per 10^18.
    let mut all_fail: u128 = 1_000_000_000_000_000_000;
    let target = u128::from(TIMELINESS_MISS_PARTS_PER_BILLION) * 1_000_000_000;
    let mut resends = 1;
    loop {
        all_fail = all_fail * fail_ppm / 1_000_000;
        if all_fail <= target || resends >= RESENDS_MAX {
            return resends;
        }
        resends += 1;
    }
}

impl Bounds {
    /// Ticks a group may take to elect: a liveness window to notice its primary is
    /// gone (a closed connection cuts it short, a power loss does not), an escalation
    /// per view whose primary is down (the view-change timeout), one more for the view
    /// that succeeds, and a probe interval per resend for the votes, the view change's
    /// messages and a restarted replica's StartView to get through.
    pub fn election_ticks_max(&self) -> u64 {
        LIVENESS_WINDOW_TICKS
            + (self.outside + 1) * VIEW_CHANGE_ESCALATE_TICKS
            + self.resends * REQUEST_START_VIEW_TICKS
    }

    /// Ticks a member `ops_behind` the primary may take to apply them after the
    /// election: a repair round per window of `REPAIR_PREPARES_MAX` ops, each retried
    /// after `REPAIR_RETRY_TICKS`, plus the resends; the inherited pipeline's commit
    /// (backups re-acknowledge `PREPARE_RESEND_WINDOW_OPS` ops per commit broadcast,
    /// plus the resends' worth of lost broadcasts);
    /// and, for a member behind the primary's journal, a state transfer of
    /// `transfer_chunks` chunks, each retried after `TRANSFER_RETRY_TICKS`.
    pub fn catch_up_ticks_max(&self, ops_behind: u64, transfer_chunks: u64) -> u64 {
        let repair_rounds = ops_behind.div_ceil(REPAIR_PREPARES_MAX) + self.resends;
        // Each broadcast may be lost as a repair round may: the same resends again.
        let pipeline_broadcasts =
            (PIPELINE_PREPARES_MAX as u64).div_ceil(PREPARE_RESEND_WINDOW_OPS as u64) + self.resends;
        let transfer = if transfer_chunks == 0 {
            0
        } else {
            (transfer_chunks + self.resends) * TRANSFER_RETRY_TICKS
        };
        repair_rounds * REPAIR_RETRY_TICKS + pipeline_broadcasts * COMMIT_BROADCAST_TICKS + transfer
    }
}

/// One group's clocks.
#[derive(Clone, Debug, Default)]
struct GroupClock {
    /// When every expected replica first hosted it.
    hosted_at: Option<u64>,
    /// The current election: when, and the members still catching up.
    elected: Option<Election>,
}

#[derive(Clone, Debug)]
struct Election {
    at: u64,
    view: u64,
    /// The members still catching up.
    behind: Vec<CatchUp>,
}

/// One member's catch-up after an election, and the bound it was given then.
#[derive(Clone, Copy, Debug)]
struct CatchUp {
    replica: usize,
    /// Ops behind the primary's head at the election.
    ops: u64,
    /// The op it must have applied: the primary's head at the election.
    target: u64,
    /// Ticks it may take.
    bound: u64,
    /// The resends the bound allowed (the loss the network had shown by the
    /// election): what a failure prints, rather than the resends of a later tick.
    resends: u64,
}

/// The figures a phase's tracker gathered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimelinessFigures {
    /// Elections timed (a group elected, counted once per election).
    pub elections: u64,
    /// The slowest election, in ticks, and its bound.
    pub election_ticks_max: u64,
    /// Members timed catching up.
    pub catch_ups: u64,
    /// The slowest catch-up, in ticks.
    pub catch_up_ticks_max: u64,
    /// The most ops a member was behind at an election.
    pub ops_behind_max: u64,
    /// The smallest slack any bound had left when met, in ticks.
    pub slack_ticks_min: u64,
    /// The highest per-packet loss (parts per million) a bound was derived from.
    pub loss_ppm_max: u64,
}

/// Watches every group of a phase.
pub(super) struct Timeliness {
    phase: &'static str,
    bounds: Bounds,
    /// The profile's per-packet loss, parts per million.
    profile_loss_ppm: u64,
    /// The network's (submitted, lost or corrupted or evicted) counts when the phase began.
    network_at_start: (u64, u64),
    /// The replicas every group must be hosted by (the core; everyone).
    expected: Vec<usize>,
    groups: BTreeMap<u64, GroupClock>,
    figures: TimelinessFigures,
}

impl Timeliness {
    /// A tracker for `phase`, whose groups must be hosted by `expected`, with
    /// `outside` replicas down, on a network whose profile loses `loss` of its packets.
    pub(super) fn new(harness: &Harness, phase: &'static str, expected: Vec<usize>, outside: usize, loss: f64) -> Self {
        Timeliness {
            phase,
            bounds: Bounds {
                resends: resends_for_loss(ppm(loss)),
                outside: outside as u64,
            },
            profile_loss_ppm: ppm(loss),
            network_at_start: network_losses(harness),
            expected,
            groups: BTreeMap::new(),
            figures: TimelinessFigures {
                slack_ticks_min: u64::MAX,
                ..TimelinessFigures::default()
            },
        }
    }

    /// What the phase gathered.
    pub(super) fn figures(&self) -> TimelinessFigures {
        let mut figures = self.figures;
        if figures.slack_ticks_min == u64::MAX {
            figures.slack_ticks_min = 0;
        }
        figures
    }

    /// Look at every group in `groups` now; a missed bound fails the run.
    pub(super) fn observe(&mut self, harness: &Harness, groups: &[u64]) -> Result<(), CheckFailure> {
        let now = harness.simulation().tick();
        let loss_ppm = self.profile_loss_ppm.max(self.observed_loss_ppm(harness));
        self.bounds.resends = resends_for_loss(loss_ppm);
        self.figures.loss_ppm_max = self.figures.loss_ppm_max.max(loss_ppm);
        for &group in groups {
            let members: Vec<Member> = group_members(harness, group)
                .into_iter()
                .filter(|member| self.expected.contains(&member.replica))
                .collect();
            let result = self.observe_group(group, now, &members);
            result.map_err(|detail| CheckFailure {
                check: "timeliness",
                detail: format!("{detail} (in the {} phase)", self.phase),
                tick: now,
            })?;
        }
        Ok(())
    }

    /// The share of packets the network failed to deliver whole since the phase began,
    /// parts per million (0 until it has carried [`OBSERVED_LOSS_PACKETS_MIN`]).
    fn observed_loss_ppm(&self, harness: &Harness) -> u64 {
        let (submitted, failed) = network_losses(harness);
        let submitted = submitted - self.network_at_start.0;
        let failed = failed - self.network_at_start.1;
        if submitted < OBSERVED_LOSS_PACKETS_MIN {
            return 0;
        }
        (u128::from(failed) * 1_000_000 / u128::from(submitted)).min(1_000_000) as u64
    }

    fn observe_group(&mut self, group: u64, now: u64, members: &[Member]) -> Result<(), String> {
        let bounds = self.bounds;
        let expected = self.expected.len();
        let clock = self.groups.entry(group).or_default();
        if members.len() < expected {
            // Not (yet, or no longer) hosted by every expected replica: nothing to time.
            return Ok(());
        }
        let hosted_at = *clock.hosted_at.get_or_insert(now);
        let mut primaries = members.iter().filter(|m| m.primary && m.status == Status::Normal);
        let elected_view = match (primaries.next(), primaries.next()) {
            (Some(primary), None)
                if members
                    .iter()
                    .all(|m| m.status == Status::Normal && m.view == primary.view) =>
            {
                Some(*primary)
            }
            _ => None,
        };
        let Some(primary) = elected_view else {
            clock.elected = None;
            let waited = now - hosted_at;
            let bound = bounds.election_ticks_max();
            if waited > bound {
                return Err(format!(
                    "group {group:#x} has not elected a primary among replicas {:?} {waited} ticks after they all \
                     hosted it (bound {bound}: liveness window {LIVENESS_WINDOW_TICKS} + ({} down + 1) x escalation \
                     {VIEW_CHANGE_ESCALATE_TICKS} + {} resends x {REQUEST_START_VIEW_TICKS}); {}",
                    self.expected,
                    bounds.outside,
                    bounds.resends,
                    describe(members)
                ));
            }
            return Ok(());
        };
        if clock.elected.as_ref().is_none_or(|e| e.view != primary.view) {
            let waited = now - hosted_at;
            self.figures.elections += 1;
            self.figures.election_ticks_max = self.figures.election_ticks_max.max(waited);
            self.figures.slack_ticks_min = self.figures.slack_ticks_min.min(bounds.election_ticks_max() - waited);
            let checkpoint_bytes = members.iter().map(|m| m.checkpoint_bytes).max().unwrap_or(0);
            let behind = members
                .iter()
                .map(|m| {
                    let ops = primary.head.saturating_sub(m.commit_min);
                    let chunks = if m.commit_min < primary.journal_floor {
                        checkpoint_bytes.div_ceil(TRANSFER_CHUNK_BYTES as u64).max(1)
                    } else {
                        0
                    };
                    self.figures.ops_behind_max = self.figures.ops_behind_max.max(ops);
                    CatchUp {
                        replica: m.replica,
                        ops,
                        target: primary.head,
                        bound: bounds.catch_up_ticks_max(ops, chunks),
                        resends: bounds.resends,
                    }
                })
                .collect();
            clock.elected = Some(Election {
                at: now,
                view: primary.view,
                behind,
            });
        }
        let election = clock.elected.as_mut().expect("set above");
        if election.behind.is_empty() {
            return Ok(());
        }
        let elapsed = now - election.at;
        let mut missed = None;
        election.behind.retain(|&catch_up| {
            let CatchUp {
                replica,
                ops,
                target,
                bound,
                resends,
            } = catch_up;
            let applied = members
                .iter()
                .find(|m| m.replica == replica)
                .map_or(0, |m| m.commit_min);
            if applied >= target {
                self.figures.catch_ups += 1;
                self.figures.catch_up_ticks_max = self.figures.catch_up_ticks_max.max(elapsed);
                self.figures.slack_ticks_min = self.figures.slack_ticks_min.min(bound.saturating_sub(elapsed));
                return false;
            }
            if elapsed > bound && missed.is_none() {
                missed = Some(format!(
                    "group {group:#x}: replica {replica} has applied {applied} of the {target} ops its primary (replica \
                     {}, view {}) held at its election {elapsed} ticks ago, {ops} behind then (bound {bound}: {} repair \
                     rounds of {REPAIR_PREPARES_MAX} ops + {} resends, x {REPAIR_RETRY_TICKS} ticks, plus the \
                     pipeline's commit and any state transfer)",
                    primary.replica,
                    election.view,
                    ops.div_ceil(REPAIR_PREPARES_MAX),
                    resends
                ));
            }
            true
        });
        missed.map_or(Ok(()), Err)
    }
}

/// The network's packets submitted, and those lost, corrupted or evicted, so far.
fn network_losses(harness: &Harness) -> (u64, u64) {
    let stats = harness.simulation().network().stats();
    (stats.submitted, stats.lost + stats.corrupted + stats.evicted)
}

/// One line per member: what a failure shows.
fn describe(members: &[Member]) -> String {
    members
        .iter()
        .map(|m| {
            format!(
                "replica {} {:?} view {}{} applied {} head {}",
                m.replica,
                m.status,
                m.view,
                if m.primary { " primary" } else { "" },
                m.commit_min,
                m.head
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every live replica's part of `group`.
pub(super) fn group_members(harness: &Harness, group: u64) -> Vec<Member> {
    macro_rules! member {
        ($index:expr, $replica:expr) => {
            Member {
                replica: $index,
                status: $replica.status(),
                view: $replica.view(),
                primary: $replica.is_primary(),
                commit_min: $replica.commit_min(),
                commit_max: $replica.commit_max(),
                head: $replica.head(),
                journal_floor: $replica.journal_floor(),
                checkpoint_bytes: $replica.last_encoded_checkpoint().map_or(0, |c| c.bytes),
            }
        };
    }
    if group == METADATA_GROUP {
        harness
            .live_replicas()
            .iter()
            .map(|(index, replica)| member!(*index, replica.borrow()))
            .collect()
    } else {
        harness
            .partition_replicas(group)
            .iter()
            .map(|(index, replica)| member!(*index, replica))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lossless_network_needs_one_attempt_and_loss_costs_resends() {
        assert_eq!(resends_for_loss(ppm(0.0)), 1);
        // 2% loss: an exchange fails 4% of the time; 0.0396^7 < 1e-9.
        assert_eq!(resends_for_loss(ppm(0.02)), 7);
        // 11% (heavy's loss and corruption): an exchange fails 20.8% of the time;
        // 0.208^14 < 1e-9 < 0.208^13.
        let heavy = resends_for_loss(ppm(0.11));
        assert_eq!(heavy, 14);
        assert_eq!(resends_for_loss(ppm(1.0)), RESENDS_MAX);
        assert!(
            resends_for_loss(ppm(0.3)) > heavy,
            "congestion's evictions cost resends too"
        );
    }

    #[test]
    fn bounds_grow_with_what_the_recovery_must_do() {
        let bounds = Bounds { resends: 7, outside: 0 };
        let more_down = Bounds { resends: 7, outside: 2 };
        assert!(more_down.election_ticks_max() > bounds.election_ticks_max());
        assert!(bounds.catch_up_ticks_max(1_000, 0) > bounds.catch_up_ticks_max(10, 0));
        assert!(bounds.catch_up_ticks_max(10, 2) > bounds.catch_up_ticks_max(10, 0));
        // A repair of 1,000 ops one op a round would take 1,000 round trips: far past
        // what eight windows of 128 and the resends allow.
        assert!(bounds.catch_up_ticks_max(1_000, 0) < 1_000 * 2 * 3);
    }
}
