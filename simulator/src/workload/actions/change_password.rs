//! `ChangePassword`: replace a user's password, given the current one.

use cluster::metadata::is_valid_password;

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::{self, Shadow};

/// The action's name.
pub const NAME: &str = "ChangePassword";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, UserNotFound, InvalidPassword, InvalidCredentials);

/// A password other than `current`.
fn wrong_password(current: &str, rng: &mut SimRng) -> String {
    let guess = shadow::pool_password(rng);
    if guess == current {
        format!("not-{current}")
    } else {
        guess
    }
}

/// `Ok`: a user the client may target, its current password, a pool password;
/// `InvalidPassword`: an invalid new password; `UserNotFound`: an absent id;
/// `InvalidCredentials`: a wrong current password. (Root's password is shared with
/// several clients, so only a lone client targets root.)
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let shadow = scope.shadow;
    let (user_id, current_password, new_password) = match aim {
        Outcome::Ok => {
            let user_id = scope.pick_user_where(rng, |_, _| true)?;
            let current = shadow.users[&user_id].password.clone();
            (user_id, current, shadow::pool_password(rng))
        }
        Outcome::InvalidPassword => {
            let user_id = match scope.pick_user_where(rng, |_, _| true) {
                Some(id) if shadow::coin(rng) => id,
                _ => scope.absent_user_id(rng),
            };
            (user_id, shadow::pool_password(rng), shadow::invalid_password(rng))
        }
        Outcome::UserNotFound => (
            scope.absent_user_id(rng),
            shadow::pool_password(rng),
            shadow::pool_password(rng),
        ),
        Outcome::InvalidCredentials => {
            let user_id = scope.pick_user_where(rng, |_, _| true)?;
            let wrong = wrong_password(&shadow.users[&user_id].password, rng);
            (user_id, wrong, shadow::pool_password(rng))
        }
        _ => return None,
    };
    metadata_plan!(ChangePassword { user_id, current_password, new_password })
}

/// Checks in the state machine's order: new password, user, current password.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let_metadata_op!(ChangePassword { user_id, current_password, new_password } = request);
    if !is_valid_password(new_password) {
        return Outcome::InvalidPassword.into();
    }
    let outcome = match scope.shadow.users.get(user_id) {
        None => Outcome::UserNotFound,
        Some(user) if user.password != *current_password => Outcome::InvalidCredentials,
        Some(_) => Outcome::Ok,
    };
    outcome.into()
}

/// `Ok`: the user has the new password.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let_metadata_answer!(ChangePassword { user_id, new_password, .. }, reply = answered);
    if super::replied_ok(shadow, NAME, reply)
        && let Some(user) = shadow.users.get_mut(user_id)
    {
        user.password = new_password.clone();
    }
}
