//! Handing freed heap memory back to the operating system after a burst of
//! connections ends.
//!
//! Models: nothing; this is production-only housekeeping. The node runs on glibc's
//! allocator, which keeps pages a program freed for its own reuse instead of returning
//! them, unless they sit at the very top of the heap. A burst of a thousand slow
//! connections (see the hostile-input suite) leaves its freed buffers scattered
//! through the heap, so without help the node's RSS stays about 10 MB above where it
//! was, for good. `malloc_trim(0)` walks the heap and releases every whole free page
//! (with `madvise`), which brings RSS back to its baseline.
//!
//! A trim walks the whole heap (well under a millisecond for the tens of MB a node
//! holds), so it is done at most once per [`MEMORY_RETURN_PERIOD_MS`], and only after
//! at least [`MEMORY_RETURN_CLOSES_MIN`] connections closed since the last one: a
//! steady trickle of short client connections (one per `cluster-cli` command) never
//! triggers it, a burst ending always does.
//!
//! Other allocators and C libraries (musl, macOS) have no such call; there it does
//! nothing and freed memory is left to the allocator's own policy.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

/// How often the housekeeping task looks whether a trim is due, in milliseconds. One
/// second: RSS returns within a second or two of a burst ending, and a node that trims
/// on every look still spends under 0.1% of a core on it.
pub const MEMORY_RETURN_PERIOD_MS: u64 = 1_000;

/// Connections that must have closed since the last trim for the next one to be due.
/// 64: a burst big enough to leave megabytes behind (each client connection holds a
/// few KiB of buffers and task state), and more than an operator's CLI makes in the
/// [`MEMORY_RETURN_PERIOD_MS`] between looks.
pub const MEMORY_RETURN_CLOSES_MIN: u64 = 64;

/// Connections closed since the last trim, shared by the transport (which counts them)
/// and the housekeeping task (which trims and resets it).
#[derive(Clone, Default)]
pub struct ClosedSinceTrim(Rc<Cell<u64>>);

impl ClosedSinceTrim {
    /// One more connection closed (or a replica's handshake ended: each held a read
    /// buffer too).
    pub fn note_closed(&self) {
        self.0.set(self.0.get().saturating_add(1));
    }

    /// Connections closed since the last trim.
    pub fn count(&self) -> u64 {
        self.0.get()
    }

    /// Whether a trim is due ([`MEMORY_RETURN_CLOSES_MIN`] closes since the last one);
    /// if so, start counting again for the next.
    pub fn take_if_due(&self) -> bool {
        let due = self.0.get() >= MEMORY_RETURN_CLOSES_MIN;
        if due {
            self.0.set(0);
        }
        due
    }
}

/// Look every [`MEMORY_RETURN_PERIOD_MS`] and trim when enough connections closed;
/// runs until the node's `LocalSet` ends. Returns nothing: a trim that releases
/// nothing is not an error.
pub async fn return_freed_memory_after_bursts(closed: ClosedSinceTrim) {
    let mut period = tokio::time::interval(Duration::from_millis(MEMORY_RETURN_PERIOD_MS));
    period.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        period.tick().await;
        if closed.take_if_due() {
            let released = return_freed_memory();
            tracing::debug!(
                released,
                "returned freed heap memory to the OS after a burst of closed connections"
            );
        }
    }
}

/// Ask the allocator to release free heap pages to the OS. True if it released any
/// (glibc only; elsewhere false).
pub fn return_freed_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim takes no pointers and only rearranges the allocator's own
        // free lists; it is safe to call at any time from any thread.
        unsafe { libc::malloc_trim(0) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_of_freed_buffers_is_handed_back() {
        // Scatter a thousand 8 KiB buffers through the heap with small survivors
        // between them (the shape a burst of connections leaves), free the buffers, and
        // trim: glibc reports that it released pages. Elsewhere there is nothing to
        // release and the call says so.
        let mut survivors = Vec::new();
        let mut buffers = Vec::new();
        for index in 0..1_000u32 {
            buffers.push(vec![index as u8; 8 * 1024]);
            survivors.push(Box::new(index));
        }
        drop(buffers);
        let released = return_freed_memory();
        assert_eq!(released, cfg!(all(target_os = "linux", target_env = "gnu")));
        assert_eq!(survivors.iter().map(|value| u64::from(**value)).sum::<u64>(), 499_500);
    }

    #[test]
    fn closes_are_counted_until_a_trim_resets_them() {
        let closed = ClosedSinceTrim::default();
        let shared = closed.clone();
        for _ in 1..MEMORY_RETURN_CLOSES_MIN {
            shared.note_closed();
        }
        assert!(!closed.take_if_due(), "a trickle of closes is not a burst");
        assert_eq!(closed.count(), MEMORY_RETURN_CLOSES_MIN - 1, "and is not forgotten");
        shared.note_closed();
        assert!(closed.take_if_due(), "a burst's last close makes a trim due");
        assert_eq!(closed.count(), 0, "counting starts again after a trim");
        assert!(!closed.take_if_due());
    }
}
