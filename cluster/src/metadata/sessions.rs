//! Sessions: who a client id acts as, replicated with the rest of the metadata.
//!
//! Models: a successful login opens a session for the client id that sent it (the
//! prepare header's `client`), replacing any session that client had. The session's id
//! is the login's op number (unique, increasing) and its bind secret is drawn from the
//! op's replicated entropy, so every replica holds the same session and any node can
//! bind a reconnecting client from its own applied copy, without a consensus round
//! ([`BindSession`]). Sessions are bounded by [`SESSIONS_MAX`]; when full, the oldest
//! session closes. A session outlives nothing it should not: a deleted or deactivated
//! user's sessions stop authorising at once (checked on every use, see `authorize.rs`).
//!
//! Does not model: logout, session expiry by time, or which connection a session is
//! bound to on a node (the node's binding table, `node/bindings.rs`).

use std::collections::BTreeMap;

use xxhash_rust::xxh3::xxh3_128_with_seed;

use super::limits::SESSIONS_MAX;
use super::state::MetadataState;
use crate::codec::{DecodeError, Reader, Writer};

/// Domain-separation prefix: a bind secret and a salt drawn from the same entropy differ.
const SECRET_DOMAIN: &[u8] = b"iggy-metadata/session-secret";

/// The operation code of a [`BindSession`] request (header `group` 0). Outside every
/// metadata and partition operation code, so a bind can never decode as an op, and the
/// metadata state machine refuses it if it ever reached a primary's request path.
pub const BIND_SESSION_CODE: u8 = 200;

/// One client's session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Session {
    /// The op number of the login that opened it.
    pub id: u64,
    /// Who it acts as.
    pub user_id: u32,
    /// What a reconnecting client presents with [`BindSession`].
    pub secret: u128,
}

/// The sessions of the applied metadata, by client id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sessions {
    by_client: BTreeMap<u128, Session>,
}

/// The bind secret of the session opened by login op `op_number` for `client`, from the
/// op's replicated `entropy`.
pub fn derive_session_secret(entropy: u64, op_number: u64, client: u128) -> u128 {
    let mut input = Vec::with_capacity(SECRET_DOMAIN.len() + 24);
    input.extend_from_slice(SECRET_DOMAIN);
    input.extend_from_slice(&op_number.to_le_bytes());
    input.extend_from_slice(&client.to_le_bytes());
    xxh3_128_with_seed(&input, entropy)
}

impl Sessions {
    /// `client`'s session, if it has one.
    pub fn get(&self, client: u128) -> Option<&Session> {
        self.by_client.get(&client)
    }

    /// How many sessions are open.
    pub fn len(&self) -> usize {
        self.by_client.len()
    }

    /// Whether none is open.
    pub fn is_empty(&self) -> bool {
        self.by_client.is_empty()
    }

    /// Every session, by client id.
    pub fn iter(&self) -> impl Iterator<Item = (u128, &Session)> {
        self.by_client.iter().map(|(client, session)| (*client, session))
    }

    /// Open `session` for `client`, replacing its previous one. When [`SESSIONS_MAX`]
    /// sessions are open and `client` has none, the oldest (lowest id) closes first: its
    /// client must log in again, which it learns when a bind is refused.
    pub(super) fn open(&mut self, client: u128, session: Session) {
        debug_assert!(
            self.by_client.values().all(|open| open.id < session.id),
            "session ids are login op numbers, so a new one is the highest"
        );
        if !self.by_client.contains_key(&client)
            && self.by_client.len() >= SESSIONS_MAX
            && let Some(oldest) = self.by_client.iter().min_by_key(|(_, open)| open.id).map(|(c, _)| *c)
        {
            self.by_client.remove(&oldest);
        }
        self.by_client.insert(client, session);
        assert!(self.by_client.len() <= SESSIONS_MAX);
    }

    /// Layout: `[count: varint]` then `[client: u128][id: u64][user id: u32][secret: u128]`
    /// per session in ascending client id.
    pub(super) fn encode_into(&self, w: &mut Writer) {
        w.len(self.by_client.len());
        for (client, session) in &self.by_client {
            w.u128(*client);
            w.u64(session.id);
            w.u32(session.user_id);
            w.u128(session.secret);
        }
    }

    /// Inverse of [`Sessions::encode_into`]. Refuses client ids that are not strictly
    /// ascending or are 0 (replica frames), more than [`SESSIONS_MAX`] sessions, two
    /// sessions with one id, and ids of ops not yet applied (or 0, genesis).
    pub(super) fn decode_from(r: &mut Reader<'_>, op_number_applied: u64) -> Result<Self, DecodeError> {
        let mut by_client = BTreeMap::new();
        let mut ids = std::collections::BTreeSet::new();
        for _ in 0..r.len("session count", SESSIONS_MAX)? {
            let client = r.u128("session client")?;
            if client == 0 || by_client.last_key_value().is_some_and(|(last, _)| *last >= client) {
                return Err(DecodeError::NonCanonical {
                    field: "session client ids",
                });
            }
            let session = Session {
                id: r.u64("session id")?,
                user_id: r.u32("session user id")?,
                secret: r.u128("session secret")?,
            };
            if session.id == 0 || session.id > op_number_applied || !ids.insert(session.id) {
                return Err(DecodeError::InvalidState {
                    what: "a session id is not a distinct applied login op",
                });
            }
            by_client.insert(client, session);
        }
        Ok(Self { by_client })
    }
}

impl MetadataState {
    /// The open sessions.
    pub fn sessions(&self) -> &Sessions {
        &self.sessions
    }
}

/// A reconnecting client's request to bind its session on the node it reached. Sent
/// with header `group` 0, operation [`BIND_SESSION_CODE`], the client's id and, in the
/// header's `commit`, the newest metadata op the client has seen (as every request
/// carries). Answered by any node from its applied metadata, never replicated:
/// `SessionBound` or `SessionRefused` (a `MetadataReply`), or a `TransientNotAccepted`
/// refusal when the node's metadata stays behind that op for too long.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct BindSession {
    /// The session's id, as `LoggedIn` gave it.
    pub session: u64,
    /// Its bind secret, as `LoggedIn` gave it.
    pub secret: u128,
}

impl BindSession {
    /// `[session: u64][secret: u128]`.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u64(self.session);
        w.u128(self.secret);
        w.finish()
    }

    /// Parse a body occupying all of `bytes`. Never panics.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        let bind = Self {
            session: r.u64("session id")?,
            secret: r.u128("session secret")?,
        };
        r.finish()?;
        Ok(bind)
    }
}

impl std::fmt::Debug for BindSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret is a credential: keep it out of logs.
        write!(f, "BindSession {{ session: {}, secret: <redacted> }}", self.session)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: u64) -> Session {
        Session {
            id,
            user_id: 1,
            secret: u128::from(id) * 7,
        }
    }

    #[test]
    fn a_new_login_replaces_the_clients_session_and_the_oldest_closes_when_full() {
        let mut sessions = Sessions::default();
        sessions.open(5, session(1));
        sessions.open(5, session(2));
        assert_eq!(sessions.len(), 1);
        assert_eq!(sessions.get(5).map(|s| s.id), Some(2));
        for client in 0..SESSIONS_MAX as u128 - 1 {
            sessions.open(100 + client, session(3 + client as u64));
        }
        assert_eq!(sessions.len(), SESSIONS_MAX);
        // Full: the next new client closes the oldest session, client 5's (id 2).
        sessions.open(7, session(10_000));
        assert_eq!(sessions.len(), SESSIONS_MAX);
        assert!(sessions.get(5).is_none());
        assert!(sessions.get(7).is_some());
    }

    #[test]
    fn sessions_round_trip_and_refuse_non_canonical_bytes() {
        let mut sessions = Sessions::default();
        sessions.open(9, session(3));
        sessions.open(4, session(5));
        let mut w = Writer::new();
        sessions.encode_into(&mut w);
        let bytes = w.finish();
        let decoded = Sessions::decode_from(&mut Reader::new(&bytes), 5).expect("decodes");
        assert_eq!(decoded, sessions);
        // An id above the applied op is refused.
        assert!(Sessions::decode_from(&mut Reader::new(&bytes), 4).is_err());
        // Clients out of order are refused.
        let mut w = Writer::new();
        w.len(2);
        for (client, id) in [(9u128, 3u64), (4, 5)] {
            w.u128(client);
            w.u64(id);
            w.u32(1);
            w.u128(0);
        }
        assert!(Sessions::decode_from(&mut Reader::new(&w.finish()), 5).is_err());
    }

    #[test]
    fn a_bind_request_round_trips_and_refuses_truncation_and_trailing_bytes() {
        let bind = BindSession { session: 42, secret: 7 };
        let bytes = bind.encode();
        assert_eq!(BindSession::decode(&bytes), Ok(bind));
        assert!(BindSession::decode(&bytes[..bytes.len() - 1]).is_err());
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(BindSession::decode(&longer).is_err());
        assert!(!format!("{bind:?}").contains('7'), "the secret is redacted");
    }

    #[test]
    fn secrets_differ_per_op_client_and_entropy() {
        let secret = derive_session_secret(1, 2, 3);
        assert_eq!(secret, derive_session_secret(1, 2, 3));
        assert_ne!(secret, derive_session_secret(9, 2, 3));
        assert_ne!(secret, derive_session_secret(1, 9, 3));
        assert_ne!(secret, derive_session_secret(1, 2, 9));
    }
}
