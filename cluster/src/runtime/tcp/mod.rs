//! [`TcpTransport`]: frames between processes over TCP, for the production node.
//!
//! Models: the bus's best-effort `send`. Frames are the simulator's wire frames,
//! read with [`super::framing::read_frame_within`] (header checksum first, then the
//! size it holds, then the body checksum; memory grows with the bytes that arrive, not
//! with the size a header declares). Every queue is bounded; past a bound a frame is
//! dropped and counted, exactly as the simulated network may drop it. VSR resends what
//! matters, so a drop costs time, never safety.
//!
//! - **Replicas** ([`peers`]). Each node dials every other replica's replica address
//!   and only writes on that connection; it only reads on the connections it accepts.
//!   So a pair of nodes holds two connections, one per direction, and neither side has
//!   to agree who dials. A dialled connection opens with the authenticated handshake of
//!   [`super::handshake`]: nothing on it is read as a frame until the dialler has
//!   proved it holds the cluster secret, and the dialler writes nothing until the
//!   acceptor has. A proven connection for a replica that already has one replaces
//!   it (the peer restarted; the old connection may be half open). A broken
//!   connection is redialled with exponential backoff between [`DIAL_BACKOFF_MIN_MS`]
//!   and [`DIAL_BACKOFF_MAX_MS`]; frames wait in a queue of at most
//!   [`PEER_QUEUE_FRAMES_MAX`] meanwhile. When a peer's connection ends (its incoming
//!   one reaches its end or fails, its outgoing one fails, or a dial of it is refused:
//!   the kernel's word that its process is gone), every shard hears of it
//!   ([`Inbox::push_closed`]), so the groups that peer led fail over without waiting
//!   out their liveness window.
//! - **Clients** ([`clients`]). Each accepted client connection becomes its own
//!   [`ProcessId`] (from [`CLIENT_PROCESS_BASE`] up, never reused while the process
//!   lives), which is what the node's session bindings are keyed by. A client
//!   connection may carry only `Request` frames; anything else, and any frame that
//!   fails verification, is counted and closes that connection (its framing can no
//!   longer be trusted), while every other connection carries on.
//! - **Bounds on outsiders.** At most [`CLIENT_CONNECTIONS_MAX`] client connections,
//!   and [`CLIENT_CONNECTIONS_PER_ADDRESS_MAX`] from one IP address, so one address
//!   cannot lock the others out; a client connection that starts no frame for
//!   [`CLIENT_IDLE_TIMEOUT_MS`] is closed, and any connection that takes longer than
//!   [`FRAME_READ_TIMEOUT_MS`] over one frame is closed. Unproven replica connections
//!   are bounded by [`PEER_HANDSHAKES_MAX`] (and [`PEER_HANDSHAKES_PER_ADDRESS_MAX`]
//!   per address) and [`PEER_HANDSHAKE_TIMEOUT_MS`]. Warnings an outsider can cause
//!   are rate-limited ([`super::log_limit`]). After a burst of connections closes, the
//!   memory they held is handed back to the OS ([`super::memory`]).
//!
//! Does not model: encryption (see [`super::handshake`] for what the handshake does
//! and does not defend), or flow control beyond the bounded queues.

pub mod clients;
pub mod login_throttle;
pub mod peers;
#[cfg(test)]
mod tests;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use super::bus::Transport;
use super::handshake::ClusterSecret;
use super::log_limit::WarningLimiter;
use super::memory::{ClosedSinceTrim, return_freed_memory_after_bursts};
use crate::routing::owner_shard;
use crate::seam::{Inbox, InboxPush, ProcessId};
use crate::wire::{HEADER_BYTES, Header};
use login_throttle::LoginThrottle;

/// The first [`ProcessId`] given to a client connection. Replica ids are below it
/// (`REPLICAS_MAX` is far smaller), so an id alone says whether it is a replica.
pub const CLIENT_PROCESS_BASE: u32 = 1 << 16;

/// Frames waiting for one peer's connection: a second of a busy group's prepares and
/// commits. Past it, while the peer is down or slow, the oldest frames are kept and
/// new ones dropped; VSR's resends fill the gap once it is back.
pub const PEER_QUEUE_FRAMES_MAX: usize = 4_096;

/// Frames waiting for one client's connection. A client keeps one request in flight,
/// so a handful suffices; the bound only matters for a client that stopped reading.
pub const CLIENT_QUEUE_FRAMES_MAX: usize = 256;

/// Client connections one node holds at once. Each costs two tasks and a queue; past
/// it, new connections are closed at once and counted, and the clients redial elsewhere.
pub const CLIENT_CONNECTIONS_MAX: usize = 4_096;

/// First wait before redialling a peer: quick enough that a restarted peer is reached
/// within a tick or two.
pub const DIAL_BACKOFF_MIN_MS: u64 = 10;

/// Longest wait between dials of a peer that stays down: one second, a fifth of the
/// heartbeat timeout, so a peer that comes back is heard from well before anyone's
/// view-change timer would fire because of the silence.
pub const DIAL_BACKOFF_MAX_MS: u64 = 1_000;

/// How long one dial may take before it counts as failed: a loopback or LAN connect
/// takes microseconds to milliseconds; half a second means the address is unreachable.
pub const DIAL_TIMEOUT_MS: u64 = 500;

/// How long a replica handshake may take, from accept (or connect) to the last proof,
/// before the connection is dropped: three small messages, a few round trips on any
/// network a cluster spans.
pub const PEER_HANDSHAKE_TIMEOUT_MS: u64 = 2_000;

/// Replica connections in their handshake at once: a cluster has at most
/// `REPLICAS_MAX - 1` peers, each redialling at most once per backoff step, so this is
/// never reached honestly; past it a connection is closed before it sends a byte, so
/// unproven connections cost a bounded amount.
pub const PEER_HANDSHAKES_MAX: usize = 64;

/// Replica connections in their handshake at once from one IP address: a node dials
/// each peer once at a time, and nodes sharing a host (a loopback cluster) share an
/// address, so this covers a host running every replica, and keeps one address from
/// taking all of [`PEER_HANDSHAKES_MAX`].
pub const PEER_HANDSHAKES_PER_ADDRESS_MAX: usize = 16;

/// Read buffer of a replica connection, in bytes: a few frames' worth, so a burst of
/// small frames costs one system call rather than two per frame.
pub const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Read buffer of a client connection, in bytes: a client keeps one request in flight,
/// and most requests are far smaller. Small, because there may be thousands of
/// connections; a larger frame is read through it in several calls.
pub const CLIENT_READ_BUFFER_BYTES: usize = 4 * 1024;

/// Client connections one IP address may hold at once: a quarter of
/// [`CLIENT_CONNECTIONS_MAX`], room for a load generator running hundreds of clients
/// from one host, while an address that opens thousands of idle connections leaves
/// three quarters of the node to everyone else (found by 4,100 idle connections from
/// one address, which filled the global cap and locked every other client out).
pub const CLIENT_CONNECTIONS_PER_ADDRESS_MAX: usize = CLIENT_CONNECTIONS_MAX / 4;

/// How long a client connection may stay without starting a frame before the node
/// closes it, in milliseconds: ten minutes, Kafka's `connections.max.idle.ms`. The
/// client library redials on its next request, so closing an idle one costs a dial.
pub const CLIENT_IDLE_TIMEOUT_MS: u64 = 600_000;

/// How long one frame may take from its first byte to its last, on any connection:
/// 1 MiB (the largest frame) at 100 KiB/s. A connection slower than that over one
/// frame is a slow-loris or a broken path, and is closed.
pub const FRAME_READ_TIMEOUT_MS: u64 = 10_000;

/// Counters of one node's transport.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransportStats {
    /// Frames handed to a local shard's inbox.
    pub frames_delivered: u64,
    /// Frames written to sockets.
    pub frames_written: u64,
    /// Client connections accepted.
    pub client_connections: u64,
    /// Client connections closed at once because [`CLIENT_CONNECTIONS_MAX`] were open.
    pub client_connections_refused: u64,
    /// Client connections closed at once because their address already held
    /// [`CLIENT_CONNECTIONS_PER_ADDRESS_MAX`].
    pub client_connections_refused_per_address: u64,
    /// Client connections closed because they idled or dawdled over a frame.
    pub client_connections_timed_out: u64,
    /// Frames from clients that failed verification, were truncated, were for another
    /// cluster or were not requests (each closed its connection).
    pub client_frames_rejected: u64,
    /// Replica connections accepted: the dialler proved it holds the cluster secret.
    pub peer_connections: u64,
    /// Replica connections refused (bad hello, another cluster, unknown replica, a
    /// failed or missing proof, too many handshakes).
    pub peer_connections_refused: u64,
    /// Proven replica connections that replaced an earlier one of the same replica.
    pub peer_connections_replaced: u64,
    /// Dialled connections dropped because the node there did not prove it holds the
    /// cluster secret.
    pub peer_dials_unproven: u64,
    /// Frames from replicas that failed verification (each closed its connection).
    pub peer_frames_rejected: u64,
    /// Dials of a peer that failed or timed out.
    pub dials_failed: u64,
    /// Times a peer's connection was reported closed to the shards.
    pub peer_closed_notices: u64,
    /// Frames dropped: the peer's queue was full.
    pub dropped_peer_queue_full: u64,
    /// Frames dropped: the client's queue was full.
    pub dropped_client_queue_full: u64,
    /// Frames dropped: addressed to a client connection that is gone.
    pub dropped_client_gone: u64,
    /// Frames dropped: the shard's inbox was full.
    pub dropped_inbox_full: u64,
    /// Logins refused `Throttled` at the edge (see [`login_throttle`]), never tried.
    pub logins_throttled: u64,
    /// Failed logins (answered `InvalidCredentials`) counted against an address and user.
    pub logins_failed: u64,
}

/// One outgoing connection's queue, shared by the senders and its writer task.
#[derive(Default)]
struct Outgoing {
    frames: RefCell<VecDeque<Vec<u8>>>,
    ready: Notify,
    /// Set when the connection is gone for good (a client hung up): the writer ends.
    closed: Cell<bool>,
}

struct State {
    cluster: u64,
    replica: u8,
    replicas: u8,
    shards: u8,
    secret: ClusterSecret,
    inboxes: Rc<[Inbox]>,
    peers: BTreeMap<u8, Rc<Outgoing>>,
    clients: BTreeMap<ProcessId, Rc<Outgoing>>,
    /// Open client connections per IP address.
    clients_by_address: BTreeMap<IpAddr, usize>,
    next_client: u32,
    /// Replica connections in their handshake, in all and per IP address.
    handshakes: usize,
    handshakes_by_address: BTreeMap<IpAddr, usize>,
    /// The proven reader of each replica: its connection number, and how to stop it
    /// when a newer proven connection of the same replica replaces it.
    peer_readers: BTreeMap<u8, (u64, AbortHandle)>,
    /// The readers still in their handshake, by connection number.
    unproven_readers: BTreeMap<u64, AbortHandle>,
    next_connection: u64,
    warnings: WarningLimiter,
    /// Failed logins per address and per user (see [`login_throttle`]).
    login_throttle: LoginThrottle,
    /// The login each client connection has in flight: its address and the user it
    /// named, so the answer's failure is counted against both.
    pending_logins: BTreeMap<ProcessId, (IpAddr, Option<String>)>,
    /// When the transport was made: the warning windows' and the login throttle's
    /// clock counts from it.
    started: tokio::time::Instant,
    /// Connections closed since freed memory was last returned to the OS
    /// ([`super::memory`]).
    closed_since_trim: ClosedSinceTrim,
    stats: TransportStats,
}

impl State {
    /// Milliseconds since the transport was made, on the monotonic clock.
    fn now_ms(&self) -> u64 {
        let since_start = super::monotonic_now().saturating_duration_since(self.started);
        u64::try_from(since_start.as_millis()).unwrap_or(u64::MAX)
    }
}

/// Add one to `address`'s count in `counts`.
fn count_in(counts: &mut BTreeMap<IpAddr, usize>, address: IpAddr) {
    *counts.entry(address).or_default() += 1;
}

/// Take one from `address`'s count in `counts` (forgetting it at zero, so the map
/// holds only addresses with something open).
fn count_out(counts: &mut BTreeMap<IpAddr, usize>, address: IpAddr) {
    if let Some(count) = counts.get_mut(&address) {
        *count -= 1;
        if *count == 0 {
            counts.remove(&address);
        }
    }
}

/// The TCP transport of one node. Cheap to clone; every clone is the same transport.
#[derive(Clone)]
pub struct TcpTransport {
    state: Rc<RefCell<State>>,
}

impl TcpTransport {
    /// The transport of replica `replica` of `replicas`, delivering into `inboxes` (one
    /// per shard). Nothing is dialled or accepted until [`TcpTransport::start`].
    pub fn new(cluster: u64, replica: u8, replicas: u8, secret: ClusterSecret, inboxes: Rc<[Inbox]>) -> Self {
        assert!(replica < replicas, "replica {replica} of {replicas}");
        assert!(!inboxes.is_empty(), "a node has at least one shard");
        let shards = u8::try_from(inboxes.len()).unwrap_or(u8::MAX);
        Self {
            state: Rc::new(RefCell::new(State {
                cluster,
                replica,
                replicas,
                shards,
                secret,
                inboxes,
                peers: BTreeMap::new(),
                clients: BTreeMap::new(),
                clients_by_address: BTreeMap::new(),
                next_client: CLIENT_PROCESS_BASE,
                handshakes: 0,
                handshakes_by_address: BTreeMap::new(),
                peer_readers: BTreeMap::new(),
                unproven_readers: BTreeMap::new(),
                next_connection: 0,
                warnings: WarningLimiter::default(),
                login_throttle: LoginThrottle::default(),
                pending_logins: BTreeMap::new(),
                started: super::monotonic_now(),
                closed_since_trim: ClosedSinceTrim::default(),
                stats: TransportStats::default(),
            })),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> TransportStats {
        self.state.borrow().stats
    }

    /// Spawn the tasks (on the current `LocalSet`): a writer per peer in `peers` (replica
    /// index and replica address; this replica's own entry is skipped), and the accept
    /// loops of the listeners given.
    pub fn start(
        &self,
        peers: &[(u8, SocketAddr)],
        replica_listener: Option<TcpListener>,
        client_listener: TcpListener,
    ) {
        let own = self.state.borrow().replica;
        for &(replica, address) in peers {
            if replica == own {
                continue;
            }
            let outgoing = Rc::new(Outgoing::default());
            self.state.borrow_mut().peers.insert(replica, outgoing.clone());
            tokio::task::spawn_local(self.clone().dial_peer(replica, address, outgoing));
        }
        if let Some(listener) = replica_listener {
            tokio::task::spawn_local(self.clone().accept_peers(listener));
        }
        tokio::task::spawn_local(self.clone().accept_clients(client_listener));
        let closed = self.state.borrow().closed_since_trim.clone();
        tokio::task::spawn_local(return_freed_memory_after_bursts(closed));
    }

    /// Hand a verified frame to the shard that owns its group.
    fn deliver(&self, from: ProcessId, frame: Vec<u8>) {
        let mut state = self.state.borrow_mut();
        let group = Header::decode(&frame[..HEADER_BYTES]).map_or(0, |header| header.group);
        let shard = owner_shard(group, state.shards);
        let inbox = state.inboxes[usize::from(shard)].clone();
        if inbox.push(from, frame) == InboxPush::Full {
            state.stats.dropped_inbox_full += 1;
        } else {
            state.stats.frames_delivered += 1;
        }
    }

    /// Tell every shard that `replica`'s connection closed (see the module doc).
    fn peer_closed(&self, replica: u8) {
        let mut state = self.state.borrow_mut();
        state.stats.peer_closed_notices += 1;
        for inbox in state.inboxes.iter() {
            // A full notice queue drops it: the liveness window still runs.
            inbox.push_closed(ProcessId(u32::from(replica)));
        }
    }

    /// Write frames from `outgoing` until the stream fails or the queue is closed.
    async fn write_queue<W: AsyncWrite + Unpin>(&self, stream: &mut W, outgoing: &Outgoing) -> std::io::Result<()> {
        loop {
            let batch: Vec<Vec<u8>> = outgoing.frames.borrow_mut().drain(..).collect();
            if batch.is_empty() {
                if outgoing.closed.get() {
                    return Ok(());
                }
                outgoing.ready.notified().await;
                continue;
            }
            let count = batch.len() as u64;
            // One write for the whole batch: a commit burst is many small frames.
            let bytes: Vec<u8> = if batch.len() == 1 {
                batch.into_iter().next().unwrap_or_default()
            } else {
                batch.concat()
            };
            stream.write_all(&bytes).await?;
            self.state.borrow_mut().stats.frames_written += count;
        }
    }

    /// The next connection `listener` accepts. A failed accept (out of file descriptors
    /// and the like) is logged, rate-limited, and waited out rather than spun on.
    async fn accept_next(&self, listener: &TcpListener, what: &str) -> (tokio::net::TcpStream, SocketAddr) {
        loop {
            match listener.accept().await {
                Ok(accepted) => return accepted,
                Err(error) => {
                    self.warn_limited("accept failed", |suppressed| {
                        tracing::warn!(%error, suppressed, "accepting a {what} connection failed");
                    });
                    tokio::time::sleep(std::time::Duration::from_millis(DIAL_BACKOFF_MAX_MS)).await;
                }
            }
        }
    }

    /// Log a warning an outsider can cause, unless its kind has had its share of the
    /// log this window (see [`super::log_limit`]).
    fn warn_limited(&self, kind: &'static str, line: impl FnOnce(u64)) {
        let admitted = {
            let mut state = self.state.borrow_mut();
            let now_ms = state.now_ms();
            state.warnings.admit(kind, now_ms)
        };
        if let Some(suppressed) = admitted {
            line(suppressed);
        }
    }
}

impl Transport for TcpTransport {
    fn send(&self, _from: ProcessId, to: ProcessId, frame: Vec<u8>) {
        let mut state = self.state.borrow_mut();
        if to.0 < CLIENT_PROCESS_BASE {
            let Ok(replica) = u8::try_from(to.0) else {
                unreachable!("replica ids are below CLIENT_PROCESS_BASE and fit u8: {to}")
            };
            if replica == state.replica {
                // A replica addressing itself: straight into its own shard.
                drop(state);
                self.deliver(to, frame);
                return;
            }
            let Some(outgoing) = state.peers.get(&replica).cloned() else {
                unreachable!("replica {replica} is not in the roster of {}", state.replicas)
            };
            if outgoing.frames.borrow().len() >= PEER_QUEUE_FRAMES_MAX {
                state.stats.dropped_peer_queue_full += 1;
                return;
            }
            outgoing.frames.borrow_mut().push_back(frame);
            outgoing.ready.notify_one();
        } else {
            if state.pending_logins.contains_key(&to) {
                clients::note_login_answer(&mut state, to, &frame);
            }
            let Some(outgoing) = state.clients.get(&to).cloned() else {
                state.stats.dropped_client_gone += 1;
                return;
            };
            if outgoing.frames.borrow().len() >= CLIENT_QUEUE_FRAMES_MAX {
                state.stats.dropped_client_queue_full += 1;
                return;
            }
            outgoing.frames.borrow_mut().push_back(frame);
            outgoing.ready.notify_one();
        }
    }
}
