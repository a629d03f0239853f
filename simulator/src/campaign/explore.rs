//! `campaign --explore`: spend a campaign's runs where they find something new.
//!
//! A plain campaign runs every seed from scratch, and most runs revisit what earlier
//! runs already reached. An exploration instead branches runs at the moments they first
//! reach something rare: when a run reaches a coverage mark no earlier run of the
//! exploration reached, that (run, tick) becomes a *splitpoint*, and its children are
//! the same run with one more branch point just after that tick (see
//! [`crate::timeline`]): the same prefix, fresh randomness from there on.
//!
//! Budget (energy, in runs): the exploration makes exactly as many runs as its budget
//! allows, roots (the sub-campaign's planned runs, in their order) and children
//! together. A new splitpoint earns [`EXPLORE_CHILDREN_FIRST`] children; each child
//! that reaches a mark new to the exploration earns its splitpoint
//! [`EXPLORE_CHILDREN_MORE`] more, and a splitpoint whose children find nothing new
//! stops earning (what it did not spend stays with the roots). Children go first,
//! rarest mark first (the mark fewest runs have reached); roots fill the rest.
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
//! What it does not do yet: numeric watermarks (the highest view, the longest stall)
//! as splitpoints, or directed exploration towards named marks.

#![allow(
    clippy::disallowed_methods,
    reason = "an exploration measures wall time for its report and its time budget; no run reads it"
)]

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use cluster::coverage::{MARKS, Mark};

use super::report::{
    CampaignReport, ExploreRecord, ExploreSummary, REPORT_FORMAT_VERSION, RunRecord, RunVerdict, SubCampaignRecord,
};
use super::runner::{build_id, execute_with_marks};
use super::spec::{CampaignSpec, PlannedRun, SubPlan};
use crate::timeline::{BranchPoint, Branches};

/// Children a splitpoint gets when it is found: enough that one lucky child is likely
/// among them, few enough that a barren mark costs little.
pub const EXPLORE_CHILDREN_FIRST: u32 = 4;

/// More children a splitpoint gets each time one of its children reaches a mark new to
/// the exploration: a productive place keeps being explored.
pub const EXPLORE_CHILDREN_MORE: u32 = 4;

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
    /// The mark whose first reach made the splitpoint it branched at, if a child.
    pub trigger: Option<Mark>,
    /// Marks this run reached before any earlier run of the exploration (filled when
    /// it is merged).
    pub first_in_exploration: Vec<Mark>,
}

/// A place worth branching at: where a run first reached a mark.
#[derive(Clone, Debug)]
struct Splitpoint {
    /// The run that reached it.
    run: usize,
    /// The mark.
    mark: Mark,
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
    /// Runs merged so far, per mark: how many reached it.
    reached_runs: [u64; MARKS],
    splitpoints: Vec<Splitpoint>,
}

impl Explorer {
    /// An exploration over `roots` planned runs that may make `budget` runs in all.
    pub fn new(roots: u64, budget: u64) -> Self {
        Self {
            budget,
            roots,
            next_root: 0,
            runs: Vec::new(),
            reached_runs: [0; MARKS],
            splitpoints: Vec::new(),
        }
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
    /// splitpoint with energy whose mark is rarest, else the next root. `None` when
    /// the budget is spent or nothing is left to run for now.
    pub fn plan_next(&mut self) -> Option<usize> {
        if self.budget_left() == 0 {
            return None;
        }
        let run = if let Some(split) = self.rarest_splitpoint_with_energy() {
            self.child_of(split)
        } else if self.next_root < self.roots {
            self.next_root += 1;
            ExploreRun {
                root: self.next_root - 1,
                branches: Branches::none(),
                parent: None,
                trigger: None,
                first_in_exploration: Vec::new(),
            }
        } else {
            return None;
        };
        self.runs.push(run);
        Some(self.runs.len() - 1)
    }

    /// The splitpoint to branch next: the one whose mark the fewest merged runs reached,
    /// the earliest found among equals.
    fn rarest_splitpoint_with_energy(&self) -> Option<usize> {
        (0..self.splitpoints.len())
            .filter(|&index| self.splitpoints[index].energy > 0)
            .min_by_key(|&index| (self.reached_runs[self.splitpoints[index].mark as usize], index))
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
            trigger: Some(point.mark),
            first_in_exploration: Vec::new(),
        }
    }

    /// Merge run `index`'s result: the marks it reached with their first ticks (in the
    /// order reached). Merge runs in plan order: that order is what makes the
    /// exploration deterministic.
    pub fn merge(&mut self, index: usize, first_reached: &[(Mark, u64)]) {
        let last_branch_tick = self.runs[index].branches.points().last().map_or(0, |point| point.tick);
        let mut new_marks = Vec::new();
        for &(mark, tick) in first_reached {
            if self.reached_runs[mark as usize] > 0 {
                continue;
            }
            new_marks.push(mark);
            // A mark first reached before this run's last branch point was reached by
            // the prefix its parent ran too, and would be its parent's splitpoint; a
            // run that ended at its branch tick leaves no room to branch after it.
            if tick >= last_branch_tick && self.runs[index].branches.len() < crate::timeline::BRANCH_POINTS_MAX {
                self.splitpoints.push(Splitpoint {
                    run: index,
                    mark,
                    tick,
                    made: 0,
                    energy: EXPLORE_CHILDREN_FIRST,
                });
            }
        }
        if !new_marks.is_empty()
            && let Some(parent) = self.runs[index].parent
        {
            // A productive child: its splitpoint earns more children.
            let trigger = self.runs[index].trigger;
            if let Some(split) = self
                .splitpoints
                .iter_mut()
                .find(|split| split.run == parent && Some(split.mark) == trigger)
            {
                split.energy += EXPLORE_CHILDREN_MORE;
            }
        }
        for &(mark, _) in first_reached {
            self.reached_runs[mark as usize] += 1;
        }
        self.runs[index].first_in_exploration = new_marks;
    }

    /// Splitpoints found so far.
    pub fn splitpoints(&self) -> usize {
        self.splitpoints.len()
    }

    /// Marks first reached by a child (a branched run), not by any root before it.
    pub fn marks_first_reached_by_branching(&self) -> Vec<Mark> {
        self.runs
            .iter()
            .filter(|run| run.parent.is_some())
            .flat_map(|run| run.first_in_exploration.iter().copied())
            .collect()
    }
}

/// Explore every sub-campaign of `spec` in turn, each with as many runs as it planned;
/// `campaign_id` and `command` label the report.
pub fn run_exploration(spec: &CampaignSpec, campaign_id: &str, command: &str) -> Result<CampaignReport, String> {
    let started = Instant::now();
    let deadline = spec
        .budget_seconds
        .map(|seconds| started + Duration::from_secs_f64(seconds));
    let mut records = Vec::new();
    let mut summary = ExploreSummary::default();
    let mut sub_campaigns = Vec::new();
    for (campaign, sub) in spec.subs.iter().enumerate() {
        let (made, explorer) = explore_sub(sub, campaign, spec.jobs, deadline, started);
        let children = made
            .iter()
            .filter(|record| record.explore.as_ref().is_some_and(|explore| explore.parent.is_some()))
            .count() as u64;
        summary.roots += made.len() as u64 - children;
        summary.children += children;
        summary.splitpoints += explorer.splitpoints() as u64;
        summary.marks_first_reached_by_branching.extend(
            explorer
                .marks_first_reached_by_branching()
                .into_iter()
                .map(|mark| mark.name().to_owned()),
        );
        sub_campaigns.push(SubCampaignRecord {
            sub: sub.sub.clone(),
            planned: sub.len(),
            not_started: sub.len().saturating_sub(made.len() as u64),
        });
        records.extend(made);
    }
    summary.marks_first_reached_by_branching.sort();
    summary.marks_first_reached_by_branching.dedup();
    let planned: u64 = spec.subs.iter().map(|sub| sub.len()).sum();
    records.sort_by_key(RunRecord::key);
    Ok(CampaignReport {
        format: REPORT_FORMAT_VERSION,
        campaign_id: campaign_id.to_owned(),
        command: command.to_owned(),
        build: build_id(),
        shard: None,
        planned,
        not_started: planned.saturating_sub(records.len() as u64),
        wall_seconds: started.elapsed().as_secs_f64(),
        runs: records,
        sub_campaigns,
        required_marks: spec.required_marks.clone(),
        shrunk: Vec::new(),
        nemesis: None,
        explore: Some(summary),
    })
}

/// One sub-campaign's exploration, shared by its workers.
struct Coordinator {
    explorer: Explorer,
    /// Runs planned and not yet taken by a worker, in plan order.
    queue: std::collections::VecDeque<(usize, PlannedRun)>,
    /// Finished runs waiting for every earlier run to be merged.
    finished: std::collections::BTreeMap<usize, (RunRecord, Vec<(Mark, u64)>)>,
    /// Runs merged so far (runs `0..merged`, in plan order).
    merged: usize,
    /// Runs taken by a worker and not finished.
    running: usize,
    /// The merged runs' records.
    records: Vec<RunRecord>,
    failed: u64,
    /// How many planned runs may wait ahead of the merged ones ([`lag_runs`]).
    lag: usize,
}

impl Coordinator {
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

    /// Merge every finished run that is next in plan order, and plan what follows.
    fn merge_ready(&mut self, sub: &SubPlan, campaign: usize) {
        while let Some((mut record, first_reached)) = self.finished.remove(&self.merged) {
            let index = self.merged;
            self.explorer.merge(index, &first_reached);
            let run = &self.explorer.runs()[index];
            record.explore = Some(ExploreRecord {
                branches: run.branches.to_string(),
                parent: run
                    .parent
                    .map(|parent| self.explorer.runs()[parent].branches.to_string()),
                trigger: run.trigger.map(|mark| mark.name().to_owned()),
                first_in_exploration: run
                    .first_in_exploration
                    .iter()
                    .map(|mark| mark.name().to_owned())
                    .collect(),
            });
            self.failed += u64::from(record.verdict == RunVerdict::Fail);
            self.records.push(record);
            self.merged += 1;
            self.refill(sub, campaign);
        }
    }
}

/// Explore one sub-campaign on `jobs` workers: its records in plan order, and the
/// explorer. Run `k` is planned once runs `0..k - lag` are merged, in that order (a
/// lagged plan: no barrier, and the same exploration on any `--jobs`).
fn explore_sub(
    sub: &SubPlan,
    campaign: usize,
    jobs: usize,
    deadline: Option<Instant>,
    started: Instant,
) -> (Vec<RunRecord>, Explorer) {
    let mut coordinator = Coordinator {
        explorer: Explorer::new(sub.len(), sub.len()),
        queue: std::collections::VecDeque::new(),
        finished: std::collections::BTreeMap::new(),
        merged: 0,
        running: 0,
        records: Vec::new(),
        failed: 0,
        lag: lag_runs(sub.len()),
    };
    coordinator.refill(sub, campaign);
    let shared = Mutex::new(coordinator);
    let wake = Condvar::new();
    let progress_every = (sub.len() / PROGRESS_LINES).max(1) as usize;
    let worker = || {
        let mut guard = shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            let out_of_time = deadline.is_some_and(|deadline| Instant::now() >= deadline);
            if !out_of_time && let Some((index, run)) = guard.queue.pop_front() {
                guard.running += 1;
                drop(guard);
                let result = execute_with_marks(&run, &sub.sub.name);
                guard = shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                guard.running -= 1;
                guard.finished.insert(index, result);
                let before = guard.merged;
                guard.merge_ready(sub, campaign);
                if guard.merged / progress_every > before / progress_every {
                    let children = guard.explorer.runs()[..guard.merged]
                        .iter()
                        .filter(|run| run.parent.is_some())
                        .count();
                    println!(
                        "explore: {} of {} runs ({} roots, {children} branched), {} splitpoints, {} failed, {:.0} s",
                        guard.merged,
                        sub.len(),
                        guard.merged - children,
                        guard.explorer.splitpoints(),
                        guard.failed,
                        started.elapsed().as_secs_f64()
                    );
                }
                wake.notify_all();
                continue;
            }
            // Nothing to take: done when nothing runs (nothing more can be planned),
            // or out of time; else wait for a run to finish and plan more.
            if guard.running == 0 || out_of_time {
                wake.notify_all();
                return;
            }
            guard = wake
                .wait_timeout(guard, Duration::from_millis(WORKER_WAIT_MS))
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    };
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(worker);
        }
    });
    let coordinator = shared.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    (coordinator.records, coordinator.explorer)
}

/// Progress lines per sub-campaign's exploration.
const PROGRESS_LINES: u64 = 20;

/// How long an idle worker waits for a run to finish before it looks again, in
/// milliseconds: a bound on a missed wake-up (the deadline is checked on each look),
/// not the usual path, which is woken at once.
const WORKER_WAIT_MS: u64 = 200;

#[cfg(test)]
mod tests {
    use super::*;

    /// Plan up to `size` runs in a row, as the coordinator does between merges.
    fn plan(explorer: &mut Explorer, size: usize) -> Vec<usize> {
        std::iter::from_fn(|| explorer.plan_next()).take(size).collect()
    }

    const A: Mark = Mark::CheckpointTaken;
    const B: Mark = Mark::TransferStarted;
    const C: Mark = Mark::ViewChangeEscalated;

    #[test]
    fn a_new_mark_earns_children_branched_just_after_it_and_roots_fill_the_rest() {
        let mut explorer = Explorer::new(10, 12);
        assert_eq!(plan(&mut explorer, 2), vec![0, 1], "roots first: nothing to branch yet");
        explorer.merge(0, &[(A, 100)]);
        explorer.merge(1, &[(A, 50)]);
        assert_eq!(explorer.splitpoints(), 1, "the second run's A was not new");
        let batch = plan(&mut explorer, 6);
        assert_eq!(batch.len(), 6);
        let children: Vec<&ExploreRun> = batch[..EXPLORE_CHILDREN_FIRST as usize]
            .iter()
            .map(|&index| &explorer.runs()[index])
            .collect();
        for (salt, child) in (1..).zip(&children) {
            assert_eq!(child.root, 0);
            assert_eq!(child.parent, Some(0));
            assert_eq!(child.trigger, Some(A));
            assert_eq!(child.branches.to_string(), format!("101:{salt}"));
        }
        let roots: Vec<u64> = batch[EXPLORE_CHILDREN_FIRST as usize..]
            .iter()
            .map(|&index| explorer.runs()[index].root)
            .collect();
        assert_eq!(roots, vec![2, 3], "then the next roots");
    }

    #[test]
    fn a_productive_child_earns_its_splitpoint_more_and_a_barren_one_does_not() {
        let mut explorer = Explorer::new(100, 1_000);
        plan(&mut explorer, 1);
        explorer.merge(0, &[(A, 100)]);
        let first = plan(&mut explorer, EXPLORE_CHILDREN_FIRST as usize);
        // One child finds B (new): A's splitpoint earns more; B is a splitpoint of its own.
        explorer.merge(first[0], &[(A, 100), (B, 400)]);
        for &index in &first[1..] {
            explorer.merge(index, &[(A, 100)]);
        }
        assert_eq!(explorer.marks_first_reached_by_branching(), vec![B]);
        let next = plan(&mut explorer, 100);
        let triggers: Vec<Option<Mark>> = next.iter().map(|&index| explorer.runs()[index].trigger).collect();
        let from_b = triggers.iter().filter(|trigger| **trigger == Some(B)).count();
        let from_a = triggers.iter().filter(|trigger| **trigger == Some(A)).count();
        assert_eq!(from_b, EXPLORE_CHILDREN_FIRST as usize, "B is rarer, so it goes first");
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
        // Barren: nothing new from here on, so once the energy is spent only roots run.
        for &index in &next {
            explorer.merge(index, &[(A, 100)]);
        }
        let after = plan(&mut explorer, 10);
        assert!(after.iter().all(|&index| explorer.runs()[index].parent.is_none()));
    }

    #[test]
    fn the_lag_depends_on_the_budget_alone_and_a_small_budget_still_steers() {
        assert_eq!(lag_runs(12), 1);
        assert_eq!(lag_runs(160), 10);
        assert_eq!(lag_runs(100_000), EXPLORE_LAG_RUNS_MAX);
    }

    #[test]
    fn the_budget_counts_every_run_and_the_plan_is_a_function_of_the_results() {
        let plan = |results: &dyn Fn(usize) -> Vec<(Mark, u64)>| {
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
