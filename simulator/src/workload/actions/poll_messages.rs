//! `PollMessages`: read a partition's messages from an offset (a query the partition's
//! primary answers from applied state, without consensus).
//!
//! Judged exactly: the next offset is the shadow's; every message is the one the shadow
//! holds at its offset; the first one is where the retained log must start (or, where
//! retention or segment deletion made that unknowable, at or above the first offset
//! possibly retained); the count is what the request, the caps and the retained
//! messages allow. A poll that reveals where the retained log starts teaches the shadow.

use cluster::partition::{POLL_MESSAGES_MAX, PollRequest};

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::{self, ABSENT_ID_SPAN, Shadow};
use crate::workload::shadow_partition::PollExpectation;

/// The action's name.
pub const NAME: &str = "PollMessages";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = outcomes!(Polled, PolledNothing);

/// Most messages a drawn poll asks for: past `POLL_MESSAGES_MAX`, so the cap is hit.
pub const POLL_COUNT_DRAW_MAX: u64 = POLL_MESSAGES_MAX as u64 + 20;

/// `Polled`: a partition of the client's with messages possibly retained, from an
/// offset among them (or, one time in four, from 0, below what retention or purges
/// left); `PolledNothing`: from the next offset or past it, or with count 0.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let (at, poll) = match aim {
        Outcome::Polled => {
            let at = scope.pick_partition_where(rng, |_, p| p.log.possibly_retained() > 0)?;
            let log = &scope.shadow.partition(&at)?.log;
            let offset = if rng.below(4) == 0 {
                0
            } else {
                rng.range_inclusive(log.floor(), log.next_offset() - 1)
            };
            let count = rng.range_inclusive(1, POLL_COUNT_DRAW_MAX) as u32;
            (at, PollRequest { offset, count })
        }
        Outcome::PolledNothing => {
            let at = scope.pick_partition_where(rng, |_, _| true)?;
            let log = &scope.shadow.partition(&at)?.log;
            if shadow::coin(rng) {
                let offset = log.next_offset() + rng.below(ABSENT_ID_SPAN);
                let count = rng.range_inclusive(1, POLL_COUNT_DRAW_MAX) as u32;
                (at, PollRequest { offset, count })
            } else {
                let offset = rng.range_inclusive(0, log.next_offset());
                (at, PollRequest { offset, count: 0 })
            }
        }
        _ => return None,
    };
    Some(Request::Poll { at, poll }.into())
}

/// Messages unless the count is 0 or nothing is possibly retained from the offset on
/// (the newest message is never dropped but by a purge, so "possibly" is "certainly").
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let Request::Poll { at, poll } = request else {
        super::wrong_op(NAME, request)
    };
    let expectation = scope
        .shadow
        .partition(at)
        .map_or(PollExpectation::Nothing, |partition| partition.log.expect_poll(poll));
    match expectation {
        PollExpectation::Messages => Outcome::Polled.into(),
        PollExpectation::Nothing => Outcome::PolledNothing.into(),
    }
}

/// Judge the answer against the shadow (see the module docs); every difference is a
/// failure.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let (at, poll, reply) = super::poll_answer(NAME, answered);
    let Some(partition) = shadow.partition_mut(&at) else {
        return;
    };
    let differences = partition.log.judge_poll(poll, reply);
    for difference in differences {
        shadow.note_mismatch(format!("{NAME} of group {:#x} ({poll:?}): {difference}", at.group));
    }
}
