//! `--crash-moments`: the crash injector times its crashes to protocol moments (a
//! primary with prepares in flight, a backup waiting for a repair answer, a replica
//! receiving a state transfer) whenever an eligible replica is at one. The runs must
//! pass as any run does; the `crash moments:` line says which moments were hit.

mod common;

use simulator::fuzz::Verdict;

fn run(seed: u64, flags: &[&str]) -> String {
    let (verdict, text) = common::fuzz(seed, flags);
    assert_eq!(verdict, Verdict::Pass, "seed {seed}:\n{text}");
    text
}

/// The count of `moment` on the run's `crash moments:` line.
fn moment_crashes(text: &str, moment: &str) -> u64 {
    let line = text
        .lines()
        .find_map(|line| line.strip_prefix("crash moments: "))
        .unwrap_or_else(|| panic!("no `crash moments:` line:\n{text}"));
    line.split_whitespace()
        .find_map(|word| word.strip_prefix(moment)?.strip_prefix('=')?.parse().ok())
        .unwrap_or_else(|| panic!("no {moment}= on `{line}`"))
}

const HEAVY_METADATA: &str = "--ticks 4000 --plane metadata --faults heavy --clients 4 --crash-prob 0.01 --restart-prob 0.05 --crash-primary --crash-moments";

#[test]
fn crashes_fall_on_primaries_mid_prepare_and_backups_mid_repair() {
    let (mut preparing, mut repairing) = (0, 0);
    for seed in 1..=4 {
        let text = run(seed, &common::flags(HEAVY_METADATA));
        preparing += moment_crashes(&text, "primary_preparing");
        repairing += moment_crashes(&text, "backup_repairing");
    }
    assert!(preparing > 0, "no crash of a primary with prepares in flight in 4 runs");
    assert!(repairing > 0, "no crash of a backup mid-repair in 4 runs");
}

#[test]
fn without_the_flag_no_crash_is_timed_and_nothing_is_printed() {
    let text = run(1, &common::flags(HEAVY_METADATA)[..13]);
    assert!(!text.contains("crash moments:"), "{text}");
}
