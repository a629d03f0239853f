//! The timeliness check: a recovery that still finishes, but slower than the design's
//! own timeouts allow, fails the run. Each bound has a test-only slowed recovery
//! (`--break-storage`) that the check catches while the unslowed build passes. Each
//! slowdown is sized to finish well inside the phase's own 10,000-tick limit, which
//! alone would not have caught it.

mod common;

use std::path::PathBuf;

use simulator::fuzz::Verdict;

/// A scratch directory for test `name` holding a schedule that crashes replica 2 at
/// tick 100 and restarts it at `restart` (with none, it stays down until the liveness
/// phase or the drain restarts it), and the schedule's path.
fn crash_replica_2_at_tick_100(name: &str, restart: Option<u64>) -> (PathBuf, String) {
    let dir = common::scratch(name);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let schedule = dir.join("crash-replica-2.jsonl");
    let mut events = String::from("{\"tick\":100,\"fault\":\"crash\",\"replica\":2,\"power_loss\":false}\n");
    if let Some(restart) = restart {
        events += &format!("{{\"tick\":{restart},\"fault\":\"restart\",\"replica\":2,\"incarnation\":1}}\n");
    }
    std::fs::write(&schedule, events).expect("write the schedule");
    let schedule = schedule.display().to_string();
    (dir, schedule)
}

/// Run seed 1 with `flags` and `--break-storage slowdown`: it must fail; the failure
/// and the output.
fn slowed(flags: &[&str], slowdown: &str) -> (String, String) {
    let slowed: Vec<&str> = flags.iter().copied().chain(["--break-storage", slowdown]).collect();
    let (verdict, text) = common::fuzz(1, &slowed);
    let Verdict::Failed(failure) = verdict else {
        panic!("the run slowed by {slowdown} must fail:\n{text}");
    };
    (failure, text)
}

#[test]
fn a_failover_that_waits_ten_liveness_windows_misses_the_election_bound() {
    // The liveness phase crashes the replica outside its core; where that replica led
    // the metadata group, the core must elect. A backup that votes to leave only after
    // ten windows (5,000 ticks) still gets there inside the phase's 10,000-tick limit,
    // so only the election bound (window + escalations + resends) sees it.
    let flags = common::flags("--ticks 3000 --plane metadata --faults light");
    let (healthy, text) = common::fuzz(1, &flags);
    assert_eq!(healthy, Verdict::Pass, "{text}");
    assert!(
        common::counter_on(&text, "timeliness (liveness)", "elections") > 0,
        "the healthy run timed elections:\n{text}"
    );
    let (failure, _) = slowed(&flags, "leave-view-after-ten-windows");
    assert!(
        failure.starts_with("timeliness") && failure.contains("has not elected a primary"),
        "{failure}"
    );
}

#[test]
fn a_repair_that_asks_for_one_op_a_round_misses_the_catch_up_bound() {
    // Replica 2 crashes at tick 100 and stays down through the fault phase; the
    // liveness phase or the drain restarts it about 400 ops behind. Four windows of 128
    // ops and the resends allow 1,500 ticks; one op per round trip takes far longer,
    // yet still settles inside the phase's limit.
    let (dir, schedule) = crash_replica_2_at_tick_100("timeliness-one-op-repair", None);
    let flags = vec![
        "--ticks",
        "5000",
        "--plane",
        "metadata",
        "--faults",
        "light",
        "--faults-from",
        schedule.as_str(),
    ];
    let (healthy, text) = common::fuzz(1, &flags);
    assert_eq!(healthy, Verdict::Pass, "{text}");
    // It catches up in the liveness phase or the healed drain, whichever restarts it.
    let behind = ["timeliness (liveness)", "timeliness (drain)"]
        .iter()
        .map(|line| common::counter_on(&text, line, "ops_behind_max"))
        .max()
        .unwrap_or(0);
    assert!(behind >= 300, "the restarted replica was far behind:\n{text}");
    let (failure, _) = slowed(&flags, "repair-one-op-a-round");
    assert!(
        failure.starts_with("timeliness") && failure.contains("replica 2 has applied"),
        "{failure}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_state_transfer_in_tiny_chunks_misses_the_catch_up_bound() {
    // Replica 2 crashes at tick 100 and stays down through the fault phase; with a
    // journal of 80 ops its peers no longer hold what it missed (377 ops), so it must
    // fetch a checkpoint (one chunk of a few KiB). The slowed build serves the same
    // checkpoint 4 bytes a chunk: every byte still arrives and verifies, and each chunk
    // is progress, but the transfer takes hundreds of round trips where the bound
    // allows one chunk and the resends. A lossless network keeps the resends, and so
    // the bound (1,900 ticks here), under the 2,000 ticks a one-chunk transfer may run
    // before the stuck check calls it stuck: the slowed run fails on timeliness, at
    // the bound.
    let (dir, schedule) = crash_replica_2_at_tick_100("timeliness-tiny-chunks", None);
    let flags = vec![
        "--ticks",
        "5000",
        "--plane",
        "metadata",
        "--faults",
        "light",
        "--packet-loss",
        "0",
        "--journal-slots",
        "80",
        "--faults-from",
        schedule.as_str(),
    ];
    let (healthy, text) = common::fuzz(1, &flags);
    assert_eq!(healthy, Verdict::Pass, "{text}");
    assert!(
        common::counter_on(&text, "catch-up:", "transfers_installed") >= 1,
        "the restarted replica caught up by a state transfer:\n{text}"
    );
    let (failure, text) = slowed(&flags, "transfer-tiny-chunks");
    assert!(
        failure.starts_with("timeliness") && failure.contains("replica 2 has applied 0 of"),
        "{failure}"
    );
    assert!(
        common::counter_on(&text, "catch-up:", "chunks_served") > 100,
        "the checkpoint went in many tiny chunks:\n{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_repair_of_one_op_a_round_comes_near_the_commit_stuck_bound_before_it_passes_it() {
    // The explorer branches a run where a replica that could repair has sat behind for
    // three quarters of the commit-stuck bound (`liveness.commit_stuck_near_miss`, a
    // rare mark: no run of 5,671 in ten minutes of the nightly reached it, stop 65), so
    // a slow recovery is played again from there. Replica 2 crashes at tick 100 and
    // restarts hundreds of ops behind: the healthy build repairs them in a few rounds;
    // one op a round sits behind past the near miss, and restarted 388 ops behind it
    // catches up just inside the bound (a near miss that passes), 547 ops behind it
    // passes the bound.
    // Both rungs of the ladder: half way (`liveness.commit_stuck_half_way`), then the
    // near miss proper.
    let near_miss = |text: &str| {
        text.contains("liveness.commit_stuck_near_miss=") && text.contains("liveness.commit_stuck_half_way=")
    };
    let any_rung = |text: &str| text.contains("liveness.commit_stuck_");
    for (restart, fails) in [(4_000, false), (5_000, true)] {
        let (dir, schedule) = crash_replica_2_at_tick_100(&format!("near-miss-one-op-repair-{restart}"), Some(restart));
        let flags = vec![
            "--ticks",
            "9000",
            "--plane",
            "metadata",
            "--faults",
            "light",
            "--faults-from",
            schedule.as_str(),
        ];
        let (healthy, text) = common::fuzz(1, &flags);
        assert_eq!(healthy, Verdict::Pass, "{text}");
        assert!(
            !any_rung(&text),
            "the healthy repair came nowhere near the bound:\n{text}"
        );
        let slowed_flags: Vec<&str> = flags
            .iter()
            .copied()
            .chain(["--break-storage", "repair-one-op-a-round"])
            .collect();
        let (verdict, text) = common::fuzz(1, &slowed_flags);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            near_miss(&text),
            "restarted at {restart}: the slow repair came near the bound:\n{text}"
        );
        match verdict {
            Verdict::Failed(failure) => {
                assert!(fails, "restarted at {restart}: {failure}");
                assert!(failure.starts_with("commit stuck"), "{failure}");
            }
            verdict => assert!(
                !fails && verdict == Verdict::Pass,
                "restarted at {restart}: {verdict:?}\n{text}"
            ),
        }
    }
}
