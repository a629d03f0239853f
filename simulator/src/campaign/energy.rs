//! How much an exploration's splitpoints earn, and in which order their children go:
//! the policy `campaign::explore`'s [`Explorer`](super::explore::Explorer) applies.
//!
//! A splitpoint is one of three kinds ([`SplitClass`]): a *near miss* (a harness
//! check nearly failed: [`NEAR_MISS_MARKS`]), whose children go first; a *hazard* (a
//! race the harness sees: [`HAZARD_MARKS`]), branched at every reach however common;
//! and a point *new or still rare*, branched in inverse proportion to how often the
//! exploration reached it. Each constant's comment gives the measurement that chose its
//! value. The lag (runs planned ahead of the merged ones) is here too: it is as much a
//! part of how fast what a run finds steers the next runs.

use cluster::coverage::{Mark, Point};

/// Children a new point's splitpoint gets at most: enough that one lucky child is
/// likely among them, few enough that a barren mark costs little.
pub const EXPLORE_CHILDREN_FIRST: u32 = 4;

/// Children a point first reached by run `index` (in plan order) earns: a point the
/// exploration's first run reached is likely common (about every run reaches it), one
/// first reached after `n` runs is reached by about one run in `n`; so one child at
/// first, one more per doubling of the runs before it, up to
/// [`EXPLORE_CHILDREN_FIRST`]. Early in an exploration nearly every point is new, and
/// this keeps its first few runs' ordinary points from taking the budget.
pub fn children_for_new(index: usize) -> u32 {
    (1 + (index as u64 + 1).ilog2()).min(EXPLORE_CHILDREN_FIRST)
}

/// More children a splitpoint gets each time one of its children reaches a point new to
/// the exploration: a productive place keeps being explored.
pub const EXPLORE_CHILDREN_MORE: u32 = 4;

/// A mark reached (by a run's own randomness) by fewer runs than this is still rare,
/// however many runs were merged: each such reach makes a splitpoint of its own, so a
/// rare mark is explored from several runs' states rather than from the first run's
/// alone (the first reach is often the least typical). Six: in 2.5 minutes of the
/// nightly spec on one core (about 2,000 runs) the rarest marks were reached by 3-20
/// runs.
pub const EXPLORE_RARE_RUNS_MAX: u64 = 6;

/// A mark reached by fewer than this many runs per thousand merged is rare too (the
/// larger of the two bounds holds): the energy a mark earns then scales with how
/// rare it is over the whole exploration, not only with its first few reaches. Five
/// percent: in 2.5 minutes of the nightly the ten rarest marks were reached by up to
/// 3% of the runs (a bound of 2% left the least rare of them without children: a
/// median 2.7x as often as plain on five ranges, against 3.5x at 5%, 2026-12-06); the
/// common ones by 10-100%.
pub const EXPLORE_RARE_PER_MILLE: u64 = 50;

/// Children are at most this share of the work of the runs planned in a member's
/// turns (priced as planned: `ChildPrice`), in percent, while roots are
/// left: early in an exploration nearly every point is new, and without a cap the
/// first few roots' descendants would take a short (time-limited) exploration whole;
/// fresh roots find what no branch of those can. Half: in a 1,800-run exploration
/// without the cap, children were 45% of the runs.
pub const EXPLORE_CHILDREN_SHARE_PERCENT_MAX: u64 = 50;

/// Runs merged before children may take their whole share
/// ([`EXPLORE_CHILDREN_SHARE_PERCENT_MAX`]); until then the share grows in proportion.
/// Early in an exploration nearly every point is new and rarity is noise (a mark one
/// run in a hundred reaches has been seen once or twice), so children branched then
/// are mostly of common points, and they halve the pace of the roots just when a
/// bug that about one run in a hundred trips is being found by a root: on
/// answer-queries-unconfirmed (stop 62, 15 ranges without a ramp) explore lost to
/// plain in each of the 4 ranges where plain caught it within 100 runs, each time with
/// a root it reached later.
/// Two hundred: the rarest of the nightly's marks are then seen by their first few runs.
pub const EXPLORE_CHILDREN_RAMP_RUNS: u64 = 200;

/// Children a reach of a rare (not new) mark earns at most: twice a new point's,
/// since the mark is known to be reachable and its rarest reaches are where the
/// protocol's rare paths are explored from. Eight: a mark reached once in a thousand
/// runs then gets about one run in a hundred of its own.
pub const EXPLORE_CHILDREN_RARE_MAX: u32 = 8;

/// A mark reached by more than one run in this many of those merged is common,
/// whatever the bounds above say: early in an exploration a point every run reaches is
/// under [`EXPLORE_RARE_RUNS_MAX`] runs, and is no rare path.
pub const EXPLORE_RARE_ONE_RUN_IN_MIN: u64 = 4;

/// Children a reach of a mark `fresh` earlier runs reached (by their own randomness)
/// earns, `merged` runs merged before it: none once the mark is common (reached by at
/// least the rare bound, the larger of [`EXPLORE_RARE_RUNS_MAX`] runs and
/// [`EXPLORE_RARE_PER_MILLE`] per thousand, or by more than one run in
/// [`EXPLORE_RARE_ONE_RUN_IN_MIN`]); else in inverse proportion to how often it was
/// reached (the bound over `fresh`, rounded up), at most
/// [`EXPLORE_CHILDREN_RARE_MAX`]: the rarer, the more tries from more runs' states.
pub fn children_for_rare(fresh: u64, merged: u64) -> u32 {
    let bound = EXPLORE_RARE_RUNS_MAX.max(merged * EXPLORE_RARE_PER_MILLE / 1000);
    if fresh == 0 || fresh >= bound || fresh * EXPLORE_RARE_ONE_RUN_IN_MIN > merged {
        return 0;
    }
    u32::try_from(bound.div_ceil(fresh))
        .unwrap_or(u32::MAX)
        .min(EXPLORE_CHILDREN_RARE_MAX)
}

/// How far before a point's first reach a lead-up splitpoint branches, in ticks. A
/// race between a client and a protocol round is decided within about a second of
/// simulated time (100 ticks of 10 ms: two commit heartbeats, a dozen one-way delays
/// at heavy's mean of 8 ticks, a fifth of a liveness window): branched earlier, a child
/// mostly replays whatever led to the race, not the race; branched after, it inherits
/// the race's outcome.
pub const EXPLORE_LEAD_UP_TICKS: u64 = 100;

/// Of a splitpoint's `energy`, the children that branch in its lead-up instead of just
/// after it: for a hazard's reach half, rounded down (its outcome is what is played
/// again); for any other point a quarter, rounded down, so a point's first few
/// children inherit its state: a rare path's reach is itself what makes the run's
/// prefix worth branching from, and every child going on from it walks that path.
/// With half for every point (stop 62, five ranges of the nightly) the ten rarest
/// marks were reached a median 4.1x as often as plain, against 5.3x with none; the
/// catches of answer-queries-unconfirmed that came from lead-ups were of marks that
/// precede a deposed primary's answer (a withdrawn leave vote, a deposed primary's
/// age), which a quarter still branches. For a near miss's none: what led there is
/// hundreds of ticks of lag, not a moment a re-roll decides ([`NEAR_MISS_MARKS`]).
pub fn lead_up_energy(energy: u32, class: SplitClass) -> u32 {
    match class {
        SplitClass::NearMiss => 0,
        SplitClass::Hazard => energy / 2,
        SplitClass::Rare => energy / 4,
    }
}

/// The hazards: moments where what happens next decides whether a wrong answer is
/// given, though most runs come through them unharmed. The races the harness sees
/// from the whole world (not from the code under test's own checks): a primary still
/// Normal in a view its group has replaced, and that primary taking up an update or a
/// query (stale reads, lost or doubled updates). Every reach earns children
/// ([`EXPLORE_CHILDREN_HAZARD`]), however common the mark, so the moment is played
/// again from that run's state. Rarity alone never branches them: on the nightly a
/// deposed primary is in about a sixth of the runs, and a bug there shows in a few of
/// those. With `answer-queries-unconfirmed` planted (2 minutes of the exploring
/// nightly, stop 62) 3.3% of the children of hazards failed, against 0.15% of the
/// roots. A state transfer begun was a hazard too, and 0 of its 449 children caught
/// `install-unverified-transfer` (0.39% of the roots did): a transfer's outcome is
/// decided by its chunks, which its own retries already draw again.
pub const HAZARD_MARKS: &[Mark] = &[
    Mark::DeposedPrimaryNormal,
    Mark::UpdateAtDeposedPrimary,
    Mark::QueryAtDeposedPrimary,
];

/// The near misses: marks the harness sets when one of its failure checks came
/// within a margin of firing, rungs of a ladder (a replica that could repair has
/// applied nothing for half, then three quarters, of the commit-stuck bound:
/// `harness::COMMIT_STUCK_HALF_WAY_TICKS`, `harness::COMMIT_STUCK_NEAR_MISS_TICKS`).
/// A near miss is the closest a run comes to failing without failing, and correct
/// code seldom reaches one (the first rung in 3 of 1,670 runs of the nightly spec,
/// seeds 445M; the second never: no run of a ten-minute nightly went past 1,323 ticks
/// of 2,000, stop 65), so it is neither a rare path nor a race to play again but a failure
/// half made: every reach earns [`EXPLORE_CHILDREN_NEAR_MISS`] children
/// ([`near_miss_energy`]), all going on from the reach (no lead-up: what led there is
/// hundreds of ticks of lag, not a moment a re-roll decides), planned before any other
/// splitpoint's (the higher rung first: it is the rarer) and without waiting for the
/// ramp ([`EXPLORE_CHILDREN_RAMP_RUNS`]: the ramp waits for rarity to mean something,
/// and a near miss means what it means at once). A child of the first rung that
/// reaches the second by its own randomness is branched again from there: a lag that
/// grows climbs the ladder.
///
/// Measured with `repair-one-op-a-round` planted (`scripts/explore-first-catch.py`,
/// ten ranges a side). With the second rung alone as a rare mark (rarest first, stop
/// 65) it waited behind every point rarer than itself: 13 of the 20 roots that reached
/// it in six minutes of the exploring nightly got no children (seeds 403M), while 778
/// children went to deposed primaries; first catch 1.26x plain's (fifteen ranges).
/// Branched first at every reach: 1.47x (seeds 404M-413M), its children failing about
/// one time in ten when their parent passed, against one root in 350; few roots reach
/// three quarters of the bound (2%), four to six times as many reach half of it. With
/// both rungs: 12.9 s against 31.8 s (seeds 414M-423M, every catch a child of a rung),
/// and with the one-in-four bound ([`near_miss_energy`]) 12.8 s against 50.4 s (seeds
/// 435M-444M, as fast in 9 of 10). As a hazard instead (four children at every reach,
/// half in the lead-up, sharing the hazards' one child in three with the deposed
/// primaries) the second rung caught that break first in 2 of 5 ranges (seeds
/// 376M-380M, stop 65).
pub const NEAR_MISS_MARKS: &[Mark] = &[Mark::CommitStuckHalfWay, Mark::CommitStuckNearMiss];

/// Children a near miss's reach earns ([`NEAR_MISS_MARKS`]): as many as the rarest
/// mark's reach (`EXPLORE_CHILDREN_RARE_MAX`). Children of one near miss fail together or
/// not at all more often than by chance (seeds 402M-403M: 0 of 13 from one parent, 4 of
/// 11 from another), so more children of one reach buy less than the children of the
/// next reach; at eight, a near miss whose children fail one time in ten is caught with
/// odds better than one in two.
pub const EXPLORE_CHILDREN_NEAR_MISS: u32 = 8;

/// Children a near miss's reach earns, `fresh` earlier runs having reached it (by
/// their own randomness) of `merged`: [`EXPLORE_CHILDREN_NEAR_MISS`], unless more
/// than one run in [`EXPLORE_RARE_ONE_RUN_IN_MIN`] reached it: a lag every fourth run
/// comes to is how that configuration runs (a long standing partition, say), not a
/// near miss, and its children would take every other splitpoint's share.
pub fn near_miss_energy(fresh: u64, merged: u64) -> u32 {
    if fresh * EXPLORE_RARE_ONE_RUN_IN_MIN > merged {
        0
    } else {
        EXPLORE_CHILDREN_NEAR_MISS
    }
}

/// Whether `point` is one of the [`NEAR_MISS_MARKS`].
pub fn is_near_miss(point: Point) -> bool {
    point.as_mark().is_some_and(|mark| NEAR_MISS_MARKS.contains(&mark))
}

/// Which queue a splitpoint waits in: its children are planned near misses first, then
/// hazards and rare points in turn ([`EXPLORE_HAZARD_CHILDREN_ONE_IN`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitClass {
    /// A near miss's reach ([`NEAR_MISS_MARKS`]).
    NearMiss,
    /// A hazard's reach ([`HAZARD_MARKS`]).
    Hazard,
    /// A point new or still rare.
    Rare,
}

impl SplitClass {
    /// The class of a splitpoint at `point`'s reach.
    pub fn of(point: Point) -> Self {
        if is_near_miss(point) {
            SplitClass::NearMiss
        } else if is_hazard(point) {
            SplitClass::Hazard
        } else {
            SplitClass::Rare
        }
    }

    /// Children a reach of a point of this class earns whatever its rarity says
    /// (`fresh` earlier runs reached it by their own randomness, of `merged`): a near
    /// miss's [`near_miss_energy`], a hazard's [`EXPLORE_CHILDREN_HAZARD`], a rare
    /// point's none (its rarity alone decides).
    pub fn children_at_least(self, fresh: u64, merged: u64) -> u32 {
        match self {
            SplitClass::NearMiss => near_miss_energy(fresh, merged),
            SplitClass::Hazard => EXPLORE_CHILDREN_HAZARD,
            SplitClass::Rare => 0,
        }
    }
}

/// Children a hazard's reach earns at least (a run's own reach, after its last branch
/// point): two going on from the race, two playing its lead-up again
/// ([`lead_up_energy`]). Four: two siblings make a batch that forks (one child alone
/// is made from scratch, `campaign::batch`), and with one child each way (stop 62,
/// answer-queries-unconfirmed) hazards got 0-15 of 54-137 children, the rare marks'
/// batches of up to 8 taking the rest. How many of a member's children hazards take
/// at most is [`EXPLORE_HAZARD_CHILDREN_ONE_IN`]'s to say.
pub const EXPLORE_CHILDREN_HAZARD: u32 = 4;

/// While splitpoints of both kinds have energy, one child in this many of a member's
/// goes to its hazards (the rarest hazard first; counted as a batch starts) and the
/// others to its rarest splitpoint: rarity finds the protocol's rare paths, hazards
/// the races that are common but rarely lost, and neither starves the other. Three:
/// at one in two (stop 62) the rare marks' children were too few for the rarest
/// marks to triple.
pub const EXPLORE_HAZARD_CHILDREN_ONE_IN: u64 = 3;

/// Whether `point` is one of the [`HAZARD_MARKS`].
pub fn is_hazard(point: Point) -> bool {
    point.as_mark().is_some_and(|mark| HAZARD_MARKS.contains(&mark))
}

/// Runs planned ahead of the merged ones at most (the lag): enough to keep a
/// many-core machine busy while a slow run holds back merging, few enough that what a
/// run finds steers the runs soon after it. Not tied to `--jobs`, so the exploration
/// is the same on any machine.
pub const EXPLORE_LAG_RUNS_MAX: usize = 32;

/// The lag is at most the budget divided by this, so a small exploration still steers
/// (its lag shrinks down to one run: fully sequential).
pub const EXPLORE_LAG_BUDGET_DIVISOR: u64 = 16;

/// The lag for a budget (runs planned ahead of the merged ones): a function of the
/// budget alone (see [`EXPLORE_LAG_RUNS_MAX`]).
pub fn lag_runs(budget: u64) -> usize {
    usize::try_from(budget / EXPLORE_LAG_BUDGET_DIVISOR)
        .unwrap_or(EXPLORE_LAG_RUNS_MAX)
        .clamp(1, EXPLORE_LAG_RUNS_MAX)
}
