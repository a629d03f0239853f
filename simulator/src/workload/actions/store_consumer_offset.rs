//! `StoreConsumerOffset`: record where a consumer reads next in a partition: a
//! standalone consumer, or a consumer group by its owner of the partition (or any
//! member while the group has no owner).

use cluster::partition::{PartitionOp, PartitionReply};

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::{ABSENT_ID_SPAN, Shadow};

use super::fence;

/// The action's name.
pub const NAME: &str = "StoreConsumerOffset";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, OffsetBeyondLog);

/// `Ok`: a consumer the fence lets through, an offset up to the next offset;
/// `OffsetBeyondLog`: the same consumer kinds, an offset past the next.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let at = scope.pick_partition_where(rng, |_, _| true)?;
    let next = scope.shadow.partition(&at)?.log.next_offset();
    let offset = match aim {
        Outcome::Ok => rng.range_inclusive(0, next),
        Outcome::OffsetBeyondLog => next + 1 + rng.below(ABSENT_ID_SPAN),
        _ => return None,
    };
    let consumer = fence::allowed_consumer(scope, &at, rng);
    partition_plan!(at, StoreConsumerOffset { consumer, offset })
}

/// In the state machine's order: the owner fence, then the offset against the log's
/// next offset (exact: one client writes the partition).
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    predict_store(scope, request, NAME)
}

/// `predict` for any store: shared with `StoreStaleOwnerOffset`.
pub fn predict_store(scope: &Scope<'_>, request: &Request, action: &str) -> OutcomeSet {
    let (at, PartitionOp::StoreConsumerOffset { consumer, offset }) = super::partition_op(action, request) else {
        super::wrong_op(action, request)
    };
    let Some(partition) = scope.shadow.partition(&at) else {
        return Outcome::Ok.into();
    };
    let outcome = if !fence::passes(partition, consumer) {
        Outcome::StaleOwner
    } else if *offset > partition.log.next_offset() {
        Outcome::OffsetBeyondLog
    } else {
        Outcome::Ok
    };
    outcome.into()
}

/// `Ok`: the consumer's offset is stored; refusals must report the shadow's next
/// offset or the owner's generation.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    observe_store(shadow, answered, NAME);
}

/// `observe` for any store: shared with `StoreStaleOwnerOffset`.
pub fn observe_store(shadow: &mut Shadow, answered: &Answered<'_>, action: &str) {
    let (at, op, reply) = super::partition_answer(action, answered);
    let PartitionOp::StoreConsumerOffset { consumer, offset } = op else {
        super::wrong_op(action, answered.request)
    };
    match reply {
        PartitionReply::Ok => {
            if let Some(partition) = shadow.partition_mut(&at) {
                partition.offsets.insert(consumer.key(), *offset);
            }
        }
        PartitionReply::OffsetBeyondLog { next_offset } => {
            let expected = shadow.partition(&at).map(|p| p.log.next_offset());
            if expected != Some(next_offset) {
                shadow.note_mismatch(format!(
                    "{action} to group {:#x} was refused OffsetBeyondLog with next offset {next_offset}, the shadow holds {expected:?}",
                    at.group
                ));
            }
        }
        PartitionReply::StaleOwner { current_generation } => {
            fence::check_refusal(shadow, action, &at, consumer, current_generation);
        }
        other => super::unexpected_partition_reply(shadow, action, &other),
    }
}
