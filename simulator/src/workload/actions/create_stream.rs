//! `CreateStream`: a stream with a name unique among streams.

use std::collections::BTreeMap;

use cluster::metadata::{MetadataOp, MetadataReply, Outcome, STREAMS_MAX, is_valid_name};

use crate::rng::SimRng;
use crate::workload::shadow::{self, STREAM_PREFIX, Shadow, ShadowStream};

/// The action's name.
pub const NAME: &str = "CreateStream";

/// Outcomes it can produce (`LimitReached`: [`STREAMS_MAX`] streams, or the id counter spent).
pub const OUTCOMES: &[Outcome] = &[
    Outcome::Ok,
    Outcome::NameAlreadyExists,
    Outcome::InvalidName,
    Outcome::LimitReached,
];

/// Whether `op` is a `CreateStream`.
pub fn matches(op: &MetadataOp) -> bool {
    matches!(op, MetadataOp::CreateStream { .. })
}

fn full(shadow: &Shadow) -> bool {
    shadow.streams.len() >= STREAMS_MAX || shadow.next_stream_id == u32::MAX
}

/// `Ok`: a fresh pool name; `NameAlreadyExists`: a taken one; `InvalidName`: an
/// invalid one; `LimitReached`: a fresh name once the streams are full.
pub fn generate(shadow: &Shadow, rng: &mut SimRng, aim: Outcome) -> Option<MetadataOp> {
    let name = match aim {
        Outcome::Ok if !full(shadow) => shadow::fresh_name(STREAM_PREFIX, rng, |n| shadow.stream_name_taken(n))?,
        Outcome::LimitReached if full(shadow) => {
            shadow::fresh_name(STREAM_PREFIX, rng, |n| shadow.stream_name_taken(n))?
        }
        Outcome::NameAlreadyExists => {
            let names: Vec<&str> = shadow.streams.values().map(|s| s.name.as_str()).collect();
            (*shadow::pick(&names, rng)?).to_owned()
        }
        Outcome::InvalidName => shadow::invalid_name(rng),
        _ => return None,
    };
    Some(MetadataOp::CreateStream { name })
}

/// Checks in the state machine's order: name, uniqueness, room, id counter.
pub fn predict(shadow: &Shadow, op: &MetadataOp) -> Outcome {
    let MetadataOp::CreateStream { name } = op else {
        super::wrong_op(NAME, op)
    };
    if !is_valid_name(name) {
        Outcome::InvalidName
    } else if shadow.stream_name_taken(name) {
        Outcome::NameAlreadyExists
    } else if full(shadow) {
        Outcome::LimitReached
    } else {
        Outcome::Ok
    }
}

/// `StreamCreated`: the stream exists under the id the cluster assigned.
pub fn observe(shadow: &mut Shadow, op: &MetadataOp, reply: &MetadataReply) {
    let MetadataOp::CreateStream { name } = op else {
        super::wrong_op(NAME, op)
    };
    match reply {
        MetadataReply::StreamCreated { stream_id } => {
            shadow.assign_stream_id(*stream_id, NAME);
            shadow.streams.insert(
                *stream_id,
                ShadowStream {
                    name: name.clone(),
                    topics: BTreeMap::new(),
                    next_topic_id: 0,
                },
            );
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
