//! The partition plane end to end: the owner fence is load-bearing, and runs with
//! several clients and several shards pass.

mod common;

use clap::Parser;
use simulator::fuzz::{self, FuzzArgs, Verdict};

fn run(flags: &[&str], seed: u64) -> (String, Verdict) {
    let args = FuzzArgs::parse_from(std::iter::once("workload-fuzz").chain(flags.iter().copied()));
    let mut out = Vec::new();
    let report = fuzz::run(&args, seed, &mut out).expect("writing to a Vec never fails");
    (String::from_utf8_lossy(&out).into_owned(), report.verdict)
}

/// The number printed as `key=N` in a run's output (the first occurrence).
fn counter(text: &str, key: &str) -> u64 {
    text.split_whitespace()
        .find_map(|word| word.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
        .unwrap_or_else(|| panic!("no `{key}=N` in the output:\n{text}"))
}

const LIFECYCLE: [&str; 6] = ["--plane", "lifecycle", "--faults", "light", "--ticks", "6000"];

/// With the fence on, lifecycle runs pass (and see the fence refuse a stale owner, or
/// they would be vacuous); with the fence disabled through the test-only switch, the
/// same seeds fail, and say that a stale owner's write got through. If this test ever
/// fails on the second half, the workload no longer checks the fence.
#[test]
fn disabling_the_owner_fence_makes_lifecycle_runs_fail() {
    let mut caught = 0;
    for seed in 1..=4 {
        let (out, verdict) = run(&LIFECYCLE, seed);
        assert_eq!(verdict, Verdict::Pass, "seed {seed} with the fence on:\n{out}");
        let broken: Vec<&str> = LIFECYCLE.iter().copied().chain(["--break-fence"]).collect();
        let (out, verdict) = run(&broken, seed);
        match verdict {
            Verdict::Failed(reason) => {
                assert!(
                    out.contains("StaleOwner") || reason.contains("StaleOwner"),
                    "seed {seed} failed for another reason: {reason}\n{out}"
                );
                caught += 1;
            }
            other => panic!("seed {seed} with the fence disabled: expected a failure, got {other:?}\n{out}"),
        }
    }
    assert_eq!(caught, 4);
}

#[test]
fn partition_runs_with_eight_clients_and_three_shards_pass() {
    for seed in 1..=3 {
        let (out, verdict) = run(
            &common::flags("--plane partition --faults light --clients 8 --shards 3 --ticks 4000"),
            seed,
        );
        assert_eq!(verdict, Verdict::Pass, "seed {seed}:\n{out}");
        assert!(
            counter(&out, "router_hops") > 0,
            "three shards must route some frames:\n{out}"
        );
        assert!(
            counter(&out, "namespaces_checked") > 0,
            "the shadow was compared:\n{out}"
        );
    }
}

#[test]
fn every_consensus_plane_passes_a_short_run() {
    for plane in ["metadata", "partition", "mixed", "uniform", "lifecycle"] {
        let (out, verdict) = run(&["--plane", plane, "--faults", "light", "--ticks", "6000"], 5);
        assert_eq!(verdict, Verdict::Pass, "--plane {plane}:\n{out}");
    }
}
