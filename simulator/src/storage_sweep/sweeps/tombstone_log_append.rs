//! `tombstone-log-append`: a node records deleted groups in its tombstone log, one
//! appended and synced record per delete (`cluster::storage::tombstone_log`), carrying
//! on after a failed append as the node does (the next delete writes over it).
//!
//! Sixteen records of 40 bytes: the thirteenth straddles the first sector boundary, so
//! a torn write can land half of it.
//!
//! Recovery is `TombstoneLog::open`. Every group whose append returned `Ok` is back,
//! no group that was never appended appears, and the boot succeeds, except that a
//! lying device may make it refuse loudly: a record it tore silently, with a later
//! record after it, is damage in the middle, which the log refuses rather than boot
//! without a tombstone.

use cluster::storage::tombstone_log::{TombstoneError, TombstoneLog};

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

/// The sweep.
pub struct TombstoneLogAppend;

impl Sweep for TombstoneLogAppend {
    crate::sweep_about!(
        "tombstone-log-append",
        "TombstoneLog::append of sixteen groups, carrying on after a failed one; boot finds every \
        acknowledged group, none never appended, and refuses only on a lying device"
    );

    fn run(&self, storage: &SimStorage) -> Ledger {
        let mut ledger = Ledger::new();
        let Ok(mut log) = TombstoneLog::open(storage.clone(), storage) else {
            return ledger;
        };
        for group in FIRST_GROUP..FIRST_GROUP + APPENDS {
            ledger.attempt(group, &encode(group));
            // A failed append is not the end: the node logs it and its next delete
            // appends again, over what the failed one left.
            if ready(log.append(group)).is_ok() {
                ledger.acknowledge(group, &encode(group));
            }
        }
        ledger
    }

    fn recover_and_check(&self, storage: &SimStorage, ledger: &Ledger, context: CheckContext) -> Result<u64, String> {
        match TombstoneLog::open(storage.clone(), storage) {
            Ok(log) => {
                let recovered = log.groups().map(|group| (group, encode(group))).collect();
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
}
