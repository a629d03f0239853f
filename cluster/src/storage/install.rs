//! The state-transfer install: replacing a partition's segments with a transferred set so
//! that a crash at any point leaves either the old set or the new one, never a mix.
//!
//! Layout, inside the partition's segment directory `<dir>`:
//!
//! ```text
//! <dir>/<segment file>.staging        a transferred file, written and verified, not live
//! <dir>/<segment file>.restore        a rollback's copy on its way back into place
//! <dir>/install-backup/<segment file> a copy of a live file taken before the install
//! <dir>/install-backup/MANIFEST.tmp   the manifest before it is renamed into place
//! <dir>/install-backup/MANIFEST       an install is in progress (not committed)
//! <dir>/install-backup/RETIRED        the install committed; the backup is garbage
//! ```
//!
//! The manifest is one record (magic [`INSTALL_MAGIC`], kind [`MANIFEST_RECORD_KIND`],
//! key 0) whose payload lists the old (backed-up) files and the new (staged) ones, each
//! as `name (length-prefixed UTF-8) | bytes u64 | checksum u128` (XXH3-128 of the file),
//! each list prefixed by its count. Rollback needs only the old list; the new one is
//! kept for diagnosis.
//!
//! The protocol ([`install`]):
//!
//! 1. **Backup.** Copy every live segment file into `install-backup/`, each written and
//!    synced through the handle that wrote it, then read back through it and checksummed.
//!    A sync through any other handle could report success over pages whose writeback
//!    failed; a backup that cannot be verified stops the install before anything live
//!    changes. Sync the backup directory, write the manifest the same way, rename it into
//!    place, sync the backup directory and `<dir>`.
//! 2. **Move.** Rename every staged file over its live name, remove old files not in the
//!    new set, sync `<dir>`.
//! 3. **Commit.** Rename `MANIFEST` to `RETIRED` and sync the backup directory. This one
//!    rename is the commit point.
//! 4. **Clean up.** Remove the backup files, then `RETIRED`.
//!
//! Boot runs [`recover_install`] before opening the segments: with `MANIFEST` present
//! (not committed) it puts every old file back from the verified backup and removes the
//! new ones; with `RETIRED` present it finishes the cleanup and keeps the new ones; with
//! neither it removes leftovers (a partial backup, staging and restore files).
//!
//! The caller must have closed the partition's [`super::segment::SegmentLog`] (no handle
//! writing to the live files) before [`install`] and before [`recover_install`].

use std::collections::BTreeSet;
use std::fmt;
use std::io;

use crate::codec::{Reader, Writer};
use crate::seam::{DurableFile, DurableStorage, OpenMode};
use crate::storage::record::{self, checksum};
use crate::storage::segment::{SegmentFileKind, join, list_or_empty, parse_segment_file_name, verify_log_bytes};

/// The subdirectory of a partition's segment directory holding the install backup.
pub const INSTALL_BACKUP_DIR: &str = "install-backup";

/// The manifest's name while an install is in progress.
pub const MANIFEST_NAME: &str = "MANIFEST";

/// The manifest's name once the install committed: the rename to it is the commit point.
pub const RETIRED_NAME: &str = "RETIRED";

/// The manifest's name before it is renamed into place.
pub const MANIFEST_TMP_NAME: &str = "MANIFEST.tmp";

/// Suffix of a transferred file waiting to be installed.
pub const STAGING_SUFFIX: &str = ".staging";

/// Suffix of a rollback's copy of an old file on its way back into place.
pub const RESTORE_SUFFIX: &str = ".restore";

/// The magic of the manifest record ("INST").
pub const INSTALL_MAGIC: u32 = u32::from_le_bytes(*b"INST");

/// The record kind of the manifest.
pub const MANIFEST_RECORD_KIND: u8 = 1;

/// Most files in either list of one install: 16,384 (8,192 segments, 128 GiB of 16 MiB
/// segments). An entry takes at most 52 bytes, so both lists fit one record's 4 MiB
/// payload with room to spare; a larger install is refused rather than half-described.
pub const INSTALL_FILES_MAX: usize = 16_384;

/// One file of an install: its name in the segment directory, size and checksum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstallFile {
    /// The segment file name (`<start:020>.log` or `.index`).
    pub name: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// XXH3-128 of its contents.
    pub checksum: u128,
}

/// What a completed [`install`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstallReport {
    /// Live files backed up before the move.
    pub backed_up: Vec<String>,
    /// Staged files moved into place.
    pub installed: Vec<String>,
    /// Old files removed because the new set does not have them.
    pub removed_old: Vec<String>,
    /// The install committed, but removing the retired backup failed (boot's
    /// [`recover_install`] finishes it).
    pub cleanup_error: Option<String>,
}

/// What [`recover_install`] found and did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InstallRecovery {
    /// No install was in progress. Leftovers removed: a backup taken before its manifest
    /// was in place, staging and restore files.
    NoInstall {
        /// Files removed.
        removed: Vec<String>,
    },
    /// An install had not committed: the old files were put back from the backup.
    RolledBack {
        /// Old files copied back from the backup (the others were intact in place).
        restored: Vec<String>,
        /// New files removed (not in the old set).
        removed_new: Vec<String>,
        /// Staging, restore and backup files removed.
        removed: Vec<String>,
    },
    /// An install had committed: its cleanup was finished and the new files kept.
    Completed {
        /// Backup and leftover files removed.
        removed: Vec<String>,
    },
}

/// Why an install step failed.
#[derive(Debug)]
pub enum InstallError {
    /// A storage call failed.
    Io {
        /// The file or directory.
        file: String,
        /// What was being done.
        action: &'static str,
        /// The error.
        source: io::Error,
    },
    /// A name that is not a segment file name.
    InvalidName {
        /// The name.
        name: String,
    },
    /// Transferred bytes that are not a valid segment file.
    InvalidSegment {
        /// The file name.
        name: String,
        /// What is wrong.
        why: String,
    },
    /// More files than [`INSTALL_FILES_MAX`].
    TooManyFiles {
        /// How many.
        count: usize,
    },
    /// A file read back does not hold what was written (a lost writeback or damage), or a
    /// staged or backup file no longer matches its recorded size and checksum.
    Unverified {
        /// The file.
        file: String,
        /// What differs.
        why: String,
    },
    /// An earlier install's backup is still there; run [`recover_install`] first.
    PreviousInstallPending {
        /// The manifest found.
        file: String,
    },
    /// The manifest does not decode: which files to restore is unknown.
    ManifestCorrupt {
        /// The manifest file.
        file: String,
        /// What failed.
        why: String,
    },
    /// The install failed and was resolved in-process by [`recover_install`]: `recovery`
    /// says which set the directory now holds (old for `NoInstall`/`RolledBack`, new for
    /// `Completed`, when the commit rename took effect despite its error). The staged
    /// files are gone either way.
    Interrupted {
        /// The failure.
        cause: Box<InstallError>,
        /// What the in-process recovery did.
        recovery: InstallRecovery,
    },
    /// The install failed and so did the in-process recovery: the replica must restart
    /// and let boot's [`recover_install`] resolve it.
    RecoveryFailed {
        /// The install's failure.
        cause: Box<InstallError>,
        /// The recovery's failure.
        recovery: Box<InstallError>,
    },
    /// Syncing the commit rename failed: whether the install is durable is unknown. The
    /// replica must restart and let boot's [`recover_install`] decide from the disk.
    CommitUncertain {
        /// The sync failure.
        cause: Box<InstallError>,
    },
}

impl fmt::Display for InstallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { file, action, source } => write!(f, "install: {action} {file}: {source}"),
            Self::InvalidName { name } => write!(f, "install: {name:?} is not a segment file name"),
            Self::InvalidSegment { name, why } => {
                write!(f, "install: transferred {name} is not a valid segment: {why}")
            }
            Self::TooManyFiles { count } => write!(
                f,
                "install of {count} files exceeds INSTALL_FILES_MAX {INSTALL_FILES_MAX}"
            ),
            Self::Unverified { file, why } => write!(f, "install: {file} cannot be trusted: {why}"),
            Self::PreviousInstallPending { file } => {
                write!(
                    f,
                    "install: {file} exists (an earlier install is unresolved); run recover_install first"
                )
            }
            Self::ManifestCorrupt { file, why } => write!(f, "install manifest {file} is corrupt: {why}"),
            Self::Interrupted { cause, recovery } => write!(f, "install failed ({cause}); resolved: {recovery:?}"),
            Self::RecoveryFailed { cause, recovery } => {
                write!(
                    f,
                    "install failed ({cause}) and its recovery failed too ({recovery}); restart to recover"
                )
            }
            Self::CommitUncertain { cause } => {
                write!(
                    f,
                    "install commit not known durable ({cause}); restart to let recovery decide"
                )
            }
        }
    }
}

impl std::error::Error for InstallError {}

fn io_error<'a>(file: &'a str, action: &'static str) -> impl FnOnce(io::Error) -> InstallError + 'a {
    move |source| InstallError::Io {
        file: file.to_owned(),
        action,
        source,
    }
}

/// `<name>.staging`.
pub fn staging_name(name: &str) -> String {
    format!("{name}{STAGING_SUFFIX}")
}

/// Remove `path`, a missing file being fine.
async fn remove_if_present<S: DurableStorage>(storage: &S, path: &str) -> Result<bool, InstallError> {
    match storage.remove(path).await {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(InstallError::Io {
            file: path.to_owned(),
            action: "removing",
            source,
        }),
    }
}

/// Read a whole file and describe it.
async fn read_file<S: DurableStorage>(storage: &S, path: &str) -> Result<Vec<u8>, InstallError> {
    let file = storage
        .open(path, OpenMode::Existing)
        .await
        .map_err(io_error(path, "opening"))?;
    record::read_to_end(&file).await.map_err(io_error(path, "reading"))
}

/// Check that the file at `path` has `expected`'s size and checksum.
async fn verify_file<S: DurableStorage>(storage: &S, path: &str, expected: &InstallFile) -> Result<(), InstallError> {
    let bytes = match read_file(storage, path).await {
        Err(InstallError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            return Err(InstallError::Unverified {
                file: path.to_owned(),
                why: "missing".to_owned(),
            });
        }
        other => other?,
    };
    if bytes.len() as u64 != expected.bytes || checksum(&bytes) != expected.checksum {
        let why = format!(
            "{} bytes with checksum {:#034x}, expected {} bytes with {:#034x}",
            bytes.len(),
            checksum(&bytes),
            expected.bytes,
            expected.checksum
        );
        return Err(InstallError::Unverified {
            file: path.to_owned(),
            why,
        });
    }
    Ok(())
}

/// Create `path` (replacing a leftover) holding `bytes`: written, synced through the same
/// handle, then read back through it and checksummed. A writeback failure surfaces in
/// that sync (the handle was open when it happened), and a lost or damaged page in the
/// read-back; either way the file is not trusted.
async fn write_verified<S: DurableStorage>(storage: &S, path: &str, bytes: &[u8]) -> Result<InstallFile, InstallError> {
    remove_if_present(storage, path).await?;
    let file = storage
        .open(path, OpenMode::CreateNew)
        .await
        .map_err(io_error(path, "creating"))?;
    file.write_at(0, bytes).await.map_err(io_error(path, "writing"))?;
    file.sync().await.map_err(|source| InstallError::Unverified {
        file: path.to_owned(),
        why: format!("sync through the writing handle failed ({source}): its pages may not be on disk"),
    })?;
    let back = record::read_to_end(&file)
        .await
        .map_err(io_error(path, "reading back"))?;
    let name = path.rsplit_once('/').map_or(path, |(_, name)| name).to_owned();
    let written = InstallFile {
        name,
        bytes: bytes.len() as u64,
        checksum: checksum(bytes),
    };
    if back.len() != bytes.len() || checksum(&back) != written.checksum {
        let why = format!(
            "read back {} bytes that do not match the {} written",
            back.len(),
            bytes.len()
        );
        return Err(InstallError::Unverified {
            file: path.to_owned(),
            why,
        });
    }
    Ok(written)
}

/// Write one transferred segment file to `<dir>/<name>.staging`, after checking that it is
/// a valid segment file (every record of a log; whole entries of an index), verified by
/// read-back. Returns what [`install`] needs to check it again.
pub async fn stage_file<S: DurableStorage>(
    storage: &S,
    dir: &str,
    name: &str,
    bytes: &[u8],
) -> Result<InstallFile, InstallError> {
    let invalid = |why: String| InstallError::InvalidSegment {
        name: name.to_owned(),
        why,
    };
    match parse_segment_file_name(name) {
        None => return Err(InstallError::InvalidName { name: name.to_owned() }),
        Some((start, SegmentFileKind::Log)) => {
            verify_log_bytes(start, bytes).map_err(invalid)?;
        }
        Some((_, SegmentFileKind::Index)) => {
            let entry = crate::partition::INDEX_ENTRY_BYTES;
            if !bytes.len().is_multiple_of(entry) {
                return Err(invalid(format!(
                    "{} bytes is not a whole number of {entry}-byte entries",
                    bytes.len()
                )));
            }
        }
    }
    let path = join(dir, &staging_name(name));
    let mut staged = write_verified(storage, &path, bytes).await?;
    staged.name = name.to_owned();
    Ok(staged)
}

fn encode_manifest(old: &[InstallFile], new: &[InstallFile]) -> Vec<u8> {
    let mut w = Writer::new();
    for list in [old, new] {
        w.len(list.len());
        for file in list {
            w.str(&file.name);
            w.u64(file.bytes);
            w.u128(file.checksum);
        }
    }
    record::encode(INSTALL_MAGIC, MANIFEST_RECORD_KIND, 0, &w.finish())
}

/// The old and new lists of a manifest.
fn decode_manifest(bytes: &[u8]) -> Result<(Vec<InstallFile>, Vec<InstallFile>), String> {
    let record = record::decode(INSTALL_MAGIC, bytes).map_err(|error| error.to_string())?;
    if record.kind != MANIFEST_RECORD_KIND {
        return Err(format!("record kind {}, expected {MANIFEST_RECORD_KIND}", record.kind));
    }
    if bytes.len() != record.encoded_bytes() {
        return Err(format!(
            "{} bytes follow the manifest record",
            bytes.len() - record.encoded_bytes()
        ));
    }
    let mut r = Reader::new(record.payload);
    let mut lists = [Vec::new(), Vec::new()];
    for list in &mut lists {
        let count = r
            .len("install file count", INSTALL_FILES_MAX)
            .map_err(|error| error.to_string())?;
        for _ in 0..count {
            let name = r.string("install file name").map_err(|error| error.to_string())?;
            if parse_segment_file_name(&name).is_none() {
                return Err(format!("{name:?} is not a segment file name"));
            }
            let bytes = r.u64("install file bytes").map_err(|error| error.to_string())?;
            let checksum = r.u128("install file checksum").map_err(|error| error.to_string())?;
            list.push(InstallFile { name, bytes, checksum });
        }
    }
    r.finish().map_err(|error| error.to_string())?;
    let [old, new] = lists;
    Ok((old, new))
}

/// A failure of the install's steps: resolved by recovery in-process, or left to boot.
enum StepError {
    /// Before the commit point, or the commit rename itself: recovery can decide.
    Recoverable(InstallError),
    /// The commit's directory sync: durability unknown.
    Uncertain(InstallError),
}

impl From<InstallError> for StepError {
    fn from(error: InstallError) -> Self {
        Self::Recoverable(error)
    }
}

/// Replace the live segment files of `dir` with the `staged` ones (each returned by
/// [`stage_file`]), by the protocol in the module docs. Refused before anything changes
/// if an earlier install is unresolved or a staged file no longer matches; any later
/// failure is resolved in-process by [`recover_install`] and reported as
/// [`InstallError::Interrupted`], except a failed sync of the commit rename
/// ([`InstallError::CommitUncertain`]).
pub async fn install<S: DurableStorage>(
    storage: &S,
    dir: &str,
    staged: &[InstallFile],
) -> Result<InstallReport, InstallError> {
    if staged.len() > INSTALL_FILES_MAX {
        return Err(InstallError::TooManyFiles { count: staged.len() });
    }
    let mut names = BTreeSet::new();
    for file in staged {
        if parse_segment_file_name(&file.name).is_none() || !names.insert(file.name.as_str()) {
            return Err(InstallError::InvalidName {
                name: file.name.clone(),
            });
        }
    }
    let backup_dir = join(dir, INSTALL_BACKUP_DIR);
    let leftovers = list_or_empty(storage, &backup_dir)
        .await
        .map_err(io_error(&backup_dir, "listing"))?;
    if let Some(pending) = leftovers
        .iter()
        .find(|name| *name == MANIFEST_NAME || *name == RETIRED_NAME)
    {
        return Err(InstallError::PreviousInstallPending {
            file: join(&backup_dir, pending),
        });
    }
    for file in staged {
        verify_file(storage, &join(dir, &staging_name(&file.name)), file).await?;
    }
    let mut report = InstallReport::default();
    match install_steps(storage, dir, &backup_dir, &leftovers, staged, &mut report).await {
        Ok(()) => Ok(report),
        Err(StepError::Uncertain(cause)) => Err(InstallError::CommitUncertain { cause: Box::new(cause) }),
        Err(StepError::Recoverable(cause)) => match recover_install(storage, dir).await {
            Ok(recovery) => Err(InstallError::Interrupted {
                cause: Box::new(cause),
                recovery,
            }),
            Err(recovery) => Err(InstallError::RecoveryFailed {
                cause: Box::new(cause),
                recovery: Box::new(recovery),
            }),
        },
    }
}

async fn install_steps<S: DurableStorage>(
    storage: &S,
    dir: &str,
    backup_dir: &str,
    leftovers: &[String],
    staged: &[InstallFile],
    report: &mut InstallReport,
) -> Result<(), StepError> {
    // 1. Backup: a leftover partial backup (no manifest) goes first.
    for name in leftovers {
        remove_if_present(storage, &join(backup_dir, name)).await?;
    }
    let live = list_or_empty(storage, dir).await.map_err(io_error(dir, "listing"))?;
    let old_names: Vec<&String> = live
        .iter()
        .filter(|name| parse_segment_file_name(name).is_some())
        .collect();
    if old_names.len() > INSTALL_FILES_MAX {
        return Err(InstallError::TooManyFiles { count: old_names.len() }.into());
    }
    let mut old = Vec::with_capacity(old_names.len());
    for name in old_names {
        let bytes = read_file(storage, &join(dir, name)).await?;
        let mut backup = write_verified(storage, &join(backup_dir, name), &bytes).await?;
        backup.name = name.clone();
        report.backed_up.push(name.clone());
        old.push(backup);
    }
    if !old.is_empty() {
        // The backups' entries are durable before the manifest that names them can be.
        storage
            .sync_dir(backup_dir)
            .await
            .map_err(io_error(backup_dir, "syncing directory"))?;
    }
    let manifest_tmp = join(backup_dir, MANIFEST_TMP_NAME);
    let manifest = join(backup_dir, MANIFEST_NAME);
    write_verified(storage, &manifest_tmp, &encode_manifest(&old, staged)).await?;
    storage
        .rename(&manifest_tmp, &manifest)
        .await
        .map_err(io_error(&manifest_tmp, "renaming into place"))?;
    storage
        .sync_dir(backup_dir)
        .await
        .map_err(io_error(backup_dir, "syncing directory"))?;
    storage
        .sync_dir(dir)
        .await
        .map_err(io_error(dir, "syncing directory"))?;

    // 2. Move the new files in and the old ones out.
    for file in staged {
        let from = join(dir, &staging_name(&file.name));
        storage
            .rename(&from, &join(dir, &file.name))
            .await
            .map_err(io_error(&from, "renaming into place"))?;
        report.installed.push(file.name.clone());
    }
    for file in &old {
        if !staged.iter().any(|new| new.name == file.name) {
            let path = join(dir, &file.name);
            storage
                .remove(&path)
                .await
                .map_err(io_error(&path, "removing old file"))?;
            report.removed_old.push(file.name.clone());
        }
    }
    storage
        .sync_dir(dir)
        .await
        .map_err(io_error(dir, "syncing directory"))?;

    // 3. Commit: one rename.
    let retired = join(backup_dir, RETIRED_NAME);
    storage
        .rename(&manifest, &retired)
        .await
        .map_err(io_error(&manifest, "retiring"))?;
    if let Err(source) = storage.sync_dir(backup_dir).await {
        let cause = InstallError::Io {
            file: backup_dir.to_owned(),
            action: "syncing the commit",
            source,
        };
        return Err(StepError::Uncertain(cause));
    }

    // 4. Clean up; a failure here leaves garbage that boot recovery removes.
    let cleanup = async || -> Result<(), InstallError> {
        for file in &old {
            remove_if_present(storage, &join(backup_dir, &file.name)).await?;
        }
        storage
            .sync_dir(backup_dir)
            .await
            .map_err(io_error(backup_dir, "syncing directory"))?;
        remove_if_present(storage, &retired).await?;
        storage
            .sync_dir(backup_dir)
            .await
            .map_err(io_error(backup_dir, "syncing directory"))
    };
    report.cleanup_error = cleanup().await.err().map(|error| error.to_string());
    Ok(())
}

/// Boot recovery of an install in `dir` (run before opening the segments): roll back an
/// install that had not committed, finish one that had, or remove the leftovers of one
/// that never reached its manifest. Returns what it did; fails (changing nothing live)
/// if the manifest is corrupt or a backup file does not verify, since then the old set
/// cannot be restored whole.
pub async fn recover_install<S: DurableStorage>(storage: &S, dir: &str) -> Result<InstallRecovery, InstallError> {
    let backup_dir = join(dir, INSTALL_BACKUP_DIR);
    let backups = list_or_empty(storage, &backup_dir)
        .await
        .map_err(io_error(&backup_dir, "listing"))?;
    let live = list_or_empty(storage, dir).await.map_err(io_error(dir, "listing"))?;
    let is_temporary = |name: &&String| name.ends_with(STAGING_SUFFIX) || name.ends_with(RESTORE_SUFFIX);
    let sync = async |path: &str| {
        storage
            .sync_dir(path)
            .await
            .map_err(io_error(path, "syncing directory"))
    };

    if backups.iter().any(|name| name == RETIRED_NAME) {
        // Committed. Make the commit durable before removing anything it protects.
        sync(&backup_dir).await?;
        let mut removed = Vec::new();
        for name in live.iter().filter(is_temporary) {
            let path = join(dir, name);
            remove_if_present(storage, &path).await?;
            removed.push(path);
        }
        sync(dir).await?;
        for name in backups.iter().filter(|name| *name != RETIRED_NAME) {
            let path = join(&backup_dir, name);
            remove_if_present(storage, &path).await?;
            removed.push(path);
        }
        sync(&backup_dir).await?;
        let retired = join(&backup_dir, RETIRED_NAME);
        remove_if_present(storage, &retired).await?;
        removed.push(retired);
        sync(&backup_dir).await?;
        return Ok(InstallRecovery::Completed { removed });
    }

    if !backups.iter().any(|name| name == MANIFEST_NAME) {
        // No install reached its manifest: live files are the old set, untouched.
        let mut removed = Vec::new();
        for name in live.iter().filter(is_temporary) {
            let path = join(dir, name);
            remove_if_present(storage, &path).await?;
            removed.push(path);
        }
        if !removed.is_empty() {
            sync(dir).await?;
        }
        let before = removed.len();
        for name in &backups {
            let path = join(&backup_dir, name);
            remove_if_present(storage, &path).await?;
            removed.push(path);
        }
        if removed.len() > before {
            sync(&backup_dir).await?;
        }
        return Ok(InstallRecovery::NoInstall { removed });
    }

    // Not committed: verify the whole backup before touching anything live.
    let manifest = join(&backup_dir, MANIFEST_NAME);
    let manifest_bytes = read_file(storage, &manifest).await?;
    let (old, _new) = decode_manifest(&manifest_bytes).map_err(|why| InstallError::ManifestCorrupt {
        file: manifest.clone(),
        why,
    })?;
    for file in &old {
        verify_file(storage, &join(&backup_dir, &file.name), file).await?;
    }
    let (mut restored, mut removed_new, mut removed) = (Vec::new(), Vec::new(), Vec::new());
    for name in &live {
        let path = join(dir, name);
        if is_temporary(&name) {
            remove_if_present(storage, &path).await?;
            removed.push(path);
        } else if parse_segment_file_name(name).is_some() && !old.iter().any(|file| &file.name == name) {
            remove_if_present(storage, &path).await?;
            removed_new.push(path);
        }
    }
    for file in &old {
        let path = join(dir, &file.name);
        if verify_file(storage, &path, file).await.is_ok() {
            continue;
        }
        // Copy back under a temporary name, verified, then rename over whatever is there.
        let bytes = read_file(storage, &join(&backup_dir, &file.name)).await?;
        let restore = join(dir, &format!("{}{RESTORE_SUFFIX}", file.name));
        write_verified(storage, &restore, &bytes).await?;
        storage
            .rename(&restore, &path)
            .await
            .map_err(io_error(&restore, "renaming into place"))?;
        restored.push(path);
    }
    sync(dir).await?;
    // The old set is whole and durable: drop the manifest first, so a crash from here on
    // finds no install rather than a manifest whose backup is half gone.
    remove_if_present(storage, &manifest).await?;
    sync(&backup_dir).await?;
    for name in backups.iter().filter(|name| *name != MANIFEST_NAME) {
        let path = join(&backup_dir, name);
        remove_if_present(storage, &path).await?;
        removed.push(path);
    }
    sync(&backup_dir).await?;
    Ok(InstallRecovery::RolledBack {
        restored,
        removed_new,
        removed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, bytes: u64) -> InstallFile {
        InstallFile {
            name: name.to_owned(),
            bytes,
            checksum: u128::from(bytes) << 64 | 9,
        }
    }

    #[test]
    fn a_manifest_decodes_to_what_was_encoded_and_every_flip_is_caught() {
        let old = vec![
            file("00000000000000000000.log", 300),
            file("00000000000000000000.index", 72),
        ];
        let new = vec![file("00000000000000000003.log", 100)];
        let bytes = encode_manifest(&old, &new);
        assert_eq!(decode_manifest(&bytes), Ok((old, new)));
        for index in (0..bytes.len()).step_by(7) {
            let mut damaged = bytes.clone();
            damaged[index] ^= 0x20;
            assert!(
                decode_manifest(&damaged).is_err(),
                "flip at byte {index} went unnoticed"
            );
        }
        let mut trailing = bytes.clone();
        trailing.push(0);
        assert!(
            decode_manifest(&trailing)
                .expect_err("trailing")
                .contains("1 bytes follow")
        );
    }

    #[test]
    fn a_manifest_naming_a_non_segment_file_is_refused() {
        let bytes = encode_manifest(&[file("../../superblock", 1)], &[]);
        assert!(
            decode_manifest(&bytes)
                .expect_err("bad name")
                .contains("not a segment file name")
        );
    }
}

/// Property tests of `decode_manifest` (bytes from a disk, read at boot to roll an
/// install back): the manifest is one checksummed record, so a flipped bit or a cut is
/// always refused; any bytes give a reason or a manifest that re-encodes to exactly
/// those bytes, never a panic; a file count beyond [`INSTALL_FILES_MAX`] is refused
/// before a list is built from it.
#[cfg(test)]
mod proptests {
    use proptest::prelude::*;
    use proptest::sample::Index;

    use super::*;
    use crate::testing::proptest_support::{config, damage};

    fn install_file() -> impl Strategy<Value = InstallFile> {
        (any::<u64>(), any::<bool>(), any::<u64>(), any::<u128>()).prop_map(|(start, log, bytes, checksum)| {
            let name = if log {
                crate::storage::segment::log_file_name(start)
            } else {
                crate::storage::segment::index_file_name(start)
            };
            InstallFile { name, bytes, checksum }
        })
    }

    fn manifest() -> impl Strategy<Value = (Vec<InstallFile>, Vec<InstallFile>)> {
        (
            prop::collection::vec(install_file(), 0..5),
            prop::collection::vec(install_file(), 0..5),
        )
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn manifests_round_trip_and_any_flip_or_cut_is_refused(
            (old, new) in manifest(),
            (donor_old, donor_new) in manifest(),
            (how, at, bit) in (any::<u8>(), any::<Index>(), 0u8..8),
            from in any::<Index>(),
        ) {
            let bytes = encode_manifest(&old, &new);
            prop_assert_eq!(decode_manifest(&bytes), Ok((old.clone(), new.clone())));
            let donor = encode_manifest(&donor_old, &donor_new);
            let from = from.index(donor.len());
            let damaged = damage(&bytes, how, at, bit, &donor[from..(from + 64).min(donor.len())]);
            match decode_manifest(&damaged) {
                Ok(decoded) => {
                    prop_assert!(how % 3 == 2, "a flipped bit or a cut went unnoticed");
                    prop_assert!(decoded == (old, new) || decoded == (donor_old, donor_new));
                }
                Err(why) => prop_assert!(!why.is_empty()),
            }
        }

        #[test]
        fn random_bytes_never_decode_as_a_manifest(
            input in prop::collection::vec(any::<u8>(), 0..1024),
            kind in 0u8..3,
        ) {
            prop_assert!(decode_manifest(&input).is_err());
            // Garbage inside a valid record reaches the list decoder, which must refuse it
            // or give back exactly these bytes.
            let record = record::encode(INSTALL_MAGIC, kind, 0, &input);
            if let Ok((old, new)) = decode_manifest(&record) {
                prop_assert_eq!(encode_manifest(&old, &new), record);
            }
        }

        #[test]
        fn a_file_count_beyond_install_files_max_is_refused_before_allocating(
            count in (INSTALL_FILES_MAX as u64 + 1)..=u64::MAX,
            tail in prop::collection::vec(any::<u8>(), 0..16),
        ) {
            let mut w = Writer::new();
            w.varint(count);
            w.raw(&tail);
            let record = record::encode(INSTALL_MAGIC, MANIFEST_RECORD_KIND, 0, &w.finish());
            let why = decode_manifest(&record).expect_err("the count is refused");
            prop_assert!(why.contains("install file count"), "{why}");
        }
    }
}
