//! A client of the cluster over TCP: the transport discipline of the simulated client
//! (`simulator/src/harness/client.rs`) on real sockets and the wall clock, plus a typed
//! API (login, streams, topics, send, poll, offsets, status).
//!
//! # Discipline
//!
//! One request in flight per [`Client`]. At most one connection per node, dialed
//! lazily (within [`DIAL_TIMEOUT_MS`]); a failed dial backs off exponentially from
//! [`REDIAL_BACKOFF_MIN_MS`] to [`REDIAL_BACKOFF_MAX_MS`]. Every connection feeds one
//! inbox, so a late answer on a connection the client moved away from still counts.
//!
//! A request goes first to the node that last answered for its group (a bounded
//! memory of [`LEADERS_MAX`] groups), else to the node that answered last. Then:
//! - `TransientNotAccepted` naming another replica as primary: redirect there at once
//!   (at most one redirect per replica per request, so two nodes naming each other
//!   cannot bounce it forever). Otherwise resend the same bytes to the same node every
//!   [`RESEND_INTERVAL_MS`], and after [`NODE_REFUSAL_WINDOW_MS`] of refusals from one
//!   node move on to the next node in the roster.
//! - No answer within [`REPLY_TIMEOUT_MS`], or the connection lost while waiting: the
//!   same bytes to the next node (redialing as needed).
//! - `TransientNotCommitted`: resend within the budget. The session survives and the
//!   primary deduplicates by client id and request number: a batch that made it gets
//!   its original offsets back.
//! - `Unbound` (the node does not know this connection as the client's session): send
//!   `BindSession` on that connection, then the same request bytes again.
//! - `PermissionDenied`, `Unauthenticated`, and a refused bind: final, returned.
//!
//! Every request has a budget of [`REQUEST_BUDGET_MS`]. No copy is sent in its last
//! reply timeout, so every copy has time to be answered. When it runs out the request
//! fails with [`Error::NotAccepted`] if the cluster certainly never took it (every copy
//! that reached a node was refused as not accepted or unbound; it ends as soon as that
//! is known after the last copy), and otherwise with [`Error::NotCommitted`]: *outcome
//! unknown, sending it again may append it twice*.
//!
//! A client needs a tokio runtime (a current-thread one is enough): each connection
//! has a reader task spawned on it.

mod api;
pub mod bench;
mod connection;
mod error;
mod exchange;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::runtime::monotonic_now;

pub use error::Error;

use crate::metadata::{Durability, MetadataOp, MetadataReply, partition_group_id};
use crate::node::{GROUP_STATUS_CODE, GroupStatus, HostedGroup, PartitionEntry};
pub use crate::server::cluster_header_id;

use crate::partition::{
    BATCH_BYTES_MAX, Consumer, MESSAGES_PER_BATCH_MAX, Message, PAYLOAD_BYTES_MAX, POLL_MESSAGES_CODE, PartitionOp,
    PartitionReply, PollReply, PollRequest,
};
use crate::vsr::ClientError as Refusal;
use crate::wire::{self, Command, Header};
use connection::{Connection, Inbound};

/// Overall time one request may take, in milliseconds, before it fails. Longer than a
/// view change (about 5 s of failure detection plus the election, and a few seconds
/// more for a restarted node's metadata to catch up), so a producer rides through a
/// primary failover with its resends deduplicated by the cluster instead of failing
/// with an unknown outcome.
pub const REQUEST_BUDGET_MS: u64 = 15_000;

/// How long to wait for an answer to one copy, in milliseconds, before sending the
/// same bytes to the next node. A healthy cluster answers in milliseconds even under
/// persisted durability (two fsyncs); a copy unanswered for a second went to a node
/// that is dead, cut off or stuck.
pub const REPLY_TIMEOUT_MS: u64 = 1_000;

/// Pause between resends of the same bytes to a node that refused them as not
/// accepted, in milliseconds: the reference SDK's interval. A refusal costs a round
/// trip; 20 per second per client is cheap, and a view change is noticed within 50 ms
/// of completing.
pub const RESEND_INTERVAL_MS: u64 = 50;

/// How long one node may keep refusing a request (not accepted) before the client
/// moves on to the next node, in milliseconds: the reference SDK's two seconds per
/// node. A node that names itself or a dead node for that long is not about to take
/// the request; another node may already lead.
pub const NODE_REFUSAL_WINDOW_MS: u64 = 2_000;

/// Longest a TCP connect may take, in milliseconds. Loopback and a LAN connect in
/// well under a millisecond; a dead host whose SYNs are dropped would otherwise hold
/// the request for the operating system's minutes-long connect timeout.
pub const DIAL_TIMEOUT_MS: u64 = 1_000;

/// Longest writing one frame may take, in milliseconds. A frame is at most 1 MiB; a
/// node that does not drain that from its socket within a second is stuck, and the
/// request is better sent elsewhere.
pub const WRITE_TIMEOUT_MS: u64 = 1_000;

/// First pause before redialing a node whose dial failed, in milliseconds: the resend
/// interval, so a node restarting is found again quickly.
pub const REDIAL_BACKOFF_MIN_MS: u64 = 50;

/// Longest pause before redialing a node, in milliseconds. The backoff doubles per
/// failed dial up to this; a second keeps a dead node's dials rare while still finding
/// it within a second of coming back.
pub const REDIAL_BACKOFF_MAX_MS: u64 = 1_000;

/// How long a status request waits for its one node, in milliseconds. Status is
/// answered by the node itself without consensus, so a second is plenty.
pub const STATUS_TIMEOUT_MS: u64 = 1_000;

/// Groups whose last answering node a client remembers. Every partition has its own
/// primary; without the memory a request to a partition would start at the node of
/// another group. When full the memory is forgotten wholesale (a lost entry costs one
/// redirect).
pub const LEADERS_MAX: usize = 256;

/// Frames the reader tasks may queue for the client before they stop reading (and the
/// nodes' sends back up): a client has one request in flight, so more than a few
/// queued frames are late duplicates.
pub const INBOX_FRAMES_MAX: usize = 64;

/// Most nodes in a roster: replica indices are one byte on the wire.
pub const NODES_MAX: usize = u8::MAX as usize;

/// How a [`Client`] reaches the cluster and how patient it is. Build with
/// [`ClientConfig::new`], which fills the bounds with their named defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientConfig {
    /// The cluster's name (its id on the wire is derived from it).
    pub cluster: String,
    /// The nodes' client addresses in replica order: index i is replica i.
    pub nodes: Vec<SocketAddr>,
    /// The client id (never 0); `None` draws a random one from the OS.
    pub client_id: Option<u128>,
    /// See [`REQUEST_BUDGET_MS`].
    pub request_budget: Duration,
    /// See [`REPLY_TIMEOUT_MS`].
    pub reply_timeout: Duration,
    /// See [`RESEND_INTERVAL_MS`].
    pub resend_interval: Duration,
    /// See [`NODE_REFUSAL_WINDOW_MS`].
    pub node_refusal_window: Duration,
    /// See [`DIAL_TIMEOUT_MS`].
    pub dial_timeout: Duration,
    /// See [`WRITE_TIMEOUT_MS`].
    pub write_timeout: Duration,
    /// See [`STATUS_TIMEOUT_MS`].
    pub status_timeout: Duration,
}

impl ClientConfig {
    /// A configuration for `cluster` at `nodes` (replica order) with the default bounds
    /// and a random client id.
    pub fn new(cluster: impl Into<String>, nodes: Vec<SocketAddr>) -> Self {
        Self {
            cluster: cluster.into(),
            nodes,
            client_id: None,
            request_budget: Duration::from_millis(REQUEST_BUDGET_MS),
            reply_timeout: Duration::from_millis(REPLY_TIMEOUT_MS),
            resend_interval: Duration::from_millis(RESEND_INTERVAL_MS),
            node_refusal_window: Duration::from_millis(NODE_REFUSAL_WINDOW_MS),
            dial_timeout: Duration::from_millis(DIAL_TIMEOUT_MS),
            write_timeout: Duration::from_millis(WRITE_TIMEOUT_MS),
            status_timeout: Duration::from_millis(STATUS_TIMEOUT_MS),
        }
    }
}

/// A client's transport counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ClientStats {
    /// Distinct requests sent (status requests included).
    pub requests: u64,
    /// Replies matched to the outstanding request.
    pub replies: u64,
    /// Copies sent again after the first (timeouts, refusals, lost connections, binds).
    pub resends: u64,
    /// Immediate resends to the primary a refusal named.
    pub redirects: u64,
    /// Copies that went unanswered for the reply timeout.
    pub timeouts: u64,
    /// Moves to the next node after a node refused for the refusal window.
    pub moves: u64,
    /// `TransientNotAccepted` refusals.
    pub refusals: u64,
    /// `TransientNotCommitted` answers.
    pub not_committed: u64,
    /// `Unbound` refusals.
    pub unbound: u64,
    /// `BindSession` requests sent.
    pub binds: u64,
    /// Binds answered `SessionRefused`.
    pub binds_refused: u64,
    /// Final refusals (`PermissionDenied`, `Unauthenticated`).
    pub denied: u64,
    /// Replies to an older request (duplicates, late answers), ignored.
    pub replies_stale: u64,
    /// Frames that failed verification or were not for this client or request.
    pub frames_rejected: u64,
    /// TCP connects attempted.
    pub dials: u64,
    /// TCP connects that failed.
    pub dial_failures: u64,
    /// Connects to a node this client had been connected to before.
    pub reconnects: u64,
    /// Connections lost (closed by the node, failed, or dropped after an error).
    pub disconnects: u64,
}

/// A session opened by a login.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SessionInfo {
    /// The user it acts as.
    pub user_id: u32,
    /// The session id (the login's metadata op number).
    pub session: u64,
    /// The bind secret (a credential: never printed).
    secret: u128,
}

impl std::fmt::Debug for SessionInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionInfo")
            .field("user_id", &self.user_id)
            .field("session", &self.session)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// The answer to a request: the reply frame's header and body, and which node sent it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The reply's header (`op` is the op number the request was applied at).
    pub header: Header,
    /// The reply's body (a metadata or partition reply, a poll answer, a status).
    pub body: Vec<u8>,
    /// The roster index of the node that answered.
    pub node: usize,
}

/// A topic [`Client::create_topic`] created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CreatedTopic {
    /// Its id within its stream.
    pub topic_id: u32,
    /// The metadata op that created it.
    pub op: u64,
    /// Its partitions' VSR groups, partition 0 first.
    pub groups: Vec<u64>,
}

/// One node's answer (or failure) in [`ClusterMetadata`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeReport {
    /// The node's roster index (its replica index).
    pub node: usize,
    /// Its client address.
    pub address: SocketAddr,
    /// Its status of the metadata group, with its partition directory.
    pub status: Result<GroupStatus, Error>,
}

/// One partition as every node sees it, in [`ClusterMetadata`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionReport {
    /// The partition (from the first node's directory that lists it).
    pub entry: PartitionEntry,
    /// Per node (roster order): its replica of the partition's group (`None` if it does
    /// not host it), or why it could not be asked.
    pub views: Vec<Result<Option<HostedGroup>, Error>>,
}

/// What [`Client::cluster_metadata`] gathers: every node's view of the metadata group
/// and of every partition any node lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterMetadata {
    /// Per node, in roster order.
    pub nodes: Vec<NodeReport>,
    /// Per partition, by group id.
    pub partitions: Vec<PartitionReport>,
}

/// A node in the roster: its address and its connection, if any.
#[derive(Debug)]
struct NodeSlot {
    address: SocketAddr,
    connection: Option<Connection>,
    /// No dial before this instant (after a failed one).
    dial_after: Option<Instant>,
    /// The pause after the next failed dial is twice this (from the minimum).
    backoff: Duration,
    /// Whether a connection to this node was ever open.
    ever_connected: bool,
}

/// What the client does when its wait ends without an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Then {
    /// A copy is out: the node did not answer in time, so try the next node.
    NextNode,
    /// A pause between resends: send to the current target again.
    Resend,
}

/// Until when the client waits, and what it does then.
#[derive(Clone, Copy, Debug)]
struct Wait {
    until: Instant,
    then: Then,
}

/// What became of the copies of one request: whether the cluster may have taken it.
#[derive(Debug)]
struct Flight {
    /// Copies written, per node.
    written: Vec<u64>,
    /// Copies refused as never taken (`TransientNotAccepted`, `Unbound`), per node.
    refused: Vec<u64>,
    /// Whether a primary answered `TransientNotCommitted`.
    not_committed: bool,
    /// The last problem, for the error message.
    last: Option<String>,
}

impl Flight {
    fn new(nodes: usize) -> Self {
        Self {
            written: vec![0; nodes],
            refused: vec![0; nodes],
            not_committed: false,
            last: None,
        }
    }

    /// Whether some copy may have been taken: answered not committed, or written to a
    /// node that did not refuse every copy it got.
    fn maybe_taken(&self) -> bool {
        self.not_committed
            || self
                .written
                .iter()
                .zip(&self.refused)
                .any(|(written, refused)| written > refused)
    }

    fn exhausted(self, group: u64, request: u64, budget: Duration) -> Error {
        let budget_ms = u64::try_from(budget.as_millis()).unwrap_or(u64::MAX);
        if self.maybe_taken() {
            Error::NotCommitted {
                group,
                request,
                budget_ms,
                last: self.last,
            }
        } else {
            Error::NotAccepted {
                group,
                request,
                budget_ms,
                last: self.last,
            }
        }
    }
}

/// A random client id from the operating system; never 0.
fn random_client_id() -> Result<u128, Error> {
    crate::runtime::os_random_u128()
        .map(|random| random.max(1))
        .map_err(|error| Error::InvalidRequest(format!("cannot draw a client id from /dev/urandom: {error}")))
}

/// A client of one cluster: one request in flight, the discipline in the module docs.
#[derive(Debug)]
pub struct Client {
    config: ClientConfig,
    cluster: u64,
    id: u128,
    request_number: u64,
    nodes: Vec<NodeSlot>,
    inbox_sender: mpsc::Sender<Inbound>,
    inbox: mpsc::Receiver<Inbound>,
    next_generation: u64,
    /// The node that answered last (where requests for unknown groups go first).
    current: usize,
    /// Per group, the node that last answered for it.
    leaders: BTreeMap<u64, usize>,
    session: Option<SessionInfo>,
    newest_metadata_op: u64,
    stats: ClientStats,
}

impl Client {
    /// A client for `config`. Connects lazily: nothing is dialed until a request.
    pub fn new(config: ClientConfig) -> Result<Client, Error> {
        if config.nodes.is_empty() {
            return Err(Error::InvalidRequest("the roster names no node".into()));
        }
        if config.nodes.len() > NODES_MAX {
            return Err(Error::InvalidRequest(format!(
                "the roster names {} nodes; at most {NODES_MAX}",
                config.nodes.len()
            )));
        }
        let id = match config.client_id {
            Some(0) => return Err(Error::InvalidRequest("client id 0 is reserved for replicas".into())),
            Some(id) => id,
            None => random_client_id()?,
        };
        let (inbox_sender, inbox) = mpsc::channel(INBOX_FRAMES_MAX);
        let nodes = config
            .nodes
            .iter()
            .map(|address| NodeSlot {
                address: *address,
                connection: None,
                dial_after: None,
                backoff: Duration::ZERO,
                ever_connected: false,
            })
            .collect();
        Ok(Client {
            cluster: cluster_header_id(&config.cluster),
            config,
            id,
            request_number: 0,
            nodes,
            inbox_sender,
            inbox,
            next_generation: 0,
            current: 0,
            leaders: BTreeMap::new(),
            session: None,
            newest_metadata_op: 0,
            stats: ClientStats::default(),
        })
    }

    /// The client id its requests carry.
    pub fn client_id(&self) -> u128 {
        self.id
    }

    /// The transport counters so far.
    pub fn stats(&self) -> ClientStats {
        self.stats
    }

    /// The session the last login opened, if it is still believed good.
    pub fn session(&self) -> Option<SessionInfo> {
        self.session
    }

    /// The newest metadata op any reply named (what requests carry in `commit`).
    pub fn newest_metadata_op(&self) -> u64 {
        self.newest_metadata_op
    }

    /// The roster (client addresses in replica order).
    pub fn nodes(&self) -> &[SocketAddr] {
        &self.config.nodes
    }

    fn request_header(&self, group: u64, operation: u8, request: u64) -> Header {
        let mut header = Header::new(Command::Request);
        header.cluster = self.cluster;
        header.group = group;
        header.client = self.id;
        header.request = request;
        header.operation = operation;
        header.commit = self.newest_metadata_op;
        header.context = self.session.map_or(0, |session| u128::from(session.session));
        header
    }

    /// Write `frame` to `node`, dialing first if there is no connection (unless the
    /// node's redial backoff is pending and `ignore_backoff` is false). On failure the
    /// connection is dropped and the reason returned (without the node's name).
    async fn write_to(&mut self, node: usize, frame: &[u8], ignore_backoff: bool) -> Result<(), String> {
        let now = monotonic_now();
        let address = self.nodes[node].address;
        if self.nodes[node].connection.is_none() {
            if !ignore_backoff
                && let Some(after) = self.nodes[node].dial_after
                && now < after
            {
                return Err(format!(
                    "not redialed for another {} ms (its last dial failed)",
                    after.duration_since(now).as_millis()
                ));
            }
            self.next_generation += 1;
            self.stats.dials += 1;
            if self.nodes[node].ever_connected {
                self.stats.reconnects += 1;
            }
            let dialed = Connection::dial(
                address,
                node,
                self.next_generation,
                self.cluster,
                self.config.dial_timeout,
                self.inbox_sender.clone(),
            )
            .await;
            let slot = &mut self.nodes[node];
            match dialed {
                Ok(connection) => {
                    slot.connection = Some(connection);
                    slot.dial_after = None;
                    slot.backoff = Duration::ZERO;
                    slot.ever_connected = true;
                }
                Err(error) => {
                    self.stats.dial_failures += 1;
                    slot.backoff = (slot.backoff * 2)
                        .max(Duration::from_millis(REDIAL_BACKOFF_MIN_MS))
                        .min(Duration::from_millis(REDIAL_BACKOFF_MAX_MS));
                    slot.dial_after = Some(monotonic_now() + slot.backoff);
                    return Err(format!("connect failed: {error}"));
                }
            }
        }
        let write_timeout = self.config.write_timeout;
        let Some(connection) = self.nodes[node].connection.as_mut() else {
            return Err("not connected".into());
        };
        match connection.write(frame, write_timeout).await {
            Ok(()) => Ok(()),
            Err(error) => {
                self.nodes[node].connection = None;
                self.stats.disconnects += 1;
                Err(format!("write failed: {error}"))
            }
        }
    }

    /// A reader task reported its connection ended: forget the connection if it is
    /// still the live one to that node (true then).
    fn on_closed(&mut self, node: usize, generation: u64, error: &crate::runtime::framing::ReadFrameError) -> bool {
        if error.is_rejection() {
            self.stats.frames_rejected += 1;
        }
        let Some(slot) = self.nodes.get_mut(node) else {
            return false;
        };
        if slot.connection.as_ref().is_some_and(|c| c.generation == generation) {
            slot.connection = None;
            self.stats.disconnects += 1;
            true
        } else {
            false
        }
    }

    /// Send a copy of the request to `*target`; on failure move `*target` to the next
    /// node and pause a resend interval.
    async fn transmit(&mut self, target: &mut usize, request: &[u8], flight: &mut Flight) -> Wait {
        match self.write_to(*target, request, false).await {
            Ok(()) => {
                flight.written[*target] += 1;
                Wait {
                    until: monotonic_now() + self.config.reply_timeout,
                    then: Then::NextNode,
                }
            }
            Err(error) => {
                flight.last = Some(format!("node {} ({}): {error}", *target, self.nodes[*target].address));
                *target = (*target + 1) % self.nodes.len();
                Wait {
                    until: monotonic_now() + self.config.resend_interval,
                    then: Then::Resend,
                }
            }
        }
    }

    /// Another copy of the request, unless the send cutoff has passed: then no new copy
    /// (it would have no time to be answered), only a wait for the answers to the copies
    /// already out, until the budget ends.
    async fn again_or_wait(
        &mut self,
        target: &mut usize,
        request: &[u8],
        flight: &mut Flight,
        cutoff: Instant,
        budget_end: Instant,
    ) -> Wait {
        if monotonic_now() >= cutoff {
            return Wait {
                until: budget_end,
                then: Then::Resend,
            };
        }
        self.stats.resends += 1;
        self.transmit(target, request, flight).await
    }

    /// Learn from a reply to one of this client's requests (newest metadata op, and the
    /// session a login opened).
    fn observe(&mut self, operation: u8, reply: &Header, body: &[u8]) {
        if reply.group != 0 {
            return;
        }
        self.newest_metadata_op = self.newest_metadata_op.max(reply.op);
        if MetadataOp::is_login_operation(operation)
            && let Ok(MetadataReply::LoggedIn {
                user_id,
                session,
                secret,
            }) = MetadataReply::decode(body)
        {
            self.session = Some(SessionInfo {
                user_id,
                session,
                secret,
            });
        }
    }
}
