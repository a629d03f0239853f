//! A metadata snapshot on disk, replaced atomically.
//!
//! Layout: the file `<name>` holds records (see `record`) with magic [`SNAPSHOT_MAGIC`]
//! and key = the caller's label for the snapshot (the op number it was taken at).
//! - A snapshot of at most `RECORD_PAYLOAD_BYTES_MAX` bytes is one record of kind
//!   [`SNAPSHOT_RECORD_KIND`] whose payload is the snapshot bytes.
//! - A larger one (a partition's state holds its messages) is a run of records of kind
//!   [`SNAPSHOT_CHUNK_KIND`], each at most `RECORD_PAYLOAD_BYTES_MAX` bytes, then one of
//!   kind [`SNAPSHOT_TRAILER_KIND`] holding the total length, the chunk count and the
//!   checksum of the whole: a file cut between chunks, or with a chunk from another
//!   snapshot, fails the trailer instead of loading part of a state.
//!
//! Nothing may follow the last record.
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

/// The record kind of one chunk of a snapshot larger than one record.
pub const SNAPSHOT_CHUNK_KIND: u8 = 2;

/// The record kind that ends a chunked snapshot: `[total bytes u64][chunks u32][checksum u128]`.
pub const SNAPSHOT_TRAILER_KIND: u8 = 3;

/// Bytes of a trailer record's payload.
const TRAILER_PAYLOAD_BYTES: usize = 8 + 4 + 16;

/// Largest snapshot, in bytes: 256 MiB, the largest checkpoint
/// (`vsr::constants::CHECKPOINT_BYTES_MAX`; a partition's checkpoint holds its
/// messages). A snapshot is read whole at boot; the state it holds is in memory anyway.
/// Well below `READ_TO_END_BYTES_MAX` (1 GiB), so a valid snapshot file is always
/// readable. A larger one is refused with [`SnapshotFileError::TooLarge`].
pub const SNAPSHOT_BYTES_MAX: usize = crate::vsr::constants::CHECKPOINT_BYTES_MAX;

/// Largest snapshot file: the bytes, a record header per chunk, and the trailer.
const SNAPSHOT_FILE_BYTES_MAX: u64 = (SNAPSHOT_BYTES_MAX
    + SNAPSHOT_BYTES_MAX.div_ceil(RECORD_PAYLOAD_BYTES_MAX) * record::RECORD_HEADER_BYTES
    + record::RECORD_HEADER_BYTES
    + TRAILER_PAYLOAD_BYTES) as u64;

const _: () = assert!(SNAPSHOT_FILE_BYTES_MAX <= record::READ_TO_END_BYTES_MAX);

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
    let encoded = encode_snapshot(key, bytes);
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

/// The file's bytes: one record, or chunks and a trailer (see the module docs).
fn encode_snapshot(key: u64, bytes: &[u8]) -> Vec<u8> {
    if bytes.len() <= RECORD_PAYLOAD_BYTES_MAX {
        return record::encode(SNAPSHOT_MAGIC, SNAPSHOT_RECORD_KIND, key, bytes);
    }
    let chunks = bytes.len().div_ceil(RECORD_PAYLOAD_BYTES_MAX);
    let mut out = Vec::with_capacity(bytes.len() + (chunks + 1) * record::RECORD_HEADER_BYTES + TRAILER_PAYLOAD_BYTES);
    for chunk in bytes.chunks(RECORD_PAYLOAD_BYTES_MAX) {
        record::encode_into(&mut out, SNAPSHOT_MAGIC, SNAPSHOT_CHUNK_KIND, key, chunk);
    }
    let mut trailer = Vec::with_capacity(TRAILER_PAYLOAD_BYTES);
    trailer.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    // At most SNAPSHOT_BYTES_MAX / RECORD_PAYLOAD_BYTES_MAX = 64 chunks.
    trailer.extend_from_slice(&(chunks as u32).to_le_bytes());
    trailer.extend_from_slice(&record::checksum(bytes).to_le_bytes());
    record::encode_into(&mut out, SNAPSHOT_MAGIC, SNAPSHOT_TRAILER_KIND, key, &trailer);
    out
}

/// Reassemble a chunked snapshot from `bytes` (the whole file, whose first record is a
/// chunk); the reason if it is not exactly chunks of one key and a trailer that agrees.
fn decode_chunked(bytes: &[u8], key: u64) -> Result<Vec<u8>, String> {
    let mut whole = Vec::new();
    let mut at = 0usize;
    let mut chunks = 0u32;
    loop {
        let record =
            record::decode(SNAPSHOT_MAGIC, &bytes[at..]).map_err(|error| format!("record at byte {at}: {error}"))?;
        if record.key != key {
            return Err(format!("record at byte {at} is of snapshot {}, not {key}", record.key));
        }
        at += record.encoded_bytes();
        match record.kind {
            SNAPSHOT_CHUNK_KIND => {
                whole.extend_from_slice(record.payload);
                chunks += 1;
            }
            SNAPSHOT_TRAILER_KIND => {
                let payload = record.payload;
                if payload.len() != TRAILER_PAYLOAD_BYTES {
                    return Err(format!(
                        "trailer of {} bytes, not {TRAILER_PAYLOAD_BYTES}",
                        payload.len()
                    ));
                }
                let (total, count, sum) = (
                    record::le_u64(payload, 0),
                    record::le_u32(payload, 8),
                    record::le_u128(payload, 12),
                );
                if total != whole.len() as u64 || count != chunks {
                    return Err(format!(
                        "trailer says {total} bytes in {count} chunks, the file holds {} bytes in {chunks}",
                        whole.len()
                    ));
                }
                if sum != record::checksum(&whole) {
                    return Err("the chunks do not match the trailer's checksum".to_owned());
                }
                if at != bytes.len() {
                    return Err(format!("{} bytes follow the snapshot's trailer", bytes.len() - at));
                }
                return Ok(whole);
            }
            kind => {
                return Err(format!(
                    "record at byte {} is of kind {kind}, not a chunk or trailer",
                    at - record.encoded_bytes()
                ));
            }
        }
    }
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
    if len > SNAPSHOT_FILE_BYTES_MAX {
        return Err(corrupt(format!(
            "longer than the largest snapshot file ({SNAPSHOT_FILE_BYTES_MAX} bytes)"
        )));
    }
    let bytes = record::read_to_end(&file).await.map_err(io_error(path, "reading"))?;
    let record =
        record::decode(SNAPSHOT_MAGIC, &bytes).map_err(|error| corrupt(format!("record at byte 0: {error}")))?;
    if record.kind == SNAPSHOT_CHUNK_KIND {
        let whole = decode_chunked(&bytes, record.key).map_err(corrupt)?;
        return Ok(Some(Snapshot {
            key: record.key,
            bytes: whole,
        }));
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::{DiskStorage, run_local};

    fn storage(name: &str) -> (DiskStorage, std::path::PathBuf) {
        let root = std::env::temp_dir().join(format!("snapshot-file-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        (DiskStorage::new(&root).expect("temp dir"), root)
    }

    /// Bytes that differ from chunk to chunk, so a swapped or repeated chunk shows.
    fn state(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i / 4096 % 251) as u8 ^ (i % 7) as u8).collect()
    }

    #[test]
    fn a_snapshot_larger_than_a_record_is_written_in_chunks_and_read_back_whole() {
        let (storage, root) = storage("chunked");
        let large = state(2 * RECORD_PAYLOAD_BYTES_MAX + 12_345);
        let small = state(100);
        let read = run_local(async {
            write_snapshot(&storage, "g/checkpoint", 41, &large)
                .await
                .expect("write large");
            let large_back = read_snapshot(&storage, "g/checkpoint").await.expect("read large");
            write_snapshot(&storage, "g/checkpoint", 42, &small)
                .await
                .expect("write small");
            let small_back = read_snapshot(&storage, "g/checkpoint").await.expect("read small");
            (large_back, small_back)
        })
        .expect("runtime");
        let file_len = std::fs::metadata(root.join("g/checkpoint")).expect("file").len();
        assert_eq!(read.0, Some(Snapshot { key: 41, bytes: large }));
        assert_eq!(read.1, Some(Snapshot { key: 42, bytes: small }));
        assert_eq!(
            file_len,
            (record::RECORD_HEADER_BYTES + 100) as u64,
            "a small one stays one record"
        );
        std::fs::remove_dir_all(root).expect("cleanup");
    }

    #[test]
    fn a_chunked_snapshot_cut_short_or_with_a_damaged_chunk_is_corrupt_never_absent() {
        let (storage, root) = storage("chunked-damage");
        let large = state(RECORD_PAYLOAD_BYTES_MAX + 5_000);
        run_local(write_snapshot(&storage, "checkpoint", 7, &large))
            .expect("runtime")
            .expect("write");
        let path = root.join("checkpoint");
        let whole = std::fs::read(&path).expect("read file");
        let second_chunk = record::RECORD_HEADER_BYTES + RECORD_PAYLOAD_BYTES_MAX;
        let trailer_at = second_chunk + record::RECORD_HEADER_BYTES + 5_000;
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("no trailer", whole[..trailer_at].to_vec()),
            (
                "second chunk missing",
                [&whole[..second_chunk], &whole[trailer_at..]].concat(),
            ),
            ("a flipped byte", {
                let mut bytes = whole.clone();
                bytes[second_chunk + 100] ^= 1;
                bytes
            }),
            ("bytes after the trailer", [&whole[..], &[0u8; 3][..]].concat()),
        ];
        for (what, bytes) in cases {
            std::fs::write(&path, &bytes).expect("write damaged file");
            let read = run_local(read_snapshot(&storage, "checkpoint")).expect("runtime");
            assert!(
                matches!(read, Err(SnapshotFileError::Corrupt { .. })),
                "{what}: {:?}",
                read.map(|snapshot| snapshot.map(|s| s.bytes.len()))
            );
        }
        std::fs::remove_dir_all(root).expect("cleanup");
    }
}
