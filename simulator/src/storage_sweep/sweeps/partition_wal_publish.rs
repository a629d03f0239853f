//! `partition-wal-publish`: a partition replica's WAL through one log_view and a clean
//! shutdown. `Replicated` prepares are queued (written, never synced by the append),
//! one `Persisted` prepare publishes everything before it, a new log_view publishes,
//! an explicit `publish` follows more `Replicated` appends, and `close` publishes the
//! rest.
//!
//! A `Replicated` append promises nothing on this disk (peers cover it): it is only
//! attempted. A publishing call that returned acknowledges every op written before it,
//! and the publication itself (ledger key [`FRONTIER_KEY`], one value per publication:
//! a newer publication in flight may replace it).
//!
//! Recovery is `PartitionWal::open`, checked three ways:
//!
//! - every op an acknowledged publication covers is back with its bytes, the frontier is
//!   that publication or a later attempted one, and nothing never written appears (the
//!   ledger);
//! - nothing beyond the *recovered* frontier is returned, even when a process crash kept
//!   the unpublished bytes in the page cache;
//! - every op the recovered frontier covers is returned (the WAL was synced before the
//!   frontier that names it was written), unless recovery reported damage.
//!
//! A silently torn frontier write, or a lying sync, may leave the previous publication
//! in force: that older frontier is then treated as the newer one lost, which recovery
//! must have reported (a damaged slot) unless a sync lied.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use cluster::storage::partition_wal::{Durability, Frontier, PartitionWal};
use cluster::vsr::store::StoredRecord;

use super::frames::{self, prepare};
use crate::storage::{MemStorage, SimStorage};
use crate::storage_sweep::{CheckContext, Ledger, Sweep, ready};

/// The partition's group.
pub const GROUP: u64 = 3;

/// The group directory the WAL lives in, as the node names it.
pub const DIR: &str = "groups/0000000000000003";

/// The ledger key of the publication (no op is this high).
pub const FRONTIER_KEY: u64 = u64::MAX;

/// A prepare body spanning two pages, so one append's pages can be written back out of
/// order.
const LARGE_BODY_BYTES: usize = 2 * 4096 + 300;

/// One call of the workload.
enum Step {
    /// `append` of these ops with this durability; the segment end already synced.
    Append(Vec<u64>, Durability, u64),
    /// `on_log_view(log_view, segment_end_offset)`.
    LogView(u64, u64),
    /// `publish(segment_end_offset)`.
    Publish(u64),
    /// `close(segment_end_offset)`.
    Close(u64),
}

/// The prepare of `op`: the view it was prepared in is its generation (ops after the
/// log_view change are the new view's), one body spans pages.
fn record(op: u64) -> StoredRecord {
    let generation = if op >= 9 { 2 } else { 1 };
    let body = if op == 3 {
        LARGE_BODY_BYTES
    } else {
        120 + op as usize * 37
    };
    prepare(op, generation, body)
}

fn steps() -> Vec<Step> {
    use Durability::{Persisted, Replicated};
    vec![
        Step::Append(vec![1, 2], Replicated, 0),
        Step::Append(vec![3], Replicated, 0),
        Step::Append(vec![4], Replicated, 0),
        Step::Append(vec![5], Persisted, 500),
        Step::Append(vec![6], Replicated, 500),
        Step::Append(vec![7, 8], Replicated, 500),
        Step::LogView(2, 800),
        Step::Append(vec![9], Replicated, 800),
        Step::Append(vec![10], Replicated, 900),
        Step::Append(vec![11], Replicated, 1000),
        Step::Publish(1100),
        Step::Append(vec![12], Replicated, 1100),
        Step::Append(vec![13, 14], Replicated, 1200),
        Step::Append(vec![15], Replicated, 1400),
        Step::Append(vec![16], Persisted, 1500),
        Step::Append(vec![17], Replicated, 1500),
        Step::Close(1700),
    ]
}

/// The ledger value of a publication.
fn encode_frontier(frontier: &Frontier) -> Vec<u8> {
    [
        frontier.sequence,
        frontier.group,
        frontier.log_view,
        frontier.wal_bytes,
        frontier.last_op,
        frontier.segment_end_offset,
        u64::from(frontier.durability == Durability::Persisted),
    ]
    .iter()
    .flat_map(|field| field.to_le_bytes())
    .collect()
}

fn frontier_sequence(encoded: &[u8]) -> u64 {
    encoded
        .get(..8)
        .and_then(|bytes| <[u8; 8]>::try_from(bytes).ok())
        .map_or(0, u64::from_le_bytes)
}

/// Run the workload on `storage`, recording what it attempts and acknowledges in
/// `ledger`. `expected` is the publication in force after each step, which the sweep
/// attempts before the step writes it (a fault-free run on `MemStorage` computes it).
/// Returns the publication after each step completed, up to the first failure.
fn run_steps<S: cluster::seam::DurableStorage>(
    storage: &S,
    ledger: &mut Ledger,
    expected: Option<&[Option<Frontier>]>,
) -> Vec<Option<Frontier>> {
    let mut published = Vec::new();
    let Ok((mut wal, _)) = ready(PartitionWal::open(storage, DIR, GROUP)) else {
        return published;
    };
    let mut pending: Vec<u64> = Vec::new();
    let mut previous: Option<Frontier> = None;
    for (index, step) in steps().into_iter().enumerate() {
        let next = expected.and_then(|expected| expected.get(index).copied().flatten());
        if let Some(next) = next
            && Some(next) != previous
        {
            ledger.attempt(FRONTIER_KEY, &encode_frontier(&next));
        }
        let result = match &step {
            Step::Append(ops, durability, segment_end_offset) => {
                let records: Vec<(u64, StoredRecord)> = ops.iter().map(|&op| (op, record(op))).collect();
                for (op, record) in &records {
                    ledger.attempt(*op, &frames::encode(record));
                    pending.push(*op);
                }
                let borrowed: Vec<(u64, &StoredRecord)> = records.iter().map(|(op, record)| (*op, record)).collect();
                ready(wal.append(&borrowed, *durability, *segment_end_offset)).map(|appended| appended.published)
            }
            Step::LogView(log_view, segment_end_offset) => {
                ready(wal.on_log_view(*log_view, *segment_end_offset)).map(|()| true)
            }
            Step::Publish(segment_end_offset) => ready(wal.publish(*segment_end_offset)).map(|()| true),
            Step::Close(segment_end_offset) if expected.is_none() => {
                // The fault-free run learns what `close` publishes: `close` is `publish`
                // then dropping the WAL, and it consumes the WAL it would be read from.
                let closed = ready(wal.publish(*segment_end_offset));
                if closed.is_ok() {
                    published.push(wal.published());
                }
                return published;
            }
            Step::Close(segment_end_offset) => {
                // `close` consumes the WAL; what it published is the expected publication.
                let closed = ready(wal.close(*segment_end_offset));
                if closed.is_ok() {
                    for op in pending.drain(..) {
                        ledger.acknowledge(op, &frames::encode(&record(op)));
                    }
                    if let Some(next) = next {
                        ledger.acknowledge(FRONTIER_KEY, &encode_frontier(&next));
                    }
                    published.push(next);
                }
                return published;
            }
        };
        let Ok(did_publish) = result else {
            // A failed WAL call poisons it; the replica stops, and so does the sweep.
            return published;
        };
        let now = wal.published();
        if expected.is_some() {
            assert_eq!(now, next, "sweep bug: the publication differs from the fault-free one");
        }
        if did_publish {
            for op in pending.drain(..) {
                ledger.acknowledge(op, &frames::encode(&record(op)));
            }
            if let Some(now) = now
                && expected.is_some()
            {
                ledger.acknowledge(FRONTIER_KEY, &encode_frontier(&now));
            }
        }
        previous = now;
        published.push(now);
    }
    published
}

/// The publication in force after each step of a fault-free run (computed once).
fn expected_publications() -> &'static [Option<Frontier>] {
    static EXPECTED: OnceLock<Vec<Option<Frontier>>> = OnceLock::new();
    EXPECTED.get_or_init(|| run_steps(&MemStorage::new(), &mut Ledger::new(), None))
}

/// The sweep.
pub struct PartitionWalPublish;

impl Sweep for PartitionWalPublish {
    crate::sweep_about!(
        "partition-wal-publish",
        "PartitionWal: Replicated appends, a Persisted one, on_log_view, publish, close; open returns what a \
        publication covers and nothing beyond the recovered frontier"
    );

    fn run(&self, storage: &SimStorage) -> Ledger {
        let expected = expected_publications();
        let mut ledger = Ledger::new();
        run_steps(storage, &mut ledger, Some(expected));
        ledger
    }

    fn recover_and_check(&self, storage: &SimStorage, ledger: &Ledger, context: CheckContext) -> Result<u64, String> {
        let (_, recovery) = ready(PartitionWal::open(storage, DIR, GROUP))
            .map_err(|error| format!("PartitionWal::open failed: {error}"))?;
        let noticed = !recovery.damaged.is_empty() || !recovery.frontier_damage.is_empty();
        let excused = context.lying_sync || (noticed && context.silent_fault);
        let last_op = recovery.frontier.map_or(0, |frontier| frontier.last_op);
        if let Some((op, _)) = recovery.records.iter().find(|(op, _)| *op > last_op) {
            return Err(format!(
                "op {op} returned beyond the recovered frontier (last_op {last_op}, frontier {:?})",
                recovery.frontier
            ));
        }
        let recovered_ops: Vec<u64> = recovery.records.iter().map(|(op, _)| *op).collect();
        if !excused && let Some(op) = (1..=last_op).find(|op| !recovered_ops.contains(op)) {
            return Err(format!(
                "op {op} is covered by the recovered frontier (last_op {last_op}) but was not returned \
                 (damage reported: {:?})",
                recovery.damaged
            ));
        }
        let mut recovered: BTreeMap<u64, Vec<u8>> = frames::recovered(&recovery.records);
        if let Some(frontier) = recovery.frontier {
            let acknowledged = ledger
                .acknowledged()
                .get(&FRONTIER_KEY)
                .map_or(0, |bytes| frontier_sequence(bytes));
            // An older publication in force is the newer one lost: the ledger excuses that
            // only when recovery noticed it on a lying device, or a sync lied.
            if !(frontier.sequence < acknowledged && excused) {
                recovered.insert(FRONTIER_KEY, encode_frontier(&frontier));
            }
        }
        ledger.check_recovered("partition WAL", &recovered, noticed, context)
    }
}
