//! Storage tests: the shared contract for both implementations, then SimStorage's model
//! one rule at a time.

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::rc::Rc;

use cluster::seam::{DurableFile, DurableStorage, OpenMode};
use cluster::testing::check_storage_contract;
use futures::FutureExt;

use super::*;
use crate::executor::DetExecutor;

/// Drive a storage future; SimStorage's complete on their first poll.
fn ready<F: Future>(future: F) -> F::Output {
    future
        .now_or_never()
        .expect("SimStorage futures complete on their first poll")
}

fn sim(seed: u64) -> SimStorage {
    SimStorage::new(SimStorageOptions {
        seed,
        ..SimStorageOptions::default()
    })
}

fn planned(position: u64, kind: FaultKind) -> SimStorage {
    SimStorage::new(SimStorageOptions {
        fault: Some(PlannedFault { position, kind }),
        ..SimStorageOptions::default()
    })
}

fn create(storage: &SimStorage, path: &str) -> SimFile {
    ready(storage.open(path, OpenMode::CreateOrOpen)).expect("create")
}

fn read_all(file: &SimFile) -> Vec<u8> {
    let mut buf = vec![0; ready(file.len()).expect("len") as usize];
    let n = ready(file.read_at(0, &mut buf)).expect("read");
    buf.truncate(n);
    buf
}

fn assert_injected<T: std::fmt::Debug>(result: io::Result<T>, what: &str) {
    let error = result.expect_err(what);
    assert_eq!(error.kind(), io::ErrorKind::Other, "{error}");
    assert!(error.to_string().contains(what), "{error} does not say {what:?}");
}

fn pages(count: usize, byte: u8) -> Vec<u8> {
    vec![byte; count * PAGE_BYTES]
}

// ---- the contract ------------------------------------------------------------------

#[test]
fn mem_storage_meets_the_storage_contract() {
    let mut executor = DetExecutor::new(0);
    let checks = Rc::new(Cell::new(0));
    let out = checks.clone();
    let storage = MemStorage::new();
    executor.spawn(None, async move { out.set(check_storage_contract(storage).await) });
    executor.run_until_idle().expect("idle");
    assert!(checks.get() >= 30, "contract ran {} checks", checks.get());
}

#[test]
fn sim_storage_meets_the_storage_contract_and_never_returns_pending() {
    for writeback in [false, true] {
        let storage = SimStorage::new(SimStorageOptions {
            seed: 3,
            writeback,
            ..SimStorageOptions::default()
        });
        let checks = ready(check_storage_contract(storage.clone()));
        assert!(checks >= 30, "contract ran {checks} checks");
        storage.check_invariants().expect("invariants after the contract");
        assert!(storage.operations() > 50, "every call is traced");
    }
}

// ---- buffered vs stable ------------------------------------------------------------

#[test]
fn power_loss_drops_unsynced_bytes_and_keeps_synced_ones() {
    let storage = sim(1);
    let file = create(&storage, "log");
    ready(storage.sync_dir("")).expect("sync_dir");
    ready(file.append(b"synced")).expect("append");
    ready(file.sync()).expect("sync");
    ready(file.append(b" lost")).expect("append");
    assert_eq!(storage.buffered_bytes("log").as_deref(), Some(&b"synced lost"[..]));
    assert_eq!(storage.stable_len("log"), Some(6));

    storage.crash(CrashKind::PowerLoss);
    let file = ready(storage.open("log", OpenMode::Existing)).expect("reopen");
    assert_eq!(read_all(&file), b"synced");
    storage.check_invariants().expect("invariants");
}

#[test]
fn a_power_loss_undoes_an_unsynced_shrink_and_an_unsynced_overwrite() {
    let storage = sim(1);
    let file = create(&storage, "seg");
    ready(storage.sync_dir("")).expect("sync_dir");
    ready(file.write_at(0, &pages(3, 7))).expect("write");
    ready(file.sync()).expect("sync");
    ready(file.truncate(10)).expect("shrink");
    ready(file.write_at(0, b"new")).expect("overwrite");
    assert_eq!(storage.buffered_len("seg"), Some(10));
    storage.check_invariants().expect("invariants");

    storage.crash(CrashKind::PowerLoss);
    assert_eq!(storage.buffered_bytes("seg"), Some(pages(3, 7)));
}

#[test]
fn extending_after_an_unsynced_shrink_never_resurrects_old_bytes() {
    let storage = sim(1);
    let file = create(&storage, "seg");
    ready(file.write_at(0, &pages(3, 7))).expect("write");
    ready(file.sync()).expect("sync");
    ready(file.truncate(100)).expect("shrink");
    ready(file.truncate(2 * PAGE_BYTES as u64 + 5)).expect("extend");
    // Every page the extension zeroed differs from the disk, so it must be dirty: a
    // writeback of any subset may never bring the old 7s back into the zeros.
    assert_eq!(storage.dirty_pages("seg"), [0, 1, 2]);
    storage.check_invariants().expect("invariants");
}

#[test]
fn a_created_file_whose_directory_was_not_synced_vanishes_on_power_loss_even_if_synced() {
    let storage = sim(1);
    let file = create(&storage, "wal/log");
    ready(file.append(b"durable bytes, no durable name")).expect("append");
    ready(file.sync()).expect("sync");
    ready(storage.sync_dir("")).expect("the root holds wal, not wal/log");
    assert!(storage.exists("wal/log"));
    assert!(!storage.exists_stable("wal/log"));

    storage.crash(CrashKind::PowerLoss);
    assert!(!storage.exists("wal/log"));
    assert_eq!(ready(storage.list("wal")).expect("wal is stable"), Vec::<String>::new());
    assert_eq!(storage.bytes(), 0, "the unnamed inode is gone");
}

#[test]
fn a_new_directory_survives_power_loss_only_once_its_parent_is_synced() {
    let storage = sim(1);
    let file = create(&storage, "a/b/file");
    ready(file.sync()).expect("sync");
    ready(storage.sync_dir("a/b")).expect("sync a/b");
    ready(storage.sync_dir("a")).expect("sync a");
    assert!(!storage.exists_stable("a/b/file"), "the root does not hold `a` yet");
    ready(storage.sync_dir("")).expect("sync root");
    assert!(storage.exists_stable("a/b/file"));

    storage.crash(CrashKind::PowerLoss);
    assert_eq!(ready(storage.list("a/b")).expect("list"), ["file"]);
}

#[test]
fn a_rename_or_remove_not_followed_by_sync_dir_is_undone_by_power_loss() {
    let storage = sim(1);
    for (path, body) in [("dir/current", b"old"), ("dir/next", b"new")] {
        let file = create(&storage, path);
        ready(file.append(body)).expect("append");
        ready(file.sync()).expect("sync");
    }
    create(&storage, "dir/doomed");
    for dir in ["dir", ""] {
        ready(storage.sync_dir(dir)).expect("sync_dir");
    }
    ready(storage.rename("dir/next", "dir/current")).expect("rename");
    ready(storage.remove("dir/doomed")).expect("remove");
    assert_eq!(ready(storage.list("dir")).expect("list"), ["current"]);
    assert_eq!(storage.stable_bytes("dir/current").as_deref(), Some(&b"old"[..]));

    storage.crash(CrashKind::PowerLoss);
    assert_eq!(ready(storage.list("dir")).expect("list"), ["current", "doomed", "next"]);
    assert_eq!(storage.buffered_bytes("dir/current").as_deref(), Some(&b"old"[..]));

    ready(storage.rename("dir/next", "dir/current")).expect("rename");
    ready(storage.sync_dir("dir")).expect("sync_dir");
    storage.crash(CrashKind::PowerLoss);
    assert_eq!(storage.buffered_bytes("dir/current").as_deref(), Some(&b"new"[..]));
    assert_eq!(ready(storage.list("dir")).expect("list"), ["current", "doomed"]);
    storage.check_invariants().expect("invariants");
}

#[test]
fn process_crash_keeps_everything_and_makes_old_handles_stale() {
    let storage = sim(1);
    let file = create(&storage, "wal/log");
    ready(file.append(b"never synced")).expect("append");
    ready(storage.rename("wal/log", "wal/renamed")).expect("rename");

    storage.crash(CrashKind::Process);
    assert_eq!(storage.crashes(), 1);
    let error = ready(file.append(b"zombie")).expect_err("stale handle");
    assert!(error.to_string().contains("belongs to a crashed process"), "{error}");
    assert!(ready(file.sync()).is_err() && ready(file.len()).is_err());
    let mut buf = [0; 4];
    assert!(ready(file.read_at(0, &mut buf)).is_err());

    let fresh = ready(storage.open("wal/renamed", OpenMode::Existing)).expect("the page cache survived");
    assert_eq!(read_all(&fresh), b"never synced");
    drop(file);
    assert_eq!(
        read_all(&fresh),
        b"never synced",
        "dropping a stale handle changes nothing"
    );
    storage.check_invariants().expect("invariants");
}

#[test]
fn an_unlinked_file_lives_while_a_handle_is_open_and_is_freed_after() {
    let storage = sim(1);
    let file = create(&storage, "tmp");
    ready(file.append(&pages(1, 1))).expect("append");
    ready(storage.remove("tmp")).expect("remove");
    assert_eq!(storage.bytes(), PAGE_BYTES);
    ready(file.append(b"x")).expect("still writable");
    drop(file);
    assert_eq!(storage.bytes(), 0);
    storage.check_invariants().expect("invariants");
}

// ---- writeback ---------------------------------------------------------------------

#[test]
fn writeback_failure_reports_once_to_each_handle_open_at_the_time() {
    let storage = sim(1);
    let first = create(&storage, "data");
    ready(storage.sync_dir("")).expect("sync_dir");
    ready(first.append(b"kept")).expect("append");
    ready(first.sync()).expect("sync");
    let second = ready(storage.open("data", OpenMode::Existing)).expect("second handle");
    ready(first.append(b" dropped")).expect("append");

    storage.fail_writeback("data").expect("fail writeback");
    assert_eq!(
        storage.buffered_bytes("data").as_deref(),
        Some(&b"kept"[..]),
        "dirty pages dropped"
    );
    let fresh = ready(storage.open("data", OpenMode::Existing)).expect("opened after the failure");
    ready(fresh.sync()).expect("a handle opened after the failure never hears of it");

    for handle in [&first, &second] {
        let error = ready(handle.sync()).expect_err("reported once");
        assert_eq!(error.kind(), io::ErrorKind::Other);
        assert!(error.to_string().contains("writeback failed"), "{error}");
        ready(handle.sync()).expect("then cleared for this handle");
    }

    storage.crash(CrashKind::PowerLoss);
    assert_eq!(storage.buffered_bytes("data").as_deref(), Some(&b"kept"[..]));
}

#[test]
fn random_writeback_failures_reach_the_handles_open_at_the_time() {
    let storage = SimStorage::new(SimStorageOptions {
        seed: 5,
        writeback: true,
        writeback_failure_probability: PARTS_PER_MILLION,
        ..SimStorageOptions::default()
    });
    let file = create(&storage, "data");
    ready(file.append(&pages(2, 9))).expect("append");
    // Each call gives writeback a chance; with failure certain, the first flush fails.
    for _ in 0..32 {
        if storage.dirty_pages("data").is_empty() {
            break;
        }
        ready(file.len()).expect("len");
    }
    assert_eq!(
        storage.buffered_len("data"),
        Some(0),
        "the failed writeback dropped the append"
    );
    let error = ready(file.sync()).expect_err("reported");
    assert!(error.to_string().contains("writeback failed"), "{error}");
}

#[test]
fn background_writeback_flushes_pages_out_of_order() {
    // Find a seed where page k is stable while an earlier page j is not: writeback
    // keeps no order, so this must happen for some of the first few seeds.
    let found = (0..64).find_map(|seed| {
        let storage = SimStorage::new(SimStorageOptions {
            seed,
            writeback: true,
            ..SimStorageOptions::default()
        });
        let file = create(&storage, "seg");
        ready(storage.sync_dir("")).expect("sync_dir");
        ready(file.write_at(0, &pages(8, 0xab))).expect("write");
        for _ in 0..6 {
            ready(file.len()).expect("len");
        }
        let dirty = storage.dirty_pages("seg");
        let later_stable = (1..8u64).rev().find(|page| !dirty.contains(page))?;
        let earlier_dirty = *dirty.iter().find(|&&page| page < later_stable)?;
        Some((storage, earlier_dirty as usize, later_stable as usize))
    });
    let (storage, earlier, later) = found.expect("some seed flushes a later page before an earlier one");
    storage.check_invariants().expect("invariants");

    // What a power loss now would leave (a crash would first write back some more).
    let stable = storage.stable_bytes("seg").expect("named stably");
    assert!(
        stable.len() >= (later + 1) * PAGE_BYTES,
        "the flushed page carried the length with it"
    );
    assert!(
        stable[later * PAGE_BYTES..(later + 1) * PAGE_BYTES]
            .iter()
            .all(|&b| b == 0xab)
    );
    assert!(
        stable[earlier * PAGE_BYTES..(earlier + 1) * PAGE_BYTES]
            .iter()
            .all(|&b| b == 0),
        "a page never written back reads as zeros (a hole)"
    );
    storage.crash(CrashKind::PowerLoss);
    let after = storage.buffered_bytes("seg").expect("survived");
    assert!(
        after[later * PAGE_BYTES..(later + 1) * PAGE_BYTES]
            .iter()
            .all(|&b| b == 0xab)
    );
}

#[test]
fn writeback_all_makes_everything_survive_power_loss() {
    let storage = SimStorage::new(SimStorageOptions {
        seed: 2,
        writeback: true,
        ..SimStorageOptions::default()
    });
    let file = create(&storage, "x/y");
    ready(file.write_at(100, &pages(3, 4))).expect("write");
    ready(storage.rename("x/y", "x/z")).expect("rename");
    storage.writeback_all();
    assert!(storage.dirty_pages("x/z").is_empty());
    storage.crash(CrashKind::PowerLoss);
    assert_eq!(storage.buffered_len("x/z"), Some(100 + 3 * PAGE_BYTES as u64));
    assert!(!storage.exists("x/y"));
}

// ---- planned faults and halt -------------------------------------------------------

/// open (0), append (1) of 4000 bytes with the fault planned at position 1.
fn faulted_append(kind: FaultKind) -> (SimStorage, SimFile, io::Result<u64>) {
    let storage = planned(1, kind);
    let file = create(&storage, "wal/metadata");
    let result = ready(file.append(&[5; 4000]));
    (storage, file, result)
}

#[test]
fn each_fault_kind_on_append() {
    let (storage, _file, result) = faulted_append(FaultKind::FailBefore);
    assert_injected(
        result,
        "injected fault at trace position 1 (append wal/metadata): failed before",
    );
    assert_eq!(storage.buffered_len("wal/metadata"), Some(0));
    assert!(storage.fault_injected());

    let (storage, _file, result) = faulted_append(FaultKind::FailAfter);
    assert_injected(result, "failed after taking effect");
    assert_eq!(storage.buffered_len("wal/metadata"), Some(4000));

    let (storage, _file, result) = faulted_append(FaultKind::TornWithError);
    assert_injected(result, "(append wal/metadata): torn write with error");
    let landed = storage.buffered_len("wal/metadata").expect("exists");
    assert!(landed < 4000 && landed % SECTOR_BYTES as u64 == 0, "landed {landed}");

    let (storage, file, result) = faulted_append(FaultKind::TornSilent);
    assert_eq!(result.expect("silent"), 0, "reports the offset as if all was written");
    let landed = storage.buffered_len("wal/metadata").expect("exists");
    assert!(landed < 4000 && landed % SECTOR_BYTES as u64 == 0, "landed {landed}");
    assert_eq!(
        ready(file.append(b"next")).expect("append"),
        landed,
        "the next append lands at the short end"
    );
}

#[test]
fn a_torn_overwrite_keeps_the_old_bytes_after_the_prefix() {
    let storage = planned(2, FaultKind::TornSilent);
    let file = create(&storage, "f");
    ready(file.write_at(0, &[1; 2048])).expect("write");
    ready(file.write_at(0, &[2; 2048])).expect("silently torn");
    let bytes = storage.buffered_bytes("f").expect("exists");
    let landed = bytes.iter().take_while(|&&b| b == 2).count();
    assert!(landed < 2048 && landed % SECTOR_BYTES == 0, "landed {landed}");
    assert!(bytes[landed..].iter().all(|&b| b == 1));
}

/// open (0), sync_dir (1), write 4 pages (2), then the planned sync (3).
fn faulted_sync(kind: FaultKind) -> (SimStorage, io::Result<()>) {
    let storage = planned(3, kind);
    let file = create(&storage, "f");
    ready(storage.sync_dir("")).expect("sync_dir");
    ready(file.write_at(0, &pages(4, 3))).expect("write");
    let result = ready(file.sync());
    storage.check_invariants().expect("invariants");
    (storage, result)
}

#[test]
fn each_fault_kind_on_sync() {
    let (storage, result) = faulted_sync(FaultKind::FailBefore);
    assert_injected(result, "failed before taking effect");
    assert_eq!(storage.stable_len("f"), Some(0));
    assert_eq!(storage.dirty_pages("f"), [0, 1, 2, 3]);

    let (storage, result) = faulted_sync(FaultKind::FailAfter);
    assert_injected(result, "(sync f): failed after taking effect");
    assert_eq!(storage.stable_bytes("f"), Some(pages(4, 3)));

    for kind in [FaultKind::TornWithError, FaultKind::TornSilent] {
        let (storage, result) = faulted_sync(kind);
        if kind == FaultKind::TornWithError {
            assert_injected(result, "torn sync with error");
        } else {
            result.expect("a silently torn sync reports success");
        }
        assert!(
            !storage.dirty_pages("f").is_empty(),
            "{kind}: a torn sync leaves pages unstable"
        );
        storage.crash(CrashKind::PowerLoss);
        assert_ne!(
            storage.buffered_bytes("f"),
            Some(pages(4, 3)),
            "{kind}: power loss shows the tear"
        );
    }
}

/// Two files, then the planned rename at position 2.
fn faulted_rename(kind: FaultKind) -> (SimStorage, io::Result<()>) {
    let storage = planned(2, kind);
    create(&storage, "tmp");
    create(&storage, "target");
    let result = ready(storage.rename("tmp", "target"));
    (storage, result)
}

#[test]
fn each_fault_kind_on_rename() {
    let (storage, result) = faulted_rename(FaultKind::FailBefore);
    assert_injected(result, "(rename tmp -> target): failed before");
    assert!(storage.exists("tmp"));

    for (kind, message) in [
        (FaultKind::FailAfter, Some("failed after taking effect")),
        (
            FaultKind::TornWithError,
            Some("nothing to tear, so it took full effect"),
        ),
        (FaultKind::TornSilent, None),
    ] {
        let (storage, result) = faulted_rename(kind);
        match message {
            Some(message) => assert_injected(result, message),
            None => result.expect("a silently torn rename is a rename"),
        }
        assert!(
            !storage.exists("tmp") && storage.exists("target"),
            "{kind}: the rename took effect"
        );
    }
}

#[test]
fn halt_after_fails_every_later_call_and_a_crash_lifts_it() {
    let storage = SimStorage::new(SimStorageOptions {
        halt_after: Some(1),
        ..SimStorageOptions::default()
    });
    let file = create(&storage, "f"); // 0
    ready(file.append(b"in")).expect("position 1 runs"); // 1
    let error = ready(file.append(b"out")).expect_err("position 2 is past the halt");
    assert!(error.to_string().contains("the process is going down"), "{error}");
    assert!(ready(storage.open("g", OpenMode::CreateNew)).is_err());
    assert!(!storage.exists("g"), "a halted call takes no effect");
    assert_eq!(storage.buffered_bytes("f").as_deref(), Some(&b"in"[..]));
    assert_eq!(storage.operations(), 4, "halted calls are traced too");

    storage.crash(CrashKind::Process);
    create(&storage, "g");
    assert!(storage.exists("g"), "recovery runs without the halt");
}

#[test]
fn a_planned_fault_is_cleared_by_a_crash_and_can_be_armed_again() {
    let storage = planned(5, FaultKind::FailBefore);
    create(&storage, "f");
    storage.crash(CrashKind::Process);
    for _ in 0..8 {
        create(&storage, "f");
    }
    assert!(!storage.fault_injected());
    storage.arm_fault(Some(PlannedFault {
        position: storage.operations(),
        kind: FaultKind::FailBefore,
    }));
    assert!(ready(storage.open("f", OpenMode::Existing)).is_err());
    assert!(storage.fault_injected());
}

// ---- trace and determinism ---------------------------------------------------------

#[test]
fn the_trace_numbers_every_call_with_its_path() {
    let storage = sim(0);
    let file = create(&storage, "wal/log");
    ready(file.append(b"x")).expect("append");
    ready(file.sync()).expect("sync");
    ready(storage.rename("wal/log", "wal/old")).expect("rename");
    ready(storage.sync_dir("wal")).expect("sync_dir");
    let _ = ready(storage.remove("missing"));
    let trace: Vec<String> = storage.trace().iter().map(ToString::to_string).collect();
    assert_eq!(
        trace,
        [
            "0 open wal/log",
            "1 append wal/log",
            "2 sync wal/log",
            "3 rename wal/log -> wal/old",
            "4 sync_dir wal",
            "5 remove missing",
        ]
    );
    assert_eq!(storage.operations(), 6);
}

/// A short script that draws from every random choice: writeback, a tear, a crash.
fn script(seed: u64) -> SimStorage {
    let storage = SimStorage::new(SimStorageOptions {
        seed,
        writeback: true,
        fault: Some(PlannedFault {
            position: 9,
            kind: FaultKind::TornSilent,
        }),
        ..SimStorageOptions::default()
    });
    let file = create(&storage, "d/seg"); // 0
    ready(storage.sync_dir("d")).expect("sync_dir"); // 1
    ready(storage.sync_dir("")).expect("sync_dir"); // 2
    for round in 0..6u8 {
        // 3..=8
        ready(file.append(&pages(2, round))).expect("append");
    }
    ready(file.sync()).expect("silently torn"); // 9
    ready(file.write_at(3 * PAGE_BYTES as u64 + 7, &[0xee; 3000])).expect("write");
    ready(storage.rename("d/seg", "d/final")).expect("rename");
    storage.crash(CrashKind::PowerLoss);
    storage
}

#[test]
fn same_seed_same_calls_give_the_same_trace_and_state_and_another_seed_differs() {
    let (a, b, c) = (script(11), script(11), script(12));
    assert_eq!(a.trace(), b.trace());
    assert_eq!(a.state_hash(), b.state_hash());
    assert_eq!(a.buffered_bytes("d/seg"), b.buffered_bytes("d/seg"));
    assert_ne!(a.state_hash(), c.state_hash());
    a.check_invariants().expect("invariants");
    c.check_invariants().expect("invariants");
}

// ---- opt-in misdirection, bad input, names -----------------------------------------

#[test]
fn misdirected_writes_land_at_another_page_aligned_offset() {
    let storage = SimStorage::new(SimStorageOptions {
        seed: 4,
        misdirected_write_probability: PARTS_PER_MILLION,
        ..SimStorageOptions::default()
    });
    let file = create(&storage, "f");
    ready(file.write_at(100, b"lost")).expect("reports success");
    let bytes = storage.buffered_bytes("f").expect("exists");
    assert!(bytes.get(100..104) != Some(&b"lost"[..]), "not where it was aimed");
    let landed = bytes
        .windows(4)
        .position(|window| window == b"lost")
        .expect("somewhere");
    assert_eq!(landed % PAGE_BYTES, 0);
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let storage = sim(0);
    let file = create(&storage, "dir/f");
    let kind = |result: io::Result<()>| result.expect_err("refused").kind();
    assert_eq!(kind(ready(file.write_at(u64::MAX, b"x"))), io::ErrorKind::FileTooLarge);
    assert_eq!(
        kind(ready(file.write_at(FILE_BYTES_MAX, b"x"))),
        io::ErrorKind::FileTooLarge
    );
    assert_eq!(kind(ready(file.truncate(u64::MAX))), io::ErrorKind::FileTooLarge);
    let mut buf = [0; 8];
    assert_eq!(ready(file.read_at(u64::MAX, &mut buf)).expect("read"), 0);
    assert_eq!(
        kind(ready(storage.open("/abs", OpenMode::CreateOrOpen)).map(drop)),
        io::ErrorKind::InvalidInput
    );
    assert_eq!(
        kind(ready(storage.open("dir", OpenMode::CreateOrOpen)).map(drop)),
        io::ErrorKind::IsADirectory
    );
    assert_eq!(
        kind(ready(storage.open("dir/f/g", OpenMode::CreateOrOpen)).map(drop)),
        io::ErrorKind::NotADirectory
    );
    assert_eq!(kind(ready(storage.list("missing")).map(drop)), io::ErrorKind::NotFound);
    assert_eq!(
        kind(ready(storage.list("dir/f")).map(drop)),
        io::ErrorKind::NotADirectory
    );
    assert_eq!(kind(ready(storage.sync_dir("missing"))), io::ErrorKind::NotFound);
    assert_eq!(
        kind(ready(storage.rename("dir/f", "nowhere/f"))),
        io::ErrorKind::NotFound
    );
    assert_eq!(kind(ready(storage.rename("dir", "other"))), io::ErrorKind::Unsupported);
    assert_eq!(kind(ready(storage.remove("dir"))), io::ErrorKind::IsADirectory);
    assert_eq!(kind(storage.fail_writeback("missing")), io::ErrorKind::NotFound);
    assert_eq!(ready(file.len()).expect("len"), 0, "nothing above took effect");
    storage.check_invariants().expect("invariants");
}

#[test]
fn fault_and_crash_kinds_parse_from_the_names_they_print() {
    for kind in FaultKind::ALL {
        assert_eq!(kind.name().parse::<FaultKind>(), Ok(kind));
    }
    for kind in CrashKind::ALL {
        assert_eq!(kind.to_string().parse::<CrashKind>(), Ok(kind));
    }
    let error = "torn".parse::<FaultKind>().expect_err("unknown");
    assert!(
        error.to_string().contains("torn-silent"),
        "lists the accepted names: {error}"
    );
    assert!("reboot".parse::<CrashKind>().is_err());
}

// ---- random calls ------------------------------------------------------------------

#[test]
fn random_calls_keep_the_invariants_and_a_crash_leaves_what_the_model_promised() {
    let paths = ["a", "d/b", "d/c", "d/e/f"];
    for seed in 0..6 {
        let writeback = seed % 2 == 1;
        let storage = SimStorage::new(SimStorageOptions {
            seed,
            writeback,
            ..SimStorageOptions::default()
        });
        let mut rng = crate::rng::SimRng::new(seed + 100);
        let mut handles: Vec<SimFile> = Vec::new();
        for step in 0..200 {
            let path = paths[rng.index(paths.len())];
            let offset = rng.below(3 * PAGE_BYTES as u64);
            let data = vec![step as u8; rng.index(2 * PAGE_BYTES)];
            let handle = (!handles.is_empty()).then(|| rng.index(handles.len().max(1)));
            let handle = handle.and_then(|index| handles.get(index));
            // Errors (a missing file, a directory in the way) are part of the input space.
            match (rng.below(22), handle) {
                (0..=2, _) => handles.extend(ready(storage.open(path, OpenMode::CreateOrOpen)).ok()),
                (3..=5, Some(file)) => ready(file.write_at(offset, &data)).expect("write_at"),
                (6 | 7, Some(file)) => drop(ready(file.append(&data)).expect("append")),
                (8..=10, Some(file)) => ready(file.truncate(offset)).expect("truncate"),
                (11 | 12, Some(file)) => drop(ready(file.sync())),
                (13, _) => drop(ready(storage.rename(path, paths[rng.index(paths.len())]))),
                (14, _) => drop(ready(storage.remove(path))),
                (15 | 16, _) => drop(ready(storage.sync_dir(["", "d", "d/e"][rng.index(3)]))),
                (17, _) => drop(storage.fail_writeback(path)),
                (18, _) => {
                    let before: Vec<_> = paths.iter().map(|path| storage.buffered_bytes(path)).collect();
                    storage.crash(CrashKind::Process);
                    handles.clear();
                    let after: Vec<_> = paths.iter().map(|path| storage.buffered_bytes(path)).collect();
                    assert_eq!(before, after, "seed {seed} step {step}: a process crash loses nothing");
                }
                (19, _) => {
                    let promised: Vec<_> = paths.iter().map(|path| storage.stable_bytes(path)).collect();
                    storage.crash(CrashKind::PowerLoss);
                    handles.clear();
                    let after: Vec<_> = paths.iter().map(|path| storage.buffered_bytes(path)).collect();
                    if !writeback {
                        assert_eq!(
                            promised, after,
                            "seed {seed} step {step}: power loss leaves the stable state"
                        );
                    }
                }
                _ => {}
            }
            storage
                .check_invariants()
                .unwrap_or_else(|why| panic!("seed {seed} step {step}: {why}"));
        }
    }
}

// ---- random faults -----------------------------------------------------------------

fn with_rates(seed: u64, rates: FaultRates) -> SimStorage {
    let storage = sim(seed);
    storage.set_fault_rates(rates);
    storage
}

#[test]
fn a_write_error_takes_no_effect_and_is_counted() {
    let storage = with_rates(
        1,
        FaultRates {
            write_error_probability: PARTS_PER_MILLION,
            ..FaultRates::default()
        },
    );
    let file = create(&storage, "log");
    let error = ready(file.write_at(0, b"record")).expect_err("every write fails");
    assert!(error.to_string().contains("injected write error"), "{error}");
    assert_eq!(ready(file.len()).expect("len"), 0, "nothing landed");
    let injected = storage.injected();
    assert_eq!((injected.write_errors, injected.exposed_calls), (1, 1));
    assert_eq!(injected.total(), 1);
}

#[test]
fn read_errors_are_transient_no_more_in_a_row_than_the_bound_and_read_nothing() {
    let storage = sim(4);
    let file = create(&storage, "log");
    ready(file.write_at(0, b"record")).expect("write");
    storage.set_fault_rates(FaultRates {
        read_error_probability: PARTS_PER_MILLION,
        read_errors_in_a_row_max: 2,
        ..FaultRates::default()
    });
    for round in 0..3 {
        for attempt in 0..2 {
            let mut buf = [0u8; 6];
            let error = ready(file.read_at(0, &mut buf)).expect_err("every draw fails");
            assert!(error.to_string().contains("injected transient read error"), "{error}");
            assert_eq!(buf, [0; 6], "round {round} attempt {attempt}: nothing was read");
        }
        let mut buf = [0u8; 6];
        assert_eq!(
            ready(file.read_at(0, &mut buf)).expect("the third read in a row succeeds"),
            6
        );
        assert_eq!(&buf, b"record");
    }
    let injected = storage.injected();
    assert_eq!((injected.read_errors, injected.exposed_calls), (6, 9));
    assert_eq!(injected.total(), 6);
}

#[test]
fn a_sync_error_drops_the_dirty_pages_and_every_other_handle_hears_of_it_once() {
    let storage = sim(2);
    let file = create(&storage, "log");
    ready(file.write_at(0, &pages(1, 7))).expect("write");
    ready(file.sync()).expect("first sync is good");
    let other = ready(storage.open("log", OpenMode::Existing)).expect("second handle");
    ready(file.write_at(0, &pages(1, 9))).expect("overwrite");
    storage.set_fault_rates(FaultRates {
        sync_error_probability: PARTS_PER_MILLION,
        ..FaultRates::default()
    });
    let error = ready(file.sync()).expect_err("the sync fails");
    assert!(error.to_string().contains("injected sync error"), "{error}");
    storage.set_fault_rates(FaultRates::default());
    assert_eq!(read_all(&file), pages(1, 7), "the cache dropped the overwrite");
    let reported = ready(other.sync()).expect_err("the other handle hears of it");
    assert!(reported.to_string().contains("writeback failed"), "{reported}");
    ready(other.sync()).expect("once");
    ready(file.sync()).expect("the failing handle already heard of it");
    assert_eq!(storage.injected().sync_errors, 1);
}

#[test]
fn zero_rates_draw_nothing_so_a_run_without_faults_replays_as_before() {
    let plain = sim(5);
    let zero = with_rates(5, FaultRates::default());
    for storage in [&plain, &zero] {
        let file = create(storage, "log");
        for round in 0..50u8 {
            ready(file.write_at(u64::from(round) * 100, &[round; 100])).expect("write");
            ready(file.sync()).expect("sync");
        }
    }
    assert_eq!(plain.state_hash(), zero.state_hash());
    assert_eq!(zero.injected(), InjectedFaults::default());
}

#[test]
fn latent_corruption_flips_one_stable_bit_under_a_clean_page_only() {
    let storage = sim(3);
    let file = create(&storage, "wal");
    ready(file.write_at(0, &pages(2, 0))).expect("write");
    ready(file.sync()).expect("sync");
    ready(storage.sync_dir("")).expect("sync dir");
    // Page 1 dirty again: only page 0 may rot.
    ready(file.write_at(PAGE_BYTES as u64, &pages(1, 0))).expect("dirty page 1");
    assert_eq!(
        storage.corrupt_stable_bit(|path| path == "other"),
        None,
        "no eligible file"
    );
    let (path, offset) = storage
        .corrupt_stable_bit(|path| path == "wal")
        .expect("a clean stable byte");
    assert_eq!(path, "wal");
    assert!(offset < PAGE_BYTES as u64, "{offset} is under the dirty page");
    let stable = storage.stable_bytes("wal").expect("stable");
    let flipped: u32 = stable.iter().map(|byte| byte.count_ones()).sum();
    assert_eq!(flipped, 1, "exactly one bit");
    assert_eq!(read_all(&file)[offset as usize].count_ones(), 1, "reads see the rot");
    assert_eq!(storage.injected().corruptions, 1);
}

#[test]
fn a_power_cut_can_tear_a_dirty_page_to_a_strict_prefix_of_its_sectors() {
    let storage = SimStorage::new(SimStorageOptions {
        seed: 4,
        torn_write_at_power_loss: true,
        ..SimStorageOptions::default()
    });
    let file = create(&storage, "wal");
    ready(file.write_at(0, &pages(1, 1))).expect("write");
    ready(file.sync()).expect("sync");
    ready(storage.sync_dir("")).expect("sync dir");
    ready(file.write_at(0, &pages(1, 2))).expect("overwrite, unsynced");
    storage.crash(CrashKind::PowerLoss);
    let bytes = storage.stable_bytes("wal").expect("the file survives");
    assert_eq!(bytes.len(), PAGE_BYTES);
    let new = bytes.iter().take_while(|&&byte| byte == 2).count();
    assert!(
        new > 0 && new < PAGE_BYTES && new % SECTOR_BYTES == 0,
        "a strict sector prefix landed: {new} bytes"
    );
    assert!(bytes[new..].iter().all(|&byte| byte == 1), "the rest is the old page");
    assert_eq!(storage.injected().torn_writes, 1);
}

#[test]
fn an_empty_directory_is_removed_durably_only_once_its_parent_is_synced() {
    let storage = sim(1);
    let file = create(&storage, "groups/a/wal");
    ready(file.append(b"x")).expect("append");
    ready(file.sync()).expect("sync");
    for dir in ["groups/a", "groups", ""] {
        ready(storage.sync_dir(dir)).expect("sync_dir");
    }
    drop(file);
    let refused = ready(storage.remove_dir("groups/a")).expect_err("a directory holding a file");
    assert_eq!(refused.kind(), std::io::ErrorKind::DirectoryNotEmpty);
    ready(storage.remove("groups/a/wal")).expect("remove");
    ready(storage.remove_dir("groups/a")).expect("now empty");
    assert!(
        ready(storage.list("groups/a")).is_err(),
        "gone from the buffered namespace"
    );
    assert!(ready(storage.remove_dir("groups/a")).is_err(), "removed once");

    // Neither the file's removal nor the directory's was made durable: a power loss
    // brings both back.
    storage.crash(CrashKind::PowerLoss);
    assert!(storage.exists("groups/a/wal"), "the unsynced removals are undone");

    ready(storage.remove("groups/a/wal")).expect("remove");
    ready(storage.remove_dir("groups/a")).expect("empty");
    ready(storage.sync_dir("groups")).expect("the parent's entry");
    storage.crash(CrashKind::PowerLoss);
    assert!(
        !storage.exists("groups/a/wal"),
        "a durable directory removal takes its entries with it"
    );
    assert!(ready(storage.list("groups/a")).is_err());
    storage.check_invariants().expect("invariants");
}
