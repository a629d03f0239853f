//! `DeleteUser`: delete a user with its tokens (never root).

use cluster::metadata::{ROOT_USER_ID};

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::Shadow;

/// The action's name.
pub const NAME: &str = "DeleteUser";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, UserNotFound, CannotModifyRoot);

/// `Ok`: one of the client's users other than root; `UserNotFound`: an absent id;
/// `CannotModifyRoot`: root.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let user_id = match aim {
        Outcome::Ok => scope.pick_user_where(rng, |id, _| id != ROOT_USER_ID)?,
        Outcome::UserNotFound => scope.absent_user_id(rng),
        Outcome::CannotModifyRoot => ROOT_USER_ID,
        _ => return None,
    };
    metadata_plan!(DeleteUser { user_id })
}

/// Checks in the state machine's order: root, user.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let_metadata_op!(DeleteUser { user_id } = request);
    let outcome = if *user_id == ROOT_USER_ID {
        Outcome::CannotModifyRoot
    } else if scope.shadow.users.contains_key(user_id) {
        Outcome::Ok
    } else {
        Outcome::UserNotFound
    };
    outcome.into()
}

/// `Ok`: the user is gone with its tokens.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let_metadata_answer!(DeleteUser { user_id }, reply = answered);
    if super::replied_ok(shadow, NAME, reply) {
        shadow.users.remove(user_id);
    }
}
