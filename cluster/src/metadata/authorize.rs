//! Which permission each request needs, and the check against a client's session.
//!
//! Models: every request but a login acts as the user of its client's session. A
//! metadata op is authorised when it is applied, against the session and permissions
//! of the applied state (so every replica reaches the same verdict, and a verdict is
//! cached in the client table like any reply). A partition request is authorised by
//! the node that receives it, against its applied metadata (`node/access.rs`), before
//! anything is prepared. Both use [`Need`] and [`Permissions::allows`].
//!
//! The rules: managing streams (global `manage_streams`) covers every stream's topics,
//! groups, messages and offsets; a stream's `manage_topics` covers its topics, groups
//! and purges; reading (global `read_streams` or the stream's `read`) covers polls,
//! offsets and group membership; writing (the stream's `write`, or `manage_streams`)
//! covers sends. Users are managed with `manage_users`; a user may change its own
//! password and tokens without it.
//!
//! Does not model: per-topic permissions, read-only metadata queries (there are none),
//! or rate limits.

use super::ops::MetadataOp;
use super::permissions::Permissions;
use super::reply::MetadataReply;
use super::state::MetadataState;

/// What a request needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Create, rename, delete or purge streams (global `manage_streams`).
    ManageStreams,
    /// Manage one stream's topics, partitions and consumer groups.
    ManageTopics(u32),
    /// Read one stream: poll, store offsets, join or leave its groups.
    Read(u32),
    /// Send messages to one stream's topics.
    Write(u32),
    /// Create, change or delete users and their permissions (global `manage_users`).
    ManageUsers,
    /// Act on one user's own credentials: the user itself, or `manage_users`.
    SelfOrManageUsers(u32),
}

impl Permissions {
    /// Whether these permissions, held by user `user_id`, cover `need`.
    pub fn allows(&self, user_id: u32, need: Need) -> bool {
        let global = self.global;
        let stream = |id: u32| self.streams.get(&id).copied().unwrap_or_default();
        match need {
            Need::ManageStreams => global.manage_streams,
            Need::ManageTopics(id) => global.manage_streams || stream(id).manage_topics,
            Need::Read(id) => {
                global.manage_streams || global.read_streams || stream(id).read || stream(id).manage_topics
            }
            Need::Write(id) => global.manage_streams || stream(id).write,
            Need::ManageUsers => global.manage_users,
            Need::SelfOrManageUsers(target) => target == user_id || global.manage_users,
        }
    }
}

/// What `op` needs, or `None` for a login (which needs no session).
pub fn need_of(op: &MetadataOp) -> Option<Need> {
    Some(match op {
        MetadataOp::LoginUser { .. } | MetadataOp::LoginWithPersonalAccessToken { .. } => return None,
        MetadataOp::CreateStream { .. } | MetadataOp::UpdateStream { .. } | MetadataOp::DeleteStream { .. } => {
            Need::ManageStreams
        }
        MetadataOp::CreateTopic { stream_id, .. }
        | MetadataOp::UpdateTopic { stream_id, .. }
        | MetadataOp::DeleteTopic { stream_id, .. }
        | MetadataOp::CreateConsumerGroup { stream_id, .. }
        | MetadataOp::DeleteConsumerGroup { stream_id, .. }
        | MetadataOp::CreatePartitions { stream_id, .. }
        | MetadataOp::DeletePartitions { stream_id, .. } => Need::ManageTopics(*stream_id),
        MetadataOp::JoinConsumerGroup { stream_id, .. } | MetadataOp::LeaveConsumerGroup { stream_id, .. } => {
            Need::Read(*stream_id)
        }
        MetadataOp::CreateUser { .. }
        | MetadataOp::UpdateUser { .. }
        | MetadataOp::DeleteUser { .. }
        | MetadataOp::UpdatePermissions { .. } => Need::ManageUsers,
        MetadataOp::ChangePassword { user_id, .. }
        | MetadataOp::CreatePersonalAccessToken { user_id, .. }
        | MetadataOp::DeletePersonalAccessToken { user_id, .. } => Need::SelfOrManageUsers(*user_id),
    })
}

impl MetadataState {
    /// The user `client` acts as in `session`: the session's, if it is still the
    /// client's and its user still exists and is active. `Unauthenticated` otherwise
    /// (never logged in, session closed or replaced, user deleted or deactivated since).
    pub fn session_user(&self, client: u128, session: u64) -> Result<(u32, &Permissions), MetadataReply> {
        let session = self
            .sessions
            .get(client)
            .filter(|open| open.id == session)
            .ok_or(MetadataReply::Unauthenticated)?;
        match self.users.get(&session.user_id) {
            Some(user) if user.active => Ok((user.id, &user.permissions)),
            _ => Err(MetadataReply::Unauthenticated),
        }
    }

    /// Whether `client` may have `op`, sent in `session`, applied: `Ok` for a login or
    /// an op the session's user is permitted, else `Unauthenticated` or
    /// `PermissionDenied`.
    pub fn authorize(&self, client: u128, session: u64, op: &MetadataOp) -> Result<(), MetadataReply> {
        let Some(need) = need_of(op) else { return Ok(()) };
        let (user_id, permissions) = self.session_user(client, session)?;
        if permissions.allows(user_id, need) {
            Ok(())
        } else {
            Err(MetadataReply::PermissionDenied)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::{GlobalPermissions, StreamPermissions};

    /// One need of each kind, on stream 1 or user 2 (the tests act as user 1).
    const EVERY_NEED: [Need; 6] = [
        Need::ManageStreams,
        Need::ManageTopics(1),
        Need::Read(1),
        Need::Write(1),
        Need::ManageUsers,
        Need::SelfOrManageUsers(2),
    ];

    /// Permissions on stream `id` alone: the default ones with `grant` applied.
    fn only_stream(id: u32, grant: fn(&mut StreamPermissions)) -> Permissions {
        let mut stream = StreamPermissions::default();
        grant(&mut stream);
        Permissions {
            global: GlobalPermissions::default(),
            streams: [(id, stream)].into(),
        }
    }

    #[test]
    fn nothing_is_allowed_by_default_but_a_users_own_credentials() {
        let none = Permissions::default();
        for need in EVERY_NEED {
            assert!(!none.allows(1, need), "{need:?}");
        }
        assert!(none.allows(1, Need::SelfOrManageUsers(1)));
    }

    #[test]
    fn stream_permissions_cover_their_stream_only() {
        let read = only_stream(3, |stream| stream.read = true);
        assert!(read.allows(1, Need::Read(3)));
        assert!(!read.allows(1, Need::Read(4)));
        assert!(!read.allows(1, Need::Write(3)));
        let write = only_stream(3, |stream| stream.write = true);
        assert!(write.allows(1, Need::Write(3)));
        assert!(!write.allows(1, Need::Read(3)));
        assert!(!write.allows(1, Need::ManageTopics(3)));
    }

    #[test]
    fn root_is_allowed_everything() {
        let full = Permissions::full();
        for need in EVERY_NEED {
            assert!(full.allows(0, need), "{need:?}");
        }
    }

    #[test]
    fn logins_need_no_session() {
        let login = MetadataOp::LoginUser {
            username: "u".into(),
            password: "p".into(),
        };
        assert_eq!(need_of(&login), None);
        let state = MetadataState::new("secret", 1);
        assert_eq!(state.authorize(77, 0, &login), Ok(()));
        let create = MetadataOp::CreateStream { name: "s".into() };
        assert_eq!(state.authorize(77, 0, &create), Err(MetadataReply::Unauthenticated));
    }
}
