//! The in-memory journal: every op's prepare header, its frame when held, and whether
//! it is known to belong to the canonical chain.
//!
//! An entry is *trusted* when it is part of the current view's log: received from the
//! current primary, installed from a StartView or the primary's own merge, or reached
//! by walking parent checksums down from a trusted entry. Only trusted entries with a
//! frame are ever applied, which is how a stale op left over from an older view (same
//! number, different checksum) is never committed.
//!
//! The lowest entry is the *floor*: op 0 (the group's root, the same on every replica)
//! until ops are evicted, then the op of a durable checkpoint (see `vsr::checkpoint`).
//! The floor holds only a header: the state it names is the checkpoint's, already
//! applied. It is always trusted and counts as ready, and nothing is ever put below it.
//! The journal tracks the bytes of the frames it holds, which is what its byte bound
//! (the prepare ring of a partition) is measured in.

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::wire::{Command, Header};

/// One op's slot.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The prepare's header (checksum filled in).
    pub header: Header,
    /// The whole sealed prepare frame, when this replica holds the body.
    pub frame: Option<Rc<[u8]>>,
    /// Part of the current view's chain (see the module docs).
    pub trusted: bool,
}

/// Headers and frames by op.
#[derive(Clone, Debug)]
pub struct Journal {
    entries: BTreeMap<u64, Entry>,
    /// The lowest op held: the root or the last checkpoint evicted down to.
    floor: u64,
    /// Bytes of every frame held.
    frame_bytes: u64,
}

fn frame_len(entry: &Entry) -> u64 {
    entry.frame.as_ref().map_or(0, |frame| frame.len() as u64)
}

/// The root header of a group: op 0, view 0, identical on every replica.
pub fn root_header(cluster: u64, group: u64) -> Header {
    let mut header = Header::new(Command::Prepare);
    header.cluster = cluster;
    header.group = group;
    header.size = crate::wire::HEADER_BYTES as u32;
    header.checksum_body = crate::wire::checksum(&[]);
    header.checksum = header.compute_checksum();
    header
}

impl Journal {
    /// A journal holding only the root.
    pub fn new(cluster: u64, group: u64) -> Self {
        let mut entries = BTreeMap::new();
        entries.insert(
            0,
            Entry {
                header: root_header(cluster, group),
                frame: Some(Rc::from(Vec::new())),
                trusted: true,
            },
        );
        Self {
            entries,
            floor: 0,
            frame_bytes: 0,
        }
    }

    /// The lowest op held (see the module docs).
    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// Entries held, the floor included.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether only the floor is held.
    pub fn is_empty(&self) -> bool {
        self.entries.len() <= 1
    }

    /// Bytes of the frames held.
    pub fn frame_bytes(&self) -> u64 {
        self.frame_bytes
    }

    /// Forget every op below `op`, which becomes the floor: header only, trusted.
    /// `op` must be held (an applied op covered by a durable checkpoint).
    pub fn evict_below(&mut self, op: u64) {
        assert!(op >= self.floor, "the floor never moves down");
        let kept = self.entries.split_off(&op);
        for entry in self.entries.values() {
            self.frame_bytes -= frame_len(entry);
        }
        self.entries = kept;
        let floor = self.entries.get_mut(&op).expect("the new floor is held");
        self.frame_bytes -= frame_len(floor);
        floor.frame = None;
        floor.trusted = true;
        self.floor = op;
    }

    /// Replace everything at or below `header.op` with `header` as the floor: a
    /// checkpoint at that op was installed. Entries above it stay (their trust is
    /// re-derived by the chain walk from the new floor).
    pub fn reset_floor(&mut self, header: Header) {
        assert!(header.op > self.floor, "a checkpoint installs above the floor");
        let kept = self.entries.split_off(&(header.op + 1));
        for entry in self.entries.values() {
            self.frame_bytes -= frame_len(entry);
        }
        self.entries = kept;
        self.entries.insert(
            header.op,
            Entry {
                header,
                frame: None,
                trusted: true,
            },
        );
        self.floor = header.op;
    }

    /// The highest op with an entry (0 if only the root).
    pub fn head(&self) -> u64 {
        self.entries.last_key_value().map_or(0, |(op, _)| *op)
    }

    /// The entry at `op`.
    pub fn get(&self, op: u64) -> Option<&Entry> {
        self.entries.get(&op)
    }

    /// The entry at `op`, mutably.
    pub fn get_mut(&mut self, op: u64) -> Option<&mut Entry> {
        self.entries.get_mut(&op)
    }

    /// The header checksum at `op`, if any.
    pub fn checksum(&self, op: u64) -> Option<u128> {
        self.entries.get(&op).map(|entry| entry.header.checksum)
    }

    /// Whether `op` holds a trusted entry with its frame (or is the floor, whose state
    /// is already applied).
    pub fn ready(&self, op: u64) -> bool {
        op == self.floor
            || self
                .entries
                .get(&op)
                .is_some_and(|entry| entry.trusted && entry.frame.is_some())
    }

    /// Put an entry at its op, replacing whatever was there.
    pub fn put(&mut self, entry: Entry) {
        assert!(entry.header.op > self.floor, "the floor is never replaced");
        self.frame_bytes += frame_len(&entry);
        if let Some(old) = self.entries.insert(entry.header.op, entry) {
            self.frame_bytes -= frame_len(&old);
        }
    }

    /// Forget which entries above `op` are trusted: a new view's log is about to be
    /// installed, and trust earned in an older view proves nothing about it (the old
    /// primary's own uncommitted ops, say). The chain walk from the new view's headers
    /// restores trust to every entry that belongs.
    pub fn distrust_above(&mut self, op: u64) {
        for (_, entry) in self.entries.range_mut(op + 1..) {
            entry.trusted = false;
        }
    }

    /// Remove every entry above `op`.
    pub fn truncate_after(&mut self, op: u64) {
        assert!(op >= self.floor, "truncating below the floor");
        for entry in self.entries.split_off(&(op + 1)).values() {
            self.frame_bytes -= frame_len(entry);
        }
    }

    /// Remove the entry at `op` (a stale op found by the chain walk).
    pub fn remove(&mut self, op: u64) {
        assert!(op > self.floor, "the floor is never removed");
        if let Some(old) = self.entries.remove(&op) {
            self.frame_bytes -= frame_len(&old);
        }
    }

    /// Walk parent checksums down from every trusted entry above `floor`, trusting
    /// entries that match and removing ones that do not (they are stale: another
    /// prepare holds that op in the canonical chain). Returns the ops removed, so the
    /// caller can forget them durably too.
    ///
    /// Entries at or below `floor` (applied ops) must match; a mismatch there means
    /// this replica applied an op the canonical chain does not hold: `Err((op,
    /// canonical checksum, applied checksum))`, a divergence the caller treats as fatal.
    pub fn walk_chain(&mut self, floor: u64) -> Result<Vec<u64>, (u64, u128, u128)> {
        let mut removed = Vec::new();
        let ops: Vec<u64> = self.entries.range(floor + 1..).rev().map(|(op, _)| *op).collect();
        for op in ops {
            let Some(entry) = self.entries.get(&op) else { continue };
            if !entry.trusted {
                continue;
            }
            let parent = entry.header.parent;
            let below = op - 1;
            match self.entries.get_mut(&below) {
                Some(lower) if lower.header.checksum == parent => lower.trusted = true,
                Some(lower) if below <= floor => return Err((below, parent, lower.header.checksum)),
                Some(_) => {
                    self.remove(below);
                    removed.push(below);
                }
                None => {}
            }
        }
        Ok(removed)
    }

    /// Entries from `from` to `to` inclusive.
    pub fn range(&self, from: u64, to: u64) -> impl DoubleEndedIterator<Item = &Entry> {
        self.entries.range(from..=to).map(|(_, entry)| entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(op: u64, view: u64, parent: u128, trusted: bool) -> Entry {
        let mut header = Header::new(Command::Prepare);
        header.op = op;
        header.view = view;
        header.parent = parent;
        header.checksum = header.compute_checksum();
        Entry {
            header,
            frame: Some(Rc::from(vec![1u8])),
            trusted,
        }
    }

    #[test]
    fn the_walk_trusts_a_matching_chain_and_evicts_a_stale_op() {
        let mut journal = Journal::new(1, 0);
        let root = journal.checksum(0).expect("root");
        let one = entry(1, 0, root, false);
        let stale_two = entry(2, 0, one.header.checksum, false);
        let canonical_two = entry(2, 1, one.header.checksum, true);
        let three = entry(3, 1, canonical_two.header.checksum, true);
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
}
