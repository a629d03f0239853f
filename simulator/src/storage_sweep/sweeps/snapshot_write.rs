//! `snapshot-write`: boot removes a leftover `.tmp`, then six versions of a metadata
//! snapshot (3 to 12 KiB, so each spans pages that writeback can land in any order) are
//! written one after the other with `write_snapshot`, growing and shrinking.
//!
//! The snapshot is one item (ledger key [`SNAPSHOT_KEY`]) replaced by each version;
//! a version is acknowledged once `write_snapshot` returned `Ok`.
//!
//! Recovery is what boot does: `remove_leftover_tmp`, then `read_snapshot`. What the
//! format claims, and so what is checked:
//!
//! - `Ok(Some(_))`: the newest acknowledged version or a later attempted one, with its
//!   key and bytes (never an older one: the old file is replaced by a rename only once
//!   the new one is synced, and that rename is durable before `Ok`).
//! - `Ok(None)`: only while no version was acknowledged, whatever the fault. Every
//!   directory sync that makes an acknowledged rename durable is a `sync_dir`, which a
//!   device cannot tear, so even a lying file sync never makes the snapshot vanish.
//! - `Err`: only `Corrupt` naming the snapshot's own path, and only when the device lied
//!   (a silently torn write or a lying sync of the `.tmp` that was then renamed into
//!   place): the format promises to refuse damage loudly rather than load it or call it
//!   absent, and it does not keep an older version to fall back to once the rename is
//!   durable. Any other error is a failure. (The runner halts the process right after
//!   the faulted call, so a torn `.tmp` is never renamed into place and this allowance
//!   is not reached today; it states the claim for a runner that lets a lying device's
//!   write carry on to its acknowledgement.)
//!
//! After recovery no `.tmp` is left.

use std::sync::OnceLock;

use cluster::storage::snapshot_file::{
    SnapshotFileError, read_snapshot, remove_leftover_tmp, tmp_path, write_snapshot,
};

use crate::storage::SimStorage;
use crate::storage_sweep::{CheckContext, Ledger, Sweep, ready};

/// Where the snapshot lives.
pub const PATH: &str = "metadata/snapshot";

/// The ledger key of the one snapshot.
pub const SNAPSHOT_KEY: u64 = 0;

/// Bytes of each version, in write order.
const VERSION_BYTES: [usize; 6] = [
    3 * 1024,
    9 * 1024 + 17,
    5 * 1024 + 300,
    12 * 1024,
    2 * 1024 + 5,
    7 * 1024,
];

/// The op a version was taken at: its key.
fn version_key(version: usize) -> u64 {
    (version as u64 + 1) * 1_000
}

/// A version's snapshot bytes: a header line then records of a metadata state, different
/// for every version (computed once).
fn version_bytes(version: usize) -> &'static [u8] {
    static VERSIONS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    let versions = VERSIONS.get_or_init(|| {
        (0..VERSION_BYTES.len())
            .map(|version| {
                let mut bytes =
                    format!("metadata snapshot v{} at op {}\n", version + 1, version_key(version)).into_bytes();
                let mut entry = 0u64;
                while bytes.len() < VERSION_BYTES[version] {
                    let line = format!(
                        "stream {entry} topic {} partitions {};",
                        entry * 7 + version as u64,
                        entry % 5
                    );
                    bytes.extend_from_slice(line.as_bytes());
                    entry += 1;
                }
                bytes.truncate(VERSION_BYTES[version]);
                bytes
            })
            .collect()
    });
    &versions[version]
}

/// The ledger value of a snapshot: its key, then its bytes.
pub fn encode(key: u64, bytes: &[u8]) -> Vec<u8> {
    let mut out = key.to_le_bytes().to_vec();
    out.extend_from_slice(bytes);
    out
}

/// The sweep.
pub struct SnapshotWrite;

impl Sweep for SnapshotWrite {
    crate::sweep_about!(
        "snapshot-write",
        "write_snapshot of six versions (3-12 KiB); boot's read returns the newest acknowledged or a later one, \
        never None once acknowledged, an error only on a lying device"
    );

    fn run(&self, storage: &SimStorage) -> Ledger {
        let mut ledger = Ledger::new();
        if ready(remove_leftover_tmp(storage, PATH)).is_err() {
            return ledger;
        }
        for version in 0..VERSION_BYTES.len() {
            let (key, bytes) = (version_key(version), version_bytes(version));
            ledger.attempt(SNAPSHOT_KEY, &encode(key, bytes));
            if ready(write_snapshot(storage, PATH, key, bytes)).is_err() {
                return ledger;
            }
            ledger.acknowledge(SNAPSHOT_KEY, &encode(key, bytes));
        }
        ledger
    }

    fn recover_and_check(&self, storage: &SimStorage, ledger: &Ledger, context: CheckContext) -> Result<u64, String> {
        ready(remove_leftover_tmp(storage, PATH)).map_err(|error| format!("remove_leftover_tmp failed: {error}"))?;
        if storage.exists(&tmp_path(PATH)) {
            return Err(format!("{} survived remove_leftover_tmp", tmp_path(PATH)));
        }
        let acknowledged = ledger.acknowledged().len() as u64;
        match ready(read_snapshot(storage, PATH)) {
            Ok(Some(snapshot)) => {
                let recovered = [(SNAPSHOT_KEY, encode(snapshot.key, &snapshot.bytes))].into();
                ledger
                    .check_recovered("snapshot", &recovered, false, context)
                    .map_err(|error| format!("{error} (read key {})", snapshot.key))
            }
            Ok(None) if acknowledged == 0 => Ok(0),
            Ok(None) => Err("read_snapshot found no snapshot although a version was acknowledged".to_owned()),
            Err(SnapshotFileError::Corrupt { file, len, why })
                if file == PATH && (context.silent_fault || context.lying_sync) =>
            {
                // Refused loudly on a lying device: honest, and for peers to repair.
                let _ = (len, why);
                Ok(0)
            }
            Err(error) => Err(format!(
                "read_snapshot failed ({error}) with {acknowledged} version(s) acknowledged and no lying device"
            )),
        }
    }
}
