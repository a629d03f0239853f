//! Disk faults inside cluster runs: the campaigns catch a cluster that answers them
//! wrongly, and a cluster that answers them rightly passes the same campaign.
//!
//! Each broken answer is switched on by the test-only `--break-storage` flag (the
//! cluster's `StorageBreak`), never by editing the code under test.

mod common;

use std::process::Output;

use common::{campaign, scratch, text};
use simulator::campaign::report::{CampaignReport, RunVerdict};

/// Run one workload-fuzz command line (without the program name) at `seed`: its
/// verdict and its output.
fn fuzz_run(flags: &[&str], seed: u64) -> (simulator::fuzz::Verdict, String) {
    use clap::Parser;
    let args = simulator::fuzz::FuzzArgs::parse_from(std::iter::once("workload-fuzz").chain(flags.iter().copied()));
    let mut out = Vec::new();
    let report = simulator::fuzz::run(&args, seed, &mut out).expect("writing to a Vec never fails");
    (report.verdict, String::from_utf8_lossy(&out).into_owned())
}

/// A short campaign under the heavy profile (disk errors on, one replica at a time,
/// WAL bits rotting on the corruptible replica), primaries crashed too.
fn short_campaign(name: &str, extra: &[&str]) -> (Output, CampaignReport) {
    let out = scratch(name);
    let mut args = vec![
        "--profiles",
        "heavy",
        "--planes",
        "metadata,uniform",
        "--seeds",
        "1..40",
        "--ticks",
        "6000",
        "--crash-prob",
        "0.01",
        "--restart-prob",
        "0.05",
        "--crash-primary",
        // What is tested is the catch; shrinking has its own tests (campaign.rs, shrink.rs).
        "--no-shrink",
        "--out",
        out.to_str().expect("utf-8"),
    ];
    args.extend_from_slice(extra);
    let output = campaign(&args);
    let report = CampaignReport::read(&out).unwrap_or_else(|error| panic!("report: {error}\n{}", text(&output)));
    let _ = std::fs::remove_dir_all(&out);
    (output, report)
}

/// Run the short campaign with `--break-storage <name>` and check it fails, every
/// failure is one of `signatures` (by prefix), and every repro carries the switch.
fn assert_caught(name: &str, signatures: &[&str]) {
    assert_caught_with(name, &[], signatures);
}

/// `assert_caught` with more flags for the campaign.
fn assert_caught_with(name: &str, extra: &[&str], signatures: &[&str]) {
    let mut flags = vec!["--break-storage", name];
    flags.extend_from_slice(extra);
    let (output, report) = short_campaign(name, &flags);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let failed: Vec<&simulator::campaign::report::RunRecord> = report
        .runs
        .iter()
        .filter(|run| run.verdict == RunVerdict::Fail)
        .collect();
    assert!(!failed.is_empty(), "no run failed:\n{}", text(&output));
    for run in failed {
        let signature = run.signature.as_deref().unwrap_or_default();
        assert!(
            signatures.iter().any(|expected| signature.starts_with(expected)),
            "{name} shows as one of {signatures:?}, not {signature:?}"
        );
        assert!(
            run.command.contains(&format!("--break-storage {name}")),
            "the repro carries the switch: {}",
            run.command
        );
    }
}

#[test]
fn a_replica_that_keeps_going_after_its_disk_failed_is_caught_by_a_short_campaign() {
    // The outage this handling fixes: a primary whose disk refuses its prepares goes on
    // heartbeating, so its backups never elect another and nothing commits (seen by
    // the per-tick commit check, by the liveness phase when its core holds it, or by
    // the timeliness check when a group it leads is left behind past the bound), or a
    // backup whose disk refuses every repaired prepare stays behind for good (the
    // commit check). What it acknowledged before the failure may also be gone after a
    // restart (the durability check).
    //
    // Disk errors ten times the heavy profile's: at its 1%, only 1 of these 80 runs
    // failed (seed 24, a backup stuck), and a change that moved every schedule (the
    // commit heartbeat naming the primary's head) left none; at 10%, 10 of 80 fail,
    // and the same campaign unbroken passes (2026-12-07).
    assert_caught_with(
        "keep-going-after-failed-write",
        &["--disk-error-prob", "0.1"],
        &[
            "commit stuck",
            "drain",
            "liveness",
            "timeliness",
            "acknowledged op forgotten",
        ],
    );
}

#[test]
fn damage_cut_as_a_torn_tail_is_caught_by_a_short_campaign() {
    // A rotted WAL record cut with everything after it, the log then offered as
    // complete: the replica forgets ops it acknowledged, which the harness sees at the
    // boot (and which, left alone, lets a view change outvote a committed op). After a
    // fail-stop the boot comparison is off (a store that failed mid-input may hold half
    // a change), and a recovering replica joins the view change it hears at once, so
    // there the lie takes part in the merge: it drops an op the others hold, and the
    // group's log and its clients' requests wedge (`--seed 25`, the liveness phase).
    assert_caught("cut-damage-as-torn-tail", &["acknowledged op forgotten", "liveness"]);
}

#[test]
fn a_read_error_read_as_the_end_of_a_file_is_caught_by_a_short_campaign() {
    // A boot that stops reading its WAL at the first (transient) read error and takes
    // what it read for the whole log.
    assert_caught("read-error-as-end-of-file", &["acknowledged op forgotten"]);
}

#[test]
fn a_rotted_record_applied_without_its_checksums_is_caught_by_a_short_campaign() {
    // A WAL read back without verifying any checksum: a rotted prepare is journaled and
    // applied as if it were the op (its replica's state then differs from its peers'),
    // and a rotted kind or length reads as a record that is not there.
    assert_caught(
        "skip-wal-checksums",
        &[
            "oracle",
            "panic at",
            "commit stuck",
            "drain",
            "workload",
            "acknowledged op forgotten",
            "outage",
            "liveness",
        ],
    );
}

#[test]
fn the_same_short_campaign_passes_with_disk_faults_answered_as_designed() {
    let (output, report) = short_campaign("as-designed", &[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(report.runs.len(), 80);
    assert!(
        report.runs.iter().all(|run| run.verdict == RunVerdict::Pass),
        "{}",
        text(&output)
    );
}

#[test]
fn a_disk_error_never_stops_a_replica_in_the_tick_another_one_crashes() {
    // Found by a campaign on fresh seeds: the harness turned disk errors on for a
    // replica before the crash injector crashed another in the same tick; the first then
    // stopped on an error, two of three were down, and a partition whose log was
    // incomplete could not start a view (a drain failure that blamed the cluster). The
    // harness now gates errors after the tick's crashes and checks its own budget at
    // every fail-stop (`disk fault budget`); on the old order this run fails that check
    // at tick 9796.
    let (verdict, text) = fuzz_run(
        &common::flags(
            "--ticks 10000 --clients 4 --shards 2 --plane uniform --faults light --crash-prob 0.01 --restart-prob 0.05 --power-loss-prob 0.3 --crash-primary",
        ),
        20126,
    );
    assert_eq!(verdict, simulator::fuzz::Verdict::Pass, "{text}");
    assert!(text.contains("fail_stops="), "{text}");
}

#[test]
fn a_node_is_whole_only_once_it_hosts_every_partition_the_cluster_created() {
    // Found by CI's power-loss campaign: a node that fail-stopped while leading seven
    // partition groups rejoined its metadata group before applying their creation, was
    // counted whole, and the crash injector crashed the only other copy; reopened from a
    // WAL that had published nothing, the groups could never start a view. The budget
    // (crashes and disk errors alike) now waits until the node's metadata has applied
    // the newest change to the partition set any live replica applied.
    //
    // Seed 92 is the corpus seed (it must pass). Since read errors and slow calls joined
    // the world its run no longer fail-stops a node, so another seed with the same
    // flags keeps the shape exercised: 94 until the pipeline's front was re-acknowledged
    // on a stalled commit point (which moved its schedule off any fail-stop), now 101
    // (three fail-stops).
    let flags = common::flags(
        "--ticks 10000 --plane uniform --faults light --crash-prob 0.01 --restart-prob 0.05 --power-loss-prob 0.5 --crash-primary",
    );
    let (verdict, text) = fuzz_run(&flags, 92);
    assert_eq!(verdict, simulator::fuzz::Verdict::Pass, "{text}");
    let (verdict, text) = fuzz_run(&flags, 101);
    assert_eq!(verdict, simulator::fuzz::Verdict::Pass, "{text}");
    assert!(!text.contains("fail_stops=0"), "the run must fail-stop a node: {text}");
    // And "newest change any replica ever applied", not "any live one": here the only
    // replica that had applied a creation fail-stopped in that very tick, the crash
    // injector then took a third replica for good, and the restarted node's new groups
    // were amnesiac (a drain failure before the budget remembered the change).
    // (Since rot was split between data and structures the schedule moved and seed 253
    // no longer fail-stops; it stays as the corpus seed, which must pass.)
    let mut heavy = flags;
    heavy[5] = "heavy";
    let (verdict, text) = fuzz_run(&heavy, 253);
    assert_eq!(verdict, simulator::fuzz::Verdict::Pass, "{text}");
}

#[test]
fn disk_faults_asked_of_in_memory_stores_are_an_invalid_configuration() {
    for flag in ["--disk-error-prob", "--disk-corruption-prob"] {
        let (verdict, text) = fuzz_run(&["--storage", "memory", "--plane", "metadata", flag, "0.1"], 1);
        assert!(
            matches!(verdict, simulator::fuzz::Verdict::Invalid(_)),
            "{flag}: {text}"
        );
        assert!(text.contains(&format!("{flag} 0.1 needs --storage sim")), "{text}");
    }
    // A profile's rates do not apply to in-memory stores; the run is not refused for them.
    let (verdict, text) = fuzz_run(
        &common::flags("--storage memory --plane metadata --faults light --ticks 1000"),
        1,
    );
    assert_eq!(verdict, simulator::fuzz::Verdict::Pass, "{text}");
    assert!(!text.contains("storage-faults:"), "{text}");
}

#[test]
fn a_limping_disk_stalls_its_node_and_the_cluster_works_around_it() {
    // One write or sync in fifty blocks its node for up to 40 ticks, on every replica,
    // primaries included: the run must still commit, answer and converge.
    let (verdict, text) = fuzz_run(
        &common::flags(
            "--ticks 6000 --clients 4 --shards 2 --plane partition --faults light --disk-slow-prob 0.02 --crash-prob 0.01 --restart-prob 0.05 --crash-primary",
        ),
        1,
    );
    assert_eq!(verdict, simulator::fuzz::Verdict::Pass, "{text}");
    let slow_calls: u64 = text
        .split("slow_calls=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|count| count.parse().ok())
        .expect("the storage-faults line counts slow calls");
    assert!(slow_calls > 50, "{slow_calls} slow calls: {text}");
}

/// The number after `key=` on the `outages:` line of `text`.
fn outage_count(text: &str, key: &str) -> u64 {
    text.lines()
        .find(|line| line.starts_with("outages: cut="))
        .and_then(|line| line.split(&format!("{key}=")).nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("no {key}= on the outages: line: {text}"))
}

/// Flags of a partition run with frequent whole-cluster power outages.
const OUTAGE_FLAGS: &str = "--ticks 10000 --clients 4 --shards 2 --plane partition --faults light --crash-prob 0.01 --restart-prob 0.05 --crash-primary --power-outage-prob 0.0005";

#[test]
fn a_whole_cluster_power_outage_keeps_every_persisted_write_and_counts_what_replicated_topics_lose() {
    let (verdict, text) = fuzz_run(&common::flags(OUTAGE_FLAGS), 1);
    assert_eq!(verdict, simulator::fuzz::Verdict::Pass, "{text}");
    assert!(outage_count(&text, "cut") >= 1, "{text}");
    assert!(outage_count(&text, "persisted_intact") >= 1, "{text}");
    assert!(
        outage_count(&text, "replicated_messages_lost") >= 1,
        "a replicated topic loses its unpublished acknowledged writes, counted: {text}"
    );
}

#[test]
fn a_persisted_write_acknowledged_before_it_was_published_is_caught_by_an_outage() {
    let mut flags = common::flags(OUTAGE_FLAGS);
    flags.extend(["--break-storage", "ack-persisted-before-publish"]);
    let (verdict, text) = fuzz_run(&flags, 1);
    assert!(
        matches!(verdict, simulator::fuzz::Verdict::Failed(_)),
        "the broken durability must fail the run: {text}"
    );
    assert!(text.contains("check failed: outage durability"), "{text}");
    assert!(text.contains("persisted partition"), "{text}");
}

#[test]
fn a_view_change_after_a_whole_cluster_outage_starts_without_the_ops_every_replica_lost() {
    // Found by the first outage campaigns (fresh seeds, `--power-outage-prob 0.0005`):
    // - a new primary asserted its merged head could not be below its commit point
    //   (true while some replica keeps every committed op, not after every replica
    //   lost its unpublished tail), and a backup kept a commit point above the view's
    //   head (seed 1: `partition`);
    // - a replica that missed the view which gave those ops up still held the old
    //   commit point when a later, complete quorum decided (seed 36: `lifecycle`,
    //   swarm);
    // - ops whose headers survived but whose bodies no replica held any more kept the
    //   view from ever starting (seed 14: `partition`, heavy), also below the commit
    //   point, which incomplete logs now carry (seed 88: `lifecycle`, heavy);
    // - and that last cut must not take an op a log may hold below the window it
    //   carried, nor the floor it stands on: it once cut three committed ops a
    //   complete log held, and a backup that had applied them refused the StartView
    //   (seed 176: `uniform`, heavy, before any outage: three single power losses).
    for (seed, plane, faults) in [
        (1, "partition", "light"),
        (36, "lifecycle", "swarm"),
        (14, "partition", "heavy"),
        (88, "lifecycle", "heavy"),
        (176, "uniform", "heavy"),
    ] {
        let flags = [
            "--ticks",
            "10000",
            "--shards",
            "2",
            "--plane",
            plane,
            "--faults",
            faults,
            "--crash-prob",
            "0.01",
            "--restart-prob",
            "0.05",
            "--power-loss-prob",
            "0.3",
            "--crash-primary",
            "--power-outage-prob",
            "0.0005",
        ];
        let (verdict, text) = fuzz_run(&flags, seed);
        assert_eq!(verdict, simulator::fuzz::Verdict::Pass, "seed {seed}: {text}");
        assert!(outage_count(&text, "cut") >= 1 || seed == 176, "seed {seed}: {text}");
    }
}

#[test]
fn a_replica_that_installed_a_transfer_releases_its_peers_pin_at_once() {
    // Found by the long-downtime campaign with outages on: after a whole-cluster outage
    // every group of a tiny-journal cluster transfers state at once; a receiver that
    // installed and had nothing left to repair never sent the repair request that
    // releases its peer's pin, the pin held one of the peer shard's two transfer
    // places until it idled out (1,000 ticks), and the last groups starved past the
    // stuck check (`commit stuck`, transfers abandoned with nothing received).
    let (verdict, text) = fuzz_run(
        &common::flags(
            "--ticks 20000 --clients 4 --shards 2 --plane partition --faults light --crash-prob 0.02 --restart-prob 0.002 --journal-slots 80 --ring-entries 80 --crash-primary --power-outage-prob 0.00005",
        ),
        46,
    );
    assert_eq!(verdict, simulator::fuzz::Verdict::Pass, "{text}");
    assert!(outage_count(&text, "cut") >= 1, "{text}");
}

/// The outage check judges what the network lets settle: a partition that cuts a
/// replica off through the whole recovery (only a replayed or edited schedule holds one
/// that long) leaves the outage unjudged and counted, not failed; the same outage whose
/// partition heals is judged as any other. Issue #44: a shrunk run kept an outage and a
/// one-way cut it never healed, and failed `outage recovery` with the original's
/// signature though nothing could have settled.
#[test]
fn an_outage_under_a_partition_that_never_heals_is_left_unjudged_not_failed() {
    let dir = scratch("outage-under-partition");
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let cut = r#"{"tick":1010,"fault":"partition","side_a":[2],"cut_a_to_b":true,"cut_b_to_a":true}"#;
    let run = |name: &str, events: &[&str]| {
        let schedule = dir.join(name);
        let mut lines = vec![r#"{"tick":1000,"fault":"outage"}"#];
        lines.extend_from_slice(events);
        std::fs::write(&schedule, lines.join("\n") + "\n").expect("write the schedule");
        let schedule = schedule.display().to_string();
        let mut flags = common::flags("--ticks 3000 --plane metadata --faults light --storage sim");
        flags.extend(["--faults-from", schedule.as_str()]);
        common::fuzz(1, &flags)
    };
    let (verdict, never_healed) = run("never-healed.jsonl", &[cut]);
    assert_eq!(verdict, simulator::fuzz::Verdict::Pass, "{never_healed}");
    assert_eq!(
        common::counter_on(&never_healed, "outages: cut=", "unjudged_partitioned"),
        1,
        "{never_healed}"
    );
    let (verdict, healed) = run("healed.jsonl", &[cut, r#"{"tick":1500,"fault":"heal"}"#]);
    assert_eq!(verdict, simulator::fuzz::Verdict::Pass, "{healed}");
    assert!(
        !healed.contains("unjudged_partitioned"),
        "a partition that heals leaves the outage judged:\n{healed}"
    );
    assert_eq!(common::counter_on(&healed, "outages: cut=", "cut"), 1);
    let _ = std::fs::remove_dir_all(&dir);
}
