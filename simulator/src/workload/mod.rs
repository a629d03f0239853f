//! The workload: a [`ClientDriver`] that sends metadata ops, partition ops and polls,
//! predicts their replies with a [`Shadow`] model, judges every reply, and at the end
//! of a run compares the shadow with the cluster's committed metadata and each
//! partition's state.
//!
//! Generation is outcome-first: pick an action (by the plane's [`ActionWeights`]),
//! then an aim drawn without replacement from the action's declared outcomes
//! (uniformly, or with the action's success weighted up in the planes that must build
//! deep state before they test what defines them), and ask the action for requests the shadow predicts will produce it
//! (`CreateStream` aims `Ok` with a fresh name, `NameAlreadyExists` with a taken one;
//! `StoreStaleOwnerOffset` aims `StaleOwner` with a former owner of a partition). An
//! aim the client cannot reach now (no stream to delete) is counted and the next one
//! tried; an action with no reachable aim gives way to another, at most
//! [`ACTION_ATTEMPTS_MAX`] times. Most actions draw one request; the purges draw a
//! [`Plan`] of one `Purge` per partition, queued for that client and sent one at a
//! time, each predicted when sent and judged on its own reply.
//!
//! Namespaces: with several clients each one creates and targets only its own streams
//! and users (named `c{client}-...`), and through them its own topics, partitions and
//! groups (see [`scope`]). A namespace changes only by its client's requests, one at a
//! time, so predictions about it are exact with any number of clients. What clients
//! share (the global limits, the stream and user id counters, root) is predicted as
//! every interleaving allows: a limit another client may have reached allows both `Ok`
//! and `LimitReached`, absent ids come from where no counter reaches, root is targeted
//! only where its state cannot change the answer.
//!
//! Judging every reply:
//! - it names the request's operation and group, and decodes as the answer to its
//!   request's kind ("malformed reply" otherwise, never a panic);
//! - its outcome is one the action declares, and one the prediction allows (the
//!   prediction is one outcome unless a global limit is in play);
//! - its fields agree with the shadow: ids and offsets in the client's namespace
//!   (topic and group ids, first partition ids, generations, `Appended` offsets, the
//!   next offset a refusal reports, the owner generation a `StaleOwner` names), polled
//!   messages (every one must be the message the shadow holds at its offset; a message
//!   the shadow never saw committed is a failure), the poll's next offset and count;
//! - with one client, also the stream and user ids (which every client draws from one
//!   counter).
//!
//! A failure names the action, the aim, the client, the request and the reply.
//!
//! At the end (after the drain, nothing outstanding), [`MetadataWorkload::compare_with`]
//! and [`MetadataWorkload::compare_partition`] compare the shadow with the cluster;
//! [`MetadataWorkload::defining_outcome_missing`] says whether a run of a plane saw
//! what makes it a test of that plane.
//!
//! Randomness: one [`SimRng`] stream per client, each seeded from the workload seed in
//! client order, so one client's draws never shift another's (what a client draws
//! still depends on the shared shadow). Failures are collected, never panicked.
//!
//! Does not model: authorisation (every request is sent as if by root), logins with
//! tokens, token expiry, or segment boundaries (see [`shadow_partition`]).

pub mod actions;
pub mod compare;
pub mod contended;
pub mod outage;
pub mod outcome;
pub mod request;
pub mod scope;
pub mod shadow;
pub mod shadow_partition;
pub mod weights;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, VecDeque};
use std::fmt;

use cluster::metadata::MetadataState;
use cluster::partition::PartitionState;
use cluster::vsr::ClientError;
use cluster::wire::{Command, Header};

use crate::harness::client::{ClientDriver, ClientRequest};
use crate::rng::SimRng;

pub use actions::Action;
pub use compare::{DIFFERENCES_REPORTED_MAX, PartitionComparison, ShadowComparison};
pub use contended::{Contended, LinearizabilityReport};
pub use outcome::{Outcome, OutcomeSet};
pub use request::{Answered, PartitionAt, Plan, Reply, Request};
pub use scope::Scope;
pub use shadow::Shadow;
pub use weights::{ActionWeights, Plane, WarmUp};

/// Actions tried for one request before the client stays idle this time. Every
/// metadata action has an aim the shadow can always reach (an invalid name, an absent
/// id, root), so the first attempt succeeds unless weights select only actions that
/// need partitions before any exist.
pub const ACTION_ATTEMPTS_MAX: usize = 16;

/// Failures kept word for word; later ones are only counted (a broken cluster would
/// otherwise grow the list by one per reply).
pub const FAILURES_KEPT_MAX: usize = 100;

/// Mixed into the workload seed for the stream that routes requests to the shared
/// objects.
const CONTENDED_ROUTER_SALT: u64 = 0xC0_7E7D_ED00_0001;

/// One request of a plan, waiting to be sent.
#[derive(Clone, Debug)]
struct Step {
    action: Action,
    aim: Outcome,
    /// Whether this step is the one the aim is about (see `Plan::aimed`).
    aimed: bool,
    request: Request,
    /// Its place in the plan (1-based) and the plan's length, for failures.
    step: usize,
    steps: usize,
}

/// What a client's outstanding request was meant to do.
#[derive(Clone, Debug)]
struct Pending {
    step: Step,
    /// The shadow's prediction when the request was sent.
    predicted: OutcomeSet,
}

impl Pending {
    /// "PurgeStream (aim Ok, step 2/3, client 0) PurgeTopic ..." for failures.
    fn describe(step: &Step, client: usize) -> String {
        let Step {
            action,
            aim,
            step,
            steps,
            request,
            ..
        } = step;
        let plan = if *steps > 1 {
            format!(", step {step}/{steps}")
        } else {
            String::new()
        };
        format!(
            "{} (aim {aim:?}{plan}, client {client}, request {})",
            action.name(),
            request.describe()
        )
    }
}

#[derive(Clone, Debug)]
struct ClientState {
    rng: SimRng,
    pending: Option<Pending>,
    /// The rest of the plan being sent.
    queued: VecDeque<Step>,
}

/// The client driver of the consensus planes. See the module docs.
#[derive(Clone, Debug)]
pub struct MetadataWorkload {
    shadow: Shadow,
    clients: Vec<ClientState>,
    weights: ActionWeights,
    stopped: bool,
    /// No new requests for now (a plan waits where it is), e.g. while the cluster
    /// recovers from an outage; unlike `stopped`, it ends.
    paused: bool,
    requests: [u64; Action::COUNT],
    replies: [u64; Action::COUNT],
    outcomes: BTreeMap<(Action, Outcome), u64>,
    aims_unreachable: BTreeMap<(Action, Outcome), u64>,
    aims_missed: BTreeMap<(Action, Outcome), u64>,
    replies_classified: u64,
    failures: Vec<String>,
    failures_total: u64,
    /// The contended clients' driver (`--plane contended`, `--shared`), if any.
    contended: Option<Contended>,
    /// Percent of a logged-in client's requests (between plans) that go to the shared
    /// objects: 100 on the contended plane.
    contended_percent: u64,
    /// Draws which requests go to the shared objects, one stream of its own so the
    /// exact workload's draws do not move.
    contended_router: SimRng,
    /// Requests handed out so far, logins included.
    handed_out: u64,
    /// With `--requests-max`, no request is handed out once this many were.
    requests_max: Option<u64>,
}

/// The workload's counters, for the run report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkloadReport {
    /// Requests sent per action (every action listed, 0 included; a plan's steps each
    /// count).
    pub requests: BTreeMap<&'static str, u64>,
    /// Replies received per action (every action listed, 0 included).
    pub replies: BTreeMap<&'static str, u64>,
    /// Replies per (action, outcome), only pairs that occurred.
    pub outcomes: BTreeMap<(&'static str, Outcome), u64>,
    /// Aims the client could not reach when drawn (nothing sent), per (action, aim).
    pub aims_unreachable: BTreeMap<(&'static str, Outcome), u64>,
    /// Replies whose outcome differed from the aim, per (action, aim): a failed
    /// prediction, or a global limit another client reached.
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
                queued: VecDeque::new(),
            })
            .collect();
        Self {
            shadow: Shadow::genesis(),
            clients,
            weights,
            stopped: false,
            paused: false,
            requests: [0; Action::COUNT],
            replies: [0; Action::COUNT],
            outcomes: BTreeMap::new(),
            aims_unreachable: BTreeMap::new(),
            aims_missed: BTreeMap::new(),
            replies_classified: 0,
            failures: Vec::new(),
            failures_total: 0,
            contended: None,
            contended_percent: 0,
            contended_router: SimRng::new(seed ^ CONTENDED_ROUTER_SALT),
            handed_out: 0,
            requests_max: None,
        }
    }

    /// Send `percent` of every logged-in client's requests (between plans) to the
    /// shared objects of `contended` (100: the contended plane; the exact actions' weights
    /// are then expected to be zero).
    pub fn with_contended(mut self, contended: Contended, percent: u64) -> Self {
        assert!((1..=100).contains(&percent));
        self.contended = Some(contended);
        self.contended_percent = percent;
        self
    }

    /// The contended driver, if any.
    pub fn contended(&self) -> Option<&Contended> {
        self.contended.as_ref()
    }

    /// The contended driver, if any, mutably.
    pub fn contended_mut(&mut self) -> Option<&mut Contended> {
        self.contended.as_mut()
    }

    /// True with exactly one client: then the ids every client draws from one counter
    /// (streams, users) are predicted exactly too.
    pub fn exact(&self) -> bool {
        self.clients.len() == 1
    }

    /// The shadow model.
    pub fn shadow(&self) -> &Shadow {
        &self.shadow
    }

    /// Stop handing out new requests (for the drain at the end of a run), the rest of
    /// any plan included; replies to outstanding ones are still judged.
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    /// Hand out no new request while `paused` (replies to outstanding ones are still
    /// judged, and a plan goes on where it stopped once resumed).
    pub fn set_paused(&mut self, paused: bool) {
        self.paused = paused;
    }

    /// After a whole-cluster power outage (nothing outstanding), judge every partition
    /// the shadow holds against `recovered` (its group's state on its primary) by its
    /// topic's durability, and take the recovered state (see [`outage`]). `Err` names
    /// what no durability mode allows; a partition `recovered` does not know is one.
    pub fn rebase_after_outage(
        &mut self,
        recovered: impl Fn(u64) -> Option<PartitionState>,
    ) -> Result<outage::OutageLoss, String> {
        self.drained()?;
        // A plan's later steps aim at what the shadow held when it was drawn, which the
        // outage may have taken back: they go on (a plan may hold its client's login),
        // their replies judged against the shadow as always, but no longer held to
        // their aims.
        for step in self.clients.iter_mut().flat_map(|client| client.queued.iter_mut()) {
            step.aimed = false;
        }
        let mut total = outage::OutageLoss::default();
        for stream in self.shadow.streams.values_mut() {
            for topic in stream.topics.values_mut() {
                for partition in &mut topic.partitions {
                    let Some(state) = recovered(partition.group) else {
                        return Err(format!(
                            "partition {} (group {:#x}) has no primary after a whole-cluster power outage",
                            partition.id, partition.group
                        ));
                    };
                    total = total.plus(outage::rebase(partition, &state)?);
                }
            }
        }
        Ok(total)
    }

    /// Hand out no request once `max` were (logins included): a smaller workload for
    /// a shrink (`--requests-max`).
    pub fn set_requests_max(&mut self, max: Option<u64>) {
        self.requests_max = max;
    }

    /// Requests handed out so far, logins and shared-object requests included.
    pub fn handed_out(&self) -> u64 {
        self.handed_out
    }

    /// Requests sent and not answered.
    pub fn outstanding(&self) -> usize {
        self.clients.iter().filter(|client| client.pending.is_some()).count()
            + self.contended.as_ref().map_or(0, Contended::outstanding)
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

    /// Replies seen with `outcome` for `action`.
    pub fn outcome_count(&self, action: Action, outcome: Outcome) -> u64 {
        self.outcomes.get(&(action, outcome)).copied().unwrap_or(0)
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

    /// What a run of `plane` ("metadata", "partition", "mixed", "uniform",
    /// "lifecycle") never saw of the outcomes that make it a test of that plane, as a
    /// phrase ("an Appended send and a poll that returned messages"), or `None` if it
    /// saw them all:
    /// - metadata: a successful metadata create;
    /// - partition: an `Appended` send and a poll that returned messages;
    /// - lifecycle: a `StaleOwner` refusal (the owner fence) and a `SetGroupOwner` `Ok`;
    /// - mixed, uniform: a successful metadata create and an `Appended` send.
    pub fn defining_outcome_missing(&self, plane: &str) -> Option<String> {
        let Some(plane) = Plane::from_name(plane) else {
            return Some(format!(
                "its defining outcomes (the workload drives no plane {plane:?})"
            ));
        };
        const CREATES: [Action; 6] = [
            Action::CreateStream,
            Action::CreateTopic,
            Action::CreateUser,
            Action::CreateConsumerGroup,
            Action::CreatePersonalAccessToken,
            Action::CreatePartitions,
        ];
        let created = CREATES
            .iter()
            .any(|action| self.outcome_count(*action, Outcome::Ok) > 0);
        let appended = self.outcome_count(Action::SendMessages, Outcome::Appended) > 0;
        let fenced = Action::ALL
            .iter()
            .any(|action| self.outcome_count(*action, Outcome::StaleOwner) > 0);
        let handed = self.outcome_count(Action::SetGroupOwner, Outcome::Ok) > 0;
        // Actions whose requests go to a partition's group (every reply to one was
        // committed or served by that group).
        const PARTITION_ACTIONS: [Action; 10] = [
            Action::SendMessages,
            Action::PollMessages,
            Action::StoreConsumerOffset,
            Action::DeleteConsumerOffset,
            Action::StoreStaleOwnerOffset,
            Action::SetGroupOwner,
            Action::PurgeStream,
            Action::PurgeTopic,
            Action::DeleteSegments,
            Action::SendOversizedBatch,
        ];
        let partition_served = PARTITION_ACTIONS
            .iter()
            .any(|action| self.replies[*action as usize] > 0);
        let needs: &[(bool, &str)] = match plane {
            Plane::Metadata => &[(created, "a successful metadata create")],
            // A committed append is what defines the plane; polls are judged whenever
            // they happen, but a run under heavy faults and crashes may get only a
            // handful of requests through, and one that appended and then compared
            // the log with the shadow at the end has tested the plane.
            Plane::Partition => &[(appended, "an Appended send")],
            Plane::Lifecycle => &[
                (fenced, "a StaleOwner refusal (the owner fence)"),
                (handed, "a SetGroupOwner Ok"),
            ],
            Plane::Mixed => &[
                (created, "a successful metadata create"),
                (appended, "an Appended send"),
            ],
            // Every action at equal weight: the plane is about breadth, so it needs
            // both planes to have answered, not one particular action (a send is one
            // draw in thirty).
            Plane::Uniform => &[
                (created, "a successful metadata create"),
                (partition_served, "a reply from a partition's group"),
            ],
        };
        let missing: Vec<&str> = needs.iter().filter(|(seen, _)| !seen).map(|(_, what)| *what).collect();
        (!missing.is_empty()).then(|| missing.join(" and "))
    }

    /// Draw (action, aim, plan) for one request of `client`: see the module docs.
    fn draw(&mut self, client: usize) -> Option<(Action, Outcome, Plan)> {
        let scope = Scope {
            shadow: &self.shadow,
            client,
            clients: self.clients.len(),
            partitions_budget: self.weights.partitions_budget(),
        };
        let appended = self.outcome_count(Action::SendMessages, Outcome::Appended) > 0;
        let created = self.outcome_count(Action::CreateStream, Outcome::Ok) > 0;
        let fenced = self.outcome_count(Action::StoreStaleOwnerOffset, Outcome::StaleOwner) > 0;
        let rng = &mut self.clients[client].rng;
        {
            // See `WarmUp`: a plane's defining path first, then draws by weight.
            let warm_up: &[(Action, Outcome)] = match self.weights.warm_up() {
                WarmUp::None => &[],
                WarmUp::MetadataCreate if !created => &[(Action::CreateStream, Outcome::Ok)],
                WarmUp::MetadataCreate => &[],
                WarmUp::PartitionAppend if scope.own_partitions() == 0 => {
                    &[(Action::CreateTopic, Outcome::Ok), (Action::CreateStream, Outcome::Ok)]
                }
                WarmUp::PartitionAppend if !appended => &[(Action::SendMessages, Outcome::Appended)],
                WarmUp::PartitionAppend => &[],
                WarmUp::OwnerHandOff if scope.own_partitions() == 0 => {
                    &[(Action::CreateTopic, Outcome::Ok), (Action::CreateStream, Outcome::Ok)]
                }
                // The furthest step the shadow can reach first: a stale owner's write,
                // else a hand-off, else another member, else a group to join. A run
                // that handed off already may need to again: a whole-cluster outage
                // can take back a replicated partition's hand-off, leaving no former
                // owner to write as.
                WarmUp::OwnerHandOff if !fenced => &[
                    (Action::StoreStaleOwnerOffset, Outcome::StaleOwner),
                    (Action::SetGroupOwner, Outcome::Ok),
                    (Action::JoinConsumerGroup, Outcome::Ok),
                    (Action::CreateConsumerGroup, Outcome::Ok),
                ],
                WarmUp::OwnerHandOff => &[],
            };
            for (action, aim) in warm_up {
                if let Some(plan) = action.generate(&scope, rng, *aim)
                    && !plan.steps.is_empty()
                {
                    return Some((*action, *aim, plan));
                }
            }
        }
        for _ in 0..ACTION_ATTEMPTS_MAX {
            let action = self.weights.pick(rng)?;
            // Aims without replacement, among the ones the client can reach (uniform but
            // for the plane's success weight).
            let mut aims = action.outcomes().to_vec();
            while !aims.is_empty() {
                let aim = aims.swap_remove(self.weights.pick_aim(action, &aims, rng));
                match action.generate(&scope, rng, aim) {
                    Some(plan) if !plan.steps.is_empty() => return Some((action, aim, plan)),
                    _ => *self.aims_unreachable.entry((action, aim)).or_default() += 1,
                }
            }
        }
        None
    }

    /// The next request of `client`: the next step of its plan, or a new draw.
    fn next_step(&mut self, client: usize) -> Option<Step> {
        if let Some(step) = self.clients[client].queued.pop_front() {
            return Some(step);
        }
        if !self.shadow.sessions.contains_key(&client) {
            // Not logged in yet: log in as root first, outside any draw.
            return Some(Step {
                action: Action::LoginUser,
                aim: Outcome::Ok,
                aimed: true,
                request: actions::login_user::as_root(&self.shadow),
                step: 1,
                steps: 1,
            });
        }
        let (action, aim, plan) = self.draw(client)?;
        let steps = plan.steps.len();
        let aimed: Vec<bool> = (0..steps).map(|index| plan.is_aimed(index)).collect();
        let mut queued: VecDeque<Step> = plan
            .steps
            .into_iter()
            .enumerate()
            .map(|(index, request)| Step {
                action,
                aim,
                aimed: aimed[index],
                request,
                step: index + 1,
                steps,
            })
            .collect();
        let first = queued.pop_front();
        self.clients[client].queued = queued;
        first
    }

    /// Judge the reply to `client`'s outstanding request and fold it into the shadow.
    pub fn judge_reply(&mut self, client: usize, header: &Header, body: &[u8]) {
        let Some(pending) = self.clients.get_mut(client).and_then(|state| state.pending.take()) else {
            self.fail(format!("client {client} got a reply with no request outstanding"));
            return;
        };
        let Pending { step, predicted } = pending;
        // Described only for a failure: formatting it for every reply cost more than
        // judging the reply.
        let context = || Pending::describe(&step, client);
        let (action, aim, request) = (step.action, step.aim, &step.request);
        self.replies[action as usize] += 1;
        if header.operation != request.operation() || header.group != request.group() {
            self.fail(format!(
                "{}: the reply names operation {} of group {:#x}, the request was operation {} of group {:#x}",
                context(),
                header.operation,
                header.group,
                request.operation(),
                request.group()
            ));
        }
        let decoded = if header.command == Command::Refused {
            // The transport hands over only the final refusals about the session.
            ClientError::decode(body)
                .map(Reply::Refused)
                .ok_or_else(|| "not a refusal code".to_owned())
        } else {
            request.decode_reply(body).map_err(|error| error.to_string())
        };
        let reply = match decoded {
            Ok(reply) => reply,
            Err(error) => {
                self.fail(format!(
                    "malformed reply to {} ({} bytes): {error}",
                    context(),
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
                "{} replied {outcome:?}, an outcome it does not declare: {}",
                context(),
                reply.describe()
            ));
        }
        if step.aimed && outcome != aim {
            *self.aims_missed.entry((action, aim)).or_default() += 1;
        }
        if !predicted.contains(outcome) {
            self.fail(format!(
                "{} predicted {predicted:?}, got {outcome:?}: {} replied {}",
                action.name(),
                context(),
                reply.describe()
            ));
        }
        // An applied partition op ran retention first, whatever it answered. A reply
        // naming op 0 was refused before any op was prepared (a batch refused whatever
        // the state): nothing ran.
        if let Request::Partition { at, .. } = request
            && header.op != 0
            && let Some(partition) = self.shadow.partition_mut(at)
        {
            let expiry = partition.message_expiry_micros;
            partition.log.applied(expiry);
        }
        if let Reply::Refused(_) = reply {
            // Refused before anything was prepared: nothing to fold in.
            return;
        }
        let answered = Answered {
            client,
            request,
            reply: &reply,
            header,
        };
        action.observe(&mut self.shadow, &answered);
        for mismatch in self.shadow.take_mismatches() {
            self.fail(format!("{} replied {}: {mismatch}", context(), reply.describe()));
        }
        let global = self.shadow.take_global_id_mismatches();
        if self.exact() {
            for mismatch in global {
                self.fail(format!("{}: {mismatch}", context()));
            }
        }
    }

    /// Compare the shadow with `state` (the leader's committed metadata, after the
    /// drain). `Err` names every difference (up to [`DIFFERENCES_REPORTED_MAX`]), or
    /// says requests are still outstanding.
    ///
    /// Compares every stream (id, name, next topic id), topic (id, name, partitions
    /// with their group ids, durability, message expiry, next group id), consumer
    /// group (id, name, members, generation), user (id, username, active, permissions)
    /// and each user's token names, both ways (present on one side only is a
    /// difference). With several clients too: each namespace is exact, and the shared
    /// counters agree once every reply is in.
    pub fn compare_with(&self, state: &MetadataState) -> Result<ShadowComparison, String> {
        self.drained()?;
        compare::compare_metadata(&self.shadow, state)
    }

    /// The partition groups the shadow believes exist, in id order (compare with the
    /// leader's metadata after the drain).
    pub fn partition_groups(&self) -> Vec<u64> {
        let mut groups: Vec<u64> = self.shadow.partitions().map(|(at, _)| at.group).collect();
        groups.sort_unstable();
        groups
    }

    /// The partition groups that may have lost committed ops in a whole-cluster power
    /// outage (not `persisted` since their creation), in id order.
    pub fn partition_groups_that_may_lose_ops(&self) -> Vec<u64> {
        let mut groups: Vec<u64> = self
            .shadow
            .partitions()
            .filter(|(_, partition)| !partition.persisted_since_creation)
            .map(|(at, _)| at.group)
            .collect();
        groups.sort_unstable();
        groups
    }

    /// Compare the shadow's partition replicated by `group` with `state` (its primary's
    /// applied state, after the drain): message expiry, next offset, where the retained
    /// log starts, every retained message (offset, id, payload checksum, timestamp),
    /// consumer offsets and group owners. `Err` names the differences.
    pub fn compare_partition(&self, group: u64, state: &PartitionState) -> Result<PartitionComparison, String> {
        self.drained()?;
        compare::compare_partition(&self.shadow, group, state)
    }

    /// `Err` while requests are outstanding: the shadow lags the cluster until then.
    fn drained(&self) -> Result<(), String> {
        match self.outstanding() {
            0 => Ok(()),
            outstanding => Err(format!(
                "{outstanding} request(s) outstanding: the shadow cannot be compared before the drain"
            )),
        }
    }
}

impl ClientDriver for MetadataWorkload {
    fn branch(&mut self, key: crate::timeline::BranchKey) {
        for client in &mut self.clients {
            client.rng.branch(key);
        }
        self.contended_router.branch(key);
        if let Some(contended) = &mut self.contended {
            contended.branch(key);
        }
    }

    fn next_request(&mut self, client: usize) -> Option<ClientRequest> {
        if self.stopped || self.paused || self.requests_max.is_some_and(|max| self.handed_out >= max) {
            return None;
        }
        let request = self.draw_request(client);
        self.handed_out += u64::from(request.is_some());
        request
    }

    fn on_reply(&mut self, client: usize, reply: &Header, body: &[u8]) {
        if let Some(contended) = &mut self.contended
            && contended.is_open(client)
        {
            if contended.on_reply(client, reply, body).is_err() {
                // Its session is gone: the next request logs in again.
                self.shadow.sessions.remove(&client);
            }
            for failure in contended.take_failures() {
                self.fail(failure);
            }
            return;
        }
        self.judge_reply(client, reply, body);
    }

    fn on_tick(&mut self, tick: u64) {
        if let Some(contended) = &mut self.contended {
            contended.set_tick(tick);
        }
    }

    /// Its logins are actions the shadow judges (the first request of every client).
    fn logs_in_itself(&self) -> bool {
        true
    }
}

impl MetadataWorkload {
    /// The next request of `client` (see `ClientDriver::next_request`).
    fn draw_request(&mut self, client: usize) -> Option<ClientRequest> {
        let Some(state) = self.clients.get(client) else {
            let count = self.clients.len();
            self.fail(format!(
                "a request was asked for client {client}, but the workload has {count}"
            ));
            return None;
        };
        if state.pending.is_some() || self.contended.as_ref().is_some_and(|c| c.is_open(client)) {
            self.fail(format!("client {client} asked for a request with one outstanding"));
            return None;
        }
        // Between plans, logged in: maybe a request on the shared objects.
        if let Some(contended) = &mut self.contended
            && state.queued.is_empty()
            && self.shadow.sessions.contains_key(&client)
            && (self.contended_percent == 100
                || contended.setting_up(client)
                || self.contended_router.below(100) < self.contended_percent)
            && let Some(request) = contended.next_request(client)
        {
            return Some(request);
        }
        let step = self.next_step(client)?;
        let scope = Scope {
            shadow: &self.shadow,
            client,
            clients: self.clients.len(),
            partitions_budget: self.weights.partitions_budget(),
        };
        let predicted = step.action.predict(&scope, &step.request);
        let request = ClientRequest {
            group: step.request.group(),
            operation: step.request.operation(),
            body: step.request.encode(),
            give_up_when_not_committed: false,
        };
        self.requests[step.action as usize] += 1;
        let pending = Pending { step, predicted };
        // The client's namespace is exact with any number of clients, so the aim must
        // be among the predicted outcomes (a global limit only widens the prediction).
        if pending.step.aimed && !predicted.contains(pending.step.aim) {
            let context = Pending::describe(&pending.step, client);
            self.fail(format!("workload bug: {context} but the shadow predicts {predicted:?}"));
        }
        self.clients[client].pending = Some(pending);
        Some(request)
    }
}
