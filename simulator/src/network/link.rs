//! One directed link `(from, to)`: a bounded queue of in-flight packets, each with
//! the tick it comes due, plus the path's clog and its command filter.
//!
//! Models: bounded buffering (a full link evicts a random queued packet), arbitrary
//! reordering among packets that are due (the simulator picks a random ready one at
//! a time), a clog that holds every packet on the path until it ends, and a
//! per-link allow-set of command bytes.
//!
//! Does not model: bandwidth, serialization time or packet sizes (capacity counts
//! packets, not bytes), FIFO order (a link never preserves it on purpose), or any
//! coupling between the two directions of a pair (each direction is its own link).

use crate::rng::SimRng;

/// An allow-set over the 256 command bytes, checked when a packet comes due.
///
/// Built by chaining: `CommandFilter::allow_all().block(7)` lets everything but
/// command 7 through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CommandFilter {
    bits: [u64; 4],
}

impl CommandFilter {
    /// Every command passes.
    pub const fn allow_all() -> Self {
        Self { bits: [u64::MAX; 4] }
    }

    /// No command passes.
    pub const fn block_all() -> Self {
        Self { bits: [0; 4] }
    }

    /// This filter with `command` allowed.
    #[must_use]
    pub const fn allow(mut self, command: u8) -> Self {
        self.bits[(command >> 6) as usize] |= 1 << (command & 63);
        self
    }

    /// This filter with `command` blocked.
    #[must_use]
    pub const fn block(mut self, command: u8) -> Self {
        self.bits[(command >> 6) as usize] &= !(1 << (command & 63));
        self
    }

    /// Whether `command` passes.
    #[inline]
    pub const fn allows(&self, command: u8) -> bool {
        self.bits[(command >> 6) as usize] & (1 << (command & 63)) != 0
    }
}

impl Default for CommandFilter {
    /// Links start open: every command passes.
    fn default() -> Self {
        Self::allow_all()
    }
}

/// A packet in flight and the tick at which it may be delivered.
#[derive(Debug)]
pub(crate) struct Packet<P> {
    pub(crate) due: u64,
    pub(crate) payload: P,
}

/// The state of one directed link.
#[derive(Debug)]
pub(crate) struct Link<P> {
    /// Packets in flight, in no meaningful order.
    pub(crate) queue: Vec<Packet<P>>,
    /// The path is clogged while `tick < clogged_until`.
    pub(crate) clogged_until: u64,
    /// Commands this link carries.
    pub(crate) filter: CommandFilter,
}

impl<P> Link<P> {
    pub(crate) fn new() -> Self {
        Self {
            queue: Vec::new(),
            clogged_until: 0,
            filter: CommandFilter::allow_all(),
        }
    }

    /// Whether the path holds its packets at tick `now`.
    #[inline]
    pub(crate) fn is_clogged(&self, now: u64) -> bool {
        now < self.clogged_until
    }

    /// Queues `packet`, first evicting a random queued packet if the link already
    /// holds `capacity`. Returns whether it evicted. Draws only when it evicts.
    #[inline]
    pub(crate) fn push(&mut self, packet: Packet<P>, capacity: usize, rng: &mut SimRng) -> bool {
        let evict = self.queue.len() >= capacity;
        if evict {
            let victim = rng.index(self.queue.len());
            self.queue.swap_remove(victim);
        }
        self.queue.push(packet);
        evict
    }

    /// Moves every packet due at or before `now` into `ready` (appending). The
    /// order they land in depends only on the queue, so it is deterministic; the
    /// caller draws the delivery order. Draws nothing.
    #[inline]
    pub(crate) fn take_ready(&mut self, now: u64, ready: &mut Vec<Packet<P>>) {
        let mut i = 0;
        while i < self.queue.len() {
            if self.queue[i].due <= now {
                ready.push(self.queue.swap_remove(i));
            } else {
                i += 1;
            }
        }
    }
}

/// A one-way delay: `max(floor, exponential(mean))`, never below 1 tick so that no
/// packet arrives in the tick it was sent (which also keeps a replay from coming
/// due inside the delivery pass that created it). One draw.
#[inline]
pub(crate) fn draw_delay(rng: &mut SimRng, min_ticks: u64, mean_ticks: f64) -> u64 {
    rng.exponential(mean_ticks).max(min_ticks).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_filter_allows_and_blocks_single_commands() {
        let open = CommandFilter::allow_all();
        assert!((0..=255u8).all(|c| open.allows(c)));
        let closed = CommandFilter::block_all();
        assert!((0..=255u8).all(|c| !closed.allows(c)));

        let no_seven = CommandFilter::allow_all().block(7).block(200);
        assert!(!no_seven.allows(7) && !no_seven.allows(200));
        assert_eq!((0..=255u8).filter(|&c| no_seven.allows(c)).count(), 254);

        let only_63_64 = CommandFilter::block_all().allow(63).allow(64);
        let allowed: Vec<u8> = (0..=255u8).filter(|&c| only_63_64.allows(c)).collect();
        assert_eq!(allowed, vec![63, 64]);
        assert_eq!(CommandFilter::default(), open);
    }

    #[test]
    fn link_push_evicts_only_when_full_and_take_ready_splits_by_due() {
        let mut rng = SimRng::new(1);
        let mut link = Link::new();
        for due in 0..4u64 {
            assert!(!link.push(Packet { due, payload: due }, 4, &mut rng));
        }
        assert!(link.push(Packet { due: 9, payload: 9 }, 4, &mut rng));
        assert_eq!(link.queue.len(), 4);
        assert!(link.queue.iter().any(|p| p.payload == 9));

        let mut ready = Vec::new();
        link.take_ready(2, &mut ready);
        assert!(ready.iter().all(|p| p.due <= 2));
        assert!(link.queue.iter().all(|p| p.due > 2));
        assert_eq!(ready.len() + link.queue.len(), 4);
    }

    #[test]
    fn delay_is_at_least_the_floor_and_at_least_one() {
        let mut rng = SimRng::new(2);
        assert!((0..10_000).all(|_| draw_delay(&mut rng, 3, 2.0) >= 3));
        assert!((0..10_000).all(|_| draw_delay(&mut rng, 0, 0.0) == 1));
    }
}
