//! Storage: records, segment logs, snapshot files.

#[allow(unused_imports)]
use crate::{memory::*, metadata::*, partition::*, storage_boot::*, support::*, vsr_node::*, wire::*};

// ---------------------------------------------------------------------------------------
// Storage: records, segment logs, snapshot files
// ---------------------------------------------------------------------------------------

pub(crate) const TEST_MAGIC: u32 = u32::from_le_bytes(*b"TEST");

/// Where a record header holds its payload length (`storage/record.rs` layout).
pub(crate) const RECORD_LEN_AT: usize = 24;

/// The payload length of the record starting at `at` in `bytes`.
pub(crate) fn record_len(bytes: &[u8], at: usize) -> usize {
    let mut raw = [0; 4];
    raw.copy_from_slice(&bytes[at + RECORD_LEN_AT..at + RECORD_LEN_AT + 4]);
    u32::from_le_bytes(raw) as usize
}

/// One record: kind, key, payload.
pub(crate) fn record_parts() -> impl Strategy<Value = (u8, u64, Vec<u8>)> {
    (any::<u8>(), any::<u64>(), bytes(300))
}

/// A segment log of `count` messages from `start`, as a segment file holds them.
pub(crate) fn segment_log(start: u64, payloads: &[Vec<u8>]) -> (Vec<u8>, Vec<usize>) {
    let mut log = Vec::new();
    let mut ends = Vec::new();
    for (offset, payload) in (start..).zip(payloads) {
        let mut fields = Vec::new();
        fields.extend_from_slice(&(offset * 3).to_le_bytes()); // timestamp
        fields.extend_from_slice(&u128::from(offset).to_le_bytes()); // id
        fields.extend_from_slice(payload);
        record::encode_into(&mut log, SEGMENT_MAGIC, MESSAGE_RECORD_KIND, offset, &fields);
        ends.push(log.len());
    }
    (log, ends)
}

/// A snapshot file written as chunks and a trailer (as a snapshot larger than one
/// record is; the chunks are small here, which the reader does not mind).
pub(crate) fn chunked_snapshot(key: u64, chunks: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for chunk in chunks {
        record::encode_into(&mut out, SNAPSHOT_MAGIC, SNAPSHOT_CHUNK_KIND, key, chunk);
    }
    let whole = chunks.concat();
    let mut trailer = Vec::new();
    trailer.extend_from_slice(&(whole.len() as u64).to_le_bytes());
    trailer.extend_from_slice(&(chunks.len() as u32).to_le_bytes());
    trailer.extend_from_slice(&record::checksum(&whole).to_le_bytes());
    record::encode_into(&mut out, SNAPSHOT_MAGIC, SNAPSHOT_TRAILER_KIND, key, &trailer);
    out
}

/// The records of bytes made only of whole records, each as its bytes.
pub(crate) fn split_records(mut bytes: &[u8]) -> Vec<&[u8]> {
    let mut records = Vec::new();
    while bytes.len() >= RECORD_HEADER_BYTES {
        let len = record_len(bytes, 0);
        let (record, rest) = bytes.split_at((RECORD_HEADER_BYTES + len).min(bytes.len()));
        records.push(record);
        bytes = rest;
    }
    records
}

pub(crate) const SNAPSHOT_PATH: &str = "group/checkpoint";

/// Read `file` back as the snapshot at `SNAPSHOT_PATH`.
pub(crate) fn read_snapshot_bytes(file: &[u8]) -> Result<Option<Snapshot>, SnapshotFileError> {
    let storage = Memory::default();
    storage.put(SNAPSHOT_PATH, file);
    now(read_snapshot(&storage, SNAPSHOT_PATH))
}

/// The bytes `write_snapshot` puts on disk for `bytes` labelled `key`.
pub(crate) fn written_snapshot(key: u64, bytes: &[u8]) -> Vec<u8> {
    let storage = Memory::default();
    now(write_snapshot(&storage, SNAPSHOT_PATH, key, bytes)).expect("in-memory writes succeed");
    storage.get(SNAPSHOT_PATH)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn records_round_trip_and_random_bytes_never_decode(
        (kind, key, payload) in record_parts(),
        trailing in bytes(64),
        input in bytes(1024),
    ) {
        let bytes = record::encode(TEST_MAGIC, kind, key, &payload);
        // A record is read at the start of whatever follows it in its file.
        let file = [&bytes[..], &trailing].concat();
        let decoded = record::decode(TEST_MAGIC, &file).expect("a record's own bytes decode");
        prop_assert_eq!((decoded.kind, decoded.key, decoded.payload), (kind, key, &payload[..]));
        prop_assert_eq!(decoded.encoded_bytes(), bytes.len());
        match record::decode(TEST_MAGIC, &input) {
            Err(RecordError::End) => prop_assert!(input.iter().take(RECORD_HEADER_BYTES).all(|&b| b == 0)),
            Err(_) => {}
            Ok(record) => prop_assert!(false, "random bytes decoded as {record:?}"),
        }
    }

    #[test]
    fn a_record_with_any_bit_flipped_or_cut_never_decodes(
        (kind, key, payload) in record_parts(),
        (donor_kind, donor_key, donor_payload) in record_parts(),
        damage in damage(),
    ) {
        let bytes = record::encode(TEST_MAGIC, kind, key, &payload);
        let donor = record::encode(TEST_MAGIC, donor_kind, donor_key, &donor_payload);
        let damaged = damage.apply(&bytes, &donor);
        match record::decode(TEST_MAGIC, &damaged) {
            Ok(decoded) => {
                prop_assert!(!damage.is_flip_or_cut(), "{damage:?} went unnoticed");
                let found = (decoded.kind, decoded.key, decoded.payload);
                prop_assert!(
                    found == (kind, key, &payload[..]) || found == (donor_kind, donor_key, &donor_payload[..]),
                    "a spliced record decoded to a third record"
                );
            }
            Err(_) => prop_assert!(damaged.get(..bytes.len()) != Some(&bytes[..])),
        }
    }

    #[test]
    fn a_record_length_beyond_record_payload_bytes_max_is_refused_before_allocating(
        (kind, key, payload) in record_parts(),
        len in (RECORD_PAYLOAD_BYTES_MAX as u32 + 1)..=u32::MAX,
    ) {
        // RECORD_PAYLOAD_BYTES_MAX bounds what a length read from disk can claim; the
        // claim is refused before the checksum is even computed.
        let mut bytes = record::encode(TEST_MAGIC, kind, key, &payload);
        bytes[RECORD_LEN_AT..RECORD_LEN_AT + 4].copy_from_slice(&len.to_le_bytes());
        prop_assert_eq!(record::decode(TEST_MAGIC, &bytes), Err(RecordError::TooLong { len: u64::from(len) }));
    }

    #[test]
    fn a_segment_log_verifies_whole_and_damage_is_caught_at_its_record(
        start in 0u64..1 << 40,
        payloads in prop::collection::vec(bytes(100), 1..6),
        donor_payloads in prop::collection::vec(bytes(100), 1..6),
        damage in damage(),
    ) {
        let (log, ends) = segment_log(start, &payloads);
        prop_assert_eq!(verify_log_bytes(start, &log), Ok(payloads.len() as u64));
        let (donor, _) = segment_log(start, &donor_payloads);
        let damaged = damage.apply(&log, &donor);
        let verified = verify_log_bytes(start, &damaged);
        if damage.flipped_at(log.len()).is_some() {
            prop_assert!(verified.is_err(), "a flipped bit went unnoticed");
        }
        if let Some(len) = damage.cut_to(log.len()) {
            // A log cut between records is a shorter valid log; anywhere else, damage.
            match ends.iter().position(|end| *end == len) {
                Some(records) => prop_assert_eq!(verified.clone(), Ok(records as u64 + 1)),
                None if len == 0 => prop_assert_eq!(verified.clone(), Ok(0)),
                None => prop_assert!(verified.is_err()),
            }
        }
        if let Ok(count) = verified {
            // Whatever verified is a run of records each of which is this log's or the
            // donor's record for that offset.
            let (ours, theirs, found) = (split_records(&log), split_records(&donor), split_records(&damaged));
            prop_assert_eq!(found.len() as u64, count);
            for (index, record) in found.iter().enumerate() {
                prop_assert!(ours.get(index) == Some(record) || theirs.get(index) == Some(record));
            }
        }
    }

    #[test]
    fn random_bytes_never_verify_as_a_segment_log(start in any::<u64>(), input in bytes(2048)) {
        match verify_log_bytes(start, &input) {
            Ok(count) => prop_assert!(input.is_empty() && count == 0),
            Err(why) => prop_assert!(!why.is_empty()),
        }
    }

    #[test]
    fn a_snapshot_file_reads_back_and_any_flip_or_cut_is_corrupt(
        key in any::<u64>(),
        snapshot in bytes(2048),
        donor_snapshot in bytes(2048),
        damage in damage(),
    ) {
        let file = written_snapshot(key, &snapshot);
        let original = Snapshot { key, bytes: snapshot };
        prop_assert_eq!(read_snapshot_bytes(&file).expect("reads"), Some(original.clone()));
        let donor = written_snapshot(key.wrapping_add(1), &donor_snapshot);
        let damaged = damage.apply(&file, &donor);
        match read_snapshot_bytes(&damaged) {
            Ok(Some(read)) => {
                prop_assert!(!damage.is_flip_or_cut(), "{damage:?} went unnoticed");
                prop_assert!(read == original || (read.key == key.wrapping_add(1) && read.bytes == donor_snapshot));
            }
            Ok(None) => prop_assert!(false, "a present snapshot read as absent"),
            Err(error) => prop_assert!(matches!(error, SnapshotFileError::Corrupt { .. }), "{error}"),
        }
    }

    #[test]
    fn a_chunked_snapshot_reads_back_and_any_flip_or_cut_is_corrupt(
        key in any::<u64>(),
        chunks in prop::collection::vec(bytes(200), 1..5),
        donor_chunks in prop::collection::vec(bytes(200), 1..5),
        damage in damage(),
    ) {
        let file = chunked_snapshot(key, &chunks);
        let original = Snapshot { key, bytes: chunks.concat() };
        prop_assert_eq!(read_snapshot_bytes(&file).expect("reads"), Some(original.clone()));
        let donor = chunked_snapshot(key, &donor_chunks);
        let damaged = damage.apply(&file, &donor);
        match read_snapshot_bytes(&damaged) {
            Ok(Some(read)) => {
                prop_assert!(!damage.is_flip_or_cut(), "{damage:?} went unnoticed");
                // The trailer's checksum covers the whole: only a complete snapshot reads.
                prop_assert!(read == original || read.bytes == donor_chunks.concat());
            }
            Ok(None) => prop_assert!(false, "a present snapshot read as absent"),
            Err(error) => prop_assert!(matches!(error, SnapshotFileError::Corrupt { .. }), "{error}"),
        }
    }

    #[test]
    fn random_bytes_never_read_as_a_snapshot(input in bytes(4096), kind in 0u8..5, key in any::<u64>()) {
        prop_assert!(read_snapshot_bytes(&input).is_err());
        // A valid first record of any kind followed by garbage.
        let file = [&record::encode(SNAPSHOT_MAGIC, kind, key, &input[..input.len() / 2])[..], &input].concat();
        match read_snapshot_bytes(&file) {
            Ok(Some(read)) => prop_assert!(kind == SNAPSHOT_RECORD_KIND && input.is_empty() && read.bytes.is_empty()),
            Ok(None) => prop_assert!(false, "a present snapshot read as absent"),
            Err(error) => prop_assert!(matches!(error, SnapshotFileError::Corrupt { .. }), "{error}"),
        }
    }
}

pub(crate) const SEGMENT_DIR: &str = "partitions/7";

/// The index a segment log of `payloads` from `start` has: one entry per record.
pub(crate) fn segment_index(start: u64, ends: &[usize]) -> Vec<u8> {
    (start..)
        .zip(std::iter::once(0).chain(ends.iter().copied()))
        .take(ends.len())
        .flat_map(|(offset, position)| {
            encode_index_entry(&IndexEntry {
                offset,
                position: position as u64,
                timestamp_micros: offset * 3,
            })
        })
        .collect()
}

/// Recover a segment directory holding one segment (`log` and `index` from `start`)
/// with every offset below `start + count` promised durable; the report and every
/// message the recovered log serves.
pub(crate) fn recover_segment(
    start: u64,
    count: usize,
    log: &[u8],
    index: &[u8],
) -> (SegmentRecovery, Vec<StoredMessage>) {
    let storage = Memory::default();
    storage.put(&format!("{SEGMENT_DIR}/{}", log_file_name(start)), log);
    storage.put(&format!("{SEGMENT_DIR}/{}", index_file_name(start)), index);
    let frontier = start + count as u64;
    let (mut segments, report) = now(SegmentLog::open(
        storage,
        SEGMENT_DIR,
        frontier,
        SegmentOptions::default(),
    ))
    .expect("recovers");
    let messages = now(segments.read(start, count)).expect("reads");
    (report, messages)
}

/// The messages of `segment_log(start, payloads)`.
pub(crate) fn segment_messages(start: u64, payloads: &[Vec<u8>]) -> Vec<StoredMessage> {
    (start..)
        .zip(payloads)
        .map(|(offset, payload)| StoredMessage {
            offset,
            timestamp_micros: offset * 3,
            id: u128::from(offset),
            payload: payload.clone(),
        })
        .collect()
}

/// A segment's start offset and payloads, a donor segment's payloads at the same start,
/// and the damage to apply.
pub(crate) fn damaged_segment() -> impl Strategy<Value = (u64, Vec<Vec<u8>>, Vec<Vec<u8>>, Damage)> {
    (
        0u64..1 << 40,
        prop::collection::vec(bytes(100), 1..6),
        prop::collection::vec(bytes(100), 1..6),
        damage(),
    )
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_damaged_segment_log_recovers_only_its_whole_leading_records(
        (start, payloads, donor_payloads, damage) in damaged_segment(),
    ) {
        let (log, ends) = segment_log(start, &payloads);
        let index = segment_index(start, &ends);
        let messages = segment_messages(start, &payloads);
        let (report, read) = recover_segment(start, payloads.len(), &log, &index);
        prop_assert!(report.is_clean(), "{report:?}");
        prop_assert_eq!(&read, &messages);

        let (donor, _) = segment_log(start, &donor_payloads);
        let donor_messages = segment_messages(start, &donor_payloads);
        let damaged = damage.apply(&log, &donor);
        let (report, read) = recover_segment(start, payloads.len(), &damaged, &index);
        // What is served is a run from the start, each message this log's or the
        // donor's for its offset: never a message that was not written.
        prop_assert_eq!(report.next_offset, start + read.len() as u64);
        for (index, message) in read.iter().enumerate() {
            prop_assert!(messages.get(index) == Some(message) || donor_messages.get(index) == Some(message));
        }
        if let Some(at) = damage.flipped_at(log.len()) {
            let holder = ends.iter().position(|end| at < *end).expect("in a record");
            prop_assert_eq!(&read, &messages[..holder].to_vec());
            prop_assert!(report.torn_tail.is_some() || report.corruption.is_some(), "{report:?}");
        }
        if let Some(len) = damage.cut_to(log.len()) {
            let whole = ends.iter().take_while(|end| **end <= len).count();
            prop_assert_eq!(&read, &messages[..whole].to_vec());
            prop_assert_eq!(report.missing, Some(start + whole as u64..start + payloads.len() as u64));
        }
    }

    #[test]
    fn a_damaged_segment_index_is_rebuilt_from_its_log(
        (start, payloads, donor_payloads, damage) in damaged_segment(),
    ) {
        let (log, ends) = segment_log(start, &payloads);
        let index = segment_index(start, &ends);
        let (_, donor_ends) = segment_log(start, &donor_payloads);
        let damaged = damage.apply(&index, &segment_index(start, &donor_ends));
        let (report, read) = recover_segment(start, payloads.len(), &log, &damaged);
        // The index is derived data: whatever it says, the log is served whole.
        prop_assert_eq!(read, segment_messages(start, &payloads));
        prop_assert_eq!(report.indexes_rebuilt.is_empty(), damaged == index, "{:?}", report);
        prop_assert!(report.torn_tail.is_none() && report.corruption.is_none() && report.missing.is_none());
    }

    #[test]
    fn random_bytes_never_panic_segment_recovery(
        start in 0u64..1 << 40,
        log in bytes(2048),
        index in bytes(512),
        count in 0usize..8,
    ) {
        let (report, read) = recover_segment(start, count, &log, &index);
        prop_assert!(read.is_empty(), "random bytes served as messages");
        prop_assert_eq!(report.next_offset, start);
    }
}

#[test]
pub(crate) fn a_large_snapshot_written_in_chunks_reads_back_and_any_flip_or_cut_is_corrupt() {
    // Each case writes, reads and damages a snapshot larger than one record (4 MiB).
    let flip_or_cut = prop_oneof![
        (any::<Index>(), 0u8..8).prop_map(|(at, bit)| Damage::Flip { at, bit }),
        any::<Index>().prop_map(|at| Damage::Cut { at }),
    ];
    check_few(
        12,
        (any::<u8>(), 1usize..5_000, flip_or_cut),
        |(fill, extra, damage)| {
            let snapshot: Vec<u8> = (0..RECORD_PAYLOAD_BYTES_MAX + extra)
                .map(|i| fill ^ (i as u8))
                .collect();
            let file = written_snapshot(9, &snapshot);
            prop_assert!(file.len() > RECORD_PAYLOAD_BYTES_MAX + 2 * RECORD_HEADER_BYTES);
            let read = read_snapshot_bytes(&file).expect("reads").expect("present");
            prop_assert!(read.key == 9 && read.bytes == snapshot);
            let damaged = damage.apply(&file, &[]);
            let error = read_snapshot_bytes(&damaged).expect_err("damage went unnoticed");
            prop_assert!(matches!(error, SnapshotFileError::Corrupt { .. }), "{error}");
            Ok(())
        },
    );
}
