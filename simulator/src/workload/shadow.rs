//! `Shadow`: an abstract model of the committed metadata and of every partition's
//! contents, for predicting replies and for the end-of-run comparison with a replica's
//! `MetadataState` and each partition primary's `PartitionState`.
//!
//! Models: streams (id, name, the next topic id, the client that created it), topics
//! (id, name, durability, message expiry, the next group id, and their partitions, each
//! with its VSR group id and a [`ShadowPartition`]: messages, offsets, owners), consumer
//! groups (id, name, members, generation), users (id, username, active, the password
//! in plain text, permissions, token names with the token a creation revealed, the
//! client that created it; root has none), the stream and user id counters, and the
//! user each client's session acts as (its last successful login; none before it).
//!
//! Permissions are judged by [`ShadowAccess`], the shadow's own statement of the rules
//! (written from the documented rules, not by calling the cluster's check), so a
//! cluster that authorises the wrong request contradicts a prediction.
//!
//! A partition's group id comes from the reply header's `op` of the op that created it
//! (`partition_group_id(op, id)`); the shadow never guesses one.
//!
//! Does not model: creation timestamps, salts and password hashes (it keeps the plain
//! password and predicts `InvalidCredentials` by comparing it), token expiry, the view a
//! partition was created in (the client cannot see the prepare's view).
//!
//! Exactness: each client keeps to its own namespace (see `Scope`), and every change to
//! a namespace is made by its one client, which has one request in flight. So the part
//! of the shadow a client's predictions read is exact whatever the other clients do;
//! only what all clients share (the global id counters and entity counts) lags, and the
//! predictions that read it allow for that.
//!
//! Also holds the pools the actions draw names from: small, so collisions happen.

use std::collections::{BTreeMap, BTreeSet};

use cluster::metadata::{
    DEFAULT_ROOT_PASSWORD, Durability, NAME_BYTES_MAX, PASSWORD_BYTES_MAX, Permissions, ROOT_USER_ID, ROOT_USERNAME,
};

use super::request::PartitionAt;
pub use super::shadow_partition::{ShadowLog, ShadowMessage, ShadowPartition};
use crate::rng::SimRng;

/// Names in each pool ("stream-0" .. "stream-7"): small enough that a fresh name runs
/// out and a taken one is easy to find, large enough for renames to have room. Also
/// what bounds a client's streams, users, topics per stream and groups per topic (names
/// are unique in their scope), which the multi-client limit predictions rely on.
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

/// Most partitions `CreatePartitions` aimed at `Ok` grows a topic to. Bounds a client's
/// partitions (with the name pools) for the multi-client limit predictions, and keeps
/// purges (one request per partition) short.
pub const TOPIC_PARTITIONS_GROWN_MAX: u32 = 16;

/// Member ids a client draws from ("consumer 0" .. "consumer 7"): small, so joins find
/// members already in and leaves find members missing.
pub const MEMBER_POOL_SIZE: u32 = 8;

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
    /// The client that created it: the only one that touches it.
    pub owner: usize,
}

/// A topic as the shadow sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShadowTopic {
    /// Unique among the stream's topics.
    pub name: String,
    /// The partitions, ids `0..len` (`partitions[i].id == i`), as in the cluster.
    pub partitions: Vec<ShadowPartition>,
    /// When writes are acknowledged.
    pub durability: Durability,
    /// How long messages are kept; 0 = forever. Partitions keep the expiry they were
    /// created with.
    pub message_expiry_micros: u64,
    /// Consumer groups by id.
    pub groups: BTreeMap<u32, ShadowGroup>,
    /// The id the next consumer group in this topic gets.
    pub next_group_id: u32,
}

impl ShadowTopic {
    /// A topic with no partitions yet and no groups.
    pub fn new(name: String, durability: Durability, message_expiry_micros: u64) -> Self {
        Self {
            name,
            partitions: Vec::new(),
            durability,
            message_expiry_micros,
            groups: BTreeMap::new(),
            next_group_id: 0,
        }
    }

    /// Partitions, as the u32 the ops count them in. A topic holds at most
    /// `PARTITIONS_PER_TOPIC_MAX` (a u32), so the conversion is lossless.
    pub fn partition_count(&self) -> u32 {
        self.partitions.len() as u32
    }

    /// Append `count` partitions created by the metadata op numbered `op`, with group
    /// ids `partition_group_id(op, id)` and this topic's current message expiry.
    pub fn add_partitions(&mut self, count: u32, op: u64) {
        let first = self.partition_count();
        for id in first..first.saturating_add(count) {
            let mut partition = ShadowPartition::new(
                id,
                cluster::metadata::partition_group_id(op, id),
                self.message_expiry_micros,
            );
            partition.persisted_from = (self.durability == Durability::Persisted).then_some(0);
            partition.persisted_since_creation = self.durability == Durability::Persisted;
            self.partitions.push(partition);
        }
    }

    /// Fold in an acknowledged change of durability: a partition that becomes
    /// `persisted` promises to keep what it acknowledges from its next offset on (what
    /// it acknowledged before may still be unpublished); one that becomes `replicated`
    /// promises nothing past an outage.
    pub fn set_durability(&mut self, durability: Durability) {
        if durability != self.durability {
            for partition in &mut self.partitions {
                partition.persisted_from = (durability == Durability::Persisted).then(|| partition.log.next_offset());
                partition.persisted_since_creation = false;
            }
        }
        self.durability = durability;
    }
}

/// A consumer group as the shadow sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShadowGroup {
    /// Unique among the topic's groups.
    pub name: String,
    /// Member ids.
    pub members: BTreeSet<u32>,
    /// 0 at creation, +1 per join or leave.
    pub generation: u64,
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
    /// The client that created it; `None` for root, which every client shares.
    pub owner: Option<usize>,
}

/// The abstract committed state. See the module docs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shadow {
    /// Streams by id.
    pub streams: BTreeMap<u32, ShadowStream>,
    /// Users by id (root included).
    pub users: BTreeMap<u32, ShadowUser>,
    /// The id the next stream gets (with several clients, a lower bound).
    pub next_stream_id: u32,
    /// The id the next user gets (with several clients, a lower bound).
    pub next_user_id: u32,
    /// The user each client's session acts as: set by its successful logins.
    pub sessions: BTreeMap<usize, u32>,
    /// Replies that contradict the shadow under any interleaving of clients: ids and
    /// offsets in a client's own namespace, reply shapes, polled messages.
    mismatches: Vec<String>,
    /// Ids from a counter every client shares (streams, users) other than predicted:
    /// meaningful with one client only.
    global_id_mismatches: Vec<String>,
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
            owner: None,
        };
        Self {
            streams: BTreeMap::new(),
            users: BTreeMap::from([(ROOT_USER_ID, root)]),
            next_stream_id: 0,
            next_user_id: ROOT_USER_ID + 1,
            sessions: BTreeMap::new(),
            mismatches: Vec::new(),
            global_id_mismatches: Vec::new(),
        }
    }

    // ---- queries ----

    /// Whether `client`'s session may do what `need` says: its user must exist, be
    /// active and hold the permission (see [`ShadowAccess`]). False without a session.
    pub fn session_may(&self, client: usize, need: ShadowAccess) -> bool {
        let Some(user_id) = self.sessions.get(&client) else {
            return false;
        };
        let Some(user) = self.users.get(user_id).filter(|user| user.active) else {
            return false;
        };
        need.granted_by(*user_id, &user.permissions)
    }

    /// Whether `client` has a session whose user exists and is active.
    pub fn session_active(&self, client: usize) -> bool {
        self.sessions
            .get(&client)
            .and_then(|user_id| self.users.get(user_id))
            .is_some_and(|user| user.active)
    }

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
            .map(|topic| u64::from(topic.partition_count()))
            .sum()
    }

    /// One topic.
    pub fn topic(&self, stream_id: u32, topic_id: u32) -> Option<&ShadowTopic> {
        self.streams.get(&stream_id)?.topics.get(&topic_id)
    }

    /// One topic, or the outcome a request naming it is refused with: `StreamNotFound`
    /// before `TopicNotFound`, the state machine's order.
    pub fn existing_topic(&self, stream_id: u32, topic_id: u32) -> Result<&ShadowTopic, super::outcome::Outcome> {
        use super::outcome::Outcome;
        let stream = self.streams.get(&stream_id).ok_or(Outcome::StreamNotFound)?;
        stream.topics.get(&topic_id).ok_or(Outcome::TopicNotFound)
    }

    /// One topic, to change.
    pub fn topic_mut(&mut self, stream_id: u32, topic_id: u32) -> Option<&mut ShadowTopic> {
        self.streams.get_mut(&stream_id)?.topics.get_mut(&topic_id)
    }

    /// One consumer group, to change.
    pub fn group_mut(&mut self, stream_id: u32, topic_id: u32, group_id: u32) -> Option<&mut ShadowGroup> {
        self.topic_mut(stream_id, topic_id)?.groups.get_mut(&group_id)
    }

    /// The partition `at` names, if it still exists as that incarnation (same group id).
    pub fn partition(&self, at: &PartitionAt) -> Option<&ShadowPartition> {
        let topic = self.topic(at.stream_id, at.topic_id)?;
        let partition = topic.partitions.get(usize::try_from(at.partition_id).ok()?)?;
        (partition.group == at.group).then_some(partition)
    }

    /// The partition `at` names, to change.
    pub fn partition_mut(&mut self, at: &PartitionAt) -> Option<&mut ShadowPartition> {
        let topic = self.topic_mut(at.stream_id, at.topic_id)?;
        let partition = topic.partitions.get_mut(usize::try_from(at.partition_id).ok()?)?;
        (partition.group == at.group).then_some(partition)
    }

    /// Every partition with where it is, in stream, topic, partition id order.
    pub fn partitions(&self) -> impl Iterator<Item = (PartitionAt, &ShadowPartition)> {
        self.streams.iter().flat_map(|(stream_id, stream)| {
            stream.topics.iter().flat_map(move |(topic_id, topic)| {
                topic.partitions.iter().map(move |partition| {
                    let at = PartitionAt {
                        stream_id: *stream_id,
                        topic_id: *topic_id,
                        partition_id: partition.id,
                        group: partition.group,
                    };
                    (at, partition)
                })
            })
        })
    }

    /// The partition replicated by `group`.
    pub fn partition_by_group(&self, group: u64) -> Option<&ShadowPartition> {
        self.partitions()
            .find(|(at, _)| at.group == group)
            .map(|(_, partition)| partition)
    }

    // ---- updates (used by the actions' `observe`) ----

    /// Fold in that the cluster assigned stream id `actual` for `what`: advance the
    /// counter past it and note a (global) mismatch if the shadow predicted another id.
    pub fn assign_stream_id(&mut self, actual: u32, what: &str) {
        if let Err(predicted) = advance_counter(&mut self.next_stream_id, actual) {
            self.global_id_mismatches.push(format!(
                "{what} got stream id {actual}, the shadow predicted {predicted}"
            ));
        }
    }

    /// Fold in that the cluster assigned user id `actual` for `what` (as
    /// [`Shadow::assign_stream_id`]).
    pub fn assign_user_id(&mut self, actual: u32, what: &str) {
        if let Err(predicted) = advance_counter(&mut self.next_user_id, actual) {
            self.global_id_mismatches
                .push(format!("{what} got user id {actual}, the shadow predicted {predicted}"));
        }
    }

    /// Note a reply that contradicts the shadow under any interleaving of clients (an
    /// id or offset in the client's own namespace, a success of the wrong shape, a
    /// polled message the shadow never saw committed).
    pub fn note_mismatch(&mut self, detail: String) {
        self.mismatches.push(detail);
    }

    /// Take the mismatches noted since the last call.
    pub fn take_mismatches(&mut self) -> Vec<String> {
        std::mem::take(&mut self.mismatches)
    }

    /// Take the global id mismatches noted since the last call.
    pub fn take_global_id_mismatches(&mut self) -> Vec<String> {
        std::mem::take(&mut self.global_id_mismatches)
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
/// Only for maps one client alone adds to (its topics, its groups) or a lone client:
/// another client could take a never-used id before this request commits.
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

/// Name `index` of the pool `prefix` ("stream-3"), as a lone client names things.
pub fn pool_name(prefix: &str, index: usize) -> String {
    format!("{prefix}-{index}")
}

/// A name every scope rejects: empty, with a control character, or one byte too long.
pub fn invalid_name(rng: &mut SimRng) -> String {
    match rng.below(3) {
        0 => String::new(),
        1 => "bad\tname".to_owned(),
        _ => "n".repeat(NAME_BYTES_MAX + 1),
    }
}

/// A password from the pool ("pw-0" .. "pw-7"). Passwords need not be unique, so they
/// are never namespaced.
pub fn pool_password(rng: &mut SimRng) -> String {
    pool_name(PASSWORD_PREFIX, rng.index(NAME_POOL_SIZE))
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

/// What a request needs of its session's user, as the shadow models it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShadowAccess {
    /// Create, rename or delete streams.
    ManageStreams,
    /// Send to one stream's partitions.
    WriteStream(u32),
    /// Poll one stream's partitions.
    ReadStream(u32),
}

impl ShadowAccess {
    /// The rules, restated: managing streams covers everything on streams; a stream's
    /// `write` covers sends to it; reading covers polls (global `read_streams`, or the
    /// stream's `read` or `manage_topics`).
    pub fn granted_by(self, _user_id: u32, permissions: &Permissions) -> bool {
        let global = permissions.global;
        let stream = |id: u32| permissions.streams.get(&id).copied().unwrap_or_default();
        match self {
            ShadowAccess::ManageStreams => global.manage_streams,
            ShadowAccess::WriteStream(id) => global.manage_streams || stream(id).write,
            ShadowAccess::ReadStream(id) => {
                global.manage_streams || global.read_streams || stream(id).read || stream(id).manage_topics
            }
        }
    }
}
