//! A simulated client: one request in flight, resent (same bytes) after
//! [`CLIENT_RESEND_TICKS`] to the next replica in turn, or to the replica a refusal
//! named as primary.
//!
//! What to ask for and how to judge the answer is the [`ClientDriver`]'s business (the
//! workload); this module is only the transport discipline.

use std::cell::RefCell;
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
        bus.send(ProcessId(target), request.clone());
        let mut deadline = bus.sleep(TICK * CLIENT_RESEND_TICKS as u32);
        let mut hinted: Option<u32> = None;
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
                            let mut stats = stats.borrow_mut();
                            match ClientError::decode(reply_body) {
                                Some(ClientError::TransientNotAccepted) => stats.refusals += 1,
                                Some(ClientError::TransientNotCommitted) => stats.not_committed += 1,
                                None => {
                                    stats.frames_rejected += 1;
                                    continue;
                                }
                            }
                            hinted = Some(u32::from(reply.flags) % replicas);
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
