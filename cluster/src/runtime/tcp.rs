//! [`TcpTransport`]: frames between processes over TCP, for the production node.
//!
//! Models: the bus's best-effort `send`. Frames are the simulator's wire frames,
//! read with [`super::framing::read_frame`] (header checksum first, then the size it
//! holds, then the body checksum). Every queue is bounded; past a bound a frame is
//! dropped and counted, exactly as the simulated network may drop it. VSR resends what
//! matters, so a drop costs time, never safety.
//!
//! - **Replicas.** Each node dials every other replica's replica address and only
//!   writes on that connection; it only reads on the connections it accepts. So a
//!   pair of nodes holds two connections, one per direction, and neither side has to
//!   agree who dials. A dialled connection opens with a [`PeerHello`] naming the
//!   cluster and the sender's replica index, checked before any frame is read. A
//!   broken connection is redialled with exponential backoff between
//!   [`DIAL_BACKOFF_MIN_MS`] and [`DIAL_BACKOFF_MAX_MS`]; frames wait in a queue of at
//!   most [`PEER_QUEUE_FRAMES_MAX`] meanwhile. When a peer's connection ends (its
//!   incoming one reaches its end or fails, its outgoing one fails, or a dial of it
//!   is refused: the kernel's word that its process is gone), every shard hears of it
//!   ([`Inbox::push_closed`]), so the groups that peer led fail over without waiting
//!   out their liveness window.
//! - **Clients.** Each accepted client connection becomes its own [`ProcessId`]
//!   (from [`CLIENT_PROCESS_BASE`] up, never reused while the process lives), which
//!   is what the node's session bindings are keyed by. A client connection may carry
//!   only `Request` frames; anything else, and any frame that fails verification,
//!   is counted and closes that connection (its framing can no longer be trusted),
//!   while every other connection carries on.
//!
//! Does not model: authentication of peers beyond the cluster id (run replica ports
//! on a private network), TLS, or flow control beyond the bounded queues.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

use super::bus::Transport;
use super::framing::read_frame;
use crate::routing::owner_shard;
use crate::seam::{Inbox, InboxPush, ProcessId};
use crate::wire::{Command, HEADER_BYTES, Header};

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

/// How long a dialled-in peer has to send its hello before the connection is dropped.
pub const PEER_HELLO_TIMEOUT_MS: u64 = 2_000;

/// Read buffer of one connection, in bytes: a few frames' worth, so a burst of small
/// frames costs one system call rather than two per frame.
pub const READ_BUFFER_BYTES: usize = 64 * 1024;

/// The magic bytes that open a replica connection: "VSRPEER" and a format version.
pub const PEER_HELLO_MAGIC: [u8; 8] = *b"VSRPEER\x01";

/// Bytes of a [`PeerHello`]: magic, cluster id, replica, replica count, padding.
pub const PEER_HELLO_BYTES: usize = 24;

/// The first bytes on a replica connection: who is dialling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerHello {
    /// The cluster id (the header's `cluster`).
    pub cluster: u64,
    /// The dialling replica.
    pub replica: u8,
    /// How many replicas it believes the cluster has.
    pub replicas: u8,
}

impl PeerHello {
    /// `[magic 8][cluster u64 LE][replica u8][replicas u8][zero 6]`.
    pub fn encode(&self) -> [u8; PEER_HELLO_BYTES] {
        let mut bytes = [0u8; PEER_HELLO_BYTES];
        bytes[..8].copy_from_slice(&PEER_HELLO_MAGIC);
        bytes[8..16].copy_from_slice(&self.cluster.to_le_bytes());
        bytes[16] = self.replica;
        bytes[17] = self.replicas;
        bytes
    }

    /// Parse a hello; the reason if it is not one.
    pub fn decode(bytes: &[u8; PEER_HELLO_BYTES]) -> Result<Self, String> {
        if bytes[..8] != PEER_HELLO_MAGIC {
            return Err("the connection did not open with the replica hello".to_owned());
        }
        if bytes[18..].iter().any(|byte| *byte != 0) {
            return Err("the hello's padding is not zero".to_owned());
        }
        let mut cluster = [0u8; 8];
        cluster.copy_from_slice(&bytes[8..16]);
        Ok(Self {
            cluster: u64::from_le_bytes(cluster),
            replica: bytes[16],
            replicas: bytes[17],
        })
    }
}

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
    /// Frames from clients that failed verification, were truncated, were for another
    /// cluster or were not requests (each closed its connection).
    pub client_frames_rejected: u64,
    /// Replica connections accepted with a valid hello.
    pub peer_connections: u64,
    /// Replica connections refused (bad hello, another cluster, unknown replica).
    pub peer_connections_refused: u64,
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
    inboxes: Rc<[Inbox]>,
    peers: BTreeMap<u8, Rc<Outgoing>>,
    clients: BTreeMap<ProcessId, Rc<Outgoing>>,
    next_client: u32,
    stats: TransportStats,
}

/// The TCP transport of one node. Cheap to clone; every clone is the same transport.
#[derive(Clone)]
pub struct TcpTransport {
    state: Rc<RefCell<State>>,
}

impl TcpTransport {
    /// The transport of replica `replica` of `replicas`, delivering into `inboxes` (one
    /// per shard). Nothing is dialled or accepted until [`TcpTransport::start`].
    pub fn new(cluster: u64, replica: u8, replicas: u8, inboxes: Rc<[Inbox]>) -> Self {
        assert!(replica < replicas, "replica {replica} of {replicas}");
        assert!(!inboxes.is_empty(), "a node has at least one shard");
        let shards = u8::try_from(inboxes.len()).unwrap_or(u8::MAX);
        Self {
            state: Rc::new(RefCell::new(State {
                cluster,
                replica,
                replicas,
                shards,
                inboxes,
                peers: BTreeMap::new(),
                clients: BTreeMap::new(),
                next_client: CLIENT_PROCESS_BASE,
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

    /// Keep a connection to one peer and write its queue on it.
    async fn dial_peer(self, replica: u8, address: SocketAddr, outgoing: Rc<Outgoing>) {
        let hello = {
            let state = self.state.borrow();
            PeerHello {
                cluster: state.cluster,
                replica: state.replica,
                replicas: state.replicas,
            }
        };
        let mut backoff_ms = DIAL_BACKOFF_MIN_MS;
        loop {
            let dialled =
                tokio::time::timeout(Duration::from_millis(DIAL_TIMEOUT_MS), TcpStream::connect(address)).await;
            let mut stream = match dialled {
                Ok(Ok(stream)) => stream,
                Ok(Err(error)) => {
                    self.state.borrow_mut().stats.dials_failed += 1;
                    tracing::debug!(peer = replica, %address, %error, "dial failed");
                    if error.kind() == std::io::ErrorKind::ConnectionRefused {
                        // Nothing listens there: the peer's process is gone.
                        self.peer_closed(replica);
                    }
                    tokio::time::sleep(Duration::from_millis(backoff_ms)).await;
                    backoff_ms = (backoff_ms * 2).min(DIAL_BACKOFF_MAX_MS);
                    continue;
                }
                Err(_) => {
                    self.state.borrow_mut().stats.dials_failed += 1;
                    tracing::debug!(peer = replica, %address, "dial timed out");
                    tokio::time::sleep(Duration::from_millis(backoff_ms)).await;
                    backoff_ms = (backoff_ms * 2).min(DIAL_BACKOFF_MAX_MS);
                    continue;
                }
            };
            // Frames are small and latency matters more than packet count.
            let _ = stream.set_nodelay(true);
            if stream.write_all(&hello.encode()).await.is_err() {
                tokio::time::sleep(Duration::from_millis(backoff_ms)).await;
                backoff_ms = (backoff_ms * 2).min(DIAL_BACKOFF_MAX_MS);
                continue;
            }
            tracing::info!(peer = replica, %address, "connected to peer");
            backoff_ms = DIAL_BACKOFF_MIN_MS;
            if let Err(error) = self.write_queue(&mut stream, &outgoing).await {
                tracing::info!(peer = replica, %address, %error, "peer connection lost; redialling");
                self.peer_closed(replica);
            }
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

    async fn accept_peers(self, listener: TcpListener) {
        loop {
            let (stream, address) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors and the like: wait rather than spin.
                    tracing::warn!(%error, "accepting a replica connection failed");
                    tokio::time::sleep(Duration::from_millis(DIAL_BACKOFF_MAX_MS)).await;
                    continue;
                }
            };
            tokio::task::spawn_local(self.clone().read_peer(stream, address));
        }
    }

    async fn read_peer(self, mut stream: TcpStream, address: SocketAddr) {
        let mut hello = [0u8; PEER_HELLO_BYTES];
        let read = tokio::time::timeout(
            Duration::from_millis(PEER_HELLO_TIMEOUT_MS),
            stream.read_exact(&mut hello),
        )
        .await;
        let (cluster, own, replicas) = {
            let state = self.state.borrow();
            (state.cluster, state.replica, state.replicas)
        };
        let verdict = match read {
            Ok(Ok(_)) => PeerHello::decode(&hello).and_then(|hello| {
                if hello.cluster != cluster {
                    Err(format!(
                        "hello from cluster {:#018x}, not this one ({cluster:#018x})",
                        hello.cluster
                    ))
                } else if hello.replicas != replicas {
                    Err(format!(
                        "the peer counts {} replicas, this node {replicas}",
                        hello.replicas
                    ))
                } else if hello.replica >= replicas || hello.replica == own {
                    Err(format!(
                        "hello from replica {}, which is not a peer of replica {own}",
                        hello.replica
                    ))
                } else {
                    Ok(hello)
                }
            }),
            Ok(Err(error)) => Err(format!("connection ended before its hello: {error}")),
            Err(_) => Err(format!("no hello within {PEER_HELLO_TIMEOUT_MS} ms")),
        };
        let hello = match verdict {
            Ok(hello) => hello,
            Err(reason) => {
                self.state.borrow_mut().stats.peer_connections_refused += 1;
                tracing::warn!(%address, %reason, "refused a replica connection");
                return;
            }
        };
        self.state.borrow_mut().stats.peer_connections += 1;
        tracing::info!(peer = hello.replica, %address, "peer connected");
        let from = ProcessId(u32::from(hello.replica));
        let mut stream = BufReader::with_capacity(READ_BUFFER_BYTES, stream);
        loop {
            match read_frame(&mut stream, cluster).await {
                Ok(frame) => self.deliver(from, frame),
                Err(error) => {
                    if error.is_rejection() {
                        let total = {
                            let mut state = self.state.borrow_mut();
                            state.stats.peer_frames_rejected += 1;
                            state.stats.peer_frames_rejected
                        };
                        tracing::warn!(peer = hello.replica, %error, total, "rejected a frame from a peer; closing");
                    } else {
                        tracing::info!(peer = hello.replica, %error, "peer connection ended");
                        self.peer_closed(hello.replica);
                    }
                    return;
                }
            }
        }
    }

    async fn accept_clients(self, listener: TcpListener) {
        loop {
            let (stream, address) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "accepting a client connection failed");
                    tokio::time::sleep(Duration::from_millis(DIAL_BACKOFF_MAX_MS)).await;
                    continue;
                }
            };
            let registered = {
                let mut state = self.state.borrow_mut();
                if state.clients.len() >= CLIENT_CONNECTIONS_MAX {
                    state.stats.client_connections_refused += 1;
                    None
                } else {
                    let process = ProcessId(state.next_client);
                    // 4 billion connections in one process lifetime: wrap back to the
                    // base, skipping ids still connected.
                    state.next_client = state.next_client.checked_add(1).unwrap_or(CLIENT_PROCESS_BASE);
                    while state.clients.contains_key(&ProcessId(state.next_client)) {
                        state.next_client = state.next_client.checked_add(1).unwrap_or(CLIENT_PROCESS_BASE);
                    }
                    let outgoing = Rc::new(Outgoing::default());
                    state.clients.insert(process, outgoing.clone());
                    state.stats.client_connections += 1;
                    Some((process, outgoing))
                }
            };
            let Some((process, outgoing)) = registered else {
                tracing::warn!(%address, "refused a client connection: {CLIENT_CONNECTIONS_MAX} are open");
                continue;
            };
            let _ = stream.set_nodelay(true);
            tracing::debug!(%address, %process, "client connected");
            let (reader, writer) = stream.into_split();
            tokio::task::spawn_local(self.clone().write_client(writer, outgoing));
            tokio::task::spawn_local(self.clone().read_client(reader, address, process));
        }
    }

    async fn write_client(self, mut writer: tokio::net::tcp::OwnedWriteHalf, outgoing: Rc<Outgoing>) {
        // A write error ends it: the reader notices the same broken connection and
        // unregisters it.
        let _ = self.write_queue(&mut writer, &outgoing).await;
    }

    async fn read_client(self, reader: tokio::net::tcp::OwnedReadHalf, address: SocketAddr, process: ProcessId) {
        let cluster = self.state.borrow().cluster;
        let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, reader);
        loop {
            let rejected = match read_frame(&mut reader, cluster).await {
                Ok(frame) => {
                    if frame[crate::wire::COMMAND_OFFSET] == Command::Request as u8 {
                        self.deliver(process, frame);
                        continue;
                    }
                    Some(format!(
                        "a client may send only requests, not command byte {}",
                        frame[crate::wire::COMMAND_OFFSET]
                    ))
                }
                Err(error) if error.is_rejection() => Some(error.to_string()),
                Err(error) => {
                    tracing::debug!(%address, %process, %error, "client connection ended");
                    None
                }
            };
            if let Some(reason) = rejected {
                let total = {
                    let mut state = self.state.borrow_mut();
                    state.stats.client_frames_rejected += 1;
                    state.stats.client_frames_rejected
                };
                tracing::warn!(%address, %process, %reason, total, "rejected a frame from a client; closing its connection");
            }
            break;
        }
        let outgoing = self.state.borrow_mut().clients.remove(&process);
        if let Some(outgoing) = outgoing {
            outgoing.closed.set(true);
            outgoing.ready.notify_one();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hello_round_trips_and_anything_else_is_refused_with_a_reason() {
        let hello = PeerHello {
            cluster: 0xabcd,
            replica: 2,
            replicas: 3,
        };
        assert_eq!(PeerHello::decode(&hello.encode()), Ok(hello));
        let mut wrong_magic = hello.encode();
        wrong_magic[0] = b'G';
        assert!(PeerHello::decode(&wrong_magic).is_err_and(|reason| reason.contains("hello")));
        let mut padding = hello.encode();
        padding[23] = 1;
        assert!(PeerHello::decode(&padding).is_err_and(|reason| reason.contains("padding")));
    }
}
