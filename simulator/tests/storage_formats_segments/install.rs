//! The state-transfer install over SimStorage: a new segment set replaces the old whole, an interrupted or crashed install or recovery leaves the old set or the new one, never a mix, and bad input is refused before anything moves.

use super::*;

/// The segment files of a log of `count` messages tagged `tag`, built on its own disk.
pub(crate) fn segment_set(count: u64, tag: &str) -> Files {
    let storage = MemStorage::new();
    let (mut log, _) = open(&storage, 0, THREE_PER_SEGMENT);
    append_all(&mut log, (0..count).map(|offset| fixed(offset, tag)));
    segment_files(&storage)
}

/// On `storage`: live segments of 4 "old" messages (two segments), and the files of 7
/// "new" ones (three) staged. Returns the old and new sets and the staged descriptions.
fn install_fixture<S: DurableStorage>(storage: &S) -> (Files, Files, Vec<InstallFile>) {
    let (mut log, _) = open(storage, 0, THREE_PER_SEGMENT);
    append_all(&mut log, (0..4).map(|offset| fixed(offset, "old")));
    drop(log);
    let old = segment_files(storage);
    let new = segment_set(7, "new");
    let staged = new
        .iter()
        .map(|(name, bytes)| ready(stage_file(storage, DIR, name, bytes)).expect("stage"))
        .collect();
    (old, new, staged)
}

/// After an install or its recovery, the directory holds one set and nothing else.
pub(crate) fn assert_no_leftovers<S: DurableStorage>(storage: &S, context: &str) {
    let strays: Vec<String> = list(storage, DIR)
        .into_iter()
        .filter(|n| parse_segment_file_name(n).is_none())
        .collect();
    assert!(strays.is_empty(), "{context}: leftovers {strays:?}");
    let backup = list(storage, &path(INSTALL_BACKUP_DIR));
    assert!(backup.is_empty(), "{context}: backup files left {backup:?}");
}

#[test]
fn an_install_replaces_the_segments_and_cleans_up() {
    let storage = MemStorage::new();
    let (old, new, staged) = install_fixture(&storage);
    assert_ne!(
        old.keys().collect::<Vec<_>>(),
        new.keys().collect::<Vec<_>>(),
        "the new set adds a segment"
    );
    let report = ready(install(&storage, DIR, &staged)).expect("install");
    assert_eq!(report.backed_up, old.keys().cloned().collect::<Vec<_>>());
    assert_eq!(report.installed.len(), new.len());
    assert_eq!(report.cleanup_error, None);
    assert_eq!(segment_files(&storage), new);
    assert_no_leftovers(&storage, "after install");
    let (mut log, recovery) = open(&storage, 7, THREE_PER_SEGMENT);
    assert!(recovery.is_clean(), "{recovery:?}");
    assert_eq!(
        read_all(&mut log),
        (0..7).map(|offset| fixed(offset, "new")).collect::<Vec<_>>()
    );
    drop(log);
    assert_eq!(
        ready(recover_install(&storage, DIR)).expect("recover"),
        InstallRecovery::NoInstall { removed: vec![] }
    );
}

#[test]
fn an_install_interrupted_before_its_commit_restores_the_old_segments_exactly() {
    let options = SimStorageOptions::default();
    let storage = SimStorage::new(options.clone());
    let (_, _, staged) = install_fixture(&storage);
    ready(install(&storage, DIR, &staged)).expect("install");
    let trace = storage.trace();
    let moved = trace
        .iter()
        .find(|entry| entry.op == TraceOp::Rename && entry.path.contains(".staging ->"))
        .expect("a staged file renamed into place")
        .position;

    // Stop the process right after the first staged file replaced a live one.
    let storage = SimStorage::new(SimStorageOptions {
        halt_after: Some(moved),
        ..options
    });
    let (old, _, staged) = install_fixture(&storage);
    assert!(
        ready(install(&storage, DIR, &staged)).is_err(),
        "the halted install fails"
    );
    storage.crash(CrashKind::Process);
    assert!(
        storage.exists(&path(&format!("{INSTALL_BACKUP_DIR}/{MANIFEST_NAME}"))),
        "an install in progress"
    );
    assert_ne!(segment_files(&storage), old, "live files are a mix of old and new");
    let recovery = ready(recover_install(&storage, DIR)).expect("recover");
    let InstallRecovery::RolledBack { restored, .. } = recovery else {
        panic!("not rolled back: {recovery:?}")
    };
    assert_eq!(
        restored,
        vec![path(&index_file_name(0))],
        "the index renamed over was put back"
    );
    assert_eq!(segment_files(&storage), old);
    assert_no_leftovers(&storage, "after rollback");
}

/// After a crashed install and its recovery, the segment files are the old set when the
/// crash point decided against the install (`Some(false)`), the new set when it decided
/// for it (`Some(true)`), either one but never a mix when it left it open (`None`); and
/// nothing else is left in the directory.
fn assert_old_or_new(storage: &SimStorage, (old, new): (&Files, &Files), decided: Option<bool>, context: &str) {
    let live = segment_files(storage);
    match decided {
        Some(false) => assert!(live == *old, "{context}: not the old set"),
        Some(true) => assert!(live == *new, "{context}: not the new set"),
        None => assert!(live == *old || live == *new, "{context}: a mix"),
    }
    assert_no_leftovers(storage, context);
}

/// Where an uninterrupted install of the fixture runs on a disk with `options`, in
/// trace positions: its first call, the position after its last, and its commit (the
/// rename to `RETIRED`). The crash sweeps step through `start - 1..end`.
fn install_positions(options: &SimStorageOptions) -> (u64, u64, u64) {
    let storage = SimStorage::new(options.clone());
    let (_, _, staged) = install_fixture(&storage);
    let start = storage.operations();
    ready(install(&storage, DIR, &staged)).expect("install");
    let commit = storage
        .trace()
        .iter()
        .find(|entry| entry.op == TraceOp::Rename && entry.path.ends_with("RETIRED"))
        .expect("the commit rename")
        .position;
    (start, storage.operations(), commit)
}

#[test]
fn an_install_crashed_at_any_step_leaves_the_old_set_or_the_new_one_never_a_mix() {
    let mut cases = 0;
    for writeback in [false, true] {
        let options = SimStorageOptions {
            seed: 5,
            writeback,
            ..SimStorageOptions::default()
        };
        let (start, end, commit) = install_positions(&options);
        for halt in start - 1..end {
            for crash in CrashKind::ALL {
                let storage = SimStorage::new(SimStorageOptions {
                    halt_after: Some(halt),
                    ..options.clone()
                });
                let (old, new, staged) = install_fixture(&storage);
                let installed = ready(install(&storage, DIR, &staged)).is_ok();
                storage.crash(crash);
                let recovery = ready(recover_install(&storage, DIR));
                let context =
                    format!("halt after {halt} (commit {commit}), {crash:?}, writeback {writeback}: {recovery:?}");
                recovery.expect("recovery succeeds");
                let decided = if halt < commit {
                    Some(false)
                } else if halt > commit || crash == CrashKind::Process || installed {
                    Some(true)
                } else {
                    None
                };
                assert_old_or_new(&storage, (&old, &new), decided, &context);
                cases += 1;
            }
        }
    }
    assert!(cases > 100, "only {cases} crash cases ran");
}

#[test]
fn a_recovery_crashed_at_any_step_is_finished_by_the_next_boot() {
    // A crash at every step of an install, then a crash at every step of the recovery
    // that follows, then one more recovery: still the old set or the new one, and the
    // outcome the install's own crash point decided whenever that point was decisive.
    let options = SimStorageOptions::default();
    let (start, end, commit) = install_positions(&options);
    // The disk as the first crash left it, with the install's sets.
    let crashed = |halt: u64, crash: CrashKind| {
        let storage = SimStorage::new(SimStorageOptions {
            halt_after: Some(halt),
            ..options.clone()
        });
        let (old, new, staged) = install_fixture(&storage);
        let _ = ready(install(&storage, DIR, &staged));
        storage.crash(crash);
        (storage, old, new)
    };
    let mut cases = 0;
    for halt in start - 1..end {
        for first in CrashKind::ALL {
            let recovery_ops = {
                let (storage, _, _) = crashed(halt, first);
                let before = storage.operations();
                ready(recover_install(&storage, DIR)).expect("recovery");
                before - 1..storage.operations()
            };
            for recovery_halt in recovery_ops {
                for second in CrashKind::ALL {
                    let (storage, old, new) = crashed(halt, first);
                    storage.set_halt_after(Some(recovery_halt));
                    let _ = ready(recover_install(&storage, DIR));
                    storage.crash(second);
                    let recovery = ready(recover_install(&storage, DIR));
                    let context = format!(
                        "install halted after {halt} (commit {commit}), {first:?}; recovery halted after \
                         {recovery_halt}, {second:?}: {recovery:?}"
                    );
                    recovery.expect("the second recovery succeeds");
                    // An install halted right at its commit rename left the commit in the
                    // page cache only: a later power loss may still undo it.
                    let decided = (halt != commit).then_some(halt > commit);
                    assert_old_or_new(&storage, (&old, &new), decided, &context);
                    cases += 1;
                }
            }
        }
    }
    assert!(cases > 1_000, "only {cases} crash cases ran");
}

/// A [`SimStorage`] whose writeback of one file fails right after each write to it: the
/// kernel drops the pages and tells only the handles open at that moment.
#[derive(Clone, Debug)]
struct FailWritebackOf {
    inner: SimStorage,
    target: String,
}

struct WatchedFile {
    inner: SimFile,
    storage: SimStorage,
    fail: bool,
}

impl DurableStorage for FailWritebackOf {
    type File = WatchedFile;
    async fn open(&self, path: &str, mode: OpenMode) -> std::io::Result<WatchedFile> {
        let inner = self.inner.open(path, mode).await?;
        Ok(WatchedFile {
            inner,
            storage: self.inner.clone(),
            fail: path == self.target,
        })
    }

    cluster::forward_to_inner!(rename, remove, remove_dir, list, sync_dir);
}

impl DurableFile for WatchedFile {
    async fn write_at(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        self.inner.write_at(offset, data).await?;
        if self.fail {
            self.storage.fail_writeback(self.inner.path())?;
        }
        Ok(())
    }

    cluster::forward_to_inner!(read_at, append, len, sync, truncate);
}

#[test]
fn an_install_whose_backup_lost_its_writeback_is_refused_and_changes_nothing() {
    let sim = SimStorage::default();
    let target = path(&format!("{INSTALL_BACKUP_DIR}/{}", log_file_name(3)));
    let storage = FailWritebackOf {
        inner: sim.clone(),
        target: target.clone(),
    };
    let (old, _, staged) = install_fixture(&storage);

    let error = ready(install(&storage, DIR, &staged)).expect_err("a backup it cannot trust");
    let InstallError::Interrupted { cause, recovery } = &error else {
        panic!("{error}")
    };
    assert!(
        matches!(cause.as_ref(), InstallError::Unverified { file, why } if *file == target && why.contains("writeback failed")),
        "{cause}"
    );
    assert!(
        matches!(recovery, InstallRecovery::NoInstall { .. }),
        "never reached a manifest: {recovery:?}"
    );
    assert_eq!(segment_files(&sim), old, "the live segments are untouched");
    assert_no_leftovers(&sim, "after the refusal");
    sim.crash(CrashKind::PowerLoss);
    assert_eq!(segment_files(&sim), old, "and durable");
}

#[test]
fn a_staged_file_that_changed_or_a_bad_transfer_is_refused_before_anything_moves() {
    let storage = MemStorage::new();
    let (old, new, staged) = install_fixture(&storage);
    let victim = &staged[1].name;
    let mut bytes = new[victim].clone();
    bytes[10] ^= 1;
    put_file(&storage, &path(&staging_name(victim)), &bytes);
    let error = ready(install(&storage, DIR, &staged)).expect_err("refused");
    assert!(
        matches!(&error, InstallError::Unverified { file, .. } if file.ends_with(".staging")),
        "{error}"
    );
    assert_eq!(segment_files(&storage), old);

    let mut log = new[&log_file_name(3)].clone();
    log[150] ^= 1;
    let error = ready(stage_file(&storage, DIR, &log_file_name(3), &log)).expect_err("a damaged transfer");
    assert!(matches!(&error, InstallError::InvalidSegment { .. }), "{error}");
    let error = ready(stage_file(&storage, DIR, "../escape.log", b"")).expect_err("a bad name");
    assert!(matches!(&error, InstallError::InvalidName { .. }), "{error}");
}

#[test]
fn a_corrupt_manifest_is_reported_and_nothing_is_touched() {
    let storage = SimStorage::default();
    let (_, _, staged) = install_fixture(&storage);
    let moved = {
        let probe = SimStorage::default();
        let (_, _, staged) = install_fixture(&probe);
        ready(install(&probe, DIR, &staged)).expect("install");
        probe
            .trace()
            .iter()
            .find(|e| e.op == TraceOp::Rename && e.path.contains(".staging ->"))
            .expect("rename")
            .position
    };
    storage.set_halt_after(Some(moved));
    assert!(ready(install(&storage, DIR, &staged)).is_err());
    storage.crash(CrashKind::Process);
    let manifest = path(&format!("{INSTALL_BACKUP_DIR}/{MANIFEST_NAME}"));
    let mut bytes = file_bytes(&storage, &manifest);
    bytes[60] ^= 0x10;
    put_file(&storage, &manifest, &bytes);
    let before = segment_files(&storage);
    let error = ready(recover_install(&storage, DIR)).expect_err("cannot know what to restore");
    assert!(
        matches!(&error, InstallError::ManifestCorrupt { file, .. } if *file == manifest),
        "{error}"
    );
    assert_eq!(segment_files(&storage), before);
}
