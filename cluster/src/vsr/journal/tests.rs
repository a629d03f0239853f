//! Tests of `journal`.

use super::*;

fn entry(op: u64, view: u64, parent: u128, trusted: bool) -> Entry {
    let mut header = Header::new(Command::Prepare);
    header.op = op;
    header.view = view;
    header.parent = parent;
    header.checksum = header.compute_checksum();
    Entry::new(header, Some(Rc::from(vec![1u8])), trusted)
}

#[test]
fn the_walk_trusts_a_matching_chain_and_evicts_a_stale_op() {
    let mut journal = Journal::new(1, 0);
    let root = journal.checksum(0).expect("root");
    let one = entry(1, 0, root, false);
    let stale_two = entry(2, 0, one.header().checksum, false);
    let canonical_two = entry(2, 1, one.header().checksum, true);
    let three = entry(3, 1, canonical_two.header().checksum, true);
    journal.put(one.clone());
    journal.put(stale_two);
    journal.put(three);
    let removed = journal.walk_chain(0).expect("no divergence");
    assert_eq!(removed, [2], "the stale op 2 is removed, leaving a hole");
    assert!(journal.get(2).is_none());
    assert!(!journal.ready(1), "op 1 cannot be trusted through a hole");
    journal.put(canonical_two);
    assert_eq!(journal.walk_chain(0).expect("no divergence"), Vec::<u64>::new());
    assert!(journal.ready(1) && journal.ready(2) && journal.ready(3));
}

#[test]
fn trust_earned_in_an_older_view_is_withdrawn_when_a_new_log_is_installed() {
    // Swarm seed 258: an old primary kept trusting its own uncommitted op after the
    // next view dropped it, and applied it. Installing a new view's log now starts
    // from no trust above the applied ops; only the chain walk restores it.
    let mut journal = Journal::new(1, 0);
    let root = journal.checksum(0).expect("root");
    let own_op = entry(1, 2, root, true);
    journal.put(own_op);
    journal.distrust_above(0);
    assert!(
        !journal.ready(1),
        "an op from the old view is not trusted in the new one"
    );
    let canonical = entry(2, 3, 999, true);
    journal.put(canonical);
    let removed = journal.walk_chain(0).expect("no divergence");
    assert_eq!(removed, [1], "the old primary's op is evicted by the new view's chain");
}

#[test]
fn a_mismatch_at_or_below_the_floor_is_reported_as_divergence() {
    let mut journal = Journal::new(1, 0);
    let root = journal.checksum(0).expect("root");
    let one = entry(1, 0, root, true);
    let other_one_child = entry(2, 1, 12345, true);
    journal.put(one);
    journal.put(other_one_child);
    assert!(journal.walk_chain(1).is_err());
}

/// The trust of every op and which ops are held, for comparing two journals.
fn trust_map(journal: &Journal) -> Vec<(u64, u128, bool)> {
    journal
        .entries
        .iter()
        .map(|(op, entry)| (op, entry.checksum(), entry.trusted))
        .collect()
}

#[test]
fn a_walk_from_the_marked_ops_does_what_a_walk_over_every_entry_does() {
    // Random puts (linked to the op below or not, trusted or not), trust given,
    // distrust, removals and walks from random floors, on two journals alike: one
    // walks from its marks, the other is made to walk every entry each time.
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move |below: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % below
    };
    let (mut walks, mut removals, mut divergences) = (0, 0, 0);
    for _case in 0..300 {
        let mut marked = Journal::new(1, 0);
        let mut floor = 0;
        for _step in 0..60 {
            let op = 1 + next(16);
            match next(10) {
                0..=4 => {
                    let parent = match marked.checksum(op - 1) {
                        Some(checksum) if next(4) != 0 => checksum,
                        _ => u128::from(next(1_000)),
                    };
                    let new = entry(op, next(4), parent, next(2) == 0);
                    if op > marked.floor() {
                        marked.put(new);
                    }
                }
                5 => {
                    if let Some(entry) = marked.get_mut(op) {
                        entry.trusted = true;
                    }
                }
                6 => marked.distrust_above(next(16)),
                7 => {
                    if op > marked.floor() {
                        marked.remove(op);
                    }
                }
                _ => {
                    if next(4) == 0 {
                        floor = next(4);
                    }
                    let mut whole = marked.clone();
                    whole.chain_marks = None;
                    let by_marks = marked.walk_chain(floor);
                    let by_whole = whole.walk_chain(floor);
                    assert_eq!(by_marks, by_whole, "the ops removed (or the divergence)");
                    walks += 1;
                    match by_marks {
                        Ok(removed) => removals += removed.len(),
                        Err(_) => {
                            divergences += 1;
                            break;
                        }
                    }
                    assert_eq!(trust_map(&marked), trust_map(&whole), "the entries and their trust");
                    marked.check_chain_walked(floor);
                }
            }
        }
    }
    // The comparison saw every outcome a walk can have.
    assert!(
        walks > 1_000 && removals > 100 && divergences > 10,
        "{walks} walks, {removals} removals, {divergences} divergences"
    );
}

#[test]
#[should_panic(expected = "still has an unwalked op below it")]
fn the_chain_check_catches_trust_given_behind_the_journals_back() {
    let mut journal = Journal::new(1, 0);
    let root = journal.checksum(0).expect("root");
    let one = entry(1, 0, root, false);
    let two = entry(2, 0, one.checksum(), false);
    journal.put(one);
    journal.put(two);
    assert_eq!(journal.walk_chain(0), Ok(Vec::new()));
    journal.check_chain_walked(0);
    // Trust given without a mark: no walk starts at op 2, and the check says so.
    journal.entries.get_mut(2).expect("held").trusted = true;
    journal.check_chain_walked(0);
}

/// A sealed prepare at `op` whose body is `body_bytes` long, as a replica journals it.
fn sealed(op: u64, body_bytes: usize) -> Entry {
    let mut header = Header::new(Command::Prepare);
    header.op = op;
    header.view = op % 3;
    let frame = crate::wire::seal_header(header, &vec![7u8; body_bytes]);
    let (header, _) = crate::wire::open(&frame).expect("a frame just sealed opens");
    Entry::new(header, Some(Rc::from(frame)), op.is_multiple_of(2))
}

#[test]
fn an_entry_reads_its_header_back_from_its_frame_and_keeps_it_when_the_frame_goes() {
    let mut entry = sealed(5, 40);
    let header = entry.header();
    assert_eq!((header.op, header.view), (5, 2));
    assert_eq!(entry.frame().map(|frame| frame.len()), Some(HEADER_BYTES + 40));
    assert_eq!(entry.frame_len(), (HEADER_BYTES + 40) as u64);
    entry.drop_frame();
    assert_eq!(entry.header(), header);
    assert!(entry.frame().is_none() && entry.frame_len() == 0);
}

#[test]
fn the_fields_read_in_place_are_the_decoded_headers() {
    let mut header = Header::new(Command::Prepare);
    header.op = 0x0002_0304_0506_0708;
    header.parent = 0x1112_1314_1516_1718_191a_1b1c_1d1e_1f20;
    let frame = crate::wire::seal_header(header, b"body");
    let (header, _) = crate::wire::open(&frame).expect("a frame just sealed opens");
    let entry = Entry::new(header, Some(Rc::from(frame)), true);
    assert!(
        matches!(entry.held, Held::Frame(_)),
        "the header is read from the frame"
    );
    assert_eq!(
        (entry.checksum(), entry.parent(), entry.op()),
        (header.checksum, header.parent, header.op)
    );
    let root = Journal::new(1, 2);
    let root = root.get(0).expect("the root");
    assert_eq!((root.checksum(), root.op()), (root_header(1, 2).checksum, 0));
}

#[test]
fn ops_far_apart_cost_a_page_each_and_emptied_pages_are_released() {
    let mut journal = Journal::new(1, 0);
    journal.put(sealed(1, 10));
    journal.put(sealed(100_000, 10));
    assert_eq!(
        (journal.head(), journal.len(), journal.entries.pages.len()),
        (100_000, 3, 2)
    );
    assert_eq!(journal.range(2, 99_999).count(), 0);
    assert_eq!(journal.range(0, 100_000).count(), 3);
    journal.truncate_after(70);
    assert_eq!((journal.head(), journal.len(), journal.entries.pages.len()), (1, 2, 1));
    assert_eq!(journal.frame_bytes(), (HEADER_BYTES + 10) as u64);
    journal.put(sealed(PAGE_OPS * 2 + 1, 10));
    journal.remove(PAGE_OPS * 2 + 1);
    assert_eq!((journal.head(), journal.entries.pages.len()), (1, 1));
    journal.reset_floor(sealed(PAGE_OPS * 5, 0).header());
    assert_eq!(
        (journal.floor(), journal.head(), journal.len()),
        (PAGE_OPS * 5, PAGE_OPS * 5, 1)
    );
    assert_eq!((journal.entries.pages.len(), journal.frame_bytes()), (1, 0));
    assert!(journal.ready(PAGE_OPS * 5) && journal.is_empty());
}

/// Every operation, drawn at random over a few pages, leaves the journal agreeing
/// with a plain map of the same entries.
#[test]
fn the_paged_table_agrees_with_a_map_of_the_same_entries() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut draw = |below: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % below
    };
    let mut journal = Journal::new(1, 0);
    let mut model: BTreeMap<u64, (u64, bool)> = BTreeMap::from([(0, (0, true))]);
    for _ in 0..20_000 {
        let floor = journal.floor();
        let head = journal.head();
        match draw(10) {
            0..=4 => {
                let op = floor + 1 + draw(4 * PAGE_OPS);
                let entry = sealed(op, draw(3) as usize * 100);
                model.insert(op, (entry.frame_len(), entry.trusted));
                journal.put(entry);
            }
            5 => {
                let op = floor + 1 + draw(4 * PAGE_OPS);
                journal.remove(op);
                model.remove(&op);
            }
            6 => {
                let op = floor + draw(head - floor + 1);
                journal.truncate_after(op);
                model.retain(|&held, _| held <= op);
            }
            7 => {
                let op = floor + draw(head - floor + 1);
                journal.distrust_above(op);
                for (_, (_, trusted)) in model.range_mut(op + 1..) {
                    *trusted = false;
                }
            }
            8 => {
                let Some((&op, _)) = model.range(floor + draw(head - floor + 1)..).next() else {
                    continue;
                };
                journal.evict_below(op);
                model.retain(|&held, _| held >= op);
                model.insert(op, (0, true));
            }
            _ => {
                let op = floor + 1 + draw(2 * PAGE_OPS);
                journal.reset_floor(sealed(op, 0).header());
                model.retain(|&held, _| held > op);
                model.insert(op, (0, true));
            }
        }
        journal.debug_check();
        let held: Vec<(u64, u64, bool)> = journal
            .range(journal.floor(), journal.head())
            .map(|entry| (entry.header().op, entry.frame_len(), entry.trusted))
            .collect();
        let expected: Vec<(u64, u64, bool)> = model.iter().map(|(&op, &(len, trusted))| (op, len, trusted)).collect();
        assert_eq!(held, expected);
        assert_eq!(journal.head(), *model.keys().next_back().expect("the floor"));
        assert_eq!(journal.len(), model.len());
        assert_eq!(journal.frame_bytes(), model.values().map(|(len, _)| len).sum::<u64>());
    }
}
