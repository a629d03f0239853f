//! `LoginUser`: log in with a username and password (a replicated op: the session it
//! opens must be the same on every replica). A successful login as one of the client's
//! users is followed by a login as root, so the client's other actions keep acting as
//! root (the session is the client's, and the next login replaces it).

use cluster::metadata::{MetadataOp, MetadataReply};

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::{self, Shadow, USER_PREFIX};

/// The action's name.
pub const NAME: &str = "LoginUser";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, InvalidCredentials, UserInactive);

/// `Ok`: an active user the client may target, with its password;
/// `InvalidCredentials`: an unknown username of the client's namespace, or a known one
/// with a wrong password; `UserInactive`: an inactive user with its right password
/// (the state machine checks credentials first, so a wrong password never reveals that
/// a user is inactive).
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let shadow = scope.shadow;
    let (username, password) = match aim {
        Outcome::Ok => {
            let user_id = scope.pick_user_where(rng, |_, user| user.active)?;
            let user = &shadow.users[&user_id];
            (user.username.clone(), user.password.clone())
        }
        Outcome::UserInactive => {
            let user_id = scope.pick_user_where(rng, |_, user| !user.active)?;
            let user = &shadow.users[&user_id];
            (user.username.clone(), user.password.clone())
        }
        Outcome::InvalidCredentials => {
            if shadow::coin(rng) {
                let username = scope.fresh_name(USER_PREFIX, rng, |name| shadow.user_by_name(name).is_some())?;
                (username, shadow::pool_password(rng))
            } else {
                let user_id = scope.pick_user_where(rng, |_, _| true)?;
                let user = &shadow.users[&user_id];
                let guess = shadow::pool_password(rng);
                let wrong = if guess == user.password { format!("not-{guess}") } else { guess };
                (user.username.clone(), wrong)
            }
        }
        _ => return None,
    };
    let login = MetadataOp::LoginUser { username, password }.into();
    if aim == Outcome::Ok {
        return Some(Plan::new(vec![login, as_root(shadow)]));
    }
    Some(login.into())
}

/// A login as root with its password: every client's first request, and how a plan
/// that logged in as someone else hands the client back to root.
pub fn as_root(shadow: &Shadow) -> Request {
    let root = &shadow.users[&cluster::metadata::ROOT_USER_ID];
    MetadataOp::LoginUser {
        username: root.username.clone(),
        password: root.password.clone(),
    }
    .into()
}

/// In the state machine's order: the user, the password, then whether it is active.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let_metadata_op!(LoginUser { username, password } = request);
    let shadow = scope.shadow;
    let outcome = match shadow.user_by_name(username).map(|id| &shadow.users[&id]) {
        None => Outcome::InvalidCredentials,
        Some(user) if user.password != *password => Outcome::InvalidCredentials,
        Some(user) if !user.active => Outcome::UserInactive,
        Some(_) => Outcome::Ok,
    };
    outcome.into()
}

/// `LoggedIn`: the id must be the user's (the user is in the client's namespace, or
/// root); the client's session now acts as that user.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let_metadata_answer!(LoginUser { username, .. }, reply = answered);
    match reply {
        MetadataReply::LoggedIn { user_id, .. } => {
            if let Some(expected) = shadow.user_by_name(username)
                && expected != *user_id
            {
                shadow.note_mismatch(format!(
                    "{NAME} {username:?} logged in as user {user_id}, the shadow holds {expected}"
                ));
            }
            shadow.sessions.insert(answered.client, *user_id);
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
