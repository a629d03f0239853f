//! Property tests of `view_change`.

use proptest::prelude::*;
use proptest::sample::Index;

use super::*;
use crate::testing::proptest_support::{config, damage};
use crate::vsr::MemoryStore;
use crate::vsr::tests::Counter;

/// The decoders are the same for every state machine; the counter is the smallest.
type Decoders = Replica<Counter, MemoryStore>;

/// A chain of prepare headers `first..first + len`, each naming its predecessor.
fn chain(first: u64, len: usize, tag: u128) -> Vec<Header> {
    let mut parent = tag;
    (0..len as u64)
        .map(|index| {
            let op = first.wrapping_add(index);
            let mut header = Header::new(Command::Prepare);
            header.op = op;
            header.parent = parent;
            header.context = tag;
            header.checksum = header.compute_checksum();
            parent = header.checksum;
            header
        })
        .collect()
}

/// A DoViewChange body as `send_do_view_change` lays it out.
fn do_view_change_body(records: &[(u64, Option<Header>, bool)]) -> Vec<u8> {
    let mut body = Vec::new();
    for (op, header, present) in records {
        body.extend_from_slice(&op.to_le_bytes());
        let flags = if *present { RECORD_PRESENT } else { 0 };
        match header {
            Some(header) => {
                body.push(flags | RECORD_HAS_HEADER);
                body.extend_from_slice(&header.to_bytes());
            }
            None => {
                body.push(flags | RECORD_NACK);
                body.extend_from_slice(&[0u8; HEADER_BYTES]);
            }
        }
    }
    body
}

fn frame_header(command: Command, op: u64) -> Header {
    let mut header = Header::new(command);
    header.op = op;
    header.log_view = 3;
    header.commit = op.saturating_sub(2);
    header
}

/// What a decoded DoViewChange must satisfy whatever the body was.
fn check_do_view_change(header: &Header, body: &[u8]) -> Result<(), TestCaseError> {
    if let Some(log) = Decoders::decode_do_view_change(header, body) {
        prop_assert_eq!(log.records.len() * RECORD_BYTES, body.len());
        prop_assert!(log.records.len() <= VIEW_CHANGE_HEADERS_MAX as usize);
        prop_assert_eq!(log.head, header.op);
        for (op, record) in &log.records {
            prop_assert!(*op <= header.op);
            if let Some(held) = record.header {
                prop_assert_eq!(held.op, *op);
                prop_assert_eq!(held.command, Command::Prepare);
                prop_assert_eq!(held.checksum, held.compute_checksum());
            } else {
                prop_assert!(!record.present);
            }
        }
    }
    Ok(())
}

/// What a decoded StartView must satisfy whatever the body was.
fn check_start_view(header: &Header, body: &[u8]) -> Result<(), TestCaseError> {
    if let Some(headers) = Decoders::decode_start_view(header, body) {
        prop_assert_eq!(headers.len() * HEADER_BYTES, body.len());
        prop_assert_eq!(headers.last().map(|last| last.op), Some(header.op));
        for pair in headers.windows(2) {
            prop_assert_eq!(pair[0].op.checked_add(1), Some(pair[1].op));
            prop_assert_eq!(pair[1].parent, pair[0].checksum);
        }
        for held in &headers {
            prop_assert_eq!(held.command, Command::Prepare);
            prop_assert_eq!(held.checksum, held.compute_checksum());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn random_bodies_never_panic_the_view_change_decoders(
        body in prop::collection::vec(any::<u8>(), 0..3 * RECORD_BYTES),
        op in 0..=crate::wire::OP_MAX,
        records in 0usize..3,
    ) {
        check_do_view_change(&frame_header(Command::DoViewChange, op), &body)?;
        check_start_view(&frame_header(Command::StartView, op), &body)?;
        // Garbage cut to whole records and whole headers reaches the per-record checks.
        let whole = &body[..(records * RECORD_BYTES).min(body.len() / RECORD_BYTES * RECORD_BYTES)];
        check_do_view_change(&frame_header(Command::DoViewChange, op), whole)?;
        let whole = &body[..body.len() / HEADER_BYTES * HEADER_BYTES];
        check_start_view(&frame_header(Command::StartView, op), whole)?;
    }

    #[test]
    fn a_do_view_change_decodes_to_its_records_and_damage_never_breaks_its_invariants(
        first in 0..=crate::wire::OP_MAX,
        len in 1usize..6,
        nacks in any::<[bool; 6]>(),
        present in any::<[bool; 6]>(),
        (how, at, bit) in (any::<u8>(), any::<Index>(), 0u8..8),
        garbage in prop::collection::vec(any::<u8>(), 0..40),
    ) {
        let first = first.min(crate::wire::OP_MAX - len as u64);
        let headers = chain(first, len, 7);
        let records: Vec<(u64, Option<Header>, bool)> = headers
            .iter()
            .enumerate()
            .map(|(index, header)| {
                let held = (!nacks[index]).then_some(*header);
                (header.op, held, held.is_some() && present[index])
            })
            .collect();
        let header = frame_header(Command::DoViewChange, first + len as u64 - 1);
        let body = do_view_change_body(&records);
        let log = Decoders::decode_do_view_change(&header, &body).expect("a body as sent decodes");
        prop_assert_eq!(log.records.len(), len);
        for ((op, held, present), (decoded_op, record)) in records.iter().zip(&log.records) {
            prop_assert_eq!(op, decoded_op);
            prop_assert_eq!(held.map(|h| h.checksum), record.header.map(|h| h.checksum));
            prop_assert_eq!(*present, record.present);
        }
        check_do_view_change(&header, &damage(&body, how, at, bit, &garbage))?;
    }

    #[test]
    fn a_start_view_decodes_to_its_chain_and_damage_never_breaks_its_invariants(
        first in 0..=crate::wire::OP_MAX,
        len in 1usize..5,
        (how, at, bit) in (any::<u8>(), any::<Index>(), 0u8..8),
        garbage in prop::collection::vec(any::<u8>(), 0..40),
    ) {
        let first = first.min(crate::wire::OP_MAX - len as u64);
        let headers = chain(first, len, 9);
        let body: Vec<u8> = headers.iter().flat_map(|header| header.to_bytes()).collect();
        let header = frame_header(Command::StartView, first + len as u64 - 1);
        let decoded = Decoders::decode_start_view(&header, &body).expect("a chain as sent decodes");
        prop_assert_eq!(decoded, headers);
        let damaged = damage(&body, how, at, bit, &garbage);
        if how % 3 == 0 {
            // Every header is verified: a flipped bit anywhere is refused.
            prop_assert!(Decoders::decode_start_view(&header, &damaged).is_none());
        }
        check_start_view(&header, &damaged)?;
    }

    #[test]
    fn a_start_view_whose_ops_wrap_past_u64_max_is_refused(tag in any::<u128>(), extra in 0usize..3) {
        // Headers at ops u64::MAX, 0, 1, ...: each verifies and names its predecessor,
        // but no op follows u64::MAX. Found while writing these tests: the contiguity
        // check computed `op + 1` and overflowed (a panic, overflow checks being on
        // in every profile) on such a body from a peer.
        let mut headers = chain(u64::MAX, 1, tag);
        let mut parent = headers[0].checksum;
        for op in 0..=extra as u64 {
            let mut next = Header::new(Command::Prepare);
            next.op = op;
            next.parent = parent;
            next.checksum = next.compute_checksum();
            parent = next.checksum;
            headers.push(next);
        }
        let body: Vec<u8> = headers.iter().flat_map(|header| header.to_bytes()).collect();
        let header = frame_header(Command::StartView, extra as u64);
        prop_assert!(Decoders::decode_start_view(&header, &body).is_none());
    }
}
