//! Tests of the explorer's rules (`campaign::explore`): what earns children, where
//! they branch, in what order, and that the plan is a function of the results.
use super::*;

/// Plan up to `size` runs in a row, as the coordinator does between merges.
fn plan(explorer: &mut Explorer, size: usize) -> Vec<usize> {
    std::iter::from_fn(|| explorer.plan_next()).take(size).collect()
}

use cluster::coverage::Mark;

const A: Point = Point::mark(Mark::CheckpointTaken);
const B: Point = Point::mark(Mark::TransferInstalled);
const C: Point = Point::mark(Mark::ViewChangeEscalated);

#[test]
fn a_new_point_earns_children_after_it_and_in_its_lead_up_a_rare_mark_more_and_a_common_one_none() {
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
    // (2 children); C: new in run 0, then reached by every run: common. A quarter of
    // a splitpoint's children, rounded down, branch in its lead-up: ticks before the
    // reach (here the first tick a root may branch at: each reach is within
    // EXPLORE_LEAD_UP_TICKS of the start).
    assert_eq!(children_for_new(0), 1);
    assert_eq!(children_for_new(1), 2);
    assert_eq!(children_for_rare(1, 5), 6);
    assert_eq!(
        explorer.splitpoints(),
        5,
        "A after (twice) and in run 5's lead-up, B and C after"
    );
    let batch = plan(&mut explorer, 14);
    let children: Vec<(u64, String)> = batch
        .iter()
        .map(|&index| &explorer.runs()[index])
        .filter(|run| run.parent.is_some())
        .map(|child| (child.root, child.branches.to_string()))
        .collect();
    // Rarest first: B (one reach), then A (two reaches), the latest find first,
    // then C (six); a reach's children after it, then those of its lead-up.
    let expected: Vec<(u64, String)> = [(1, "21", 2), (5, "71", 5), (5, "1", 1), (0, "101", 1), (0, "11", 1)]
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
        vec![6, 7, 8, 9],
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
        explorer.rarest_splitpoint_with_energy(0, SplitClass::Rare),
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
    plan(&mut explorer, 8);
    explorer.merge(0, &[(A, 100)]);
    for index in 1..7 {
        explorer.merge(index, &[]);
    }
    // Found by the eighth run: four children, two after the reach, two in its lead-up.
    explorer.merge(7, &[(B, 200)]);
    assert_eq!(explorer.plan_sibling_for(0), None, "no child planned yet");
    let child = explorer.plan_next_for(0).expect("a child");
    let trigger = explorer.runs()[child].trigger;
    let energy = children_for_new(7);
    assert_eq!(energy, 4);
    assert_eq!(trigger, Some(B), "B is the latest find of two new points");
    assert_eq!(
        explorer.runs()[child].branches.to_string(),
        "201:1",
        "just after B's reach"
    );
    let siblings: Vec<usize> = std::iter::from_fn(|| explorer.plan_sibling_for(0)).collect();
    assert_eq!(
        siblings.len(),
        (energy - lead_up_energy(energy, SplitClass::Rare)) as usize - 1,
        "the rest of the energy after B's reach"
    );
    for &sibling in &siblings {
        let run = &explorer.runs()[sibling];
        assert_eq!(run.trigger, Some(B));
        assert_eq!(run.parent, explorer.runs()[child].parent);
        assert!(
            run.branches.to_string().starts_with("201:"),
            "siblings branch at one tick: one batch"
        );
    }
    let lead_up = explorer.plan_next_for(0).expect("B's lead-up child");
    assert_eq!(explorer.runs()[lead_up].trigger, Some(B));
    assert_eq!(explorer.runs()[lead_up].trigger_tick, Some(200));
    assert_eq!(
        explorer.runs()[lead_up].branches.to_string(),
        format!("{}:1", 200 - EXPLORE_LEAD_UP_TICKS),
        "the lead-up: before the reach"
    );
    let lead_up_siblings = std::iter::from_fn(|| explorer.plan_sibling_for(0)).count();
    assert_eq!(lead_up_siblings, lead_up_energy(energy, SplitClass::Rare) as usize - 1);
    let of_a = explorer.plan_next_for(0).expect("A's child");
    assert_eq!(explorer.runs()[of_a].trigger, Some(A));
    assert_eq!(
        explorer.plan_sibling_for(0),
        None,
        "A's one child is planned: no energy left"
    );
    let root = explorer.plan_next_for(0).expect("a root: nothing left to branch");
    assert!(explorer.runs()[root].parent.is_none());
    assert_eq!(explorer.plan_sibling_for(0), None, "a root has no siblings");
}

#[test]
fn a_lead_up_branches_after_the_runs_own_branch_point_and_a_reach_right_after_it_has_none() {
    let mut explorer = Explorer::new(1, 100);
    plan(&mut explorer, 1);
    explorer.merge(0, &[(A, 1_000)]);
    let child = plan(&mut explorer, 1)[0];
    assert_eq!(explorer.runs()[child].branches.to_string(), "1001:1");
    // The child reaches B 50 ticks after its branch point (its lead-up may only
    // start after it: a timeline's points are in tick order) and C in the tick it
    // branched at (no lead-up of its own: all its energy goes on from the reach).
    explorer.merge(child, &[(A, 1_000), (B, 1_050), (C, 1_001)]);
    let mut seen = Vec::new();
    while let Some(index) = explorer.plan_next() {
        let run = &explorer.runs()[index];
        seen.push((run.trigger, run.branches.to_string()));
    }
    let of = |point: Point| -> Vec<&str> {
        seen.iter()
            .filter(|(trigger, _)| *trigger == Some(point))
            .map(|(_, branches)| branches.as_str())
            .collect()
    };
    let energy = children_for_new(child);
    assert_eq!(of(B).len(), energy as usize);
    assert_eq!(
        of(B)
            .iter()
            .filter(|branches| branches.starts_with("1001:1,1002:"))
            .count(),
        lead_up_energy(energy, SplitClass::Rare) as usize,
        "B's lead-up starts just after the child's own branch point: {seen:?}"
    );
    assert!(
        of(B)
            .iter()
            .all(|branches| branches.starts_with("1001:1,1051:") || branches.starts_with("1001:1,1002:")),
        "after B's reach or in its lead-up: {seen:?}"
    );
    assert!(
        of(C).iter().all(|branches| branches.starts_with("1001:1,1002:")),
        "C's children all go on from its reach (1,001 + 1): {seen:?}"
    );
    assert_eq!(of(C).len(), energy as usize);
    let timelines: std::collections::BTreeSet<&String> = seen.iter().map(|(_, branches)| branches).collect();
    assert_eq!(
        timelines.len(),
        seen.len(),
        "B's lead-up and C's reach share a tick, not a salt"
    );
}

#[test]
fn every_race_the_harness_marks_is_a_hazard() {
    let races: Vec<Mark> = Mark::ALL
        .iter()
        .copied()
        .filter(|mark| mark.name().starts_with("race."))
        .collect();
    assert!(!races.is_empty());
    assert_eq!(races, HAZARD_MARKS, "a new race mark is a hazard too");
}

#[test]
fn a_common_hazards_every_reach_earns_children_taking_turns_with_the_rare_marks() {
    let hazard = Point::mark(HAZARD_MARKS[0]);
    let mut explorer = Explorer::new(1_000, 1_000);
    // Forty roots: every one reaches the hazard (common: no rarity left) and each
    // of the first four a mark nobody else reaches.
    plan(&mut explorer, 40);
    for index in 0..40 {
        let mut reached = vec![(hazard, 500 + index as u64)];
        if index < 4 {
            reached.push((Point::mark(Mark::ALL[index]), 700));
        }
        explorer.merge(index, &reached);
    }
    assert_eq!(children_for_rare(39, 39), 0, "the hazard is common");
    let mut batches = Vec::new();
    while batches.iter().map(|(_, children)| children).sum::<usize>() < 16 {
        let index = explorer.plan_next().expect("the budget lasts");
        let run = &explorer.runs()[index];
        if run.parent.is_none() {
            continue;
        }
        let trigger = run.trigger.expect("a child has a trigger");
        let siblings = std::iter::from_fn(|| explorer.plan_sibling_for(0)).count();
        batches.push((is_hazard(trigger), siblings + 1));
    }
    assert!(!batches[0].0, "the rarest splitpoint's turn first: {batches:?}");
    let children: usize = batches.iter().map(|(_, children)| children).sum();
    let of_hazards: usize = batches
        .iter()
        .filter(|(hazard, _)| *hazard)
        .map(|(_, children)| children)
        .sum();
    let largest = batches.iter().map(|(_, children)| *children).max().unwrap_or(0);
    let one_in = EXPLORE_HAZARD_CHILDREN_ONE_IN as usize;
    assert!(
        of_hazards * one_in + largest >= children && of_hazards * one_in <= children + largest * one_in,
        "hazards take one child in {one_in} while rare splitpoints wait: {batches:?}"
    );
    let after_reach = (EXPLORE_CHILDREN_HAZARD - lead_up_energy(EXPLORE_CHILDREN_HAZARD, SplitClass::Hazard)) as usize;
    assert!(
        batches
            .iter()
            .filter(|(hazard, _)| *hazard)
            .all(|(_, children)| *children <= after_reach),
        "a hazard's reach: half its children on from it, half in its lead-up: {batches:?}"
    );
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

/// Plan runs in member `member`'s turns, merging each root (reaching nothing, costing
/// `units` over 10,000 ticks), until a child is planned: the child's index and how
/// many roots came first.
fn roots_until_a_child(explorer: &mut Explorer, member: usize, units: u64) -> (usize, u32) {
    let mut roots = 0;
    loop {
        let index = explorer
            .plan_next_for(member)
            .expect("the member has roots and children to plan");
        if explorer.runs()[index].parent.is_some() {
            return (index, roots);
        }
        roots += 1;
        explorer.merge_costed(index, &[], Some(RunCost { units, ticks: 10_000 }));
    }
}

#[test]
fn members_share_one_map_and_a_turn_branches_another_members_run_where_its_child_is_cheap() {
    let mut explorer = Explorer::directed(vec![10, 5], 40, Vec::new());
    let first = explorer.plan_next_for(0).expect("a root of member 0");
    let second = explorer.plan_next_for(1).expect("a root of member 1");
    assert_eq!(
        [&explorer.runs()[first], &explorer.runs()[second]].map(|run| (run.member, run.turn, run.root)),
        [(0, 0, 0), (1, 1, 0)],
        "each member's first root, in its own turn"
    );
    // Member 0's runs cost 600 units; member 1's 1,000, over 10,000 ticks.
    let cost = |units| Some(RunCost { units, ticks: 10_000 });
    explorer.merge_costed(first, &[(A, 100)], cost(600));
    explorer.merge_costed(second, &[(A, 200), (C, 1_000), (B, 9_500)], cost(1_000));
    assert_eq!(
        explorer.runs()[second].first_in_exploration,
        vec![C, B],
        "A was no news to member 1: member 0 found it"
    );
    // Every point was reached once; the latest run's points go first. A child of
    // member 1's run after B (tick 9,500) runs 49 units after its branch point, and
    // its batch of two (the splitpoint's energy) runs the 951 before it once: 524 a
    // child, which member 0 (roots of 600) affords. One after C (tick 1,000) is too
    // early to fork at: 1,000 a child, which it does not.
    //
    // The first child of a batch pays the prefix, so member 0's turn branches it only
    // once its roots' work covers the child's as much (the children's share is half
    // of a turn's work): two more roots first.
    let (child, roots) = roots_until_a_child(&mut explorer, 0, 600);
    assert_eq!(roots, 2, "roots until the child is within the share");
    let run = &explorer.runs()[child];
    assert_eq!((run.parent, run.trigger), (Some(second), Some(B)), "the cheap one");
    assert_eq!(
        (run.member, run.turn, run.root, run.price),
        (1, 0, 0, Some(1_000)),
        "member 1's run, paid for by member 0's turn: the prefix and the suffix"
    );
    let sibling = explorer.plan_sibling_for(0).expect("its sibling, in the same batch");
    assert_eq!(
        explorer.runs()[sibling].price,
        Some(49),
        "a sibling runs only the suffix: the batch ran the prefix once"
    );
    for index in [child, sibling] {
        explorer.merge_costed(index, &[], cost(1_000));
    }
    // Member 1's own runs it branches at any cost (once its roots' work covers it).
    let (child, _) = roots_until_a_child(&mut explorer, 1, 1_000);
    let child = &explorer.runs()[child];
    assert_eq!(
        (child.parent, child.trigger, child.member, child.turn),
        (Some(second), Some(C), 1, 1),
        "a member branches its own runs at any cost"
    );
    assert_eq!(
        explorer.runs_planned(),
        [5, 3],
        "runs count for the turn that planned them"
    );
    // Merged without costs, a run's children are its own member's alone.
    let mut unpriced = Explorer::directed(vec![5, 5], 20, Vec::new());
    let first = unpriced.plan_next_for(0).expect("a root of member 0");
    let second = unpriced.plan_next_for(1).expect("a root of member 1");
    unpriced.merge(first, &[(A, 100)]);
    unpriced.merge(second, &[(B, 950)]);
    let child = unpriced.plan_next_for(0).expect("a child");
    assert_eq!(unpriced.runs()[child].parent, Some(first));
}

#[test]
fn a_turns_children_take_at_most_half_its_work_when_they_cost_more_than_its_roots() {
    // One root in four reaches a mark still rare, early (tick 100: too early to fork at,
    // so each child runs the whole 4,000 units again); the others cost 100 and reach
    // nothing. Counted in runs, children would be half the runs and four fifths of the
    // work; priced, they stay within half of the work (and a batch over it).
    let mut explorer = Explorer::new(10_000, 10_000);
    let (mut roots_work, mut children_work, mut children) = (0u64, 0u64, 0u64);
    for _ in 0..400 {
        let first = explorer.plan_next().expect("the budget lasts");
        let batch: Vec<usize> = std::iter::once(first)
            .chain(std::iter::from_fn(|| explorer.plan_sibling_for(0)))
            .collect();
        for index in batch {
            let run = explorer.runs()[index].clone();
            let (units, reached) = match run.parent {
                Some(_) => (4_000, vec![]),
                None if run.root.is_multiple_of(4) => (
                    4_000,
                    vec![(Point::mark(Mark::ALL[(run.root / 4) as usize % Mark::ALL.len()]), 100)],
                ),
                None => (100, vec![]),
            };
            explorer.merge_costed(index, &reached, Some(RunCost { units, ticks: 10_000 }));
            match run.parent {
                Some(_) => {
                    children += 1;
                    children_work += run.price.expect("a priced child");
                }
                None => roots_work += units,
            }
        }
    }
    let max_batch = BATCH_RUNS_MAX as u64 * 4_000;
    assert!(children > 0, "it branched");
    assert!(
        children_work * 100 <= (children_work + roots_work) * EXPLORE_CHILDREN_SHARE_PERCENT_MAX + max_batch * 100,
        "children took {children_work} of {} units",
        children_work + roots_work
    );
}

#[test]
fn a_childs_price_shares_the_prefix_across_its_batch_when_long_enough_to_fork_at() {
    let cost = RunCost {
        units: 10_000,
        ticks: 10_000,
    };
    let late = ChildPrice::of(cost, 8_000);
    assert_eq!((late.prefix, late.suffix, late.shared), (8_000, 2_000, true));
    assert_eq!(late.per_child(4), 4_000, "a quarter of the prefix each");
    assert_eq!((late.charged(true), late.charged(false)), (10_000, 2_000));
    let early = ChildPrice::of(cost, FORK_PREFIX_TICKS_MIN - 1);
    assert!(!early.shared, "too short a prefix to fork at: each child runs it again");
    assert_eq!(early.per_child(4), 10_000);
    assert_eq!((early.charged(true), early.charged(false)), (10_000, 10_000));
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

#[test]
fn children_wait_for_the_map_early_and_make_up_their_share_later() {
    let mut explorer = Explorer::new(10_000, 10_000);
    let mut children_by = Vec::new();
    let mut children = 0;
    while children_by.len() < 600 {
        // A run and its siblings, as the coordinator plans a batch, merged at once.
        let first = explorer.plan_next().expect("the budget lasts");
        let batch: Vec<usize> = std::iter::once(first)
            .chain(std::iter::from_fn(|| explorer.plan_sibling_for(0)))
            .collect();
        for index in batch {
            assert_eq!(index, children_by.len(), "merged in plan order");
            // Endless news: every root reaches a mark few runs reached before (no near
            // miss: its children skip the ramp, as the near-miss test shows).
            let marks = marks_but_near_misses();
            let mark = Point::mark(marks[index % marks.len()]);
            explorer.merge(index, &[(mark, 10 + index as u64)]);
            children += usize::from(explorer.runs()[index].parent.is_some());
            children_by.push(children);
        }
    }
    let ramp = EXPLORE_CHILDREN_RAMP_RUNS as usize;
    let half = EXPLORE_CHILDREN_SHARE_PERCENT_MAX as usize;
    // Up to run n of the ramp the share is at most half of n / ramp: children are at
    // most about a quarter of the first half of the ramp's runs (batches included),
    // and more later.
    assert!(
        children_by[ramp / 2 - 1] * 100 <= (ramp / 2) * half / 2 + 300,
        "{} children in the first {} runs",
        children_by[ramp / 2 - 1],
        ramp / 2
    );
    assert!(children_by[ramp / 2 - 1] > 0, "the ramp starts low, not at nothing");
    assert!(
        children_by[599] * 100 >= 600 * half - 200,
        "by three ramps the children have their whole share: {} of 600",
        children_by[599]
    );
}

#[test]
fn early_batches_stay_near_the_ramps_share_across_many_members() {
    // Eight members taking turns, every root reaching a mark still rare (energy for a
    // batch of several children at each): the share bounds each batch, not only its
    // first child, or every member's first batches would make the start all children.
    let members = 8;
    let mut explorer = Explorer::directed(vec![10_000; members], 100_000, Vec::new());
    let mut merged = 0;
    let mut children = 0;
    while merged < 100 {
        let member = merged % members;
        let Some(first) = explorer.plan_next_for(member) else {
            continue;
        };
        let batch: Vec<usize> = std::iter::once(first)
            .chain(std::iter::from_fn(|| explorer.plan_sibling_for(member)))
            .collect();
        for index in batch {
            let marks = marks_but_near_misses();
            let mark = Point::mark(marks[(index / 2) % marks.len()]);
            explorer.merge(index, &[(mark, 1_000 + index as u64)]);
            children += usize::from(explorer.runs()[index].parent.is_some());
            merged += 1;
        }
    }
    // Over the first 100 runs the share grows to a quarter: children about an
    // eighth on average, and one over its share per member at most (a member's share
    // is of its own runs, the ramp of all the runs merged).
    assert!(
        children * 100 <= merged * EXPLORE_CHILDREN_SHARE_PERCENT_MAX as usize / 4 + members * 100,
        "{children} children in the first {merged} runs"
    );
}

/// Every mark but the near misses, whose children skip the ramp.
fn marks_but_near_misses() -> Vec<Mark> {
    Mark::ALL
        .iter()
        .copied()
        .filter(|mark| !NEAR_MISS_MARKS.contains(mark))
        .collect()
}

#[test]
fn a_near_miss_is_branched_at_every_reach_before_anything_rarer_and_without_the_ramp() {
    let near_miss = Point::mark(NEAR_MISS_MARKS[0]);
    let rare = Point::mark(Mark::ViewChangeEscalated);
    let mut explorer = Explorer::new(10_000, 10_000);
    // Ten roots, merged before the ramp allows much: the first reaches a new mark (a
    // rarer point than the near miss, which the next runs reach too), the third and
    // the seventh reach the near miss, late in their runs.
    let roots: Vec<usize> = (0..10).map(|_| explorer.plan_next().expect("budget")).collect();
    for &index in &roots {
        let reached = match index {
            0 => vec![(rare, 100)],
            2 | 6 => vec![(near_miss, 5_000 + index as u64)],
            _ => vec![],
        };
        explorer.merge(index, &reached);
    }
    // The next runs are the near misses' children, the latest first (its point is as
    // rare as the other's, found later), all going on from the reach: no lead-up.
    let mut children = Vec::new();
    let first = explorer.plan_next().expect("budget");
    children.push(first);
    children.extend(std::iter::from_fn(|| explorer.plan_sibling_for(0)));
    let runs = explorer.runs();
    assert_eq!(
        children.len(),
        EXPLORE_CHILDREN_NEAR_MISS as usize,
        "a near miss's children make one batch, ramp or not"
    );
    for &child in &children {
        let run = &runs[child];
        assert_eq!(
            run.trigger,
            Some(near_miss),
            "a near miss's children go before a rarer point's"
        );
        assert_eq!(run.parent, Some(6));
        assert_eq!(
            run.branches.points()[0].tick,
            5_007,
            "just after the reach, none in its lead-up"
        );
    }
    let next = explorer.plan_next().expect("budget");
    let next_batch: Vec<usize> = std::iter::once(next)
        .chain(std::iter::from_fn(|| explorer.plan_sibling_for(0)))
        .collect();
    assert!(
        next_batch.iter().all(|&child| explorer.runs()[child].parent == Some(2)),
        "then the other near miss's: every reach is branched"
    );
    // A reach within a child's own timeline earns its own children; one in its prefix
    // (before its branch point) is its parent's, and none.
    let child = children[0];
    merge_the_unmerged_runs_before(&mut explorer, child);
    let before = explorer.splitpoints();
    explorer.merge(child, &[(near_miss, 5_006)]);
    assert_eq!(explorer.splitpoints(), before, "the prefix's reach is no news");
}

/// Merge every planned run before `stop` not merged yet, each reaching nothing.
fn merge_the_unmerged_runs_before(explorer: &mut Explorer, stop: usize) {
    for index in explorer.targets_reached.len()..stop {
        explorer.merge(index, &[]);
    }
}

#[test]
fn a_near_miss_every_fourth_run_reaches_is_no_near_miss() {
    // Reached by one run in eight: every reach earns its children. By every run: once
    // more than one run in four reached it, no more.
    assert_eq!(near_miss_energy(0, 0), EXPLORE_CHILDREN_NEAR_MISS, "the first reach");
    assert_eq!(near_miss_energy(10, 80), EXPLORE_CHILDREN_NEAR_MISS);
    assert_eq!(near_miss_energy(20, 80), EXPLORE_CHILDREN_NEAR_MISS, "one run in four");
    assert_eq!(near_miss_energy(21, 80), 0, "more than one run in four");
    // Five roots planned before any is merged, every one reaching the near miss: the
    // first is branched, the others (each after more than one run in four reached it)
    // are not.
    let near_miss = Point::mark(NEAR_MISS_MARKS[0]);
    let mut explorer = Explorer::new(1_000, 1_000);
    let roots: Vec<usize> = (0..5).map(|_| explorer.plan_next().expect("budget")).collect();
    for index in roots {
        explorer.merge(index, &[(near_miss, 9_000)]);
    }
    assert_eq!(explorer.splitpoints(), 1, "only the first reach is branched");
}
