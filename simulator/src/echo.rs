//! The echo service: the smallest workload that exercises every foundation piece.
//!
//! Replicas run a message pump shaped like the cluster's (an inbox arm and a tick arm
//! under `select_biased!`), answer each client request with an echo of its body, and
//! send each other a heartbeat every [`HEARTBEAT_TICKS`]. Clients keep one request in
//! flight and resend the original bytes to the next replica in turn after
//! [`CLIENT_RESEND_TICKS`]. Every frame goes through the real wire envelope, so the
//! network's corruption fault must be caught by the receiver's checksum.
//!
//! It is written against the `Bus` trait only, so the same code runs on the simulator
//! and on the production runtime. It is a harness for the seam, the executor and the
//! packet simulator until the consensus workload replaces it as the main job; it
//! models no replication.

use std::cell::RefCell;
use std::rc::Rc;

use futures::{FutureExt, select_biased};

use cluster::seam::{Bus, Inbox, ProcessId, TICK};
use cluster::wire::{self, Command};

/// Ticks between heartbeats a replica sends each peer; the cluster's commit broadcast
/// interval, so replica links carry a realistic background load.
pub const HEARTBEAT_TICKS: u64 = 50;
/// Ticks a client waits for a reply before resending to the next replica; the
/// workload's resend interval from the design (four heartbeats).
pub const CLIENT_RESEND_TICKS: u64 = 200;

/// What the echo processes observed, shared with the harness that judges the run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EchoStats {
    /// Distinct requests a client issued (resends not counted).
    pub requests: u64,
    /// Resends of a request whose reply had not arrived.
    pub resends: u64,
    /// Replies that matched the client's outstanding request and echoed it exactly.
    pub replies_matched: u64,
    /// Replies for an older request (a duplicate or a late answer to a resend).
    pub replies_stale: u64,
    /// Replies whose body did not echo the request they claim to answer (a real bug).
    pub replies_wrong: u64,
    /// Heartbeats received by replicas.
    pub heartbeats: u64,
    /// Frames rejected by the wire envelope (bad checksum, size, truncation).
    pub frames_rejected: u64,
    /// Frames whose command a process does not serve (a routing bug).
    pub frames_unexpected: u64,
}

/// Shared, single-threaded handle to the stats.
pub type SharedEchoStats = Rc<RefCell<EchoStats>>;

/// A replica's pump. Runs until its process crashes.
pub async fn replica<B: Bus>(bus: B, inbox: Inbox, replicas: u32, stats: SharedEchoStats) {
    let mut ticks: u64 = 0;
    let mut tick = bus.sleep(TICK);
    loop {
        select_biased! {
            (from, frame) = inbox.recv().fuse() => {
                let Ok((header, body)) = wire::open(&frame) else {
                    stats.borrow_mut().frames_rejected += 1;
                    continue;
                };
                match header.command {
                    Command::EchoRequest => bus.send(from, wire::seal(Command::EchoReply, body)),
                    Command::EchoHeartbeat => stats.borrow_mut().heartbeats += 1,
                    _ => stats.borrow_mut().frames_unexpected += 1,
                }
            }
            () = (&mut tick).fuse() => {
                ticks += 1;
                tick = bus.sleep(TICK);
                if ticks.is_multiple_of(HEARTBEAT_TICKS) {
                    for peer in (0..replicas).map(ProcessId).filter(|&peer| peer != bus.local()) {
                        bus.send(peer, wire::seal(Command::EchoHeartbeat, &ticks.to_le_bytes()));
                    }
                }
            }
        }
    }
}

/// A client: one request in flight, resent to the next replica after a timeout.
pub async fn client<B: Bus>(bus: B, inbox: Inbox, replicas: u32, stats: SharedEchoStats) {
    let client_id = u64::from(bus.local().0);
    let mut request_number: u64 = 0;
    let mut target: u32 = 0;
    loop {
        request_number += 1;
        stats.borrow_mut().requests += 1;
        let mut body = client_id.to_le_bytes().to_vec();
        body.extend_from_slice(&request_number.to_le_bytes());
        // Vary the size so the wire sees frames of many lengths.
        body.resize(16 + (request_number % 48) as usize, 0xA5);
        // The original bytes are kept and resent unchanged.
        let request = wire::seal(Command::EchoRequest, &body);
        bus.send(ProcessId(target), request.clone());
        let mut deadline = bus.sleep(TICK * CLIENT_RESEND_TICKS as u32);
        loop {
            select_biased! {
                (_, frame) = inbox.recv().fuse() => {
                    let mut stats = stats.borrow_mut();
                    match wire::open(&frame) {
                        Err(_) => stats.frames_rejected += 1,
                        Ok((header, reply)) if header.command == Command::EchoReply && reply == body.as_slice() => {
                            stats.replies_matched += 1;
                            break;
                        }
                        Ok((header, reply)) if header.command == Command::EchoReply => {
                            let answered = reply.get(8..16).map(|n| u64::from_le_bytes(n.try_into().unwrap_or([0; 8])));
                            if answered.is_some_and(|n| n < request_number) && reply.get(..8) == Some(&body[..8]) {
                                stats.replies_stale += 1;
                            } else {
                                stats.replies_wrong += 1;
                            }
                        }
                        Ok(_) => stats.frames_unexpected += 1,
                    }
                }
                () = (&mut deadline).fuse() => {
                    stats.borrow_mut().resends += 1;
                    target = (target + 1) % replicas;
                    bus.send(ProcessId(target), request.clone());
                    deadline = bus.sleep(TICK * CLIENT_RESEND_TICKS as u32);
                }
            }
        }
    }
}
