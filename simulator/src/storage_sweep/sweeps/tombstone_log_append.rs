//! `tombstone-log-append`: a node records deleted groups in its tombstone log, one
//! appended and synced record per delete (`cluster::storage::tombstone_log`), carrying
//! on after a failed append as the node does (the next delete writes over it).
//!
//! Sixteen records of 40 bytes: the thirteenth straddles the first sector boundary, so
//! a torn write can land half of it.
//!
//! `tombstone-log-compact` does the same with a compaction due every few appends (the
//! groups are consecutive, so they merge into one range): a crash may land before,
//! during or after the write, sync and rename of the compacted log.
//!
//! Recovery is `TombstoneLog::open`. Every group whose append returned `Ok` is back,
//! no group that was never appended appears, and the boot succeeds, except that a
//! lying device may make it refuse loudly: a record it tore silently, with a later
//! record after it, is damage in the middle, which the log refuses rather than boot
//! without a tombstone.

use cluster::storage::tombstone_log::{TombstoneError, TombstoneLog};
use cluster::storage::tombstone_set::NothingSettled;

use crate::storage::SimStorage;
use crate::storage_sweep::{CheckContext, Ledger, Sweep, ready};

/// Deletes recorded, the groups `FIRST_GROUP..FIRST_GROUP + APPENDS`.
const APPENDS: u64 = 16;

/// The first group deleted (a partition group id, as the node's are).
const FIRST_GROUP: u64 = 0xc00;

/// The ledger value of a tombstone: its group id.
fn encode(group: u64) -> Vec<u8> {
    group.to_le_bytes().to_vec()
}

/// Records in the log from which `tombstone-log-compact` compacts it: with every
/// group in one range, a compaction every other append after the fourth.
const COMPACT_RECORDS_MIN: u64 = 4;

/// The sweep without compactions.
pub struct TombstoneLogAppend;

/// The sweep with a compaction every few appends.
pub struct TombstoneLogCompact;

impl Sweep for TombstoneLogAppend {
    crate::sweep_about!(
        "tombstone-log-append",
        "TombstoneLog::append of sixteen groups, carrying on after a failed one; boot finds every \
        acknowledged group, none never appended, and refuses only on a lying device"
    );

    fn run(&self, storage: &SimStorage) -> Ledger {
        append_all(storage, None)
    }

    fn recover_and_check(&self, storage: &SimStorage, ledger: &Ledger, context: CheckContext) -> Result<u64, String> {
        recover_and_check(storage, ledger, context)
    }
}

impl Sweep for TombstoneLogCompact {
    crate::sweep_about!(
        "tombstone-log-compact",
        "TombstoneLog::append of sixteen consecutive groups with a compaction (write, sync, rename, \
        directory sync) every few appends; boot finds every acknowledged group, none never appended"
    );

    fn run(&self, storage: &SimStorage) -> Ledger {
        append_all(storage, Some(COMPACT_RECORDS_MIN))
    }

    fn recover_and_check(&self, storage: &SimStorage, ledger: &Ledger, context: CheckContext) -> Result<u64, String> {
        recover_and_check(storage, ledger, context)
    }
}

/// Append every group, compacting from `compact_records_min` records if given.
fn append_all(storage: &SimStorage, compact_records_min: Option<u64>) -> Ledger {
    let mut ledger = Ledger::new();
    let Ok(mut log) = TombstoneLog::open(storage.clone(), storage) else {
        return ledger;
    };
    if let Some(records) = compact_records_min {
        log.set_compact_records_min(records);
    }
    for group in FIRST_GROUP..FIRST_GROUP + APPENDS {
        ledger.attempt(group, &encode(group));
        // A failed append is not the end: the node logs it and its next delete
        // appends again, over what the failed one left.
        if ready(log.append(group, &NothingSettled)).is_ok() {
            ledger.acknowledge(group, &encode(group));
        }
    }
    ledger
}

fn recover_and_check(storage: &SimStorage, ledger: &Ledger, context: CheckContext) -> Result<u64, String> {
    match TombstoneLog::open(storage.clone(), storage) {
        Ok(log) => {
            let recovered = log
                .set()
                .ranges()
                .flat_map(|(first, last)| first..=last)
                .map(|group| (group, encode(group)))
                .collect();
            ledger.check_recovered("tombstone log", &recovered, log.has_torn_tail(), context)
        }
        Err(TombstoneError::Damaged { .. }) if context.silent_fault || context.lying_sync => {
            // Refused loudly on a lying device: a lost tombstone never boots.
            Ok(0)
        }
        Err(error) => Err(format!(
            "TombstoneLog::open failed ({error}) with {} group(s) acknowledged and no lying device",
            ledger.acknowledged().len()
        )),
    }
}
