//! `CreatePersonalAccessToken`: a named token for a user, revealed once in the reply.

use cluster::metadata::{MetadataReply, TOKEN_CHARS, TOKENS_PER_USER_MAX, is_valid_name};

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::{self, Shadow, ShadowUser, TOKEN_PREFIX};

/// The action's name.
pub const NAME: &str = "CreatePersonalAccessToken";

/// Outcomes it can produce (`LimitReached`: [`TOKENS_PER_USER_MAX`] tokens).
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, NameAlreadyExists, UserNotFound, InvalidName, LimitReached);

fn tokens_full(user: &ShadowUser) -> bool {
    user.tokens.len() >= TOKENS_PER_USER_MAX
}

fn fresh_token_name(scope: &Scope<'_>, user_id: u32, rng: &mut SimRng) -> Option<String> {
    let user = scope.shadow.users.get(&user_id)?;
    scope.fresh_name(TOKEN_PREFIX, rng, |n| user.tokens.contains_key(n))
}

/// `Ok`: a user the client may target with room and a fresh token name;
/// `NameAlreadyExists`: a name the user holds; `UserNotFound`; `InvalidName`;
/// `LimitReached`: only when a user's tokens are full.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let has_fresh_name = |u: &ShadowUser| scope.has_fresh_name(TOKEN_PREFIX, |n| u.tokens.contains_key(n));
    let (user_id, name) = match aim {
        Outcome::Ok => {
            let user_id = scope.pick_user_where(rng, |_, u| !tokens_full(u) && has_fresh_name(u))?;
            (user_id, fresh_token_name(scope, user_id, rng)?)
        }
        Outcome::LimitReached => {
            let user_id = scope.pick_user_where(rng, |_, u| tokens_full(u) && has_fresh_name(u))?;
            (user_id, fresh_token_name(scope, user_id, rng)?)
        }
        Outcome::NameAlreadyExists => {
            let user_id = scope.pick_user_where(rng, |_, u| !u.tokens.is_empty())?;
            let names: Vec<&str> = scope.shadow.users[&user_id].tokens.keys().map(String::as_str).collect();
            (user_id, (*shadow::pick(&names, rng)?).to_owned())
        }
        Outcome::UserNotFound => (scope.absent_user_id(rng), scope.any_name(TOKEN_PREFIX, rng)),
        Outcome::InvalidName => {
            let user_id = match scope.pick_user_where(rng, |_, _| true) {
                Some(id) if shadow::coin(rng) => id,
                _ => scope.absent_user_id(rng),
            };
            (user_id, shadow::invalid_name(rng))
        }
        _ => return None,
    };
    metadata_plan!(CreatePersonalAccessToken { user_id, name, expiry_micros: shadow::expiry(rng) })
}

/// Checks in the state machine's order: name, user, uniqueness, room.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let_metadata_op!(CreatePersonalAccessToken { user_id, name, .. } = request);
    if !is_valid_name(name) {
        return Outcome::InvalidName.into();
    }
    let outcome = match scope.shadow.users.get(user_id) {
        None => Outcome::UserNotFound,
        Some(user) if user.tokens.contains_key(name) => Outcome::NameAlreadyExists,
        Some(user) if tokens_full(user) => Outcome::LimitReached,
        Some(_) => Outcome::Ok,
    };
    outcome.into()
}

/// True for what `TokenCreated` must carry: [`TOKEN_CHARS`] lowercase hex digits.
fn well_formed(token: &str) -> bool {
    token.len() == TOKEN_CHARS && token.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// `TokenCreated`: the user holds a token of that name (kept with the token revealed).
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let_metadata_answer!(CreatePersonalAccessToken { user_id, name, .. }, reply = answered);
    match reply {
        MetadataReply::TokenCreated { token } => {
            if !well_formed(token) {
                shadow.note_mismatch(format!(
                    "{NAME} revealed a token of {} bytes, not {TOKEN_CHARS} lowercase hex digits",
                    token.len()
                ));
            }
            if let Some(user) = shadow.users.get_mut(user_id) {
                user.tokens.insert(name.clone(), token.clone());
            }
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
