//! Catch-up work rationed per shard: one shard hosts many groups, and after a long
//! outage every one of them wants to repair or transfer at once. Unrationed, they
//! flood the links and the peer that serves them (part 3's "2/3 live, zero progress").
//!
//! A *repair session* is one group's catching up by repair, from its first request to
//! the moment it has nothing left to ask for (or a round brought nothing: it gives its
//! place back and queues again). A shard starts at most
//! [`REPAIR_SESSIONS_STARTED_PER_TICK_MAX`] sessions a tick and keeps at most
//! [`REPAIR_SESSIONS_IN_FLIGHT_MAX`] running; a group refused waits for the next tick.
//! A shard serves at most [`TRANSFERS_SERVED_PER_SHARD_MAX`] state transfers at once.
//! The metadata group is outside the budget: the partition groups a node hosts follow
//! from it, so it must never wait behind them (see `node::shard`).
//!
//! The shard recounts what runs at the start of every tick (so a group that closes
//! mid-session never leaks a place); within a tick, each start adds one.

use std::cell::Cell;

/// Repair sessions a shard starts per tick: a burst after an outage spreads over
/// ticks instead of every group asking in the same one.
pub const REPAIR_SESSIONS_STARTED_PER_TICK_MAX: u32 = 3;

/// Repair sessions a shard runs at once: each has up to 128 prepares in flight, so
/// eight keep a link busy without overflowing it.
pub const REPAIR_SESSIONS_IN_FLIGHT_MAX: u32 = 8;

/// State transfers a shard serves at once: each pins a copy of a group's state in
/// memory and that group's ring above it.
pub const TRANSFERS_SERVED_PER_SHARD_MAX: u32 = 2;

/// The shared allowance of one shard (every group it hosts holds a reference).
#[derive(Debug, Default)]
pub struct CatchUpBudget {
    started_this_tick: Cell<u32>,
    in_flight: Cell<u32>,
    transfers_served: Cell<u32>,
}

impl CatchUpBudget {
    /// A new tick: `in_flight` repair sessions and `transfers_served` transfers run now.
    pub fn new_tick(&self, in_flight: u32, transfers_served: u32) {
        self.started_this_tick.set(0);
        self.in_flight.set(in_flight);
        self.transfers_served.set(transfers_served);
    }

    /// Take a place for a new repair session, if one is free.
    pub(crate) fn try_start_repair_session(&self) -> bool {
        if self.started_this_tick.get() >= REPAIR_SESSIONS_STARTED_PER_TICK_MAX
            || self.in_flight.get() >= REPAIR_SESSIONS_IN_FLIGHT_MAX
        {
            return false;
        }
        self.started_this_tick.set(self.started_this_tick.get() + 1);
        self.in_flight.set(self.in_flight.get() + 1);
        true
    }

    /// Give back a repair session's place (it ended within this tick).
    pub(crate) fn end_repair_session(&self) {
        self.in_flight.set(self.in_flight.get().saturating_sub(1));
    }

    /// Take a place to serve a new state transfer, if one is free.
    pub(crate) fn try_serve_transfer(&self) -> bool {
        if self.transfers_served.get() >= TRANSFERS_SERVED_PER_SHARD_MAX {
            return false;
        }
        self.transfers_served.set(self.transfers_served.get() + 1);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_start_three_a_tick_and_run_eight_at_once() {
        let budget = CatchUpBudget::default();
        budget.new_tick(0, 0);
        let started = (0..10).filter(|_| budget.try_start_repair_session()).count();
        assert_eq!(started, 3, "three a tick");
        budget.new_tick(7, 0);
        assert!(budget.try_start_repair_session(), "the eighth runs");
        assert!(!budget.try_start_repair_session(), "not a ninth");
        budget.end_repair_session();
        assert!(budget.try_start_repair_session(), "a place given back is taken again");
    }

    #[test]
    fn a_shard_serves_two_transfers_at_once() {
        let budget = CatchUpBudget::default();
        budget.new_tick(0, 1);
        assert!(budget.try_serve_transfer());
        assert!(!budget.try_serve_transfer());
        budget.new_tick(0, 0);
        assert!(budget.try_serve_transfer());
    }
}
