//! The `nemesis` binary as a user meets it before any node starts: bad flags are refused
//! with exit code 2 and a message naming the flag. (Real runs need root, namespaces and
//! the Debian fault tools: `scripts/nemesis-smoke.sh` runs them in CI.)

use std::process::{Command, Output};

fn nemesis(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nemesis"))
        .args(args)
        .output()
        .expect("the nemesis binary runs")
}

fn refused(args: &[&str], naming: &str) {
    let output = nemesis(args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(naming), "{args:?} should name {naming:?}: {stderr}");
}

#[test]
fn bad_flags_are_refused_with_exit_code_2_naming_what_is_wrong() {
    refused(&["--nodes", "4"], "--nodes 4: a cluster of 3 or 5 nodes");
    refused(&["--clients", "0"], "--clients 0: 1 to 16");
    refused(&["--runs", "0"], "--runs 0");
    refused(&["--minutes", "0"], "--minutes 0");
    refused(&["--faults", "kill,frobnicate"], "unknown fault kind 'frobnicate'");
    refused(&["--mode", "sideways"], "sideways");
}

#[test]
fn a_missing_node_binary_is_named_with_how_to_build_it() {
    let out = std::env::temp_dir().join(format!("nemesis-test-{}", std::process::id()));
    let output = nemesis(&[
        "--network",
        "loopback",
        "--node-binary",
        "/nonexistent/node",
        "--out",
        out.to_str().expect("a UTF-8 temp path"),
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("/nonexistent/node: no such file")
            && stderr.contains("cargo build --release -p cluster --bin node"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(out);
}
