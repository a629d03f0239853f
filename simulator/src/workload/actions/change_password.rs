//! `ChangePassword`: replace a user's password, given the current one.

use cluster::metadata::{MetadataOp, MetadataReply, Outcome, is_valid_password};

use crate::rng::SimRng;
use crate::workload::shadow::{self, Shadow};

/// The action's name.
pub const NAME: &str = "ChangePassword";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = &[
    Outcome::Ok,
    Outcome::UserNotFound,
    Outcome::InvalidPassword,
    Outcome::InvalidCredentials,
];

/// Whether `op` is a `ChangePassword`.
pub fn matches(op: &MetadataOp) -> bool {
    matches!(op, MetadataOp::ChangePassword { .. })
}

/// A password other than `current`.
fn wrong_password(current: &str, rng: &mut SimRng) -> String {
    let guess = shadow::pool_password(rng);
    if guess == current {
        format!("not-{current}")
    } else {
        guess
    }
}

/// `Ok`: an existing user, its current password, a pool password; `InvalidPassword`:
/// an invalid new password; `UserNotFound`: an absent id; `InvalidCredentials`: a
/// wrong current password.
pub fn generate(shadow: &Shadow, rng: &mut SimRng, aim: Outcome) -> Option<MetadataOp> {
    let (user_id, current_password, new_password) = match aim {
        Outcome::Ok => {
            let user_id = shadow.pick_user_where(rng, |_, _| true)?;
            let current = shadow.users[&user_id].password.clone();
            (user_id, current, shadow::pool_password(rng))
        }
        Outcome::InvalidPassword => {
            let user_id = match shadow.pick_user_where(rng, |_, _| true) {
                Some(id) if shadow::coin(rng) => id,
                _ => shadow.absent_user_id(rng),
            };
            (user_id, shadow::pool_password(rng), shadow::invalid_password(rng))
        }
        Outcome::UserNotFound => (
            shadow.absent_user_id(rng),
            shadow::pool_password(rng),
            shadow::pool_password(rng),
        ),
        Outcome::InvalidCredentials => {
            let user_id = shadow.pick_user_where(rng, |_, _| true)?;
            let wrong = wrong_password(&shadow.users[&user_id].password, rng);
            (user_id, wrong, shadow::pool_password(rng))
        }
        _ => return None,
    };
    Some(MetadataOp::ChangePassword {
        user_id,
        current_password,
        new_password,
    })
}

/// Checks in the state machine's order: new password, user, current password.
pub fn predict(shadow: &Shadow, op: &MetadataOp) -> Outcome {
    let MetadataOp::ChangePassword {
        user_id,
        current_password,
        new_password,
    } = op
    else {
        super::wrong_op(NAME, op)
    };
    if !is_valid_password(new_password) {
        return Outcome::InvalidPassword;
    }
    match shadow.users.get(user_id) {
        None => Outcome::UserNotFound,
        Some(user) if user.password != *current_password => Outcome::InvalidCredentials,
        Some(_) => Outcome::Ok,
    }
}

/// `Ok`: the user has the new password.
pub fn observe(shadow: &mut Shadow, op: &MetadataOp, reply: &MetadataReply) {
    let MetadataOp::ChangePassword {
        user_id, new_password, ..
    } = op
    else {
        super::wrong_op(NAME, op)
    };
    match reply {
        MetadataReply::Ok => {
            if let Some(user) = shadow.users.get_mut(user_id) {
                user.password = new_password.clone();
            }
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
