//! Storage: superblock copies, the partition WAL's frontier, the metadata WAL.

#[allow(unused_imports)]
use crate::{memory::*, metadata::*, partition::*, storage_logs::*, support::*, vsr_node::*, wire::*};

// ---------------------------------------------------------------------------------------
// Storage: superblock copies, the partition WAL's frontier, the metadata WAL
// ---------------------------------------------------------------------------------------

pub(crate) const GROUP_DIR: &str = "group";

pub(crate) fn identity() -> Identity {
    Identity {
        cluster: cluster_id("proptest"),
        group: 5,
        replica: 1,
        replica_count: 3,
    }
}

pub(crate) fn superblock_state() -> impl Strategy<Value = SuperblockState> {
    // What a replica can write: a view up to `wire::VIEW_MAX`, a log view not past it, a
    // commit point up to `wire::OP_MAX` (anything else is refused at open as impossible).
    (
        0..=cluster::wire::VIEW_MAX,
        any::<u64>(),
        0..=cluster::wire::OP_MAX,
        bytes(200),
    )
        .prop_map(|(view, log_view, commit_max, extension)| SuperblockState {
            view,
            log_view: log_view % (view + 1),
            commit_max,
            extension,
        })
        .boxed()
}

/// A formatted superblock file after writing each of `states` in turn.
pub(crate) fn superblock_file(states: &[SuperblockState]) -> Vec<u8> {
    let storage = Memory::default();
    let mut superblock = now(SuperblockFile::format(&storage, GROUP_DIR, identity())).expect("formats");
    for state in states {
        now(superblock.write(state.clone())).expect("writes");
    }
    storage.get(&format!("{GROUP_DIR}/{SUPERBLOCK_FILE}"))
}

pub(crate) type SuperblockOpen = Result<(SuperblockState, Vec<usize>), SuperblockError>;

/// Boot on `file` as the superblock: the state it opens to and the damaged copies.
pub(crate) fn open_superblock(file: &[u8]) -> SuperblockOpen {
    let storage = Memory::default();
    storage.put(&format!("{GROUP_DIR}/{SUPERBLOCK_FILE}"), file);
    now(SuperblockFile::open(&storage, GROUP_DIR, identity())).map(|(superblock, report)| {
        let damaged = report.damaged.iter().map(|damage| damage.copy).collect();
        (superblock.state().clone(), damaged)
    })
}

/// The byte range of copy `copy`'s record within the file (the rest of its slot is
/// padding the record does not cover).
pub(crate) fn copy_record(file: &[u8], copy: usize) -> std::ops::Range<usize> {
    let start = copy * SUPERBLOCK_SLOT_BYTES as usize;
    let len = record_len(file, start);
    start..start + RECORD_HEADER_BYTES + len
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_superblock_copy_with_any_bit_flipped_is_damaged_and_the_others_carry_the_state(
        state in superblock_state(),
        flip in any::<Index>(),
        bit in 0u8..8,
    ) {
        let file = superblock_file(std::slice::from_ref(&state));
        prop_assert_eq!(open_superblock(&file).expect("opens"), (state.clone(), Vec::new()));
        let at = flip.index(file.len());
        let mut damaged = file.clone();
        damaged[at] ^= 1 << bit;
        let copy = at / SUPERBLOCK_SLOT_BYTES as usize;
        let (opened, damaged_copies) = open_superblock(&damaged).expect("three intact copies remain");
        prop_assert_eq!(opened, state);
        // The rest of a slot is padding no record covers.
        let expected = if copy_record(&file, copy).contains(&at) { vec![copy] } else { Vec::new() };
        prop_assert_eq!(damaged_copies, expected);
    }

    #[test]
    fn a_lone_superblock_copy_with_any_bit_flipped_or_cut_never_opens(
        state in superblock_state(),
        copy in 0..SUPERBLOCK_COPIES,
        damage in damage(),
        donor in superblock_state(),
    ) {
        // Only `copy` survives (the others zeroed): its damage alone decides the boot.
        let file = superblock_file(std::slice::from_ref(&state));
        let record = copy_record(&file, copy);
        let mut lone = vec![0u8; file.len()];
        lone[record.clone()].copy_from_slice(&file[record.clone()]);
        prop_assert_eq!(open_superblock(&lone).expect("opens").0, state.clone());
        let donor_file = superblock_file(std::slice::from_ref(&donor));
        let donor_record = copy_record(&donor_file, copy);
        let mut damaged = lone.clone();
        let spliced = damage.apply(&lone[record.clone()], &donor_file[donor_record]);
        damaged.splice(record.clone(), spliced.iter().copied());
        // The slot keeps its size: a cut record is followed by the slot's zero padding,
        // which gives back the very same slot when the bytes cut were zeros too.
        damaged.resize(lone.len(), 0);
        match open_superblock(&damaged) {
            Ok((opened, _)) => {
                prop_assert!(!damage.is_flip_or_cut() || damaged == lone, "{damage:?} went unnoticed");
                prop_assert!(opened == state || opened == donor);
            }
            Err(error) => prop_assert!(matches!(error, SuperblockError::NoIntactCopy { .. }), "{error}"),
        }
    }

    #[test]
    fn a_superblock_file_cut_anywhere_opens_from_its_whole_copies_or_not_at_all(
        states in prop::collection::vec(superblock_state(), 1..3),
        cut in any::<Index>(),
    ) {
        let file = superblock_file(&states);
        let len = cut.index(file.len());
        let whole = len / SUPERBLOCK_SLOT_BYTES as usize;
        match open_superblock(&file[..len]) {
            Ok((opened, damaged)) => {
                prop_assert!(whole > 0);
                prop_assert_eq!(&opened, states.last().expect("one state"));
                prop_assert_eq!(damaged, (whole..SUPERBLOCK_COPIES).collect::<Vec<_>>());
            }
            Err(error) => {
                prop_assert_eq!(whole, 0);
                prop_assert!(matches!(error, SuperblockError::NoIntactCopy { .. }), "{error}");
            }
        }
    }

    #[test]
    fn random_bytes_never_open_as_a_superblock(input in bytes(5 * SUPERBLOCK_SLOT_BYTES as usize)) {
        let opened = open_superblock(&input);
        prop_assert!(matches!(opened, Err(SuperblockError::NoIntactCopy { .. })), "{opened:?}");
    }

    #[test]
    fn a_superblock_extension_length_beyond_its_bound_is_refused(
        state in superblock_state(),
        len in 2049u16..=u16::MAX,
    ) {
        // SUPERBLOCK_EXTENSION_BYTES_MAX (2,048) bounds the extension a copy may claim;
        // the claim is re-checksummed so that only the bound can refuse it.
        let file = superblock_file(std::slice::from_ref(&state));
        let mut damaged = file.clone();
        for copy in 0..SUPERBLOCK_COPIES {
            let record = copy_record(&file, copy);
            let payload = record.start + RECORD_HEADER_BYTES;
            // The extension length sits at byte 56 of a copy's payload (`superblock.rs`).
            damaged[payload + 56..payload + 58].copy_from_slice(&len.to_le_bytes());
            let sum = record::checksum(&damaged[record.start + 16..record.end]);
            damaged[record.start..record.start + 16].copy_from_slice(&sum.to_le_bytes());
        }
        let opened = open_superblock(&damaged);
        prop_assert!(matches!(opened, Err(SuperblockError::NoIntactCopy { .. })), "{opened:?}");
    }
}

/// A prepare frame of `op`, as the WALs hold them.
pub(crate) fn prepare(op: u64, body: &[u8]) -> Vec<u8> {
    let mut header = Header::new(Command::Prepare);
    header.op = op;
    header.view = 1;
    header.cluster = 77;
    wire::seal_header(header, body)
}

/// The records a WAL holds: prepares, and headers of ops whose body is not held.
pub(crate) fn wal_records() -> impl Strategy<Value = Vec<(u64, StoredRecord)>> {
    prop::collection::vec((1u64..4, bytes(120), any::<bool>()), 1..6).prop_map(|steps| {
        let mut op = 0;
        steps
            .into_iter()
            .map(|(step, body, header_only)| {
                op += step;
                let frame = prepare(op, &body);
                let record = if header_only {
                    StoredRecord::Header(frame[..HEADER_BYTES].to_vec())
                } else {
                    StoredRecord::Prepare(Rc::from(frame))
                };
                (op, record)
            })
            .collect()
    })
}

/// The partition group whose WAL the frontier tests write.
pub(crate) const GROUP: u64 = 0x5_0000_0001;

/// The partition WAL of `GROUP` after appending `records` one op at a time, each
/// published (so both frontier slots hold a publication once there are two), and the
/// last publication.
pub(crate) fn partition_wal(records: &[(u64, StoredRecord)]) -> (Memory, Option<Frontier>) {
    let storage = Memory::default();
    let (mut wal, _) = now(PartitionWal::open(&storage, GROUP_DIR, GROUP)).expect("opens");
    for (op, record) in records {
        now(wal.append(&[(*op, record)], WalDurability::Persisted, *op * 100)).expect("appends");
    }
    let published = wal.published();
    (storage, published)
}

pub(crate) fn frontier_path() -> String {
    format!("{GROUP_DIR}/{FRONTIER_FILE}")
}

pub(crate) fn wal_path() -> String {
    format!("{GROUP_DIR}/{PARTITION_WAL_FILE}")
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_frontier_slot_with_any_bit_flipped_or_cut_is_never_trusted(
        records in wal_records(),
        damage in damage(),
        donor_prefix in any::<Index>(),
    ) {
        let (storage, newest) = partition_wal(&records);
        let newest = newest.expect("every append published");
        let older = match records.len() {
            1 => None,
            n => partition_wal(&records[..n - 1]).1,
        };
        let (_, intact) = now(PartitionWal::open(&storage.fork(), GROUP_DIR, GROUP)).expect("reopens");
        prop_assert_eq!(intact.frontier, Some(newest));
        prop_assert_eq!(&intact.records, &records);
        prop_assert!(intact.frontier_damage.is_empty());

        // Splice from the frontier file of an earlier point of the same WAL (a stale
        // sector): whatever boot then trusts is a real publication of this WAL.
        let file = storage.get(&frontier_path());
        let donor = partition_wal(&records[..donor_prefix.index(records.len()) + 1]).0.get(&frontier_path());
        let damaged = damage.apply(&file, &donor);
        let booted = storage.fork();
        booted.put(&frontier_path(), &damaged);
        let (_, recovered) = now(PartitionWal::open(&booted, GROUP_DIR, GROUP)).expect("opens");
        // The records boot keeps are exactly those the trusted publication covers.
        let trusted = recovered.frontier.map_or(0, |frontier| frontier.last_op);
        let covered: Vec<_> = records.iter().filter(|(op, _)| *op <= trusted).cloned().collect();
        prop_assert_eq!(&recovered.records, &covered);
        if let Some(frontier) = recovered.frontier {
            prop_assert_eq!(frontier.group, GROUP);
            prop_assert!(frontier.sequence <= newest.sequence);
        }
        // Each publication's record within the file, newest first.
        let spans: Vec<(Frontier, std::ops::Range<usize>)> = [Some(newest), older]
            .into_iter()
            .flatten()
            .map(|publication| {
                let start = (publication.sequence % 2) as usize * FRONTIER_SLOT_BYTES as usize;
                let len = record_len(&file, start);
                (publication, start..start + RECORD_HEADER_BYTES + len)
            })
            .collect();
        if let Some(at) = damage.flipped_at(file.len()) {
            // The publication whose record holds the flipped bit is damage; the newest
            // other one is trusted.
            let expected = spans.iter().find(|(_, span)| !span.contains(&at)).map(|(publication, _)| *publication);
            prop_assert_eq!(recovered.frontier, expected);
            if spans.iter().any(|(_, span)| span.contains(&at)) {
                prop_assert!(!recovered.frontier_damage.is_empty(), "a flipped publication was not reported");
            }
        }
        if let Some(len) = damage.cut_to(file.len()) {
            // Only a publication whose record is whole is trusted.
            let expected = spans.iter().find(|(_, span)| span.end <= len).map(|(publication, _)| *publication);
            prop_assert_eq!(recovered.frontier, expected);
        }
    }

    #[test]
    fn random_bytes_never_open_as_a_frontier_or_a_partition_wal(
        frontier in bytes(2 * FRONTIER_SLOT_BYTES as usize + 64),
        wal in bytes(2048),
        redo in bytes(512),
    ) {
        let storage = Memory::default();
        storage.put(&frontier_path(), &frontier);
        storage.put(&wal_path(), &wal);
        storage.put(&format!("{}.redo", wal_path()), &redo);
        let (_, recovered) = now(PartitionWal::open(&storage, GROUP_DIR, GROUP)).expect("opens");
        // Nothing was ever published: every WAL byte is untrusted and discarded.
        prop_assert_eq!(recovered.frontier, None);
        prop_assert!(recovered.records.is_empty());
        prop_assert_eq!(recovered.discarded_bytes, wal.len() as u64);
    }
}

/// The metadata WAL holding `records`, as bytes.
pub(crate) fn metadata_wal(records: &[(u64, StoredRecord)]) -> Vec<u8> {
    let storage = Memory::default();
    let (mut wal, _) = now(Wal::open(&storage)).expect("opens");
    for (op, record) in records {
        now(wal.append(*op, record)).expect("appends");
    }
    now(wal.sync()).expect("syncs");
    storage.get(WAL_PATH)
}

/// Boot on `file` as the metadata WAL (and `redo` as its redo file).
pub(crate) fn recover_metadata_wal(file: &[u8], redo: Option<&[u8]>) -> cluster::storage::wal::WalRecovery {
    let storage = Memory::default();
    storage.put(WAL_PATH, file);
    if let Some(redo) = redo {
        storage.put(&format!("{WAL_PATH}.redo"), redo);
    }
    now(Wal::open(&storage)).expect("opens").1
}

/// The op (key) of each record of a file of whole records, in file order: the WAL's
/// own records and the placeholders it writes for the ops of a gap.
pub(crate) fn record_ops(file: &[u8]) -> Vec<u64> {
    let mut ops = Vec::new();
    let mut at = 0;
    while at < file.len() {
        let mut key = [0u8; 8];
        key.copy_from_slice(&file[at + 32..at + 40]);
        ops.push(u64::from_le_bytes(key));
        at += RECORD_HEADER_BYTES + record_len(file, at);
    }
    ops
}

/// Where each record of a file of whole records ends.
pub(crate) fn record_ends(file: &[u8]) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut at = 0;
    while at < file.len() {
        let len = record_len(file, at);
        at += RECORD_HEADER_BYTES + len;
        ends.push(at);
    }
    ends
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_metadata_wal_recovers_only_records_that_were_written(
        records in wal_records(),
        donor_records in wal_records(),
        damage in damage(),
    ) {
        let file = metadata_wal(&records);
        let intact = recover_metadata_wal(&file, None);
        prop_assert_eq!(&intact.records, &records);
        prop_assert!(intact.damaged.is_empty() && intact.torn_tail.is_none());

        let donor = metadata_wal(&donor_records);
        let damaged = damage.apply(&file, &donor);
        let recovered = recover_metadata_wal(&damaged, None);
        for (op, record) in &recovered.records {
            let ours = records.iter().any(|(o, r)| o == op && r == record);
            let theirs = donor_records.iter().any(|(o, r)| o == op && r == record);
            prop_assert!(ours || theirs, "op {op} recovered as a record never written");
        }
        // The file holds `records` and, below a record written above a gap, placeholder
        // records for the missing ops (removed records that recover as nothing).
        let ends = record_ends(&file);
        let ops = record_ops(&file);
        if let Some(at) = damage.flipped_at(file.len()) {
            // The record holding the flipped bit is lost (and reported); no other is.
            let holder = ops[ends.iter().position(|end| at < *end).expect("in a record")];
            let expected: Vec<(u64, StoredRecord)> =
                records.iter().filter(|(op, _)| *op != holder).cloned().collect();
            prop_assert_eq!(&recovered.records, &expected);
            prop_assert!(!recovered.damaged.is_empty() || recovered.torn_tail.is_some());
        }
        if let Some(len) = damage.cut_to(file.len()) {
            // The records wholly before the cut, and a torn tail unless it fell between two.
            let whole = ends.iter().take_while(|end| **end <= len).count();
            let kept = &ops[..whole];
            let expected: Vec<(u64, StoredRecord)> =
                records.iter().filter(|(op, _)| kept.contains(op)).cloned().collect();
            prop_assert_eq!(&recovered.records, &expected);
            let between_records = len == 0 || ends.contains(&len);
            prop_assert_eq!(recovered.torn_tail.is_some(), !between_records);
        }
    }

    #[test]
    fn random_bytes_never_open_as_a_metadata_wal_or_its_redo(wal in bytes(4096), redo in bytes(1024)) {
        let recovered = recover_metadata_wal(&wal, Some(&redo));
        prop_assert!(recovered.records.is_empty());
        prop_assert!(
            !matches!(recovered.interrupted_rewrite, Some(cluster::storage::wal::InterruptedRewrite::Replayed { .. })),
            "random bytes replayed as a rewrite"
        );
    }
}
