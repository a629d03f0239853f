//! `CreatePersonalAccessToken`: a named token for a user, revealed once in the reply.

use cluster::metadata::{MetadataOp, MetadataReply, Outcome, TOKEN_CHARS, TOKENS_PER_USER_MAX, is_valid_name};

use crate::rng::SimRng;
use crate::workload::shadow::{self, Shadow, ShadowUser, TOKEN_PREFIX};

/// The action's name.
pub const NAME: &str = "CreatePersonalAccessToken";

/// Outcomes it can produce (`LimitReached`: [`TOKENS_PER_USER_MAX`] tokens).
pub const OUTCOMES: &[Outcome] = &[
    Outcome::Ok,
    Outcome::NameAlreadyExists,
    Outcome::UserNotFound,
    Outcome::InvalidName,
    Outcome::LimitReached,
];

/// Whether `op` is a `CreatePersonalAccessToken`.
pub fn matches(op: &MetadataOp) -> bool {
    matches!(op, MetadataOp::CreatePersonalAccessToken { .. })
}

fn tokens_full(user: &ShadowUser) -> bool {
    user.tokens.len() >= TOKENS_PER_USER_MAX
}

fn has_fresh_name(user: &ShadowUser) -> bool {
    (0..shadow::NAME_POOL_SIZE).any(|i| !user.tokens.contains_key(&shadow::pool_name(TOKEN_PREFIX, i)))
}

fn fresh_token_name(shadow: &Shadow, user_id: u32, rng: &mut SimRng) -> Option<String> {
    let user = shadow.users.get(&user_id)?;
    shadow::fresh_name(TOKEN_PREFIX, rng, |n| user.tokens.contains_key(n))
}

/// `Ok`: a user with room and a fresh token name; `NameAlreadyExists`: a name the user
/// holds; `UserNotFound`; `InvalidName`; `LimitReached`: only when a user's tokens
/// are full.
pub fn generate(shadow: &Shadow, rng: &mut SimRng, aim: Outcome) -> Option<MetadataOp> {
    let (user_id, name) = match aim {
        Outcome::Ok => {
            let user_id = shadow.pick_user_where(rng, |_, u| !tokens_full(u) && has_fresh_name(u))?;
            (user_id, fresh_token_name(shadow, user_id, rng)?)
        }
        Outcome::LimitReached => {
            let user_id = shadow.pick_user_where(rng, |_, u| tokens_full(u) && has_fresh_name(u))?;
            (user_id, fresh_token_name(shadow, user_id, rng)?)
        }
        Outcome::NameAlreadyExists => {
            let user_id = shadow.pick_user_where(rng, |_, u| !u.tokens.is_empty())?;
            let names: Vec<&str> = shadow.users[&user_id].tokens.keys().map(String::as_str).collect();
            (user_id, (*shadow::pick(&names, rng)?).to_owned())
        }
        Outcome::UserNotFound => (shadow.absent_user_id(rng), shadow::any_pool_name(TOKEN_PREFIX, rng)),
        Outcome::InvalidName => {
            let user_id = match shadow.pick_user_where(rng, |_, _| true) {
                Some(id) if shadow::coin(rng) => id,
                _ => shadow.absent_user_id(rng),
            };
            (user_id, shadow::invalid_name(rng))
        }
        _ => return None,
    };
    Some(MetadataOp::CreatePersonalAccessToken {
        user_id,
        name,
        expiry_micros: shadow::expiry(rng),
    })
}

/// Checks in the state machine's order: name, user, uniqueness, room.
pub fn predict(shadow: &Shadow, op: &MetadataOp) -> Outcome {
    let MetadataOp::CreatePersonalAccessToken { user_id, name, .. } = op else {
        super::wrong_op(NAME, op)
    };
    if !is_valid_name(name) {
        return Outcome::InvalidName;
    }
    match shadow.users.get(user_id) {
        None => Outcome::UserNotFound,
        Some(user) if user.tokens.contains_key(name) => Outcome::NameAlreadyExists,
        Some(user) if tokens_full(user) => Outcome::LimitReached,
        Some(_) => Outcome::Ok,
    }
}

/// True for what `TokenCreated` must carry: [`TOKEN_CHARS`] lowercase hex digits.
fn well_formed(token: &str) -> bool {
    token.len() == TOKEN_CHARS && token.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// `TokenCreated`: the user holds a token of that name (kept with the token revealed).
pub fn observe(shadow: &mut Shadow, op: &MetadataOp, reply: &MetadataReply) {
    let MetadataOp::CreatePersonalAccessToken { user_id, name, .. } = op else {
        super::wrong_op(NAME, op)
    };
    match reply {
        MetadataReply::TokenCreated { token } => {
            if !well_formed(token) {
                shadow.note_reply_mismatch(format!(
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
