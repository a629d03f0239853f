//! `DeletePersonalAccessToken`: delete a user's token by name.

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::{self, Shadow, TOKEN_PREFIX};

/// The action's name.
pub const NAME: &str = "DeletePersonalAccessToken";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, UserNotFound, TokenNotFound);

/// `Ok`: a token a user the client may target holds; `UserNotFound`: an absent user;
/// `TokenNotFound`: a pool name such a user does not hold.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let shadow = scope.shadow;
    let (user_id, name) = match aim {
        Outcome::Ok => {
            let user_id = scope.pick_user_where(rng, |_, u| !u.tokens.is_empty())?;
            let names: Vec<&str> = shadow.users[&user_id].tokens.keys().map(String::as_str).collect();
            (user_id, (*shadow::pick(&names, rng)?).to_owned())
        }
        Outcome::UserNotFound => (scope.absent_user_id(rng), scope.any_name(TOKEN_PREFIX, rng)),
        Outcome::TokenNotFound => {
            let user_id = scope.pick_user_where(rng, |_, u| u.tokens.len() < shadow::NAME_POOL_SIZE)?;
            let user = &shadow.users[&user_id];
            (
                user_id,
                scope.fresh_name(TOKEN_PREFIX, rng, |n| user.tokens.contains_key(n))?,
            )
        }
        _ => return None,
    };
    metadata_plan!(DeletePersonalAccessToken { user_id, name })
}

/// Checks in the state machine's order: user, token.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let_metadata_op!(DeletePersonalAccessToken { user_id, name } = request);
    let outcome = match scope.shadow.users.get(user_id) {
        None => Outcome::UserNotFound,
        Some(user) if !user.tokens.contains_key(name) => Outcome::TokenNotFound,
        Some(_) => Outcome::Ok,
    };
    outcome.into()
}

/// `Ok`: the token is gone.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let_metadata_answer!(DeletePersonalAccessToken { user_id, name }, reply = answered);
    if super::replied_ok(shadow, NAME, reply)
        && let Some(user) = shadow.users.get_mut(user_id)
    {
        user.tokens.remove(name);
    }
}
