//! The `failover:` line: each primary crash opens a loss that ends when a later view has
//! a Normal primary, and the run prints how many ended and how long they took. A run
//! without crashes (and without the liveness phase, which takes replicas down) loses
//! no primary.

mod common;

use simulator::fuzz::Verdict;

fn run(seed: u64, flags: &'static str) -> String {
    let (verdict, text) = common::fuzz(seed, &common::flags(flags));
    assert_eq!(verdict, Verdict::Pass, "seed {seed}:\n{text}");
    text
}

/// The value of `field` on the run's `failover:` line (`-` reads as `None`).
fn failover_field(text: &str, field: &str) -> Option<u64> {
    let line = text
        .lines()
        .find_map(|line| line.strip_prefix("failover: "))
        .unwrap_or_else(|| panic!("no `failover:` line:\n{text}"));
    let value = line
        .split_whitespace()
        .find_map(|word| word.strip_prefix(field)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {field}= on `{line}`"));
    (value != "-").then(|| value.parse().unwrap_or_else(|_| panic!("{field}={value} on `{line}`")))
}

#[test]
fn a_crashed_primary_is_replaced_and_the_time_it_took_is_printed() {
    let text = run(
        1,
        "--ticks 30000 --plane partition --faults none --crash-prob 0.002 --restart-prob 0.05 --crash-primary",
    );
    let losses = failover_field(&text, "primary_losses").expect("a count");
    let ended = failover_field(&text, "ended").expect("a count");
    assert!(losses > 0, "crashes aimed at primaries lost none:\n{text}");
    assert!(ended > 0, "no loss ended:\n{text}");
    let (p50, max) = (
        failover_field(&text, "p50_ticks").expect("losses ended"),
        failover_field(&text, "max_ticks").expect("losses ended"),
    );
    assert!(0 < p50 && p50 <= max, "p50 {p50}, max {max}");
    assert_eq!(
        failover_field(&text, "unresolved"),
        Some(0),
        "the drain settles every group:\n{text}"
    );
}

#[test]
fn a_run_without_crashes_loses_no_primary() {
    let text = run(1, "--ticks 5000 --plane partition --faults none --no-liveness");
    assert_eq!(failover_field(&text, "primary_losses"), Some(0), "{text}");
    assert_eq!(failover_field(&text, "p50_ticks"), None, "{text}");
    assert_eq!(
        failover_field(&text, "spurious_view_changes"),
        Some(0),
        "no fault, no view change:\n{text}"
    );
}
