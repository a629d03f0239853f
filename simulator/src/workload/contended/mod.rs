//! The contended workload: clients that share streams, partitions, consumer groups and
//! users, and race on them. Each request is recorded in a history (invoked at a tick,
//! answered at a tick or never, with its answer or an unknown outcome), and at the end
//! of a run every object's history is checked for linearizability against a
//! sequential model of the object (see [`crate::linearizability`]).
//!
//! Why: the exact workload gives every client its own namespace, so it can predict each
//! answer, but then no two clients ever race. Here they do: two sends to one partition
//! must get disjoint offsets, a poll invoked after another client's send was
//! acknowledged must see it (a stale read from a deposed primary fails here), two
//! members claiming ownership at one generation cannot both win, two creates of one
//! user name cannot both succeed, and a group's generation counts every join and leave
//! once.
//!
//! The run, for this workload:
//! 1. setup (client 0, every answer certain: the transport resends until answered):
//!    the shared stream, its topic with [`SHARED_PARTITIONS`] partitions (no message
//!    expiry), and [`SHARED_GROUPS`] consumer groups;
//! 2. every client draws operations on the shared objects ([`draw`]); a request the
//!    cluster answers `TransientNotCommitted` is given up on, as a production client's
//!    caller would, and recorded as ambiguous (it may commit later, or never);
//! 3. after the drain, [`Contended::check`] checks each object's history on its own
//!    (P-compositionality) and reports what it compared.
//!
//! Names: every shared object's name starts with [`SHARED_PREFIX`], which no exact
//! client's namespace uses, so the exact shadow leaves them out of its comparison.
//!
//! Does not model: a request the transport hands over as refused for its session
//! (`Unauthenticated`, `PermissionDenied`: root's requests are never denied; a lost
//! session makes the client log in again and the request is dropped from the history,
//! as it never took effect).

pub mod draw;
pub mod history;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;

use cluster::metadata::{Durability, MetadataOp, MetadataReply, partition_group_id};
use cluster::partition::{Consumer, Message, POLL_MESSAGES_MAX, PartitionOp, PartitionReply, PollReply, PollRequest};
use cluster::vsr::ClientError;
use cluster::wire::{Command, Header};

use crate::harness::client::ClientRequest;
use crate::linearizability::{GroupInput, GroupOffsetInput, GroupOffsetOutput, GroupOutput};
use crate::linearizability::{PartitionInput, PartitionOutput};
use crate::linearizability::{UserInput, UserOutput};
use crate::rng::SimRng;

pub use draw::{Kind, SharedObjects};
pub use history::{Histories, Input, LinearizabilityReport, ObjectKey, Output, Settled};

/// The prefix of every shared object's name.
pub const SHARED_PREFIX: &str = "shared-";

/// Partitions of the shared topic: few, so sends and polls pile onto each.
pub const SHARED_PARTITIONS: u32 = 2;

/// Consumer groups on the shared topic (each also keys an offset and an owner on every
/// shared partition).
pub const SHARED_GROUPS: usize = 2;

/// Tag in the top bits of every contended message id, so no id of the exact workload
/// (a client's own counter) can equal one.
const MESSAGE_ID_TAG: u128 = 0xC0DE_u128 << 112;

/// The setup's steps, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Setup {
    Stream,
    Topic {
        stream_id: u32,
    },
    /// The consumer groups, one at a time, into `SharedObjects::groups`.
    Groups,
    Done,
}

/// A request a client has outstanding.
#[derive(Clone, Debug)]
enum Open {
    /// A setup step (its answer is certain).
    Setup,
    /// An operation recorded at `index` of `object`'s history.
    Recorded {
        object: ObjectKey,
        index: usize,
        kind: Kind,
    },
}

#[derive(Clone, Debug)]
struct ClientState {
    rng: SimRng,
    open: Option<Open>,
    seen: draw::Seen,
    messages_sent: u64,
}

/// The contended driver (embedded in the workload: see the module docs).
#[derive(Clone, Debug)]
pub struct Contended {
    clients: Vec<ClientState>,
    setup: Setup,
    durability: Durability,
    shared: Option<SharedObjects>,
    /// Per pool user name, the newest id a create answered.
    user_ids: BTreeMap<usize, u32>,
    histories: Histories,
    tick: u64,
    requests: BTreeMap<Kind, u64>,
    ambiguous: u64,
    settled: Settled,
    failures: Vec<String>,
}

impl Contended {
    /// Reseed every client's draws, for a branch of the run (see [`crate::timeline`]).
    pub fn branch(&mut self, key: crate::timeline::BranchKey) {
        for client in &mut self.clients {
            client.rng.branch(key);
        }
    }

    /// A contended driver for `clients` clients, every draw derived from `seed`; the
    /// shared topic has `durability`.
    pub fn new(seed: u64, clients: usize, durability: Durability) -> Self {
        let mut parent = SimRng::new(seed);
        Self {
            clients: (0..clients)
                .map(|_| ClientState {
                    rng: SimRng::new(parent.next_u64()),
                    open: None,
                    seen: draw::Seen::default(),
                    messages_sent: 0,
                })
                .collect(),
            setup: Setup::Stream,
            durability,
            shared: None,
            user_ids: BTreeMap::new(),
            histories: Histories::default(),
            tick: 0,
            requests: BTreeMap::new(),
            ambiguous: 0,
            settled: Settled::default(),
            failures: Vec::new(),
        }
    }

    /// The tick that starts now: the time every invoke and answer is stamped with.
    pub fn set_tick(&mut self, tick: u64) {
        self.tick = tick;
    }

    /// Whether `client` runs the setup and it is not done: its requests go to the
    /// setup first, whatever share of requests the shared objects get.
    pub fn setting_up(&self, client: usize) -> bool {
        client == 0 && self.setup != Setup::Done
    }

    /// Whether `client` has a contended request outstanding.
    pub fn is_open(&self, client: usize) -> bool {
        self.clients.get(client).is_some_and(|state| state.open.is_some())
    }

    /// Requests outstanding, all clients.
    pub fn outstanding(&self) -> usize {
        self.clients.iter().filter(|state| state.open.is_some()).count()
    }

    /// Failures found while judging answers (malformed replies, answers no model has a
    /// place for, a failed setup), taken once.
    pub fn take_failures(&mut self) -> Vec<String> {
        std::mem::take(&mut self.failures)
    }

    /// The shared objects, once the setup made them.
    pub fn shared(&self) -> Option<&SharedObjects> {
        self.shared.as_ref()
    }

    /// The partition groups of the shared topic (none before the setup made it).
    pub fn partition_groups(&self) -> Vec<u64> {
        self.shared
            .as_ref()
            .map(|shared| shared.partitions.clone())
            .unwrap_or_default()
    }

    /// Requests sent per kind (setup steps not counted).
    pub fn requests(&self) -> &BTreeMap<Kind, u64> {
        &self.requests
    }

    /// The next request of `client`, or `None` (client 0 runs the setup; the others
    /// wait for it).
    pub fn next_request(&mut self, client: usize) -> Option<ClientRequest> {
        assert!(
            !self.is_open(client),
            "client {client} asked for a request with one outstanding"
        );
        if self.setup != Setup::Done {
            return (client == 0).then(|| self.setup_request());
        }
        let shared = self.shared.as_ref().expect("the setup is done");
        let state = &mut self.clients[client];
        let mut sent = state.messages_sent;
        let (kind, drawn) = draw::draw(&mut state.rng, client, shared, &state.seen, &self.user_ids, &mut || {
            sent += 1;
            MESSAGE_ID_TAG | ((client as u128) << 64) | u128::from(sent)
        });
        state.messages_sent = sent;
        let (object, input, request) = self.request_for(drawn);
        *self.requests.entry(kind).or_default() += 1;
        let index = self.histories.invoke(object, input, client, self.tick);
        self.clients[client].open = Some(Open::Recorded { object, index, kind });
        Some(request)
    }

    fn setup_request(&mut self) -> ClientRequest {
        let op = match self.setup {
            Setup::Stream => MetadataOp::CreateStream {
                name: format!("{SHARED_PREFIX}stream"),
            },
            Setup::Topic { stream_id } => MetadataOp::CreateTopic {
                stream_id,
                name: format!("{SHARED_PREFIX}topic"),
                partitions: SHARED_PARTITIONS,
                durability: self.durability,
                message_expiry_micros: 0,
            },
            Setup::Groups => {
                let shared = self.shared.as_ref().expect("the topic was created before its groups");
                MetadataOp::CreateConsumerGroup {
                    stream_id: shared.stream_id,
                    topic_id: shared.topic_id,
                    name: format!("{SHARED_PREFIX}group{}", shared.groups.len()),
                }
            }
            Setup::Done => unreachable!("no setup request once it is done"),
        };
        self.clients[0].open = Some(Open::Setup);
        ClientRequest {
            group: 0,
            operation: op.operation_code(),
            body: op.encode(),
            give_up_when_not_committed: false,
        }
    }

    /// The request for a drawn operation, and the history it goes into.
    fn request_for(&self, drawn: draw::Drawn) -> (ObjectKey, Input, ClientRequest) {
        let shared = self.shared.as_ref().expect("the setup is done");
        let request = |group: u64, operation: u8, body: Vec<u8>| ClientRequest {
            group,
            operation,
            body,
            give_up_when_not_committed: true,
        };
        let partition = |group: u64, op: PartitionOp| request(group, op.operation_code(), op.encode());
        let metadata = |op: MetadataOp| request(0, op.operation_code(), op.encode());
        match drawn {
            draw::Drawn::Partition(group, input) => {
                let sent = match &input {
                    PartitionInput::Send { ids } => {
                        let messages = ids
                            .iter()
                            .map(|id| Message {
                                id: *id,
                                payload: draw::payload_of(*id),
                            })
                            .collect();
                        partition(group, PartitionOp::SendMessages { messages })
                    }
                    PartitionInput::Poll { offset, count } => {
                        let poll = PollRequest {
                            offset: *offset,
                            count: *count,
                        };
                        request(group, cluster::partition::POLL_MESSAGES_CODE, poll.encode())
                    }
                    PartitionInput::Purge => partition(group, PartitionOp::Purge),
                };
                (ObjectKey::Partition(group), Input::Partition(input), sent)
            }
            draw::Drawn::GroupOffset(group, group_id, input) => {
                let consumer = |member_id, generation| Consumer::Group {
                    group_id,
                    member_id,
                    generation,
                };
                let op = match input {
                    GroupOffsetInput::Store {
                        member_id,
                        generation,
                        offset,
                    } => PartitionOp::StoreConsumerOffset {
                        consumer: consumer(member_id, generation),
                        offset,
                    },
                    GroupOffsetInput::Delete { member_id, generation } => PartitionOp::DeleteConsumerOffset {
                        consumer: consumer(member_id, generation),
                    },
                    GroupOffsetInput::SetOwner { member_id, generation } => PartitionOp::SetGroupOwner {
                        group_id,
                        member_id,
                        generation,
                    },
                };
                (
                    ObjectKey::GroupOffset(group, group_id),
                    Input::GroupOffset(input),
                    partition(group, op),
                )
            }
            draw::Drawn::Group(group_id, input) => {
                let (stream_id, topic_id) = (shared.stream_id, shared.topic_id);
                let op = match input {
                    GroupInput::Join { member_id } => MetadataOp::JoinConsumerGroup {
                        stream_id,
                        topic_id,
                        group_id,
                        member_id,
                    },
                    GroupInput::Leave { member_id } => MetadataOp::LeaveConsumerGroup {
                        stream_id,
                        topic_id,
                        group_id,
                        member_id,
                    },
                };
                (ObjectKey::Group(group_id), Input::Group(input), metadata(op))
            }
            draw::Drawn::User(name, input) => {
                let op = match input {
                    UserInput::Create => MetadataOp::CreateUser {
                        username: draw::user_name(name),
                        password: "shared-password".to_owned(),
                        active: true,
                    },
                    UserInput::Delete { user_id } => MetadataOp::DeleteUser { user_id },
                };
                (ObjectKey::User(name), Input::User(input), metadata(op))
            }
        }
    }

    /// The answer to `client`'s outstanding request. `Err` says the session is gone
    /// (the caller logs the client in again).
    pub fn on_reply(&mut self, client: usize, header: &Header, body: &[u8]) -> Result<(), SessionLost> {
        let Some(open) = self.clients.get_mut(client).and_then(|state| state.open.take()) else {
            self.failures.push(format!(
                "contended client {client} got an answer with no request outstanding"
            ));
            return Ok(());
        };
        let (object, index, kind) = match open {
            Open::Setup => {
                self.on_setup_reply(header, body);
                return Ok(());
            }
            Open::Recorded { object, index, kind } => (object, index, kind),
        };
        if header.command == Command::Refused {
            match ClientError::decode(body) {
                Some(ClientError::TransientNotCommitted) => {
                    // Taken and not committed: it may still commit, or never.
                    self.ambiguous += 1;
                    self.histories.abandon(object, index);
                }
                Some(ClientError::Unauthenticated | ClientError::PermissionDenied) => {
                    // Refused before anything was prepared: it never happened.
                    self.histories.void(object, index);
                    return Err(SessionLost);
                }
                other => {
                    self.failures.push(format!(
                        "contended {} by client {client}: the transport handed over the refusal {other:?}, which ends no request",
                        kind.name()
                    ));
                    self.histories.abandon(object, index);
                }
            }
            return Ok(());
        }
        let input = self
            .histories
            .input(object, index)
            .expect("an open operation is recorded");
        match self.output_of(client, object, &input, header, body) {
            Ok(output) => self.histories.complete(object, index, self.tick, output),
            Err(failure) => {
                self.failures
                    .push(format!("contended {} by client {client}: {failure}", kind.name()));
                self.histories.abandon(object, index);
            }
        }
        Ok(())
    }

    /// Decode an answer into the model's output, and learn from it what steers later
    /// draws.
    fn output_of(
        &mut self,
        client: usize,
        object: ObjectKey,
        input: &Input,
        header: &Header,
        body: &[u8],
    ) -> Result<Output, String> {
        let seen = &mut self.clients[client].seen;
        match (object, input) {
            (ObjectKey::Partition(group), Input::Partition(input)) => {
                let group = &group;
                if header.group != *group {
                    return Err(format!(
                        "the answer names group {:#x}, the request went to {group:#x}",
                        header.group
                    ));
                }
                if let PartitionInput::Poll { .. } = input {
                    let reply = PollReply::decode(body).map_err(|error| format!("malformed poll reply: {error}"))?;
                    let mut messages = Vec::with_capacity(reply.messages.len());
                    for message in &reply.messages {
                        if message.payload != draw::payload_of(message.id) {
                            return Err(format!(
                                "the poll returned message {:#x} at offset {} with a payload that is not the one sent",
                                message.id, message.offset
                            ));
                        }
                        messages.push((message.offset, message.id));
                    }
                    let head = seen.next_offset.entry(*group).or_default();
                    *head = (*head).max(reply.next_offset);
                    return Ok(Output::Partition(PartitionOutput::Polled {
                        next_offset: reply.next_offset,
                        messages,
                    }));
                }
                let reply = PartitionReply::decode(body).map_err(|error| format!("malformed reply: {error}"))?;
                let output = match reply {
                    PartitionReply::Appended {
                        base_offset,
                        last_offset,
                    } => {
                        let head = seen.next_offset.entry(*group).or_default();
                        *head = (*head).max(last_offset + 1);
                        PartitionOutput::Appended {
                            base_offset,
                            last_offset,
                        }
                    }
                    PartitionReply::Ok => PartitionOutput::Ok,
                    other => return Err(format!("answered {other:?}, which no send or purge can produce")),
                };
                Ok(Output::Partition(output))
            }
            (ObjectKey::GroupOffset(group, group_id), Input::GroupOffset(input)) => {
                if header.group != group {
                    return Err(format!(
                        "the answer names group {:#x}, the request went to {group:#x}",
                        header.group
                    ));
                }
                let reply = PartitionReply::decode(body).map_err(|error| format!("malformed reply: {error}"))?;
                let output = match reply {
                    PartitionReply::Ok => {
                        if let GroupOffsetInput::SetOwner { generation, .. } = input {
                            seen.owner.insert((group, group_id), (*generation, true));
                        }
                        GroupOffsetOutput::Ok
                    }
                    PartitionReply::OffsetBeyondLog { next_offset } => {
                        GroupOffsetOutput::OffsetBeyondLog { next_offset }
                    }
                    PartitionReply::StaleOwner { current_generation } => {
                        let entry = seen.owner.entry((group, group_id)).or_default();
                        if current_generation >= entry.0 {
                            *entry = (current_generation, false);
                        }
                        GroupOffsetOutput::StaleOwner { current_generation }
                    }
                    PartitionReply::StaleGeneration => GroupOffsetOutput::StaleGeneration,
                    other => {
                        return Err(format!(
                            "answered {other:?}, which no offset or owner request can produce"
                        ));
                    }
                };
                Ok(Output::GroupOffset(output))
            }
            (ObjectKey::Group(_), _) => {
                let reply = MetadataReply::decode(body).map_err(|error| format!("malformed reply: {error}"))?;
                let output = match reply {
                    MetadataReply::Joined { generation } => GroupOutput::Joined { generation },
                    MetadataReply::Left { generation } => GroupOutput::Left { generation },
                    MetadataReply::AlreadyMember => GroupOutput::AlreadyMember,
                    MetadataReply::MemberNotFound => GroupOutput::MemberNotFound,
                    other => {
                        return Err(format!(
                            "answered {other:?}, which the shared group (never deleted) cannot"
                        ));
                    }
                };
                Ok(Output::Group(output))
            }
            (ObjectKey::User(name), _) => {
                let reply = MetadataReply::decode(body).map_err(|error| format!("malformed reply: {error}"))?;
                let output = match reply {
                    MetadataReply::UserCreated { user_id } => {
                        self.user_ids.insert(name, user_id);
                        UserOutput::Created { user_id }
                    }
                    MetadataReply::NameAlreadyExists => UserOutput::NameAlreadyExists,
                    MetadataReply::Ok => UserOutput::Deleted,
                    MetadataReply::UserNotFound => UserOutput::UserNotFound,
                    other => {
                        return Err(format!(
                            "answered {other:?}, which a pool user's create or delete cannot"
                        ));
                    }
                };
                Ok(Output::User(output))
            }
            (object, input) => unreachable!("{input:?} is not an operation on {object:?}"),
        }
    }

    fn on_setup_reply(&mut self, header: &Header, body: &[u8]) {
        let reply = match (header.command, MetadataReply::decode(body)) {
            (Command::Reply, Ok(reply)) => reply,
            (command, decoded) => {
                self.failures.push(format!(
                    "contended setup step {:?}: answered {command:?} {decoded:?}",
                    self.setup
                ));
                return;
            }
        };
        self.setup = match (self.setup, reply) {
            (Setup::Stream, MetadataReply::StreamCreated { stream_id }) => Setup::Topic { stream_id },
            (Setup::Topic { stream_id }, MetadataReply::TopicCreated { topic_id }) => {
                self.shared = Some(SharedObjects {
                    partitions: (0..SHARED_PARTITIONS)
                        .map(|id| partition_group_id(header.op, id))
                        .collect(),
                    groups: Vec::new(),
                    stream_id,
                    topic_id,
                });
                Setup::Groups
            }
            (Setup::Groups, MetadataReply::GroupCreated { group_id }) => {
                let shared = self.shared.as_mut().expect("the topic was created before its groups");
                shared.groups.push(group_id);
                if shared.groups.len() < SHARED_GROUPS {
                    Setup::Groups
                } else {
                    Setup::Done
                }
            }
            (step, reply) => {
                self.failures.push(format!(
                    "contended setup step {step:?}: answered {reply:?}, not the create it asked for"
                ));
                step
            }
        };
    }

    /// After the drain (nothing outstanding), settle the ambiguous sends of every
    /// shared partition from its final log, read at `tick` (`final_log` gives a
    /// partition group's messages as (offset, id) and its next offset; see
    /// [`Histories::settle_sends`]).
    /// `Err` names a message in the final log twice or a batch cut apart.
    pub fn settle_with_final_logs(
        &mut self,
        tick: u64,
        final_log: impl Fn(u64) -> Option<(Vec<(u64, u128)>, u64)>,
    ) -> Result<(), String> {
        assert_eq!(
            self.outstanding(),
            0,
            "the final logs settle nothing while requests are open"
        );
        for group in self.partition_groups() {
            let Some((log, next_offset)) = final_log(group) else {
                return Err(format!(
                    "shared partition group {group:#x} has no primary to read its final log from"
                ));
            };
            let settled = self.histories.settle_sends(group, &log, next_offset, tick)?;
            self.settled.took_effect += settled.took_effect;
            self.settled.never_took_effect += settled.never_took_effect;
        }
        Ok(())
    }

    /// Check every object's history (see [`Histories::check`]).
    pub fn check(&self) -> LinearizabilityReport {
        self.histories
            .check(POLL_MESSAGES_MAX as u32, self.ambiguous, self.settled)
    }
}

/// A contended request was refused for its session: the client must log in again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionLost;

impl fmt::Display for SessionLost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the session is gone")
    }
}
