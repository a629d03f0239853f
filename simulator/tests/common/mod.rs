//! Helpers the simulator's integration tests share: running `workload-fuzz` in this
//! process, running the `campaign` binary, stepping a harness, and a scratch directory
//! per test.

#![allow(dead_code, reason = "each test binary uses the helpers it needs")]

use std::path::PathBuf;
use std::process::{Command, Output};

/// A flag list written as on a command line (values without spaces), so a test's
/// flags read as the command a user would type.
pub fn flags(line: &'static str) -> Vec<&'static str> {
    line.split_whitespace().collect()
}

/// Run one `workload-fuzz` run in this process: `flags` as on its command line, with
/// `seed`. Returns the verdict and everything the run printed.
pub fn fuzz(seed: u64, flags: &[&str]) -> (simulator::fuzz::Verdict, String) {
    use clap::Parser;
    let args = simulator::fuzz::FuzzArgs::parse_from(std::iter::once("workload-fuzz").chain(flags.iter().copied()));
    let mut out = Vec::new();
    let report = simulator::fuzz::run(&args, seed, &mut out).expect("writing to a Vec never fails");
    (report.verdict, String::from_utf8_lossy(&out).into_owned())
}

/// A run's flags as on its command line (values without spaces), keeping its fault
/// events for the report as `--record-faults` and a shrink's candidates do.
pub fn recording_args(flags: &str) -> simulator::fuzz::FuzzArgs {
    use clap::Parser;
    let mut args =
        simulator::fuzz::FuzzArgs::parse_from(std::iter::once("workload-fuzz").chain(flags.split_whitespace()));
    args.keep_fault_schedule = true;
    args
}

/// Run `args` with `seed` in this process: what it printed, and its report.
pub fn run_args(args: &simulator::fuzz::FuzzArgs, seed: u64) -> (String, simulator::fuzz::RunReport) {
    let mut out = Vec::new();
    let report = simulator::fuzz::run(args, seed, &mut out).expect("writing to a Vec never fails");
    (String::from_utf8(out).expect("utf-8"), report)
}

/// Run the `campaign` binary cargo built for the tests with `args`.
pub fn campaign(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_campaign"))
        .args(args)
        .output()
        .expect("the campaign binary runs")
}

/// A process's stdout and stderr, for failure messages.
pub fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The number after `key=` on the first line of `text` that starts with `line_start`
/// (a run's report lines: `compared: ... messages_compared=12 ...`).
pub fn counter_on(text: &str, line_start: &str, key: &str) -> u64 {
    let line = text
        .lines()
        .find(|line| line.starts_with(line_start))
        .unwrap_or_else(|| panic!("no line starting {line_start:?} in the output:\n{text}"));
    line.split_whitespace()
        .find_map(|word| word.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
        .unwrap_or_else(|| panic!("no `{key}=N` on the line: {line}"))
}

/// A fresh, empty (not yet created) directory for test `name` of this process.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("simulator-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Step `harness` `ticks` ticks; a failed check panics with it and every replica's
/// status line, so the test's failure says what the cluster looked like.
pub fn step(harness: &mut simulator::harness::Harness, ticks: u64) {
    for _ in 0..ticks {
        harness
            .step()
            .unwrap_or_else(|failure| panic!("{failure}\n{}", harness.status_lines().join("\n")));
    }
}

/// The value of a future over simulated storage, which completes on its first poll.
pub fn ready<T>(future: impl std::future::Future<Output = T>) -> T {
    use futures::FutureExt;
    future
        .now_or_never()
        .expect("simulated storage completes on the first poll")
}

/// A metadata WAL on a fresh simulated disk holding `records`, appended and synced:
/// where the WAL crash sweeps start each step.
pub fn synced_wal(
    options: &simulator::storage::SimStorageOptions,
    records: &[(u64, cluster::vsr::store::StoredRecord)],
) -> (
    simulator::storage::SimStorage,
    cluster::storage::wal::Wal<simulator::storage::SimStorage>,
) {
    let storage = simulator::storage::SimStorage::new(options.clone());
    let (mut wal, _) = ready(cluster::storage::wal::Wal::open(&storage)).expect("open");
    ready(wal.append_all(records)).expect("append");
    ready(wal.sync()).expect("sync");
    (storage, wal)
}

/// What a partition WAL's boot recovered, in one line for an assertion's context: its
/// ops, frontier, discarded bytes, damage and interrupted rewrites or prefix drops.
pub fn partition_wal_context(recovery: &cluster::storage::partition_wal::PartitionWalRecovery) -> String {
    let ops: Vec<u64> = recovery.records.iter().map(|(op, _)| *op).collect();
    format!(
        "ops {ops:?} frontier {:?} discarded {} damaged {:?} frontier damage {:?} rewrite {:?} interrupted drop {} \
         leftover {}",
        recovery.frontier,
        recovery.discarded_bytes,
        recovery.damaged,
        recovery.frontier_damage,
        recovery.interrupted_rewrite,
        recovery.interrupted_prefix_drop,
        recovery.removed_prefix_drop_leftover
    )
}

/// Asserts that `text` contains `needle`, printing the whole text when it does not (so
/// a failure shows what the command did print).
#[track_caller]
pub fn assert_contains(text: &str, needle: &str) {
    assert!(text.contains(needle), "expected {needle:?} in:\n{text}");
}
