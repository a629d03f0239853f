//! Where a task's wakes go until [`super::DetExecutor`] collects them as ready tasks.
//!
//! What it models: nothing of the simulated world; it is the executor's plumbing. A
//! `Waker` must be `Send + Sync`, so the queue used to be a vector behind a mutex: a
//! lock and an unlock (two atomic read-modify-writes) on every wake and on every
//! collect, even though every wake in a simulation runs on the executor's own thread
//! (cluster code has no threads, and a campaign builds and runs each world on one worker
//! thread). Measured on a faults-free partition run: the lock was 80% of the collect's
//! time and half of the wake's, together about 4% of the run.
//!
//! So a queue has two parts:
//! - the local part, in a table private to the thread that made the queue (a
//!   `thread_local`, plain memory): a wake that runs on that thread finds the queue's
//!   entry there and pushes without an atomic operation;
//! - the remote part, a mutex-guarded list flagged by an atomic, for a wake from any
//!   other thread, which does not find the entry in its own thread's table. None happens
//!   in the simulator today; the part exists so that such a wake is delivered, never lost.
//!
//! Order: the local part keeps the order of the wakes, which is all the executor's
//! schedule depends on. A collect takes the local part first, then the remote part;
//! the order between the two parts is that of threads racing, so a remote wake has no
//! deterministic place in a schedule (and none happens).
//!
//! Lifetime: the local entry is made by [`WakeQueue::new`] and removed when the queue's
//! [`LocalEntry`] guard (held by the executor, which never leaves its thread) drops. A
//! waker that outlives its executor then finds no entry and pushes to the remote part,
//! which nothing collects: the wake of a task that no longer exists, ignored as it was
//! before.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use super::TaskId;

/// Queue identities, unique in the process: a table entry is found by identity, never
/// by address, so a queue made where a dropped one lived cannot receive its wakes.
static NEXT_QUEUE_ID: AtomicU64 = AtomicU64::new(1);

/// One queue's local part.
struct LocalWakes {
    queue_id: u64,
    woken: Vec<TaskId>,
}

thread_local! {
    /// The local parts of the queues made on this thread and not yet dropped (one per
    /// live executor: one in a run, a few in tests that hold several worlds at once).
    static LOCAL: RefCell<Vec<LocalWakes>> = const { RefCell::new(Vec::new()) };
}

/// A wake queue, shared by the executor and every waker of its tasks.
pub(super) struct WakeQueue {
    id: u64,
    /// Set (after the push) when the remote part may hold a wake.
    remote_pending: AtomicBool,
    remote: Mutex<Vec<TaskId>>,
}

/// Removes a queue's local part from its thread's table when dropped. `!Send` (it holds
/// a raw marker), so it drops on the thread that made it.
pub(super) struct LocalEntry {
    queue_id: u64,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl WakeQueue {
    /// A new queue whose local part lives on the calling thread, and the guard that
    /// removes that part.
    pub(super) fn new() -> (Self, LocalEntry) {
        let id = NEXT_QUEUE_ID.fetch_add(1, Ordering::Relaxed);
        LOCAL.with(|table| {
            table.borrow_mut().push(LocalWakes {
                queue_id: id,
                woken: Vec::new(),
            });
        });
        let queue = Self {
            id,
            remote_pending: AtomicBool::new(false),
            remote: Mutex::new(Vec::new()),
        };
        let entry = LocalEntry {
            queue_id: id,
            _not_send: std::marker::PhantomData,
        };
        (queue, entry)
    }

    /// Queue `task` as woken.
    #[inline]
    pub(super) fn push(&self, task: TaskId) {
        let queued_locally = LOCAL
            .try_with(|table| {
                // A wake from inside a collect cannot happen (a collect runs no task
                // code); if the table is busy anyway, the remote part takes the wake.
                let Ok(mut table) = table.try_borrow_mut() else {
                    return false;
                };
                match table.iter_mut().find(|local| local.queue_id == self.id) {
                    Some(local) => {
                        local.woken.push(task);
                        true
                    }
                    None => false,
                }
            })
            // The thread's table is already destroyed (a wake from a destructor at
            // thread exit): the remote part takes it.
            .unwrap_or(false);
        if !queued_locally {
            self.remote.lock().unwrap_or_else(PoisonError::into_inner).push(task);
            self.remote_pending.store(true, Ordering::Release);
        }
    }

    /// Move every queued wake into `into`, which must be empty (local ones first, in wake
    /// order). Runs on the queue's own thread.
    #[inline]
    pub(super) fn collect(&self, into: &mut Vec<TaskId>) {
        debug_assert!(into.is_empty(), "a collect starts from an empty buffer");
        LOCAL.with(|table| {
            let mut table = table.borrow_mut();
            let local = table
                .iter_mut()
                .find(|local| local.queue_id == self.id)
                .expect("a wake queue is collected on the thread that made it, while its entry lives");
            // Swap buffers: both keep their capacity, nothing is copied.
            std::mem::swap(&mut local.woken, into);
        });
        if self.remote_pending.load(Ordering::Acquire) {
            self.remote_pending.store(false, Ordering::Relaxed);
            into.append(&mut self.remote.lock().unwrap_or_else(PoisonError::into_inner));
        }
    }
}

impl Drop for LocalEntry {
    fn drop(&mut self) {
        // At thread exit the table may already be gone, and the entry with it.
        let _ = LOCAL.try_with(|table| {
            if let Ok(mut table) = table.try_borrow_mut() {
                table.retain(|local| local.queue_id != self.queue_id);
            }
        });
    }
}
