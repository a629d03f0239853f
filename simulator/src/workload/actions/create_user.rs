//! `CreateUser`: a user with a username unique among users, a password, and no
//! permissions.

use std::collections::BTreeMap;

use cluster::metadata::{MetadataOp, MetadataReply, Outcome, Permissions, USERS_MAX, is_valid_name, is_valid_password};

use crate::rng::SimRng;
use crate::workload::shadow::{self, Shadow, ShadowUser, USER_PREFIX};

/// The action's name.
pub const NAME: &str = "CreateUser";

/// Outcomes it can produce (`LimitReached`: [`USERS_MAX`] users, or the id counter spent).
pub const OUTCOMES: &[Outcome] = &[
    Outcome::Ok,
    Outcome::NameAlreadyExists,
    Outcome::InvalidName,
    Outcome::InvalidPassword,
    Outcome::LimitReached,
];

/// Whether `op` is a `CreateUser`.
pub fn matches(op: &MetadataOp) -> bool {
    matches!(op, MetadataOp::CreateUser { .. })
}

fn full(shadow: &Shadow) -> bool {
    shadow.users.len() >= USERS_MAX || shadow.next_user_id == u32::MAX
}

fn fresh_username(shadow: &Shadow, rng: &mut SimRng) -> Option<String> {
    shadow::fresh_name(USER_PREFIX, rng, |n| shadow.user_by_name(n).is_some())
}

/// `Ok`: a fresh pool username and a pool password; `NameAlreadyExists`: a taken
/// username (root's included); `InvalidName`; `InvalidPassword`: a valid username and
/// an invalid password; `LimitReached`: only when the users are full.
pub fn generate(shadow: &Shadow, rng: &mut SimRng, aim: Outcome) -> Option<MetadataOp> {
    let (username, password) = match aim {
        Outcome::Ok if !full(shadow) => (fresh_username(shadow, rng)?, shadow::pool_password(rng)),
        Outcome::LimitReached if full(shadow) => (fresh_username(shadow, rng)?, shadow::pool_password(rng)),
        Outcome::NameAlreadyExists => {
            let names: Vec<&str> = shadow.users.values().map(|u| u.username.as_str()).collect();
            ((*shadow::pick(&names, rng)?).to_owned(), shadow::pool_password(rng))
        }
        Outcome::InvalidName => {
            let password = if shadow::coin(rng) {
                shadow::pool_password(rng)
            } else {
                shadow::invalid_password(rng)
            };
            (shadow::invalid_name(rng), password)
        }
        Outcome::InvalidPassword => (shadow::any_pool_name(USER_PREFIX, rng), shadow::invalid_password(rng)),
        _ => return None,
    };
    Some(MetadataOp::CreateUser {
        username,
        password,
        active: shadow::coin(rng),
    })
}

/// Checks in the state machine's order: username, password, uniqueness, room, id counter.
pub fn predict(shadow: &Shadow, op: &MetadataOp) -> Outcome {
    let MetadataOp::CreateUser { username, password, .. } = op else {
        super::wrong_op(NAME, op)
    };
    if !is_valid_name(username) {
        Outcome::InvalidName
    } else if !is_valid_password(password) {
        Outcome::InvalidPassword
    } else if shadow.user_by_name(username).is_some() {
        Outcome::NameAlreadyExists
    } else if full(shadow) {
        Outcome::LimitReached
    } else {
        Outcome::Ok
    }
}

/// `UserCreated`: the user exists under the id the cluster assigned, with no
/// permissions and no tokens.
pub fn observe(shadow: &mut Shadow, op: &MetadataOp, reply: &MetadataReply) {
    let MetadataOp::CreateUser {
        username,
        password,
        active,
    } = op
    else {
        super::wrong_op(NAME, op)
    };
    match reply {
        MetadataReply::UserCreated { user_id } => {
            shadow.assign_user_id(*user_id, NAME);
            shadow.users.insert(
                *user_id,
                ShadowUser {
                    username: username.clone(),
                    password: password.clone(),
                    active: *active,
                    permissions: Permissions::default(),
                    tokens: BTreeMap::new(),
                },
            );
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
