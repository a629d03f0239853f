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

    /// If running, make it fire within `ticks` ticks (at most `ticks` more calls of
    /// [`Timeout::tick`]); one already due sooner is left alone. For evidence that the
    /// wait it measures is already over (a closed connection).
    pub fn shorten_to(&mut self, ticks: u64) {
        assert!(ticks > 0, "{}: a timeout cannot fire in zero ticks", self.name);
        if self.ticking && self.after - self.ticks > ticks {
            self.ticks = self.after - ticks;
        }
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
    fn shortening_brings_the_firing_closer_but_never_later_and_never_starts_it() {
        let mut timeout = Timeout::new("test", 10);
        timeout.shorten_to(3);
        assert!(!timeout.ticking(), "a stopped timeout stays stopped");
        timeout.start();
        timeout.shorten_to(3);
        assert_eq!(timeout.ticks_before_firing(), 2);
        assert!(
            !timeout.tick() && !timeout.tick() && timeout.tick(),
            "fires on the third tick"
        );
        timeout.start();
        (0..8).for_each(|_| assert!(!timeout.tick()));
        timeout.shorten_to(5);
        assert_eq!(timeout.ticks_before_firing(), 1, "already due sooner: unchanged");
        timeout.reset();
        assert_eq!(timeout.ticks_before_firing(), 9, "a reset restores the whole wait");
    }

    #[test]
    #[should_panic(expected = "skipped past its firing")]
    fn advancing_past_the_firing_tick_is_refused() {
        let mut timeout = Timeout::new("test", 5);
        timeout.start();
        timeout.advance(5);
    }
}
