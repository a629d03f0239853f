//! `UpdatePermissions`: replace a user's permissions (never root's).
//!
//! `LimitReached` (more than `PERMISSION_STREAMS_MAX` stream entries) is not declared:
//! an op carrying that many does not decode, so it never reaches the state machine.

use std::collections::BTreeMap;

use cluster::metadata::{
    GlobalPermissions, PERMISSION_STREAMS_MAX, Permissions, ROOT_USER_ID,
    StreamPermissions,
};

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::{self, Shadow};

/// The action's name.
pub const NAME: &str = "UpdatePermissions";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = outcomes!(Ok, UserNotFound, StreamNotFound, CannotModifyRoot);

fn stream_permissions(rng: &mut SimRng) -> StreamPermissions {
    StreamPermissions {
        manage_topics: shadow::coin(rng),
        read: shadow::coin(rng),
        write: shadow::coin(rng),
    }
}

/// Random global flags and an entry for each of the client's streams with probability
/// 1/2 (another client's stream may be deleted before this commits).
fn permissions_on_existing(scope: &Scope<'_>, rng: &mut SimRng) -> Permissions {
    let global = GlobalPermissions {
        manage_streams: shadow::coin(rng),
        read_streams: shadow::coin(rng),
        manage_users: shadow::coin(rng),
        read_users: shadow::coin(rng),
    };
    let mut streams = BTreeMap::new();
    for (stream_id, stream) in &scope.shadow.streams {
        if scope.owns_stream(stream) && shadow::coin(rng) {
            streams.insert(*stream_id, stream_permissions(rng));
        }
    }
    Permissions { global, streams }
}

/// `Ok`: one of the client's users other than root, entries for the client's streams
/// only; `StreamNotFound`: the same plus one absent stream; `UserNotFound`: an absent
/// id; `CannotModifyRoot`: root.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let (user_id, permissions) = match aim {
        Outcome::Ok => {
            let user_id = scope.pick_user_where(rng, |id, _| id != ROOT_USER_ID)?;
            (user_id, permissions_on_existing(scope, rng))
        }
        Outcome::StreamNotFound => {
            let user_id = scope.pick_user_where(rng, |id, _| id != ROOT_USER_ID)?;
            let mut permissions = permissions_on_existing(scope, rng);
            permissions
                .streams
                .insert(scope.absent_stream_id(rng), stream_permissions(rng));
            (user_id, permissions)
        }
        Outcome::UserNotFound => (scope.absent_user_id(rng), permissions_on_existing(scope, rng)),
        Outcome::CannotModifyRoot => (ROOT_USER_ID, permissions_on_existing(scope, rng)),
        _ => return None,
    };
    metadata_plan!(UpdatePermissions { user_id, permissions })
}

/// Checks in the state machine's order: root, user, entry count, streams.
pub fn predict(scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let_metadata_op!(UpdatePermissions { user_id, permissions } = request);
    let shadow = scope.shadow;
    let outcome = if *user_id == ROOT_USER_ID {
        Outcome::CannotModifyRoot
    } else if !shadow.users.contains_key(user_id) {
        Outcome::UserNotFound
    } else if permissions.streams.len() > PERMISSION_STREAMS_MAX {
        Outcome::LimitReached
    } else if permissions.streams.keys().any(|id| !shadow.streams.contains_key(id)) {
        Outcome::StreamNotFound
    } else {
        Outcome::Ok
    };
    outcome.into()
}

/// `Ok`: the user holds exactly the new permissions.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    let_metadata_answer!(UpdatePermissions { user_id, permissions }, reply = answered);
    if super::replied_ok(shadow, NAME, reply)
        && let Some(user) = shadow.users.get_mut(user_id)
    {
        user.permissions = permissions.clone();
    }
}
