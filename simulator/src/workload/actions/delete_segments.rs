//! `DeleteSegments`: drop up to `count` of a partition's oldest sealed segments (never
//! the active one). How many that is depends on where segments roll, which the shadow
//! does not model: the reply is held to what is certain, and the shadow's floor
//! becomes inexact until a poll reveals where the retained log starts.

use cluster::partition::{PartitionOp, PartitionReply};

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::Shadow;

/// The action's name.
pub const NAME: &str = "DeleteSegments";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = outcomes!(SegmentsDeleted);

/// Most segments one drawn request asks to drop: a few, so a partition's history
/// usually survives several deletions; 0 is drawn too (a deletion of nothing).
pub const SEGMENTS_DRAW_MAX: u64 = 3;

/// `SegmentsDeleted`: any partition of the client's, 0 to [`SEGMENTS_DRAW_MAX`].
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    if aim != Outcome::SegmentsDeleted {
        return None;
    }
    let at = scope.pick_partition_where(rng, |_, _| true)?;
    // SEGMENTS_DRAW_MAX is tiny, so the draw fits a u32.
    let count = rng.below(SEGMENTS_DRAW_MAX + 1) as u32;
    partition_plan!(at, DeleteSegments { count })
}

/// Always `SegmentsDeleted` (with some count).
pub fn predict(_scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let (_, PartitionOp::DeleteSegments { .. }) = super::partition_op(NAME, request) else {
        super::wrong_op(NAME, request)
    };
    Outcome::SegmentsDeleted.into()
}

/// `SegmentsDeleted { dropped }`: at most the count asked for, and at most one fewer
/// than the messages possibly retained (sealed segments are never empty and the
/// active one, holding the newest message, is never dropped).
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let (at, op, reply) = super::partition_answer(NAME, answered);
    let PartitionOp::DeleteSegments { count } = op else {
        super::wrong_op(NAME, answered.request)
    };
    match reply {
        PartitionReply::SegmentsDeleted { count: dropped } => {
            let Some(partition) = shadow.partition_mut(&at) else {
                return;
            };
            let sealed_max = partition.log.possibly_retained().saturating_sub(1);
            partition.log.segments_deleted(dropped);
            // usize -> u64 is lossless on every supported target.
            if dropped > *count || u64::from(dropped) > sealed_max as u64 {
                shadow.note_mismatch(format!(
                    "{NAME} of {count} on group {:#x} dropped {dropped} segments; at most {} could go ({sealed_max} messages besides the newest possibly retained)",
                    at.group,
                    (*count).min(u32::try_from(sealed_max).unwrap_or(u32::MAX))
                ));
            }
        }
        other => super::unexpected_partition_reply(shadow, NAME, &other),
    }
}
