//! The `workload-fuzz` binary as a user meets it: output, exit codes, error messages.

mod common;

use std::process::{Command, Output};

fn workload_fuzz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_workload-fuzz"))
        .args(args)
        .output()
        .expect("the workload-fuzz binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_seed_run_twice_prints_byte_identical_stdout_and_exits_zero() {
    let args = common::flags("--seed 211 --faults heavy --ticks 4000 --clients 3");
    let first = workload_fuzz(&args);
    let second = workload_fuzz(&args);
    assert_eq!(first.status.code(), Some(0), "{}{}", stdout(&first), stderr(&first));
    assert_eq!(first.stdout, second.stdout);
    assert!(stdout(&first).contains("workload-fuzz: OK (seed=211)"));
    assert!(
        stderr(&first).contains("ticks/s"),
        "timing goes to stderr: {}",
        stderr(&first)
    );
}

#[test]
fn an_omitted_seed_is_drawn_and_printed() {
    let output = workload_fuzz(&["--ticks", "200"]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    let banner = stdout(&output);
    let seed = banner
        .split_whitespace()
        .find_map(|word| word.strip_prefix("seed="))
        .expect("banner names the seed");
    assert!(seed.parse::<u64>().is_ok(), "seed {seed:?} is a number");
}

#[test]
fn a_shard_count_out_of_range_is_refused_naming_the_flag() {
    let output = workload_fuzz(&["--seed", "1", "--plane", "partition", "--shards", "9"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    common::assert_contains(&stderr, "--shards");
}

#[test]
fn the_partition_plane_runs_and_prints_its_comparisons() {
    let output = workload_fuzz(&common::flags("--seed 3 --plane partition --shards 2 --ticks 3000"));
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(0), "{text}");
    common::assert_contains(&text, "outcomes: ");
    for counter in ["namespaces_checked=", "messages_compared=", "router_hops="] {
        let value = text
            .split_whitespace()
            .find_map(|word| word.strip_prefix(counter)?.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("{counter} missing:\n{text}"));
        assert!(value > 0, "{counter}{value}: nothing was compared or routed:\n{text}");
    }
}

#[test]
fn an_unknown_profile_lists_the_valid_names() {
    let output = workload_fuzz(&["--seed", "1", "--faults", "stormy"]);
    assert_eq!(output.status.code(), Some(2));
    let text = stdout(&output);
    assert!(
        text.contains("stormy") && text.contains("heavy") && text.contains("swarm"),
        "{text}"
    );
}

#[test]
fn a_bad_profile_file_names_the_field() {
    let path = std::env::temp_dir().join(format!("bad-profile-{}.json", std::process::id()));
    let light = include_str!("../../fault-profiles/light.json");
    std::fs::write(
        &path,
        light.replace("\"packet_loss_probability\": 0.02", "\"packet_loss_probability\": 2.5"),
    )
    .expect("write temp profile");
    let output = workload_fuzz(&["--seed", "1", "--faults", path.to_str().expect("utf-8 temp path")]);
    std::fs::remove_file(&path).expect("cleanup");
    assert_eq!(output.status.code(), Some(2));
    common::assert_contains(&stdout(&output), "network.packet_loss_probability");
}

#[test]
fn an_out_of_range_override_names_the_field() {
    let output = workload_fuzz(&["--seed", "1", "--packet-loss", "1.5"]);
    assert_eq!(output.status.code(), Some(2));
    common::assert_contains(&stdout(&output), "packet_loss_probability");
}

#[test]
fn a_malformed_flag_is_a_usage_error_not_a_panic() {
    let output = workload_fuzz(&["--seed", "twelve"]);
    assert_eq!(output.status.code(), Some(2));
    common::assert_contains(&stderr(&output), "is not a 64-bit seed");
    assert!(!stderr(&output).contains("panicked"));
}

#[test]
fn a_run_that_compares_too_little_is_vacuous() {
    let output = workload_fuzz(&["--seed", "1", "--ticks", "100", "--min-replies", "1000000"]);
    assert_eq!(output.status.code(), Some(3));
    common::assert_contains(&stdout(&output), "vacuous:");
}

#[test]
fn a_total_partition_of_the_clients_traffic_is_vacuous_not_a_pass() {
    // Every packet lost: nothing is compared, so the run must not claim a pass.
    let output = workload_fuzz(&["--seed", "1", "--ticks", "500", "--packet-loss", "1"]);
    assert_eq!(output.status.code(), Some(3), "{}", stdout(&output));
    assert!(stdout(&output).contains("replies_matched=0"));
}

#[test]
fn a_metadata_seed_with_crashes_run_twice_prints_byte_identical_stdout() {
    let args = common::flags(
        "--seed 144 --plane metadata --faults heavy --crash-prob 0.01 --restart-prob 0.05 --crash-primary --ticks 3000",
    );
    let first = workload_fuzz(&args);
    let second = workload_fuzz(&args);
    assert_eq!(first.status.code(), Some(0), "{}{}", stdout(&first), stderr(&first));
    assert_eq!(first.stdout, second.stdout);
    let text = stdout(&first);
    assert!(
        text.contains("compared: commits=") && text.contains("ops_compared="),
        "{text}"
    );
}

#[test]
fn heal_before_quiesce_restarts_every_replica_and_no_quiesce_skips_the_drain() {
    let common = [
        "--seed", "5", "--plane", "metadata", "--faults", "light", "--ticks", "2000",
    ];
    let crashes = ["--crash-prob", "0.02", "--restart-prob", "0.0", "--crash-primary"];
    let healed: Vec<&str> = common
        .iter()
        .chain(&crashes)
        .chain(&["--heal-before-quiesce"])
        .copied()
        .collect();
    let output = workload_fuzz(&healed);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    common::assert_contains(&stdout(&output), "still down: 0");
    let skipped: Vec<&str> = common.iter().chain(&["--no-quiesce"]).copied().collect();
    let output = workload_fuzz(&skipped);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    common::assert_contains(&stdout(&output), "(+0 drain)");
}

#[test]
fn a_metadata_run_that_commits_too_little_is_vacuous() {
    let output = workload_fuzz(&common::flags(
        "--seed 1 --plane metadata --ticks 100 --min-commits 100000",
    ));
    assert_eq!(output.status.code(), Some(3));
    common::assert_contains(&stdout(&output), "vacuous:");
}

#[test]
fn campaign_refuses_out_of_range_run_flags_exactly_as_workload_fuzz_does() {
    // One validation path (`RunFlags`): a campaign never records a repro command
    // `workload-fuzz` would refuse (it once ran `--crash-prob 3` and passed).
    for (flag, value) in [
        ("--crash-prob", "3"),
        ("--restart-prob", "1.5"),
        ("--adversary-prob", "2"),
        ("--clients", "65"),
    ] {
        let campaign = Command::new(env!("CARGO_BIN_EXE_campaign"))
            .args([
                "--profiles",
                "light",
                "--planes",
                "metadata",
                "--seeds",
                "1..2",
                flag,
                value,
            ])
            .output()
            .expect("campaign runs");
        let fuzz = workload_fuzz(&["--seed", "1", flag, value]);
        for (name, output) in [("campaign", &campaign), ("workload-fuzz", &fuzz)] {
            assert_eq!(
                output.status.code(),
                Some(2),
                "{name} {flag} {value}: {}",
                stderr(output)
            );
            assert!(stderr(output).contains(flag), "{name} names {flag}: {}", stderr(output));
        }
    }
}
