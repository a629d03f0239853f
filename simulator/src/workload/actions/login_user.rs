//! `LoginUser`: log in with a username and password (a replicated op: the session it
//! opens must be the same on every replica).

use cluster::metadata::{MetadataOp, MetadataReply, Outcome};

use crate::rng::SimRng;
use crate::workload::shadow::{self, Shadow, USER_PREFIX};

/// The action's name.
pub const NAME: &str = "LoginUser";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = &[Outcome::Ok, Outcome::InvalidCredentials, Outcome::UserInactive];

/// Whether `op` is a `LoginUser`.
pub fn matches(op: &MetadataOp) -> bool {
    matches!(op, MetadataOp::LoginUser { .. })
}

/// `Ok`: an active user with its password; `InvalidCredentials`: an unknown username,
/// or a known one with a wrong password; `UserInactive`: an inactive user with its
/// right password (the state machine checks credentials first, so a wrong password
/// never reveals that a user is inactive).
pub fn generate(shadow: &Shadow, rng: &mut SimRng, aim: Outcome) -> Option<MetadataOp> {
    let (username, password) = match aim {
        Outcome::Ok => {
            let user_id = shadow.pick_user_where(rng, |_, user| user.active)?;
            let user = &shadow.users[&user_id];
            (user.username.clone(), user.password.clone())
        }
        Outcome::UserInactive => {
            let user_id = shadow.pick_user_where(rng, |_, user| !user.active)?;
            let user = &shadow.users[&user_id];
            (user.username.clone(), user.password.clone())
        }
        Outcome::InvalidCredentials => {
            if shadow::coin(rng) {
                let username = shadow::fresh_name(USER_PREFIX, rng, |name| shadow.user_by_name(name).is_some())?;
                (username, shadow::pool_password(rng))
            } else {
                let user_id = shadow.pick_user_where(rng, |_, _| true)?;
                let user = &shadow.users[&user_id];
                let guess = shadow::pool_password(rng);
                let wrong = if guess == user.password { format!("not-{guess}") } else { guess };
                (user.username.clone(), wrong)
            }
        }
        _ => return None,
    };
    Some(MetadataOp::LoginUser { username, password })
}

/// In the state machine's order: the user, the password, then whether it is active.
pub fn predict(shadow: &Shadow, op: &MetadataOp) -> Outcome {
    let MetadataOp::LoginUser { username, password } = op else {
        super::wrong_op(NAME, op)
    };
    match shadow.user_by_name(username).map(|id| &shadow.users[&id]) {
        None => Outcome::InvalidCredentials,
        Some(user) if user.password != *password => Outcome::InvalidCredentials,
        Some(user) if !user.active => Outcome::UserInactive,
        Some(_) => Outcome::Ok,
    }
}

/// `LoggedIn`: the id must be the user's (checked when the shadow is exact).
pub fn observe(shadow: &mut Shadow, op: &MetadataOp, reply: &MetadataReply) {
    let MetadataOp::LoginUser { username, .. } = op else {
        super::wrong_op(NAME, op)
    };
    match reply {
        MetadataReply::LoggedIn { user_id } => {
            if let Some(expected) = shadow.user_by_name(username)
                && expected != *user_id
            {
                shadow.note_id_mismatch(format!("{NAME} {username:?} logged in as user {user_id}, the shadow holds {expected}"));
            }
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
