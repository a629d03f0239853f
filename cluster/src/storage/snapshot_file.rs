//! A metadata snapshot on disk, replaced atomically.
//!
//! Layout: the file `<name>` holds exactly one record (see `record`): magic
//! [`SNAPSHOT_MAGIC`], kind [`SNAPSHOT_RECORD_KIND`], key = the caller's label for the
//! snapshot (the op number it was taken at), payload = the snapshot bytes (for the
//! metadata plane, `MetadataState::encode_state`). Nothing may follow the record.
//!
//! Writing never touches the current snapshot until the new one is durable:
//!
//! 1. remove a leftover `<name>.tmp` (a crashed earlier write);
//! 2. create `<name>.tmp`, write the record, sync through that same handle (a sync
//!    through another handle could miss a writeback error on these pages);
//! 3. rename `<name>.tmp` over `<name>` (atomic: a reader sees the old or the new);
//! 4. sync the directory (and its ancestors), which makes the rename durable.
//!
//! A crash before step 3 leaves the old snapshot (and a `.tmp` that boot removes with
//! [`remove_leftover_tmp`]); after step 3 the new one, whole.
//!
//! Reading: a missing `<name>` is `Ok(None)` (never written). A present one that fails
//! its checksum, is empty or carries trailing bytes is an error naming the file and the
//! failure, never "absent": treating a damaged snapshot as missing would silently drop
//! metadata that was acknowledged.

use std::fmt;
use std::io;

use crate::seam::{DurableFile, DurableStorage, OpenMode};
use crate::storage::record::{self, RECORD_PAYLOAD_BYTES_MAX};
use crate::storage::segment::sync_dir_and_ancestors;

/// The magic of a snapshot record ("SNAP"): another file's record renamed here by
/// mistake fails to decode instead of being loaded as metadata.
pub const SNAPSHOT_MAGIC: u32 = u32::from_le_bytes(*b"SNAP");

/// The record kind of a snapshot.
pub const SNAPSHOT_RECORD_KIND: u8 = 1;

/// Largest snapshot, in bytes: one record's payload, so a snapshot is checked by one
/// checksum and read with one bounded allocation. A larger state is refused with
/// [`SnapshotFileError::TooLarge`] (chunking it is future work).
pub const SNAPSHOT_BYTES_MAX: usize = RECORD_PAYLOAD_BYTES_MAX;

/// Suffix of the file a snapshot is written to before it is renamed into place.
pub const TMP_SUFFIX: &str = ".tmp";

/// A snapshot as read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The caller's label (the op number it was taken at).
    pub key: u64,
    /// The snapshot bytes, checksum verified.
    pub bytes: Vec<u8>,
}

/// Why a snapshot could not be written or read.
#[derive(Debug)]
pub enum SnapshotFileError {
    /// A storage call failed.
    Io {
        /// The file or directory.
        file: String,
        /// What was being done.
        action: &'static str,
        /// The error.
        source: io::Error,
    },
    /// The snapshot exceeds [`SNAPSHOT_BYTES_MAX`].
    TooLarge {
        /// Its size in bytes.
        bytes: usize,
    },
    /// The file exists but is not one valid snapshot record.
    Corrupt {
        /// The file.
        file: String,
        /// Its length in bytes.
        len: u64,
        /// What failed.
        why: String,
    },
}

impl fmt::Display for SnapshotFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { file, action, source } => write!(f, "snapshot: {action} {file}: {source}"),
            Self::TooLarge { bytes } => {
                write!(
                    f,
                    "snapshot of {bytes} bytes exceeds SNAPSHOT_BYTES_MAX {SNAPSHOT_BYTES_MAX}"
                )
            }
            Self::Corrupt { file, len, why } => write!(
                f,
                "snapshot {file} ({len} bytes) is corrupt: {why}; refusing to treat it as absent, which would lose \
                 acknowledged metadata"
            ),
        }
    }
}

impl std::error::Error for SnapshotFileError {}

fn io_error<'a>(file: &'a str, action: &'static str) -> impl FnOnce(io::Error) -> SnapshotFileError + 'a {
    move |source| SnapshotFileError::Io {
        file: file.to_owned(),
        action,
        source,
    }
}

/// `<path>.tmp`.
pub fn tmp_path(path: &str) -> String {
    format!("{path}{TMP_SUFFIX}")
}

/// The directory holding `path` (`""` for the storage root).
fn parent_dir(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// Remove `<path>.tmp` if present (what a crashed write leaves). Returns whether there
/// was one. Boot calls this; [`write_snapshot`] does it first too.
pub async fn remove_leftover_tmp<S: DurableStorage>(storage: &S, path: &str) -> Result<bool, SnapshotFileError> {
    let tmp = tmp_path(path);
    match storage.remove(&tmp).await {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(SnapshotFileError::Io {
            file: tmp,
            action: "removing leftover",
            source,
        }),
    }
}

/// Replace the snapshot at `path` with `bytes`, labelled `key`, atomically (see the
/// module docs for the steps). When it returns `Ok`, the new snapshot is durable; when
/// it fails, the old one is still in place.
pub async fn write_snapshot<S: DurableStorage>(
    storage: &S,
    path: &str,
    key: u64,
    bytes: &[u8],
) -> Result<(), SnapshotFileError> {
    if bytes.len() > SNAPSHOT_BYTES_MAX {
        return Err(SnapshotFileError::TooLarge { bytes: bytes.len() });
    }
    remove_leftover_tmp(storage, path).await?;
    let tmp = tmp_path(path);
    let encoded = record::encode(SNAPSHOT_MAGIC, SNAPSHOT_RECORD_KIND, key, bytes);
    let file = storage
        .open(&tmp, OpenMode::CreateNew)
        .await
        .map_err(io_error(&tmp, "creating"))?;
    file.write_at(0, &encoded).await.map_err(io_error(&tmp, "writing"))?;
    file.sync().await.map_err(io_error(&tmp, "syncing"))?;
    drop(file);
    storage
        .rename(&tmp, path)
        .await
        .map_err(io_error(&tmp, "renaming into place"))?;
    // The rename is durable once the directory is; its ancestors too, in case the
    // directory was created by this write.
    sync_dir_and_ancestors(storage, parent_dir(path))
        .await
        .map_err(|(dir, source)| SnapshotFileError::Io {
            file: dir,
            action: "syncing directory",
            source,
        })
}

/// Read the snapshot at `path`: `Ok(None)` if there is none, the verified snapshot if it
/// is whole, [`SnapshotFileError::Corrupt`] (naming the file and what failed) otherwise.
pub async fn read_snapshot<S: DurableStorage>(storage: &S, path: &str) -> Result<Option<Snapshot>, SnapshotFileError> {
    let file = match storage.open(path, OpenMode::Existing).await {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(SnapshotFileError::Io {
                file: path.to_owned(),
                action: "opening",
                source,
            });
        }
    };
    let len = file.len().await.map_err(io_error(path, "measuring"))?;
    let corrupt = |why: String| SnapshotFileError::Corrupt {
        file: path.to_owned(),
        len,
        why,
    };
    let max = (record::RECORD_HEADER_BYTES + SNAPSHOT_BYTES_MAX) as u64;
    if len > max {
        return Err(corrupt(format!(
            "longer than the largest snapshot record ({max} bytes)"
        )));
    }
    let bytes = record::read_to_end(&file).await.map_err(io_error(path, "reading"))?;
    let record =
        record::decode(SNAPSHOT_MAGIC, &bytes).map_err(|error| corrupt(format!("record at byte 0: {error}")))?;
    if record.kind != SNAPSHOT_RECORD_KIND {
        return Err(corrupt(format!(
            "record kind {}, expected {SNAPSHOT_RECORD_KIND}",
            record.kind
        )));
    }
    let trailing = bytes.len() - record.encoded_bytes();
    if trailing > 0 {
        return Err(corrupt(format!("{trailing} bytes follow the snapshot record")));
    }
    Ok(Some(Snapshot {
        key: record.key,
        bytes: record.payload.to_vec(),
    }))
}
