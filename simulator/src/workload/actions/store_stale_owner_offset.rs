//! `StoreStaleOwnerOffset`: after a partition was handed to a new owner, a former
//! owner (or another member) writes the group's offset. The owner fence must refuse
//! it (`StaleOwner`), before looking at the offset: a cluster that lets it through has
//! lost the fence. With the fence switched off for a test, this is the action that
//! fails.

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::{self, ABSENT_ID_SPAN, Shadow};

use super::fence;

/// The action's name.
pub const NAME: &str = "StoreStaleOwnerOffset";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = outcomes!(StaleOwner);

/// `StaleOwner`: a partition of the client's that some group has an owner of; a former
/// owner of that group, or another member at the owner's generation; an offset in the
/// log or (half the time) past it, which the fence must refuse first.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    if aim != Outcome::StaleOwner {
        return None;
    }
    let at = scope.pick_partition_where(rng, |_, p| !p.owners.is_empty())?;
    let partition = scope.shadow.partition(&at)?;
    let consumer = fence::stale_consumer(partition, rng)?;
    let next = partition.log.next_offset();
    let offset = if shadow::coin(rng) {
        rng.range_inclusive(0, next)
    } else {
        next + 1 + rng.below(ABSENT_ID_SPAN)
    };
    partition_plan!(at, StoreConsumerOffset { consumer, offset })
}

/// As `StoreConsumerOffset`: the fence first.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    super::store_consumer_offset::predict_store(scope, request, NAME)
}

/// As `StoreConsumerOffset`: the refusal must name the owner's generation.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    super::store_consumer_offset::observe_store(shadow, answered, NAME);
}
