//! `PurgeStream`: purge every partition of every topic of a stream, one `Purge`
//! request per partition in topic then partition order (a plan, each step judged).

use cluster::partition::PartitionOp;

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::Shadow;

/// The action's name.
pub const NAME: &str = "PurgeStream";

/// Outcomes it can produce (every step: a purge always succeeds).
pub const OUTCOMES: &[Outcome] = outcomes!(Ok);

/// `Ok`: a stream of the client's with at least one topic.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    if aim != Outcome::Ok {
        return None;
    }
    let stream_id = scope.pick_stream_where(rng, |stream| !stream.topics.is_empty())?;
    let steps: Vec<Request> = scope.shadow.streams[&stream_id]
        .topics
        .keys()
        .flat_map(|topic_id| super::purge_topic::purge_steps(scope, stream_id, *topic_id))
        .collect();
    (!steps.is_empty()).then(|| Plan::new(steps))
}

/// Always `Ok`.
pub fn predict(_scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let (_, PartitionOp::Purge) = super::partition_op(NAME, request) else {
        super::wrong_op(NAME, request)
    };
    Outcome::Ok.into()
}

/// As `PurgeTopic`, per step.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    super::purge_topic::observe_purge(shadow, answered, NAME);
}
