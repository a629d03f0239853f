//! `metadata-wal-truncate`: a view change in the metadata WAL. Six ops are appended and
//! synced, the log is truncated after op 3, and two new ops (another view's prepares)
//! take the place of the old 4 and 5.
//!
//! Recovery is `Wal::open`: acknowledged ops are back, and above op 3 the log holds one
//! view's prepares or the other's, never a mix (a new op 4 followed by an old op 5 would
//! splice two logs together).

use cluster::storage::wal::Wal;

use super::frames::{self, append_batch, generation, prepare};
use crate::storage::SimStorage;
use crate::storage_sweep::{CheckContext, Ledger, Sweep, ready};

/// The op the view change keeps the log up to.
const KEPT_OP: u64 = 3;

/// The sweep.
pub struct MetadataWalTruncate;

impl Sweep for MetadataWalTruncate {
    crate::sweep_about!(
        "metadata-wal-truncate",
        "Wal::truncate_after (a view change) then new ops appended and synced; never a mix of two views' ops"
    );

    fn run(&self, storage: &SimStorage) -> Ledger {
        let mut ledger = Ledger::new();
        let Ok((mut wal, _)) = ready(Wal::open(storage)) else {
            return ledger;
        };
        let old: Vec<_> = (1..=6).map(|op| (op, prepare(op, 1, 150 + op as usize * 40))).collect();
        if !append_batch(&mut wal, &mut ledger, &old) {
            return ledger;
        }
        // From the moment the code asks for the truncation, the ops above are no longer
        // promised: a crash may keep them or not, both are what the code asked for.
        ledger.release_above(KEPT_OP);
        if ready(wal.truncate_after(KEPT_OP)).is_err() {
            return ledger;
        }
        let new: Vec<_> = (4..=5).map(|op| (op, prepare(op, 2, 150 + op as usize * 40))).collect();
        append_batch(&mut wal, &mut ledger, &new);
        ledger
    }

    fn recover_and_check(&self, storage: &SimStorage, ledger: &Ledger, context: CheckContext) -> Result<u64, String> {
        let (_, recovery) = ready(Wal::open(storage)).map_err(|error| format!("Wal::open failed: {error}"))?;
        let noticed = !recovery.damaged.is_empty() || recovery.torn_tail.is_some();
        let compared =
            ledger.check_recovered("metadata WAL", &frames::recovered(&recovery.records), noticed, context)?;
        let views: Vec<(u64, Option<u64>)> = recovery
            .records
            .iter()
            .filter(|(op, _)| *op > KEPT_OP)
            .map(|(op, record)| (*op, generation(record)))
            .collect();
        let mut seen = views.iter().map(|(_, view)| *view);
        if let Some(first) = seen.next()
            && seen.any(|view| view != first)
        {
            return Err(format!(
                "the log above op {KEPT_OP} splices two views: (op, view) = {views:?}"
            ));
        }
        Ok(compared)
    }
}
