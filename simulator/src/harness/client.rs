//! A simulated client: one request in flight, sent first to the replica that last
//! answered for its group, resent (same bytes) at once to the primary a refusal names
//! (`TransientNotAccepted`: never taken), and otherwise after [`CLIENT_RESEND_TICKS`]
//! to the next replica in turn or the one a refusal named.
//!
//! What to ask for and how to judge the answer is the [`ClientDriver`]'s business (the
//! workload); this module is only the transport discipline.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use futures::{FutureExt, select_biased};

use cluster::seam::{Bus, Inbox, ProcessId, TICK};
use cluster::vsr::ClientError;
use cluster::wire::{self, Command, HEADER_BYTES, Header};

use crate::executor::Fnv1a64;

/// Ticks before a client resends: four commit broadcasts, so a request that is only
/// waiting for the next broadcast is not resent.
pub const CLIENT_RESEND_TICKS: u64 = 200;

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
}

/// What a client sends and how it judges answers.
pub trait ClientDriver {
    /// The next request of `client`, or `None` to stay idle.
    fn next_request(&mut self, client: usize) -> Option<ClientRequest>;
    /// The reply to `client`'s outstanding request.
    fn on_reply(&mut self, client: usize, reply: &Header, body: &[u8]);
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
    /// Replies to an older request (duplicates, late answers).
    pub replies_stale: u64,
    /// Whether a request is outstanding now.
    pub outstanding: bool,
    /// FNV-1a-64 of every matched reply's header, in arrival order: what the
    /// determinism test pins.
    pub reply_hash: u64,
}

/// The id a client puts in its requests: never 0 (0 marks replica-originated frames).
pub fn client_id(client: usize) -> u128 {
    0x5EED_0000_0000 + client as u128
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
    let id = client_id(client);
    let mut request_number: u64 = 0;
    let mut target: u32 = 0;
    let mut leaders: BTreeMap<u64, u32> = BTreeMap::new();
    loop {
        let next = driver.borrow_mut().next_request(client);
        let Some(ClientRequest { group, operation, body }) = next else {
            // Idle, but still reading: a late answer to an earlier request may arrive.
            let mut idle = bus.sleep(TICK * CLIENT_IDLE_TICKS as u32);
            loop {
                select_biased! {
                    _ = inbox.recv().fuse() => stats.borrow_mut().replies_stale += 1,
                    () = (&mut idle).fuse() => break,
                }
            }
            continue;
        };
        request_number += 1;
        let mut header = Header::new(Command::Request);
        header.cluster = cluster;
        header.group = group;
        header.client = id;
        header.request = request_number;
        header.operation = operation;
        let request = wire::seal_header(header, &body);
        {
            let mut stats = stats.borrow_mut();
            stats.requests += 1;
            stats.outstanding = true;
        }
        if let Some(leader) = leaders.get(&group) {
            target = *leader;
        }
        bus.send(ProcessId(target), request.clone());
        let mut deadline = bus.sleep(TICK * CLIENT_RESEND_TICKS as u32);
        let mut hinted: Option<u32> = None;
        // Immediate redirects to a refusal's hint, at most one per replica per request,
        // so two replicas that name each other cannot bounce a request forever.
        let mut redirects: u32 = 0;
        loop {
            select_biased! {
                (_, frame) = inbox.recv().fuse() => {
                    let Ok((reply, reply_body)) = wire::open(&frame) else {
                        stats.borrow_mut().frames_rejected += 1;
                        continue;
                    };
                    if reply.client != id || reply.request > request_number {
                        stats.borrow_mut().frames_rejected += 1;
                        continue;
                    }
                    if reply.request < request_number {
                        stats.borrow_mut().replies_stale += 1;
                        continue;
                    }
                    match reply.command {
                        Command::Reply => {
                            if leaders.len() >= CLIENT_LEADERS_MAX {
                                leaders.clear();
                            }
                            leaders.insert(group, u32::from(reply.replica) % replicas);
                            {
                                let mut stats = stats.borrow_mut();
                                stats.replies += 1;
                                stats.outstanding = false;
                                let mut hash = Fnv1a64::from_state(stats.reply_hash);
                                hash.write(&frame[..HEADER_BYTES]);
                                stats.reply_hash = hash.finish();
                            }
                            driver.borrow_mut().on_reply(client, &reply, reply_body);
                            break;
                        }
                        Command::Refused => {
                            let error = ClientError::decode(reply_body);
                            {
                                let mut stats = stats.borrow_mut();
                                match error {
                                    Some(ClientError::TransientNotAccepted) => stats.refusals += 1,
                                    Some(ClientError::TransientNotCommitted) => stats.not_committed += 1,
                                    None => {
                                        stats.frames_rejected += 1;
                                        continue;
                                    }
                                }
                            }
                            let hint = u32::from(reply.flags) % replicas;
                            // Never taken, and the refuser names another primary: go
                            // there now rather than at the resend timeout.
                            if error == Some(ClientError::TransientNotAccepted)
                                && hint != target
                                && u32::from(reply.replica) == target
                                && redirects < replicas
                            {
                                redirects += 1;
                                target = hint;
                                stats.borrow_mut().redirects += 1;
                                bus.send(ProcessId(target), request.clone());
                                deadline = bus.sleep(TICK * CLIENT_RESEND_TICKS as u32);
                                continue;
                            }
                            hinted = Some(hint);
                        }
                        _ => stats.borrow_mut().frames_rejected += 1,
                    }
                }
                () = (&mut deadline).fuse() => {
                    stats.borrow_mut().resends += 1;
                    target = match hinted.take() {
                        Some(hint) if hint != target => hint,
                        _ => (target + 1) % replicas,
                    };
                    bus.send(ProcessId(target), request.clone());
                    deadline = bus.sleep(TICK * CLIENT_RESEND_TICKS as u32);
                }
            }
        }
    }
}
