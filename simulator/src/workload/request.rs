//! What the workload sends and what comes back: [`Request`] (a metadata op, a partition
//! op, or a poll, with the VSR group it goes to), [`Reply`] (decoded by the request's
//! kind), [`Plan`] (the requests one action draws: usually one, several for the purges
//! that sweep partitions), and [`Answered`] (everything an action's `observe` reads).
//!
//! Models: the request header's `group` and `operation` and the body's encoding, the
//! reply body's decoding (a body that does not decode for its request's kind is a
//! malformed reply, never a panic), and each reply's [`Outcome`].
//!
//! Does not model: transport (resends, refusals) or the header fields the client sets
//! (`client`, `request`): `harness::client` does that.

use cluster::metadata::{DecodeError, MetadataOp, MetadataReply};
use cluster::partition::{PartitionOp, PartitionReply, PollReply, PollRequest};
use cluster::vsr::ClientError;
use cluster::wire::Header;

use super::outcome::Outcome;

/// The metadata group's id in a request header's `group` field. Partition group ids are
/// never 0 (`cluster::metadata::partition_group_id`), so 0 names the metadata group alone.
pub const METADATA_GROUP: u64 = 0;

/// Which partition a request goes to: its place in the metadata (for the shadow) and
/// the VSR group replicating it (for the header), as the shadow knew them at the send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PartitionAt {
    /// The stream.
    pub stream_id: u32,
    /// The topic.
    pub topic_id: u32,
    /// The partition's id within the topic.
    pub partition_id: u32,
    /// Its VSR group id (what the request header carries).
    pub group: u64,
}

/// One request a client sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// An op for the metadata group.
    Metadata(MetadataOp),
    /// An op for one partition's group.
    Partition {
        /// The partition.
        at: PartitionAt,
        /// The op.
        op: PartitionOp,
    },
    /// A poll, answered by the partition's primary without consensus.
    Poll {
        /// The partition.
        at: PartitionAt,
        /// From where, how many.
        poll: PollRequest,
    },
}

impl Request {
    /// The VSR group the request goes to (the header's `group`).
    pub fn group(&self) -> u64 {
        match self {
            Request::Metadata(_) => METADATA_GROUP,
            Request::Partition { at, .. } | Request::Poll { at, .. } => at.group,
        }
    }

    /// The header's `operation` byte.
    pub fn operation(&self) -> u8 {
        match self {
            Request::Metadata(op) => op.operation_code(),
            Request::Partition { op, .. } => op.operation_code(),
            Request::Poll { .. } => cluster::partition::POLL_MESSAGES_CODE,
        }
    }

    /// The body's bytes.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Request::Metadata(op) => op.encode(),
            Request::Partition { op, .. } => op.encode(),
            Request::Poll { poll, .. } => poll.encode(),
        }
    }

    /// Decode a reply body as the answer to this request.
    pub fn decode_reply(&self, body: &[u8]) -> Result<Reply, DecodeError> {
        Ok(match self {
            Request::Metadata(_) => Reply::Metadata(MetadataReply::decode(body)?),
            Request::Partition { .. } => Reply::Partition(PartitionReply::decode(body)?),
            Request::Poll { .. } => Reply::Poll(PollReply::decode(body)?),
        })
    }
}

impl Request {
    /// A one-line description for failures: metadata ops as `Debug` prints them
    /// (secrets redacted), batches by their size (a batch's payload can be half a
    /// megabyte), the partition by its group.
    pub fn describe(&self) -> String {
        match self {
            Request::Metadata(op) => format!("{op:?}"),
            Request::Partition {
                at,
                op: PartitionOp::SendMessages { messages },
            } => format!(
                "SendMessages {{ {} messages, {} payload bytes }} to group {:#x} ({at:?})",
                messages.len(),
                messages.iter().map(|m| m.payload.len()).sum::<usize>(),
                at.group
            ),
            Request::Partition { at, op } => format!("{op:?} to group {:#x} ({at:?})", at.group),
            Request::Poll { at, poll } => format!("{poll:?} to group {:#x} ({at:?})", at.group),
        }
    }
}

impl From<MetadataOp> for Request {
    fn from(op: MetadataOp) -> Self {
        Request::Metadata(op)
    }
}

/// A decoded reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// The metadata group's answer.
    Metadata(MetadataReply),
    /// A partition group's answer to an op.
    Partition(PartitionReply),
    /// A partition primary's answer to a poll.
    Poll(PollReply),
    /// A final refusal from the node the request reached, about the client's session
    /// (`PermissionDenied`, `Unauthenticated`): nothing was prepared.
    Refused(ClientError),
}

impl Reply {
    /// A one-line description for failures: polled messages by their offsets.
    pub fn describe(&self) -> String {
        match self {
            Reply::Metadata(reply) => format!("{reply:?}"),
            Reply::Partition(reply) => format!("{reply:?}"),
            Reply::Poll(reply) => match (reply.messages.first(), reply.messages.last()) {
                (Some(first), Some(last)) => format!(
                    "PollReply {{ next_offset: {}, messages at {}..={} }}",
                    reply.next_offset, first.offset, last.offset
                ),
                _ => format!("PollReply {{ next_offset: {}, no messages }}", reply.next_offset),
            },
            Reply::Refused(error) => format!("Refused({error:?})"),
        }
    }

    /// Its class.
    pub fn outcome(&self) -> Outcome {
        match self {
            Reply::Metadata(reply) => reply.outcome().into(),
            Reply::Partition(reply) => reply.outcome().into(),
            Reply::Poll(reply) if reply.messages.is_empty() => Outcome::PolledNothing,
            Reply::Poll(_) => Outcome::Polled,
            Reply::Refused(ClientError::PermissionDenied) => Outcome::PermissionDenied,
            // The transport hands the driver no other refusal than these two.
            Reply::Refused(_) => Outcome::Unauthenticated,
        }
    }
}

/// The requests one action draws, sent in order by one client, each predicted when it
/// is sent and judged when its reply comes. Nothing else of that client runs in
/// between, so the shadow's view of the client's own namespace stays true across the
/// steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// At least one request.
    pub steps: Vec<Request>,
    /// The step the action's aim is about (its index), or `None` when every step aims at
    /// it. The other steps set the stage (a login before a request as that user) and
    /// are judged by their own predictions only.
    pub aimed: Option<usize>,
}

impl Plan {
    /// A plan whose every step aims at the action's aim.
    pub fn new(steps: Vec<Request>) -> Self {
        Plan { steps, aimed: None }
    }

    /// A plan whose step `index` alone aims at the action's aim.
    pub fn aimed_at(steps: Vec<Request>, index: usize) -> Self {
        assert!(
            index < steps.len(),
            "the aimed step {index} is in the plan of {}",
            steps.len()
        );
        Plan {
            steps,
            aimed: Some(index),
        }
    }

    /// Whether step `index` aims at the action's aim.
    pub fn is_aimed(&self, index: usize) -> bool {
        self.aimed.is_none_or(|aimed| aimed == index)
    }
}

impl From<Request> for Plan {
    fn from(request: Request) -> Self {
        Plan::new(vec![request])
    }
}

impl From<MetadataOp> for Plan {
    fn from(op: MetadataOp) -> Self {
        Request::Metadata(op).into()
    }
}

/// A reply as an action's `observe` sees it.
#[derive(Clone, Copy, Debug)]
pub struct Answered<'a> {
    /// The client that sent the request (owner of anything it created).
    pub client: usize,
    /// The request.
    pub request: &'a Request,
    /// Its decoded reply.
    pub reply: &'a Reply,
    /// The reply header: `op` names the op that created partitions (their group ids),
    /// `timestamp` the prepare's timestamp (the time appended messages carry).
    pub header: &'a Header,
}
