//! The records of a log: what each kind holds and how it is encoded (a prepare, a
//! header alone, a vacant slot, a removed op), and the boot scan that accepts valid
//! records in strictly increasing op order and reports damage in the middle and a
//! damaged tail. Pure functions of bytes: no storage call here.

use std::rc::Rc;

use super::*;
use crate::wire::{self, FRAME_BYTES_MAX, HEADER_BYTES, Header};

/// What a record holds, ready to encode.
pub(super) struct Content<'a> {
    /// The record kind.
    pub(super) kind: u8,
    /// The payload's bytes.
    pub(super) bytes: &'a [u8],
    /// Payload bytes the slot reserves (a header reserves its whole frame).
    pub(super) reserve: usize,
}

pub(super) fn invalid(op: u64, reason: impl Into<String>) -> WalError {
    WalError::InvalidRecord {
        op,
        reason: reason.into(),
    }
}

pub(super) fn content_of(op: u64, record: &StoredRecord) -> Result<Content<'_>, WalError> {
    match record {
        StoredRecord::Prepare(frame) => {
            let (header, _) = wire::open(frame).map_err(|error| invalid(op, format!("prepare frame: {error}")))?;
            if header.op != op {
                return Err(invalid(op, format!("the prepare frame is op {}", header.op)));
            }
            Ok(Content {
                kind: KIND_PREPARE,
                bytes: frame,
                reserve: frame.len(),
            })
        }
        StoredRecord::Header(bytes) => {
            let header = Header::decode_verified(bytes).map_err(|error| invalid(op, format!("header: {error}")))?;
            if bytes.len() != HEADER_BYTES || header.op != op {
                return Err(invalid(
                    op,
                    format!("header of {} bytes for op {}", bytes.len(), header.op),
                ));
            }
            let size = header.size as usize;
            if !(HEADER_BYTES..=FRAME_BYTES_MAX).contains(&size) {
                return Err(invalid(op, format!("header names a frame of {size} bytes")));
            }
            Ok(Content {
                kind: KIND_HEADER,
                bytes,
                reserve: size,
            })
        }
    }
}

pub(super) const TOMBSTONE: Content<'static> = Content {
    kind: KIND_REMOVED,
    bytes: &[],
    reserve: 0,
};

/// Encode `content` at `op` with a payload of `payload_len` bytes (zero padded).
pub(super) fn encode_content(out: &mut Vec<u8>, magic: u32, op: u64, content: &Content<'_>, payload_len: usize) {
    record::encode_padded_into(out, magic, content.kind, op, content.bytes, payload_len);
}

/// Decode the content of a valid record (`None` for a removed op).
pub(super) fn parse_content(
    kind: u8,
    op: u64,
    payload: &[u8],
    checksums: Checksums,
) -> Result<Option<StoredRecord>, String> {
    match kind {
        KIND_PREPARE => {
            if payload.len() < HEADER_BYTES {
                return Err(format!(
                    "prepare payload of {} bytes is shorter than a header",
                    payload.len()
                ));
            }
            let size = u32::from_le_bytes([payload[152], payload[153], payload[154], payload[155]]) as usize;
            let frame = payload
                .get(..size)
                .ok_or_else(|| format!("frame size {size} exceeds its payload"))?;
            let (header, _) = wire::open_with(frame, checksums).map_err(|error| format!("prepare frame: {error}"))?;
            if header.op != op {
                return Err(format!("record of op {op} holds the frame of op {}", header.op));
            }
            Ok(Some(StoredRecord::Prepare(Rc::from(frame))))
        }
        KIND_HEADER => {
            let bytes = payload
                .get(..HEADER_BYTES)
                .ok_or("header payload shorter than a header")?;
            let header = Header::decode_verified(bytes).map_err(|error| format!("header: {error}"))?;
            if header.op != op {
                return Err(format!("record of op {op} holds the header of op {}", header.op));
            }
            Ok(Some(StoredRecord::Header(bytes.to_vec())))
        }
        KIND_REMOVED => Ok(None),
        other => Err(format!("unknown record kind {other}")),
    }
}

/// The result of scanning a log's bytes.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    pub(crate) records: Vec<(u64, StoredRecord)>,
    pub(crate) slots: BTreeMap<u64, Slot>,
    pub(crate) damaged: Vec<DamagedRange>,
    /// Damage with no valid record after it: (offset, reason).
    pub(crate) tail: Option<(u64, String)>,
}

/// A valid record in order: (op, encoded bytes, content).
pub(super) type Accepted = (u64, usize, Option<StoredRecord>);

/// The record at the start of `bytes`, if it is valid and above `last`; otherwise how
/// far to skip before searching again, and why.
pub(super) fn accept(
    magic: u32,
    bytes: &[u8],
    last: Option<u64>,
    checksums: Checksums,
) -> Result<Accepted, (usize, String)> {
    let record = record::decode_with(magic, bytes, checksums).map_err(|error| (1, error.to_string()))?;
    let skip = record.encoded_bytes();
    let content = parse_content(record.kind, record.key, record.payload, checksums).map_err(|reason| (skip, reason))?;
    if let Some(last) = last
        && record.key <= last
    {
        return Err((skip, format!("op {} is not above the op {last} before it", record.key)));
    }
    Ok((record.key, skip, content))
}

/// Scan `bytes` from the start: every valid record in strictly increasing op order,
/// damage in the middle (with the ops around it), and a damaged tail.
#[cfg(test)]
pub(crate) fn scan(magic: u32, bytes: &[u8]) -> Scan {
    scan_with(magic, bytes, Checksums::Verify)
}

/// [`scan`], verifying checksums or not (see [`Checksums`]).
pub(crate) fn scan_with(magic: u32, bytes: &[u8], checksums: Checksums) -> Scan {
    let mut scan = Scan::default();
    let magic_bytes = magic.to_le_bytes();
    let mut position = 0;
    let mut last = None;
    while position < bytes.len() {
        let (skip, reason) = match accept(magic, &bytes[position..], last, checksums) {
            Ok((op, len, content)) => {
                scan.slots.insert(
                    op,
                    Slot {
                        offset: position as u64,
                        bytes: len as u64,
                        vacant: content.is_none(),
                    },
                );
                if let Some(content) = content {
                    scan.records.push((op, content));
                }
                last = Some(op);
                position += len;
                continue;
            }
            Err(rejected) => rejected,
        };
        // Search ahead for the next valid record: cheap magic test first, then decode.
        let mut probe = position + skip;
        let found = loop {
            if probe + RECORD_HEADER_BYTES > bytes.len() {
                break None;
            }
            if bytes[probe + 16..probe + 20] == magic_bytes
                && let Ok(accepted) = accept(magic, &bytes[probe..], last, checksums)
            {
                break Some(accepted);
            }
            probe += 1;
        };
        let Some((op, _, _)) = found else {
            scan.tail = Some((position as u64, reason));
            break;
        };
        scan.damaged.push(DamagedRange {
            offset: position as u64,
            bytes: (probe - position) as u64,
            after_op: last,
            before_op: Some(op),
            reason,
        });
        position = probe;
    }
    scan
}
