//! Rate-limited warnings: what a flood of bad input may cost the log.
//!
//! A warning an outsider can trigger (a refused connection, a rejected frame) is
//! logged at most [`WARNINGS_PER_WINDOW_MAX`] times per [`WARNING_WINDOW_MS`] per
//! kind; the rest are counted, and the first line of the next window says how many
//! were left out. Counters in the node's stats line keep the totals either way.

use std::collections::BTreeMap;

/// Lines of one kind logged per window: enough to see what is happening and from
/// where, few enough that a flood of thousands a second costs the log a few lines.
pub const WARNINGS_PER_WINDOW_MAX: u64 = 10;

/// The window, in milliseconds: the node's stats line comes every 10 s too.
pub const WARNING_WINDOW_MS: u64 = 10_000;

#[derive(Default)]
struct Window {
    started_ms: u64,
    logged: u64,
    suppressed: u64,
}

/// Per-kind windows of warnings.
#[derive(Default)]
pub struct WarningLimiter {
    kinds: BTreeMap<&'static str, Window>,
}

impl WarningLimiter {
    /// Whether a warning of `kind` at `now_ms` may be logged; if so, how many of that
    /// kind were left out since the last one logged (0 if none).
    pub fn admit(&mut self, kind: &'static str, now_ms: u64) -> Option<u64> {
        let window = self.kinds.entry(kind).or_default();
        if window.logged == 0 || now_ms.saturating_sub(window.started_ms) >= WARNING_WINDOW_MS {
            window.started_ms = now_ms;
            window.logged = 0;
        }
        if window.logged >= WARNINGS_PER_WINDOW_MAX {
            window.suppressed += 1;
            return None;
        }
        window.logged += 1;
        Some(std::mem::take(&mut window.suppressed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_logs_a_few_lines_per_window_and_then_says_how_many_it_left_out() {
        let mut limiter = WarningLimiter::default();
        let logged: Vec<_> = (0..1_000).filter_map(|_| limiter.admit("rejected frame", 5)).collect();
        assert_eq!(logged, vec![0; WARNINGS_PER_WINDOW_MAX as usize]);
        assert_eq!(
            limiter.admit("refused connection", 6),
            Some(0),
            "kinds are counted apart"
        );
        assert_eq!(limiter.admit("rejected frame", 5 + WARNING_WINDOW_MS - 1), None);
        assert_eq!(
            limiter.admit("rejected frame", 5 + WARNING_WINDOW_MS),
            Some(1_000 - WARNINGS_PER_WINDOW_MAX + 1),
            "the next window's first line counts what the last one left out"
        );
        assert_eq!(limiter.admit("rejected frame", 5 + WARNING_WINDOW_MS), Some(0));
    }
}
