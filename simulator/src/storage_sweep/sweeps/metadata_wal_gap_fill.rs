//! `metadata-wal-gap-fill`: append ops 1-2 and then op 12 above a gap (the WAL writes
//! placeholder slots for ops 3-11), then fill the gap from the top down as repair does:
//! records that fit their placeholders, one larger than its placeholder that takes room
//! from the vacant slots below it, and one larger than every vacant room around it,
//! which moves the records above it.
//!
//! Recovery is `Wal::open`: every op acknowledged (synced, or durably replaced) is back
//! with its bytes, nothing never written appears, and damage is reported rather than
//! dropped silently: a placeholder re-divided or a suffix moved by a crash-interrupted
//! rewrite must never cost an acknowledged record. A fill dropped whole by a lying disk
//! leaves a valid placeholder no format can tell from an unfilled one; recovery names
//! such slots as vacant ops, which the replica store treats as possibly acknowledged,
//! so a loss there is excused only under a lying device and only at a vacant op.

use cluster::storage::wal::{GAP_RESERVED_PAYLOAD_MIN_BYTES, Wal};

use super::frames::{self, append_batch, prepare};
use crate::storage::SimStorage;
use crate::storage_sweep::{CheckContext, Ledger, Sweep, ready};

/// The sweep.
pub struct MetadataWalGapFill;

/// The body size each filled op gets: most fit a placeholder, op 8 outgrows its own
/// (and takes room from ops 3-7, still vacant), op 4 outgrows everything next to it.
fn body_bytes(op: u64) -> usize {
    match op {
        8 => GAP_RESERVED_PAYLOAD_MIN_BYTES + 700,
        4 => 4 * GAP_RESERVED_PAYLOAD_MIN_BYTES,
        _ => 100 + 40 * op as usize,
    }
}

impl Sweep for MetadataWalGapFill {
    crate::sweep_about!(
        "metadata-wal-gap-fill",
        "Wal::append above a gap (placeholders for ops 3-11), then Wal::replace fills it top down: in place, \
        taking room from vacant slots, and moving the records above"
    );

    fn run(&self, storage: &SimStorage) -> Ledger {
        let mut ledger = Ledger::new();
        let Ok((mut wal, _)) = ready(Wal::open(storage)) else {
            return ledger;
        };
        let first = [
            (1, prepare(1, 1, 200)),
            (2, prepare(2, 1, 300)),
            (12, prepare(12, 1, 500)),
        ];
        if !append_batch(&mut wal, &mut ledger, &first) {
            return ledger;
        }
        for op in (3..12).rev() {
            let record = prepare(op, 1, body_bytes(op));
            ledger.attempt(op, &frames::encode(&record));
            if ready(wal.replace(op, &record)).is_err() {
                return ledger;
            }
            ledger.acknowledge(op, &frames::encode(&record));
        }
        ledger
    }

    fn recover_and_check(&self, storage: &SimStorage, ledger: &Ledger, context: CheckContext) -> Result<u64, String> {
        let (wal, recovery) = ready(Wal::open(storage)).map_err(|error| format!("Wal::open failed: {error}"))?;
        let noticed = !recovery.damaged.is_empty() || recovery.torn_tail.is_some();
        // A fill the disk dropped whole leaves its placeholder, valid: recovery cannot
        // see the loss, but names the op as vacant, and the replica store takes any
        // vacant slot above its commit point as an op it may have acknowledged.
        let vacant: Vec<u64> = wal.vacant_ops().collect();
        ledger.check_recovered_with_uncertain(
            "metadata WAL",
            &frames::recovered(&recovery.records),
            noticed,
            &vacant,
            context,
        )
    }
}
