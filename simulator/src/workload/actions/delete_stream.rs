//! `DeleteStream`: delete a stream with its topics, partitions and groups, and every
//! user's permissions on it.

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::Shadow;

/// The action's name.
pub const NAME: &str = "DeleteStream";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, StreamNotFound);

/// `Ok`: one of the client's streams; `StreamNotFound`: an absent id.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let stream_id = match aim {
        Outcome::Ok => scope.pick_stream(rng)?,
        Outcome::StreamNotFound => scope.absent_stream_id(rng),
        _ => return None,
    };
    metadata_plan!(DeleteStream { stream_id })
}

/// `Ok` if the stream exists.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let_metadata_op!(DeleteStream { stream_id } = request);
    if scope.shadow.streams.contains_key(stream_id) {
        Outcome::Ok.into()
    } else {
        Outcome::StreamNotFound.into()
    }
}

/// `Ok`: the stream is gone with its partitions, and so is every user's permission
/// entry for it.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let_metadata_answer!(DeleteStream { stream_id }, reply = answered);
    if super::replied_ok(shadow, NAME, reply) {
        shadow.streams.remove(stream_id);
        for user in shadow.users.values_mut() {
            user.permissions.streams.remove(stream_id);
        }
    }
}
