//! A timeout counted in ticks: the only way the consensus core measures time.

/// A named countdown. `tick()` reports when it fires; the owner decides whether to
/// reset, back off or stop it.
#[derive(Clone, Debug)]
pub struct Timeout {
    /// For logs and assertion messages.
    pub name: &'static str,
    /// Ticks from start to firing.
    pub after: u64,
    ticks: u64,
    ticking: bool,
}

impl Timeout {
    /// A stopped timeout that fires `after` ticks once started.
    pub const fn new(name: &'static str, after: u64) -> Self {
        assert!(after > 0, "a timeout of zero ticks would fire every tick");
        Self {
            name,
            after,
            ticks: 0,
            ticking: false,
        }
    }

    /// Start (or restart) from zero.
    pub fn start(&mut self) {
        self.ticks = 0;
        self.ticking = true;
    }

    /// Restart from zero if running; a stopped timeout stays stopped.
    pub fn reset(&mut self) {
        self.ticks = 0;
    }

    /// Stop without firing.
    pub fn stop(&mut self) {
        self.ticks = 0;
        self.ticking = false;
    }

    /// Whether it is running.
    pub fn ticking(&self) -> bool {
        self.ticking
    }

    /// Ticks that may pass without this timeout firing: `u64::MAX` while stopped.
    pub fn ticks_before_firing(&self) -> u64 {
        if self.ticking {
            self.after.saturating_sub(self.ticks + 1)
        } else {
            u64::MAX
        }
    }

    /// What `n` calls of [`Timeout::tick`] do when none of them fires (the caller
    /// keeps `n` within [`Timeout::ticks_before_firing`]).
    pub fn advance(&mut self, n: u64) {
        if !self.ticking {
            return;
        }
        assert!(
            n <= self.ticks_before_firing(),
            "{}: {n} ticks skipped past its firing (at {} of {})",
            self.name,
            self.ticks,
            self.after
        );
        self.ticks += n;
    }

    /// Advance one tick; true when it fires (it keeps running from zero).
    pub fn tick(&mut self) -> bool {
        if !self.ticking {
            return false;
        }
        self.ticks += 1;
        if self.ticks >= self.after {
            self.ticks = 0;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_every_after_ticks_while_running_and_never_when_stopped() {
        let mut timeout = Timeout::new("test", 3);
        assert!(!timeout.tick(), "stopped timeouts never fire");
        timeout.start();
        let fired: Vec<bool> = (0..7).map(|_| timeout.tick()).collect();
        assert_eq!(fired, [false, false, true, false, false, true, false]);
        timeout.reset();
        assert!(!timeout.tick() && !timeout.tick() && timeout.tick());
        timeout.stop();
        assert!((0..10).all(|_| !timeout.tick()));
    }

    #[test]
    fn advancing_by_the_ticks_before_firing_leaves_it_one_tick_from_firing() {
        let mut timeout = Timeout::new("test", 5);
        assert_eq!(timeout.ticks_before_firing(), u64::MAX, "a stopped timeout never fires");
        timeout.advance(1_000);
        timeout.start();
        assert_eq!(timeout.ticks_before_firing(), 4);
        assert!(!timeout.tick());
        timeout.advance(timeout.ticks_before_firing());
        assert_eq!(timeout.ticks_before_firing(), 0);
        assert!(timeout.tick(), "the next tick fires, as five ticks would have");
        assert_eq!(timeout.ticks_before_firing(), 4, "and it counts again from zero");
    }

    #[test]
    #[should_panic(expected = "skipped past its firing")]
    fn advancing_past_the_firing_tick_is_refused() {
        let mut timeout = Timeout::new("test", 5);
        timeout.start();
        timeout.advance(5);
    }
}
