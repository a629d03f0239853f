//! A linearizability checker for the histories a workload records against the cluster.
//!
//! A history is every [`Operation`] clients ran against one object (one partition, one
//! consumer group, one user name), each with the virtual ticks it was invoked and
//! answered at, its input and its answer. [`check`] searches for a linearization: a
//! total order of the operations that respects real time (an operation answered before
//! another was invoked comes first) and in which every answer is the one the object's
//! sequential [`Model`] gives. The search is Wing & Gong's, with Lowe's memo of states
//! already explored, as Porcupine runs it (see `checker.rs`). When none exists,
//! [`Verdict::Violation`] names the few operations that show it (the answers that
//! cannot all be right, and the operations that make them wrong), for a report a human
//! can read ([`describe`]).
//!
//! An operation whose answer never arrived, or arrived saying the outcome is unknown, is
//! *ambiguous* (`output: None`): it may have taken effect at any moment after it was
//! invoked, or never. The checker treats its answer time as the end of time (it orders
//! nothing after it) and the model accepts any outcome for it; placing it last, after
//! everything, expresses "it never took effect". An ambiguous read changes nothing and
//! constrains nothing, so it is dropped before the search.
//!
//! The models (`partition.rs`, `group_offset.rs`, `group.rs`, `user.rs`) are written over workload-level
//! types of their own, not the cluster's: the checker states what a client may observe,
//! independently of how the cluster encodes it.
//!
//! Does not model: several objects at once (check each object's history on its own;
//! linearizability is compositional, so a history is linearizable iff each object's is),
//! or anything a client cannot observe through its answers.

mod checker;
mod group;
mod group_offset;
mod minimize;
mod partition;
mod user;

#[cfg(test)]
mod tests;

pub use checker::{SEARCH_STATES_MAX, check, describe};
pub use group::{GroupInput, GroupModel, GroupOutput, GroupState};
pub use group_offset::{GroupOffsetInput, GroupOffsetModel, GroupOffsetOutput, GroupOffsetState};
pub use minimize::{MINIMIZE_CHECK_STATES_MAX, MINIMIZE_STATES_MAX, PROBE_HORIZONS_MAX};
pub use partition::{PartitionInput, PartitionModel, PartitionOutput, PartitionState};
pub use user::{UserInput, UserModel, UserOutput, UserSlot};

/// One operation of a client against one object, as the workload saw it.
///
/// Invariant (asserted by [`check`]): if `output` is `Some`, `complete_tick` is `Some`;
/// a `complete_tick` is never before `invoke_tick`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation<I, O> {
    /// The client that ran it (for reports only: real-time order alone constrains).
    pub client: usize,
    /// When it was sent, in ticks.
    pub invoke_tick: u64,
    /// When its answer arrived; None = never (still open at the end, or given up): the outcome is unknown.
    pub complete_tick: Option<u64>,
    /// What was asked.
    pub input: I,
    /// The answer; None = ambiguous (may have taken effect at any point after invoke_tick, or never).
    pub output: Option<O>,
}

/// The sequential specification of one kind of object.
pub trait Model {
    /// Everything that decides later answers. `Hash` and `Eq` key the search's memo, so
    /// they must be exact (equal states answer everything alike) and should be cheap.
    type State: Clone + Eq + std::hash::Hash + std::fmt::Debug;
    /// An operation's request.
    type Input: Clone + std::fmt::Debug;
    /// An operation's answer.
    type Output: Clone + std::fmt::Debug + PartialEq;
    /// The object kind's name for reports ("partition", "consumer group", "user name").
    fn kind(&self) -> &'static str;
    /// The state before any operation.
    fn init(&self) -> Self::State;
    /// Apply `input` to `state`. With `Some(output)`: the new state if the model would answer exactly `output`, else None. With `None` (ambiguous): always Some(new state).
    fn step(&self, state: &Self::State, input: &Self::Input, output: Option<&Self::Output>) -> Option<Self::State>;
    /// True for operations that never change the state (polls).
    fn is_read(&self, input: &Self::Input) -> bool;
}

/// What [`check`] found about one object's history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckResult {
    /// The verdict.
    pub verdict: Verdict,
    /// Operations searched: the history less its ambiguous reads.
    pub operations: usize,
    /// Of those, the ambiguous ones (`output: None`).
    pub ambiguous: usize,
    /// States the search explored (the memo's size at the end), the minimization's
    /// sub-checks not counted.
    pub states_explored: u64,
}

/// Whether a history has a linearization.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// It has one.
    Linearizable,
    /// It has none: the cluster answered something no sequential order explains.
    Violation {
        /// The operations that show the violation: indices into the checked history,
        /// sorted by invoke tick (then index). Found in the earliest failing cut of the
        /// history, Sub(T) (the operations invoked by tick T; answers that arrived by T
        /// checked, the rest unchecked), as
        /// - the *necessary answers*: those whose being unchecked alone makes Sub(T)
        ///   pass (a stale poll; two sends at one offset); and
        /// - the *context that matters*: the other operations whose deletion alone makes
        ///   Sub(T) pass (the send the stale poll missed).
        ///
        /// Read it with [`describe`]. It is not a history that fails on its own, and not
        /// the result of greedy deletion: deleting a send can make later answers wrong
        /// for a reason the real history never had (see `checker.rs`).
        minimal: Vec<usize>,
        /// True when every test above was decided: each operation of `minimal` is then
        /// needed (unchecking or deleting it alone makes Sub(T) pass) and no other
        /// operation is. False when a test was undecided ([`MINIMIZE_CHECK_STATES_MAX`]:
        /// its operation is included) or the budget ran out ([`MINIMIZE_STATES_MAX`]:
        /// the operations not yet tested, the oldest, are left out).
        minimal_is_one_minimal: bool,
    },
    /// The search gave up after its state limit: nothing is known. Never a pass.
    Exhausted,
}
