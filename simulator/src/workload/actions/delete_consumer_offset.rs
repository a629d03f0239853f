//! `DeleteConsumerOffset`: forget a consumer's offset in a partition (a missing one is
//! fine); a group's only by its owner.

use cluster::partition::{PartitionOp, PartitionReply};

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::Shadow;

use super::fence;

/// The action's name.
pub const NAME: &str = "DeleteConsumerOffset";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, StaleOwner);

/// `Ok`: a consumer the fence lets through; `StaleOwner`: a non-owner of a group that
/// owns one of the client's partitions.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let (at, consumer) = match aim {
        Outcome::Ok => {
            let at = scope.pick_partition_where(rng, |_, _| true)?;
            (at, fence::allowed_consumer(scope, &at, rng))
        }
        Outcome::StaleOwner => {
            let at = scope.pick_partition_where(rng, |_, p| !p.owners.is_empty())?;
            (at, fence::stale_consumer(scope.shadow.partition(&at)?, rng)?)
        }
        _ => return None,
    };
    partition_plan!(at, DeleteConsumerOffset { consumer })
}

/// The owner fence decides.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let (at, PartitionOp::DeleteConsumerOffset { consumer }) = super::partition_op(NAME, request) else {
        super::wrong_op(NAME, request)
    };
    match scope.shadow.partition(&at) {
        Some(partition) if !fence::passes(partition, consumer) => Outcome::StaleOwner.into(),
        _ => Outcome::Ok.into(),
    }
}

/// `Ok`: the offset is gone.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let (at, op, reply) = super::partition_answer(NAME, answered);
    let PartitionOp::DeleteConsumerOffset { consumer } = op else {
        super::wrong_op(NAME, answered.request)
    };
    match reply {
        PartitionReply::Ok => {
            if let Some(partition) = shadow.partition_mut(&at) {
                partition.offsets.remove(&consumer.key());
            }
        }
        PartitionReply::StaleOwner { current_generation } => {
            fence::check_refusal(shadow, NAME, &at, consumer, current_generation);
        }
        other => super::unexpected_partition_reply(shadow, NAME, &other),
    }
}
