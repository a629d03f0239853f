//! Replica connections: dialling each peer and proving ourselves to it, accepting the
//! peers' connections and making them prove themselves (see [`crate::runtime::handshake`]).

use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use super::{
    DIAL_BACKOFF_MAX_MS, DIAL_BACKOFF_MIN_MS, DIAL_TIMEOUT_MS, FRAME_READ_TIMEOUT_MS, Outgoing,
    PEER_HANDSHAKE_TIMEOUT_MS, PEER_HANDSHAKES_MAX, PEER_HANDSHAKES_PER_ADDRESS_MAX, READ_BUFFER_BYTES, TcpTransport,
    count_in, count_out,
};
use crate::runtime::framing::{ReadLimits, read_frame_within};
use crate::runtime::handshake::{self, CHALLENGE_BYTES, HELLO_BYTES, Hello, NONCE_BYTES, PROOF_BYTES};
use crate::seam::ProcessId;

/// A fresh nonce from the OS. The handshake refuses to run without one: a predictable
/// nonce would let a recorded proof be replayed.
fn fresh_nonce() -> std::io::Result<[u8; NONCE_BYTES]> {
    let mut nonce = [0u8; NONCE_BYTES];
    nonce[..16].copy_from_slice(&crate::runtime::os_random_u128()?.to_le_bytes());
    nonce[16..].copy_from_slice(&crate::runtime::os_random_u128()?.to_le_bytes());
    Ok(nonce)
}

/// Releases a handshake's place in the counts when the handshake ends, however it ends.
struct HandshakeSlot {
    transport: TcpTransport,
    address: IpAddr,
    connection: u64,
}

impl Drop for HandshakeSlot {
    fn drop(&mut self) {
        let mut state = self.transport.state.borrow_mut();
        state.handshakes -= 1;
        count_out(&mut state.handshakes_by_address, self.address);
        state.unproven_readers.remove(&self.connection);
        state.closed_since_trim.note_closed();
    }
}

/// Unregisters a proven reader when its task ends or is aborted (replaced).
struct ReaderRegistration {
    transport: TcpTransport,
    replica: u8,
    connection: u64,
}

impl Drop for ReaderRegistration {
    fn drop(&mut self) {
        let mut state = self.transport.state.borrow_mut();
        if state
            .peer_readers
            .get(&self.replica)
            .is_some_and(|(connection, _)| *connection == self.connection)
        {
            state.peer_readers.remove(&self.replica);
        }
    }
}

/// Why a dial of a peer did not give a proven connection.
enum DialFailure {
    /// Nothing listens there: the kernel's word that the peer's process is gone.
    Refused(String),
    /// The connection or the handshake failed or timed out.
    Failed(String),
    /// The node there did not prove it holds the cluster secret.
    Unproven(String),
}

impl TcpTransport {
    fn backoff(backoff_ms: &mut u64) -> Duration {
        let wait = Duration::from_millis(*backoff_ms);
        *backoff_ms = (*backoff_ms * 2).min(DIAL_BACKOFF_MAX_MS);
        wait
    }

    /// Dial `address`, send our hello, check the acceptor's proof and send ours: the
    /// connection ready for frames, or why not.
    async fn dial_and_prove(&self, replica: u8, address: SocketAddr) -> Result<TcpStream, DialFailure> {
        let mut stream =
            match tokio::time::timeout(Duration::from_millis(DIAL_TIMEOUT_MS), TcpStream::connect(address)).await {
                Ok(Ok(stream)) => stream,
                Ok(Err(error)) => {
                    // Nothing listens there: the peer's process is gone.
                    let reason = format!("dial failed: {error}");
                    return Err(if error.kind() == std::io::ErrorKind::ConnectionRefused {
                        DialFailure::Refused(reason)
                    } else {
                        DialFailure::Failed(reason)
                    });
                }
                Err(_) => return Err(DialFailure::Failed("dial timed out".to_owned())),
            };
        // Frames are small and latency matters more than packet count.
        let _ = stream.set_nodelay(true);
        let (hello, secret) = {
            let state = self.state.borrow();
            let nonce = fresh_nonce().map_err(|error| DialFailure::Failed(format!("no nonce from the OS: {error}")))?;
            let hello = Hello {
                cluster: state.cluster,
                replica: state.replica,
                replicas: state.replicas,
                nonce,
            };
            (hello.encode(), state.secret.clone())
        };
        let exchange = async {
            stream.write_all(&hello).await?;
            let mut challenge = [0u8; CHALLENGE_BYTES];
            stream.read_exact(&mut challenge).await?;
            Ok::<_, std::io::Error>(challenge)
        };
        let challenge = match tokio::time::timeout(Duration::from_millis(PEER_HANDSHAKE_TIMEOUT_MS), exchange).await {
            Ok(Ok(challenge)) => challenge,
            Ok(Err(error)) => return Err(DialFailure::Failed(format!("handshake failed: {error}"))),
            Err(_) => {
                return Err(DialFailure::Failed(format!(
                    "no challenge within {PEER_HANDSHAKE_TIMEOUT_MS} ms"
                )));
            }
        };
        let proof = match handshake::answer(&secret, &hello, replica, &challenge) {
            Ok(proof) => proof,
            Err(reason) => {
                self.state.borrow_mut().stats.peer_dials_unproven += 1;
                return Err(DialFailure::Unproven(reason));
            }
        };
        stream
            .write_all(&proof)
            .await
            .map_err(|error| DialFailure::Failed(format!("sending the proof failed: {error}")))?;
        Ok(stream)
    }

    /// Keep a connection to one peer and write its queue on it.
    pub(super) async fn dial_peer(self, replica: u8, address: SocketAddr, outgoing: Rc<Outgoing>) {
        let mut backoff_ms = DIAL_BACKOFF_MIN_MS;
        loop {
            let mut stream = match self.dial_and_prove(replica, address).await {
                Ok(stream) => stream,
                Err(failure) => {
                    self.state.borrow_mut().stats.dials_failed += 1;
                    match failure {
                        DialFailure::Unproven(reason) => self.warn_limited("unproven peer", |suppressed| {
                            tracing::warn!(peer = replica, %address, suppressed, "{reason}");
                        }),
                        DialFailure::Refused(reason) => {
                            tracing::debug!(peer = replica, %address, %reason, "dial refused");
                            self.peer_closed(replica);
                        }
                        DialFailure::Failed(reason) => {
                            tracing::debug!(peer = replica, %address, %reason, "dial failed");
                        }
                    }
                    tokio::time::sleep(Self::backoff(&mut backoff_ms)).await;
                    continue;
                }
            };
            tracing::info!(peer = replica, %address, "connected to peer");
            backoff_ms = DIAL_BACKOFF_MIN_MS;
            if let Err(error) = self.write_queue(&mut stream, &outgoing).await {
                tracing::info!(peer = replica, %address, %error, "peer connection lost; redialling");
                self.peer_closed(replica);
            }
        }
    }

    pub(super) async fn accept_peers(self, listener: TcpListener) {
        loop {
            let (stream, address) = self.accept_next(&listener, "replica").await;
            let admitted = {
                let mut state = self.state.borrow_mut();
                let from_address = state.handshakes_by_address.get(&address.ip()).copied().unwrap_or(0);
                if state.handshakes >= PEER_HANDSHAKES_MAX || from_address >= PEER_HANDSHAKES_PER_ADDRESS_MAX {
                    state.stats.peer_connections_refused += 1;
                    false
                } else {
                    state.handshakes += 1;
                    count_in(&mut state.handshakes_by_address, address.ip());
                    true
                }
            };
            if !admitted {
                self.warn_limited("too many handshakes", |suppressed| {
                    tracing::warn!(%address, suppressed, "refused a replica connection: too many handshakes in progress");
                });
                continue;
            }
            let connection = {
                let mut state = self.state.borrow_mut();
                state.next_connection += 1;
                state.next_connection
            };
            let slot = HandshakeSlot {
                transport: self.clone(),
                address: address.ip(),
                connection,
            };
            // The task cannot run before this loop yields, so its handle is in place
            // before it looks for it.
            let reader = tokio::task::spawn_local(self.clone().read_peer(stream, address, slot, connection));
            self.state
                .borrow_mut()
                .unproven_readers
                .insert(connection, reader.abort_handle());
        }
    }

    /// Run the acceptor's side of the handshake: the proven replica, or why not.
    async fn prove_dialler(&self, stream: &mut TcpStream) -> Result<u8, String> {
        let (cluster, own, replicas, secret) = {
            let state = self.state.borrow();
            (state.cluster, state.replica, state.replicas, state.secret.clone())
        };
        let mut hello_bytes = [0u8; HELLO_BYTES];
        stream
            .read_exact(&mut hello_bytes)
            .await
            .map_err(|error| format!("connection ended before its hello: {error}"))?;
        let hello = Hello::decode(&hello_bytes)?;
        if hello.cluster != cluster {
            return Err(format!(
                "hello from cluster {:#018x}, not this one ({cluster:#018x})",
                hello.cluster
            ));
        }
        if hello.replicas != replicas {
            return Err(format!(
                "the peer counts {} replicas, this node {replicas}",
                hello.replicas
            ));
        }
        if hello.replica >= replicas || hello.replica == own {
            return Err(format!(
                "hello from replica {}, which is not a peer of replica {own}",
                hello.replica
            ));
        }
        let nonce = fresh_nonce().map_err(|error| format!("no nonce from the OS: {error}"))?;
        let challenge = handshake::challenge(&secret, &hello_bytes, own, nonce);
        stream
            .write_all(&challenge)
            .await
            .map_err(|error| format!("sending the challenge failed: {error}"))?;
        let mut proof = [0u8; PROOF_BYTES];
        stream
            .read_exact(&mut proof)
            .await
            .map_err(|error| format!("connection ended before its proof: {error}"))?;
        handshake::check_proof(&secret, &hello_bytes, own, &challenge, &proof)?;
        Ok(hello.replica)
    }

    async fn read_peer(self, mut stream: TcpStream, address: SocketAddr, slot: HandshakeSlot, connection: u64) {
        let proven = tokio::time::timeout(
            Duration::from_millis(PEER_HANDSHAKE_TIMEOUT_MS),
            self.prove_dialler(&mut stream),
        )
        .await
        .unwrap_or_else(|_| Err(format!("no proof within {PEER_HANDSHAKE_TIMEOUT_MS} ms")));
        let own_handle = self.state.borrow_mut().unproven_readers.remove(&connection);
        drop(slot);
        let replica = match proven {
            Ok(replica) => replica,
            Err(reason) => {
                self.state.borrow_mut().stats.peer_connections_refused += 1;
                self.warn_limited("refused peer", |suppressed| {
                    tracing::warn!(%address, %reason, suppressed, "refused a replica connection");
                });
                return;
            }
        };
        // This connection is proven: it replaces any earlier one of the same replica
        // (the peer restarted and redialled; the old connection may be half open).
        let replaced = {
            let mut state = self.state.borrow_mut();
            state.stats.peer_connections += 1;
            let old = state.peer_readers.remove(&replica).map(|(_, handle)| handle);
            if let Some(own_handle) = own_handle {
                state.peer_readers.insert(replica, (connection, own_handle));
            }
            old
        };
        if let Some(old) = replaced {
            old.abort();
            self.state.borrow_mut().stats.peer_connections_replaced += 1;
        }
        let _registration = ReaderRegistration {
            transport: self.clone(),
            replica,
            connection,
        };
        tracing::info!(peer = replica, %address, "peer connected (proved it holds the cluster secret)");
        let from = ProcessId(u32::from(replica));
        let cluster = self.state.borrow().cluster;
        let limits = ReadLimits {
            idle_ms: None,
            frame_ms: FRAME_READ_TIMEOUT_MS,
        };
        let mut stream = BufReader::with_capacity(READ_BUFFER_BYTES, stream);
        loop {
            match read_frame_within(&mut stream, cluster, limits).await {
                Ok(frame) => self.deliver(from, frame),
                Err(error) => {
                    if error.is_rejection() {
                        let total = {
                            let mut state = self.state.borrow_mut();
                            state.stats.peer_frames_rejected += 1;
                            state.stats.peer_frames_rejected
                        };
                        self.warn_limited("rejected peer frame", |suppressed| {
                            tracing::warn!(peer = replica, %error, total, suppressed, "rejected a frame from a peer; closing");
                        });
                    } else {
                        tracing::info!(peer = replica, %error, "peer connection ended");
                        self.peer_closed(replica);
                    }
                    return;
                }
            }
        }
    }
}
