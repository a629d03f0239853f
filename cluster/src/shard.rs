//! The shard message pump: the one loop that feeds a replica from its inbox and its
//! tick timer, and hands what the replica sends to the bus.
//!
//! The inbox arm comes first (`select_biased!`), so a burst of frames is drained
//! before the tick; the tick timer is re-armed only after the tick's work is done, so
//! in production a tick is 10 ms plus the work, never less. The replica is shared
//! through `Rc<RefCell<_>>` so checks can read it between steps; the pump never holds
//! the borrow across an await.

use std::cell::RefCell;
use std::rc::Rc;

use futures::{FutureExt, select_biased};

use crate::seam::{Bus, Inbox, TICK};
use crate::vsr::{Replica, ReplicaStore, StateMachine};

/// Run `replica` on `bus` until the process stops (the task is dropped).
pub async fn run_replica<B, S, T>(bus: B, inbox: Inbox, replica: Rc<RefCell<Replica<S, T>>>)
where
    B: Bus,
    S: StateMachine,
    T: ReplicaStore,
{
    let mut tick = bus.sleep(TICK);
    loop {
        select_biased! {
            (from, frame) = inbox.recv().fuse() => {
                let mut replica = replica.borrow_mut();
                replica.on_frame(from, &frame, bus.realtime_micros());
                for outgoing in replica.drain_outbox() {
                    bus.send(outgoing.to, outgoing.frame);
                }
            }
            peer = inbox.closed().fuse() => {
                if let Ok(peer) = u8::try_from(peer.0) {
                    replica.borrow_mut().on_peer_closed(peer, bus.realtime_micros());
                }
            }
            () = (&mut tick).fuse() => {
                let mut replica = replica.borrow_mut();
                replica.tick(bus.realtime_micros());
                for outgoing in replica.drain_outbox() {
                    bus.send(outgoing.to, outgoing.frame);
                }
                drop(replica);
                tick = bus.sleep(TICK);
            }
        }
    }
}
