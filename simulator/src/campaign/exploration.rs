//! One exploration under way (`campaign --explore`), shared by every exploring
//! sub-campaign of a campaign: the runs planned and not yet taken, the finished runs
//! waiting to be merged in plan order, and how the members take turns.
//!
//! The planning rules (splitpoints, energy, rarity) are `campaign::explore`'s
//! [`Explorer`]; this module feeds it results in plan order, turns its plan into
//! planned runs of the members' sub-campaigns, and shares the runs between the
//! members by weight in a deterministic measure of work ([`run_cost`]), so that the
//! exploration stays a function of its seed ranges and budget on any machine and any
//! `--jobs`.

use std::collections::{BTreeMap, VecDeque};

use cluster::coverage::Point;

use super::batch::{BATCH_RUNS_MAX, are_siblings};
use super::explore::{Explorer, RunCost, lag_runs};
use super::report::{ExploreRecord, ExploreSummary, RunRecord};
use super::spec::{CampaignSpec, PlannedRun};

/// Replica-group ticks that cost as much as one executor poll, in [`run_cost`]: the
/// harness checks every live replica's groups each tick, which polls do not count.
/// Ten: on seven configurations of the nightly (metadata to 200,000-tick soak runs,
/// 2026-12-06) wall time per cost unit so counted varied 2.4-fold, against 3.8-fold
/// for polls alone.
pub const GROUP_TICKS_PER_COST_UNIT: u64 = 10;

/// A run's work in deterministic units (executor polls, plus replica-group ticks over
/// [`GROUP_TICKS_PER_COST_UNIT`]): what shares an exploration's runs between its
/// sub-campaigns by weight. Wall time would make which member plans next depend on the
/// machine, and with it every later plan; this is a function of the run alone.
pub fn run_cost(record: &RunRecord) -> u64 {
    record
        .polls
        .saturating_add(record.group_ticks / GROUP_TICKS_PER_COST_UNIT)
        .max(1)
}

/// The cost assumed for a run of a sub-campaign none of whose runs was merged yet,
/// when no run of any was (cost units, [`run_cost`]): a 10,000-tick partition run
/// under heavy faults costs about 200,000. Only orders the first runs; measured
/// costs replace it as runs merge.
pub const RUN_COST_GUESS_UNITS: u64 = 200_000;

/// How an exploration's runs are shared between its members (sub-campaigns) by
/// weight: in deterministic cost ([`run_cost`]), not wall time, so which member plans
/// next is a function of the runs merged. Every run counts, children too, each to the
/// member whose turn planned it ([`ExploreRun::turn`](super::explore::ExploreRun)):
/// a child of another member's run (one cheap enough for it, say late in a 20,000-tick
/// run) is paid for by the member that chose to branch it, at its price (its ticks
/// after the branch point, plus the prefix for the first of a batch of siblings:
/// [`ExploreRun::price`](super::explore::ExploreRun)).
#[derive(Debug)]
struct MemberShares {
    /// Per member: its weight.
    weights: Vec<f64>,
    /// Per member: the cost of its merged runs, and how many were merged (how many
    /// were planned is the explorer's count, [`Explorer::runs_planned`]).
    cost: Vec<u64>,
    merged: Vec<u64>,
}

impl MemberShares {
    fn new(weights: Vec<f64>) -> Self {
        debug_assert!(weights.iter().all(|weight| *weight > 0.0), "weights are positive");
        let count = weights.len();
        MemberShares {
            weights,
            cost: vec![0; count],
            merged: vec![0; count],
        }
    }

    /// The members, the one with the least cost for its weight first (merged runs at
    /// their cost, the rest of the `planned` ones at the member's mean so far, or every
    /// member's mean before it has one); among equals the first in spec order.
    fn order(&self, planned: &[u64]) -> Vec<usize> {
        debug_assert_eq!(planned.len(), self.merged.len());
        let merged_all: u64 = self.merged.iter().sum();
        let mean_all = match merged_all {
            0 => RUN_COST_GUESS_UNITS,
            merged => self.cost.iter().sum::<u64>() / merged,
        };
        let share = |member: usize| {
            let mean = match self.merged[member] {
                0 => mean_all,
                merged => self.cost[member] / merged,
            };
            let waiting = planned[member] - self.merged[member];
            self.cost[member].saturating_add(waiting.saturating_mul(mean)) as f64 / self.weights[member]
        };
        let mut order: Vec<usize> = (0..self.weights.len()).collect();
        order.sort_by(|&a, &b| share(a).total_cmp(&share(b)).then(a.cmp(&b)));
        order
    }

    /// A run of `member` was merged, at `cost`.
    fn merged(&mut self, member: usize, cost: u64) {
        self.cost[member] = self.cost[member].saturating_add(cost);
        self.merged[member] += 1;
    }
}

/// One exploration under way, shared by every exploring sub-campaign of the campaign
/// that searches for the same targets (all of them, on the nightly): one map of what
/// was reached, so a point is rare or common by every member's runs, and one budget.
/// The members take turns by weight ([`MemberShares`]); each spends its turn on its
/// rarest splitpoint or its next root, as an exploration of one sub-campaign does. The
/// campaign's dispatcher takes its runs like any sub-campaign's, with the members'
/// weights summed.
#[derive(Debug)]
pub struct Exploration {
    explorer: Explorer,
    /// The sub-campaigns sharing it: their indices in the spec, in spec order.
    members: Vec<usize>,
    /// How the runs are shared between the members.
    shares: MemberShares,
    /// Runs planned and not yet taken by a worker, in plan order: (index in plan
    /// order, sub-campaign, run).
    queue: VecDeque<(usize, usize, PlannedRun)>,
    /// Finished runs waiting for every earlier run to be merged.
    finished: BTreeMap<usize, (RunRecord, Vec<(Point, u64)>)>,
    /// Runs merged so far (runs `0..merged`, in plan order).
    merged: usize,
    /// Runs taken by a worker and not finished.
    running: usize,
    /// The merged runs' records, with their sub-campaigns.
    records: Vec<(usize, RunRecord)>,
    /// How many planned runs may wait ahead of the merged ones ([`lag_runs`]).
    lag: usize,
    /// Children among the merged runs.
    children_merged: u64,
}

impl Exploration {
    /// The exploration shared by sub-campaigns `members` of `spec` (which explore and
    /// name the same targets), its first runs planned: their planned runs are the
    /// roots, and it may make as many runs as they are.
    pub fn new(spec: &CampaignSpec, members: Vec<usize>) -> Self {
        debug_assert!(!members.is_empty(), "an exploration has a sub-campaign");
        debug_assert!(
            members.windows(2).all(|pair| pair[0] < pair[1]),
            "members in spec order"
        );
        let roots: Vec<u64> = members.iter().map(|&sub| spec.subs[sub].len()).collect();
        let budget: u64 = roots.iter().sum();
        let targets = spec.subs[members[0]].targets.clone();
        debug_assert!(
            members.iter().all(|&sub| spec.subs[sub].targets == targets),
            "members share their targets"
        );
        let mut exploration = Exploration {
            explorer: Explorer::directed(roots, budget, targets),
            shares: MemberShares::new(members.iter().map(|&sub| spec.subs[sub].sub.weight).collect()),
            members,
            queue: VecDeque::new(),
            finished: BTreeMap::new(),
            merged: 0,
            running: 0,
            records: Vec::new(),
            lag: lag_runs(budget),
            children_merged: 0,
        };
        exploration.refill(spec);
        exploration
    }

    /// The sub-campaigns sharing it (indices in the spec).
    pub fn members(&self) -> &[usize] {
        &self.members
    }

    /// Take the next planned run (its index in plan order, its sub-campaign, and the
    /// run; none while the lag holds planning back or when nothing is left) and, if
    /// `siblings` and it is a child, the runs queued right after it
    /// after it that are its siblings (children of the same splitpoint, see
    /// [`are_siblings`]), up to [`BATCH_RUNS_MAX`] in all: a batch one worker makes
    /// with one prefix. Which runs are planned is unchanged; only who makes them.
    pub fn take_batch(&mut self, siblings: bool) -> Vec<(usize, usize, PlannedRun)> {
        let Some(first) = self.queue.pop_front() else {
            return Vec::new();
        };
        let mut batch = vec![first];
        // Only the siblings next in the queue: a run taken past one still waiting would
        // sit finished and unmerged behind it, and out of the report if the budget
        // ends before the waiting one is taken.
        while siblings
            && batch.len() < BATCH_RUNS_MAX
            && self
                .queue
                .front()
                .is_some_and(|next| are_siblings(&batch[0].2, &next.2))
        {
            batch.extend(self.queue.pop_front());
        }
        self.running += batch.len();
        batch
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
    pub fn finish(&mut self, spec: &CampaignSpec, index: usize, record: RunRecord, first_reached: Vec<(Point, u64)>) {
        self.running -= 1;
        self.finished.insert(index, (record, first_reached));
        while let Some((mut record, first_reached)) = self.finished.remove(&self.merged) {
            let index = self.merged;
            let cost = RunCost {
                units: run_cost(&record),
                ticks: record.ticks,
            };
            self.explorer.merge_costed(index, &first_reached, Some(cost));
            let run = &self.explorer.runs()[index];
            // The member whose turn planned the run pays for it (a child may be of
            // another member's run: `Explorer::plan_next_for`): a root its cost, a
            // child its price (its ticks after the branch point, and the prefix if it
            // ran it for its batch: the work it made, not its run's whole cost).
            self.shares
                .merged(run.turn, run.price.unwrap_or_else(|| run_cost(&record)));
            debug_assert!(self.shares.merged[run.turn] <= self.explorer.runs_planned()[run.turn]);
            record.explore = Some(ExploreRecord {
                branches: run.branches.to_string(),
                parent: run
                    .parent
                    .map(|parent| self.explorer.runs()[parent].branches.to_string()),
                trigger: run.trigger.map(Point::name),
                trigger_tick: run.trigger_tick,
                first_in_exploration: run.first_in_exploration.iter().map(|point| point.name()).collect(),
                own_marks: run.own_marks.iter().map(|point| point.name()).collect(),
            });
            self.children_merged += u64::from(run.parent.is_some());
            self.records.push((self.members[run.member], record));
            self.merged += 1;
            self.refill(spec);
        }
    }

    /// Branched runs merged so far, and splitpoints found: for progress lines.
    pub fn progress(&self) -> (u64, u64) {
        (self.children_merged, self.explorer.splitpoints() as u64)
    }

    /// The merged runs' records with their sub-campaigns, in plan order, and the
    /// exploration's summary. Every taken run must have finished.
    pub fn finish_all(self) -> (Vec<(usize, RunRecord)>, ExploreSummary) {
        debug_assert_eq!(self.running, 0, "every taken run finished");
        debug_assert!(self.finished.is_empty(), "every finished run merged");
        let mut summary = ExploreSummary::default();
        if !self.explorer.targets().is_empty() {
            let names: Vec<String> = self.explorer.targets().iter().map(|point| point.name()).collect();
            summary.target_marks = names.join(",");
            for (index, (_, record)) in self.records.iter().enumerate() {
                if self.explorer.reached_targets(index) {
                    summary.runs_reaching_targets += 1;
                    summary
                        .first_reaching_targets
                        .get_or_insert_with(|| record.command.clone());
                }
            }
        }
        let (children, splitpoints) = self.progress();
        summary.roots = self.records.len() as u64 - children;
        summary.children = children;
        summary.splitpoints = splitpoints;
        for point in self.explorer.first_reached_by_branching() {
            match point.as_mark() {
                Some(mark) => summary.marks_first_reached_by_branching.push(mark.name().to_owned()),
                None => summary.levels_first_reached_by_branching.push(point.name()),
            }
        }
        // Sorted and without repeats, as every summary keeps them.
        let mut sorted = ExploreSummary::default();
        sorted.absorb(&summary);
        (self.records, sorted)
    }

    /// Plan runs until `lag` are planned beyond the merged ones (or nothing is left):
    /// called at the start and after each merge, so the plan of each run is a function
    /// of the runs merged before it, whatever order workers finish in.
    fn refill(&mut self, spec: &CampaignSpec) {
        while self.explorer.runs().len() < self.merged + self.lag {
            let Some(index) = self
                .shares
                .order(self.explorer.runs_planned())
                .into_iter()
                .find_map(|member| self.explorer.plan_next_for(member))
            else {
                return;
            };
            self.enqueue(spec, index);
            // A child's siblings are planned with it, up to a batch: one worker makes
            // them with one prefix (`campaign::batch`). Planned so whatever
            // `--branch-by` says, so the exploration is the same either way.
            let member = self.explorer.runs()[index].turn;
            let mut batch = 1;
            while self.explorer.runs()[index].parent.is_some() && batch < BATCH_RUNS_MAX {
                let Some(sibling) = self.explorer.plan_sibling_for(member) else {
                    break;
                };
                self.enqueue(spec, sibling);
                batch += 1;
            }
        }
    }

    /// Queue run `index` of the plan as a planned run of its member's sub-campaign.
    fn enqueue(&mut self, spec: &CampaignSpec, index: usize) {
        let run = &self.explorer.runs()[index];
        let sub = self.members[run.member];
        let mut planned_run = spec.subs[sub].run(run.root, sub);
        planned_run.args.branch = run.branches.clone();
        self.queue.push_back((index, sub, planned_run));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_take_turns_by_weight_in_cost_counting_runs_not_yet_merged_at_their_mean() {
        // Member 0 weighs 1 and its runs cost 100; member 1 weighs 2 and its runs cost
        // 50: member 1 is due four runs for each of member 0's.
        let mut shares = MemberShares::new(vec![1.0, 2.0]);
        let cost = [100, 50];
        let mut taken = [0u64; 2];
        for _ in 0..50 {
            let member = shares.order(&taken)[0];
            taken[member] += 1;
            shares.merged(member, cost[member]);
        }
        assert_eq!(taken, [10, 40], "shared by weight, in cost");
        // Planned and not merged, a run counts at its member's mean: the share holds
        // while results are outstanding.
        let mut waiting = MemberShares::new(vec![1.0, 1.0]);
        let mut planned_so_far = [1u64, 1];
        for member in [0, 1] {
            waiting.merged(member, 1_000 * (member as u64 + 1));
        }
        let planned: Vec<usize> = (0..9)
            .map(|_| {
                let member = waiting.order(&planned_so_far)[0];
                planned_so_far[member] += 1;
                member
            })
            .collect();
        assert_eq!(
            planned.iter().filter(|&&member| member == 0).count(),
            6,
            "member 0's runs cost half as much: {planned:?}"
        );
    }
}
