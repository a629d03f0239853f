//! The minimization of a history that has no linearization: from a failing history to
//! the few operations a person reads to see why (see [`Minimizer`]), and the probe that
//! looks for a failing cut of a history whose search ran out of states.

use super::checker::{Entry, Mode, Outcome, SEARCH_STATES_MAX, search};
use super::{Model, Operation};

/// States the minimization of a violation may explore in all of its sub-checks together
/// (each sub-check is also charged one state per operation it is given, as building its
/// event list costs that much). Minimization runs only once a violation is proven, and a
/// short report is worth more than the seconds, so twice the search's bound (under two
/// seconds in release); its memos live one sub-check at a time, each bounded by
/// [`MINIMIZE_CHECK_STATES_MAX`].
pub const MINIMIZE_STATES_MAX: u64 = 2 * SEARCH_STATES_MAX;

/// States one sub-check of the minimization may explore. A sub-check frees at most one
/// operation of a history whose first search needed few states, so it needs about as
/// few; but an unchecked operation may reorder with every concurrent one, and an
/// undecided sub-check must not spend the whole budget. One that needs more is left
/// undecided (its operation is reported, and the result marked not 1-minimal).
pub const MINIMIZE_CHECK_STATES_MAX: u64 = 100_000;

/// Cut histories probed at most when a search runs out of states (see
/// `Minimizer::probe`): a history's horizons are sampled this many times, then bisected
/// within one stride. 64 probes of at most [`MINIMIZE_CHECK_STATES_MAX`] states each fit
/// the minimization's budget with room for the explanation.
pub const PROBE_HORIZONS_MAX: usize = 64;

/// The result of one sub-check of the minimization.
enum SubCheck {
    Fails,
    Passes,
    /// The sub-check reached `states_max`: not known to fail.
    Unknown,
    /// The minimization's budget ran out.
    OutOfBudget,
}

/// Reduces a violating history to the few operations that show the violation.
///
/// Not by greedy deletion: deleting operations can make a history fail for a reason the
/// real one never had (delete an early send, and every later `Appended` offset and every
/// poll's messages are unexplained), so a greedy deletion ends on one innocent operation.
/// Instead, over positions in `ops`, every test runs on one failing sub-history with a
/// single change, so no change accumulates:
/// 1. The failing horizon: the earliest completion tick T whose sub-history Sub(T)
///    fails. Sub(T) holds the operations invoked by T: answers that arrived by T are
///    checked; operations still open at T are unchecked (they took effect, their answers
///    may depend on what came after T), reads among them dropped. Sub(T) is a weakening
///    of the history cut at T (its linearizations restrict to ones of Sub(T)), so it
///    failing proves the history fails, and failing is monotonic in T: binary search.
/// 2. The necessary answers: each checked answer unchecked alone (a read's deleted);
///    necessary if Sub(T) then passes. Those that arrived at T are jointly necessary, so
///    if none is alone, they are reported.
/// 3. The context that matters: each other operation deleted alone; it matters if Sub(T)
///    then passes (the send a stale poll missed).
///
/// Each test is about as cheap as the first search of Sub(T): one operation is freed at
/// most. Tests run newest first (the likeliest to matter), within the budget.
pub(super) struct Minimizer<'a, M: Model> {
    model: &'a M,
    history: &'a [Operation<M::Input, M::Output>],
    /// The searched operations, by invoke order.
    ops: &'a [usize],
    states_max: u64,
    /// The budget left, [`MINIMIZE_STATES_MAX`] at first.
    states_left: u64,
    /// Of `states_left`, what the current step may not spend (kept for the next).
    states_reserved: u64,
}

/// What an operation is in a sub-history of the minimization.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Its answer is checked.
    Checked,
    /// It took effect within its interval, answer unchecked (ambiguous if it has none).
    Unchecked,
    /// Left out.
    Out,
}

impl<'a, M: Model> Minimizer<'a, M> {
    /// A minimizer of `history` (searched as `ops`, by invoke order) with
    /// `states_left` states for all of its sub-checks.
    pub(super) fn new(
        model: &'a M,
        history: &'a [Operation<M::Input, M::Output>],
        ops: &'a [usize],
        states_max: u64,
        states_left: u64,
    ) -> Self {
        Self {
            model,
            history,
            ops,
            states_max,
            states_left,
            states_reserved: 0,
        }
    }
}

impl<M: Model> Minimizer<'_, M> {
    /// Returns the operations (history indices, in invoke order) and whether every test
    /// was decided within the budget (then each of them is 1-minimal in Sub(T): its
    /// answer unchecked, or it deleted, makes Sub(T) pass, and no other operation does).
    pub(super) fn minimize(&mut self) -> (Vec<usize>, bool) {
        let horizons = self.horizons();
        // A history without answers is linearizable (every operation can go last).
        assert!(!horizons.is_empty());

        // Sub(the last horizon) is the history itself, less ambiguous operations invoked
        // after every answer arrived (which can always go last): it fails.
        let (mut lo, mut hi) = (0, horizons.len() - 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.check(&self.roles(horizons[mid])) {
                SubCheck::Fails => hi = mid,
                SubCheck::Passes | SubCheck::Unknown => lo = mid + 1,
                SubCheck::OutOfBudget => {
                    let roles = self.roles(horizons[hi]);
                    return (self.report(|position| roles[position] != Role::Out), false);
                }
            }
        }
        self.explain(horizons[hi])
    }

    /// For a history whose search ran out of states: look for a failing horizon among
    /// the cut histories, which are smaller (every operation invoked after the cut is
    /// out) and often decided where the whole is not. Sub(T) failing proves the whole
    /// history fails. Horizons are probed from the earliest, every `stride`-th one, then
    /// the earliest failing one in the last stride is found by bisection (failing is
    /// monotonic in T). Returns the minimal sub-history as [`Minimizer::minimize`] does,
    /// or `None` if no probe within the budget failed.
    pub(super) fn probe(&mut self) -> Option<(Vec<usize>, bool)> {
        let horizons = self.horizons();
        let stride = horizons.len().div_ceil(PROBE_HORIZONS_MAX).max(1);
        // Half the budget for the probes, half for the explanation.
        self.states_reserved = self.states_left / 2;
        let mut failing = None;
        let mut previous = 0;
        for position in (stride - 1..horizons.len()).step_by(stride) {
            match self.check(&self.roles(horizons[position])) {
                SubCheck::Fails => {
                    failing = Some(position);
                    break;
                }
                SubCheck::Passes | SubCheck::Unknown => previous = position + 1,
                SubCheck::OutOfBudget => break,
            }
        }
        let mut hi = failing?;
        let mut lo = previous;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.check(&self.roles(horizons[mid])) {
                SubCheck::Fails => hi = mid,
                SubCheck::Passes | SubCheck::Unknown | SubCheck::OutOfBudget => lo = mid + 1,
            }
        }
        self.states_reserved = 0;
        Some(self.explain(horizons[hi]))
    }

    /// The completion ticks of the answered operations, each once, in order.
    fn horizons(&self) -> Vec<u64> {
        let mut horizons: Vec<u64> = self
            .ops
            .iter()
            .filter(|&&index| self.history[index].output.is_some())
            .filter_map(|&index| self.history[index].complete_tick)
            .collect();
        horizons.sort_unstable();
        horizons.dedup();
        horizons
    }

    /// The necessary answers and the context that matters in Sub(`horizon`), which
    /// fails (steps 2 and 3 of the type's docs).
    fn explain(&mut self, horizon: u64) -> (Vec<usize>, bool) {
        let mut roles = self.roles(horizon);
        let mut decided = true;
        let mut out_of_budget = false;

        // The necessary answers, the latest to arrive first, with half of what is left:
        // on a long history most answers are old and not necessary, and the context
        // that matters must still be looked for.
        self.states_reserved = self.states_left / 2;
        let mut answers: Vec<usize> = (0..self.ops.len()).filter(|&p| roles[p] == Role::Checked).collect();
        answers.sort_by_key(|&position| std::cmp::Reverse((self.history[self.ops[position]].complete_tick, position)));
        let mut necessary = vec![false; self.ops.len()];
        for &position in &answers {
            let read = self.model.is_read(&self.history[self.ops[position]].input);
            match self.check_changed(&mut roles, position, if read { Role::Out } else { Role::Unchecked }) {
                SubCheck::Passes => necessary[position] = true,
                SubCheck::Fails => {}
                SubCheck::Unknown => {
                    necessary[position] = true;
                    decided = false;
                }
                SubCheck::OutOfBudget => {
                    out_of_budget = true;
                    break;
                }
            }
        }
        if !necessary.contains(&true) {
            for &position in &answers {
                necessary[position] = self.history[self.ops[position]].complete_tick == Some(horizon);
            }
        }

        // The context that matters, the latest invoked first.
        self.states_reserved = 0;
        let mut matters = vec![false; self.ops.len()];
        for position in (0..self.ops.len()).rev() {
            if roles[position] == Role::Out || necessary[position] {
                continue;
            }
            match self.check_changed(&mut roles, position, Role::Out) {
                SubCheck::Passes => matters[position] = true,
                SubCheck::Fails => {}
                SubCheck::Unknown => {
                    matters[position] = true;
                    decided = false;
                }
                SubCheck::OutOfBudget => {
                    out_of_budget = true;
                    break;
                }
            }
        }
        let minimal = self.report(|position| necessary[position] || matters[position]);
        (minimal, decided && !out_of_budget)
    }

    /// The roles of Sub(`horizon`).
    fn roles(&self, horizon: u64) -> Vec<Role> {
        self.ops
            .iter()
            .map(|&index| {
                let op = &self.history[index];
                let answered_by_horizon = op.output.is_some() && op.complete_tick.is_some_and(|tick| tick <= horizon);
                if op.invoke_tick > horizon {
                    Role::Out
                } else if answered_by_horizon {
                    Role::Checked
                } else if self.model.is_read(&op.input) {
                    Role::Out
                } else {
                    Role::Unchecked
                }
            })
            .collect()
    }

    /// The history indices of the positions `keep` selects, in invoke order.
    fn report(&self, keep: impl Fn(usize) -> bool) -> Vec<usize> {
        (0..self.ops.len())
            .filter(|&position| keep(position))
            .map(|position| self.ops[position])
            .collect()
    }

    /// Check `roles` with `position` changed to `role`, then change it back.
    fn check_changed(&mut self, roles: &mut [Role], position: usize, role: Role) -> SubCheck {
        let previous = std::mem::replace(&mut roles[position], role);
        let result = self.check(roles);
        roles[position] = previous;
        result
    }

    /// Search the sub-history of `roles` within what is left of the budget, at most
    /// [`MINIMIZE_CHECK_STATES_MAX`] states. Each sub-check is also charged one state
    /// per operation, for building its event list.
    fn check(&mut self, roles: &[Role]) -> SubCheck {
        let entries: Vec<Entry> = (0..self.ops.len())
            .filter_map(|position| {
                let mode = match roles[position] {
                    Role::Checked => Mode::Checked,
                    Role::Unchecked => Mode::Unchecked,
                    Role::Out => return None,
                };
                Some(Entry {
                    index: self.ops[position],
                    mode,
                })
            })
            .collect();
        let setup = entries.len() as u64;
        let available = self.states_left - self.states_reserved;
        if available <= setup {
            return SubCheck::OutOfBudget;
        }
        self.states_left -= setup;
        let check_max = self.states_max.min(MINIMIZE_CHECK_STATES_MAX);
        let limit = check_max.min(available - setup);
        let search = search(self.model, self.history, &entries, limit);
        assert!(search.states_explored <= limit);
        self.states_left -= search.states_explored;
        match search.outcome {
            Outcome::NotLinearizable => SubCheck::Fails,
            Outcome::Linearizable => SubCheck::Passes,
            Outcome::Exhausted if limit < check_max => SubCheck::OutOfBudget,
            Outcome::Exhausted => SubCheck::Unknown,
        }
    }
}
