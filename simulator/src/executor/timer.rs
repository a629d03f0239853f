//! Virtual timers: sleeps whose deadlines are fixed at creation and that fire only
//! when the simulator moves the clock.
//!
//! Timers live in a `BTreeMap` keyed by `(deadline, sequence)`, so the first entries
//! are always the next due, and timers due at the same instant fire in the order they
//! were created. A dropped sleep removes its entry (cancellation).

use std::cell::RefCell;
use std::collections::BTreeMap;
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
    pending: BTreeMap<(u64, u64), Option<Waker>>,
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
        self.pending.first_key_value().map(|(&(deadline, _), _)| deadline)
    }

    fn register(&mut self, deadline_micros: u64) -> (u64, u64) {
        let key = (deadline_micros, self.next_sequence);
        self.next_sequence += 1;
        self.pending.insert(key, None);
        key
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
        while let Some(entry) = self.pending.first_entry() {
            let (deadline, sequence) = *entry.key();
            if deadline > now_micros {
                break;
            }
            let waker = entry.remove();
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
            timers.pending.remove(&self.key);
            return Poll::Ready(());
        }
        match timers.pending.get_mut(&self.key) {
            Some(slot) => {
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
            timers.pending.remove(&self.key);
        }
    }
}
