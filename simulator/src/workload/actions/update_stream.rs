//! `UpdateStream`: rename a stream (its own current name is fine).

use cluster::metadata::{MetadataOp, MetadataReply, Outcome, is_valid_name};

use crate::rng::SimRng;
use crate::workload::shadow::{self, STREAM_PREFIX, Shadow};

/// The action's name.
pub const NAME: &str = "UpdateStream";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = &[
    Outcome::Ok,
    Outcome::NameAlreadyExists,
    Outcome::StreamNotFound,
    Outcome::InvalidName,
];

/// Whether `op` is an `UpdateStream`.
pub fn matches(op: &MetadataOp) -> bool {
    matches!(op, MetadataOp::UpdateStream { .. })
}

/// `Ok`: an existing stream, a fresh name or its own; `NameAlreadyExists`: another
/// stream's name; `StreamNotFound`: an absent id; `InvalidName`: an invalid name.
pub fn generate(shadow: &Shadow, rng: &mut SimRng, aim: Outcome) -> Option<MetadataOp> {
    let (stream_id, name) = match aim {
        Outcome::Ok => {
            let stream_id = shadow.pick_stream(rng)?;
            let fresh = shadow::fresh_name(STREAM_PREFIX, rng, |n| shadow.stream_name_taken(n));
            let name = match fresh {
                Some(name) if shadow::coin(rng) => name,
                _ => shadow.streams[&stream_id].name.clone(),
            };
            (stream_id, name)
        }
        Outcome::NameAlreadyExists => {
            if shadow.streams.len() < 2 {
                return None;
            }
            let stream_id = shadow.pick_stream(rng)?;
            let others: Vec<&str> = shadow
                .streams
                .iter()
                .filter(|(id, _)| **id != stream_id)
                .map(|(_, s)| s.name.as_str())
                .collect();
            (stream_id, (*shadow::pick(&others, rng)?).to_owned())
        }
        Outcome::StreamNotFound => (shadow.absent_stream_id(rng), shadow::any_pool_name(STREAM_PREFIX, rng)),
        Outcome::InvalidName => {
            let stream_id = match shadow.pick_stream(rng) {
                Some(id) if shadow::coin(rng) => id,
                _ => shadow.absent_stream_id(rng),
            };
            (stream_id, shadow::invalid_name(rng))
        }
        _ => return None,
    };
    Some(MetadataOp::UpdateStream { stream_id, name })
}

/// Checks in the state machine's order: name, stream, uniqueness among the others.
pub fn predict(shadow: &Shadow, op: &MetadataOp) -> Outcome {
    let MetadataOp::UpdateStream { stream_id, name } = op else {
        super::wrong_op(NAME, op)
    };
    if !is_valid_name(name) {
        Outcome::InvalidName
    } else if !shadow.streams.contains_key(stream_id) {
        Outcome::StreamNotFound
    } else if shadow.streams.iter().any(|(id, s)| id != stream_id && s.name == *name) {
        Outcome::NameAlreadyExists
    } else {
        Outcome::Ok
    }
}

/// `Ok`: the stream has the new name.
pub fn observe(shadow: &mut Shadow, op: &MetadataOp, reply: &MetadataReply) {
    let MetadataOp::UpdateStream { stream_id, name } = op else {
        super::wrong_op(NAME, op)
    };
    match reply {
        MetadataReply::Ok => {
            if let Some(stream) = shadow.streams.get_mut(stream_id) {
                stream.name = name.clone();
            }
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
