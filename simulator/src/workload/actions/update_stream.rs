//! `UpdateStream`: rename a stream (its own current name is fine).

use cluster::metadata::{is_valid_name};

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::{self, STREAM_PREFIX, Shadow};

/// The action's name.
pub const NAME: &str = "UpdateStream";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, NameAlreadyExists, StreamNotFound, InvalidName);

/// `Ok`: one of the client's streams, a fresh name or its own; `NameAlreadyExists`:
/// another of its streams' names; `StreamNotFound`: an absent id; `InvalidName`.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let shadow = scope.shadow;
    let (stream_id, name) = match aim {
        Outcome::Ok => {
            let stream_id = scope.pick_stream(rng)?;
            let fresh = scope.fresh_name(STREAM_PREFIX, rng, |n| shadow.stream_name_taken(n));
            let name = match fresh {
                Some(name) if shadow::coin(rng) => name,
                _ => shadow.streams[&stream_id].name.clone(),
            };
            (stream_id, name)
        }
        Outcome::NameAlreadyExists => {
            let own: Vec<(u32, &str)> = shadow
                .streams
                .iter()
                .filter(|(_, s)| scope.owns_stream(s))
                .map(|(id, s)| (*id, s.name.as_str()))
                .collect();
            if own.len() < 2 {
                return None;
            }
            let stream_id = scope.pick_stream(rng)?;
            let others: Vec<&str> = own
                .iter()
                .filter(|(id, _)| *id != stream_id)
                .map(|(_, name)| *name)
                .collect();
            (stream_id, (*shadow::pick(&others, rng)?).to_owned())
        }
        Outcome::StreamNotFound => (scope.absent_stream_id(rng), scope.any_name(STREAM_PREFIX, rng)),
        Outcome::InvalidName => {
            let stream_id = match scope.pick_stream(rng) {
                Some(id) if shadow::coin(rng) => id,
                _ => scope.absent_stream_id(rng),
            };
            (stream_id, shadow::invalid_name(rng))
        }
        _ => return None,
    };
    metadata_plan!(UpdateStream { stream_id, name })
}

/// Checks in the state machine's order: name, stream, uniqueness among the others.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let_metadata_op!(UpdateStream { stream_id, name } = request);
    let shadow = scope.shadow;
    let outcome = if !is_valid_name(name) {
        Outcome::InvalidName
    } else if !shadow.streams.contains_key(stream_id) {
        Outcome::StreamNotFound
    } else if shadow.streams.iter().any(|(id, s)| id != stream_id && s.name == *name) {
        Outcome::NameAlreadyExists
    } else {
        Outcome::Ok
    };
    outcome.into()
}

/// `Ok`: the stream has the new name.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let_metadata_answer!(UpdateStream { stream_id, name }, reply = answered);
    if super::replied_ok(shadow, NAME, reply)
        && let Some(stream) = shadow.streams.get_mut(stream_id)
    {
        stream.name = name.clone();
    }
}
