//! `UpdatePermissions`: replace a user's permissions (never root's).
//!
//! `LimitReached` (more than `PERMISSION_STREAMS_MAX` stream entries) is not declared:
//! an op carrying that many does not decode, so it never reaches the state machine.

use std::collections::BTreeMap;

use cluster::metadata::{
    GlobalPermissions, MetadataOp, MetadataReply, Outcome, PERMISSION_STREAMS_MAX, Permissions, ROOT_USER_ID,
    StreamPermissions,
};

use crate::rng::SimRng;
use crate::workload::shadow::{self, Shadow};

/// The action's name.
pub const NAME: &str = "UpdatePermissions";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = &[
    Outcome::Ok,
    Outcome::UserNotFound,
    Outcome::StreamNotFound,
    Outcome::CannotModifyRoot,
];

/// Whether `op` is an `UpdatePermissions`.
pub fn matches(op: &MetadataOp) -> bool {
    matches!(op, MetadataOp::UpdatePermissions { .. })
}

fn stream_permissions(rng: &mut SimRng) -> StreamPermissions {
    StreamPermissions {
        manage_topics: shadow::coin(rng),
        read: shadow::coin(rng),
        write: shadow::coin(rng),
    }
}

/// Random global flags and an entry for each existing stream with probability 1/2.
fn permissions_on_existing(shadow: &Shadow, rng: &mut SimRng) -> Permissions {
    let global = GlobalPermissions {
        manage_streams: shadow::coin(rng),
        read_streams: shadow::coin(rng),
        manage_users: shadow::coin(rng),
        read_users: shadow::coin(rng),
    };
    let mut streams = BTreeMap::new();
    for stream_id in shadow.streams.keys() {
        if shadow::coin(rng) {
            streams.insert(*stream_id, stream_permissions(rng));
        }
    }
    Permissions { global, streams }
}

/// `Ok`: an existing user other than root, entries for existing streams only;
/// `StreamNotFound`: the same plus one absent stream; `UserNotFound`: an absent id;
/// `CannotModifyRoot`: root.
pub fn generate(shadow: &Shadow, rng: &mut SimRng, aim: Outcome) -> Option<MetadataOp> {
    let (user_id, permissions) = match aim {
        Outcome::Ok => {
            let user_id = shadow.pick_user_where(rng, |id, _| id != ROOT_USER_ID)?;
            (user_id, permissions_on_existing(shadow, rng))
        }
        Outcome::StreamNotFound => {
            let user_id = shadow.pick_user_where(rng, |id, _| id != ROOT_USER_ID)?;
            let mut permissions = permissions_on_existing(shadow, rng);
            permissions
                .streams
                .insert(shadow.absent_stream_id(rng), stream_permissions(rng));
            (user_id, permissions)
        }
        Outcome::UserNotFound => (shadow.absent_user_id(rng), permissions_on_existing(shadow, rng)),
        Outcome::CannotModifyRoot => (ROOT_USER_ID, permissions_on_existing(shadow, rng)),
        _ => return None,
    };
    Some(MetadataOp::UpdatePermissions { user_id, permissions })
}

/// Checks in the state machine's order: root, user, entry count, streams.
pub fn predict(shadow: &Shadow, op: &MetadataOp) -> Outcome {
    let MetadataOp::UpdatePermissions { user_id, permissions } = op else {
        super::wrong_op(NAME, op)
    };
    if *user_id == ROOT_USER_ID {
        Outcome::CannotModifyRoot
    } else if !shadow.users.contains_key(user_id) {
        Outcome::UserNotFound
    } else if permissions.streams.len() > PERMISSION_STREAMS_MAX {
        Outcome::LimitReached
    } else if permissions.streams.keys().any(|id| !shadow.streams.contains_key(id)) {
        Outcome::StreamNotFound
    } else {
        Outcome::Ok
    }
}

/// `Ok`: the user holds exactly the new permissions.
pub fn observe(shadow: &mut Shadow, op: &MetadataOp, reply: &MetadataReply) {
    let MetadataOp::UpdatePermissions { user_id, permissions } = op else {
        super::wrong_op(NAME, op)
    };
    match reply {
        MetadataReply::Ok => {
            if let Some(user) = shadow.users.get_mut(user_id) {
                user.permissions = permissions.clone();
            }
        }
        other => super::unexpected_reply(shadow, NAME, other),
    }
}
