//! A simulated client: one request in flight, sent first to the replica that last
//! answered for its group, resent (same bytes) at once to the primary a refusal names
//! (`TransientNotAccepted`: never taken), and otherwise after a timeout learned from
//! its measured round trips ([`ResendClock`]): once more to the same replica, then to
//! the one a refusal named or the next in turn, backing off only once every replica
//! has had its chance.
//!
//! Sessions: the client remembers the session its last successful login opened (the
//! `LoggedIn` reply's id and secret) and the newest metadata op it has seen (every
//! metadata reply's `op`), which it puts in each request's `commit` so no node judges
//! it against older metadata, and the session it sends in (`context`), so a node never
//! lets a frame of an older session act as the newer one. A node that does not know the sender as this client's
//! session refuses `Unbound`; the client then sends `BindSession` to that node and, once
//! bound, the same request again (same bytes, same request number: a request that had
//! already committed is answered from the client table). `PermissionDenied` and
//! `Unauthenticated` refusals are final answers and go to the driver; so does a refused
//! bind, as `Unauthenticated` (the session is gone: the driver must log in again).
//!
//! What to ask for and how to judge the answer is the [`ClientDriver`]'s business (the
//! workload); this module is only the transport discipline.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use futures::{FutureExt, select_biased};

use cluster::metadata::{BIND_SESSION_CODE, BindSession, MetadataOp, MetadataReply};
use cluster::partition::PartitionOp;
use cluster::seam::{Bus, Inbox, ProcessId, TICK};
use cluster::vsr::ClientError;
use cluster::wire::{self, Command, HEADER_BYTES, Header};

use crate::executor::Fnv1a64;
use crate::harness::resend_clock::ResendClock;

/// One tick in the client clock's micros.
const TICK_MICROS: u64 = TICK.as_micros() as u64;

/// Ticks an idle client waits before asking its driver again.
pub const CLIENT_IDLE_TICKS: u64 = 10;

/// Groups whose last answering replica a client remembers. Every partition has its own
/// primary, so without the memory each request to a partition would start at a
/// replica picked for another group. When full the memory is forgotten wholesale
/// (deterministic, and a lost entry costs one refusal).
pub const CLIENT_LEADERS_MAX: usize = 256;

/// One request a driver asks a client to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientRequest {
    /// The VSR group it is for (0 = metadata, else a partition's group).
    pub group: u64,
    /// The operation code.
    pub operation: u8,
    /// The body.
    pub body: Vec<u8>,
    /// Hand a `TransientNotCommitted` answer to the driver instead of resending: the
    /// request was taken by a primary that lost its view before committing it, so it
    /// may still commit in a later view or never. A driver that records histories
    /// opts in to see such outcomes as what they are, unknown, the way a production
    /// client's caller does; the others leave it off and the transport resends until a
    /// final answer.
    pub give_up_when_not_committed: bool,
}

impl ClientRequest {
    /// `op` for the metadata group, resent until it has a final answer.
    pub fn metadata(op: &MetadataOp) -> Self {
        Self {
            group: cluster::node::METADATA_GROUP,
            operation: op.operation_code(),
            body: op.encode(),
            give_up_when_not_committed: false,
        }
    }

    /// `op` for partition group `group`, resent until it has a final answer.
    pub fn partition(group: u64, op: &PartitionOp) -> Self {
        Self {
            group,
            operation: op.operation_code(),
            body: op.encode(),
            give_up_when_not_committed: false,
        }
    }
}

/// What a client sends and how it judges answers.
pub trait ClientDriver {
    /// The next request of `client`, or `None` to stay idle.
    fn next_request(&mut self, client: usize) -> Option<ClientRequest>;
    /// The reply to `client`'s outstanding request (or, for a request that asked for
    /// it, the `TransientNotCommitted` refusal that ended it).
    fn on_reply(&mut self, client: usize, reply: &Header, body: &[u8]);
    /// The simulated tick that starts now (called by the harness before the tick's
    /// work), for drivers that stamp what they see with virtual time.
    fn on_tick(&mut self, _tick: u64) {}
    /// Reseed every draw the driver makes, for a branch of the run (see
    /// [`crate::timeline`]). Required, so a driver that draws cannot forget it: one
    /// that draws nothing says so with an empty body.
    fn branch(&mut self, key: crate::timeline::BranchKey);
    /// Whether the driver sends its clients' logins itself. If not (the default), the
    /// client logs in as root before the driver's first request, and the driver never
    /// sees that login: every request acts as its client's session's user, so a
    /// driver that is not about sessions still needs one.
    fn logs_in_itself(&self) -> bool {
        false
    }
}

/// The login a client sends first when its driver does not log in itself: root, with
/// the simulated cluster's root password.
pub fn root_login() -> ClientRequest {
    let op = MetadataOp::LoginUser {
        username: cluster::metadata::ROOT_USERNAME.to_owned(),
        password: cluster::metadata::DEFAULT_ROOT_PASSWORD.to_owned(),
    };
    ClientRequest::metadata(&op)
}

/// A client's transport counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Distinct requests sent.
    pub requests: u64,
    /// Replies matched to the outstanding request.
    pub replies: u64,
    /// Resends after a timeout.
    pub resends: u64,
    /// Immediate resends to the primary a refusal named.
    pub redirects: u64,
    /// `TransientNotAccepted` refusals (never taken: not primary, not normal, busy).
    pub refusals: u64,
    /// `TransientNotCommitted` answers (taken, but the primary lost its view before
    /// committing it: the outcome is unknown until the resend is answered).
    pub not_committed: u64,
    /// Frames that failed to open.
    pub frames_rejected: u64,
    /// `Unbound` refusals (the node did not know this sender as the client's session).
    pub unbound: u64,
    /// `BindSession` requests sent.
    pub binds: u64,
    /// Binds answered `SessionRefused`.
    pub binds_refused: u64,
    /// Final refusals handed to the driver (`PermissionDenied`, `Unauthenticated`).
    pub denied: u64,
    /// Replies to an older request (duplicates, late answers).
    pub replies_stale: u64,
    /// Whether a request is outstanding now.
    pub outstanding: bool,
    /// FNV-1a-64 of every matched reply's header, in arrival order: what the
    /// determinism test pins.
    pub reply_hash: u64,
    /// The newest request's operation code (for `--trace`).
    pub last_operation: u8,
    /// The newest request's group (for `--trace`).
    pub last_group: u64,
}

/// The id a client puts in its requests: never 0 (0 marks replica-originated frames).
pub fn client_id(client: usize) -> u128 {
    0x5EED_0000_0000 + client as u128
}

/// A client's session as its transport knows it.
#[derive(Clone, Copy, Debug, Default)]
struct SessionState {
    /// The session the last successful login opened: its id and bind secret.
    session: Option<(u64, u128)>,
    /// The newest metadata op any reply named.
    newest_metadata_op: u64,
}

impl SessionState {
    /// Learn from a reply to one of this client's requests.
    fn observe(&mut self, reply: &Header, body: &[u8]) {
        if reply.group != 0 {
            return;
        }
        self.newest_metadata_op = self.newest_metadata_op.max(reply.op);
        if MetadataOp::is_login_operation(reply.operation)
            && let Ok(MetadataReply::LoggedIn { session, secret, .. }) = MetadataReply::decode(body)
        {
            self.session = Some((session, secret));
        }
    }
}

/// A `Refused` frame the transport hands its driver in place of a reply: `error` for
/// the outstanding request, as if `replica` had said it.
fn refusal_for(request: &Header, replica: u8, error: ClientError) -> (Header, [u8; 1]) {
    (Header::answering(Command::Refused, request, replica), error.encode())
}

/// Run client `client` until its process stops.
pub async fn run_client<B: Bus>(
    bus: B,
    inbox: Inbox,
    client: usize,
    cluster: u64,
    replicas: u32,
    driver: Rc<RefCell<dyn ClientDriver>>,
    stats: Rc<RefCell<ClientStats>>,
) {
    let mut task = ClientTask {
        bus,
        inbox,
        client,
        id: client_id(client),
        cluster,
        replicas,
        stats,
        request_number: 0,
        target: 0,
        leaders: BTreeMap::new(),
        sessions: SessionState::default(),
        resend: ResendClock::default(),
    };
    let mut own_login = !driver.borrow().logs_in_itself();
    loop {
        let next = if own_login {
            Some(root_login())
        } else {
            driver.borrow_mut().next_request(client)
        };
        let Some(request) = next else {
            task.idle().await;
            continue;
        };
        let answer = task.exchange(request).await;
        task.stats.borrow_mut().outstanding = false;
        if own_login {
            // Ours, not the driver's: done once it opened a session.
            own_login = task.sessions.session.is_none();
            continue;
        }
        driver.borrow_mut().on_reply(client, &answer.0, &answer.1);
    }
}

/// A client's transport state across its requests.
struct ClientTask<B: Bus> {
    bus: B,
    inbox: Inbox,
    client: usize,
    id: u128,
    cluster: u64,
    replicas: u32,
    stats: Rc<RefCell<ClientStats>>,
    /// The newest request's number.
    request_number: u64,
    /// Where the request goes next.
    target: u32,
    /// Per group, the replica that last answered for it.
    leaders: BTreeMap<u64, u32>,
    sessions: SessionState,
    /// The learned resend timeout.
    resend: ResendClock,
}

/// The request in flight and what its exchange has learned so far.
struct Outstanding {
    header: Header,
    frame: Vec<u8>,
    give_up_when_not_committed: bool,
    /// The primary the last refusal named, for the next resend.
    hinted: Option<u32>,
    /// Immediate redirects to a refusal's hint, at most one per replica per request,
    /// so two replicas that name each other cannot bounce a request forever.
    redirects: u32,
    /// Resends after a timeout so far: the backoff exponent, and (non-zero) why the
    /// answer's round trip is not learned (Karn's rule).
    timeouts: u32,
    /// When the latest send that can be measured went out (the client's clock, micros).
    sent_at_micros: u64,
}

/// What one frame means for the request in flight.
enum Step {
    /// Keep waiting (a stale, rejected or informative frame; a bind sent).
    Wait,
    /// Send the request again now, to `target`, and restart the resend clock.
    SendAgain,
    /// The exchange is over: this goes to the driver (the reply, or a final refusal).
    Answer(Header, Vec<u8>),
}

impl<B: Bus> ClientTask<B> {
    /// Idle, but still reading: a late answer to an earlier request may arrive.
    async fn idle(&self) {
        let mut idle = self.bus.sleep(TICK * CLIENT_IDLE_TICKS as u32);
        loop {
            select_biased! {
                _ = self.inbox.recv().fuse() => self.stats.borrow_mut().replies_stale += 1,
                () = (&mut idle).fuse() => break,
            }
        }
    }

    /// Send `request` and resend it until it is answered; returns the answer.
    async fn exchange(&mut self, request: ClientRequest) -> (Header, Vec<u8>) {
        let mut outstanding = self.seal(request);
        tracing::debug!(
            client = self.client,
            request = self.request_number,
            group = outstanding.header.group,
            operation = outstanding.header.operation,
            target = self.target,
            "send"
        );
        self.bus.send(ProcessId(self.target), outstanding.frame.clone());
        outstanding.sent_at_micros = self.bus.realtime_micros();
        let mut deadline = self.resend_deadline(&outstanding);
        loop {
            select_biased! {
                (_, frame) = self.inbox.recv().fuse() => {
                    match self.on_frame(&mut outstanding, &frame) {
                        Step::Wait => {}
                        Step::SendAgain => {
                            self.bus.send(ProcessId(self.target), outstanding.frame.clone());
                            outstanding.sent_at_micros = self.bus.realtime_micros();
                            deadline = self.resend_deadline(&outstanding);
                        }
                        Step::Answer(header, body) => {
                            if outstanding.timeouts == 0 {
                                let elapsed = self.bus.realtime_micros().saturating_sub(outstanding.sent_at_micros);
                                self.resend.learn(elapsed / TICK_MICROS);
                            }
                            return (header, body);
                        }
                    }
                }
                () = (&mut deadline).fuse() => {
                    tracing::debug!(client = self.client, request = self.request_number, target = self.target, "resend after timeout");
                    self.stats.borrow_mut().resends += 1;
                    outstanding.timeouts = outstanding.timeouts.saturating_add(1);
                    // The first timeout resends to the same replica: a lost request or
                    // reply is likelier than a lost primary (and a resend of a
                    // committed request fetches its reply from the client table).
                    self.target = match outstanding.hinted.take() {
                        Some(hint) if hint != self.target => hint,
                        _ if outstanding.timeouts == 1 => self.target,
                        _ => (self.target + 1) % self.replicas,
                    };
                    self.bus.send(ProcessId(self.target), outstanding.frame.clone());
                    deadline = self.resend_deadline(&outstanding);
                }
            }
        }
    }

    /// The timer for the next resend of `outstanding`, from the learned timeout and the
    /// request's unanswered sends.
    fn resend_deadline(&self, outstanding: &Outstanding) -> B::Sleep {
        // Twice to the same replica, then once to every other one, at the learned pace;
        // only a request the whole cluster left unanswered backs off.
        let backoff = outstanding.timeouts.saturating_sub(self.replicas + 1);
        let ticks = self.resend.timeout_ticks(backoff);
        // The timeout is at most CLIENT_RESEND_MAX_TICKS, far inside u32.
        self.bus.sleep(TICK * u32::try_from(ticks).unwrap_or(u32::MAX))
    }

    /// The next request's header and frame, counted in the stats, addressed to the
    /// replica that last answered for its group.
    fn seal(&mut self, request: ClientRequest) -> Outstanding {
        let ClientRequest {
            group,
            operation,
            body,
            give_up_when_not_committed,
        } = request;
        self.request_number += 1;
        let mut header = Header::new(Command::Request);
        header.cluster = self.cluster;
        header.group = group;
        header.client = self.id;
        header.request = self.request_number;
        header.operation = operation;
        header.commit = self.sessions.newest_metadata_op;
        header.context = self.sessions.session.map_or(0, |(session, _)| u128::from(session));
        let frame = wire::seal_header(header, &body);
        {
            let mut stats = self.stats.borrow_mut();
            stats.requests += 1;
            stats.outstanding = true;
            stats.last_operation = operation;
            stats.last_group = group;
        }
        if let Some(leader) = self.leaders.get(&group) {
            self.target = *leader;
        }
        Outstanding {
            header,
            frame,
            give_up_when_not_committed,
            hinted: None,
            redirects: 0,
            timeouts: 0,
            sent_at_micros: 0,
        }
    }

    /// Judge one frame from the inbox against the request in flight.
    fn on_frame(&mut self, outstanding: &mut Outstanding, frame: &[u8]) -> Step {
        let Ok((reply, reply_body)) = wire::open(frame) else {
            self.stats.borrow_mut().frames_rejected += 1;
            return Step::Wait;
        };
        if reply.client != self.id || reply.request > self.request_number {
            self.stats.borrow_mut().frames_rejected += 1;
            return Step::Wait;
        }
        if reply.request < self.request_number {
            self.stats.borrow_mut().replies_stale += 1;
            return Step::Wait;
        }
        let operation = outstanding.header.operation;
        match reply.command {
            Command::Reply if reply.operation == BIND_SESSION_CODE && operation != BIND_SESSION_CODE => {
                self.on_bind_answer(outstanding, &reply, reply_body)
            }
            Command::Reply => {
                if self.leaders.len() >= CLIENT_LEADERS_MAX {
                    self.leaders.clear();
                }
                self.leaders
                    .insert(outstanding.header.group, u32::from(reply.replica) % self.replicas);
                {
                    let mut stats = self.stats.borrow_mut();
                    stats.replies += 1;
                    let mut hash = Fnv1a64::from_state(stats.reply_hash);
                    hash.write(&frame[..HEADER_BYTES]);
                    stats.reply_hash = hash.finish();
                }
                self.sessions.observe(&reply, reply_body);
                Step::Answer(reply, reply_body.to_vec())
            }
            Command::Refused => self.on_refusal(outstanding, &reply, reply_body, frame),
            _ => {
                self.stats.borrow_mut().frames_rejected += 1;
                Step::Wait
            }
        }
    }

    /// The answer to a `BindSession` this client sent after an `Unbound` refusal.
    fn on_bind_answer(&mut self, outstanding: &Outstanding, reply: &Header, reply_body: &[u8]) -> Step {
        self.sessions.newest_metadata_op = self.sessions.newest_metadata_op.max(reply.commit);
        match MetadataReply::decode(reply_body) {
            Ok(MetadataReply::SessionBound { .. }) => {
                tracing::debug!(
                    client = self.client,
                    request = self.request_number,
                    replica = reply.replica,
                    "bound"
                );
                // Bound there: the same request again, at once.
                self.target = u32::from(reply.replica) % self.replicas;
                Step::SendAgain
            }
            Ok(MetadataReply::SessionRefused) => {
                self.stats.borrow_mut().binds_refused += 1;
                self.sessions.session = None;
                let (refused, refused_body) =
                    refusal_for(&outstanding.header, reply.replica, ClientError::Unauthenticated);
                Step::Answer(refused, refused_body.to_vec())
            }
            _ => {
                self.stats.borrow_mut().frames_rejected += 1;
                Step::Wait
            }
        }
    }

    /// A refusal of the request in flight: count it, bind the session, give up, or go
    /// where it points.
    fn on_refusal(&mut self, outstanding: &mut Outstanding, reply: &Header, reply_body: &[u8], frame: &[u8]) -> Step {
        let error = ClientError::decode(reply_body);
        tracing::debug!(
            client = self.client,
            request = self.request_number,
            replica = reply.replica,
            ?error,
            hint = reply.flags,
            "refused"
        );
        match error {
            Some(ClientError::TransientNotAccepted) => self.stats.borrow_mut().refusals += 1,
            Some(ClientError::TransientNotCommitted) => {
                self.stats.borrow_mut().not_committed += 1;
                if outstanding.give_up_when_not_committed {
                    // The driver asked to see the unknown outcome.
                    return Step::Answer(*reply, reply_body.to_vec());
                }
            }
            Some(ClientError::Unbound) => return self.bind(outstanding, reply),
            Some(
                ClientError::PermissionDenied
                | ClientError::Unauthenticated
                | ClientError::Malformed
                | ClientError::Throttled,
            ) => {
                let mut stats = self.stats.borrow_mut();
                stats.denied += 1;
                let mut hash = Fnv1a64::from_state(stats.reply_hash);
                hash.write(&frame[..HEADER_BYTES]);
                stats.reply_hash = hash.finish();
                return Step::Answer(*reply, reply_body.to_vec());
            }
            None => {
                self.stats.borrow_mut().frames_rejected += 1;
                return Step::Wait;
            }
        }
        let hint = u32::from(reply.flags) % self.replicas;
        // Never taken, and the refuser names another primary: go there now rather
        // than at the resend timeout.
        if error == Some(ClientError::TransientNotAccepted)
            && hint != self.target
            && u32::from(reply.replica) == self.target
            && outstanding.redirects < self.replicas
        {
            outstanding.redirects += 1;
            self.target = hint;
            self.stats.borrow_mut().redirects += 1;
            return Step::SendAgain;
        }
        outstanding.hinted = Some(hint);
        Step::Wait
    }

    /// `Unbound`: bind the session this client holds on the node that refused, or,
    /// without one, hand the driver `Unauthenticated` (it must log in).
    fn bind(&mut self, outstanding: &Outstanding, reply: &Header) -> Step {
        self.stats.borrow_mut().unbound += 1;
        let Some((session, secret)) = self.sessions.session else {
            // Never logged in (or the session is gone): nothing to bind.
            let (refused, refused_body) = refusal_for(&outstanding.header, reply.replica, ClientError::Unauthenticated);
            return Step::Answer(refused, refused_body.to_vec());
        };
        let mut bind = Header::new(Command::Request);
        bind.cluster = self.cluster;
        bind.group = 0;
        bind.client = self.id;
        bind.request = self.request_number;
        bind.operation = BIND_SESSION_CODE;
        bind.commit = self.sessions.newest_metadata_op;
        let bind = wire::seal_header(bind, &BindSession { session, secret }.encode());
        self.stats.borrow_mut().binds += 1;
        tracing::debug!(
            client = self.client,
            request = self.request_number,
            replica = reply.replica,
            "unbound: binding"
        );
        self.bus.send(ProcessId(u32::from(reply.replica) % self.replicas), bind);
        Step::Wait
    }
}
