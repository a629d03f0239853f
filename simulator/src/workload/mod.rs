//! The metadata workload: a [`ClientDriver`] that sends metadata ops, predicts their
//! replies with a [`Shadow`] model, classifies every reply, and at the end of a run
//! compares the shadow with a replica's committed [`MetadataState`].
//!
//! Generation is outcome-first: pick an action (by [`ActionWeights`]; uniform for now),
//! then an aim drawn uniformly, without replacement, from the action's declared
//! outcomes, and ask the action for an op the shadow predicts will produce it
//! (`CreateStream` aims `Ok` with a fresh name, `NameAlreadyExists` with a taken one).
//! An aim the shadow cannot reach now (no stream to delete) is counted and the next
//! one tried; an action with no reachable aim gives way to another, at most
//! [`ACTION_ATTEMPTS_MAX`] times.
//!
//! Judging replies:
//! - always: the reply decodes ("malformed reply" otherwise), names the request's
//!   operation, has an outcome its action declares, and a success carries the fields
//!   its op's success carries (an id for a create, a well-formed token);
//! - with exactly one client, predictions are exact: the outcome must equal the
//!   prediction made when the request was sent, and every id the cluster assigns must
//!   equal the shadow's, and [`MetadataWorkload::compare_with`] checks the final state;
//! - with several clients, ops interleave and replies arrive in any order, so only the
//!   checks in the first item apply. Successes are still folded into the shadow (best
//!   effort, in reply order, not commit order), so aims mostly stay meaningful, but the
//!   shadow is approximate and the final comparison is skipped.
//!
//! Randomness: one [`SimRng`] stream per client, each seeded from the workload seed in
//! client order, so one client's draws never shift another's (what a client draws
//! still depends on the shared shadow). Failures are collected, never panicked.
//!
//! Does not model: the partition plane, logins, or authorisation (every op is sent as
//! if by root).

pub mod actions;
pub mod shadow;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use cluster::metadata::{MetadataOp, MetadataReply, MetadataState, Outcome};
use cluster::wire::Header;

use crate::harness::client::ClientDriver;
use crate::rng::SimRng;

pub use actions::Action;
pub use shadow::Shadow;

/// Actions tried for one request before the client stays idle this time. Every action
/// has an aim the shadow can always reach (an invalid name, an absent id, root), so
/// the first attempt succeeds unless weights select actions that have none.
pub const ACTION_ATTEMPTS_MAX: usize = 16;

/// Failures kept word for word; later ones are only counted (a broken cluster would
/// otherwise grow the list by one per reply).
pub const FAILURES_KEPT_MAX: usize = 100;

/// Differences named in one failed comparison; the rest are counted.
pub const DIFFERENCES_REPORTED_MAX: usize = 16;

/// Relative weights of the actions, indexed in [`Action::ALL`] order. A draw maps one
/// `below(total)` to an action by walking the weights in that order, so with equal
/// weights the draw is a uniform index. (Per-plane weight tables come later.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionWeights {
    weights: [u32; Action::COUNT],
}

impl ActionWeights {
    /// Every action with weight 1.
    pub fn uniform() -> Self {
        Self {
            weights: [1; Action::COUNT],
        }
    }

    /// Each action weighted by `weight(action)`.
    pub fn from_fn(weight: impl Fn(Action) -> u32) -> Self {
        let mut weights = [0; Action::COUNT];
        for action in Action::ALL {
            weights[*action as usize] = weight(*action);
        }
        Self { weights }
    }

    /// The metadata plane's mix: creates outweigh updates, which outweigh deletes, so
    /// the metadata grows deep enough (streams with topics with groups) for every action
    /// to find targets. Part of the seed contract like the action order.
    pub fn metadata_plane() -> Self {
        Self::from_fn(|action| match action {
            Action::CreateStream | Action::CreateTopic | Action::CreateUser => 4,
            Action::CreateConsumerGroup | Action::CreatePersonalAccessToken => 3,
            Action::DeleteStream | Action::DeleteTopic | Action::DeleteUser => 1,
            _ => 2,
        })
    }

    /// The weight of `action`.
    pub fn weight(&self, action: Action) -> u32 {
        self.weights[action as usize]
    }

    fn total(&self) -> u64 {
        self.weights.iter().map(|w| u64::from(*w)).sum()
    }

    /// A weighted draw, or `None` if every weight is 0.
    pub fn pick(&self, rng: &mut SimRng) -> Option<Action> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        let mut draw = rng.below(total);
        for action in Action::ALL {
            let weight = u64::from(self.weight(*action));
            if draw < weight {
                return Some(*action);
            }
            draw -= weight;
        }
        None
    }
}

impl Default for ActionWeights {
    fn default() -> Self {
        Self::uniform()
    }
}

/// What a client's outstanding request was meant to do.
#[derive(Clone, Debug)]
struct Pending {
    action: Action,
    aim: Outcome,
    /// The shadow's prediction when the request was sent.
    predicted: Outcome,
    op: MetadataOp,
}

#[derive(Clone, Debug)]
struct ClientState {
    rng: SimRng,
    pending: Option<Pending>,
}

/// The metadata-plane client driver. See the module docs.
#[derive(Clone, Debug)]
pub struct MetadataWorkload {
    shadow: Shadow,
    clients: Vec<ClientState>,
    weights: ActionWeights,
    stopped: bool,
    requests: [u64; Action::COUNT],
    replies: [u64; Action::COUNT],
    outcomes: BTreeMap<(Action, Outcome), u64>,
    aims_unreachable: BTreeMap<(Action, Outcome), u64>,
    aims_missed: BTreeMap<(Action, Outcome), u64>,
    replies_classified: u64,
    failures: Vec<String>,
    failures_total: u64,
}

/// The workload's counters, for the run report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkloadReport {
    /// Requests sent per action (every action listed, 0 included).
    pub requests: BTreeMap<&'static str, u64>,
    /// Replies received per action (every action listed, 0 included).
    pub replies: BTreeMap<&'static str, u64>,
    /// Replies per (action, outcome), only pairs that occurred.
    pub outcomes: BTreeMap<(&'static str, Outcome), u64>,
    /// Aims the shadow could not reach when drawn (no op generated), per (action, aim).
    pub aims_unreachable: BTreeMap<(&'static str, Outcome), u64>,
    /// Replies whose outcome differed from the aim, per (action, aim). With one client
    /// every one of them is also a failed prediction; with several, interleaving.
    pub aims_missed: BTreeMap<(&'static str, Outcome), u64>,
    /// Replies that decoded to an outcome their action declares.
    pub replies_classified: u64,
    /// Failures found (including those not kept word for word).
    pub failures: u64,
}

impl WorkloadReport {
    /// Requests sent, all actions.
    pub fn requests_total(&self) -> u64 {
        self.requests.values().sum()
    }

    /// Replies received, all actions.
    pub fn replies_total(&self) -> u64 {
        self.replies.values().sum()
    }

    /// Distinct declared (action, outcome) pairs seen at least once.
    pub fn outcomes_reached(&self) -> usize {
        Action::ALL
            .iter()
            .flat_map(|action| action.outcomes().iter().map(move |outcome| (action.name(), *outcome)))
            .filter(|key| self.outcomes.get(key).is_some_and(|count| *count > 0))
            .count()
    }

    /// Declared (action, outcome) pairs, all actions.
    pub fn outcomes_declared() -> usize {
        Action::ALL.iter().map(|action| action.outcomes().len()).sum()
    }
}

impl fmt::Display for WorkloadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "workload: requests={} replies={} classified={} outcomes_reached={}/{} aims_unreachable={} aims_missed={} failures={}",
            self.requests_total(),
            self.replies_total(),
            self.replies_classified,
            self.outcomes_reached(),
            Self::outcomes_declared(),
            self.aims_unreachable.values().sum::<u64>(),
            self.aims_missed.values().sum::<u64>(),
            self.failures
        )
    }
}

/// What the end-of-run comparison of shadow and cluster compared (all zero and
/// `skipped` with several clients, where the shadow is approximate).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShadowComparison {
    /// True if nothing was compared because the workload had several clients.
    pub skipped: bool,
    /// Streams found on both sides and compared field by field.
    pub streams_compared: u64,
    /// Topics compared.
    pub topics_compared: u64,
    /// Consumer groups compared.
    pub groups_compared: u64,
    /// Users compared (root included).
    pub users_compared: u64,
    /// Token names found on both sides.
    pub tokens_compared: u64,
}

impl fmt::Display for ShadowComparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.skipped {
            return write!(f, "shadow comparison skipped (several clients)");
        }
        write!(
            f,
            "shadow compared: streams={} topics={} groups={} users={} tokens={}",
            self.streams_compared,
            self.topics_compared,
            self.groups_compared,
            self.users_compared,
            self.tokens_compared
        )
    }
}

impl MetadataWorkload {
    /// A workload for `clients` clients, every draw derived from `seed` (the run's
    /// workload seed), with uniform action weights.
    pub fn new(seed: u64, clients: usize) -> Self {
        Self::with_weights(seed, clients, ActionWeights::uniform())
    }

    /// As [`MetadataWorkload::new`], with the given action weights.
    pub fn with_weights(seed: u64, clients: usize, weights: ActionWeights) -> Self {
        // One child stream per client, drawn in client order: adding a client appends a
        // stream and never shifts the others.
        let mut parent = SimRng::new(seed);
        let clients = (0..clients)
            .map(|_| ClientState {
                rng: SimRng::new(parent.next_u64()),
                pending: None,
            })
            .collect();
        Self {
            shadow: Shadow::genesis(),
            clients,
            weights,
            stopped: false,
            requests: [0; Action::COUNT],
            replies: [0; Action::COUNT],
            outcomes: BTreeMap::new(),
            aims_unreachable: BTreeMap::new(),
            aims_missed: BTreeMap::new(),
            replies_classified: 0,
            failures: Vec::new(),
            failures_total: 0,
        }
    }

    /// True if predictions are exact (exactly one client).
    pub fn exact(&self) -> bool {
        self.clients.len() == 1
    }

    /// The shadow model.
    pub fn shadow(&self) -> &Shadow {
        &self.shadow
    }

    /// Stop handing out new requests (for the drain at the end of a run); replies to
    /// outstanding ones are still judged.
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    /// Requests sent and not answered.
    pub fn outstanding(&self) -> usize {
        self.clients.iter().filter(|client| client.pending.is_some()).count()
    }

    /// Requests sent, all clients.
    pub fn requests_sent(&self) -> u64 {
        self.requests.iter().sum()
    }

    /// The failures found, word for word (at most [`FAILURES_KEPT_MAX`]).
    pub fn failures(&self) -> &[String] {
        &self.failures
    }

    fn fail(&mut self, failure: String) {
        self.failures_total += 1;
        if self.failures.len() < FAILURES_KEPT_MAX {
            self.failures.push(failure);
        }
    }

    /// The counters.
    pub fn report(&self) -> WorkloadReport {
        let by_name = |counts: &[u64; Action::COUNT]| -> BTreeMap<&'static str, u64> {
            Action::ALL
                .iter()
                .map(|action| (action.name(), counts[*action as usize]))
                .collect()
        };
        let named = |counts: &BTreeMap<(Action, Outcome), u64>| -> BTreeMap<(&'static str, Outcome), u64> {
            counts
                .iter()
                .map(|((action, outcome), count)| ((action.name(), *outcome), *count))
                .collect()
        };
        WorkloadReport {
            requests: by_name(&self.requests),
            replies: by_name(&self.replies),
            outcomes: named(&self.outcomes),
            aims_unreachable: named(&self.aims_unreachable),
            aims_missed: named(&self.aims_missed),
            replies_classified: self.replies_classified,
            failures: self.failures_total,
        }
    }

    /// Draw (action, aim, op) for one request: see the module docs.
    fn draw(
        shadow: &Shadow,
        weights: &ActionWeights,
        rng: &mut SimRng,
        unreachable: &mut BTreeMap<(Action, Outcome), u64>,
    ) -> Option<(Action, Outcome, MetadataOp)> {
        for _ in 0..ACTION_ATTEMPTS_MAX {
            let action = weights.pick(rng)?;
            // Aims without replacement: uniform over the ones the shadow can reach.
            let mut aims = action.outcomes().to_vec();
            while !aims.is_empty() {
                let aim = aims.swap_remove(rng.index(aims.len()));
                if let Some(op) = action.generate(shadow, rng, aim) {
                    return Some((action, aim, op));
                }
                *unreachable.entry((action, aim)).or_default() += 1;
            }
        }
        None
    }

    /// The next request of `client`, as (operation code, body).
    pub fn next_op(&mut self, client: usize) -> Option<(u8, Vec<u8>)> {
        if self.stopped {
            return None;
        }
        let Some(state) = self.clients.get_mut(client) else {
            let count = self.clients.len();
            self.fail(format!(
                "a request was asked for client {client}, but the workload has {count}"
            ));
            return None;
        };
        if state.pending.is_some() {
            self.fail(format!("client {client} asked for a request with one outstanding"));
            return None;
        }
        let (action, aim, op) = Self::draw(&self.shadow, &self.weights, &mut state.rng, &mut self.aims_unreachable)?;
        let predicted = action.predict(&self.shadow, &op);
        let bytes = (op.operation_code(), op.encode());
        state.pending = Some(Pending {
            action,
            aim,
            predicted,
            op,
        });
        self.requests[action as usize] += 1;
        // Only an exact shadow (one client) can be held to its aims: with several
        // clients it folds in concurrent replies best-effort and may hold a state no
        // order of commits produces (two streams of one name, say).
        if predicted != aim && self.exact() {
            let op = self.clients[client].pending.as_ref().map(|p| format!("{:?}", p.op));
            self.fail(format!(
                "workload bug: {} aimed at {aim:?} but the shadow predicts {predicted:?} for {}",
                action.name(),
                op.unwrap_or_default()
            ));
        }
        Some(bytes)
    }

    /// Judge the reply to `client`'s outstanding request and fold it into the shadow.
    pub fn judge_reply(&mut self, client: usize, header: &Header, body: &[u8]) {
        let Some(pending) = self.clients.get_mut(client).and_then(|state| state.pending.take()) else {
            self.fail(format!("client {client} got a reply with no request outstanding"));
            return;
        };
        let Pending {
            action,
            aim,
            predicted,
            op,
        } = pending;
        let name = action.name();
        self.replies[action as usize] += 1;
        if header.operation != op.operation_code() {
            self.fail(format!(
                "{name}: the reply names operation {}, the request was operation {} (client {client})",
                header.operation,
                op.operation_code()
            ));
        }
        let reply = match MetadataReply::decode(body) {
            Ok(reply) => reply,
            Err(error) => {
                self.fail(format!(
                    "malformed reply to {name} (client {client}, {} bytes): {error}",
                    body.len()
                ));
                return;
            }
        };
        let outcome = reply.outcome();
        *self.outcomes.entry((action, outcome)).or_default() += 1;
        if action.outcomes().contains(&outcome) {
            self.replies_classified += 1;
        } else {
            self.fail(format!(
                "{name} replied {outcome:?}, an outcome it does not declare (client {client}, op {op:?})"
            ));
        }
        if outcome != aim {
            *self.aims_missed.entry((action, aim)).or_default() += 1;
        }
        if self.exact() && outcome != predicted {
            self.fail(format!(
                "{name} predicted {predicted:?}, got {outcome:?} (client {client}, op {op:?})"
            ));
        }
        action.observe(&mut self.shadow, &op, &reply);
        let id_mismatches = self.shadow.take_id_mismatches();
        if self.exact() {
            for mismatch in id_mismatches {
                self.fail(mismatch);
            }
        }
        for mismatch in self.shadow.take_reply_mismatches() {
            self.fail(mismatch);
        }
    }

    /// Compare the shadow with `state` (the leader's committed metadata, after the
    /// drain). Only with one client; with several, `Ok` with `skipped`. `Err` names
    /// every difference (up to [`DIFFERENCES_REPORTED_MAX`]).
    ///
    /// Compares every stream (id, name, next topic id), topic (id, name, partitions,
    /// durability, message expiry, next group id), consumer group (id, name), user (id,
    /// username, active, permissions) and each user's token names, both ways (present
    /// on one side only is a difference).
    pub fn compare_with(&self, state: &MetadataState) -> Result<ShadowComparison, String> {
        if !self.exact() {
            return Ok(ShadowComparison {
                skipped: true,
                ..ShadowComparison::default()
            });
        }
        let outstanding = self.outstanding();
        if outstanding > 0 {
            return Err(format!(
                "{outstanding} request(s) outstanding: the shadow cannot be compared before the drain"
            ));
        }
        let mut compared = ShadowComparison::default();
        let mut differences = Vec::new();
        compare_streams(&self.shadow, state, &mut compared, &mut differences);
        compare_users(&self.shadow, state, &mut compared, &mut differences);
        if differences.is_empty() {
            return Ok(compared);
        }
        let total = differences.len();
        differences.truncate(DIFFERENCES_REPORTED_MAX);
        let mut message = format!("the shadow differs from the cluster: {}", differences.join("; "));
        if total > DIFFERENCES_REPORTED_MAX {
            message.push_str(&format!("; and {} more", total - DIFFERENCES_REPORTED_MAX));
        }
        Err(message)
    }
}

/// Push a difference if `shadow != cluster`.
fn differ<T: PartialEq + fmt::Debug>(differences: &mut Vec<String>, what: &str, shadow: &T, cluster: &T) {
    if shadow != cluster {
        differences.push(format!("{what}: shadow {shadow:?}, cluster {cluster:?}"));
    }
}

/// Keys present on one side only, as differences.
fn one_sided<A, B>(
    differences: &mut Vec<String>,
    what: &str,
    shadow: &BTreeMap<u32, A>,
    cluster: &BTreeMap<u32, B>,
    name_a: impl Fn(&A) -> String,
    name_b: impl Fn(&B) -> String,
) {
    for (id, a) in shadow {
        if !cluster.contains_key(id) {
            differences.push(format!(
                "{what} {id} ({}) is in the shadow, not in the cluster",
                name_a(a)
            ));
        }
    }
    for (id, b) in cluster {
        if !shadow.contains_key(id) {
            differences.push(format!(
                "{what} {id} ({}) is in the cluster, not in the shadow",
                name_b(b)
            ));
        }
    }
}

fn compare_streams(
    shadow: &Shadow,
    state: &MetadataState,
    compared: &mut ShadowComparison,
    differences: &mut Vec<String>,
) {
    one_sided(
        differences,
        "stream",
        &shadow.streams,
        state.streams(),
        |s| s.name.clone(),
        |s| s.name.clone(),
    );
    for (stream_id, expected) in &shadow.streams {
        let Some(actual) = state.stream(*stream_id) else {
            continue;
        };
        compared.streams_compared += 1;
        let at = format!("stream {stream_id}");
        differ(differences, &format!("{at} name"), &expected.name, &actual.name);
        differ(
            differences,
            &format!("{at} next topic id"),
            &expected.next_topic_id,
            &actual.next_topic_id,
        );
        one_sided(
            differences,
            &format!("{at} topic"),
            &expected.topics,
            &actual.topics,
            |t| t.name.clone(),
            |t| t.name.clone(),
        );
        for (topic_id, expected) in &expected.topics {
            let Some(actual) = actual.topics.get(topic_id) else {
                continue;
            };
            compared.topics_compared += 1;
            let at = format!("{at} topic {topic_id}");
            differ(differences, &format!("{at} name"), &expected.name, &actual.name);
            // The shadow keeps a count; the cluster keeps the partitions themselves
            // (ids 0..count, each with its group), so compare the counts.
            differ(
                differences,
                &format!("{at} partitions"),
                &u64::from(expected.partitions),
                // usize -> u64 is lossless on every supported target.
                &(actual.partitions.len() as u64),
            );
            differ(
                differences,
                &format!("{at} durability"),
                &expected.durability,
                &actual.durability,
            );
            differ(
                differences,
                &format!("{at} message expiry"),
                &expected.message_expiry_micros,
                &actual.message_expiry_micros,
            );
            differ(
                differences,
                &format!("{at} next group id"),
                &expected.next_group_id,
                &actual.next_group_id,
            );
            one_sided(
                differences,
                &format!("{at} group"),
                &expected.groups,
                &actual.consumer_groups,
                String::clone,
                |g| g.name.clone(),
            );
            for (group_id, expected) in &expected.groups {
                let Some(actual) = actual.consumer_groups.get(group_id) else {
                    continue;
                };
                compared.groups_compared += 1;
                differ(
                    differences,
                    &format!("{at} group {group_id} name"),
                    expected,
                    &actual.name,
                );
            }
        }
    }
}

fn compare_users(
    shadow: &Shadow,
    state: &MetadataState,
    compared: &mut ShadowComparison,
    differences: &mut Vec<String>,
) {
    one_sided(
        differences,
        "user",
        &shadow.users,
        state.users(),
        |u| u.username.clone(),
        |u| u.username.clone(),
    );
    for (user_id, expected) in &shadow.users {
        let Some(actual) = state.user(*user_id) else { continue };
        compared.users_compared += 1;
        let at = format!("user {user_id}");
        differ(
            differences,
            &format!("{at} username"),
            &expected.username,
            &actual.username,
        );
        differ(differences, &format!("{at} active"), &expected.active, &actual.active);
        differ(
            differences,
            &format!("{at} permissions"),
            &expected.permissions,
            &actual.permissions,
        );
        let expected_tokens: BTreeSet<&str> = expected.tokens.keys().map(String::as_str).collect();
        let actual_tokens: BTreeSet<&str> = actual.tokens.keys().map(String::as_str).collect();
        compared.tokens_compared += expected_tokens.intersection(&actual_tokens).count() as u64;
        differ(
            differences,
            &format!("{at} token names"),
            &expected_tokens,
            &actual_tokens,
        );
    }
}

impl ClientDriver for MetadataWorkload {
    fn next_request(&mut self, client: usize) -> Option<(u8, Vec<u8>)> {
        self.next_op(client)
    }

    fn on_reply(&mut self, client: usize, reply: &Header, body: &[u8]) {
        self.judge_reply(client, reply, body);
    }
}
