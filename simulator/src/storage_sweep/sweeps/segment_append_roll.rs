//! `segment-append-roll`: a partition's message segments written as production writes
//! them. Each batch queues its prepare in the partition WAL (`Replicated`), appends its
//! messages to the `SegmentLog` (a small `segment_bytes_max`, so the run rolls to a new
//! segment four times, some rolls in the middle of a batch), syncs the segments and then publishes
//! the synced segment end through `PartitionWal::publish`. Messages below a published
//! segment end are acknowledged; nothing else is promised.
//!
//! Recovery is what boot does: `PartitionWal::open` reads the durable frontier, then
//! `SegmentLog::open(.., frontier.segment_end_offset, ..)`, then every message is read
//! back through the index. Every acknowledged message is served with its bytes, nothing
//! never written is served, nothing at or beyond the frontier is served (even when a
//! process crash kept those bytes), and a loss is excused only when recovery reported it
//! (a torn tail, corruption, missing offsets, a damaged frontier slot or WAL) on a
//! device that tore a write silently, or after a lying sync.

use std::collections::BTreeMap;

use cluster::partition::StoredMessage;
use cluster::storage::partition_wal::{Durability, PartitionWal};
use cluster::storage::segment::{MESSAGE_FIXED_BYTES, SegmentLog, SegmentOptions};

use super::frames::prepare;
use crate::storage::SimStorage;
use crate::storage_sweep::{CheckContext, Ledger, Sweep, ready};

/// The partition's group.
pub const GROUP: u64 = 5;

/// The group directory of the partition WAL.
pub const WAL_DIR: &str = "groups/0000000000000005";

/// The partition's segment directory.
pub const SEGMENT_DIR: &str = "partitions/5";

/// About three messages per segment.
pub const OPTIONS: SegmentOptions = SegmentOptions { segment_bytes_max: 330 };

/// Messages per batch (one prepare each): rolls land inside batches and between them.
const BATCHES: [u64; 4] = [2, 3, 2, 3];

/// Message `offset`: 90 to 130 bytes a record, varying with the offset.
pub fn message(offset: u64) -> StoredMessage {
    let text = format!("message {offset} of partition {GROUP};");
    let mut payload = text.repeat(3).into_bytes();
    payload.truncate(26 + (offset as usize * 13) % 41);
    StoredMessage {
        offset,
        timestamp_micros: 1_000_000 + offset * 1_000,
        id: (u128::from(offset) << 64) | 0x5eed,
        payload,
    }
}

/// The ledger value of a message: its record payload (timestamp, id, bytes).
pub fn encode_message(message: &StoredMessage) -> Vec<u8> {
    let mut out = Vec::with_capacity(MESSAGE_FIXED_BYTES + message.payload.len());
    out.extend_from_slice(&message.timestamp_micros.to_le_bytes());
    out.extend_from_slice(&message.id.to_le_bytes());
    out.extend_from_slice(&message.payload);
    out
}

/// Read every message `log` holds, through the index, as ledger values by offset.
pub fn read_all(log: &mut SegmentLog<SimStorage>) -> Result<BTreeMap<u64, Vec<u8>>, String> {
    let mut recovered = BTreeMap::new();
    let mut offset = log.oldest_offset();
    while offset < log.next_offset() {
        let messages =
            ready(log.read(offset, usize::MAX)).map_err(|error| format!("read at offset {offset}: {error}"))?;
        let Some(last) = messages.last() else {
            return Err(format!(
                "read at offset {offset} returned nothing below next_offset {}",
                log.next_offset()
            ));
        };
        offset = last.offset + 1;
        for message in &messages {
            recovered.insert(message.offset, encode_message(message));
        }
    }
    Ok(recovered)
}

/// The sweep.
pub struct SegmentAppendRoll;

impl Sweep for SegmentAppendRoll {
    crate::sweep_about!(
        "segment-append-roll",
        "SegmentLog appends rolling four times, each batch synced then published through PartitionWal; open \
        at the recovered frontier serves every acknowledged message and nothing beyond"
    );

    fn run(&self, storage: &SimStorage) -> Ledger {
        let mut ledger = Ledger::new();
        let Some((mut wal, mut log)) = open_fresh(storage) else {
            return ledger;
        };
        let mut offset = 0;
        for (batch, count) in BATCHES.into_iter().enumerate() {
            let op = batch as u64 + 1;
            let record = prepare(op, 1, 100 + 60 * count as usize);
            let queued = ready(wal.append(&[(op, &record)], Durability::Replicated, log.synced_end_offset()));
            if queued.is_err() {
                return ledger;
            }
            for _ in 0..count {
                let message = message(offset);
                ledger.attempt(offset, &encode_message(&message));
                if ready(log.append(&message)).is_err() {
                    return ledger;
                }
                offset += 1;
            }
            if ready(log.sync()).is_err() {
                return ledger;
            }
            let segment_end_offset = log.synced_end_offset();
            if ready(wal.publish(segment_end_offset)).is_err() {
                return ledger;
            }
            for acknowledged in 0..segment_end_offset {
                ledger.acknowledge(acknowledged, &encode_message(&message(acknowledged)));
            }
        }
        ledger
    }

    fn recover_and_check(&self, storage: &SimStorage, ledger: &Ledger, context: CheckContext) -> Result<u64, String> {
        recover_and_check_opening_at(storage, ledger, context, |frontier| frontier)
    }
}

/// The group's partition WAL and its segment log, opened on a fresh disk as the sweep
/// starts (`None` when the disk refused either).
pub fn open_fresh(storage: &SimStorage) -> Option<(PartitionWal<SimStorage>, SegmentLog<SimStorage>)> {
    let (wal, _) = ready(PartitionWal::open(storage, WAL_DIR, GROUP)).ok()?;
    let (log, _) = ready(SegmentLog::open(storage.clone(), SEGMENT_DIR, 0, OPTIONS)).ok()?;
    Some((wal, log))
}

/// Boot's recovery and the sweep's check, with `open_at` choosing the offset
/// `SegmentLog::open` is given from the recovered frontier's segment end. Boot (and the
/// sweep) passes the frontier itself; a test passes something else to show that the
/// check catches a recovery that ignores it.
pub fn recover_and_check_opening_at(
    storage: &SimStorage,
    ledger: &Ledger,
    context: CheckContext,
    open_at: impl FnOnce(u64) -> u64,
) -> Result<u64, String> {
    let (_, wal) = ready(PartitionWal::open(storage, WAL_DIR, GROUP))
        .map_err(|error| format!("PartitionWal::open failed: {error}"))?;
    let frontier = wal.frontier.map_or(0, |frontier| frontier.segment_end_offset);
    let (mut log, report) = ready(SegmentLog::open(
        storage.clone(),
        SEGMENT_DIR,
        open_at(frontier),
        OPTIONS,
    ))
    .map_err(|error| format!("SegmentLog::open at frontier {frontier} failed: {error}"))?;
    if log.next_offset() > frontier {
        return Err(format!(
            "the recovered log ends at {}, beyond the durable frontier {frontier}",
            log.next_offset()
        ));
    }
    let recovered = read_all(&mut log)?;
    if let Some(beyond) = recovered.keys().find(|&&offset| offset >= frontier) {
        return Err(format!(
            "offset {beyond} served at or beyond the durable frontier {frontier}"
        ));
    }
    let noticed = report.torn_tail.is_some()
        || report.corruption.is_some()
        || report.missing.is_some()
        || !wal.frontier_damage.is_empty()
        || !wal.damaged.is_empty();
    ledger
        .check_recovered("segments", &recovered, noticed, context)
        .map_err(|error| format!("{error} (frontier {frontier}, recovery {report:?})"))
}
