//! Client connections: accepting them within the node's bounds (in all and per
//! address), reading their requests within the idle and frame timeouts, writing
//! their replies.

use std::net::SocketAddr;
use std::rc::Rc;

use tokio::io::BufReader;
use tokio::net::TcpListener;

use super::{
    CLIENT_CONNECTIONS_MAX, CLIENT_CONNECTIONS_PER_ADDRESS_MAX, CLIENT_IDLE_TIMEOUT_MS, CLIENT_PROCESS_BASE,
    CLIENT_READ_BUFFER_BYTES, FRAME_READ_TIMEOUT_MS, Outgoing, TcpTransport, count_in, count_out,
};
use crate::metadata::{MetadataOp, MetadataReply};
use crate::runtime::bus::Transport;
use crate::runtime::framing::{ReadFrameError, ReadLimits, read_frame_within};
use crate::seam::ProcessId;
use crate::vsr::{ClientError, seal_refusal};
use crate::wire::{Command, HEADER_BYTES, Header};

/// The metadata group, where logins go.
const METADATA_GROUP: u64 = 0;

/// Count the failure of the login `to` has in flight, if `frame` answers it so.
pub(super) fn note_login_answer(state: &mut super::State, to: ProcessId, frame: &[u8]) {
    let Some(header) = frame.get(..HEADER_BYTES).and_then(|bytes| Header::decode(bytes).ok()) else {
        return;
    };
    if header.command != Command::Reply
        || header.group != METADATA_GROUP
        || !MetadataOp::is_login_operation(header.operation)
    {
        return;
    }
    let Some((address, user)) = state.pending_logins.remove(&to) else {
        return;
    };
    if let Some(Ok(MetadataReply::InvalidCredentials)) = frame.get(HEADER_BYTES..).map(MetadataReply::decode) {
        let now_ms = state.now_ms();
        state.login_throttle.failed(address, user.as_deref(), now_ms);
        state.stats.logins_failed += 1;
    }
}

/// Why a client connection was not taken.
enum Refusal {
    Full,
    AddressFull,
}

impl TcpTransport {
    /// A login request from `process` at `address`: refused `Throttled` here (false)
    /// if its address or user has failed too often lately, else remembered so that its
    /// answer's failure counts (true: deliver it). Any other request: true.
    fn screen_login(&self, process: ProcessId, address: SocketAddr, frame: &[u8]) -> bool {
        // The reader verified the whole frame; only the header is read again here, so
        // a request that is not a login costs a header decode, not a second checksum
        // of its body.
        let Some(header) = frame.get(..HEADER_BYTES).and_then(|bytes| Header::decode(bytes).ok()) else {
            return true;
        };
        if header.group != METADATA_GROUP || !MetadataOp::is_login_operation(header.operation) {
            return true;
        }
        let body = &frame[HEADER_BYTES..];
        let user = match MetadataOp::decode(body) {
            Ok(MetadataOp::LoginUser { username, .. }) => Some(username),
            // A token names no user; an undecodable login is the group's to refuse.
            _ => None,
        };
        let throttled = {
            let mut state = self.state.borrow_mut();
            let now_ms = state.now_ms();
            if state.login_throttle.throttled(address.ip(), user.as_deref(), now_ms) {
                state.stats.logins_throttled += 1;
                true
            } else {
                state.pending_logins.insert(process, (address.ip(), user));
                false
            }
        };
        if !throttled {
            return true;
        }
        let (cluster, replica) = {
            let state = self.state.borrow();
            (state.cluster, state.replica)
        };
        let mut sender = Header::new(Command::Refused);
        sender.cluster = cluster;
        sender.group = METADATA_GROUP;
        sender.replica = replica;
        let refusal = seal_refusal(sender, &header, replica, ClientError::Throttled);
        self.send(ProcessId(u32::from(replica)), process, refusal);
        self.warn_limited("login throttled", |suppressed| {
            tracing::warn!(%address, suppressed, "refused a login: too many failed logins lately from its address or for its user");
        });
        false
    }

    /// Register a new client connection from `address`: its process id and queue, or
    /// why it is refused.
    fn register_client(&self, address: SocketAddr) -> Result<(ProcessId, Rc<Outgoing>), Refusal> {
        let mut state = self.state.borrow_mut();
        if state.clients.len() >= CLIENT_CONNECTIONS_MAX {
            state.stats.client_connections_refused += 1;
            return Err(Refusal::Full);
        }
        if state.clients_by_address.get(&address.ip()).copied().unwrap_or(0) >= CLIENT_CONNECTIONS_PER_ADDRESS_MAX {
            state.stats.client_connections_refused_per_address += 1;
            return Err(Refusal::AddressFull);
        }
        let process = ProcessId(state.next_client);
        // 4 billion connections in one process lifetime: wrap back to the base,
        // skipping ids still connected.
        state.next_client = state.next_client.checked_add(1).unwrap_or(CLIENT_PROCESS_BASE);
        while state.clients.contains_key(&ProcessId(state.next_client)) {
            state.next_client = state.next_client.checked_add(1).unwrap_or(CLIENT_PROCESS_BASE);
        }
        let outgoing = Rc::new(Outgoing::default());
        state.clients.insert(process, outgoing.clone());
        count_in(&mut state.clients_by_address, address.ip());
        state.stats.client_connections += 1;
        Ok((process, outgoing))
    }

    pub(super) async fn accept_clients(self, listener: TcpListener) {
        loop {
            let (stream, address) = self.accept_next(&listener, "client").await;
            let (process, outgoing) = match self.register_client(address) {
                Ok(registered) => registered,
                Err(Refusal::Full) => {
                    self.warn_limited("client connections full", |suppressed| {
                        tracing::warn!(%address, suppressed, "refused a client connection: {CLIENT_CONNECTIONS_MAX} are open");
                    });
                    continue;
                }
                Err(Refusal::AddressFull) => {
                    self.warn_limited("client address full", |suppressed| {
                        tracing::warn!(
                            %address,
                            suppressed,
                            "refused a client connection: its address holds {CLIENT_CONNECTIONS_PER_ADDRESS_MAX} already"
                        );
                    });
                    continue;
                }
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
        let limits = ReadLimits {
            idle_ms: Some(CLIENT_IDLE_TIMEOUT_MS),
            frame_ms: FRAME_READ_TIMEOUT_MS,
        };
        let mut reader = BufReader::with_capacity(CLIENT_READ_BUFFER_BYTES, reader);
        loop {
            let rejected = match read_frame_within(&mut reader, cluster, limits).await {
                Ok(frame) => {
                    if frame[crate::wire::COMMAND_OFFSET] == Command::Request as u8 {
                        if self.screen_login(process, address, &frame) {
                            self.deliver(process, frame);
                        }
                        continue;
                    }
                    Some(format!(
                        "a client may send only requests, not command byte {}",
                        frame[crate::wire::COMMAND_OFFSET]
                    ))
                }
                Err(error) if error.is_rejection() => Some(error.to_string()),
                Err(error @ ReadFrameError::TimedOut { .. }) => {
                    self.state.borrow_mut().stats.client_connections_timed_out += 1;
                    tracing::debug!(%address, %process, %error, "client connection closed: too slow");
                    None
                }
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
                self.warn_limited("rejected client frame", |suppressed| {
                    tracing::warn!(%address, %process, %reason, total, suppressed, "rejected a frame from a client; closing its connection");
                });
            }
            break;
        }
        let outgoing = {
            let mut state = self.state.borrow_mut();
            count_out(&mut state.clients_by_address, address.ip());
            state.pending_logins.remove(&process);
            state.closed_since_trim.note_closed();
            state.clients.remove(&process)
        };
        if let Some(outgoing) = outgoing {
            outgoing.closed.set(true);
            outgoing.ready.notify_one();
        }
    }
}
