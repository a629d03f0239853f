//! `Shadow`: an abstract model of the committed metadata, for predicting replies and
//! for the end-of-run comparison with a replica's [`MetadataState`].
//!
//! Models: streams (id, name, the next topic id), topics (id, name, partitions,
//! durability, message expiry, the next group id), consumer groups (id, name), users
//! (id, username, active, the password in plain text, permissions, token names with the
//! token a creation revealed), and the stream and user id counters, assigned the way
//! `MetadataState` assigns them: from counters, never reused.
//!
//! Does not model: creation timestamps, salts and password hashes (it keeps the
//! plain password and predicts `InvalidCredentials` by comparing it), token expiry
//! (no action here logs in), or anything of the partition plane. With one client the
//! shadow sees every committed op in commit order and is exact; with several it sees
//! them in reply order and is approximate (see `MetadataWorkload`).
//!
//! Also holds the pools the actions draw names from: small, so collisions happen.
//!
//! [`MetadataState`]: cluster::metadata::MetadataState

use std::collections::BTreeMap;

use cluster::metadata::{
    DEFAULT_ROOT_PASSWORD, Durability, NAME_BYTES_MAX, PASSWORD_BYTES_MAX, Permissions, ROOT_USER_ID, ROOT_USERNAME,
};

use crate::rng::SimRng;

/// Names in each pool ("stream-0" .. "stream-7"): small enough that a fresh name runs
/// out and a taken one is easy to find, large enough for renames to have room.
pub const NAME_POOL_SIZE: usize = 8;

/// Prefix of stream names.
pub const STREAM_PREFIX: &str = "stream";
/// Prefix of topic names.
pub const TOPIC_PREFIX: &str = "topic";
/// Prefix of consumer group names.
pub const GROUP_PREFIX: &str = "group";
/// Prefix of usernames.
pub const USER_PREFIX: &str = "user";
/// Prefix of personal access token names.
pub const TOKEN_PREFIX: &str = "token";
/// Prefix of passwords.
pub const PASSWORD_PREFIX: &str = "pw";

/// How far past the id counter an id "never used" is drawn from.
pub const ABSENT_ID_SPAN: u64 = 8;

/// Draws spent looking for an absent id (deleted or never used) before falling back
/// to the counter itself, which no entity holds.
pub const ABSENT_ID_TRIES: usize = 8;

/// Most partitions an aim at `Ok` asks for: topics stay small, so a run creates many.
pub const PARTITIONS_DRAW_MAX: u32 = 8;

/// Message expiry and token lifetimes drawn, in microseconds (0 = forever / never).
pub const EXPIRY_CHOICES_MICROS: [u64; 4] = [0, 1_000_000, 60_000_000, 3_600_000_000];

/// A stream as the shadow sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShadowStream {
    /// Unique among streams.
    pub name: String,
    /// Topics by id.
    pub topics: BTreeMap<u32, ShadowTopic>,
    /// The id the next topic in this stream gets.
    pub next_topic_id: u32,
}

/// A topic as the shadow sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShadowTopic {
    /// Unique among the stream's topics.
    pub name: String,
    /// Fixed at creation.
    pub partitions: u32,
    /// When writes are acknowledged.
    pub durability: Durability,
    /// How long messages are kept; 0 = forever.
    pub message_expiry_micros: u64,
    /// Consumer group names by id.
    pub groups: BTreeMap<u32, String>,
    /// The id the next consumer group in this topic gets.
    pub next_group_id: u32,
}

/// A user as the shadow sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShadowUser {
    /// Unique among users.
    pub username: String,
    /// The current password, in plain text (the simulator's own, never a real secret).
    pub password: String,
    /// An inactive user cannot log in.
    pub active: bool,
    /// What the user may do (root: everything, always).
    pub permissions: Permissions,
    /// Token names, each with the token its creation revealed.
    pub tokens: BTreeMap<String, String>,
}

/// The abstract committed metadata. See the module docs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shadow {
    /// Streams by id.
    pub streams: BTreeMap<u32, ShadowStream>,
    /// Users by id (root included).
    pub users: BTreeMap<u32, ShadowUser>,
    /// The id the next stream gets.
    pub next_stream_id: u32,
    /// The id the next user gets.
    pub next_user_id: u32,
    /// Ids the cluster assigned other than predicted (meaningful with one client).
    id_mismatches: Vec<String>,
    /// Success replies of the wrong shape for their op (wrong under any interleaving).
    reply_mismatches: Vec<String>,
}

impl Default for Shadow {
    fn default() -> Self {
        Self::genesis()
    }
}

impl Shadow {
    /// The genesis state: no streams, and root (id 0, "root") with
    /// [`DEFAULT_ROOT_PASSWORD`] and every permission.
    pub fn genesis() -> Self {
        let root = ShadowUser {
            username: ROOT_USERNAME.to_owned(),
            password: DEFAULT_ROOT_PASSWORD.to_owned(),
            active: true,
            permissions: Permissions::full(),
            tokens: BTreeMap::new(),
        };
        Self {
            streams: BTreeMap::new(),
            users: BTreeMap::from([(ROOT_USER_ID, root)]),
            next_stream_id: 0,
            next_user_id: ROOT_USER_ID + 1,
            id_mismatches: Vec::new(),
            reply_mismatches: Vec::new(),
        }
    }

    // ---- queries ----

    /// True if some stream is named `name`.
    pub fn stream_name_taken(&self, name: &str) -> bool {
        self.streams.values().any(|stream| stream.name == name)
    }

    /// The id of the user named `username`.
    pub fn user_by_name(&self, username: &str) -> Option<u32> {
        self.users
            .iter()
            .find(|(_, user)| user.username == username)
            .map(|(id, _)| *id)
    }

    /// Partitions across every topic.
    pub fn partition_count(&self) -> u64 {
        self.streams
            .values()
            .flat_map(|stream| stream.topics.values())
            .map(|topic| u64::from(topic.partitions))
            .sum()
    }

    /// One topic.
    pub fn topic(&self, stream_id: u32, topic_id: u32) -> Option<&ShadowTopic> {
        self.streams.get(&stream_id)?.topics.get(&topic_id)
    }

    /// Every (stream id, topic id).
    pub fn topic_ids(&self) -> Vec<(u32, u32)> {
        self.streams
            .iter()
            .flat_map(|(stream_id, stream)| stream.topics.keys().map(move |topic_id| (*stream_id, *topic_id)))
            .collect()
    }

    // ---- draws ----

    /// A uniformly drawn existing stream id.
    pub fn pick_stream(&self, rng: &mut SimRng) -> Option<u32> {
        pick_key(&self.streams, rng)
    }

    /// A uniformly drawn existing stream id among those `keep` accepts.
    pub fn pick_stream_where(&self, rng: &mut SimRng, keep: impl Fn(&ShadowStream) -> bool) -> Option<u32> {
        let ids: Vec<u32> = self
            .streams
            .iter()
            .filter(|(_, s)| keep(s))
            .map(|(id, _)| *id)
            .collect();
        pick(&ids, rng).copied()
    }

    /// A uniformly drawn (stream id, topic id) among topics `keep` accepts.
    pub fn pick_topic_where(&self, rng: &mut SimRng, keep: impl Fn(&ShadowTopic) -> bool) -> Option<(u32, u32)> {
        let ids: Vec<(u32, u32)> = self
            .topic_ids()
            .into_iter()
            .filter(|(s, t)| self.topic(*s, *t).is_some_and(&keep))
            .collect();
        pick(&ids, rng).copied()
    }

    /// A stream id no stream holds: a deleted one or one never used.
    pub fn absent_stream_id(&self, rng: &mut SimRng) -> u32 {
        absent_key(&self.streams, self.next_stream_id, rng)
    }

    /// A uniformly drawn existing user id among those `keep` accepts.
    pub fn pick_user_where(&self, rng: &mut SimRng, keep: impl Fn(u32, &ShadowUser) -> bool) -> Option<u32> {
        let ids: Vec<u32> = self
            .users
            .iter()
            .filter(|(id, u)| keep(**id, u))
            .map(|(id, _)| *id)
            .collect();
        pick(&ids, rng).copied()
    }

    /// A user id no user holds: a deleted one or one never used (never root's).
    pub fn absent_user_id(&self, rng: &mut SimRng) -> u32 {
        absent_key(&self.users, self.next_user_id, rng)
    }

    // ---- updates (used by the actions' `observe`) ----

    /// Fold in that the cluster assigned stream id `actual` for `what`: advance the
    /// counter past it and note a mismatch if the shadow predicted another id.
    pub fn assign_stream_id(&mut self, actual: u32, what: &str) {
        if let Err(predicted) = advance_counter(&mut self.next_stream_id, actual) {
            self.note_id_mismatch(format!(
                "{what} got stream id {actual}, the shadow predicted {predicted}"
            ));
        }
    }

    /// Fold in that the cluster assigned user id `actual` for `what` (as
    /// [`Shadow::assign_stream_id`]).
    pub fn assign_user_id(&mut self, actual: u32, what: &str) {
        if let Err(predicted) = advance_counter(&mut self.next_user_id, actual) {
            self.note_id_mismatch(format!("{what} got user id {actual}, the shadow predicted {predicted}"));
        }
    }

    /// Note an id the cluster assigned other than predicted.
    pub fn note_id_mismatch(&mut self, detail: String) {
        self.id_mismatches.push(detail);
    }

    /// Note a success reply whose shape does not fit its op.
    pub fn note_reply_mismatch(&mut self, detail: String) {
        self.reply_mismatches.push(detail);
    }

    /// Take the id mismatches noted since the last call.
    pub fn take_id_mismatches(&mut self) -> Vec<String> {
        std::mem::take(&mut self.id_mismatches)
    }

    /// Take the reply-shape mismatches noted since the last call.
    pub fn take_reply_mismatches(&mut self) -> Vec<String> {
        std::mem::take(&mut self.reply_mismatches)
    }
}

/// Advance `counter` past `actual`, an id the cluster assigned from it. `Err` carries
/// the id the shadow predicted when the cluster assigned another.
pub fn advance_counter(counter: &mut u32, actual: u32) -> Result<(), u32> {
    let predicted = *counter;
    *counter = predicted.max(actual.saturating_add(1));
    if actual == predicted { Ok(()) } else { Err(predicted) }
}

// ---- draw helpers shared by the actions ----

/// A uniformly drawn element of `items`.
pub fn pick<'a, T>(items: &'a [T], rng: &mut SimRng) -> Option<&'a T> {
    if items.is_empty() {
        None
    } else {
        Some(&items[rng.index(items.len())])
    }
}

/// A uniformly drawn key of `map`.
pub fn pick_key<V>(map: &BTreeMap<u32, V>, rng: &mut SimRng) -> Option<u32> {
    if map.is_empty() {
        return None;
    }
    map.keys().nth(rng.index(map.len())).copied()
}

/// A key `map` does not hold: drawn from `0..next + ABSENT_ID_SPAN` (so deleted ids
/// and never-used ids both come up), or `next` itself if every draw hit a held key.
pub fn absent_key<V>(map: &BTreeMap<u32, V>, next: u32, rng: &mut SimRng) -> u32 {
    let bound = (u64::from(next) + ABSENT_ID_SPAN).min(u64::from(u32::MAX));
    for _ in 0..ABSENT_ID_TRIES {
        // The bound is at most u32::MAX, so the draw fits.
        let candidate = rng.below(bound) as u32;
        if !map.contains_key(&candidate) {
            return candidate;
        }
    }
    next
}

/// Name `index` of the pool `prefix` ("stream-3").
pub fn pool_name(prefix: &str, index: usize) -> String {
    format!("{prefix}-{index}")
}

/// A uniformly drawn name of the pool `prefix` that `taken` rejects, if any is left.
pub fn fresh_name(prefix: &str, rng: &mut SimRng, taken: impl Fn(&str) -> bool) -> Option<String> {
    let free: Vec<String> = (0..NAME_POOL_SIZE)
        .map(|index| pool_name(prefix, index))
        .filter(|name| !taken(name))
        .collect();
    pick(&free, rng).cloned()
}

/// A uniformly drawn name of the pool `prefix` (taken or not).
pub fn any_pool_name(prefix: &str, rng: &mut SimRng) -> String {
    pool_name(prefix, rng.index(NAME_POOL_SIZE))
}

/// A name every scope rejects: empty, with a control character, or one byte too long.
pub fn invalid_name(rng: &mut SimRng) -> String {
    match rng.below(3) {
        0 => String::new(),
        1 => "bad\tname".to_owned(),
        _ => "n".repeat(NAME_BYTES_MAX + 1),
    }
}

/// A password from the pool ("pw-0" .. "pw-7").
pub fn pool_password(rng: &mut SimRng) -> String {
    any_pool_name(PASSWORD_PREFIX, rng)
}

/// A password the state machine rejects: empty or one byte too long.
pub fn invalid_password(rng: &mut SimRng) -> String {
    if rng.below(2) == 0 {
        String::new()
    } else {
        "p".repeat(PASSWORD_BYTES_MAX + 1)
    }
}

/// A uniformly drawn durability.
pub fn durability(rng: &mut SimRng) -> Durability {
    if rng.below(2) == 0 {
        Durability::Replicated
    } else {
        Durability::Persisted
    }
}

/// A uniformly drawn expiry from [`EXPIRY_CHOICES_MICROS`].
pub fn expiry(rng: &mut SimRng) -> u64 {
    EXPIRY_CHOICES_MICROS[rng.index(EXPIRY_CHOICES_MICROS.len())]
}

/// A fair coin.
pub fn coin(rng: &mut SimRng) -> bool {
    rng.below(2) == 0
}
