//! `DeletePartitions`: remove a topic's highest-numbered partitions (their groups
//! vanish); a topic keeps at least one.

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::{self, PARTITIONS_DRAW_MAX, Shadow};

/// The action's name.
pub const NAME: &str = "DeletePartitions";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, StreamNotFound, TopicNotFound, InvalidPartitionCount);

/// `Ok`: a topic of the client's with at least two partitions, fewer than it has;
/// `InvalidPartitionCount`: 0, or all of them or more; `TopicNotFound`,
/// `StreamNotFound`: absent ids below the client's.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let shadow = scope.shadow;
    let (stream_id, topic_id, count) = match aim {
        Outcome::Ok => {
            let (s, t) = scope.pick_topic_where(rng, |topic| topic.partition_count() >= 2)?;
            let current = shadow.topic(s, t)?.partition_count();
            (s, t, rng.range_inclusive(1, u64::from(current - 1)) as u32)
        }
        Outcome::InvalidPartitionCount => {
            let (s, t) = scope.pick_topic_where(rng, |_| true)?;
            let count = if shadow::coin(rng) {
                0
            } else {
                shadow.topic(s, t)?.partition_count() + rng.below(u64::from(PARTITIONS_DRAW_MAX)) as u32
            };
            (s, t, count)
        }
        Outcome::TopicNotFound | Outcome::StreamNotFound => {
            let (s, t) = scope.missing_topic(rng, aim)?;
            (s, t, 1)
        }
        _ => return None,
    };
    metadata_plan!(DeletePartitions { stream_id, topic_id, count })
}

/// Checks in the state machine's order: stream, topic, count.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let_metadata_op!(DeletePartitions { stream_id, topic_id, count } = request);
    let topic = topic_or_return!(scope, stream_id, topic_id);
    if *count == 0 || *count >= topic.partition_count() {
        Outcome::InvalidPartitionCount.into()
    } else {
        Outcome::Ok.into()
    }
}

/// `Ok`: the topic's `count` highest partitions are gone, with everything in them.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let_metadata_answer!(DeletePartitions { stream_id, topic_id, count }, reply = answered);
    if super::replied_ok(shadow, NAME, reply)
        && let Some(topic) = shadow.topic_mut(*stream_id, *topic_id)
    {
        let keep = topic.partition_count().saturating_sub(*count);
        // keep <= the partition count, a usize.
        topic.partitions.truncate(keep as usize);
    }
}
