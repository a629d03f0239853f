//! `DeleteStream`: delete a stream with its topics and groups, and every user's
//! permissions on it.

use cluster::metadata::{MetadataOp, MetadataReply, Outcome};

use crate::rng::SimRng;
use crate::workload::shadow::Shadow;

/// The action's name.
pub const NAME: &str = "DeleteStream";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = &[Outcome::Ok, Outcome::StreamNotFound];

/// Whether `op` is a `DeleteStream`.
pub fn matches(op: &MetadataOp) -> bool {
    matches!(op, MetadataOp::DeleteStream { .. })
}

/// `Ok`: an existing stream; `StreamNotFound`: a deleted or never-used id.
pub fn generate(shadow: &Shadow, rng: &mut SimRng, aim: Outcome) -> Option<MetadataOp> {
    let stream_id = match aim {
        Outcome::Ok => shadow.pick_stream(rng)?,
        Outcome::StreamNotFound => shadow.absent_stream_id(rng),
        _ => return None,
    };
    Some(MetadataOp::DeleteStream { stream_id })
}

/// `Ok` if the stream exists.
pub fn predict(shadow: &Shadow, op: &MetadataOp) -> Outcome {
    let MetadataOp::DeleteStream { stream_id } = op else {
        super::wrong_op(NAME, op)
    };
    if shadow.streams.contains_key(stream_id) {
        Outcome::Ok
    } else {
        Outcome::StreamNotFound
    }
}

/// `Ok`: the stream is gone, and so is every user's permission entry for it.
pub fn observe(shadow: &mut Shadow, op: &MetadataOp, reply: &MetadataReply) {
    let MetadataOp::DeleteStream { stream_id } = op else {
        super::wrong_op(NAME, op)
    };
    match reply {
        MetadataReply::Ok => {
            shadow.streams.remove(stream_id);
            for user in shadow.users.values_mut() {
                user.permissions.streams.remove(stream_id);
            }
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
