//! `DeleteUser`: delete a user with its tokens (never root).

use cluster::metadata::{MetadataOp, MetadataReply, Outcome, ROOT_USER_ID};

use crate::rng::SimRng;
use crate::workload::shadow::Shadow;

/// The action's name.
pub const NAME: &str = "DeleteUser";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = &[Outcome::Ok, Outcome::UserNotFound, Outcome::CannotModifyRoot];

/// Whether `op` is a `DeleteUser`.
pub fn matches(op: &MetadataOp) -> bool {
    matches!(op, MetadataOp::DeleteUser { .. })
}

/// `Ok`: an existing user other than root; `UserNotFound`: an absent id;
/// `CannotModifyRoot`: root.
pub fn generate(shadow: &Shadow, rng: &mut SimRng, aim: Outcome) -> Option<MetadataOp> {
    let user_id = match aim {
        Outcome::Ok => shadow.pick_user_where(rng, |id, _| id != ROOT_USER_ID)?,
        Outcome::UserNotFound => shadow.absent_user_id(rng),
        Outcome::CannotModifyRoot => ROOT_USER_ID,
        _ => return None,
    };
    Some(MetadataOp::DeleteUser { user_id })
}

/// Checks in the state machine's order: root, user.
pub fn predict(shadow: &Shadow, op: &MetadataOp) -> Outcome {
    let MetadataOp::DeleteUser { user_id } = op else {
        super::wrong_op(NAME, op)
    };
    if *user_id == ROOT_USER_ID {
        Outcome::CannotModifyRoot
    } else if shadow.users.contains_key(user_id) {
        Outcome::Ok
    } else {
        Outcome::UserNotFound
    }
}

/// `Ok`: the user is gone with its tokens.
pub fn observe(shadow: &mut Shadow, op: &MetadataOp, reply: &MetadataReply) {
    let MetadataOp::DeleteUser { user_id } = op else {
        super::wrong_op(NAME, op)
    };
    match reply {
        MetadataReply::Ok => {
            shadow.users.remove(user_id);
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
