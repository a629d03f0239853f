//! Tests of `engine`.

use super::*;
use crate::wire::{self, Command, Header};

const MAGIC: u32 = 0x5445_5354;

fn record(op: u64) -> Vec<u8> {
    let mut header = Header::new(Command::Prepare);
    header.op = op;
    let frame = wire::seal_header(header, b"body");
    record::encode(MAGIC, KIND_PREPARE, op, &frame)
}

#[test]
fn the_scan_steps_over_garbage_to_the_next_valid_record() {
    let mut bytes = record(1);
    let garbage_at = bytes.len() as u64;
    bytes.extend_from_slice(&[0x77; 13]);
    let third_at = bytes.len() as u64;
    bytes.extend_from_slice(&record(3));
    let scan = scan(MAGIC, &bytes);
    assert_eq!(scan.records.iter().map(|(op, _)| *op).collect::<Vec<_>>(), vec![1, 3]);
    assert_eq!(scan.slots[&3].offset, third_at);
    assert_eq!(scan.damaged.len(), 1);
    let damaged = &scan.damaged[0];
    assert_eq!((damaged.offset, damaged.bytes), (garbage_at, 13));
    assert_eq!((damaged.after_op, damaged.before_op), (Some(1), Some(3)));
    assert!(scan.tail.is_none());
}

#[test]
fn trailing_zeros_and_a_record_of_an_unknown_kind_are_a_tail() {
    let mut bytes = record(1);
    let end = bytes.len() as u64;
    bytes.extend_from_slice(&[0; 100]);
    assert_eq!(scan(MAGIC, &bytes).tail.map(|(offset, _)| offset), Some(end));
    let mut bytes = record(1);
    bytes.extend_from_slice(&record::encode(MAGIC, 9, 2, b"x"));
    let tail = scan(MAGIC, &bytes).tail.expect("tail");
    assert!(tail.1.contains("unknown record kind 9"), "{}", tail.1);
}

#[test]
fn a_redo_decodes_only_when_complete() {
    let bytes: Vec<u8> = (0..3 * REDO_CHUNK_BYTES as u32 / 2).map(|index| index as u8).collect();
    let redo = encode_redo(100, 150, 100 + bytes.len() as u64, &bytes);
    let decoded = decode_redo(&redo).expect("valid").expect("present");
    assert_eq!((decoded.offset, decoded.old_len, decoded.bytes), (100, 150, bytes));
    assert!(decode_redo(&redo[..redo.len() - 1]).is_err(), "a torn redo is refused");
    assert!(decode_redo(&[]).expect("empty").is_none());
}
