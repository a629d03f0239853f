//! Replay: the same seed on the same build prints the same bytes and schedules the
//! same tasks in the same order.

mod common;

use simulator::fuzz::{self, FuzzArgs, Verdict};

use clap::Parser;

fn run(flags: &[&str], seed: u64) -> (Vec<u8>, fuzz::RunReport) {
    let args = FuzzArgs::parse_from(std::iter::once("workload-fuzz").chain(flags.iter().copied()));
    let mut out = Vec::new();
    let report = fuzz::run(&args, seed, &mut out).expect("writing to a Vec never fails");
    (out, report)
}

/// FNV-1a-64 of the run's printed output, folded with the schedule hash.
fn fingerprint(out: &[u8], schedule_hash: u64) -> u64 {
    let mut hash = simulator::executor::Fnv1a64::default();
    hash.write(out);
    hash.write(&schedule_hash.to_le_bytes());
    hash.finish()
}

/// Run `flags` with seed `0xDEADBEEF` twice: both runs must pass and print the same
/// bytes with the same schedule (and polls), and the output's fingerprint must be
/// `locked`. Returns the output, for checks of its own lines.
fn assert_replays_as_locked(flags: &[&str], locked: u64) -> String {
    let (out_a, report_a) = run(flags, 0xDEAD_BEEF);
    let (out_b, report_b) = run(flags, 0xDEAD_BEEF);
    let text = String::from_utf8_lossy(&out_a).into_owned();
    assert_eq!(report_a.verdict, Verdict::Pass, "{text}");
    assert_eq!(out_a, out_b, "same seed, same build: the output must be byte-identical");
    assert_eq!(report_a.schedule_hash, report_b.schedule_hash);
    assert_eq!(report_a.polls, report_b.polls);
    let fingerprint = fingerprint(&out_a, report_a.schedule_hash);
    assert_eq!(
        fingerprint, locked,
        "replay fingerprint moved to {fingerprint:#018x}; if intended, re-lock and say why.\n{text}"
    );
    text
}

/// The fingerprint of `--seed 0xDEADBEEF --faults heavy --ticks 3000` on the echo plane.
///
/// It moves whenever the draw order does (a new draw in the network, executor or
/// workload, a change to SimRng, a rand_xoshiro upgrade, a change to what the run
/// prints). Re-lock only when such a change is intended, and add a line here:
/// - 2026-11-29: first lock (issue #2, echo plane).
/// - 2026-11-29: re-locked: the banner names the shard count (issue #4); the schedule
///   is unchanged.
/// - 2026-11-29: re-locked (issue #5): the `seeds:` banner names the storage seed; the
///   schedule hash (0x02d72c5a660d2ab4) is unchanged, checked against the previous build.
/// - 2026-12-01: re-locked (issue #16): the profile banner prints the `storage` section's
///   rates; the schedule hash (0x02d72c5a660d2ab4) is unchanged, checked against the
///   previous build.
/// - 2026-12-01: re-locked (issue #16): the banner prints `disk_slow_probability`; the
///   schedule hash (0x02d72c5a660d2ab4) is unchanged.
/// - 2026-12-01: re-locked (issue #16): the banner prints `power_outage_probability`;
///   the schedule hash (0x02d72c5a660d2ab4) is unchanged.
/// - 2026-12-01: re-locked (issue #16): `heavy` cuts whole-cluster power now and then
///   (0.00005 per tick), which its banner prints; the schedule hash
///   (0x02d72c5a660d2ab4) is unchanged.
/// - 2026-12-01: re-locked (issue #17): every run prints a `coverage:` line (the echo
///   plane reaches no mark); the schedule hash is unchanged.
/// - 2026-12-02: re-locked (issue #17): the `coverage:` line counts 45 marks (a backup
///   acknowledging an op it holds only in its checkpoint); schedule unchanged.
/// - 2026-12-02: re-locked (issue #19): the `coverage:` line counts 48 marks (the query
///   confirmation round's three); schedule 0x02d72c5a660d2ab4 unchanged.
/// - 2026-12-02: re-locked (issue #21): the `coverage:` line counts 49 marks (a WAL
///   record taking room from vacant placeholder slots); schedule 0x02d72c5a660d2ab4
///   unchanged.
/// - 2026-12-03: re-locked: the `coverage:` line counts 50 marks (a primary dropping a
///   request older than an unapplied one of the same client); only that line moved.
/// - 2026-12-03: re-locked (issue #21): the `coverage:` line counts 51 marks (boot
///   finding a vacant WAL slot above the commit point, which now leaves the log
///   incomplete); schedule 0x02d72c5a660d2ab4 unchanged.
/// - 2026-12-05: re-locked (issue #44): the `coverage:` line counts 62 marks (fast
///   failover's, a recovering replica following a view change, and three of leaving a
///   view by votes); the echo plane's world sends no closed-connection notices and
///   runs no replica, so only that line moved.
/// - 2026-12-06: re-locked (issue #45): the output gains the `watermarks:` line (how
///   deep the run went), which only observes: schedule and replies unchanged, checked
///   against the previous build on 36 runs (6 planes x 3 profiles x 2 seeds, that line
///   left out: byte-identical).
/// - 2026-12-06: re-locked (issue #45): the `coverage:` line counts 70 marks (refusal
///   paths: damaged input by what it carried, transfers refused, stale or dropped as a
///   view starts, queries refused as a primary stops leading, a repair replacing
///   another view's prepare). Marks only observe; the one behaviour change (a primary
///   drops a transfer in flight as its view starts, seed 10001315) moved 1 of 3,000
///   campaign runs checked against the previous build (schedule hashes and verdicts).
/// - 2026-12-06: re-locked (issue #45): the `coverage:` line counts 73 marks and the
///   `watermarks:` line gains `wm.deposed_primary_ticks` (races between clients and
///   the protocol's rounds, noted by the harness from every replica's view). They only
///   observe: every other line and the schedule hash unchanged, checked against the
///   previous build (see the closing note of stop 59).
/// - 2026-12-07: re-locked: the `coverage:` line counts 74 marks
///   (`normal.stalled_pipeline_ops_fetched`); the echo plane runs no VSR group, so
///   nothing else it prints could move.
/// - 2026-12-07: re-locked: the `coverage:` line counts 75 marks
///   (`vc.stale_below_applied`: a view whose logs end below an applied op is left, seed
///   300000003); this run does not reach it, so the
///   guard never acts here and only the count moved (schedule 0x02d72c5a660d2ab4).
/// - 2026-12-07: re-locked: the `coverage:` line counts 76 marks
///   (`catch_up.transfer_not_durable`: a transferred checkpoint is installed only once
///   durable, seed 353000081), and a refused checkpoint write counts its mark once, not
///   twice; this run's schedule is unchanged (0x02d72c5a660d2ab4).
/// - 2026-12-07: re-locked: the `coverage:` line counts 77 marks
///   (`liveness.commit_stuck_near_miss`, the harness's near miss of the commit-stuck
///   check); this run does not reach it, and its schedule is unchanged (0x02d72c5a660d2ab4).
/// - 2026-12-07: re-locked: the `coverage:` line counts 78 marks
///   (`liveness.commit_stuck_half_way`, the first rung of the near-miss ladder); this
///   run does not reach it, and its schedule is unchanged (0x02d72c5a660d2ab4).
const LOCKED_ECHO_HEAVY_FINGERPRINT: u64 = 0xa821_192b_8165_f332;

#[test]
fn echo_replay_is_deterministic() {
    assert_replays_as_locked(
        &["--faults", "heavy", "--ticks", "3000", "--clients", "2"],
        LOCKED_ECHO_HEAVY_FINGERPRINT,
    );
}

#[test]
fn different_seeds_schedule_differently() {
    let flags = ["--faults", "light", "--ticks", "2000"];
    let (out_a, report_a) = run(&flags, 1);
    let (out_b, report_b) = run(&flags, 2);
    assert_ne!(report_a.schedule_hash, report_b.schedule_hash);
    assert_ne!(out_a, out_b);
}

#[test]
fn every_built_in_profile_passes_a_short_run_for_several_seeds() {
    for faults in ["none", "light", "heavy", "swarm"] {
        for seed in 1..=8 {
            let (out, report) = run(&["--faults", faults, "--ticks", "3000"], seed);
            assert_eq!(
                report.verdict,
                Verdict::Pass,
                "faults={faults} seed={seed}\n{}",
                String::from_utf8_lossy(&out)
            );
        }
    }
}

/// The fingerprint of `--seed 0xDEADBEEF --plane metadata --faults heavy --crash-prob
/// 0.01 --restart-prob 0.05 --crash-primary --ticks 4000`: the run's printed output
/// (which includes the hash of every reply header each client received, in order) and
/// the executor's schedule hash.
///
/// It moves whenever the draw order or the protocol's message flow does. Re-lock only
/// when such a change is intended, and add a line here saying why:
/// - 2026-11-29: first lock (issue #3, metadata plane).
/// - 2026-11-29: re-locked: the LoginUser action was appended, which changes which
///   action each weighted draw picks.
/// - 2026-11-29: re-locked (issue #4): replicas run inside nodes (each group draws its
///   own entropy), clients remember each group's primary and follow refusal hints at
///   once, the crash injector counts only rejoined replicas, the metadata plane warms
///   up with a create, and the report prints node and outcome lines.
/// - 2026-11-29: re-locked: the `compared:` line reports `partitions_compared` (the
///   schedule and every other line unchanged).
/// - 2026-11-29: re-locked (issue #5): replicas boot from the production formats on a
///   simulated disk, and the banner and crash lines name the storage seed, the storage
///   model and power losses; the schedule and reply hashes (0x038f49b6e94464ca,
///   0x8754748a9349e99d) are unchanged, checked against the previous build.
/// - 2026-11-29: re-locked (issue #8): the report prints a `catch-up:` line (repair sessions, journal peaks,
///   checkpoints, transfers); the schedule and reply hashes (0x038f49b6e94464ca,
///   0x8754748a9349e99d) are unchanged, checked against the previous build.
/// - 2026-11-29: re-locked (issue #4, sessions): every client logs in first, requests
///   carry the newest metadata op their client saw, nodes bind senders to sessions
///   (binds and `Unbound` refusals are new packets), `RequestAsUser` was appended, and
///   the report prints a `sessions:` line. The schedule and replies move with them.
/// - 2026-12-01: re-locked (issue #16, disk faults): the report prints a
///   `storage-faults:` line; the schedule and reply hashes (0x88a75aa8e16e9e0a,
///   0xfd6a0a1815f30a16) are unchanged, checked against the previous build.
/// - 2026-12-01: re-locked (issues #16 and #17): heavy now injects disk faults (this run
///   rots a WAL bit on its corruptible replica, and its repair moves the schedule), the
///   banner prints the disk fault rates, and a backup's repair turns to another peer
///   after a round that timed out (with `--storage-faults off` the schedule hash is
///   0xba3f97a623a4db55, moved by that alone).
/// - 2026-12-01: re-locked (issue #16): reads may fail (transiently) and writes and
///   syncs may be slow (two slow calls stall a node here); the banner and the
///   `storage-faults:` line print both. Schedule 0x143f935d565b8ed8, replies
///   0xd7c42c9466f76ac8 (with `--disk-slow-prob 0`: 0x1663453e80d0f718).
/// - 2026-12-01: re-locked (issue #16): frontiers and whole superblocks may rot too
///   (the rot's file draw moved), the disk-fault budget remembers partition changes
///   of any incarnation, and the banner prints `power_outage_probability`. Schedule
///   0x1dafd5de6514581c, replies 0x7dda6d00e936e7b7.
/// - 2026-12-01: re-locked (issue #16): three rots in four go to WALs and checkpoints,
///   one to frontiers and superblocks (picked like any file, those many small files took
///   most hits); schedule 0x143f935d565b8ed8, replies 0xd7c42c9466f76ac8 (this run rots
///   WAL bits only, as before frontiers could rot).
/// - 2026-12-01: re-locked (issue #16): a backup acknowledges the front of its
///   primary's pipeline again when the commit point stood still between two
///   broadcasts, and a primary resends only the front of its pipeline
///   (`PREPARE_RESEND_WINDOW_OPS`): runs with lost acknowledgements move. Schedule
///   0x8b5264787fc03199, replies 0xdfc0ca42dc426a64.
/// - 2026-12-01: re-locked (issue #16): `heavy` cuts whole-cluster power now and then
///   (none in this run); the banner and the `outages:` line print it. Schedule and
///   replies unchanged.
/// - 2026-12-01: re-locked (issue #17): the report prints a `coverage:` line (the
///   marks the run reached); schedule 0x8b5264787fc03199 and replies unchanged.
/// - 2026-12-02: re-locked (issue #17): the liveness phase runs after the fault phase
///   (a healed core must settle alone, then everything heals for the drain), and the
///   `coverage:` line counts 45 marks. Schedule 0xb1ec677cc7b35502, replies
///   0x0e224060865a1ae7; with `--no-liveness` the run is the previous one exactly
///   (schedule 0x8b5264787fc03199, replies 0xdfc0ca42dc426a64), checked.
/// - 2026-12-02: re-locked (issue #17): the liveness phase stops the live replicas
///   outside its core instead of cutting them off (counted as crashes); schedule
///   0xb1ec677cc7b35502 and replies unchanged.
/// - 2026-12-02: re-locked (issue #19): the `coverage:` line counts 48 marks (the query
///   confirmation round's three; the metadata plane has no queries); schedule
///   0xb1ec677cc7b35502 and replies 0x0e224060865a1ae7 unchanged, checked against the
///   previous build.
/// - 2026-12-02: re-locked (issue #18): the output gains the `fault schedule:` line (the
///   faults the run injected, by kind); every other line, schedule 0xb1ec677cc7b35502
///   and replies 0x0e224060865a1ae7 unchanged, checked against the previous build.
/// - 2026-12-02: re-locked (issue #21): a WAL write above a gap reserves placeholder
///   slots for the ops below it, so repair fills them in place instead of moving every
///   record above (a redo write, syncs and a frontier publication fewer per filled op).
///   Fewer storage calls shift the seeded background-writeback draws, so what a crash
///   leaves on disk differs and the run after the first crash moves: schedule
///   0x56df7940efae953f, replies 0xa5463830960878d9. The `coverage:` line counts 49
///   marks. The build before (a700c58, SimStorage's incremental directory commit)
///   printed this run byte for byte as the lock above.
/// - 2026-12-03: re-locked: the `coverage:` line counts 50 marks (see the echo lock);
///   schedule 0x56df7940efae953f and replies 0xa5463830960878d9 unchanged, checked
///   against the previous build.
/// - 2026-12-03: re-locked (issue #21): the `coverage:` line counts 51 marks (see the
///   echo lock); no restart here boots with a vacant slot above its commit point, so
///   schedule 0x56df7940efae953f and replies 0xa5463830960878d9 are unchanged.
/// - 2026-12-04: re-locked (issue #21): a WAL record that fits its placeholder keeps
///   the slot whole instead of handing its spare bytes to the vacant slot below, so
///   `storage.wal_vacant_window_taken` (3 here) now counts only records that outgrew
///   their slot (none here) and the `coverage:` line lists 5 marks, not 6. Every
///   other line, schedule 0x56df7940efae953f and replies 0xa5463830960878d9
///   unchanged, checked against the previous build.
/// - 2026-12-05: re-locked (issue #44): the output gains the `failover:` line (2
///   primary losses here), which only observes: schedule 0x56df7940efae953f and replies
///   0xa5463830960878d9 unchanged.
/// - 2026-12-05: re-locked (issue #44): a behaviour change. A crashed node's peers see
///   its connections close and give up its views after `PRIMARY_CLOSED_CONFIRM_TICKS`;
///   a view is left only on a view-change quorum's votes (`LeaveView`); a recovering
///   replica probes at once, votes after an unanswered interval and follows a view
///   change it hears; backups give up a view whose primary asks who leads it. Schedule
///   and replies move.
/// - 2026-12-05: re-locked (issue #44): clients resend on a timeout learned from their
///   round trips (`harness/resend_clock.rs`), first to the same replica, instead of
///   after a fixed 200 ticks to the next one. Schedule and replies move.
/// - 2026-12-05: re-locked (issue #44): the output gains the two `timeliness` lines,
///   which only observe: schedule and replies unchanged.
/// - 2026-12-06: re-locked (issue #45): the output gains the `watermarks:` line (how
///   deep the run went), which only observes: schedule and replies unchanged, checked
///   against the previous build on 36 runs (6 planes x 3 profiles x 2 seeds, that line
///   left out: byte-identical).
/// - 2026-12-06: re-locked (issue #45): the `coverage:` line counts 70 marks (refusal
///   paths: damaged input by what it carried, transfers refused, stale or dropped as a
///   view starts, queries refused as a primary stops leading, a repair replacing
///   another view's prepare). Marks only observe; the one behaviour change (a primary
///   drops a transfer in flight as its view starts, seed 10001315) moved 1 of 3,000
///   campaign runs checked against the previous build (schedule hashes and verdicts).
/// - 2026-12-06: re-locked (issue #45): the `coverage:` line counts 73 marks and the
///   `watermarks:` line gains `wm.deposed_primary_ticks` (races between clients and
///   the protocol's rounds, noted by the harness from every replica's view). They only
///   observe: every other line and the schedule hash unchanged, checked against the
///   previous build (see the closing note of stop 59).
/// - 2026-12-07: re-locked: repair rounds leave out the ops the asker holds (a bitmap
///   in the request) and are retried after a wait that follows the measured round
///   trips (20 to 100 ticks) instead of always 100; every run that repairs moved.
/// - 2026-12-07: re-locked: the commit heartbeat names the primary's head, and a backup
///   that hears the commit point stand still short of it fetches the ops it lacks
///   (74 marks: `normal.stalled_pipeline_ops_fetched`); other frames, other repair
///   traffic, so every run moved.
/// - 2026-12-07: re-locked: the `coverage:` line counts 75 marks
///   (`vc.stale_below_applied`: a view whose logs end below an applied op is left, seed
///   300000003); this run does not reach it, so the
///   guard never acts here and only the count moved (schedule 0xfe84c2ce67a3ef96).
/// - 2026-12-07: re-locked: the `coverage:` line counts 76 marks
///   (`catch_up.transfer_not_durable`: a transferred checkpoint is installed only once
///   durable, seed 353000081), and a refused checkpoint write counts its mark once, not
///   twice; this run's schedule is unchanged (0xfe84c2ce67a3ef96).
/// - 2026-12-07: re-locked: the `coverage:` line counts 77 marks
///   (`liveness.commit_stuck_near_miss`, the harness's near miss of the commit-stuck
///   check); this run does not reach it, and its schedule is unchanged (0xfe84c2ce67a3ef96).
/// - 2026-12-07: re-locked: the `coverage:` line counts 78 marks
///   (`liveness.commit_stuck_half_way`, the first rung of the near-miss ladder); this
///   run does not reach it, and its schedule is unchanged (0xfe84c2ce67a3ef96).
const LOCKED_METADATA_HEAVY_CRASH_FINGERPRINT: u64 = 0xd7ee_c854_a908_747d;

#[test]
fn workload_replay_is_deterministic() {
    let flags = common::flags(
        "--plane metadata --faults heavy --crash-prob 0.01 --restart-prob 0.05 --crash-primary --ticks 4000",
    );
    let text = assert_replays_as_locked(&flags, LOCKED_METADATA_HEAVY_CRASH_FINGERPRINT);
    assert!(text.contains("reply_hash="), "{text}");
}

/// The fingerprint of `--seed 0xDEADBEEF --plane partition --shards 3 --faults heavy
/// --crash-prob 0.01 --restart-prob 0.05 --crash-primary --ticks 3000`: every reply
/// header each client received (folded into the printed reply hash) and the schedule,
/// across three shards per replica with router hops and entry shards drawn from their
/// own stream.
///
/// Re-lock only when a change to the draw order or the message flow is intended, and
/// add a line here saying why:
/// - 2026-11-29: first lock (issue #4, partition plane with shards).
/// - 2026-11-29: re-locked: the `compared:` line reports `partitions_compared` (the
///   schedule and every other line unchanged).
/// - 2026-11-29: re-locked (issue #5): the crash injector fails a replica only while
///   enough others hold their groups' logs in full (`Node::rejoined` now means caught
///   up, not merely out of recovery), which moves this run's crash times; the storage
///   model does not move it (`--storage memory` gives the same schedule hash).
/// - 2026-11-29: re-locked (issue #8): the report prints a `catch-up:` line; the
///   schedule and reply hashes (0xcc3921603882cef9, 0xf124bf4ff2be371e) are unchanged,
///   checked against the previous build.
/// - 2026-11-29: re-locked (issue #4, sessions): as the metadata lock says (logins,
///   binds, `Unbound` refusals and the `sessions:` line move the schedule and output).
/// - 2026-12-01: re-locked (issue #16, disk faults): the `storage-faults:` line, as the
///   metadata lock says; schedule and reply hashes (0x22763e1697cb10d2,
///   0xc7903c0ec11333e2) unchanged against the previous build.
/// - 2026-12-01: re-locked (issues #16 and #17): the banner prints the disk fault rates,
///   the `storage-faults:` line gained fields, and repair may turn to another peer;
///   this run injects no disk fault and its schedule (0xde6c3355a983618f) is the same
///   with `--storage-faults off`.
/// - 2026-12-01: re-locked (issue #16): the disk-error budget counts a replica whole
///   only once its metadata has applied the newest change to the partition set any live
///   replica applied, so fewer calls are exposed to errors (`exposed_calls` 36 -> 16);
///   the schedule and reply hashes (0xde6c3355a983618f, 0x84a4b76632131bd9) are
///   unchanged.
/// - 2026-12-01: re-locked (issue #16): read errors and slow calls join the disk's
///   draws (with `--disk-slow-prob 0` the schedule is still 0xde6c3355a983618f, one
///   read error retried; with slowness on, the storage stream shifts and the schedule
///   is 0xa7072acd7e910380, replies 0xeb24bbd3a19676c1); the banner and the
///   `storage-faults:` line print the new kinds.
/// - 2026-12-01: re-locked (issue #16): as the metadata lock says (frontier and
///   superblock rot, the budget's memory of partition changes, the banner). Schedule
///   0x9bca4e52a53fcd9c, replies 0x19652aed7dd97d7c.
/// - 2026-12-01: re-locked (issue #16): the rot's split between data and structures,
///   as the metadata lock says; schedule 0x1663453e80d0f718, replies
///   0xc11cb6fef3c111cb.
/// - 2026-12-01: re-locked (issue #16): the pipeline's front is re-acknowledged on a
///   stalled commit point and resent alone, as the metadata lock says. Schedule
///   0x854d8a35340535f8, replies 0x614155bca67c306b.
/// - 2026-12-01: re-locked (issue #16): `heavy` cuts whole-cluster power now and then
///   (none in this run), printed in the banner; schedule and replies unchanged.
/// - 2026-12-01: re-locked (issue #17): the report prints a `coverage:` line;
///   schedule 0x854d8a35340535f8 and replies unchanged.
/// - 2026-12-02: re-locked (issue #17): the liveness phase, as the metadata lock says.
///   Schedule 0xd15fe4c39ab8ef9e, replies 0xbd12749ec33526b8; with `--no-liveness`
///   schedule 0x854d8a35340535f8 and replies 0x614155bca67c306b, as before, checked.
/// - 2026-12-02: re-locked (issue #17): the liveness phase stops the replicas outside
///   its core, counted as crashes; schedule 0xd15fe4c39ab8ef9e and replies unchanged.
/// - 2026-12-02: re-locked (issue #19): a primary answers a poll only after a quorum
///   confirms, in a round started after the poll arrived, that it still leads its view
///   (a commit heartbeat asking for `CommitOk`): a deposed primary served stale reads.
///   Polls wait a round trip and the rounds are new messages, so the schedule and the
///   replies move: schedule 0xf3907496ace2c05b, replies 0x2348436af96e8379. The
///   `coverage:` line counts 48 marks.
/// - 2026-12-02: re-locked (issue #18): the output gains the `fault schedule:` line;
///   every other line, schedule 0xf3907496ace2c05b and replies 0x2348436af96e8379
///   unchanged, checked against the previous build.
/// - 2026-12-02: re-locked (issue #21): WAL gap placeholders (see the metadata lock)
///   take one storage call fewer in this run (`storage-faults: calls=2504`), and the
///   `coverage:` line counts 49 marks; schedule 0xf3907496ace2c05b and replies
///   0x2348436af96e8379 unchanged, checked against the previous build.
/// - 2026-12-03: re-locked: the `coverage:` line counts 50 marks (see the echo lock);
///   schedule 0xf3907496ace2c05b and replies 0x2348436af96e8379 unchanged, checked
///   against the previous build.
/// - 2026-12-03: re-locked (issue #21): the `coverage:` line counts 51 marks (see the
///   echo lock); schedule 0xf3907496ace2c05b and replies 0x2348436af96e8379 unchanged.
/// - 2026-12-05: re-locked (issue #44): the output gains the `failover:` line (18
///   primary losses here), which only observes: schedule 0xf3907496ace2c05b and replies
///   0x2348436af96e8379 unchanged.
/// - 2026-12-05: re-locked (issue #44): fast failover and leaving a view by votes, a
///   behaviour change (see the metadata lock). Schedule and replies move.
/// - 2026-12-05: re-locked (issue #44): clients resend on a learned timeout (see the
///   metadata lock). Schedule and replies move.
/// - 2026-12-05: re-locked (issue #44): the `timeliness` lines (see the metadata lock);
///   schedule and replies unchanged.
/// - 2026-12-06: re-locked (issue #44): a node's liveness frames of several groups for
///   one peer leave as one batch (`node/coalesce.rs`): fewer packets, other draws, so
///   schedule and replies move. The metadata lock (one group) stands.
/// - 2026-12-06: re-locked (issue #45): the output gains the `watermarks:` line (how
///   deep the run went), which only observes: schedule and replies unchanged, checked
///   against the previous build on 36 runs (6 planes x 3 profiles x 2 seeds, that line
///   left out: byte-identical).
/// - 2026-12-06: re-locked (issue #45): the `coverage:` line counts 70 marks (refusal
///   paths: damaged input by what it carried, transfers refused, stale or dropped as a
///   view starts, queries refused as a primary stops leading, a repair replacing
///   another view's prepare). Marks only observe; the one behaviour change (a primary
///   drops a transfer in flight as its view starts, seed 10001315) moved 1 of 3,000
///   campaign runs checked against the previous build (schedule hashes and verdicts).
/// - 2026-12-06: re-locked (issue #45): the `coverage:` line counts 73 marks and the
///   `watermarks:` line gains `wm.deposed_primary_ticks` (races between clients and
///   the protocol's rounds, noted by the harness from every replica's view). They only
///   observe: every other line and the schedule hash unchanged, checked against the
///   previous build (see the closing note of stop 59).
/// - 2026-12-07: re-locked: repair rounds leave out the ops the asker holds (a bitmap
///   in the request) and are retried after a wait that follows the measured round
///   trips (20 to 100 ticks) instead of always 100; every run that repairs moved.
/// - 2026-12-07: re-locked: the commit heartbeat names the primary's head, and a backup
///   that hears the commit point stand still short of it fetches the ops it lacks
///   (74 marks: `normal.stalled_pipeline_ops_fetched`); other frames, other repair
///   traffic, so every run moved.
/// - 2026-12-07: re-locked: the `coverage:` line counts 75 marks
///   (`vc.stale_below_applied`: a view whose logs end below an applied op is left, seed
///   300000003); this run does not reach it, so the
///   guard never acts here and only the count moved (schedule 0x5fb568b21ee551b3).
/// - 2026-12-07: re-locked: the `coverage:` line counts 76 marks
///   (`catch_up.transfer_not_durable`: a transferred checkpoint is installed only once
///   durable, seed 353000081), and a refused checkpoint write counts its mark once, not
///   twice; this run's schedule is unchanged (0x5fb568b21ee551b3).
/// - 2026-12-07: re-locked: the `coverage:` line counts 77 marks
///   (`liveness.commit_stuck_near_miss`, the harness's near miss of the commit-stuck
///   check); this run does not reach it, and its schedule is unchanged (0x5fb568b21ee551b3).
/// - 2026-12-07: re-locked: the `coverage:` line counts 78 marks
///   (`liveness.commit_stuck_half_way`, the first rung of the near-miss ladder); this
///   run does not reach it, and its schedule is unchanged (0x5fb568b21ee551b3).
const LOCKED_MULTI_SHARD_FINGERPRINT: u64 = 0x5eac_2742_2c5c_1bb4;

#[test]
fn multi_shard_replay_is_deterministic() {
    let flags = common::flags(
        "--plane partition --shards 3 --faults heavy --crash-prob 0.01 --restart-prob 0.05 --crash-primary --ticks 3000",
    );
    let text = assert_replays_as_locked(&flags, LOCKED_MULTI_SHARD_FINGERPRINT);
    assert!(text.contains("router_hops="), "{text}");
    assert!(
        !text.contains("router_hops=0 "),
        "three shards must route some frames:\n{text}"
    );
}

#[test]
fn a_run_prints_the_coverage_marks_it_reached_the_same_way_every_time() {
    // Marks are counted per thread and reset at a run's start, so two runs of one seed
    // on one thread, and a run on another thread, print the same `coverage:` line.
    let flags = common::flags(
        "--plane uniform --faults heavy --crash-prob 0.01 --restart-prob 0.05 --crash-primary --ticks 4000",
    );
    let coverage_of = |out: &[u8]| {
        String::from_utf8_lossy(out)
            .lines()
            .find(|line| line.starts_with("coverage: reached "))
            .map(str::to_owned)
            .expect("a coverage line")
    };
    let (first, _) = run(&flags, 3);
    let (second, _) = run(&flags, 3);
    let elsewhere = std::thread::scope(|scope| scope.spawn(|| run(&flags, 3).0).join()).expect("the run's thread");
    let line = coverage_of(&first);
    assert_eq!(line, coverage_of(&second));
    assert_eq!(line, coverage_of(&elsewhere));
    assert!(
        line.contains("vc.start_view_to_recovering="),
        "a run with crashes rejoins through a StartView: {line}"
    );
}
