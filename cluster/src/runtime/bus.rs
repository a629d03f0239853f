//! [`TokioBus`]: the production [`Bus`].

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

use crate::seam::{Bus, Inbox, InboxPush, ProcessId};

/// Where a [`TokioBus`] hands frames it sends.
pub trait Transport {
    /// Carry `frame` from `from` to `to`. Best effort, like the network it models.
    fn send(&self, from: ProcessId, to: ProcessId, frame: Vec<u8>);
}

/// An in-process transport: delivers straight into the inbox of a process registered
/// on the same thread. Frames to an unregistered process, or to a full inbox, are
/// dropped and counted.
#[derive(Clone, Default)]
pub struct LocalRouter {
    state: Rc<RefCell<RouterState>>,
}

#[derive(Default)]
struct RouterState {
    inboxes: BTreeMap<ProcessId, Inbox>,
    dropped_unroutable: u64,
    dropped_full: u64,
}

impl LocalRouter {
    /// A router with no processes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Register `process`, returning its inbox (a process registered twice keeps one inbox).
    pub fn register(&self, process: ProcessId) -> Inbox {
        self.state.borrow_mut().inboxes.entry(process).or_default().clone()
    }

    /// Frames dropped because no process with that id was registered.
    pub fn dropped_unroutable(&self) -> u64 {
        self.state.borrow().dropped_unroutable
    }

    /// Frames dropped because the receiver's inbox was full.
    pub fn dropped_full(&self) -> u64 {
        self.state.borrow().dropped_full
    }
}

impl Transport for LocalRouter {
    fn send(&self, from: ProcessId, to: ProcessId, frame: Vec<u8>) {
        let inbox = self.state.borrow().inboxes.get(&to).cloned();
        match inbox {
            Some(inbox) => {
                if inbox.push(from, frame) == InboxPush::Full {
                    self.state.borrow_mut().dropped_full += 1;
                }
            }
            None => self.state.borrow_mut().dropped_unroutable += 1,
        }
    }
}

/// The production bus: tokio's timers and `spawn_local`, the system clock, and a
/// [`Transport`] for frames. Must be used inside a `LocalSet` (see [`run_local`]).
#[derive(Clone)]
pub struct TokioBus {
    local: ProcessId,
    transport: Rc<dyn Transport>,
}

impl TokioBus {
    /// A bus for `local` sending through `transport`.
    pub fn new(local: ProcessId, transport: Rc<dyn Transport>) -> Self {
        Self { local, transport }
    }
}

impl Bus for TokioBus {
    type Sleep = Pin<Box<tokio::time::Sleep>>;

    fn local(&self) -> ProcessId {
        self.local
    }

    fn send(&self, to: ProcessId, frame: Vec<u8>) {
        self.transport.send(self.local, to, frame);
    }

    fn sleep(&self, duration: Duration) -> Self::Sleep {
        // tokio fixes the deadline here, at creation, as the seam requires.
        Box::pin(tokio::time::sleep(duration))
    }

    fn spawn(&self, task: impl Future<Output = ()> + 'static) {
        // Detached on purpose: shard tasks end with the shard's LocalSet.
        drop(tokio::task::spawn_local(task));
    }

    fn realtime_micros(&self) -> u64 {
        super::clock::realtime_micros()
    }
}

/// Run `future` to completion on a fresh current-thread runtime with a `LocalSet`,
/// the way a production shard thread runs. Errors if the runtime cannot be built.
pub fn run_local<F: Future>(future: F) -> std::io::Result<F::Output> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
    let local = tokio::task::LocalSet::new();
    Ok(local.block_on(&runtime, future))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn two_processes_exchange_frames_and_tasks_and_timers_run() {
        let outcome = run_local(async {
            let router = LocalRouter::new();
            let inbox_a = router.register(ProcessId(0));
            let inbox_b = router.register(ProcessId(1));
            let transport: Rc<dyn Transport> = Rc::new(router.clone());
            let bus_a = TokioBus::new(ProcessId(0), transport.clone());
            let bus_b = TokioBus::new(ProcessId(1), transport);

            // B echoes whatever it receives, from a spawned task.
            let echoed = Rc::new(Cell::new(0u32));
            let echoed_in_task = echoed.clone();
            let bus_b_task = bus_b.clone();
            bus_b.spawn(async move {
                let (from, frame) = inbox_b.recv().await;
                bus_b_task.send(from, frame);
                echoed_in_task.set(echoed_in_task.get() + 1);
            });

            bus_a.send(ProcessId(1), b"ping".to_vec());
            bus_a.send(ProcessId(9), b"nobody".to_vec());
            let (from, frame) = inbox_a.recv().await;
            bus_a.sleep(Duration::from_millis(1)).await;
            (
                from,
                frame,
                echoed.get(),
                router.dropped_unroutable(),
                bus_a.realtime_micros(),
            )
        })
        .expect("runtime builds");
        let (from, frame, echoed, unroutable, now) = outcome;
        assert_eq!(from, ProcessId(1));
        assert_eq!(frame, b"ping");
        assert_eq!(echoed, 1);
        assert_eq!(unroutable, 1);
        // 2020-01-01 in microseconds: the system clock is plausible.
        assert!(now > 1_577_836_800_000_000, "realtime_micros {now}");
    }
}
