//! What a node knows about the clients that talk to it: the sessions and permissions of
//! its applied metadata ([`AccessView`], published by shard 0 like the directory) and
//! which sender it has bound to which session ([`Bindings`]).
//!
//! Models: a node admits a client's request only from a sender it has bound to that
//! client's current session (a `BindSession` it answered, checked against the session's
//! secret). Bindings are soft state: a restart forgets them and the client binds again,
//! under the same session, so its resends still deduplicate. A node never judges a
//! request against metadata older than what the client has seen (the request header's
//! `commit`): it waits a bounded time for its metadata to catch up instead.
//!
//! Does not model: connections (a sender is a `ProcessId`; in production, one per
//! connection), or expiry of bindings other than by eviction when full.

use std::collections::BTreeMap;

use crate::metadata::{MetadataState, Need, Permissions};
use crate::seam::ProcessId;

/// Most senders a node keeps bound. Each is a few dozen bytes; 4,096 matches the
/// sessions a cluster holds (`metadata::SESSIONS_MAX`). When full, the binding used
/// longest ago is dropped: its client is asked to bind again, which costs one round
/// trip and loses nothing.
pub const BINDINGS_MAX: usize = 4_096;

/// One session as a node's applied metadata holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The session's id.
    pub session: u64,
    /// Its bind secret.
    pub secret: u128,
    /// Who it acts as.
    pub user_id: u32,
    /// Whether that user still exists and is active (otherwise the session authorises
    /// nothing).
    pub active: bool,
    /// The user's permissions (empty when inactive).
    pub permissions: Permissions,
}

/// The sessions of a node's applied metadata, as of op `applied_op`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessView {
    /// The metadata op the node has applied (its metadata replica's `commit_min`).
    pub applied_op: u64,
    /// The metadata machine's access version the grants were built at.
    pub version: Option<u64>,
    /// Sessions by client id.
    pub grants: BTreeMap<u128, Grant>,
}

impl AccessView {
    /// Rebuild the grants from `state`.
    pub fn rebuild(&mut self, state: &MetadataState, version: u64) {
        self.grants = state
            .sessions()
            .iter()
            .map(|(client, session)| {
                let (active, permissions) = match state.session_user(client, session.id) {
                    Ok((_, permissions)) => (true, permissions.clone()),
                    Err(_) => (false, Permissions::default()),
                };
                let grant = Grant {
                    session: session.id,
                    secret: session.secret,
                    user_id: session.user_id,
                    active,
                    permissions,
                };
                (client, grant)
            })
            .collect();
        self.version = Some(version);
    }

    /// Whether `client`'s session (as bound, `session`) may do what `need` says: `Ok`,
    /// or the reason it may not.
    pub fn authorize(&self, client: u128, session: u64, need: Option<Need>) -> Result<(), Denied> {
        let grant = self
            .grants
            .get(&client)
            .filter(|grant| grant.session == session)
            .ok_or(Denied::Unbound)?;
        if !grant.active {
            return Err(Denied::Unauthenticated);
        }
        match need {
            Some(need) if !grant.permissions.allows(grant.user_id, need) => Err(Denied::PermissionDenied),
            _ => Ok(()),
        }
    }
}

/// Why a node refuses a request before it reaches its group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denied {
    /// The sender is not bound to the client's current session here.
    Unbound,
    /// The session's user is gone or inactive.
    Unauthenticated,
    /// The user lacks the permission.
    PermissionDenied,
}

/// Which sender this node knows as which client and session.
#[derive(Clone, Debug, Default)]
pub struct Bindings {
    by_sender: BTreeMap<ProcessId, Binding>,
    /// Counts binds, to find the oldest binding when full.
    binds: u64,
}

#[derive(Clone, Copy, Debug)]
struct Binding {
    client: u128,
    session: u64,
    bound_at: u64,
}

impl Bindings {
    /// Bind `sender` as `client` in `session`, replacing what it was bound to.
    pub fn bind(&mut self, sender: ProcessId, client: u128, session: u64) {
        if !self.by_sender.contains_key(&sender)
            && self.by_sender.len() >= BINDINGS_MAX
            && let Some(oldest) = self
                .by_sender
                .iter()
                .min_by_key(|(_, binding)| binding.bound_at)
                .map(|(sender, _)| *sender)
        {
            self.by_sender.remove(&oldest);
        }
        self.binds += 1;
        self.by_sender.insert(
            sender,
            Binding {
                client,
                session,
                bound_at: self.binds,
            },
        );
        assert!(self.by_sender.len() <= BINDINGS_MAX);
    }

    /// The session `sender` is bound to as `client`, if it is bound as that client.
    pub fn session_of(&self, sender: ProcessId, client: u128) -> Option<u64> {
        self.by_sender
            .get(&sender)
            .filter(|binding| binding.client == client)
            .map(|binding| binding.session)
    }

    /// How many senders are bound.
    pub fn len(&self) -> usize {
        self.by_sender.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.by_sender.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sender_is_bound_as_one_client_and_the_oldest_binding_goes_when_full() {
        let mut bindings = Bindings::default();
        bindings.bind(ProcessId(10), 7, 3);
        assert_eq!(bindings.session_of(ProcessId(10), 7), Some(3));
        assert_eq!(bindings.session_of(ProcessId(10), 8), None, "bound as another client");
        assert_eq!(bindings.session_of(ProcessId(11), 7), None, "another sender");
        bindings.bind(ProcessId(10), 7, 5);
        assert_eq!(bindings.session_of(ProcessId(10), 7), Some(5), "a rebind replaces");
        for sender in 0..BINDINGS_MAX as u32 - 1 {
            bindings.bind(ProcessId(1_000 + sender), 1, 1);
        }
        assert_eq!(bindings.len(), BINDINGS_MAX);
        bindings.bind(ProcessId(99), 2, 2);
        assert_eq!(bindings.len(), BINDINGS_MAX);
        assert_eq!(bindings.session_of(ProcessId(10), 7), None, "the oldest binding went");
    }

    #[test]
    fn a_grant_authorises_only_its_current_session_and_active_users() {
        let mut view = AccessView::default();
        view.grants.insert(
            7,
            Grant {
                session: 3,
                secret: 1,
                user_id: 2,
                active: true,
                permissions: Permissions::default(),
            },
        );
        assert_eq!(view.authorize(7, 3, None), Ok(()));
        assert_eq!(view.authorize(7, 4, None), Err(Denied::Unbound), "an old session");
        assert_eq!(view.authorize(8, 3, None), Err(Denied::Unbound), "no session");
        assert_eq!(
            view.authorize(7, 3, Some(Need::Write(1))),
            Err(Denied::PermissionDenied)
        );
        if let Some(grant) = view.grants.get_mut(&7) {
            grant.active = false;
        }
        assert_eq!(view.authorize(7, 3, None), Err(Denied::Unauthenticated));
    }
}
