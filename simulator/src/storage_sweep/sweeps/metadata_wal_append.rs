//! `metadata-wal-append`: append prepares to the metadata WAL in synced batches (one
//! spanning several pages, so writeback can land its pages out of order), record an
//! op's header alone, then durably replace it with the whole prepare (a repair).
//!
//! Recovery is `Wal::open`: every op acknowledged (synced) is back with its bytes,
//! nothing never written appears, and damage is reported rather than dropped silently.

use cluster::storage::wal::Wal;

use super::frames::{self, append_batch, header_only, prepare};
use crate::storage::SimStorage;
use crate::storage_sweep::{CheckContext, Ledger, Sweep, ready};

/// A body spanning three pages: the batch's pages can be written back in any order.
const LARGE_BODY_BYTES: usize = 3 * 4096 + 100;

/// The sweep.
pub struct MetadataWalAppend;

impl Sweep for MetadataWalAppend {
    crate::sweep_about!(
        "metadata-wal-append",
        "Wal::append_all + sync in batches (one of several pages), a header-only op, then Wal::replace"
    );

    fn run(&self, storage: &SimStorage) -> Ledger {
        let mut ledger = Ledger::new();
        let Ok((mut wal, _)) = ready(Wal::open(storage)) else {
            return ledger;
        };
        let batches = [
            vec![(1, prepare(1, 1, 200)), (2, prepare(2, 1, 300))],
            vec![(3, prepare(3, 1, LARGE_BODY_BYTES)), (4, prepare(4, 1, 50))],
            vec![(5, header_only(5, 1, 400))],
        ];
        for batch in &batches {
            if !append_batch(&mut wal, &mut ledger, batch) {
                return ledger;
            }
        }
        // Repair brings op 5's body: it replaces the header durably.
        let repaired = prepare(5, 1, 400);
        ledger.attempt(5, &frames::encode(&repaired));
        if ready(wal.replace(5, &repaired)).is_ok() {
            ledger.acknowledge(5, &frames::encode(&repaired));
        }
        ledger
    }

    fn recover_and_check(&self, storage: &SimStorage, ledger: &Ledger, context: CheckContext) -> Result<u64, String> {
        let (_, recovery) = ready(Wal::open(storage)).map_err(|error| format!("Wal::open failed: {error}"))?;
        let noticed = !recovery.damaged.is_empty() || recovery.torn_tail.is_some();
        ledger.check_recovered("metadata WAL", &frames::recovered(&recovery.records), noticed, context)
    }
}
