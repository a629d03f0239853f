//! `campaign --explore`: spend a campaign's runs where they find something new.
//!
//! A plain campaign runs every seed from scratch, and most runs revisit what earlier
//! runs already reached. An exploration instead branches runs at the moments they
//! reach something rare. A run that reaches a coverage point (a mark, or a
//! watermark's level: the highest view, the most ops behind, see `cluster::coverage`)
//! that no earlier run of the exploration reached, or a mark still rare
//! ([`children_for_rare`]), makes that (run, tick) a *splitpoint*; its children are the
//! same run with one more branch point just after that tick (see [`crate::timeline`]):
//! the same prefix, fresh randomness from there on. Part of its energy goes to a
//! *lead-up* splitpoint instead, whose children branch [`EXPLORE_LEAD_UP_TICKS`]
//! before the reach: a child branched after a race was reached inherits its outcome
//! (the deposed primary has already answered), and one branched in the lead-up plays
//! the race again with fresh randomness ([`lead_up_energy`]). A *hazard* (a race the
//! harness sees, a deposed primary taking up requests: [`HAZARD_MARKS`]) makes a
//! splitpoint at every reach, however common: rarity finds rare paths, and a race
//! that most runs survive is no rare path but is where a wrong answer hides. A *near
//! miss* (a harness check that nearly failed: [`NEAR_MISS_MARKS`]) makes a splitpoint
//! at every reach too, and its children go before any other's: it is a failure half
//! made. Rarity counts only the runs that reached a point by their own
//! randomness (after their last branch point): a child's prefix reaches whatever its
//! parent did, which is no news.
//!
//! Budget (energy, in runs): the exploration makes exactly as many runs as its budget
//! allows, roots (the planned runs, in their order) and children together. A new
//! point's splitpoint earns up to [`EXPLORE_CHILDREN_FIRST`] children (fewer if the
//! exploration's first runs found it: [`children_for_new`]); a watermark level splits
//! only when new (the watermark improved); a rare mark's reach earns children in
//! inverse proportion to how often the mark was reached, up to
//! [`EXPLORE_CHILDREN_RARE_MAX`]. Each child that reaches a point new to the
//! exploration earns its splitpoint [`EXPLORE_CHILDREN_MORE`] more, and a splitpoint
//! whose children find nothing new stops earning (what it did not spend stays with the
//! roots). Children go first, rarest point first (the point fewest runs reached by
//! their own randomness; among equals, the latest find), the rarest hazard's while
//! hazards have under one in [`EXPLORE_HAZARD_CHILDREN_ONE_IN`] of them, a
//! splitpoint's children together (up to a batch, made with one prefix:
//! `campaign::batch`), at most half the work while roots are left (checked as a batch
//! starts; a share that grows from none over the first [`EXPLORE_CHILDREN_RAMP_RUNS`]
//! runs merged); roots fill the rest.
//!
//! One map for the whole campaign: every exploring sub-campaign of a spec (those that
//! search for the same `--target-marks`: on the nightly, all) shares one
//! [`Exploration`](super::exploration::Exploration), so a point is rare or common by
//! all their runs, not rediscovered by each. The members take turns by weight, in a
//! deterministic measure of work ([`run_cost`](super::exploration::run_cost)), and
//! each spends its turn on its next root or on the rarest splitpoint it may branch:
//! one of its own runs', or another member's whose child costs no more than its own
//! roots do (a child runs the ticks after its branch point, and its share of the
//! prefix its batch of siblings runs once: `ChildPrice`). Work is priced so
//! throughout: a turn pays for its runs at that price, and its children take at most
//! half of it. The weights share the work, the map says where children
//! go, and a rare point found in a line of few runs (long runs, a small weight) gets
//! children from other members' shares once they are cheap. The campaign's
//! dispatcher (`campaign::runner`) time-shares the exploration with the plain
//! sub-campaigns by their weights. With `--shard`, each shard explores from its own
//! share of the roots.
//!
//! Determinism: results are merged in plan order, and run `k` is planned right after
//! run `k - lag` is merged, where the lag is a function of the budget alone
//! ([`lag_runs`]). So the plan of every run depends only on the results of the runs
//! before it, never on which worker finished first or how fast: given the seed ranges
//! and the budget the exploration is the same on any machine and any `--jobs`, except
//! that a wall-clock budget (`--minutes`) may cut it short. The lag keeps workers busy
//! without a barrier: a slow run holds back merging, not the runs already planned
//! behind it.
//!
//! A child is its parent's run up to the branch point, then its own. The siblings of
//! a splitpoint are planned together ([`Explorer::plan_sibling_for`]), so one worker
//! can make them with one run of their shared prefix, forking a copy per child at the
//! branch point (`campaign::batch`, `--branch-by fork`), or make each from scratch
//! (`--branch-by rerun`); the results are the same (see ARCHITECTURE.md, "Timelines").

use cluster::coverage::{POINTS, Point};

use super::batch::{BATCH_RUNS_MAX, FORK_PREFIX_TICKS_MIN};
pub use super::energy::*;
use crate::timeline::{BranchPoint, Branches};

/// One run of an exploration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExploreRun {
    /// The sub-campaign it belongs to: an index into the exploration's members (0 when
    /// one sub-campaign explores alone).
    pub member: usize,
    /// The member whose turn planned it, and whose share of the exploration pays for
    /// it: its own `member` for a root; for a child, the member whose turn branched the
    /// splitpoint, which may be another member's run (see
    /// [`Explorer::plan_next_for`]).
    pub turn: usize,
    /// The root it descends from: its position in its sub-campaign's planned runs.
    pub root: u64,
    /// Its branch points (none for a root).
    pub branches: Branches,
    /// The run it branched from (an index into [`Explorer::runs`]), if a child.
    pub parent: Option<usize>,
    /// The point whose reach made the splitpoint it branched at, if a child.
    pub trigger: Option<Point>,
    /// The tick its parent first reached `trigger` at, if a child: its branch point
    /// lies just after it, or in its lead-up (before it).
    pub trigger_tick: Option<u64>,
    /// Points this run reached before any earlier run of the exploration (filled when
    /// it is merged).
    pub first_in_exploration: Vec<Point>,
    /// Marks this run reached by its own randomness: after its last branch point (every
    /// mark it reached, for a root), filled when it is merged. What an honest count of
    /// how often an exploration reached a mark counts: a child's prefix reaches what
    /// its parent did.
    pub own_marks: Vec<Point>,
    /// What it costs the turn that planned it, in cost units
    /// (`exploration::run_cost`), when known as it is planned: for a child, the ticks
    /// it runs after its branch point, plus its parent's prefix if it is the first of
    /// its batch (siblings share one run of the prefix: `campaign::batch`) or the
    /// prefix is too short to fork at. `None` for a root (its cost is its run's) and
    /// for a child of a run merged without its cost.
    pub price: Option<u64>,
}

/// A place worth branching at: where a run reached a point new or still rare.
#[derive(Clone, Debug)]
struct Splitpoint {
    /// The run that reached it.
    run: usize,
    /// The point (a mark or a watermark level).
    point: Point,
    /// The tick that first reached it in that run.
    tick: u64,
    /// The tick its children branch at: just after `tick`, or in its lead-up (before
    /// it, after the run's own last branch point).
    branch_tick: u64,
    /// Children it may still make.
    energy: u32,
    /// What its children cost (`None` when the run's cost is unknown).
    price: Option<ChildPrice>,
}

/// What the children of a splitpoint cost, in cost units (`exploration::run_cost`):
/// each runs its parent's ticks after the branch point, and a batch of siblings runs
/// the prefix before it once (`campaign::batch`), or each sibling runs it again when it
/// is too short to fork at ([`FORK_PREFIX_TICKS_MIN`]). The explorer plans as if every
/// batch forks, whatever `--branch-by` says, so the exploration is the same either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ChildPrice {
    /// The parent's cost over the ticks before the branch point.
    prefix: u64,
    /// The parent's cost over the ticks after it.
    suffix: u64,
    /// Whether siblings share one run of the prefix (it is long enough to fork at).
    shared: bool,
}

impl ChildPrice {
    /// Run `cost`'s children branching at `branch_tick`.
    fn of(cost: RunCost, branch_tick: u64) -> Self {
        let suffix = cost.after(branch_tick);
        ChildPrice {
            prefix: cost.units.saturating_sub(suffix),
            suffix,
            shared: branch_tick >= FORK_PREFIX_TICKS_MIN,
        }
    }

    /// What one child costs, its batch's `batch` siblings sharing one prefix: what
    /// another member's turn compares with its own roots' cost.
    fn per_child(self, batch: u64) -> u64 {
        let batch = if self.shared { batch.max(1) } else { 1 };
        self.suffix.saturating_add(self.prefix / batch)
    }

    /// What a child costs the turn that plans it: the prefix is paid by a batch's
    /// first child (or by every child, when not shared).
    fn charged(self, first_in_batch: bool) -> u64 {
        if first_in_batch || !self.shared {
            self.suffix.saturating_add(self.prefix)
        } else {
            self.suffix
        }
    }
}

/// What a merged run cost: the price of its children (`ChildPrice`) and
/// of its member's roots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunCost {
    /// Its work in deterministic units (`exploration::run_cost`).
    pub units: u64,
    /// The ticks it ran.
    pub ticks: u64,
}

impl RunCost {
    /// The part of the cost after `tick`, in proportion to the ticks.
    fn after(self, tick: u64) -> u64 {
        let left = u128::from(self.ticks.saturating_sub(tick));
        u64::try_from(u128::from(self.units) * left / u128::from(self.ticks.max(1))).unwrap_or(u64::MAX)
    }
}

/// The state of one exploration: every run planned so far and where to branch next.
#[derive(Debug)]
pub struct Explorer {
    /// Runs the exploration may make in all.
    budget: u64,
    /// Per member (sub-campaign sharing the exploration): roots available (its
    /// planned runs), and the next of them to plan.
    roots: Vec<u64>,
    next_root: Vec<u64>,
    /// Every run planned, in plan order (merged or not).
    runs: Vec<ExploreRun>,
    /// Runs merged so far, per point: how many reached it by their own randomness (after
    /// their last branch point; a child's prefix reaches what its parent did, which is
    /// no news): what rarity is measured by.
    reached_fresh: [u64; POINTS],
    splitpoints: Vec<Splitpoint>,
    /// The points a directed exploration searches for (`--target-marks`; empty: none).
    targets: Vec<Point>,
    /// Per run merged, how many of the targets it reached (prefix included).
    targets_reached: Vec<usize>,
    /// Per member: runs planned in its turns, and children among them (kept, not
    /// counted at each plan: a night plans thousands).
    runs_planned: Vec<u64>,
    children_planned: Vec<u64>,
    /// Per member: the cost of the runs planned in its turns, and of the children among
    /// them, as priced when planned (a root at its member's mean root cost so far;
    /// each run at 1 before any cost is known): what the children's share bounds, so a
    /// turn's children take at most their share of its work, not of its count of
    /// runs. (Counted in runs, a member with cheap roots spent most of its work on
    /// other members' dear children: the metadata line made 75 roots in 2.5 minutes of
    /// the exploring nightly against plain's 591, stop 64.)
    cost_planned: Vec<u64>,
    children_cost_planned: Vec<u64>,
    /// Children made so far per (run, tick) they branch at: the next one's salt is
    /// this plus one.
    children_at: std::collections::BTreeMap<(usize, u64), u64>,
    /// Per member: the splitpoint its turn's last child was planned from (what
    /// [`Explorer::plan_sibling_for`] plans more of).
    last_split: Vec<Option<usize>>,
    /// Per member: its merged roots' summed cost and count (what a child of another
    /// member's run may cost in its turn: [`Explorer::mean_root_cost`]).
    root_cost: Vec<(u64, u64)>,
    /// Per member: children of hazards planned in its turns so far (whose turn the next batch is:
    /// a hazard's or the rarest splitpoint's, see [`EXPLORE_HAZARD_CHILDREN_ONE_IN`]).
    hazard_children: Vec<u64>,
}

impl Explorer {
    /// An exploration of one sub-campaign over `roots` planned runs that may make
    /// `budget` runs in all.
    pub fn new(roots: u64, budget: u64) -> Self {
        Self::directed(vec![roots], budget, Vec::new())
    }

    /// An exploration shared by sub-campaigns (members) with `roots[m]` planned runs
    /// each, that may make `budget` runs in all, and searches for runs reaching every
    /// point of `targets` (none: a plain exploration): it branches first from the runs
    /// that reached the most of them (then rarest point first, as any exploration).
    pub fn directed(roots: Vec<u64>, budget: u64, targets: Vec<Point>) -> Self {
        let members = roots.len();
        debug_assert!(members > 0, "an exploration has a sub-campaign");
        Self {
            budget,
            roots,
            next_root: vec![0; members],
            runs: Vec::new(),
            reached_fresh: [0; POINTS],
            splitpoints: Vec::new(),
            targets,
            targets_reached: Vec::new(),
            runs_planned: vec![0; members],
            children_planned: vec![0; members],
            cost_planned: vec![0; members],
            children_cost_planned: vec![0; members],
            last_split: vec![None; members],
            hazard_children: vec![0; members],
            root_cost: vec![(0, 0); members],
            children_at: std::collections::BTreeMap::new(),
        }
    }

    /// The points a directed exploration searches for (empty: none).
    pub fn targets(&self) -> &[Point] {
        &self.targets
    }

    /// Whether merged run `index` reached every target (false with no targets).
    pub fn reached_targets(&self, index: usize) -> bool {
        !self.targets.is_empty() && self.targets_reached.get(index) == Some(&self.targets.len())
    }

    /// Per member: runs planned so far.
    pub fn runs_planned(&self) -> &[u64] {
        &self.runs_planned
    }

    /// Every run planned so far, in plan order.
    pub fn runs(&self) -> &[ExploreRun] {
        &self.runs
    }

    /// Runs the budget still allows.
    pub fn budget_left(&self) -> u64 {
        self.budget.saturating_sub(self.runs.len() as u64)
    }

    /// Plan the next run of an exploration of one sub-campaign
    /// ([`Explorer::plan_next_for`] its only member).
    pub fn plan_next(&mut self) -> Option<usize> {
        self.plan_next_for(0)
    }

    /// Plan the next run in member `member`'s turn (its index into [`Explorer::runs`]):
    /// a child of the splitpoint with energy whose point is rarest (over the whole
    /// exploration) among those it may branch (its own runs', and other members' whose
    /// child it can afford: see `rarest_splitpoint_with_energy`), while the children of
    /// the member's turns are under their share ([`EXPLORE_CHILDREN_SHARE_PERCENT_MAX`]
    /// of the work of its turns' runs, as priced when planned) or none of its roots is
    /// left; else its next root. `None` when the budget is spent or the member has
    /// nothing left to run for now.
    pub fn plan_next_for(&mut self, member: usize) -> Option<usize> {
        if self.budget_left() == 0 {
            return None;
        }
        let roots_left = self.next_root[member] < self.roots[member];
        let hazard_turn = self.hazard_children[member] * EXPLORE_HAZARD_CHILDREN_ONE_IN < self.children_planned[member];
        let (first, second) = if hazard_turn {
            (SplitClass::Hazard, SplitClass::Rare)
        } else {
            (SplitClass::Rare, SplitClass::Hazard)
        };
        let split = self
            .rarest_splitpoint_with_energy(member, SplitClass::NearMiss)
            .or_else(|| self.rarest_splitpoint_with_energy(member, first))
            .or_else(|| self.rarest_splitpoint_with_energy(member, second));
        // Due if one more child keeps the member's children within their share of its
        // work (this one's included): so while the share is small, a member's first
        // runs are roots.
        let children_due = split.is_some_and(|split| {
            self.within_share(
                member,
                self.charge(split, true),
                self.children_share_percent_for(split),
                0,
            )
        });
        let run = if let Some(split) = split.filter(|_| children_due || !roots_left) {
            self.last_split[member] = Some(split);
            self.child_of(split, member, true)
        } else if roots_left {
            self.last_split[member] = None;
            self.next_root[member] += 1;
            ExploreRun {
                member,
                turn: member,
                root: self.next_root[member] - 1,
                branches: Branches::none(),
                parent: None,
                trigger: None,
                trigger_tick: None,
                first_in_exploration: Vec::new(),
                own_marks: Vec::new(),
                price: None,
            }
        } else {
            return None;
        };
        Some(self.push_planned(run))
    }

    /// Whether member `member`'s children stay within `share` percent of the work of its
    /// turns (and `over` units more) with one more child priced `price`.
    fn within_share(&self, member: usize, price: u64, share: u64, over: u64) -> bool {
        let children = u128::from(self.children_cost_planned[member]) + u128::from(price);
        let all = u128::from(self.cost_planned[member]) + u128::from(price);
        children * 100 <= all * u128::from(share) + u128::from(over) * 100
    }

    /// What the next child of splitpoint `split` costs the turn that plans it
    /// ([`ChildPrice::charged`]; 1, a run, when its parent's cost is unknown).
    fn charge(&self, split: usize, first_in_batch: bool) -> u64 {
        self.splitpoints[split]
            .price
            .map_or(1, |price| price.charged(first_in_batch))
    }

    /// What member `member`'s next root is expected to cost: its roots' mean so far,
    /// else every member's, else 1 (a run: nothing was merged with its cost yet).
    fn root_price(&self, member: usize) -> u64 {
        self.mean_root_cost(member)
            .or_else(|| {
                let (sum, count) = self
                    .root_cost
                    .iter()
                    .fold((0u64, 0u64), |(sum, count), (s, c)| (sum.saturating_add(*s), count + c));
                sum.checked_div(count)
            })
            .unwrap_or(1)
            .max(1)
    }

    /// The share of a member's work its children may take now, in percent: from none
    /// at the start up to [`EXPLORE_CHILDREN_SHARE_PERCENT_MAX`] once
    /// [`EXPLORE_CHILDREN_RAMP_RUNS`] runs are merged (or a sixteenth of a smaller
    /// budget), in proportion. Children put off early are planned once the share
    /// grows: they wait for the map, not lost.
    fn children_share_percent(&self) -> u64 {
        let ramp = EXPLORE_CHILDREN_RAMP_RUNS
            .min(self.budget / EXPLORE_LAG_BUDGET_DIVISOR)
            .max(1);
        let merged = self.targets_reached.len() as u64;
        EXPLORE_CHILDREN_SHARE_PERCENT_MAX * merged.min(ramp) / ramp
    }

    /// The share of a member's work the children of splitpoint `split` may take now:
    /// a near miss's the whole share at once ([`NEAR_MISS_MARKS`]), any other's as
    /// the ramp says ([`Explorer::children_share_percent`]).
    fn children_share_percent_for(&self, split: usize) -> u64 {
        if SplitClass::of(self.splitpoints[split].point) == SplitClass::NearMiss {
            EXPLORE_CHILDREN_SHARE_PERCENT_MAX
        } else {
            self.children_share_percent()
        }
    }

    /// Plan another child of the splitpoint member `member`'s last run was planned
    /// from, if it was a child and the splitpoint has energy left: the siblings of a
    /// batch, planned together so one worker can make them with one prefix
    /// (`campaign::batch`). A batch may take the member past its children's share by
    /// at most a batch of siblings ([`BATCH_RUNS_MAX`] at a sibling's price) once the
    /// share is whole, and its roots catch up next; while the share grows
    /// ([`EXPLORE_CHILDREN_RAMP_RUNS`]) not at all. `None` otherwise.
    pub fn plan_sibling_for(&mut self, member: usize) -> Option<usize> {
        if self.budget_left() == 0 {
            return None;
        }
        let split = self.last_split[member]?;
        if self.splitpoints[split].energy == 0 {
            return None;
        }
        // Without the bound, a member's first batches (up to 8 children) made early
        // explorations mostly children whatever the ramp said: 50 of the first 112
        // runs (stop 62).
        let share = self.children_share_percent_for(split);
        let price = self.charge(split, false);
        let over_share_max = if share == EXPLORE_CHILDREN_SHARE_PERCENT_MAX {
            (BATCH_RUNS_MAX as u64).saturating_mul(price)
        } else {
            0
        };
        if !self.within_share(member, price, share, over_share_max) {
            return None;
        }
        let run = self.child_of(split, member, false);
        Some(self.push_planned(run))
    }

    /// Add `run` to the plan and to the counts of the member whose turn planned it
    /// (runs, children, children of hazards, and their work as priced); its index into
    /// [`Explorer::runs`].
    fn push_planned(&mut self, run: ExploreRun) -> usize {
        let member = run.turn;
        let price = match run.parent {
            None => self.root_price(run.member),
            Some(_) => run.price.unwrap_or(1),
        };
        self.cost_planned[member] = self.cost_planned[member].saturating_add(price);
        if run.parent.is_some() {
            self.children_cost_planned[member] = self.children_cost_planned[member].saturating_add(price);
        }
        self.runs_planned[member] += 1;
        self.children_planned[member] += u64::from(run.parent.is_some());
        self.hazard_children[member] += u64::from(run.trigger.is_some_and(is_hazard));
        self.runs.push(run);
        self.runs.len() - 1
    }

    /// The splitpoint to branch next: the one whose point the fewest merged runs
    /// reached by their own randomness; among equals, the one found by the latest run
    /// (a point first reached after a thousand runs is rarer than one the first run
    /// reached, and a long exploration must not starve its late finds behind its early
    /// ones), then the earliest found in that run.
    /// Among the splitpoints of class `class` only ([`SplitClass`]).
    ///
    /// Among member `member`'s own runs' splitpoints, and every other member's whose
    /// child costs no more than the member's own roots do on average (its suffix and
    /// its share of a batch's prefix, a batch being as many siblings as the splitpoint
    /// has energy for, up to [`BATCH_RUNS_MAX`]: [`ChildPrice::per_child`]; priced by
    /// its suffix alone, the metadata line's 18 ms roots afforded children late in
    /// 20,000-tick runs whose batches ran 300 ms of prefix, stop 64): a rare point
    /// found by a line whose runs are few
    /// (long runs, a small weight) is as rare as one the busiest line found, and with
    /// each member branching only its own runs, on the nightly the rarest marks of a
    /// 20,000-tick line making 14 runs in 2.5 minutes got no children at all (stop 63).
    /// The member whose turn it is pays for the child ([`ExploreRun::turn`]), so the
    /// shares of the work stay as the weights say. Any splitpoint at any cost was too
    /// much: every member's children went to the 200,000-tick soak line's rare points,
    /// and the exploration made a fifth of its runs (stop 63, as in stop 55).
    fn rarest_splitpoint_with_energy(&self, member: usize, class: SplitClass) -> Option<usize> {
        let affordable = self.mean_root_cost(member);
        (0..self.splitpoints.len())
            .filter(|&index| {
                let split = &self.splitpoints[index];
                split.energy > 0
                    && SplitClass::of(split.point) == class
                    && (self.runs[split.run].member == member
                        || affordable.zip(split.price).is_some_and(|(mean, price)| {
                            price.per_child(u64::from(split.energy).min(BATCH_RUNS_MAX as u64)) <= mean
                        }))
            })
            .min_by_key(|&index| {
                let split = &self.splitpoints[index];
                (
                    std::cmp::Reverse(self.targets_reached[split.run]),
                    self.reached_fresh[split.point.index()],
                    std::cmp::Reverse(split.run),
                    index,
                )
            })
    }

    /// The next child of splitpoint `split`, spending one of its energy, planned in
    /// member `turn`'s turn (who pays for it), the first of its batch or a sibling.
    fn child_of(&mut self, split: usize, turn: usize, first_in_batch: bool) -> ExploreRun {
        let price = self.splitpoints[split].price.map(|price| price.charged(first_in_batch));
        let point = &mut self.splitpoints[split];
        point.energy -= 1;
        // Salts count the children of the run at that branch tick, whichever
        // splitpoint made them: points first reached in the same tick make splitpoints
        // at the same place (and lead-ups may meet), and a salt per splitpoint gave
        // their children the same timelines.
        let salt = self.children_at.entry((point.run, point.branch_tick)).or_insert(0);
        *salt += 1;
        let parent = &self.runs[point.run];
        let branch = BranchPoint {
            tick: point.branch_tick,
            salt: *salt,
        };
        ExploreRun {
            member: parent.member,
            turn,
            root: parent.root,
            branches: parent
                .branches
                .then(branch)
                .expect("a splitpoint lies after its run's last branch point"),
            parent: Some(point.run),
            trigger: Some(point.point),
            trigger_tick: Some(point.tick),
            first_in_exploration: Vec::new(),
            own_marks: Vec::new(),
            price,
        }
    }

    /// Merge run `index`'s result: the points it reached with their first ticks (in
    /// the order reached). Merge runs in plan order: that order is what makes the
    /// exploration deterministic.
    ///
    /// A point reached after the run's last branch point (by the run's own
    /// randomness) makes a splitpoint when no run reached it so before
    /// ([`children_for_new`] children), or when it is a mark still rare
    /// ([`children_for_rare`] children): rare places get more tries from more runs'
    /// states, common ones none.
    pub fn merge(&mut self, index: usize, first_reached: &[(Point, u64)]) {
        self.merge_costed(index, first_reached, None);
    }

    /// [`Explorer::merge`], knowing what the run cost: its splitpoints' children are
    /// priced (`ChildPrice`), so other members' turns may branch them when
    /// cheap enough, and a root's cost counts toward its member's mean.
    pub fn merge_costed(&mut self, index: usize, first_reached: &[(Point, u64)], cost: Option<RunCost>) {
        if let Some(cost) = cost
            && self.runs[index].parent.is_none()
        {
            let (sum, count) = &mut self.root_cost[self.runs[index].member];
            *sum = sum.saturating_add(cost.units);
            *count += 1;
        }
        let price = |branch_tick: u64| cost.map(|cost| ChildPrice::of(cost, branch_tick));
        let last_branch_tick = self.runs[index].branches.points().last().map_or(0, |point| point.tick);
        let room = self.runs[index].branches.len() < crate::timeline::BRANCH_POINTS_MAX;
        let mut new_points = Vec::new();
        let mut own_marks = Vec::new();
        for &(point, tick) in first_reached {
            // A point first reached before this run's last branch point was reached by
            // the prefix its parent ran too: no news, and its parent's splitpoint.
            if tick < last_branch_tick {
                continue;
            }
            if point.as_mark().is_some() {
                own_marks.push(point);
            }
            let fresh = self.reached_fresh[point.index()];
            if fresh == 0 {
                new_points.push(point);
            }
            let class = SplitClass::of(point);
            let at_least = class.children_at_least(fresh, index as u64);
            let energy = match (fresh, point.as_mark()) {
                (0, _) => children_for_new(index).max(at_least),
                // A watermark splits where it improves (a level no run reached before),
                // not where a run reaches a known depth again: a depth is no path, and
                // re-reaching one took more than a third of the children on the
                // nightly (2026-12-06) from the rare marks, the protocol's rare paths.
                (_, None) => 0,
                (fresh, Some(_)) => children_for_rare(fresh, index as u64).max(at_least),
            };
            if energy > 0 && room {
                // The lead-up branches after this run's own last branch point (a
                // timeline's points are in tick order), and only where that is before
                // the reach; else the whole energy goes on from the reach.
                let lead_up_tick = tick.saturating_sub(EXPLORE_LEAD_UP_TICKS).max(last_branch_tick + 1);
                let lead_up = if lead_up_tick <= tick {
                    lead_up_energy(energy, class)
                } else {
                    0
                };
                self.splitpoints.push(Splitpoint {
                    run: index,
                    point,
                    tick,
                    branch_tick: tick + 1,
                    energy: energy - lead_up,
                    price: price(tick + 1),
                });
                if lead_up > 0 {
                    self.splitpoints.push(Splitpoint {
                        run: index,
                        point,
                        tick,
                        branch_tick: lead_up_tick,
                        energy: lead_up,
                        price: price(lead_up_tick),
                    });
                }
            }
            self.reached_fresh[point.index()] += 1;
        }
        if !new_points.is_empty()
            && let Some(parent) = self.runs[index].parent
        {
            // A productive child: its splitpoint earns more children.
            let trigger = self.runs[index].trigger;
            if let Some(split) = self.splitpoints.iter_mut().find(|split| {
                split.run == parent && Some(split.point) == trigger && split.branch_tick == last_branch_tick
            }) {
                split.energy += EXPLORE_CHILDREN_MORE;
            }
        }
        self.runs[index].first_in_exploration = new_points;
        self.runs[index].own_marks = own_marks;
        debug_assert_eq!(self.targets_reached.len(), index, "runs are merged in plan order");
        let targets = self
            .targets
            .iter()
            .filter(|target| first_reached.iter().any(|(point, _)| point == *target))
            .count();
        self.targets_reached.push(targets);
    }

    /// The mean cost of member `member`'s merged roots (none before one is merged, or
    /// when merged without costs).
    fn mean_root_cost(&self, member: usize) -> Option<u64> {
        let (sum, count) = self.root_cost[member];
        sum.checked_div(count)
    }

    /// Splitpoints found so far.
    pub fn splitpoints(&self) -> usize {
        self.splitpoints.len()
    }

    /// Points first reached by a child (a branched run), not by any root before it.
    pub fn first_reached_by_branching(&self) -> Vec<Point> {
        self.runs
            .iter()
            .filter(|run| run.parent.is_some())
            .flat_map(|run| run.first_in_exploration.iter().copied())
            .collect()
    }
}

#[cfg(test)]
#[path = "explore_tests.rs"]
mod tests;
