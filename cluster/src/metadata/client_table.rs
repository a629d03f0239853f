//! The client table: at-most-once execution of metadata requests, and sessions.
//!
//! Models: for each client, the number of its latest committed request and the reply
//! bytes it got, so a retransmitted request is answered from the table instead of
//! being applied twice; and which user a client's session is logged in as. The table
//! is replicated state: every replica updates it in commit order, so every replica
//! holds the same table (compare with [`ClientTable::digest`]).
//!
//! Bounded to [`CLIENT_TABLE_CLIENTS_MAX`] clients. When full, the client whose latest
//! commit is oldest is evicted. That choice depends only on the commit order, which all
//! replicas share, so they all evict the same client (an LRU by arrival time or an
//! order taken from a hash map would differ between replicas and fork the table); and
//! the client that has been quiet longest is the least likely to still be retrying.
//!
//! Does not model: requests in flight (the primary must not prepare a request that is
//! already in its pipeline), telling an evicted client it was evicted (an evicted
//! client's next request is simply `New`; the session layer must reject a request from
//! a session it no longer knows), or the client table's snapshot.

use std::collections::BTreeMap;

use xxhash_rust::xxh3::Xxh3;

use super::credentials::TOKEN_CHARS;

/// Most clients remembered. Each entry holds one reply (at most
/// [`CLIENT_REPLY_BYTES_MAX`]), so the table stays under a megabyte; 8,192 concurrent
/// clients is far more than a metadata plane serves.
pub const CLIENT_TABLE_CLIENTS_MAX: usize = 8_192;

/// Largest metadata reply, in bytes: the code, a varint length and a token (the biggest
/// reply). Recording anything larger is a bug in the caller.
pub const CLIENT_REPLY_BYTES_MAX: usize = 1 + 1 + TOKEN_CHARS;

/// What to do with an incoming request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dedup<'a> {
    /// Not seen: prepare it.
    New,
    /// The latest committed request of this client: answer with these reply bytes.
    Duplicate(&'a [u8]),
    /// Older than the latest committed request of this client: the client already has
    /// a newer answer, so drop it.
    Stale,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    request: u64,
    reply: Vec<u8>,
    /// Position in commit order of this client's latest record; key into `by_commit`.
    committed_at: u64,
    /// The user this client's session is logged in as.
    user: Option<u32>,
}

/// See the module docs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientTable {
    entries: BTreeMap<u128, Entry>,
    /// `committed_at` -> client, for eviction of the oldest in O(log n).
    by_commit: BTreeMap<u64, u128>,
    /// Records so far; the next record's `committed_at`.
    commits: u64,
}

impl ClientTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Clients remembered.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True if no client is remembered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Classify request number `request` from `client`.
    pub fn check(&self, client: u128, request: u64) -> Dedup<'_> {
        match self.entries.get(&client) {
            None => Dedup::New,
            Some(entry) if request > entry.request => Dedup::New,
            Some(entry) if request == entry.request => Dedup::Duplicate(&entry.reply),
            Some(_) => Dedup::Stale,
        }
    }

    /// Remember `reply` as the answer to `client`'s request `request`, committed now.
    /// Returns the client evicted to make room, if any.
    ///
    /// Panics if `request` is not above the client's latest recorded request (only a
    /// request `check` called `New` may be recorded) or if `reply` is longer than
    /// [`CLIENT_REPLY_BYTES_MAX`]: both are bugs in the caller, and tolerating them
    /// would let replicas' tables drift apart.
    pub fn record(&mut self, client: u128, request: u64, reply: Vec<u8>) -> Option<u128> {
        assert!(
            reply.len() <= CLIENT_REPLY_BYTES_MAX,
            "a metadata reply of {} bytes exceeds CLIENT_REPLY_BYTES_MAX",
            reply.len()
        );
        let committed_at = self.commits;
        self.commits += 1;
        if let Some(entry) = self.entries.get_mut(&client) {
            assert!(
                request > entry.request,
                "client {client:#x} request {request} recorded after request {}",
                entry.request
            );
            self.by_commit.remove(&entry.committed_at);
            entry.request = request;
            entry.reply = reply;
            entry.committed_at = committed_at;
            self.by_commit.insert(committed_at, client);
            return None;
        }
        let evicted = if self.entries.len() >= CLIENT_TABLE_CLIENTS_MAX {
            self.by_commit.pop_first().map(|(_, oldest)| {
                self.entries.remove(&oldest);
                oldest
            })
        } else {
            None
        };
        self.entries.insert(
            client,
            Entry {
                request,
                reply,
                committed_at,
                user: None,
            },
        );
        self.by_commit.insert(committed_at, client);
        evicted
    }

    /// Mark `client`'s session as logged in as `user_id` (after recording the login's
    /// reply). Returns false, changing nothing, if the client is not in the table.
    pub fn bind_session(&mut self, client: u128, user_id: u32) -> bool {
        match self.entries.get_mut(&client) {
            Some(entry) => {
                entry.user = Some(user_id);
                true
            }
            None => false,
        }
    }

    /// The user `client`'s session is logged in as, if any.
    pub fn session_user(&self, client: u128) -> Option<u32> {
        self.entries.get(&client)?.user
    }

    /// Log out every session of `user_id` (when the user is deleted or deactivated).
    /// Returns how many sessions ended.
    pub fn end_sessions_of(&mut self, user_id: u32) -> usize {
        let mut ended = 0;
        for entry in self.entries.values_mut() {
            if entry.user == Some(user_id) {
                entry.user = None;
                ended += 1;
            }
        }
        ended
    }

    /// Remembered clients in ascending id order.
    pub fn clients(&self) -> impl Iterator<Item = u128> + '_ {
        self.entries.keys().copied()
    }

    /// A checksum of the whole table (entries in client order, with their commit
    /// positions), for comparing replicas.
    pub fn digest(&self) -> u128 {
        let mut hasher = Xxh3::new();
        hasher.update(&self.commits.to_le_bytes());
        for (client, entry) in &self.entries {
            hasher.update(&client.to_le_bytes());
            hasher.update(&entry.request.to_le_bytes());
            hasher.update(&entry.committed_at.to_le_bytes());
            match entry.user {
                None => hasher.update(&[0]),
                Some(user) => {
                    hasher.update(&[1]);
                    hasher.update(&user.to_le_bytes());
                }
            }
            // usize -> u64 is lossless on supported targets; the length prefix keeps
            // entry boundaries unambiguous.
            hasher.update(&(entry.reply.len() as u64).to_le_bytes());
            hasher.update(&entry.reply);
        }
        hasher.digest128()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_new_then_duplicate_then_stale() {
        let mut table = ClientTable::new();
        let client = 0xfeed_u128 << 64;
        assert_eq!(table.check(client, 1), Dedup::New);
        assert_eq!(table.record(client, 1, vec![1, 2]), None);
        assert_eq!(table.check(client, 1), Dedup::Duplicate(&[1, 2]));
        assert_eq!(table.check(client, 2), Dedup::New);
        table.record(client, 2, vec![3]);
        assert_eq!(table.check(client, 2), Dedup::Duplicate(&[3]));
        assert_eq!(table.check(client, 1), Dedup::Stale);
        assert_eq!(table.check(client + 1, 1), Dedup::New, "other clients are independent");
        assert_eq!(table.len(), 1);
    }

    #[test]
    #[should_panic(expected = "recorded after request")]
    fn recording_an_old_request_is_a_bug() {
        let mut table = ClientTable::new();
        table.record(5, 3, vec![0]);
        table.record(5, 3, vec![0]);
    }

    #[test]
    fn the_least_recently_committed_client_is_evicted_at_the_bound() {
        let mut table = ClientTable::new();
        for client in 0..CLIENT_TABLE_CLIENTS_MAX as u128 {
            assert_eq!(table.record(client, 1, vec![0]), None);
        }
        // Client 0 commits again, so client 1 is now the one quiet longest.
        table.record(0, 2, vec![0]);
        assert_eq!(table.len(), CLIENT_TABLE_CLIENTS_MAX);
        let newcomer = 1_000_000;
        assert_eq!(table.record(newcomer, 1, vec![0]), Some(1));
        assert_eq!(table.record(newcomer + 1, 1, vec![0]), Some(2));
        assert_eq!(table.len(), CLIENT_TABLE_CLIENTS_MAX);
        assert_eq!(table.check(1, 1), Dedup::New, "an evicted client is forgotten");
        assert_eq!(table.check(0, 2), Dedup::Duplicate(&[0]));
        let clients: Vec<u128> = table.clients().take(3).collect();
        assert_eq!(clients, vec![0, 3, 4], "iteration is in client id order");
    }

    #[test]
    fn sessions_bind_to_recorded_clients_and_end_per_user() {
        let mut table = ClientTable::new();
        assert!(!table.bind_session(7, 1), "unknown clients have no session");
        table.record(7, 1, vec![5, 1, 0, 0, 0]);
        table.record(8, 1, vec![5, 1, 0, 0, 0]);
        assert!(table.bind_session(7, 1));
        assert!(table.bind_session(8, 1));
        assert_eq!(table.session_user(7), Some(1));
        assert_eq!(table.end_sessions_of(1), 2);
        assert_eq!(table.session_user(8), None);
    }

    #[test]
    fn identical_histories_give_identical_digests() {
        let run = |last_reply: u8| {
            let mut table = ClientTable::new();
            table.record(1, 1, vec![0]);
            table.record(2, 1, vec![last_reply]);
            table.digest()
        };
        assert_eq!(run(4), run(4));
        assert_ne!(run(4), run(5));
    }
}
