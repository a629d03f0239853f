//! `storage-sweep`: every sweep passes and compares acknowledged items, the sweeps are
//! sensitive (a deliberately broken workload or recovery fails them), a failing case
//! replays alone, and the command line refuses bad input.

mod common;

use std::process::Command;

use cluster::seam::{DurableFile, DurableStorage, OpenMode};
use cluster::storage::partition_wal::{Durability, PartitionWal};
use cluster::storage::record;
use cluster::storage::snapshot_file::{SNAPSHOT_MAGIC, SNAPSHOT_RECORD_KIND};
use cluster::storage::wal::Wal;
use cluster::vsr::store::StoredRecord;
use simulator::storage::{SimStorage, TraceOp};
use simulator::storage_sweep::sweeps::{
    frames, partition_wal_publish, segment_append_roll, snapshot_write, state_transfer_install,
};
use simulator::storage_sweep::{
    self, Case, CaseFailure, CaseFault, CheckContext, CrashKind, FaultKind, Ledger, Sweep, cases, fault_free_trace,
    ready, run_case, run_sweep, trace_operations,
};

/// The sweep the binary and `storage_sweep::all` know by `name`.
fn sweep(name: &str) -> Box<dyn Sweep> {
    storage_sweep::all()
        .into_iter()
        .find(|sweep| sweep.name() == name)
        .unwrap_or_else(|| panic!("no sweep named {name}"))
}

#[test]
fn every_sweep_passes_at_seed_0_comparing_acknowledged_items_over_at_least_4000_cases() {
    let mut total = 0;
    let mut names = Vec::new();
    for sweep in storage_sweep::all() {
        let summary = run_sweep(sweep.as_ref(), 0);
        assert_eq!(summary.failure, None, "{} failed", sweep.name());
        assert!(summary.trace_operations > 0, "{} traced nothing", sweep.name());
        assert_eq!(
            summary.cases,
            summary.trace_operations * 20,
            "{}: 20 cases a position",
            sweep.name()
        );
        assert!(
            summary.acknowledged_compared > 0,
            "{} compared no acknowledged item: vacuous",
            sweep.name()
        );
        total += summary.cases;
        names.push(sweep.name());
    }
    for expected in common::flags(
        "superblock-write metadata-wal-append metadata-wal-gap-fill metadata-wal-truncate partition-wal-publish segment-append-roll snapshot-write state-transfer-install tombstone-log-append",
    ) {
        assert!(names.contains(&expected), "{expected} is not registered: {names:?}");
    }
    assert!(total >= 4_000, "only {total} cases");
}

/// Append `batches` to the metadata WAL, acknowledging each batch before its sync (or,
/// with `sync` off, without any sync at all): the bug a sweep must catch.
fn append_acknowledging_early(storage: &SimStorage, sync: bool) -> Ledger {
    let mut ledger = Ledger::new();
    let Ok((mut wal, _)) = ready(Wal::open(storage)) else {
        return ledger;
    };
    for batch in [[1, 2], [3, 4], [5, 6]] {
        let records: Vec<(u64, StoredRecord)> = batch
            .iter()
            .map(|&op| (op, frames::prepare(op, 1, 300 + op as usize * 50)))
            .collect();
        for (op, record) in &records {
            ledger.attempt(*op, &frames::encode(record));
        }
        if ready(wal.append_all(&records)).is_err() {
            return ledger;
        }
        for (op, record) in &records {
            ledger.acknowledge(*op, &frames::encode(record));
        }
        if sync && ready(wal.sync()).is_err() {
            return ledger;
        }
    }
    ledger
}

/// Metadata WAL appends acknowledged before their sync, checked by the real
/// `metadata-wal-append` recovery and check.
struct AcknowledgedBeforeSync;

impl Sweep for AcknowledgedBeforeSync {
    simulator::sweep_about!(
        "broken-acknowledged-before-sync",
        "metadata WAL batches acknowledged between append_all and sync"
    );

    fn run(&self, storage: &SimStorage) -> Ledger {
        append_acknowledging_early(storage, true)
    }

    fn recover_and_check(&self, storage: &SimStorage, ledger: &Ledger, context: CheckContext) -> Result<u64, String> {
        sweep("metadata-wal-append").recover_and_check(storage, ledger, context)
    }
}

/// Metadata WAL appends acknowledged without ever being synced.
struct SyncSkipped;

impl Sweep for SyncSkipped {
    simulator::sweep_about!(
        "broken-sync-skipped",
        "metadata WAL batches acknowledged with no sync at all"
    );

    fn run(&self, storage: &SimStorage) -> Ledger {
        append_acknowledging_early(storage, false)
    }

    fn recover_and_check(&self, storage: &SimStorage, ledger: &Ledger, context: CheckContext) -> Result<u64, String> {
        sweep("metadata-wal-append").recover_and_check(storage, ledger, context)
    }
}

/// Partition WAL `Replicated` appends treated as durable promises, checked by the real
/// `partition-wal-publish` recovery and check.
struct ReplicatedAcknowledged;

impl Sweep for ReplicatedAcknowledged {
    simulator::sweep_about!(
        "broken-replicated-acknowledged",
        "partition WAL Replicated appends acknowledged as if published"
    );

    fn run(&self, storage: &SimStorage) -> Ledger {
        let mut ledger = Ledger::new();
        let Ok((mut wal, _)) = ready(PartitionWal::open(
            storage,
            partition_wal_publish::DIR,
            partition_wal_publish::GROUP,
        )) else {
            return ledger;
        };
        for op in 1..=4 {
            let record = frames::prepare(op, 1, 200);
            let durability = if op == 4 {
                Durability::Persisted
            } else {
                Durability::Replicated
            };
            ledger.attempt(op, &frames::encode(&record));
            if ready(wal.append(&[(op, &record)], durability, 0)).is_err() {
                return ledger;
            }
            ledger.acknowledge(op, &frames::encode(&record));
        }
        ledger
    }

    fn recover_and_check(&self, storage: &SimStorage, ledger: &Ledger, context: CheckContext) -> Result<u64, String> {
        sweep("partition-wal-publish").recover_and_check(storage, ledger, context)
    }
}

/// The real `segment-append-roll` workload, recovered by opening the segments past the
/// durable frontier (keeping whatever valid bytes survived).
struct FrontierIgnored;

impl Sweep for FrontierIgnored {
    simulator::sweep_about!(
        "broken-frontier-ignored",
        "segment recovery that opens the segments at u64::MAX instead of the published frontier"
    );

    fn run(&self, storage: &SimStorage) -> Ledger {
        sweep("segment-append-roll").run(storage)
    }

    fn recover_and_check(&self, storage: &SimStorage, ledger: &Ledger, context: CheckContext) -> Result<u64, String> {
        segment_append_roll::recover_and_check_opening_at(storage, ledger, context, |_| u64::MAX)
    }
}

/// Segment messages acknowledged once the segments are synced, with the frontier that
/// boot reads never published: the messages are on disk, but recovery may not trust them.
struct AcknowledgedBeforePublication;

impl Sweep for AcknowledgedBeforePublication {
    simulator::sweep_about!(
        "broken-acknowledged-before-publication",
        "segment messages acknowledged at their sync, before the segment end is published"
    );

    fn run(&self, storage: &SimStorage) -> Ledger {
        use segment_append_roll::{encode_message, message};
        let mut ledger = Ledger::new();
        let Some((mut wal, mut log)) = segment_append_roll::open_fresh(storage) else {
            return ledger;
        };
        for offset in 0..6 {
            ledger.attempt(offset, &encode_message(&message(offset)));
            if ready(log.append(&message(offset))).is_err() || ready(log.sync()).is_err() {
                return ledger;
            }
            ledger.acknowledge(offset, &encode_message(&message(offset)));
        }
        // Published only at the end: every case before this lost what it acknowledged.
        let _ = ready(wal.publish(log.synced_end_offset()));
        ledger
    }

    fn recover_and_check(&self, storage: &SimStorage, ledger: &Ledger, context: CheckContext) -> Result<u64, String> {
        sweep("segment-append-roll").recover_and_check(storage, ledger, context)
    }
}

/// Snapshot versions overwritten in place (write, truncate, sync) instead of written to a
/// `.tmp` and renamed, checked by the real `snapshot-write` recovery and check.
struct SnapshotOverwrittenInPlace;

impl Sweep for SnapshotOverwrittenInPlace {
    simulator::sweep_about!(
        "broken-snapshot-in-place",
        "a snapshot rewritten in place, so a crash mid-write tears the only copy"
    );

    fn run(&self, storage: &SimStorage) -> Ledger {
        let mut ledger = Ledger::new();
        for (version, len) in [6_000_usize, 9_000, 3_000].into_iter().enumerate() {
            let key = version as u64 + 1;
            let bytes: Vec<u8> = (0..len).map(|index| (index * 7 + version * 13) as u8).collect();
            ledger.attempt(snapshot_write::SNAPSHOT_KEY, &snapshot_write::encode(key, &bytes));
            let encoded = record::encode(SNAPSHOT_MAGIC, SNAPSHOT_RECORD_KIND, key, &bytes);
            let written = ready(async {
                let file = storage.open(snapshot_write::PATH, OpenMode::CreateOrOpen).await?;
                file.write_at(0, &encoded).await?;
                file.truncate(encoded.len() as u64).await?;
                file.sync().await?;
                storage.sync_dir("metadata").await?;
                storage.sync_dir("").await
            });
            if written.is_err() {
                return ledger;
            }
            ledger.acknowledge(snapshot_write::SNAPSHOT_KEY, &snapshot_write::encode(key, &bytes));
        }
        ledger
    }

    fn recover_and_check(&self, storage: &SimStorage, ledger: &Ledger, context: CheckContext) -> Result<u64, String> {
        sweep("snapshot-write").recover_and_check(storage, ledger, context)
    }
}

/// The real `state-transfer-install` workload, recovered without `recover_install`.
struct InstallNotRecovered;

impl Sweep for InstallNotRecovered {
    simulator::sweep_about!(
        "broken-install-not-recovered",
        "an install crashed at every step, then the segments opened without recover_install"
    );

    fn run(&self, storage: &SimStorage) -> Ledger {
        sweep("state-transfer-install").run(storage)
    }

    fn recover_and_check(&self, storage: &SimStorage, ledger: &Ledger, context: CheckContext) -> Result<u64, String> {
        state_transfer_install::recover_and_check_with(storage, ledger, context, |_| Ok(()))
    }
}

/// Run a broken sweep: it must fail, and some case must fail with a detail containing
/// `expected` (the first such case is returned); that case run alone (what `--case`
/// does) must fail the same way. Broken variants model only part of a workload's
/// ledger, so their first failure may be another mismatch.
fn assert_caught(sweep: &dyn Sweep, expected: &str) -> Case {
    let summary = run_sweep(sweep, 0);
    assert!(
        summary.failure.is_some(),
        "{} passed {} cases: the sweep is blind",
        sweep.name(),
        summary.cases
    );
    let operations = trace_operations(sweep).expect("the fault-free run acknowledges something");
    let failure = cases(operations)
        .find_map(|case| match run_case(sweep, 0, &case) {
            Err(detail) if detail.contains(expected) => Some(CaseFailure { case, detail }),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{} never failed for {expected:?}", sweep.name()));
    println!("{} caught at {}: {}", sweep.name(), failure.case, failure.detail);
    let replayed = run_case(sweep, 0, &failure.case).expect_err("the failing case fails alone too");
    assert_eq!(replayed, failure.detail, "a case replays exactly");
    failure.case
}

#[test]
fn acknowledging_wal_writes_before_their_sync_is_caught() {
    let case = assert_caught(&AcknowledgedBeforeSync, "lost without recovery noticing");
    assert_eq!(
        case.crash,
        CrashKind::PowerLoss,
        "only a power loss drops unsynced pages: {case}"
    );
}

#[test]
fn acknowledging_wal_writes_never_synced_is_caught() {
    assert_caught(&SyncSkipped, "lost without recovery noticing");
}

#[test]
fn treating_replicated_partition_appends_as_durable_is_caught() {
    // Even a process crash loses them: boot discards what no publication covers.
    let case = assert_caught(&ReplicatedAcknowledged, "lost without recovery noticing");
    assert_eq!(case.crash, CrashKind::Process, "{case}");
}

#[test]
fn a_segment_recovery_that_ignores_the_durable_frontier_is_caught() {
    assert_caught(&FrontierIgnored, "beyond the durable frontier");
}

#[test]
fn acknowledging_segments_before_their_frontier_is_published_is_caught() {
    // Even a process crash loses them: boot opens the segments at the published end.
    let case = assert_caught(&AcknowledgedBeforePublication, "lost without recovery noticing");
    assert_eq!(case.crash, CrashKind::Process, "{case}");
}

#[test]
fn a_snapshot_overwritten_in_place_is_caught() {
    assert_caught(&SnapshotOverwrittenInPlace, "read_snapshot failed");
    // The first failure is the empty file the first write creates; a crash tearing the
    // second version over the acknowledged first one is caught too.
    let second_write = fault_free_trace(&SnapshotOverwrittenInPlace)
        .into_iter()
        .filter(|entry| entry.op == TraceOp::WriteAt)
        .nth(1)
        .expect("a second version");
    let case = Case {
        position: second_write.position,
        fault: CaseFault::Fault(FaultKind::TornWithError),
        crash: CrashKind::Process,
        writeback: false,
    };
    let detail = run_case(&SnapshotOverwrittenInPlace, 0, &case).expect_err("the only copy is torn");
    assert!(detail.contains("with 1 version(s) acknowledged"), "{case}: {detail}");
}

#[test]
fn an_install_left_unrecovered_is_caught_and_a_crash_mid_move_is_a_mix() {
    assert_caught(&InstallNotRecovered, "recovery left");
    // A crash after the first staged file moved into place, without rollback, leaves
    // one new file among the old ones.
    let trace = fault_free_trace(&InstallNotRecovered);
    let first_move = trace
        .iter()
        .find(|entry| entry.op == TraceOp::Rename && entry.path.contains(".staging -> "))
        .expect("the install moves staged files into place");
    let case = Case {
        position: first_move.position,
        fault: CaseFault::None,
        crash: CrashKind::Process,
        writeback: false,
    };
    let detail = run_case(&InstallNotRecovered, 0, &case).expect_err("a mix of two sets");
    assert!(detail.contains("a mix"), "{case}: {detail}");
    assert_eq!(
        run_case(sweep("state-transfer-install").as_ref(), 0, &case),
        Ok(6),
        "the real recovery rolls the same crash back to the six old messages"
    );
}

fn storage_sweep_command(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_storage-sweep"))
        .args(args)
        .output()
        .expect("run storage-sweep");
    (
        output.status.code().expect("exit code"),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_binary_lists_replays_one_case_and_refuses_bad_input() {
    let (code, stdout, _) = storage_sweep_command(&["--list"]);
    assert_eq!(code, 0);
    for sweep in storage_sweep::all() {
        assert!(
            stdout.contains(sweep.name()),
            "--list misses {}: {stdout}",
            sweep.name()
        );
    }

    let (code, stdout, _) =
        storage_sweep_command(&["--sweep", "snapshot-write", "--case", "10:torn-silent:power-loss:on"]);
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.starts_with("pass snapshot-write 10:torn-silent:power-loss:on"),
        "{stdout}"
    );

    let (code, _, stderr) = storage_sweep_command(&["--sweep", "no-such-sweep"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("\"no-such-sweep\" is not a sweep"), "{stderr}");
    for sweep in storage_sweep::all() {
        assert!(
            stderr.contains(sweep.name()),
            "the refusal names the known sweeps: {stderr}"
        );
    }

    let (code, _, stderr) = storage_sweep_command(&["--sweep", "snapshot-write", "--case", "10:torn:power-loss:on"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("fault \"torn\" is not known"), "{stderr}");

    let (code, _, stderr) = storage_sweep_command(&["--case", "10:none:process:off"]);
    assert_eq!(code, 2, "--case needs one --sweep: {stderr}");
    assert!(stderr.contains("exactly one --sweep"), "{stderr}");
}

#[test]
fn a_superblock_format_the_disk_tore_silently_is_never_put_in_place() {
    // Found by `storage-sweep --seed 1` (and 2): the scratch file of the very first
    // superblock was torn by a write the disk acknowledged, then synced, renamed into
    // place and refused at every boot after, though the replica had acknowledged
    // nothing. Format now reads the scratch file back before the rename.
    let case: Case = "3:torn-silent:process:off".parse().expect("a case");
    for seed in [1, 2] {
        assert_eq!(
            run_case(sweep("superblock-write").as_ref(), seed, &case).map(|_| ()),
            Ok(()),
            "seed {seed}"
        );
    }
    for seed in [1, 2, 3] {
        assert_eq!(
            run_sweep(sweep("superblock-write").as_ref(), seed).failure,
            None,
            "seed {seed}"
        );
    }
}
