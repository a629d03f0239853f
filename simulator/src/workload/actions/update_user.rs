//! `UpdateUser`: rename, activate or deactivate a user (`None` leaves a field as it is).

use cluster::metadata::{ROOT_USER_ID, is_valid_name};

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::{self, Shadow, USER_PREFIX};

/// The action's name.
pub const NAME: &str = "UpdateUser";

/// Outcomes it can produce (`CannotModifyRoot`: deactivating root).
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, NameAlreadyExists, UserNotFound, InvalidName, CannotModifyRoot);

/// A status change `user_id` may receive: never deactivation for root.
fn allowed_active(user_id: u32, rng: &mut SimRng) -> Option<bool> {
    match rng.below(3) {
        0 => None,
        1 => Some(true),
        _ if user_id == ROOT_USER_ID => Some(true),
        _ => Some(false),
    }
}

fn any_active(rng: &mut SimRng) -> Option<bool> {
    match rng.below(3) {
        0 => None,
        1 => Some(true),
        _ => Some(false),
    }
}

/// `Ok`: a user the client may target, no new name, its own or a fresh one, and a
/// status it may take; `NameAlreadyExists`: another such user's name or root's;
/// `UserNotFound`; `InvalidName`; `CannotModifyRoot`: deactivating root (whatever
/// root's state, so any client may aim there).
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let shadow = scope.shadow;
    let (user_id, username, active) = match aim {
        Outcome::Ok => {
            let user_id = scope.pick_user_where(rng, |_, _| true)?;
            let username = match rng.below(3) {
                0 => None,
                1 => Some(shadow.users[&user_id].username.clone()),
                _ => scope.fresh_name(USER_PREFIX, rng, |n| shadow.user_by_name(n).is_some()),
            };
            (user_id, username, allowed_active(user_id, rng))
        }
        Outcome::NameAlreadyExists => {
            // Names to collide with: the client's users' and root's (fixed while
            // several clients run, as none renames root).
            let holders: Vec<(u32, &str)> = shadow
                .users
                .iter()
                .filter(|(_, u)| scope.owns_user(u) || u.owner.is_none())
                .map(|(id, u)| (*id, u.username.as_str()))
                .collect();
            if holders.len() < 2 {
                return None;
            }
            let user_id = scope.pick_user_where(rng, |_, _| true)?;
            let others: Vec<&str> = holders
                .iter()
                .filter(|(id, _)| *id != user_id)
                .map(|(_, name)| *name)
                .collect();
            let username = (*shadow::pick(&others, rng)?).to_owned();
            (user_id, Some(username), allowed_active(user_id, rng))
        }
        Outcome::UserNotFound => {
            let username = shadow::coin(rng).then(|| scope.any_name(USER_PREFIX, rng));
            (scope.absent_user_id(rng), username, any_active(rng))
        }
        Outcome::InvalidName => {
            let user_id = match scope.pick_user_where(rng, |_, _| true) {
                Some(id) if shadow::coin(rng) => id,
                _ => scope.absent_user_id(rng),
            };
            (user_id, Some(shadow::invalid_name(rng)), any_active(rng))
        }
        Outcome::CannotModifyRoot => {
            let username = shadow::coin(rng).then(|| scope.any_name(USER_PREFIX, rng));
            (ROOT_USER_ID, username, Some(false))
        }
        _ => return None,
    };
    metadata_plan!(UpdateUser { user_id, username, active })
}

/// Checks in the state machine's order: name, user, root deactivation, uniqueness
/// among the others.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let_metadata_op!(UpdateUser { user_id, username, active } = request);
    let shadow = scope.shadow;
    let outcome = if username.as_deref().is_some_and(|name| !is_valid_name(name)) {
        Outcome::InvalidName
    } else if !shadow.users.contains_key(user_id) {
        Outcome::UserNotFound
    } else if *user_id == ROOT_USER_ID && *active == Some(false) {
        Outcome::CannotModifyRoot
    } else if let Some(name) = username
        && shadow.users.iter().any(|(id, u)| id != user_id && u.username == *name)
    {
        Outcome::NameAlreadyExists
    } else {
        Outcome::Ok
    };
    outcome.into()
}

/// `Ok`: the user has the new name and status, where given.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let_metadata_answer!(UpdateUser { user_id, username, active }, reply = answered);
    if super::replied_ok(shadow, NAME, reply)
        && let Some(user) = shadow.users.get_mut(user_id)
    {
        if let Some(username) = username {
            user.username = username.clone();
        }
        if let Some(active) = active {
            user.active = *active;
        }
    }
}
