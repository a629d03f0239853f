//! [`Scope`]: one client's view of the shadow, through which actions draw targets and
//! predictions read shared counts.
//!
//! Models: the client's namespace. With several clients each one names its streams and
//! users `c{client}-stream-3`, `c{client}-user-5` (so no two clients ever collide on a
//! name), and draws targets only among the streams and users it created; root is
//! shared and targeted only where its mutable state cannot change the answer. A lone
//! client uses the plain pool names ("stream-3") and owns everything, root included,
//! which keeps the draws of recorded single-client seeds what they were.
//!
//! Why: everything a client's request reads then lives in a namespace only that
//! client changes, one request at a time, so its prediction is exact. What all clients
//! share is handled here:
//! - absent ids: an id past the shadow's counter may be taken by another client's
//!   create before this request commits, so with several clients an absent stream or
//!   user id is drawn from the top of the id space, which no counter reaches in a run;
//! - global limits (streams, users, partitions in the cluster): [`Scope::room`] bounds
//!   the other clients' share by what their namespaces can hold at most, and answers
//!   [`Room::Maybe`] when the limit may or may not be hit, so the prediction allows both.
//!
//! Does not model: authorisation (every request is sent as if by root).

use cluster::metadata::{PARTITIONS_TOTAL_MAX, STREAMS_MAX, USERS_MAX};

use super::outcome::Outcome;
use super::request::PartitionAt;
use super::shadow::{
    self, ABSENT_ID_SPAN, NAME_POOL_SIZE, Shadow, ShadowGroup, ShadowPartition, ShadowStream, ShadowTopic, ShadowUser,
    TOPIC_PARTITIONS_GROWN_MAX,
};
use crate::rng::SimRng;

/// A resource every client shares, counted against a cluster-wide limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Global {
    /// Streams (`STREAMS_MAX`).
    Streams,
    /// Users, root included (`USERS_MAX`).
    Users,
    /// Partitions across every topic (`PARTITIONS_TOTAL_MAX`).
    Partitions,
}

impl Global {
    /// The cluster's limit.
    fn max(self) -> u64 {
        // usize -> u64 is lossless on every supported target.
        match self {
            Global::Streams => STREAMS_MAX as u64,
            Global::Users => USERS_MAX as u64,
            Global::Partitions => PARTITIONS_TOTAL_MAX,
        }
    }

    /// The most one client's namespace ever holds: names are unique per scope and
    /// drawn from pools of [`NAME_POOL_SIZE`], and `CreatePartitions` grows a topic to
    /// [`TOPIC_PARTITIONS_GROWN_MAX`] at most (creates aimed elsewhere are refused).
    fn per_client_max(self) -> u64 {
        let pool = NAME_POOL_SIZE as u64;
        match self {
            Global::Streams | Global::Users => pool,
            Global::Partitions => pool * pool * u64::from(TOPIC_PARTITIONS_GROWN_MAX),
        }
    }
}

/// Whether more of a [`Global`] resource fits under its limit when the request commits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Room {
    /// It fits, whatever the other clients do.
    Fits,
    /// It does not fit, whatever the other clients do.
    Full,
    /// It depends on what the other clients have created by then.
    Maybe,
}

/// One client's view of the shadow. See the module docs.
#[derive(Clone, Copy, Debug)]
pub struct Scope<'a> {
    /// The shadow.
    pub shadow: &'a Shadow,
    /// The client drawing or predicting.
    pub client: usize,
    /// How many clients the workload has.
    pub clients: usize,
    /// Most partitions this client creates (see `ActionWeights::partitions_budget`).
    pub partitions_budget: u64,
}

impl<'a> Scope<'a> {
    /// Whether other clients share the cluster (predictions of shared things widen).
    pub fn shared(&self) -> bool {
        self.clients > 1
    }

    /// Whether the client may target `stream`: one it created.
    pub fn owns_stream(&self, stream: &ShadowStream) -> bool {
        stream.owner == self.client
    }

    /// Whether the client may target `user`: one it created, or root when alone.
    pub fn owns_user(&self, user: &ShadowUser) -> bool {
        match user.owner {
            Some(owner) => owner == self.client,
            None => !self.shared(),
        }
    }

    // ---- names ----

    /// Name `index` of the pool `prefix` in this client's namespace.
    pub fn name(&self, prefix: &str, index: usize) -> String {
        if self.shared() {
            format!("c{}-{}", self.client, shadow::pool_name(prefix, index))
        } else {
            shadow::pool_name(prefix, index)
        }
    }

    /// A uniformly drawn name of the pool `prefix` that `taken` rejects, if any is left.
    pub fn fresh_name(&self, prefix: &str, rng: &mut SimRng, taken: impl Fn(&str) -> bool) -> Option<String> {
        let free: Vec<String> = (0..NAME_POOL_SIZE)
            .map(|index| self.name(prefix, index))
            .filter(|name| !taken(name))
            .collect();
        shadow::pick(&free, rng).cloned()
    }

    /// Whether the pool `prefix` has a name `taken` rejects.
    pub fn has_fresh_name(&self, prefix: &str, taken: impl Fn(&str) -> bool) -> bool {
        (0..NAME_POOL_SIZE).any(|index| !taken(&self.name(prefix, index)))
    }

    /// A uniformly drawn name of the pool `prefix` (taken or not).
    pub fn any_name(&self, prefix: &str, rng: &mut SimRng) -> String {
        self.name(prefix, rng.index(NAME_POOL_SIZE))
    }

    // ---- targets ----

    /// A uniformly drawn stream of this client.
    pub fn pick_stream(&self, rng: &mut SimRng) -> Option<u32> {
        self.pick_stream_where(rng, |_| true)
    }

    /// A uniformly drawn stream of this client among those `keep` accepts.
    pub fn pick_stream_where(&self, rng: &mut SimRng, keep: impl Fn(&ShadowStream) -> bool) -> Option<u32> {
        let ids: Vec<u32> = self
            .shadow
            .streams
            .iter()
            .filter(|(_, stream)| self.owns_stream(stream) && keep(stream))
            .map(|(id, _)| *id)
            .collect();
        shadow::pick(&ids, rng).copied()
    }

    /// Every (stream id, topic id) of this client.
    pub fn topic_ids(&self) -> Vec<(u32, u32)> {
        self.shadow
            .streams
            .iter()
            .filter(|(_, stream)| self.owns_stream(stream))
            .flat_map(|(stream_id, stream)| stream.topics.keys().map(move |topic_id| (*stream_id, *topic_id)))
            .collect()
    }

    /// A uniformly drawn (stream id, topic id) of this client among topics `keep` accepts.
    pub fn pick_topic_where(&self, rng: &mut SimRng, keep: impl Fn(&ShadowTopic) -> bool) -> Option<(u32, u32)> {
        let ids: Vec<(u32, u32)> = self
            .topic_ids()
            .into_iter()
            .filter(|(s, t)| self.shadow.topic(*s, *t).is_some_and(&keep))
            .collect();
        shadow::pick(&ids, rng).copied()
    }

    /// A uniformly drawn (stream id, topic id, group id) of this client among consumer
    /// groups `keep` accepts.
    pub fn pick_group_where(&self, rng: &mut SimRng, keep: impl Fn(&ShadowGroup) -> bool) -> Option<(u32, u32, u32)> {
        let ids: Vec<(u32, u32, u32)> = self
            .topic_ids()
            .into_iter()
            .filter_map(|(s, t)| self.shadow.topic(s, t).map(|topic| (s, t, topic)))
            .flat_map(|(s, t, topic)| {
                topic
                    .groups
                    .iter()
                    .filter(|(_, group)| keep(group))
                    .map(move |(g, _)| (s, t, *g))
            })
            .collect();
        shadow::pick(&ids, rng).copied()
    }

    /// A uniformly drawn partition of this client among those `keep` accepts (given
    /// with its topic).
    pub fn pick_partition_where(
        &self,
        rng: &mut SimRng,
        keep: impl Fn(&ShadowTopic, &ShadowPartition) -> bool,
    ) -> Option<PartitionAt> {
        let places: Vec<PartitionAt> = self
            .shadow
            .partitions()
            .filter(|(at, partition)| {
                self.shadow
                    .streams
                    .get(&at.stream_id)
                    .is_some_and(|s| self.owns_stream(s))
                    && self
                        .shadow
                        .topic(at.stream_id, at.topic_id)
                        .is_some_and(|topic| keep(topic, partition))
            })
            .map(|(at, _)| at)
            .collect();
        shadow::pick(&places, rng).copied()
    }

    /// A uniformly drawn user this client may target among those `keep` accepts.
    pub fn pick_user_where(&self, rng: &mut SimRng, keep: impl Fn(u32, &ShadowUser) -> bool) -> Option<u32> {
        let ids: Vec<u32> = self
            .shadow
            .users
            .iter()
            .filter(|(id, user)| self.owns_user(user) && keep(**id, user))
            .map(|(id, _)| *id)
            .collect();
        shadow::pick(&ids, rng).copied()
    }

    /// A stream id no stream holds when the request commits: alone, a deleted one or
    /// one never used; with others, one from the top of the id space (see the module
    /// docs).
    pub fn absent_stream_id(&self, rng: &mut SimRng) -> u32 {
        if self.shared() {
            unreachable_id(rng)
        } else {
            shadow::absent_key(&self.shadow.streams, self.shadow.next_stream_id, rng)
        }
    }

    /// A (stream, topic) that does not exist, for an aim at `StreamNotFound` (an absent
    /// stream, any topic id) or `TopicNotFound` (a stream of the client's, a topic id it
    /// never held). `None` for any other aim, or when the client has no stream.
    pub fn missing_topic(&self, rng: &mut SimRng, aim: Outcome) -> Option<(u32, u32)> {
        match aim {
            // The absent stream is drawn first: the order is part of the seed contract.
            Outcome::StreamNotFound => Some((self.absent_stream_id(rng), rng.below(shadow::ABSENT_ID_SPAN) as u32)),
            Outcome::TopicNotFound => {
                let stream_id = self.pick_stream(rng)?;
                let stream = &self.shadow.streams[&stream_id];
                Some((stream_id, shadow::absent_key(&stream.topics, stream.next_topic_id, rng)))
            }
            _ => None,
        }
    }

    /// An invalid name in a topic's scope (a group's or the topic's own), for an aim at
    /// `InvalidName`: half the time in one of the client's topics, else (or when it has
    /// none) under an absent stream and any topic id.
    pub fn invalid_name_in_topic(&self, rng: &mut SimRng) -> (u32, u32, String) {
        match self.pick_topic_where(rng, |_| true) {
            Some((stream_id, topic_id)) if shadow::coin(rng) => (stream_id, topic_id, shadow::invalid_name(rng)),
            _ => (
                self.absent_stream_id(rng),
                rng.below(shadow::ABSENT_ID_SPAN) as u32,
                shadow::invalid_name(rng),
            ),
        }
    }

    /// A (stream, topic, group) whose topic is the client's and whose group it never
    /// held, for an aim at `GroupNotFound`; `None` when the client has no topic.
    pub fn missing_group(&self, rng: &mut SimRng) -> Option<(u32, u32, u32)> {
        let (stream_id, topic_id) = self.pick_topic_where(rng, |_| true)?;
        let topic = self.shadow.topic(stream_id, topic_id)?;
        Some((
            stream_id,
            topic_id,
            shadow::absent_key(&topic.groups, topic.next_group_id, rng),
        ))
    }

    /// A user id no user holds when the request commits (never root's); as
    /// [`Scope::absent_stream_id`].
    pub fn absent_user_id(&self, rng: &mut SimRng) -> u32 {
        if self.shared() {
            unreachable_id(rng)
        } else {
            shadow::absent_key(&self.shadow.users, self.shadow.next_user_id, rng)
        }
    }

    // ---- shared limits ----

    /// Whether `adding` more of `what` fit under the cluster's limit when the request
    /// commits. Alone, the shadow's counts are exact; with others, this client's count
    /// is exact and each other client holds between none and its namespace's maximum.
    pub fn room(&self, what: Global, adding: u64) -> Room {
        let (own, everyone) = match what {
            // usize -> u64 is lossless on every supported target.
            Global::Streams => (
                self.shadow.streams.values().filter(|s| self.owns_stream(s)).count() as u64,
                self.shadow.streams.len() as u64,
            ),
            // Root is always there, whoever counts.
            Global::Users => (
                1 + self
                    .shadow
                    .users
                    .values()
                    .filter(|u| u.owner == Some(self.client))
                    .count() as u64,
                self.shadow.users.len() as u64,
            ),
            Global::Partitions => (self.own_partitions(), self.shadow.partition_count()),
        };
        if !self.shared() {
            return if everyone + adding <= what.max() {
                Room::Fits
            } else {
                Room::Full
            };
        }
        let others_max = (self.clients as u64 - 1) * what.per_client_max();
        if own + adding > what.max() {
            Room::Full
        } else if own + others_max + adding <= what.max() {
            Room::Fits
        } else {
            Room::Maybe
        }
    }

    /// Partitions the cluster has room for, at most: exact alone; with others, the room
    /// there would be if they held none (so a request for more is certainly refused).
    pub fn partitions_left(&self) -> u64 {
        let counted = if self.shared() {
            self.own_partitions()
        } else {
            self.shadow.partition_count()
        };
        PARTITIONS_TOTAL_MAX.saturating_sub(counted)
    }

    /// Partitions a create aimed at success may add: what fits in the cluster and in
    /// this client's budget. Only generation reads the budget; predictions never do.
    pub fn partitions_to_create(&self) -> u64 {
        let budget_left = self.partitions_budget.saturating_sub(self.own_partitions());
        self.partitions_left().min(budget_left)
    }

    /// Partitions in this client's streams.
    pub fn own_partitions(&self) -> u64 {
        self.shadow
            .streams
            .values()
            .filter(|s| self.owns_stream(s))
            .flat_map(|s| s.topics.values())
            .map(|t| u64::from(t.partition_count()))
            .sum()
    }
}

/// Ids at the top of the u32 space: counters start at 0 and hand out one id per
/// create, so no run reaches them (and `u32::MAX` itself is never handed out).
fn unreachable_id(rng: &mut SimRng) -> u32 {
    // ABSENT_ID_SPAN is far below u32::MAX, so neither the draw nor the subtraction
    // can wrap.
    u32::MAX - rng.below(ABSENT_ID_SPAN) as u32
}
