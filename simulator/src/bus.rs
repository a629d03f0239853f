//! `SimBus`: the simulator's implementation of the cluster's `Bus`.
//!
//! Sends go to the process's outbox, which the simulator drains into the packet
//! simulator once per step (so nothing sent in a tick can arrive in that tick). Sleeps
//! are virtual timers, spawns are executor tasks owned by the process (dropped with it
//! on a crash), and the realtime clock is virtual time plus the process's skew.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use cluster::seam::{Bus, ProcessId};

use crate::clock::SimClock;
use crate::executor::{ExecutorHandle, SimSleep};

/// Frames a process sent this tick, in send order.
pub type Outbox = Rc<RefCell<Vec<(ProcessId, Vec<u8>)>>>;

/// One process's view of the simulated world.
#[derive(Clone)]
pub struct SimBus {
    local: ProcessId,
    executor: ExecutorHandle,
    outbox: Outbox,
    clock: Rc<SimClock>,
}

impl SimBus {
    /// A bus for process `local`.
    pub fn new(local: ProcessId, executor: ExecutorHandle, outbox: Outbox, clock: Rc<SimClock>) -> Self {
        Self {
            local,
            executor,
            outbox,
            clock,
        }
    }
}

impl Bus for SimBus {
    type Sleep = SimSleep;

    fn local(&self) -> ProcessId {
        self.local
    }

    fn send(&self, to: ProcessId, frame: Vec<u8>) {
        self.outbox.borrow_mut().push((to, frame));
    }

    fn sleep(&self, duration: Duration) -> SimSleep {
        let micros = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
        self.executor.sleep_micros(micros)
    }

    fn spawn(&self, task: impl Future<Output = ()> + 'static) {
        self.executor.spawn(Some(self.local), task);
    }

    fn realtime_micros(&self) -> u64 {
        self.clock
            .realtime_micros(self.local.index(), self.executor.now_micros())
    }
}
