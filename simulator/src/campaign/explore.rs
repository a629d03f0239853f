//! `campaign --explore`: spend a campaign's runs where they find something new.
//!
//! A plain campaign runs every seed from scratch, and most runs revisit what earlier
//! runs already reached. An exploration instead branches runs at the moments they first
//! reach something rare: when a run reaches a coverage point (a mark, or a watermark's
//! level: the highest view, the most ops behind, see `cluster::coverage`) no earlier
//! run of the exploration reached, or one still rare (reached by fewer than
//! [`EXPLORE_RARE_RUNS_MAX`] runs, or [`EXPLORE_RARE_PER_MILLE`] per thousand of
//! them), that (run, tick) becomes a *splitpoint*, and its children are the same run
//! with one more branch point just after that tick (see [`crate::timeline`]): the same
//! prefix, fresh randomness from there on. Rarity counts only the runs that reached a
//! point by their own randomness (after their last branch point): a child's prefix
//! reaches whatever its parent did, which is no news.
//!
//! Budget (energy, in runs): the exploration makes exactly as many runs as its budget
//! allows, roots (the sub-campaign's planned runs, in their order) and children
//! together. A new point's splitpoint earns up to [`EXPLORE_CHILDREN_FIRST`] children
//! (fewer if the exploration's first runs found it: [`children_for_new`]), a rare
//! one's [`EXPLORE_CHILDREN_RARE`]; each child that reaches a point new to the
//! exploration earns its splitpoint [`EXPLORE_CHILDREN_MORE`] more, and a splitpoint
//! whose children find nothing new stops earning (what it did not spend stays with the
//! roots). Children go first, rarest point first (the point fewest runs reached by
//! their own randomness; among equals, the latest find), at most half the runs while
//! roots are left; roots fill the rest.
//!
//! Determinism: results are merged in plan order, and run `k` is planned right after
//! run `k - lag` is merged, where the lag is a function of the budget alone
//! ([`lag_runs`]). So the plan of every run depends only on the results of the runs
//! before it, never on which worker finished first: given the seed range and the
//! budget the exploration is the same on any machine and any `--jobs`, except that a
//! wall-clock budget (`--minutes`) may cut it short. The lag keeps workers busy without
//! a barrier: a slow run holds back merging, not the runs already planned behind it.
//!
//! Branching is by re-running the prefix: a child replays its parent's ticks up to the
//! branch point, which costs those ticks again (see ARCHITECTURE.md, "Timelines").
//!
//! In a campaign of several sub-campaigns each exploring one explores on its own (its
//! roots, its map of what was reached) and takes its share of the time by weight like
//! the others (`campaign::runner`); with `--shard`, each shard explores from its own
//! share of the roots.
//!
//! What it does not do yet: directed exploration towards named marks.

use std::collections::{BTreeMap, VecDeque};

use cluster::coverage::{POINTS, Point};

use super::report::{ExploreRecord, ExploreSummary, RunRecord};
use super::spec::{PlannedRun, SubPlan};
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

/// A point reached (by a run's own randomness) by fewer runs than this is still rare,
/// however many runs were merged: each such reach makes a splitpoint of its own, so a
/// rare mark is explored from several runs' states rather than from the first run's
/// alone (the first reach is often the least typical).
pub const EXPLORE_RARE_RUNS_MAX: u64 = 3;

/// A point reached by fewer than this many runs per thousand merged is rare too (the
/// larger of the two bounds holds): the energy a point earns then scales with how
/// rare it is over the whole exploration, not only with its first three reaches. Two
/// percent: in 1,800 plain runs the ten rarest reached marks were each reached by
/// 0.05-1.6% of the runs, the common ones by 10-100%.
pub const EXPLORE_RARE_PER_MILLE: u64 = 20;

/// Children are at most this share of the runs planned, in percent (while roots are
/// left): early in an exploration nearly every point is new, and without a cap the
/// first few roots' descendants would take a short (time-limited) exploration whole;
/// fresh roots find what no branch of those can. Half: in a 1,800-run exploration
/// without the cap, children were 45% of the runs.
pub const EXPLORE_CHILDREN_SHARE_PERCENT_MAX: u64 = 50;

/// Children a rare (not new) point's splitpoint gets: half a new one's, since the
/// point is known to be reachable.
pub const EXPLORE_CHILDREN_RARE: u32 = 2;

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
    /// The root it descends from: its position in the sub-campaign's planned runs.
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
    /// Children made so far (the next child's salt is this plus one).
    made: u32,
    /// Children it may still make.
    energy: u32,
}

/// The state of one exploration: every run planned so far and where to branch next.
#[derive(Debug)]
pub struct Explorer {
    /// Runs the exploration may make in all.
    budget: u64,
    /// Roots available (the sub-campaign's planned runs).
    roots: u64,
    /// The next root to plan.
    next_root: u64,
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
    /// Children among the runs planned (kept, not counted at each plan: a night plans
    /// thousands).
    children_planned: u64,
}

impl Explorer {
    /// An exploration over `roots` planned runs that may make `budget` runs in all.
    pub fn new(roots: u64, budget: u64) -> Self {
        Self::directed(roots, budget, Vec::new())
    }

    /// An exploration that searches for runs reaching every point of `targets`: it
    /// branches first from the runs that reached the most of them (then rarest point
    /// first, as any exploration).
    pub fn directed(roots: u64, budget: u64, targets: Vec<Point>) -> Self {
        Self {
            budget,
            roots,
            next_root: 0,
            runs: Vec::new(),
            reached_fresh: [0; POINTS],
            splitpoints: Vec::new(),
            targets,
            targets_reached: Vec::new(),
            children_planned: 0,
        }
    }

    /// Whether merged run `index` reached every target (false with no targets).
    pub fn reached_targets(&self, index: usize) -> bool {
        !self.targets.is_empty() && self.targets_reached.get(index) == Some(&self.targets.len())
    }

    /// Every run planned so far, in plan order.
    pub fn runs(&self) -> &[ExploreRun] {
        &self.runs
    }

    /// Runs the budget still allows.
    pub fn budget_left(&self) -> u64 {
        self.budget.saturating_sub(self.runs.len() as u64)
    }

    /// Plan the next run (its index into [`Explorer::runs`]): a child of the
    /// splitpoint with energy whose point is rarest, while children are under their
    /// share ([`EXPLORE_CHILDREN_SHARE_PERCENT_MAX`]) or no root is left; else the
    /// next root. `None` when
    /// the budget is spent or nothing is left to run for now.
    pub fn plan_next(&mut self) -> Option<usize> {
        if self.budget_left() == 0 {
            return None;
        }
        let children_due =
            self.children_planned * 100 < (self.runs.len() as u64 + 1) * EXPLORE_CHILDREN_SHARE_PERCENT_MAX;
        let split = self.rarest_splitpoint_with_energy();
        let run = if let Some(split) = split.filter(|_| children_due || self.next_root >= self.roots) {
            self.child_of(split)
        } else if self.next_root < self.roots {
            self.next_root += 1;
            ExploreRun {
                root: self.next_root - 1,
                branches: Branches::none(),
                parent: None,
                trigger: None,
                first_in_exploration: Vec::new(),
                own_marks: Vec::new(),
            }
        } else {
            return None;
        };
        self.children_planned += u64::from(run.parent.is_some());
        self.runs.push(run);
        Some(self.runs.len() - 1)
    }

    /// The splitpoint to branch next: the one whose point the fewest merged runs
    /// reached by their own randomness; among equals, the one found by the latest run
    /// (a point first reached after a thousand runs is rarer than one the first run
    /// reached, and a long exploration must not starve its late finds behind its early
    /// ones), then the earliest found in that run.
    fn rarest_splitpoint_with_energy(&self) -> Option<usize> {
        (0..self.splitpoints.len())
            .filter(|&index| self.splitpoints[index].energy > 0)
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
        point.made += 1;
        let parent = &self.runs[point.run];
        let branch = BranchPoint {
            tick: point.tick + 1,
            salt: u64::from(point.made),
        };
        ExploreRun {
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
    /// ([`children_for_new`] children), or when it is still rare: fewer than
    /// [`EXPLORE_RARE_RUNS_MAX`] runs reached it, or fewer than
    /// [`EXPLORE_RARE_PER_MILLE`] per thousand of the runs merged before
    /// ([`EXPLORE_CHILDREN_RARE`]): rare places get more tries from more runs' states,
    /// common ones none.
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
            let rare_below = EXPLORE_RARE_RUNS_MAX.max(index as u64 * EXPLORE_RARE_PER_MILLE / 1000);
            let energy = match fresh {
                0 => children_for_new(index),
                rare if rare < rare_below => EXPLORE_CHILDREN_RARE,
                _ => 0,
            };
            if energy > 0 && room {
                self.splitpoints.push(Splitpoint {
                    run: index,
                    point,
                    tick,
                    made: 0,
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

/// One explored sub-campaign under way: its explorer, the runs planned and not yet
/// taken, and the finished runs waiting to be merged in plan order. The campaign's
/// dispatcher takes runs from it like from any sub-campaign (time-shared by weight).
#[derive(Debug)]
pub struct SubExploration {
    explorer: Explorer,
    /// Runs planned and not yet taken by a worker, in plan order.
    queue: VecDeque<(usize, PlannedRun)>,
    /// Finished runs waiting for every earlier run to be merged.
    finished: BTreeMap<usize, (RunRecord, Vec<(Point, u64)>)>,
    /// Runs merged so far (runs `0..merged`, in plan order).
    merged: usize,
    /// Runs taken by a worker and not finished.
    running: usize,
    /// The merged runs' records.
    records: Vec<RunRecord>,
    /// How many planned runs may wait ahead of the merged ones ([`lag_runs`]).
    lag: usize,
    /// Children among the merged runs.
    children_merged: u64,
}

impl SubExploration {
    /// The exploration of `sub` (sub-campaign number `campaign`), its first runs planned:
    /// its planned runs are the roots, and it may make as many runs as they are.
    pub fn new(sub: &SubPlan, campaign: usize) -> Self {
        let mut exploration = SubExploration {
            explorer: Explorer::directed(sub.len(), sub.len(), sub.targets.clone()),
            queue: VecDeque::new(),
            finished: BTreeMap::new(),
            merged: 0,
            running: 0,
            records: Vec::new(),
            lag: lag_runs(sub.len()),
            children_merged: 0,
        };
        exploration.refill(sub, campaign);
        exploration
    }

    /// Take the next planned run (its index in plan order, and the run), if one is
    /// planned; `None` while the lag holds planning back or when nothing is left.
    pub fn take(&mut self) -> Option<(usize, PlannedRun)> {
        let next = self.queue.pop_front()?;
        self.running += 1;
        Some(next)
    }

    /// Whether a planned run waits to be taken.
    pub fn has_planned(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Whether some taken run has not finished (so more runs may be planned yet).
    pub fn is_running(&self) -> bool {
        self.running > 0
    }

    /// Run `index` finished: merge it and every finished run after it in plan order,
    /// planning more runs after each merge.
    pub fn finish(
        &mut self,
        sub: &SubPlan,
        campaign: usize,
        index: usize,
        record: RunRecord,
        first_reached: Vec<(Point, u64)>,
    ) {
        self.running -= 1;
        self.finished.insert(index, (record, first_reached));
        while let Some((mut record, first_reached)) = self.finished.remove(&self.merged) {
            let index = self.merged;
            self.explorer.merge(index, &first_reached);
            let run = &self.explorer.runs()[index];
            record.explore = Some(ExploreRecord {
                branches: run.branches.to_string(),
                parent: run
                    .parent
                    .map(|parent| self.explorer.runs()[parent].branches.to_string()),
                trigger: run.trigger.map(Point::name),
                first_in_exploration: run.first_in_exploration.iter().map(|point| point.name()).collect(),
                own_marks: run.own_marks.iter().map(|point| point.name()).collect(),
            });
            self.children_merged += u64::from(run.parent.is_some());
            self.records.push(record);
            self.merged += 1;
            self.refill(sub, campaign);
        }
    }

    /// Branched runs merged so far, and splitpoints found: for progress lines.
    pub fn progress(&self) -> (u64, u64) {
        (self.children_merged, self.explorer.splitpoints() as u64)
    }

    /// The merged runs' records, in plan order, and what the exploration adds to the
    /// campaign's summary. Every taken run must have finished.
    pub fn finish_all(self, summary: &mut ExploreSummary) -> Vec<RunRecord> {
        debug_assert_eq!(self.running, 0, "every taken run finished");
        debug_assert!(self.finished.is_empty(), "every finished run merged");
        if !self.explorer.targets.is_empty() {
            let names: Vec<String> = self.explorer.targets.iter().map(|point| point.name()).collect();
            summary.target_marks = names.join(",");
            for (index, record) in self.records.iter().enumerate() {
                if self.explorer.reached_targets(index) {
                    summary.runs_reaching_targets += 1;
                    summary
                        .first_reaching_targets
                        .get_or_insert_with(|| record.command.clone());
                }
            }
        }
        let (children, splitpoints) = self.progress();
        summary.roots += self.records.len() as u64 - children;
        summary.children += children;
        summary.splitpoints += splitpoints;
        for point in self.explorer.first_reached_by_branching() {
            match point.as_mark() {
                Some(mark) => summary.marks_first_reached_by_branching.push(mark.name().to_owned()),
                None => summary.levels_first_reached_by_branching.push(point.name()),
            }
        }
        summary.marks_first_reached_by_branching.sort();
        summary.marks_first_reached_by_branching.dedup();
        summary.levels_first_reached_by_branching.sort();
        summary.levels_first_reached_by_branching.dedup();
        summary.marks_first_reached_by_branching.dedup();
        self.records
    }

    /// Plan runs until `lag` are planned beyond the merged ones (or nothing is left):
    /// called at the start and after each merge, so the plan of each run is a function
    /// of the runs merged before it, whatever order workers finish in.
    fn refill(&mut self, sub: &SubPlan, campaign: usize) {
        while self.explorer.runs().len() < self.merged + self.lag {
            let Some(index) = self.explorer.plan_next() else {
                return;
            };
            let run = &self.explorer.runs()[index];
            let mut planned_run = sub.run(run.root, campaign);
            planned_run.args.branch = run.branches.clone();
            self.queue.push_back((index, planned_run));
        }
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
    fn a_new_point_earns_children_branched_just_after_it_a_rare_one_fewer_and_roots_fill_the_rest() {
        let mut explorer = Explorer::new(10, 20);
        assert_eq!(
            plan(&mut explorer, 4),
            vec![0, 1, 2, 3],
            "roots first: nothing to branch yet"
        );
        explorer.merge(0, &[(A, 100)]);
        explorer.merge(1, &[(A, 50)]);
        explorer.merge(2, &[(A, 70)]);
        explorer.merge(3, &[(A, 60)]);
        assert_eq!(
            explorer.splitpoints(),
            EXPLORE_RARE_RUNS_MAX as usize,
            "new in run 0, still rare in runs 1 and 2, common by run 3"
        );
        let batch = plan(&mut explorer, 12);
        let children: Vec<(u64, usize, String)> = batch
            .iter()
            .map(|&index| &explorer.runs()[index])
            .filter(|run| run.parent.is_some())
            .map(|child| {
                assert_eq!(child.trigger, Some(A));
                (child.root, child.parent.expect("a child"), child.branches.to_string())
            })
            .collect();
        // Equally rare (each reached by 3 runs by then): the latest find first.
        let expected: Vec<(u64, usize, String)> = [(2, "71", 2), (1, "51", 2), (0, "101", 1)]
            .into_iter()
            .flat_map(|(root, tick, children)| {
                (1..=children).map(move |salt| (root, root as usize, format!("{tick}:{salt}")))
            })
            .collect();
        assert_eq!(
            children, expected,
            "the rare reaches' children, latest first, then the first reach's"
        );
        let roots: Vec<u64> = batch
            .iter()
            .map(|&index| &explorer.runs()[index])
            .filter(|run| run.parent.is_none())
            .map(|run| run.root)
            .collect();
        assert_eq!(
            roots,
            (4..10).collect::<Vec<_>>(),
            "and the rest of the roots, in order, between them"
        );
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
            explorer.rarest_splitpoint_with_energy(),
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
    fn a_point_found_late_earns_more_children_than_one_the_first_runs_found() {
        assert_eq!(children_for_new(0), 1, "the first run's points are likely common");
        assert_eq!(children_for_new(1), 2);
        assert_eq!(children_for_new(3), 3);
        assert_eq!(children_for_new(7), EXPLORE_CHILDREN_FIRST);
        assert_eq!(children_for_new(100_000), EXPLORE_CHILDREN_FIRST);
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
