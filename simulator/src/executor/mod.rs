//! `DetExecutor`: a deterministic single-threaded executor for `!Send` futures.
//!
//! What it models: a shard's cooperative scheduler, where tasks switch only at their
//! await points. When several tasks are ready it polls one picked uniformly from its
//! own seeded stream, so the interleaving is varied across seeds yet a pure function of
//! the seed. Only [`DetExecutor::advance_time`] moves its clock.
//!
//! What it does not model: preemption, parallelism, or the cost of a poll (every poll
//! takes zero virtual time).
//!
//! Every poll, timer firing and spawn is folded into an FNV-1a-64 schedule hash, which
//! determinism tests compare between runs. A round of polling (one call to
//! [`DetExecutor::run_until_idle`]) may poll at most [`POLLS_PER_ROUND_MAX`] times; a
//! task that keeps waking itself exhausts it and the run fails with the seed and hash.

mod schedule_hash;
mod timer;
mod wake_queue;

use std::cell::RefCell;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use cluster::seam::ProcessId;

pub use schedule_hash::Fnv1a64;
pub use timer::SimSleep;

/// Give the executor a turn: pending once (waking itself at once), then ready. The
/// task stays ready, so the seeded scheduler decides who runs next; tests and
/// benchmarks use it to make tasks interleave.
pub async fn yield_now() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await
}
use timer::Timers;
use wake_queue::{LocalEntry, WakeQueue};

use crate::rng::SimRng;

/// Polls allowed in one round before the run is declared spinning. A busy simulated
/// cluster polls a few hundred tasks per round; 100,000 leaves two orders of magnitude of
/// headroom while still failing a self-waking task within milliseconds.
pub const POLLS_PER_ROUND_MAX: u64 = 100_000;

/// Schedule-hash tag for a poll.
const TAG_POLL: u8 = 1;
/// Schedule-hash tag for a spawn.
const TAG_SPAWN: u8 = 3;
/// Schedule-hash tag for an abort of a process's tasks.
const TAG_ABORT: u8 = 4;
/// Schedule-hash tag for a pause of a process's tasks.
const TAG_PAUSE: u8 = 5;
/// Schedule-hash tag for the end of a pause.
const TAG_RESUME: u8 = 6;

/// A task's identity: slab index plus a generation, so a waker that outlives its task
/// (or a reused slot) can never wake the wrong task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TaskId {
    index: u32,
    generation: u32,
}

impl TaskId {
    fn packed(self) -> u64 {
        (u64::from(self.generation) << 32) | u64::from(self.index)
    }
}

/// The run cannot continue: a scheduling invariant failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecutorError {
    /// A round polled [`POLLS_PER_ROUND_MAX`] times without going idle: some task
    /// keeps itself (or another) ready forever.
    PollBudgetExhausted {
        /// The executor's seed.
        seed: u64,
        /// The schedule hash when the budget ran out.
        schedule_hash: u64,
        /// Polls made in the round.
        polls: u64,
    },
}

impl fmt::Display for ExecutorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecutorError::PollBudgetExhausted {
                seed,
                schedule_hash,
                polls,
            } => write!(
                f,
                "poll budget exhausted: {polls} polls in one round without going idle \
                 (a task keeps waking itself); executor seed={seed:#x} schedule_hash={schedule_hash:#018x}"
            ),
        }
    }
}

impl std::error::Error for ExecutorError {}

/// What one round of polling did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoundStats {
    /// Polls made.
    pub polls: u64,
    /// Tasks that completed.
    pub completed: u64,
}

/// A task's waker: every wake goes into its executor's [`WakeQueue`]. A task already
/// ready is not queued twice: the collect skips it (see `Slot::queued`), so a wake costs
/// no atomic operation.
struct TaskWaker {
    id: TaskId,
    queue: Arc<WakeQueue>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.queue.push(self.id);
    }
}

type BoxedTask = Pin<Box<dyn Future<Output = ()>>>;

struct Slot {
    generation: u32,
    /// `None` while free, and while the task is being polled.
    task: Option<BoxedTask>,
    owner: Option<ProcessId>,
    /// Whether the task is in `ready` or `parked`, so further wakes before its poll add
    /// nothing. Cleared when it is picked: a wake during its poll queues it again.
    queued: bool,
    /// The task's `Waker`, made once at spawn and lent to each poll (`None` while the
    /// task is being polled): a clone and a drop per poll were two atomic
    /// reference-count updates.
    poll_waker: Option<Waker>,
    /// Set while the task is out of the slot being polled.
    polling: bool,
}

struct State {
    seed: u64,
    rng: SimRng,
    hash: Fnv1a64,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Ready tasks in the order they became ready; the pick removes without reordering.
    /// Never a task of a paused owner.
    ready: Vec<TaskId>,
    /// Owners whose tasks are not polled for now (a process blocked in a slow call).
    paused: Vec<ProcessId>,
    /// Ready tasks of paused owners, in the order they became ready.
    parked: Vec<TaskId>,
    live: usize,
    polls_total: u64,
    spawns_total: u64,
}

struct Shared {
    state: RefCell<State>,
    timers: Rc<RefCell<Timers>>,
    woken: Arc<WakeQueue>,
}

/// The deterministic executor. Cloning an [`ExecutorHandle`] from it lets tasks spawn
/// and sleep.
pub struct DetExecutor {
    shared: Rc<Shared>,
    /// Reused buffers, so a round allocates nothing in the steady state.
    woken_scratch: Vec<TaskId>,
    fired_scratch: Vec<Waker>,
    /// Keeps the wake queue's local part on this thread while the executor lives.
    _local_wakes: LocalEntry,
}

/// A cheap handle for spawning tasks and creating sleeps on a [`DetExecutor`].
#[derive(Clone)]
pub struct ExecutorHandle {
    shared: Rc<Shared>,
}

impl DetExecutor {
    /// Reseed the choice of the next ready task for a branch of the run (see
    /// [`crate::timeline`]).
    pub fn branch(&mut self, key: crate::timeline::BranchKey) {
        self.shared.state.borrow_mut().rng.branch(key);
    }

    /// A new executor whose task picks are drawn from `seed`. Its clock starts at 0.
    pub fn new(seed: u64) -> Self {
        let (woken, local_wakes) = WakeQueue::new();
        let shared = Rc::new(Shared {
            state: RefCell::new(State {
                seed,
                rng: SimRng::new(seed),
                hash: Fnv1a64::default(),
                slots: Vec::new(),
                free: Vec::new(),
                ready: Vec::new(),
                paused: Vec::new(),
                parked: Vec::new(),
                live: 0,
                polls_total: 0,
                spawns_total: 0,
            }),
            timers: Rc::new(RefCell::new(Timers::default())),
            woken: Arc::new(woken),
        });
        Self {
            shared,
            woken_scratch: Vec::new(),
            fired_scratch: Vec::new(),
            _local_wakes: local_wakes,
        }
    }

    /// A handle for spawning and sleeping.
    pub fn handle(&self) -> ExecutorHandle {
        ExecutorHandle {
            shared: self.shared.clone(),
        }
    }

    /// Spawn a task owned by `owner` (aborted with it on a crash), or by nobody.
    pub fn spawn(&self, owner: Option<ProcessId>, task: impl Future<Output = ()> + 'static) -> TaskId {
        self.shared.spawn(owner, Box::pin(task))
    }

    /// Virtual microseconds since the executor was created.
    pub fn now_micros(&self) -> u64 {
        self.shared.timers.borrow().now_micros()
    }

    /// Move the clock forward to `now_micros` and wake every timer now due (in deadline,
    /// then creation, order). Does not poll; call [`DetExecutor::run_until_idle`] next.
    pub fn advance_time(&mut self, now_micros: u64) {
        let mut fired = std::mem::take(&mut self.fired_scratch);
        {
            let mut state = self.shared.state.borrow_mut();
            self.shared
                .timers
                .borrow_mut()
                .advance(now_micros, &mut state.hash, &mut fired);
        }
        // Wake outside every borrow: a waker only queues, but keep the rule simple.
        for waker in fired.drain(..) {
            waker.wake();
        }
        self.fired_scratch = fired;
    }

    /// Poll ready tasks, one seeded pick at a time, until none is ready.
    pub fn run_until_idle(&mut self) -> Result<RoundStats, ExecutorError> {
        let mut round = RoundStats::default();
        loop {
            self.collect_woken();
            let picked = {
                let mut state = self.shared.state.borrow_mut();
                let ready_count = state.ready.len();
                if ready_count == 0 {
                    return Ok(round);
                }
                if round.polls >= POLLS_PER_ROUND_MAX {
                    return Err(ExecutorError::PollBudgetExhausted {
                        seed: state.seed,
                        schedule_hash: state.hash.finish(),
                        polls: round.polls,
                    });
                }
                // One ready task needs no draw; the pick is still a pure function of the seed.
                let position = if ready_count == 1 {
                    0
                } else {
                    state.rng.index(ready_count)
                };
                state.ready.remove(position)
            };
            round.polls += 1;
            if self.poll_task(picked) {
                round.completed += 1;
            }
        }
    }

    /// Drop every task owned by `owner` where it stands (mid-await), running their
    /// destructors without polling them again. Returns how many were dropped.
    pub fn abort_owner(&mut self, owner: ProcessId) -> usize {
        let mut aborted = 0;
        // Destructors may spawn more tasks for the same owner (a drop guard that
        // schedules cleanup); loop until none is left.
        loop {
            let doomed: Vec<BoxedTask> = {
                let mut state = self.shared.state.borrow_mut();
                state.hash.event(TAG_ABORT, u64::from(owner.0));
                let mut doomed = Vec::new();
                let mut freed = Vec::new();
                for (index, slot) in state.slots.iter_mut().enumerate() {
                    if slot.owner != Some(owner) || slot.task.is_none() {
                        continue;
                    }
                    assert!(!slot.polling, "abort_owner called from inside a poll of {owner}");
                    doomed.extend(slot.task.take());
                    slot.owner = None;
                    slot.queued = false;
                    slot.poll_waker = None;
                    slot.generation = slot.generation.wrapping_add(1);
                    // Slab indices are u32 by construction (see Shared::spawn).
                    freed.push(index as u32);
                }
                let generations: Vec<(u32, u32)> = freed
                    .iter()
                    .map(|&index| (index, state.slots[index as usize].generation))
                    .collect();
                let is_aborted = |id: &TaskId| {
                    generations
                        .iter()
                        .any(|&(index, generation)| id.index == index && id.generation != generation)
                };
                state.ready.retain(|id| !is_aborted(id));
                state.parked.retain(|id| !is_aborted(id));
                // A process that ends is no longer blocked in anything.
                state.paused.retain(|&paused| paused != owner);
                state.live -= freed.len();
                state.free.extend(freed);
                doomed
            };
            if doomed.is_empty() {
                return aborted;
            }
            aborted += doomed.len();
            drop(doomed);
        }
    }

    /// Stop polling `owner`'s tasks until [`DetExecutor::resume_owner`]: they stay
    /// alive, their wakes and timers are kept, and they run again, in the order they
    /// became ready, once resumed. Models a process whose thread is blocked (in a slow
    /// disk call): nothing it would do happens until the call returns.
    pub fn pause_owner(&mut self, owner: ProcessId) {
        self.collect_woken();
        let mut state = self.shared.state.borrow_mut();
        if state.paused.contains(&owner) {
            return;
        }
        state.hash.event(TAG_PAUSE, u64::from(owner.0));
        state.paused.push(owner);
        let ready = std::mem::take(&mut state.ready);
        for id in ready {
            if state.slots[id.index as usize].owner == Some(owner) {
                state.parked.push(id);
            } else {
                state.ready.push(id);
            }
        }
    }

    /// Poll `owner`'s tasks again (nothing if it was not paused).
    pub fn resume_owner(&mut self, owner: ProcessId) {
        let mut state = self.shared.state.borrow_mut();
        let Some(position) = state.paused.iter().position(|&paused| paused == owner) else {
            return;
        };
        state.hash.event(TAG_RESUME, u64::from(owner.0));
        state.paused.remove(position);
        let parked = std::mem::take(&mut state.parked);
        for id in parked {
            if state.slots[id.index as usize].owner == Some(owner) {
                state.ready.push(id);
            } else {
                state.parked.push(id);
            }
        }
    }

    /// Whether `owner`'s tasks are paused.
    pub fn is_paused(&self, owner: ProcessId) -> bool {
        self.shared.state.borrow().paused.contains(&owner)
    }

    /// Live tasks owned by `owner`.
    pub fn tasks_of(&self, owner: ProcessId) -> usize {
        let state = self.shared.state.borrow();
        state
            .slots
            .iter()
            .filter(|slot| slot.owner == Some(owner) && (slot.task.is_some() || slot.polling))
            .count()
    }

    /// Live (spawned, not completed, not aborted) tasks.
    pub fn live_tasks(&self) -> usize {
        self.shared.state.borrow().live
    }

    /// Timers not yet fired or dropped.
    pub fn pending_timers(&self) -> usize {
        self.shared.timers.borrow().pending()
    }

    /// The earliest pending timer deadline, if any.
    pub fn next_deadline_micros(&self) -> Option<u64> {
        self.shared.timers.borrow().next_deadline()
    }

    /// The schedule hash so far.
    pub fn schedule_hash(&self) -> u64 {
        self.shared.state.borrow().hash.finish()
    }

    /// The seed the task picks are drawn from.
    pub fn seed(&self) -> u64 {
        self.shared.state.borrow().seed
    }

    /// Totals since creation: (polls, spawns, timer firings).
    pub fn totals(&self) -> (u64, u64, u64) {
        let state = self.shared.state.borrow();
        (
            state.polls_total,
            state.spawns_total,
            self.shared.timers.borrow().fired_total(),
        )
    }

    fn collect_woken(&mut self) {
        self.shared.woken.collect(&mut self.woken_scratch);
        if self.woken_scratch.is_empty() {
            return;
        }
        let mut state = self.shared.state.borrow_mut();
        let state = &mut *state;
        for id in self.woken_scratch.drain(..) {
            let Some(slot) = state.slots.get_mut(id.index as usize) else {
                continue;
            };
            // A stale wake (task finished or aborted, slot maybe reused) is ignored, and
            // so is a wake of a task already ready.
            if slot.generation != id.generation || (slot.task.is_none() && !slot.polling) || slot.queued {
                continue;
            }
            slot.queued = true;
            if slot.owner.is_some_and(|owner| state.paused.contains(&owner)) {
                state.parked.push(id);
            } else {
                state.ready.push(id);
            }
        }
    }

    /// Poll one task; returns whether it completed.
    fn poll_task(&mut self, id: TaskId) -> bool {
        let (mut task, waker) = {
            let mut state = self.shared.state.borrow_mut();
            state.hash.event(TAG_POLL, id.packed());
            state.polls_total += 1;
            let slot = &mut state.slots[id.index as usize];
            debug_assert_eq!(slot.generation, id.generation, "ready list held a stale task");
            let (Some(task), Some(waker)) = (slot.task.take(), slot.poll_waker.take()) else {
                unreachable!("a ready task has no future or waker");
            };
            debug_assert!(slot.queued, "a ready task is marked queued");
            slot.polling = true;
            // Clear before polling: a wake during the poll must queue the task again.
            slot.queued = false;
            (task, waker)
        };
        let mut cx = Context::from_waker(&waker);
        let outcome = task.as_mut().poll(&mut cx);
        let finished = {
            let mut state = self.shared.state.borrow_mut();
            let slot = &mut state.slots[id.index as usize];
            slot.polling = false;
            match outcome {
                Poll::Ready(()) => {
                    slot.owner = None;
                    slot.generation = slot.generation.wrapping_add(1);
                    state.free.push(id.index);
                    state.live -= 1;
                    Some(task)
                }
                Poll::Pending => {
                    slot.task = Some(task);
                    slot.poll_waker = Some(waker);
                    None
                }
            }
        };
        // The finished future is dropped outside the borrow: its destructor may spawn.
        finished.is_some()
    }
}

impl Drop for DetExecutor {
    /// Drop every task still alive. Tasks usually hold handles back to the executor (a
    /// bus that spawns and sleeps), so without this the executor and every task would
    /// keep each other alive: a whole simulated world leaked per run, which a campaign
    /// of thousands of runs turns into gigabytes.
    fn drop(&mut self) {
        loop {
            let tasks: Vec<BoxedTask> = {
                let Ok(mut state) = self.shared.state.try_borrow_mut() else {
                    return;
                };
                state.ready.clear();
                state.parked.clear();
                state.live = 0;
                state.slots.iter_mut().filter_map(|slot| slot.task.take()).collect()
            };
            if tasks.is_empty() {
                return;
            }
            // Outside the borrow: a destructor may spawn, and that task is dropped on
            // the next pass.
            drop(tasks);
        }
    }
}

impl Shared {
    fn spawn(self: &Rc<Self>, owner: Option<ProcessId>, task: BoxedTask) -> TaskId {
        let mut state = self.state.borrow_mut();
        let index = match state.free.pop() {
            Some(index) => index,
            None => {
                let index = u32::try_from(state.slots.len()).expect("more than u32::MAX live tasks");
                state.slots.push(Slot {
                    generation: 0,
                    task: None,
                    owner: None,
                    queued: false,
                    poll_waker: None,
                    polling: false,
                });
                index
            }
        };
        let slot = &mut state.slots[index as usize];
        let id = TaskId {
            index,
            generation: slot.generation,
        };
        slot.task = Some(task);
        slot.owner = owner;
        // A new task starts ready, so it starts queued: wakes before its first poll
        // must not queue it twice.
        slot.queued = true;
        slot.poll_waker = Some(Waker::from(Arc::new(TaskWaker {
            id,
            queue: self.woken.clone(),
        })));
        if owner.is_some_and(|owner| state.paused.contains(&owner)) {
            state.parked.push(id);
        } else {
            state.ready.push(id);
        }
        state.live += 1;
        state.spawns_total += 1;
        let owner_bits = owner.map_or(u64::from(u32::MAX), |owner| u64::from(owner.0));
        state.hash.event(TAG_SPAWN, id.packed() ^ (owner_bits << 48));
        id
    }
}

impl ExecutorHandle {
    /// Spawn a task owned by `owner`. Spawned from inside a poll, it becomes ready now
    /// and can be picked from the next turn on; it is never polled inline.
    pub fn spawn(&self, owner: Option<ProcessId>, task: impl Future<Output = ()> + 'static) -> TaskId {
        self.shared.spawn(owner, Box::pin(task))
    }

    /// A sleep whose deadline is now + `duration_micros`, fixed at this call.
    pub fn sleep_micros(&self, duration_micros: u64) -> SimSleep {
        SimSleep::new(self.shared.timers.clone(), duration_micros)
    }

    /// Virtual microseconds since the executor was created.
    pub fn now_micros(&self) -> u64 {
        self.shared.timers.borrow().now_micros()
    }
}

#[cfg(test)]
mod tests;
