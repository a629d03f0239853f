//! The superblock: a replica's durable identity and view state, kept in several copies.
//!
//! One file, `superblock` (inside the group's directory), holds [`SUPERBLOCK_COPIES`]
//! copies, each in its own [`SUPERBLOCK_SLOT_BYTES`] slot, each one [`record`]:
//!
//! ```text
//! slot i (i in 0..SUPERBLOCK_COPIES) at offset i * SUPERBLOCK_SLOT_BYTES:
//!   record (magic SUPERBLOCK_MAGIC, kind 1, key = sequence), payload little-endian:
//!    0 version        u16   SUPERBLOCK_VERSION
//!    2 copy           u8    the slot this copy was written for (a copy found in another
//!                           slot was misdirected: damage)
//!    3 replica        u8    this replica's index
//!    4 replica_count  u8
//!    5 reserved       [u8; 3] zero
//!    8 cluster        u128  cluster id (`cluster_id` of the cluster's name)
//!   24 group          u64   VSR group (0 = metadata)
//!   32 view          u64
//!   40 log_view       u64
//!   48 commit_max     u64
//!   56 extension_len  u16   at most SUPERBLOCK_EXTENSION_BYTES_MAX
//!   58 reserved       [u8; 6] zero
//!   64 extension      extension_len bytes (opaque; checkpoint information later)
//!   the rest of the slot is zero
//! ```
//!
//! Every write bumps the sequence and rewrites every copy; [`SuperblockFile::open`]
//! takes the intact copy with the highest sequence. The copies are written in two
//! halves with a sync between them, so at every instant at least half of them are
//! intact and stable (the old ones while the first half is in flight, the new ones
//! after): no single crash, power loss or torn write can leave no copy behind.
//! A data directory whose every copy is damaged is reported as such
//! ([`SuperblockError::NoIntactCopy`]), never silently reformatted.

use std::fmt;
use std::io;

use super::record::{self, RecordError};
use super::wal::{join_path, sync_ancestors};
use crate::seam::{DurableFile, DurableStorage, OpenMode};
use crate::vsr::store::Superblock as VsrSuperblock;

/// File name of the superblock inside a group's directory.
pub const SUPERBLOCK_FILE: &str = "superblock";

/// File name a superblock is formatted under before it is renamed into place, so a
/// crash during `format` leaves either no superblock or a complete one.
const SUPERBLOCK_FORMAT_FILE: &str = "superblock.format";

/// Copies of the superblock. Four, written two at a time: a torn or failed write
/// damages at most the half in flight, and one bad sector still leaves three.
pub const SUPERBLOCK_COPIES: usize = 4;

/// Bytes per copy's slot, in bytes: one 4 KiB page, the unit a disk writes atomically
/// at best and tears at worst, so a torn write damages at most the copy being written.
pub const SUPERBLOCK_SLOT_BYTES: u64 = 4096;

/// Largest opaque extension, in bytes: room for checkpoint information (a few
/// checksums and offsets) with headroom, while a copy still fits its 4 KiB slot.
pub const SUPERBLOCK_EXTENSION_BYTES_MAX: usize = 2048;

/// Magic of superblock records ("SUPB"): a record of another file in a slot is damage.
const SUPERBLOCK_MAGIC: u32 = 0x5355_5042;

/// Record kind of a superblock copy.
const KIND_COPY: u8 = 1;

/// Version of the payload layout above; a copy of another version is refused as damage.
const SUPERBLOCK_VERSION: u16 = 1;

/// Bytes of the payload before the extension.
const PAYLOAD_FIXED_BYTES: usize = 64;

const _: () = assert!(
    record::RECORD_HEADER_BYTES + PAYLOAD_FIXED_BYTES + SUPERBLOCK_EXTENSION_BYTES_MAX
        <= SUPERBLOCK_SLOT_BYTES as usize,
    "a superblock copy must fit its slot"
);
const _: () = assert!(
    SUPERBLOCK_COPIES >= 2 && SUPERBLOCK_COPIES.is_multiple_of(2),
    "copies are written in two halves"
);

/// The cluster id stamped into every superblock: XXH3-128 of the cluster's name.
pub fn cluster_id(name: &str) -> u128 {
    record::checksum(name.as_bytes())
}

/// Who a data directory belongs to: checked at every boot, so a replica never runs on
/// another cluster's, another replica's or another group's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    /// The cluster id ([`cluster_id`] of the cluster's name).
    pub cluster: u128,
    /// The VSR group (0 = metadata, else a partition's group id).
    pub group: u64,
    /// This replica's index in the group.
    pub replica: u8,
    /// Replicas in the group.
    pub replica_count: u8,
}

/// The view state a superblock write makes durable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SuperblockState {
    /// The highest view this replica has promised to.
    pub view: u64,
    /// The last view in which this replica saw a view start.
    pub log_view: u64,
    /// The commit point known when that view started.
    pub commit_max: u64,
    /// Opaque bytes for later use (checkpoint information), at most
    /// [`SUPERBLOCK_EXTENSION_BYTES_MAX`].
    pub extension: Vec<u8>,
}

impl SuperblockState {
    /// The VSR replica's view of this state.
    pub fn vsr(&self) -> VsrSuperblock {
        VsrSuperblock {
            view: self.view,
            log_view: self.log_view,
            commit_max: self.commit_max,
        }
    }

    /// This state with the VSR fields replaced by `superblock` (the extension kept).
    pub fn with_vsr(&self, superblock: VsrSuperblock) -> Self {
        Self {
            view: superblock.view,
            log_view: superblock.log_view,
            commit_max: superblock.commit_max,
            extension: self.extension.clone(),
        }
    }
}

/// Why one copy was not used at open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyDamage {
    /// The copy (slot index).
    pub copy: usize,
    /// What is wrong with it.
    pub reason: String,
    /// The disk refused to read it (an I/O error through every retry), as opposed to
    /// bytes that read but fail their checks.
    pub unreadable: bool,
}

impl fmt::Display for CopyDamage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "copy {} at offset {}: {}",
            self.copy,
            self.copy as u64 * SUPERBLOCK_SLOT_BYTES,
            self.reason
        )
    }
}

/// What [`SuperblockFile::open`] found, for logs and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SuperblockOpenReport {
    /// The sequence of the copy that won.
    pub sequence: u64,
    /// Copies that failed to decode or validate (torn, corrupted, misdirected).
    pub damaged: Vec<CopyDamage>,
    /// Intact copies older than the winner (a write that stopped half way).
    pub stale: Vec<usize>,
}

/// Why the superblock could not be formatted, opened or written.
#[derive(Debug)]
pub enum SuperblockError {
    /// No superblock file: this data directory was never formatted.
    NotFormatted {
        /// The file looked for.
        path: String,
    },
    /// `format` found a superblock already there.
    AlreadyFormatted {
        /// The existing file.
        path: String,
    },
    /// `format` read back other bytes than it wrote (the disk acknowledged a write it
    /// did not make whole): nothing was put in place, so a retry formats from nothing.
    FormatNotVerified {
        /// The scratch file.
        path: String,
    },
    /// The superblock names another cluster.
    WrongCluster {
        /// The id this process was started with.
        expected: u128,
        /// The id on disk.
        found: u128,
    },
    /// The superblock names another replica (index or replica count) or group.
    WrongReplica {
        /// Who this process was started as.
        expected: Identity,
        /// Who the data directory belongs to.
        found: Identity,
    },
    /// Every copy is damaged: the directory was formatted (the file exists) but no
    /// copy can be trusted. Never reformatted automatically.
    NoIntactCopy {
        /// The superblock file.
        path: String,
        /// What is wrong with each copy.
        damaged: Vec<CopyDamage>,
    },
    /// The newest intact copy holds a value no running replica can have written (a view
    /// past `wire::VIEW_MAX`, a log view past the view, a commit point past
    /// `wire::OP_MAX`): its checksum says the bytes are as written, so whatever wrote
    /// them was not this cluster's code. Refused rather than run on: the core's
    /// arithmetic on it would overflow.
    Impossible {
        /// The superblock file.
        path: String,
        /// What is impossible about it.
        problem: String,
    },
    /// An extension longer than [`SUPERBLOCK_EXTENSION_BYTES_MAX`].
    ExtensionTooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// A storage operation failed.
    Io {
        /// The file or directory.
        path: String,
        /// What was being done.
        action: &'static str,
        /// The error.
        source: io::Error,
    },
}

impl fmt::Display for SuperblockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotFormatted { path } => write!(f, "{path}: no superblock; this data directory was never formatted"),
            Self::AlreadyFormatted { path } => {
                write!(
                    f,
                    "{path}: already formatted; refusing to format over an existing superblock"
                )
            }
            Self::FormatNotVerified { path } => write!(
                f,
                "{path}: the new superblock read back differently than it was written; \
                 nothing was put in place, so the next start formats again"
            ),
            Self::WrongCluster { expected, found } => write!(
                f,
                "this data directory belongs to another cluster: it holds cluster id {found:#034x}, \
                 this process was started for cluster id {expected:#034x}"
            ),
            Self::WrongReplica { expected, found } => write!(
                f,
                "this data directory belongs to replica {} of {} in group {}, \
                 but this process was started as replica {} of {} in group {}",
                found.replica,
                found.replica_count,
                found.group,
                expected.replica,
                expected.replica_count,
                expected.group
            ),
            Self::NoIntactCopy { path, damaged } => {
                write!(f, "{path}: every superblock copy is damaged, refusing to guess (")?;
                for (index, damage) in damaged.iter().enumerate() {
                    if index > 0 {
                        write!(f, "; ")?;
                    }
                    write!(f, "{damage}")?;
                }
                write!(f, "); restore the directory or rebuild this replica from its peers")
            }
            Self::Impossible { path, problem } => write!(
                f,
                "{path}: {problem}; no replica of this cluster writes such a superblock, so refusing to start on it \
                 (restore the directory or rebuild this replica from its peers)"
            ),
            Self::ExtensionTooLong { len } => write!(
                f,
                "superblock extension of {len} bytes exceeds SUPERBLOCK_EXTENSION_BYTES_MAX {SUPERBLOCK_EXTENSION_BYTES_MAX}"
            ),
            Self::Io { path, action, source } => write!(f, "{path}: {action}: {source}"),
        }
    }
}

impl std::error::Error for SuperblockError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn io_error<'a>(path: &'a str, action: &'static str) -> impl FnOnce(io::Error) -> SuperblockError + 'a {
    move |source| SuperblockError::Io {
        path: path.to_owned(),
        action,
        source,
    }
}

/// What no replica can have written into a superblock, if anything.
fn impossible(state: &SuperblockState) -> Option<String> {
    use crate::wire::{OP_MAX, VIEW_MAX};
    if state.view > VIEW_MAX {
        Some(format!(
            "view {} is past the largest possible view {VIEW_MAX}",
            state.view
        ))
    } else if state.log_view > state.view {
        Some(format!("log view {} is past the view {}", state.log_view, state.view))
    } else if state.commit_max > OP_MAX {
        Some(format!(
            "commit point {} is past the largest possible op {OP_MAX}",
            state.commit_max
        ))
    } else {
        None
    }
}

/// One decoded copy.
struct Copy {
    sequence: u64,
    identity: Identity,
    state: SuperblockState,
}

fn encode_copy(copy: usize, sequence: u64, identity: Identity, state: &SuperblockState) -> Vec<u8> {
    let mut payload = Vec::with_capacity(PAYLOAD_FIXED_BYTES + state.extension.len());
    payload.extend_from_slice(&SUPERBLOCK_VERSION.to_le_bytes());
    // SUPERBLOCK_COPIES is far below 256.
    payload.push(copy as u8);
    payload.push(identity.replica);
    payload.push(identity.replica_count);
    payload.extend_from_slice(&[0; 3]);
    payload.extend_from_slice(&identity.cluster.to_le_bytes());
    for value in [identity.group, state.view, state.log_view, state.commit_max] {
        payload.extend_from_slice(&value.to_le_bytes());
    }
    // Bounded by SUPERBLOCK_EXTENSION_BYTES_MAX (checked by every writer) < u16::MAX.
    payload.extend_from_slice(&(state.extension.len() as u16).to_le_bytes());
    payload.extend_from_slice(&[0; 6]);
    debug_assert_eq!(payload.len(), PAYLOAD_FIXED_BYTES);
    payload.extend_from_slice(&state.extension);
    let mut slot = record::encode(SUPERBLOCK_MAGIC, KIND_COPY, sequence, &payload);
    slot.resize(SUPERBLOCK_SLOT_BYTES as usize, 0);
    slot
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut raw = [0; 8];
    raw.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(raw)
}

/// How many of the [`SUPERBLOCK_COPIES`] copies in a superblock file's bytes decode
/// intact (whatever their sequence or identity). For a simulator that must not damage
/// more copies than boot can do without.
pub fn intact_copies(bytes: &[u8]) -> usize {
    (0..SUPERBLOCK_COPIES)
        .filter(|&copy| {
            let start = copy * SUPERBLOCK_SLOT_BYTES as usize;
            let end = (start + SUPERBLOCK_SLOT_BYTES as usize).min(bytes.len());
            start < end && decode_copy(copy, &bytes[start..end]).is_ok()
        })
        .count()
}

fn decode_copy(slot_index: usize, slot: &[u8]) -> Result<Copy, String> {
    let record = record::decode(SUPERBLOCK_MAGIC, slot).map_err(|error| match error {
        RecordError::End => "never written (zeros)".to_owned(),
        other => other.to_string(),
    })?;
    if record.kind != KIND_COPY {
        return Err(format!(
            "record kind {} is not a superblock copy ({KIND_COPY})",
            record.kind
        ));
    }
    let payload = record.payload;
    if payload.len() < PAYLOAD_FIXED_BYTES {
        return Err(format!(
            "payload of {} bytes is shorter than the {PAYLOAD_FIXED_BYTES} fixed bytes",
            payload.len()
        ));
    }
    let version = u16::from_le_bytes([payload[0], payload[1]]);
    if version != SUPERBLOCK_VERSION {
        return Err(format!(
            "layout version {version}, this build reads version {SUPERBLOCK_VERSION}"
        ));
    }
    if usize::from(payload[2]) != slot_index {
        return Err(format!("holds copy {} (a misdirected write)", payload[2]));
    }
    if payload[5..8] != [0; 3] || payload[58..64] != [0; 6] {
        return Err("reserved bytes are not zero".to_owned());
    }
    let mut cluster = [0; 16];
    cluster.copy_from_slice(&payload[8..24]);
    let extension_len = usize::from(u16::from_le_bytes([payload[56], payload[57]]));
    if extension_len > SUPERBLOCK_EXTENSION_BYTES_MAX || PAYLOAD_FIXED_BYTES + extension_len != payload.len() {
        return Err(format!(
            "extension length {extension_len} does not match the payload of {} bytes (at most {SUPERBLOCK_EXTENSION_BYTES_MAX})",
            payload.len()
        ));
    }
    Ok(Copy {
        sequence: record.key,
        identity: Identity {
            cluster: u128::from_le_bytes(cluster),
            group: u64_at(payload, 24),
            replica: payload[3],
            replica_count: payload[4],
        },
        state: SuperblockState {
            view: u64_at(payload, 32),
            log_view: u64_at(payload, 40),
            commit_max: u64_at(payload, 48),
            extension: payload[PAYLOAD_FIXED_BYTES..].to_vec(),
        },
    })
}

/// An open superblock: the state of the newest copy, and the handle every later write
/// goes through (and is synced through, so a writeback error is seen by the writer).
pub struct SuperblockFile<S: DurableStorage> {
    path: String,
    file: S::File,
    identity: Identity,
    sequence: u64,
    state: SuperblockState,
}

impl<S: DurableStorage> fmt::Debug for SuperblockFile<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SuperblockFile")
            .field("path", &self.path)
            .field("identity", &self.identity)
            .field("sequence", &self.sequence)
            .field("state", &self.state)
            .finish()
    }
}

impl<S: DurableStorage> SuperblockFile<S> {
    /// Format `dir` (`""` for the storage root) for `identity` on first boot: every copy
    /// at sequence 1 with view 0, written to a scratch file, synced, renamed into place
    /// and the directory synced. Refuses if a superblock already exists.
    pub async fn format(storage: &S, dir: &str, identity: Identity) -> Result<Self, SuperblockError> {
        let path = join_path(dir, SUPERBLOCK_FILE);
        match storage.open(&path, OpenMode::Existing).await {
            Ok(_) => return Err(SuperblockError::AlreadyFormatted { path }),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(io_error(&path, "checking for an existing superblock")(error)),
        }
        let scratch = join_path(dir, SUPERBLOCK_FORMAT_FILE);
        let file = storage
            .open(&scratch, OpenMode::CreateOrOpen)
            .await
            .map_err(io_error(&scratch, "creating"))?;
        // A leftover from a format that crashed: start from nothing.
        file.truncate(0).await.map_err(io_error(&scratch, "truncating"))?;
        let state = SuperblockState::default();
        let mut bytes = Vec::with_capacity(SUPERBLOCK_COPIES * SUPERBLOCK_SLOT_BYTES as usize);
        for copy in 0..SUPERBLOCK_COPIES {
            bytes.extend_from_slice(&encode_copy(copy, 1, identity, &state));
        }
        file.write_at(0, &bytes).await.map_err(io_error(&scratch, "writing"))?;
        file.sync().await.map_err(io_error(&scratch, "syncing"))?;
        // Read the scratch file back before it becomes the superblock: a write the disk
        // acknowledged but tore would otherwise be renamed into place, and every later
        // boot would refuse a replica that never acknowledged anything. Left unrenamed,
        // the next boot formats again from nothing.
        let mut written = vec![0; bytes.len()];
        let read = file
            .read_at(0, &mut written)
            .await
            .map_err(io_error(&scratch, "reading back"))?;
        if read != bytes.len() || written != bytes {
            return Err(SuperblockError::FormatNotVerified { path: scratch });
        }
        drop(file);
        storage
            .rename(&scratch, &path)
            .await
            .map_err(io_error(&scratch, "renaming into place"))?;
        sync_ancestors(storage, &path)
            .await
            .map_err(io_error(&path, "syncing the directory"))?;
        let (superblock, _report) = Self::open(storage, dir, identity).await?;
        Ok(superblock)
    }

    /// Open the superblock in `dir` and check it belongs to `expected`. The intact copy
    /// with the highest sequence wins; the report names damaged and stale copies.
    pub async fn open(
        storage: &S,
        dir: &str,
        expected: Identity,
    ) -> Result<(Self, SuperblockOpenReport), SuperblockError> {
        let path = join_path(dir, SUPERBLOCK_FILE);
        let file = match storage.open(&path, OpenMode::Existing).await {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Err(SuperblockError::NotFormatted { path });
            }
            Err(error) => return Err(io_error(&path, "opening")(error)),
        };
        let mut copies = Vec::new();
        let mut damaged = Vec::new();
        let mut slot = vec![0; SUPERBLOCK_SLOT_BYTES as usize];
        for copy in 0..SUPERBLOCK_COPIES {
            let offset = copy as u64 * SUPERBLOCK_SLOT_BYTES;
            // An unreadable copy is a damaged copy (another copy may still be whole).
            let read = match file.read_at(offset, &mut slot).await {
                Ok(read) => read,
                Err(error) => {
                    damaged.push(CopyDamage {
                        copy,
                        reason: format!("unreadable: {error}"),
                        unreadable: true,
                    });
                    continue;
                }
            };
            if read < slot.len() {
                damaged.push(CopyDamage {
                    copy,
                    reason: format!("file ends inside the slot ({read} of {SUPERBLOCK_SLOT_BYTES} bytes)"),
                    unreadable: false,
                });
                continue;
            }
            match decode_copy(copy, &slot) {
                Ok(decoded) => copies.push((copy, decoded)),
                Err(reason) => damaged.push(CopyDamage {
                    copy,
                    reason,
                    unreadable: false,
                }),
            }
        }
        let Some(newest) = copies.iter().map(|(_, copy)| copy.sequence).max() else {
            return Err(SuperblockError::NoIntactCopy { path, damaged });
        };
        let stale = copies
            .iter()
            .filter(|(_, copy)| copy.sequence < newest)
            .map(|(index, _)| *index)
            .collect();
        let Some((_, winner)) = copies.into_iter().find(|(_, copy)| copy.sequence == newest) else {
            return Err(SuperblockError::NoIntactCopy { path, damaged });
        };
        if winner.identity.cluster != expected.cluster {
            return Err(SuperblockError::WrongCluster {
                expected: expected.cluster,
                found: winner.identity.cluster,
            });
        }
        if winner.identity != expected {
            return Err(SuperblockError::WrongReplica {
                expected,
                found: winner.identity,
            });
        }
        if let Some(problem) = impossible(&winner.state) {
            return Err(SuperblockError::Impossible { path, problem });
        }
        let report = SuperblockOpenReport {
            sequence: newest,
            damaged,
            stale,
        };
        let superblock = Self {
            path,
            file,
            identity: winner.identity,
            sequence: newest,
            state: winner.state,
        };
        Ok((superblock, report))
    }

    /// Make `state` durable: bump the sequence and rewrite every copy, half of them at a
    /// time, each half synced through this handle before the next is written. Returns
    /// only once every copy is durable. On an error the write may or may not have taken
    /// effect (the first half may be durable); the next write supersedes it either way.
    pub async fn write(&mut self, state: SuperblockState) -> Result<(), SuperblockError> {
        if state.extension.len() > SUPERBLOCK_EXTENSION_BYTES_MAX {
            return Err(SuperblockError::ExtensionTooLong {
                len: state.extension.len(),
            });
        }
        // Bumped before writing: a failed attempt may have left this sequence on disk,
        // so a retry must use a higher one and never write two states under one number.
        self.sequence += 1;
        let half = SUPERBLOCK_COPIES / 2;
        for copies in [0..half, half..SUPERBLOCK_COPIES] {
            for copy in copies {
                let bytes = encode_copy(copy, self.sequence, self.identity, &state);
                self.file
                    .write_at(copy as u64 * SUPERBLOCK_SLOT_BYTES, &bytes)
                    .await
                    .map_err(io_error(&self.path, "writing a copy"))?;
            }
            self.file.sync().await.map_err(io_error(&self.path, "syncing"))?;
        }
        self.state = state;
        Ok(())
    }

    /// The state of the last successful write (or of the copy that won at open).
    pub fn state(&self) -> &SuperblockState {
        &self.state
    }

    /// Whose superblock this is.
    pub fn identity(&self) -> Identity {
        self.identity
    }

    /// The sequence of the last write attempted (or of the copy that won at open).
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// The superblock file's path.
    pub fn path(&self) -> &str {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::DiskStorage;
    use futures::FutureExt;

    /// DiskStorage calls block and complete at once: their futures are always ready.
    fn ready<T>(future: impl Future<Output = T>) -> T {
        future.now_or_never().expect("DiskStorage futures are always ready")
    }

    fn temp_storage(name: &str) -> (DiskStorage, std::path::PathBuf) {
        let root = std::env::temp_dir().join(format!("cluster-superblock-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        (DiskStorage::new(&root).expect("temp dir"), root)
    }

    fn identity() -> Identity {
        Identity {
            cluster: cluster_id("test-cluster"),
            group: 0,
            replica: 1,
            replica_count: 3,
        }
    }

    fn state(view: u64) -> SuperblockState {
        SuperblockState {
            view,
            log_view: view - 1,
            commit_max: view * 10,
            extension: vec![view as u8; 7],
        }
    }

    #[test]
    fn a_superblock_holding_a_view_no_replica_can_reach_refuses_to_open_naming_the_file() {
        let (storage, root) = temp_storage("impossible");
        let mut superblock = ready(SuperblockFile::format(&storage, "", identity())).expect("format");
        // What a forged StartViewChange for view 2^64-1 left on every node's disk.
        let forged = SuperblockState {
            view: u64::MAX,
            log_view: 3,
            commit_max: 30,
            extension: Vec::new(),
        };
        ready(superblock.write(forged)).expect("the write itself is not checked");
        let refused = ready(SuperblockFile::open(&storage, "", identity())).expect_err("impossible view");
        let text = refused.to_string();
        assert!(matches!(refused, SuperblockError::Impossible { .. }), "{refused:?}");
        assert!(
            text.contains(SUPERBLOCK_FILE) && text.contains("view 18446744073709551615"),
            "{text}"
        );
        let backwards = SuperblockState {
            view: 4,
            log_view: 5,
            ..state(6)
        };
        ready(superblock.write(backwards)).expect("write");
        let refused = ready(SuperblockFile::open(&storage, "", identity())).expect_err("log view past view");
        assert!(
            refused.to_string().contains("log view 5 is past the view 4"),
            "{refused}"
        );
        ready(superblock.write(state(6))).expect("write");
        assert!(
            ready(SuperblockFile::open(&storage, "", identity())).is_ok(),
            "a sane state opens"
        );
        std::fs::remove_dir_all(root).expect("cleanup");
    }

    #[test]
    fn a_written_state_is_what_the_next_open_reads() {
        let (storage, root) = temp_storage("round-trip");
        let mut superblock = ready(SuperblockFile::format(&storage, "", identity())).expect("format");
        assert_eq!(superblock.state(), &SuperblockState::default());
        ready(superblock.write(state(5))).expect("write");
        ready(superblock.write(state(6))).expect("write");
        let (reopened, report) = ready(SuperblockFile::open(&storage, "", identity())).expect("open");
        assert_eq!(reopened.state(), &state(6));
        assert_eq!(
            report,
            SuperblockOpenReport {
                sequence: 3,
                damaged: vec![],
                stale: vec![]
            }
        );
        assert!(matches!(
            ready(SuperblockFile::format(&storage, "", identity())),
            Err(SuperblockError::AlreadyFormatted { .. })
        ));
        std::fs::remove_dir_all(root).expect("cleanup");
    }

    #[test]
    fn a_torn_newest_copy_loses_to_the_newest_intact_one() {
        let (storage, root) = temp_storage("torn");
        let mut superblock = ready(SuperblockFile::format(&storage, "g", identity())).expect("format");
        ready(superblock.write(state(2))).expect("write");
        // A write of view 3 that reached copy 0 only, torn: copy 0 damaged, the rest old.
        let file_path = root.join("g").join(SUPERBLOCK_FILE);
        let mut bytes = std::fs::read(&file_path).expect("read");
        let newer = encode_copy(0, 3, identity(), &state(3));
        bytes[..100].copy_from_slice(&newer[..100]);
        std::fs::write(&file_path, &bytes).expect("write");
        let (reopened, report) = ready(SuperblockFile::open(&storage, "g", identity())).expect("open");
        assert_eq!(reopened.state(), &state(2));
        assert_eq!(report.damaged.len(), 1);
        assert_eq!(report.damaged[0].copy, 0);
        std::fs::remove_dir_all(root).expect("cleanup");
    }

    #[test]
    fn another_clusters_directory_is_refused_naming_both_ids() {
        let (storage, root) = temp_storage("wrong-cluster");
        ready(SuperblockFile::format(&storage, "", identity())).expect("format");
        let other = Identity {
            cluster: cluster_id("other-cluster"),
            ..identity()
        };
        let error = ready(SuperblockFile::open(&storage, "", other)).expect_err("another cluster");
        let message = error.to_string();
        assert!(message.contains("belongs to another cluster"), "{message}");
        assert!(message.contains(&format!("{:#034x}", identity().cluster)), "{message}");
        assert!(message.contains(&format!("{:#034x}", other.cluster)), "{message}");
        let error = ready(SuperblockFile::open(
            &storage,
            "",
            Identity {
                replica: 2,
                ..identity()
            },
        ))
        .expect_err("replica");
        assert!(matches!(error, SuperblockError::WrongReplica { .. }), "{error}");
        std::fs::remove_dir_all(root).expect("cleanup");
    }
}
