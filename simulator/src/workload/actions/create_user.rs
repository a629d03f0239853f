//! `CreateUser`: a user with a username unique among users, a password, and no
//! permissions.

use std::collections::BTreeMap;

use cluster::metadata::{MetadataReply, Permissions, is_valid_name, is_valid_password};

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::{Global, Room, Scope};
use crate::workload::shadow::{self, Shadow, ShadowUser, USER_PREFIX};

/// The action's name.
pub const NAME: &str = "CreateUser";

/// Outcomes it can produce (`LimitReached`: `USERS_MAX` users, or the id counter spent).
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, NameAlreadyExists, InvalidName, InvalidPassword, LimitReached);

/// Whether one more user fits: the cluster's room, and (alone, where the counter is
/// exact) an id left.
fn room(scope: &Scope<'_>) -> Room {
    if !scope.shared() && scope.shadow.next_user_id == u32::MAX {
        Room::Full
    } else {
        scope.room(Global::Users, 1)
    }
}

fn fresh_username(scope: &Scope<'_>, rng: &mut SimRng) -> Option<String> {
    scope.fresh_name(USER_PREFIX, rng, |n| scope.shadow.user_by_name(n).is_some())
}

/// `Ok`: a fresh pool username and a pool password; `NameAlreadyExists`: a username the
/// client's users or root hold; `InvalidName`; `InvalidPassword`: a valid username
/// and an invalid password; `LimitReached`: only when the users are certainly full.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let shadow = scope.shadow;
    let (username, password) = match aim {
        Outcome::Ok if room(scope) != Room::Full => (fresh_username(scope, rng)?, shadow::pool_password(rng)),
        Outcome::LimitReached if room(scope) == Room::Full => {
            (fresh_username(scope, rng)?, shadow::pool_password(rng))
        }
        Outcome::NameAlreadyExists => {
            // Root's name is fixed while several clients run (none renames root).
            let names: Vec<&str> = shadow
                .users
                .values()
                .filter(|u| scope.owns_user(u) || u.owner.is_none())
                .map(|u| u.username.as_str())
                .collect();
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
        Outcome::InvalidPassword => (scope.any_name(USER_PREFIX, rng), shadow::invalid_password(rng)),
        _ => return None,
    };
    metadata_plan!(CreateUser { username, password, active: shadow::coin(rng) })
}

/// Checks in the state machine's order: username, password, uniqueness, room, id counter.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let_metadata_op!(CreateUser { username, password, .. } = request);
    if !is_valid_name(username) {
        Outcome::InvalidName.into()
    } else if !is_valid_password(password) {
        Outcome::InvalidPassword.into()
    } else if scope.shadow.user_by_name(username).is_some() {
        Outcome::NameAlreadyExists.into()
    } else {
        super::within(room(scope))
    }
}

/// `UserCreated`: the user exists under the id the cluster assigned, with no
/// permissions and no tokens, owned by the client that created it.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let_metadata_answer!(CreateUser { username, password, active }, reply = answered);
    match reply {
        MetadataReply::UserCreated { user_id } => {
            if shadow.users.contains_key(user_id) {
                shadow.note_mismatch(format!("{NAME} got user id {user_id}, which a live user holds"));
            }
            shadow.assign_user_id(*user_id, NAME);
            shadow.users.insert(
                *user_id,
                ShadowUser {
                    username: username.clone(),
                    password: password.clone(),
                    active: *active,
                    permissions: Permissions::default(),
                    tokens: BTreeMap::new(),
                    owner: Some(answered.client),
                },
            );
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
