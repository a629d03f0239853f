//! Valid prepare frames and their ledger encoding, shared by the WAL sweeps, and the
//! metadata WAL's synced batch append with its ledger entries.

use std::collections::BTreeMap;
use std::rc::Rc;

use cluster::storage::wal::Wal;
use cluster::vsr::store::StoredRecord;
use cluster::wire::{self, Command, HEADER_BYTES, Header};

use crate::storage::SimStorage;
use crate::storage_sweep::{Ledger, ready};

/// A sealed prepare frame for `op`, its body `body_bytes` long and marked with
/// `generation` (so a prepare rewritten after a view change differs from the old one).
pub fn frame(op: u64, generation: u8, body_bytes: usize) -> Vec<u8> {
    let mut header = Header::new(Command::Prepare);
    header.op = op;
    header.view = u64::from(generation);
    let body: Vec<u8> = (0..body_bytes)
        .map(|index| (op as usize * 31 + index) as u8 ^ generation)
        .collect();
    wire::seal_header(header, &body)
}

/// A whole prepare.
pub fn prepare(op: u64, generation: u8, body_bytes: usize) -> StoredRecord {
    StoredRecord::Prepare(Rc::from(frame(op, generation, body_bytes)))
}

/// The header of `prepare(op, generation, body_bytes)` alone.
pub fn header_only(op: u64, generation: u8, body_bytes: usize) -> StoredRecord {
    StoredRecord::Header(frame(op, generation, body_bytes)[..HEADER_BYTES].to_vec())
}

/// The ledger value of a record: a kind byte, then its bytes.
pub fn encode(record: &StoredRecord) -> Vec<u8> {
    let (kind, bytes): (u8, &[u8]) = match record {
        StoredRecord::Prepare(frame) => (1, frame),
        StoredRecord::Header(header) => (2, header),
    };
    let mut out = Vec::with_capacity(1 + bytes.len());
    out.push(kind);
    out.extend_from_slice(bytes);
    out
}

/// Recovered records as ledger values by op.
pub fn recovered(records: &[(u64, StoredRecord)]) -> BTreeMap<u64, Vec<u8>> {
    records.iter().map(|(op, record)| (*op, encode(record))).collect()
}

/// The view (the sweeps' generation) of a recovered record.
pub fn generation(record: &StoredRecord) -> Option<u64> {
    let bytes: &[u8] = match record {
        StoredRecord::Prepare(frame) => frame,
        StoredRecord::Header(header) => header,
    };
    let header = bytes.get(..HEADER_BYTES)?;
    Header::decode(header).ok().map(|header| header.view)
}

/// Append `records` under one sync barrier; acknowledge them once the sync returns.
pub fn append_batch(wal: &mut Wal<SimStorage>, ledger: &mut Ledger, records: &[(u64, StoredRecord)]) -> bool {
    for (op, record) in records {
        ledger.attempt(*op, &encode(record));
    }
    if ready(wal.append_all(records)).is_err() || ready(wal.sync()).is_err() {
        return false;
    }
    for (op, record) in records {
        ledger.acknowledge(*op, &encode(record));
    }
    true
}
