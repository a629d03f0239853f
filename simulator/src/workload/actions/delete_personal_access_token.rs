//! `DeletePersonalAccessToken`: delete a user's token by name.

use cluster::metadata::{MetadataOp, MetadataReply, Outcome};

use crate::rng::SimRng;
use crate::workload::shadow::{self, Shadow, TOKEN_PREFIX};

/// The action's name.
pub const NAME: &str = "DeletePersonalAccessToken";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = &[Outcome::Ok, Outcome::UserNotFound, Outcome::TokenNotFound];

/// Whether `op` is a `DeletePersonalAccessToken`.
pub fn matches(op: &MetadataOp) -> bool {
    matches!(op, MetadataOp::DeletePersonalAccessToken { .. })
}

/// `Ok`: a token a user holds; `UserNotFound`: an absent user; `TokenNotFound`: a pool
/// name an existing user does not hold.
pub fn generate(shadow: &Shadow, rng: &mut SimRng, aim: Outcome) -> Option<MetadataOp> {
    let (user_id, name) = match aim {
        Outcome::Ok => {
            let user_id = shadow.pick_user_where(rng, |_, u| !u.tokens.is_empty())?;
            let names: Vec<&str> = shadow.users[&user_id].tokens.keys().map(String::as_str).collect();
            (user_id, (*shadow::pick(&names, rng)?).to_owned())
        }
        Outcome::UserNotFound => (shadow.absent_user_id(rng), shadow::any_pool_name(TOKEN_PREFIX, rng)),
        Outcome::TokenNotFound => {
            let user_id = shadow.pick_user_where(rng, |_, u| u.tokens.len() < shadow::NAME_POOL_SIZE)?;
            let user = &shadow.users[&user_id];
            (
                user_id,
                shadow::fresh_name(TOKEN_PREFIX, rng, |n| user.tokens.contains_key(n))?,
            )
        }
        _ => return None,
    };
    Some(MetadataOp::DeletePersonalAccessToken { user_id, name })
}

/// Checks in the state machine's order: user, token.
pub fn predict(shadow: &Shadow, op: &MetadataOp) -> Outcome {
    let MetadataOp::DeletePersonalAccessToken { user_id, name } = op else {
        super::wrong_op(NAME, op)
    };
    match shadow.users.get(user_id) {
        None => Outcome::UserNotFound,
        Some(user) if !user.tokens.contains_key(name) => Outcome::TokenNotFound,
        Some(_) => Outcome::Ok,
    }
}

/// `Ok`: the token is gone.
pub fn observe(shadow: &mut Shadow, op: &MetadataOp, reply: &MetadataReply) {
    let MetadataOp::DeletePersonalAccessToken { user_id, name } = op else {
        super::wrong_op(NAME, op)
    };
    match reply {
        MetadataReply::Ok => {
            if let Some(user) = shadow.users.get_mut(user_id) {
                user.tokens.remove(name);
            }
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
