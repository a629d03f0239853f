//! `campaign --explore`: spend a campaign's runs where they find something new.
//!
//! A plain campaign runs every seed from scratch, and most runs revisit what earlier
//! runs already reached. An exploration instead branches runs at the moments they
//! reach something rare. A run that reaches a coverage point (a mark, or a
//! watermark's level: the highest view, the most ops behind, see `cluster::coverage`)
//! that no earlier run of the exploration reached, or a mark still rare
//! ([`children_for_rare`]), makes that (run, tick) a *splitpoint*; its children are the
//! same run with one more branch point just after that tick (see [`crate::timeline`]):
//! the same prefix, fresh randomness from there on. Rarity counts only the runs that
//! reached a point by their own randomness (after their last branch point): a child's
//! prefix reaches whatever its parent did, which is no news.
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
//! their own randomness; among equals, the latest find), a splitpoint's children
//! together (up to a batch, made with one prefix: `campaign::batch`), at most half the
//! runs while roots are left (checked as a batch starts); roots fill the rest.
//!
//! One map for the whole campaign: every exploring sub-campaign of a spec (those that
//! search for the same `--target-marks`: on the nightly, all) shares one
//! [`Exploration`](super::exploration::Exploration), so a point is rare or common by
//! all their runs, not rediscovered by each. The members take turns by weight, in a
//! deterministic measure of work ([`run_cost`](super::exploration::run_cost)), and
//! each spends its turn on its own rarest splitpoint or its next root: a member whose
//! rare points lie in long runs spends its own share on them. The campaign's
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

use crate::timeline::{BranchPoint, Branches};

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

/// Children are at most this share of the runs planned, in percent (while roots are
/// left): early in an exploration nearly every point is new, and without a cap the
/// first few roots' descendants would take a short (time-limited) exploration whole;
/// fresh roots find what no branch of those can. Half: in a 1,800-run exploration
/// without the cap, children were 45% of the runs.
pub const EXPLORE_CHILDREN_SHARE_PERCENT_MAX: u64 = 50;

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

/// One run of an exploration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExploreRun {
    /// The sub-campaign it belongs to: an index into the exploration's members (0 when
    /// one sub-campaign explores alone).
    pub member: usize,
    /// The root it descends from: its position in its sub-campaign's planned runs.
    pub root: u64,
    /// Its branch points (none for a root).
    pub branches: Branches,
    /// The run it branched from (an index into [`Explorer::runs`]), if a child.
    pub parent: Option<usize>,
    /// The point whose reach made the splitpoint it branched at, if a child.
    pub trigger: Option<Point>,
    /// Points this run reached before any earlier run of the exploration (filled when
    /// it is merged).
    pub first_in_exploration: Vec<Point>,
    /// Marks this run reached by its own randomness: after its last branch point (every
    /// mark it reached, for a root), filled when it is merged. What an honest count of
    /// how often an exploration reached a mark counts: a child's prefix reaches what
    /// its parent did.
    pub own_marks: Vec<Point>,
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
    /// Children it may still make.
    energy: u32,
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
    /// Per member: runs planned, and children among them (kept, not counted at each
    /// plan: a night plans thousands).
    runs_planned: Vec<u64>,
    children_planned: Vec<u64>,
    /// Children made so far per (run, tick) they branch after: the next one's salt
    /// is this plus one.
    children_at: std::collections::BTreeMap<(usize, u64), u64>,
    /// Per member: the splitpoint its last child was planned from (what
    /// [`Explorer::plan_sibling_for`] plans more of).
    last_split: Vec<Option<usize>>,
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
            last_split: vec![None; members],
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

    /// Plan the next run of member `member` (its index into [`Explorer::runs`]): a
    /// child of the member's splitpoint with energy whose point is rarest (over the
    /// whole exploration), while the member's children are under their share
    /// ([`EXPLORE_CHILDREN_SHARE_PERCENT_MAX`] of its runs) or none of its roots is
    /// left; else its next root. `None` when the budget is spent or the member has
    /// nothing left to run for now.
    pub fn plan_next_for(&mut self, member: usize) -> Option<usize> {
        if self.budget_left() == 0 {
            return None;
        }
        let children_due =
            self.children_planned[member] * 100 < (self.runs_planned[member] + 1) * EXPLORE_CHILDREN_SHARE_PERCENT_MAX;
        let roots_left = self.next_root[member] < self.roots[member];
        let split = self.rarest_splitpoint_with_energy(member);
        let run = if let Some(split) = split.filter(|_| children_due || !roots_left) {
            self.last_split[member] = Some(split);
            self.child_of(split)
        } else if roots_left {
            self.last_split[member] = None;
            self.next_root[member] += 1;
            ExploreRun {
                member,
                root: self.next_root[member] - 1,
                branches: Branches::none(),
                parent: None,
                trigger: None,
                first_in_exploration: Vec::new(),
                own_marks: Vec::new(),
            }
        } else {
            return None;
        };
        self.runs_planned[member] += 1;
        self.children_planned[member] += u64::from(run.parent.is_some());
        self.runs.push(run);
        Some(self.runs.len() - 1)
    }

    /// Plan another child of the splitpoint member `member`'s last run was planned
    /// from, if it was a child and the splitpoint has energy left: the siblings of a
    /// batch, planned together so one worker can make them with one prefix
    /// (`campaign::batch`). The children's share is checked on the batch's first child
    /// only: a batch may take the member past it, and its roots catch up next.
    /// `None` otherwise.
    pub fn plan_sibling_for(&mut self, member: usize) -> Option<usize> {
        if self.budget_left() == 0 {
            return None;
        }
        let split = self.last_split[member]?;
        if self.splitpoints[split].energy == 0 {
            return None;
        }
        let run = self.child_of(split);
        self.runs_planned[member] += 1;
        self.children_planned[member] += 1;
        self.runs.push(run);
        Some(self.runs.len() - 1)
    }

    /// The splitpoint to branch next: the one whose point the fewest merged runs
    /// reached by their own randomness; among equals, the one found by the latest run
    /// (a point first reached after a thousand runs is rarer than one the first run
    /// reached, and a long exploration must not starve its late finds behind its early
    /// ones), then the earliest found in that run.
    fn rarest_splitpoint_with_energy(&self, member: usize) -> Option<usize> {
        (0..self.splitpoints.len())
            .filter(|&index| {
                let split = &self.splitpoints[index];
                split.energy > 0 && self.runs[split.run].member == member
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

    /// The next child of splitpoint `split`, spending one of its energy.
    fn child_of(&mut self, split: usize) -> ExploreRun {
        let point = &mut self.splitpoints[split];
        point.energy -= 1;
        // Salts count the children of the run at that tick, whichever splitpoint made
        // them: points first reached in the same tick make splitpoints at the same
        // place, and a salt per splitpoint gave their children the same timelines.
        let salt = self.children_at.entry((point.run, point.tick)).or_insert(0);
        *salt += 1;
        let parent = &self.runs[point.run];
        let branch = BranchPoint {
            tick: point.tick + 1,
            salt: *salt,
        };
        ExploreRun {
            member: parent.member,
            root: parent.root,
            branches: parent
                .branches
                .then(branch)
                .expect("a splitpoint lies after its run's last branch point"),
            parent: Some(point.run),
            trigger: Some(point.point),
            first_in_exploration: Vec::new(),
            own_marks: Vec::new(),
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
            let energy = match (fresh, point.as_mark()) {
                (0, _) => children_for_new(index),
                // A watermark splits where it improves (a level no run reached before),
                // not where a run reaches a known depth again: a depth is no path, and
                // re-reaching one took more than a third of the children on the
                // nightly (2026-12-06) from the rare marks, the protocol's rare paths.
                (_, None) => 0,
                (fresh, Some(_)) => children_for_rare(fresh, index as u64),
            };
            if energy > 0 && room {
                self.splitpoints.push(Splitpoint {
                    run: index,
                    point,
                    tick,
                    energy,
                });
            }
            self.reached_fresh[point.index()] += 1;
        }
        if !new_points.is_empty()
            && let Some(parent) = self.runs[index].parent
        {
            // A productive child: its splitpoint earns more children.
            let trigger = self.runs[index].trigger;
            if let Some(split) = self
                .splitpoints
                .iter_mut()
                .find(|split| split.run == parent && Some(split.point) == trigger)
            {
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
mod tests {
    use super::*;

    /// Plan up to `size` runs in a row, as the coordinator does between merges.
    fn plan(explorer: &mut Explorer, size: usize) -> Vec<usize> {
        std::iter::from_fn(|| explorer.plan_next()).take(size).collect()
    }

    use cluster::coverage::Mark;

    const A: Point = Point::mark(Mark::CheckpointTaken);
    const B: Point = Point::mark(Mark::TransferStarted);
    const C: Point = Point::mark(Mark::ViewChangeEscalated);

    #[test]
    fn a_new_point_earns_children_branched_just_after_it_a_rare_mark_more_and_a_common_one_none() {
        let mut explorer = Explorer::new(20, 40);
        assert_eq!(
            plan(&mut explorer, 6),
            vec![0, 1, 2, 3, 4, 5],
            "roots first: nothing to branch yet"
        );
        explorer.merge(0, &[(A, 100), (C, 10)]);
        explorer.merge(1, &[(B, 20), (C, 15)]);
        for index in 2..5 {
            explorer.merge(index, &[(C, 12)]);
        }
        explorer.merge(5, &[(A, 70), (C, 11)]);
        // A: new in run 0 (1 child), rare in run 5 (one run of five); B: new in run 1
        // (2 children); C: new in run 0, then reached by every run: common.
        assert_eq!(children_for_new(0), 1);
        assert_eq!(children_for_new(1), 2);
        assert_eq!(children_for_rare(1, 5), 6);
        assert_eq!(explorer.splitpoints(), 4, "A twice, B, and C once (new)");
        let batch = plan(&mut explorer, 13);
        let children: Vec<(u64, String)> = batch
            .iter()
            .map(|&index| &explorer.runs()[index])
            .filter(|run| run.parent.is_some())
            .map(|child| (child.root, child.branches.to_string()))
            .collect();
        // Rarest first: B (one reach), then A (two reaches), the latest find first,
        // then C (six).
        let expected: Vec<(u64, String)> = [(1, "21", 2), (5, "71", 6), (0, "101", 1), (0, "11", 1)]
            .into_iter()
            .flat_map(|(root, tick, children)| (1..=children).map(move |salt| (root, format!("{tick}:{salt}"))))
            .collect();
        assert_eq!(children, expected, "the splitpoints' children, rarest and latest first");
        let roots: Vec<u64> = batch
            .iter()
            .map(|&index| &explorer.runs()[index])
            .filter(|run| run.parent.is_none())
            .map(|run| run.root)
            .collect();
        assert_eq!(
            roots,
            vec![6, 7, 8],
            "roots in order between them, children at most half"
        );
    }

    #[test]
    fn a_rare_marks_reach_earns_more_children_the_rarer_it_is() {
        assert_eq!(children_for_rare(1, 1), 0, "reached by every run so far: common");
        assert_eq!(children_for_rare(1, 5), 6);
        assert_eq!(children_for_rare(2, 100), 3);
        assert_eq!(children_for_rare(5, 100), 2);
        assert_eq!(children_for_rare(6, 100), 0, "six runs reached it: common");
        assert_eq!(children_for_rare(1, 10_000), EXPLORE_CHILDREN_RARE_MAX);
        assert_eq!(
            children_for_rare(100, 10_000),
            5,
            "1% of the runs: a fifth of the 5% bound"
        );
        assert_eq!(children_for_rare(250, 10_000), 2);
        assert_eq!(children_for_rare(500, 10_000), 0, "5%: common");
    }

    #[test]
    fn children_take_at_most_their_share_while_roots_are_left() {
        let mut explorer = Explorer::new(1_000, 1_000);
        let mut children = 0;
        for index in 0..400 {
            let planned = explorer.plan_next().expect("the budget lasts");
            assert_eq!(planned, index);
            // Every root reaches a point no run reached before: endless news.
            let point = Point::level(cluster::coverage::Watermark::View, index % 16);
            let mark = Point::mark(Mark::ALL[index % Mark::ALL.len()]);
            explorer.merge(index, &[(point, 10 + index as u64), (mark, 20 + index as u64)]);
            children += usize::from(explorer.runs()[index].parent.is_some());
            assert!(
                children * 100 <= (index + 1) * EXPLORE_CHILDREN_SHARE_PERCENT_MAX as usize + 100,
                "{children} children in {} runs",
                index + 1
            );
        }
        assert!(children >= 150, "children fill their share: {children}");
    }

    #[test]
    fn a_childs_prefix_is_no_news_and_a_watermark_level_is_a_point_like_a_mark() {
        use cluster::coverage::Watermark;
        let level = Point::level(Watermark::View, 3);
        // One root: once it ran, only children are planned.
        let mut explorer = Explorer::new(1, 20);
        plan(&mut explorer, 1);
        explorer.merge(0, &[(level, 40)]);
        let children = plan(&mut explorer, EXPLORE_CHILDREN_FIRST as usize);
        for &index in &children {
            // Each child reached the level in the prefix it shares with its parent.
            explorer.merge(index, &[(level, 40)]);
        }
        assert_eq!(explorer.splitpoints(), 1, "a prefix's reach makes no splitpoint");
        assert!(explorer.first_reached_by_branching().is_empty());
        assert_eq!(
            explorer.rarest_splitpoint_with_energy(0),
            None,
            "the level's splitpoint spent its energy"
        );
    }

    #[test]
    fn a_productive_child_earns_its_splitpoint_more_and_a_barren_one_does_not() {
        // One root: once it ran, only children are planned.
        let mut explorer = Explorer::new(1, 1_000);
        plan(&mut explorer, 1);
        explorer.merge(0, &[(A, 100)]);
        let first = plan(&mut explorer, EXPLORE_CHILDREN_FIRST as usize);
        // One child finds B (new): A's splitpoint earns more; B is a splitpoint of its own.
        explorer.merge(first[0], &[(A, 100), (B, 400)]);
        for &index in &first[1..] {
            explorer.merge(index, &[(A, 100)]);
        }
        assert_eq!(explorer.first_reached_by_branching(), vec![B]);
        let next = plan(&mut explorer, 100);
        let triggers: Vec<Option<Point>> = next.iter().map(|&index| explorer.runs()[index].trigger).collect();
        let from_b = triggers.iter().filter(|trigger| **trigger == Some(B)).count();
        let from_a = triggers.iter().filter(|trigger| **trigger == Some(A)).count();
        assert_eq!(from_b, children_for_new(first[0]) as usize, "B's splitpoint, new");
        assert_eq!(from_a, EXPLORE_CHILDREN_MORE as usize, "A earned more once");
        let grandchild = next
            .iter()
            .map(|&index| &explorer.runs()[index])
            .find(|run| run.trigger == Some(B))
            .expect("a child of B");
        assert_eq!(
            grandchild.branches.to_string(),
            "101:1,401:1",
            "a child's child keeps its branch"
        );
        assert_eq!(next.len(), from_a + from_b, "no root is left, so children only");
        // Barren: nothing new from here on (children reach only their prefix's A), so
        // once the energy is spent nothing is left to plan.
        for &index in &next {
            explorer.merge(index, &[(A, 100)]);
        }
        assert!(plan(&mut explorer, 10).is_empty(), "a barren splitpoint earns nothing");
    }

    #[test]
    fn a_childs_siblings_are_planned_with_it_while_its_splitpoint_has_energy() {
        let mut explorer = Explorer::new(10, 100);
        plan(&mut explorer, 2);
        explorer.merge(0, &[(A, 100)]);
        explorer.merge(1, &[(B, 200)]);
        assert_eq!(explorer.plan_sibling_for(0), None, "no child planned yet");
        let child = explorer.plan_next_for(0).expect("a child");
        let trigger = explorer.runs()[child].trigger;
        let energy = children_for_new(1) as usize;
        assert_eq!(trigger, Some(B), "B is the latest find of two new points");
        let siblings: Vec<usize> = std::iter::from_fn(|| explorer.plan_sibling_for(0)).collect();
        assert_eq!(siblings.len(), energy - 1, "the rest of B's energy");
        for &sibling in &siblings {
            let run = &explorer.runs()[sibling];
            assert_eq!(run.trigger, Some(B));
            assert_eq!(run.parent, explorer.runs()[child].parent);
        }
        let of_a = explorer.plan_next_for(0).expect("A's child");
        assert_eq!(explorer.runs()[of_a].trigger, Some(A));
        assert_eq!(
            explorer.plan_sibling_for(0),
            None,
            "A's one child is planned: no energy left"
        );
        let root = explorer.plan_next_for(0).expect("a root: children are at half");
        assert!(explorer.runs()[root].parent.is_none());
        assert_eq!(explorer.plan_sibling_for(0), None, "a root has no siblings");
    }

    #[test]
    fn points_first_reached_in_one_tick_give_children_with_distinct_timelines() {
        let mut explorer = Explorer::new(1, 20);
        plan(&mut explorer, 1);
        // Two marks new in the same tick: two splitpoints at one place.
        explorer.merge(0, &[(A, 100), (B, 100)]);
        assert_eq!(explorer.splitpoints(), 2);
        let children = plan(&mut explorer, 10);
        let timelines: std::collections::BTreeSet<String> = children
            .iter()
            .map(|&index| explorer.runs()[index].branches.to_string())
            .collect();
        assert!(children.len() >= 2, "both splitpoints branch");
        assert_eq!(
            timelines.len(),
            children.len(),
            "every child its own future: {timelines:?}"
        );
    }

    #[test]
    fn a_point_found_late_earns_more_children_than_one_the_first_runs_found() {
        assert_eq!(children_for_new(0), 1, "the first run's points are likely common");
        assert_eq!(children_for_new(1), 2);
        assert_eq!(children_for_new(3), 3);
        assert_eq!(children_for_new(7), EXPLORE_CHILDREN_FIRST);
        assert_eq!(children_for_new(100_000), EXPLORE_CHILDREN_FIRST);
    }

    #[test]
    fn members_share_one_map_and_each_branches_its_own_runs() {
        let mut explorer = Explorer::directed(vec![5, 5], 20, Vec::new());
        let first = explorer.plan_next_for(0).expect("a root of member 0");
        let second = explorer.plan_next_for(1).expect("a root of member 1");
        assert_eq!(
            [&explorer.runs()[first], &explorer.runs()[second]].map(|run| (run.member, run.root)),
            [(0, 0), (1, 0)],
            "each member's first root"
        );
        explorer.merge(first, &[(A, 100)]);
        explorer.merge(second, &[(A, 200), (B, 300)]);
        assert_eq!(explorer.runs()[first].first_in_exploration, vec![A]);
        assert_eq!(
            explorer.runs()[second].first_in_exploration,
            vec![B],
            "A was no news to member 1: member 0 found it"
        );
        for (member, parent) in [(0, first), (1, second)] {
            let child = explorer.plan_next_for(member).expect("a child");
            let child = &explorer.runs()[child];
            assert_eq!(child.parent, Some(parent), "a member branches its own runs");
            assert_eq!((child.member, child.root), (member, 0), "and the child is its member's");
        }
    }

    #[test]
    fn the_lag_depends_on_the_budget_alone_and_a_small_budget_still_steers() {
        assert_eq!(lag_runs(12), 1);
        assert_eq!(lag_runs(160), 10);
        assert_eq!(lag_runs(100_000), EXPLORE_LAG_RUNS_MAX);
    }

    #[test]
    fn the_budget_counts_every_run_and_the_plan_is_a_function_of_the_results() {
        let plan = |results: &dyn Fn(usize) -> Vec<(Point, u64)>| {
            let mut explorer = Explorer::new(50, 40);
            let mut order = Vec::new();
            loop {
                let batch = plan(&mut explorer, 3);
                if batch.is_empty() {
                    break;
                }
                for index in batch {
                    explorer.merge(index, &results(index));
                    order.push(explorer.runs()[index].clone());
                }
            }
            order
        };
        let results = |index: usize| match index % 5 {
            0 => vec![(A, 10 + index as u64)],
            1 => vec![(B, 20), (C, 30 + index as u64)],
            _ => vec![],
        };
        let first = plan(&results);
        assert_eq!(first.len(), 40, "exactly the budget");
        assert_eq!(first, plan(&results), "same results, same exploration");
        assert!(first.iter().any(|run| run.parent.is_some()), "it branched");
    }
}
