//! `PurgeTopic`: purge every partition of a topic, one `Purge` request per partition
//! in id order (a plan: each step is predicted when sent and judged on its reply).

use cluster::partition::{PartitionOp, PartitionReply};

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, PartitionAt, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::Shadow;

/// The action's name.
pub const NAME: &str = "PurgeTopic";

/// Outcomes it can produce (every step: a purge always succeeds).
pub const OUTCOMES: &[Outcome] = outcomes!(Ok);

/// A `Purge` for each partition of topic `(stream_id, topic_id)`, in id order.
pub fn purge_steps(scope: &Scope<'_>, stream_id: u32, topic_id: u32) -> Vec<Request> {
    let Some(topic) = scope.shadow.topic(stream_id, topic_id) else {
        return Vec::new();
    };
    topic
        .partitions
        .iter()
        .map(|partition| Request::Partition {
            at: PartitionAt {
                stream_id,
                topic_id,
                partition_id: partition.id,
                group: partition.group,
            },
            op: PartitionOp::Purge,
        })
        .collect()
}

/// `Ok`: a topic of the client's (every topic has a partition).
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    if aim != Outcome::Ok {
        return None;
    }
    let (stream_id, topic_id) = scope.pick_topic_where(rng, |topic| !topic.partitions.is_empty())?;
    Some(Plan::new(purge_steps(scope, stream_id, topic_id)))
}

/// Always `Ok`.
pub fn predict(_scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let (_, PartitionOp::Purge) = super::partition_op(NAME, request) else {
        super::wrong_op(NAME, request)
    };
    Outcome::Ok.into()
}

/// `Ok`: nothing below the next offset is retained any more.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    observe_purge(shadow, answered, NAME);
}

/// `observe` for a purge step: shared with `PurgeStream`.
pub fn observe_purge(shadow: &mut Shadow, answered: &Answered<'_>, action: &str) {
    let (at, op, reply) = super::partition_answer(action, answered);
    if *op != PartitionOp::Purge {
        super::wrong_op(action, answered.request)
    }
    match reply {
        PartitionReply::Ok => {
            if let Some(partition) = shadow.partition_mut(&at) {
                partition.log.purge();
            }
        }
        other => super::unexpected_partition_reply(shadow, action, &other),
    }
}
