//! Virtual timers: sleeps whose deadlines are fixed at creation and that fire only
//! when the simulator moves the clock.
//!
//! Timers are kept sorted by `(deadline, sequence)`, so the first entries are always
//! the next due, and timers due at the same instant fire in the order they were
//! created. A dropped sleep removes its entry (cancellation).
//!
//! The store is one sorted `Vec`, searched by binary search: a run holds a handful of
//! pending timers at a time (each shard's tick sleep and each client's resend or idle
//! deadline; measured: 3 on average and 4 at most on a faults-free partition run, 12 at
//! most with 5 replicas, 2 shards and 4 clients) and makes and drops about three every
//! tick. A `BTreeMap` did the same work through its node code, which was about 3.5% of
//! the profile of a faults-free partition run; the `Vec` runs it in 1.7% fewer
//! instructions. An insert or a removal shifts the entries after it, so the cost grows
//! with the pending count, which a simulated world keeps small.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use super::schedule_hash::Fnv1a64;

/// Schedule-hash tag for a timer firing.
const TAG_TIMER_FIRE: u8 = 2;

/// The clock and every pending timer of one executor.
#[derive(Debug, Default)]
pub(crate) struct Timers {
    now_micros: u64,
    next_sequence: u64,
    /// Pending timers by `(deadline, sequence)`, ascending, with the waker of the task
    /// awaiting each (none until its first poll). Keys are unique: sequences are.
    pending: Vec<((u64, u64), Option<Waker>)>,
    fired_total: u64,
}

impl Timers {
    pub(crate) fn now_micros(&self) -> u64 {
        self.now_micros
    }

    pub(crate) fn pending(&self) -> usize {
        self.pending.len()
    }

    pub(crate) fn fired_total(&self) -> u64 {
        self.fired_total
    }

    /// The earliest pending deadline, if any.
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        self.pending.first().map(|&((deadline, _), _)| deadline)
    }

    fn register(&mut self, deadline_micros: u64) -> (u64, u64) {
        let key = (deadline_micros, self.next_sequence);
        self.next_sequence += 1;
        // The newest sequence sorts after every entry of the same deadline.
        let at = self.pending.partition_point(|(other, _)| *other < key);
        self.pending.insert(at, (key, None));
        key
    }

    /// Where `key`'s entry is, if it is pending.
    fn position(&self, key: (u64, u64)) -> Option<usize> {
        self.pending.binary_search_by(|(other, _)| other.cmp(&key)).ok()
    }

    /// Forget `key`'s entry, if it is pending.
    fn remove(&mut self, key: (u64, u64)) {
        if let Some(at) = self.position(key) {
            self.pending.remove(at);
        }
    }

    /// Move the clock to `now_micros` and return the wakers of every timer now due, in
    /// deadline then creation order, folding each firing into `hash`.
    pub(crate) fn advance(&mut self, now_micros: u64, hash: &mut Fnv1a64, fired: &mut Vec<Waker>) {
        assert!(
            now_micros >= self.now_micros,
            "virtual time went backwards: {} -> {now_micros}",
            self.now_micros
        );
        self.now_micros = now_micros;
        let due = self
            .pending
            .partition_point(|&((deadline, _), _)| deadline <= now_micros);
        for ((_, sequence), waker) in self.pending.drain(..due) {
            hash.event(TAG_TIMER_FIRE, sequence);
            self.fired_total += 1;
            if let Some(waker) = waker {
                fired.push(waker);
            }
        }
    }
}

/// A virtual sleep. Completes once the executor's clock reaches its deadline, which was
/// fixed when the sleep was created.
#[derive(Debug)]
pub struct SimSleep {
    timers: Rc<RefCell<Timers>>,
    key: (u64, u64),
}

impl SimSleep {
    pub(crate) fn new(timers: Rc<RefCell<Timers>>, duration_micros: u64) -> Self {
        let key = {
            let mut state = timers.borrow_mut();
            let deadline = state.now_micros.saturating_add(duration_micros);
            state.register(deadline)
        };
        Self { timers, key }
    }

    /// The virtual instant (microseconds since the simulation started) it completes at.
    pub fn deadline_micros(&self) -> u64 {
        self.key.0
    }
}

impl Future for SimSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut timers = self.timers.borrow_mut();
        if timers.now_micros >= self.key.0 {
            // Due (fired, or created with a deadline already reached): forget the entry
            // so advance() does not count it again.
            timers.remove(self.key);
            return Poll::Ready(());
        }
        match timers.position(self.key) {
            Some(at) => {
                let slot = &mut timers.pending[at].1;
                if !slot.as_ref().is_some_and(|waker| waker.will_wake(cx.waker())) {
                    *slot = Some(cx.waker().clone());
                }
                Poll::Pending
            }
            // Removed only when due, and due is handled above.
            None => unreachable!("a pending sleep lost its timer entry"),
        }
    }
}

impl Drop for SimSleep {
    fn drop(&mut self) {
        // try_borrow_mut: a sleep dropped while the timers are borrowed (never in
        // practice, since wakers run outside the borrow) must not panic in drop.
        if let Ok(mut timers) = self.timers.try_borrow_mut() {
            timers.remove(self.key);
        }
    }
}
