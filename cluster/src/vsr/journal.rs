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
//!
//! Representation, for memory: an entry holding a frame keeps no decoded header, since
//! the frame starts with the header's 256 bytes (verified when the frame was opened);
//! [`Entry::header`] decodes them on access. Only an entry without a frame (a header
//! learned from a view change, the floor) and the root (whose frame is empty) keep a
//! decoded header. Entries live in an [`OpTable`]: fixed pages of `PAGE_OPS`
//! consecutive ops, a page allocated while it holds any entry. The ops held are mostly
//! contiguous, so this costs one slot per op instead of a tree node's share, and a few
//! far ops (a StartView's headers high above a lagging replica's floor) cost a page
//! each, never the gap. The in-memory store keeps its records in one too.

use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

use crate::wire::{Command, HEADER_BYTES, Header};

/// Consecutive ops per page of an [`OpTable`]. A journal's slot is 24 bytes, so its page
/// is 1.5 KiB: small enough that an op far from the others costs little, large enough
/// that the page's share of the table's tree is small next to its slots.
const PAGE_OPS: u64 = 64;

/// Where the header fields the journal reads on every walk lie in a frame: the layout
/// of `wire::header`, fixed for disks and peers (a test pins these to `Header::decode`).
/// Reading one field is a tenth of the cost of decoding the whole header.
const CHECKSUM_OFFSET: usize = 0;
const PARENT_OFFSET: usize = 32;
const OP_OFFSET: usize = 104;

/// The little-endian u128 at `offset` of a frame that holds a whole header.
fn u128_at(frame: &[u8], offset: usize) -> u128 {
    let mut raw = [0u8; 16];
    raw.copy_from_slice(&frame[offset..offset + 16]);
    u128::from_le_bytes(raw)
}

/// The little-endian u64 at `offset` of a frame that holds a whole header.
fn u64_at(frame: &[u8], offset: usize) -> u64 {
    let mut raw = [0u8; 8];
    raw.copy_from_slice(&frame[offset..offset + 8]);
    u64::from_le_bytes(raw)
}

/// The checksum a frame's header names (`None` for a frame too short to hold one),
/// read in place.
pub(crate) fn frame_checksum(frame: &[u8]) -> Option<u128> {
    (frame.len() >= HEADER_BYTES).then(|| u128_at(frame, CHECKSUM_OFFSET))
}

/// What an entry holds besides its trust.
#[derive(Clone)]
enum Held {
    /// A sealed prepare frame, which starts with the header's bytes.
    Frame(Rc<[u8]>),
    /// A header kept decoded. Boxed, as few entries have one: a slot stays 24 bytes.
    /// Also an applied op whose frame only the store holds (see
    /// [`Journal::release_frame`]): a decoded header is smaller than the header's
    /// bytes, and a third variant would grow every slot.
    Header(Box<Decoded>),
}

/// A header kept decoded, with the frame if one too short to hold the header is held
/// (the root's, which is empty), or the length of the frame the store holds in its
/// place (0: none; the frame bytes still count it, since the ring's bound is on what
/// it holds wherever it is).
#[derive(Clone)]
struct Decoded {
    header: Header,
    frame: Option<Rc<[u8]>>,
    stored_frame_len: u32,
}

/// One op's slot.
#[derive(Clone)]
pub struct Entry {
    held: Held,
    /// Part of the current view's chain (see the module docs).
    pub trusted: bool,
}

// A journal slot (an entry or nothing) stays within three words: the page size above
// assumes it, and it is most of the memory a journal spends beyond its frames.
const _: () = assert!(std::mem::size_of::<Option<Entry>>() <= 24);

impl Entry {
    /// An entry for the prepare `header` (checksum filled in), with the whole sealed
    /// prepare frame when this replica holds the body. A frame long enough to hold a
    /// header must be the one `header` was opened from: the header is read back from it.
    pub fn new(header: Header, frame: Option<Rc<[u8]>>, trusted: bool) -> Self {
        let held = match frame {
            Some(frame) if frame.len() >= HEADER_BYTES => {
                debug_assert_eq!(
                    Header::decode(&frame).ok(),
                    Some(header),
                    "a journaled frame starts with its entry's header"
                );
                Held::Frame(frame)
            }
            frame => Held::Header(Box::new(Decoded {
                header,
                frame,
                stored_frame_len: 0,
            })),
        };
        Self { held, trusted }
    }

    /// The prepare's header (checksum filled in).
    pub fn header(&self) -> Header {
        match &self.held {
            Held::Frame(frame) => Header::decode(frame).expect("a journaled frame was verified when it was opened"),
            Held::Header(decoded) => decoded.header,
        }
    }

    /// The header's checksum (what the op above names as its parent).
    pub fn checksum(&self) -> u128 {
        match &self.held {
            Held::Frame(frame) => u128_at(frame, CHECKSUM_OFFSET),
            Held::Header(decoded) => decoded.header.checksum,
        }
    }

    /// The header's parent: the checksum of the op below in its chain.
    pub fn parent(&self) -> u128 {
        match &self.held {
            Held::Frame(frame) => u128_at(frame, PARENT_OFFSET),
            Held::Header(decoded) => decoded.header.parent,
        }
    }

    /// The header's op.
    fn op(&self) -> u64 {
        match &self.held {
            Held::Frame(frame) => u64_at(frame, OP_OFFSET),
            Held::Header(decoded) => decoded.header.op,
        }
    }

    /// The whole sealed prepare frame, when this replica holds the body in memory
    /// (not when only its store does: see [`Entry::has_body`]).
    pub fn frame(&self) -> Option<&Rc<[u8]>> {
        match &self.held {
            Held::Frame(frame) => Some(frame),
            Held::Header(decoded) => decoded.frame.as_ref(),
        }
    }

    /// Whether this replica holds the body, in memory or in its store.
    pub fn has_body(&self) -> bool {
        self.body_in_store() || self.frame().is_some()
    }

    /// Whether the body is held in the store only.
    pub fn body_in_store(&self) -> bool {
        matches!(&self.held, Held::Header(decoded) if decoded.stored_frame_len > 0)
    }

    /// Bytes of the frame held (in memory or in the store).
    fn frame_len(&self) -> u64 {
        match &self.held {
            Held::Header(decoded) if decoded.stored_frame_len > 0 => u64::from(decoded.stored_frame_len),
            _ => self.frame().map_or(0, |frame| frame.len() as u64),
        }
    }

    /// Forget the frame, keeping the header.
    fn drop_frame(&mut self) {
        self.held = Held::Header(Box::new(Decoded {
            header: self.header(),
            frame: None,
            stored_frame_len: 0,
        }));
    }
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("header", &self.header())
            .field("frame", &self.frame())
            .field("body_in_store", &self.body_in_store())
            .field("trusted", &self.trusted)
            .finish()
    }
}

/// A map from op to `T` for ops that are mostly consecutive, as a journal's and a
/// store's are: fixed pages of `PAGE_OPS` slots, a page held while any of its slots is.
/// A run of ops costs one slot each; an op far from the others costs a page.
#[derive(Clone)]
pub struct OpTable<T> {
    /// Pages by number (`op / PAGE_OPS`).
    pages: BTreeMap<u64, Box<[Option<T>; PAGE_OPS as usize]>>,
    /// Values held.
    len: usize,
    /// The highest op held, kept as values come and go: finding it in the last page
    /// scans up to `PAGE_OPS` slots, and the head is asked for several times per
    /// replica per tick (each `Replica::caught_up`, each tick's timeouts), which cost
    /// about 6% of a simulated run's instructions.
    last: Option<u64>,
}

/// The page holding `op`.
fn page_of(op: u64) -> u64 {
    op / PAGE_OPS
}

/// The slot of `op` in its page.
fn slot_of(op: u64) -> usize {
    // Below PAGE_OPS, which fits any usize.
    (op % PAGE_OPS) as usize
}

impl<T> Default for OpTable<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> OpTable<T> {
    /// An empty table.
    pub fn new() -> Self {
        Self {
            pages: BTreeMap::new(),
            len: 0,
            last: None,
        }
    }

    /// Values held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no value is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The value at `op`.
    pub fn get(&self, op: u64) -> Option<&T> {
        self.pages.get(&page_of(op)).and_then(|page| page[slot_of(op)].as_ref())
    }

    /// The value at `op`, mutably.
    pub fn get_mut(&mut self, op: u64) -> Option<&mut T> {
        self.pages
            .get_mut(&page_of(op))
            .and_then(|page| page[slot_of(op)].as_mut())
    }

    /// Put `value` at `op`; returns what was there.
    pub fn insert(&mut self, op: u64, value: T) -> Option<T> {
        let page = self
            .pages
            .entry(page_of(op))
            .or_insert_with(|| Box::new(std::array::from_fn(|_| None)));
        let old = page[slot_of(op)].replace(value);
        if old.is_none() {
            self.len += 1;
            self.last = Some(self.last.map_or(op, |last| last.max(op)));
        }
        old
    }

    /// Take the value at `op`.
    pub fn remove(&mut self, op: u64) -> Option<T> {
        let page = self.pages.get_mut(&page_of(op))?;
        let old = page[slot_of(op)].take()?;
        self.len -= 1;
        self.release_if_empty(page_of(op));
        if self.last == Some(op) {
            self.last = self.find_last_op();
        }
        Some(old)
    }

    /// The highest op held.
    pub fn last_op(&self) -> Option<u64> {
        // Cheap here (the head is asked for all the time); `check` compares the cached
        // op with the pages on the rare operations.
        debug_assert_eq!(
            self.last.is_none(),
            self.pages.is_empty(),
            "an op is held iff a page is"
        );
        self.last
    }

    /// The highest op held, found in the pages.
    fn find_last_op(&self) -> Option<u64> {
        let (&page, slots) = self.pages.last_key_value()?;
        let slot = slots
            .iter()
            .rposition(Option::is_some)
            .expect("a held page holds a value");
        Some(page * PAGE_OPS + slot as u64)
    }

    /// Ops held from `from` to `to` inclusive, with their values, in op order.
    pub fn range(&self, from: u64, to: u64) -> impl DoubleEndedIterator<Item = (u64, &T)> {
        assert!(from <= to, "range from op {from} to op {to}");
        self.pages
            .range(page_of(from)..=page_of(to))
            .flat_map(move |(&page, slots)| {
                slots.iter().enumerate().filter_map(move |(slot, value)| {
                    let op = page * PAGE_OPS + slot as u64;
                    value
                        .as_ref()
                        .filter(|_| (from..=to).contains(&op))
                        .map(|value| (op, value))
                })
            })
    }

    /// Every op held with its value, in op order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, &T)> {
        self.range(0, u64::MAX)
    }

    /// Ops held above `op`, with their values mutably, in op order.
    pub fn iter_mut_above(&mut self, op: u64) -> impl Iterator<Item = (u64, &mut T)> {
        self.pages.range_mut(page_of(op)..).flat_map(move |(&page, slots)| {
            slots.iter_mut().enumerate().filter_map(move |(slot, value)| {
                let held = page * PAGE_OPS + slot as u64;
                value.as_mut().filter(|_| held > op).map(|value| (held, value))
            })
        })
    }

    /// Take every value below `op`, in op order.
    pub fn remove_below(&mut self, op: u64) -> Vec<T> {
        let kept = self.pages.split_off(&page_of(op));
        let mut removed: Vec<T> = std::mem::replace(&mut self.pages, kept)
            .into_values()
            .flat_map(|slots| slots.into_iter().flatten())
            .collect();
        if let Some(page) = self.pages.get_mut(&page_of(op)) {
            removed.extend(page[..slot_of(op)].iter_mut().filter_map(Option::take));
        }
        self.len -= removed.len();
        self.release_if_empty(page_of(op));
        self.last = self.find_last_op();
        removed
    }

    /// Take every value above `op`, in op order.
    pub fn remove_above(&mut self, op: u64) -> Vec<T> {
        let above = self.pages.split_off(&(page_of(op) + 1));
        let mut removed = Vec::new();
        if let Some(page) = self.pages.get_mut(&page_of(op)) {
            removed.extend(page[slot_of(op) + 1..].iter_mut().filter_map(Option::take));
        }
        removed.extend(above.into_values().flat_map(|slots| slots.into_iter().flatten()));
        self.len -= removed.len();
        self.release_if_empty(page_of(op));
        self.last = self.find_last_op();
        removed
    }

    /// Release page `page` if none of its slots holds a value.
    fn release_if_empty(&mut self, page: u64) {
        if self
            .pages
            .get(&page)
            .is_some_and(|slots| slots.iter().all(Option::is_none))
        {
            self.pages.remove(&page);
        }
    }

    /// The count agrees with the pages, and no page is held empty (for debug checks).
    fn check(&self) {
        let mut held = 0;
        for slots in self.pages.values() {
            let in_page = slots.iter().flatten().count();
            assert!(in_page > 0, "an empty page is released");
            held += in_page;
        }
        assert_eq!(held, self.len, "the table's count");
        assert_eq!(self.last, self.find_last_op(), "the cached highest op");
    }
}

impl<T: fmt::Debug> fmt::Debug for OpTable<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Ops a journal remembers as changed since its last chain walk, at most: past this
/// many, it forgets them and the next walk visits every entry instead, which then costs
/// no more than the marks it saves. A backup marks two per prepare it journals, so a
/// walk after every message keeps a handful; the bound only matters for a journal
/// changed many times between walks (a replica opening its log).
const CHAIN_MARKS_MAX: usize = 1_024;

/// Chain walks between two whole checks that the walks left nothing to do (debug builds
/// only): often enough that a change a walk missed is caught near where it happened,
/// rare enough that the check, which visits every entry, costs a small share of what
/// the walks save by visiting only marked ops.
const CHAIN_CHECK_INTERVAL_WALKS: u32 = 64;

/// Headers and frames by op.
#[derive(Clone, Debug)]
pub struct Journal {
    entries: OpTable<Entry>,
    /// The lowest op held: the root or the last checkpoint evicted down to.
    floor: u64,
    /// Bytes of every frame held.
    frame_bytes: u64,
    /// Where the next chain walk starts (see [`Journal::walk_chain`]): every op whose
    /// entry was put or given trust since the last walk, and the op above each put
    /// (whose parent check the new entry may now pass or fail). Unordered, repeats
    /// allowed; `None` once more than [`CHAIN_MARKS_MAX`] piled up: walk everything.
    chain_marks: Option<Vec<u64>>,
    /// The floor of the last chain walk: a walk drops the marks at or below its floor,
    /// so one from a lower floor (never seen: the commit point only rises) walks
    /// everything.
    chain_walked_floor: u64,
    /// Walks since the last whole check of the chain (debug builds).
    walks_since_check: u32,
}

/// Bytes of the frames of `entries`.
fn frame_bytes_of(entries: &[Entry]) -> u64 {
    entries.iter().map(Entry::frame_len).sum()
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
        let mut entries = OpTable::new();
        entries.insert(
            0,
            Entry::new(root_header(cluster, group), Some(Rc::from(Vec::new())), true),
        );
        Self {
            entries,
            floor: 0,
            frame_bytes: 0,
            chain_marks: Some(Vec::new()),
            chain_walked_floor: 0,
            walks_since_check: 0,
        }
    }

    /// Remember that the entry at `op` changed: the next chain walk starts there.
    fn mark_chain(&mut self, op: u64) {
        if let Some(marks) = &mut self.chain_marks {
            if marks.len() < CHAIN_MARKS_MAX {
                marks.push(op);
            } else {
                self.chain_marks = None;
            }
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
        self.frame_bytes -= frame_bytes_of(&self.entries.remove_below(op));
        let floor = self.entries.get_mut(op).expect("the new floor is held");
        let bytes = floor.frame_len();
        floor.drop_frame();
        floor.trusted = true;
        self.frame_bytes -= bytes;
        self.floor = op;
    }

    /// Replace everything at or below `header.op` with `header` as the floor: a
    /// checkpoint at that op was installed. Entries above it stay (their trust is
    /// re-derived by the chain walk from the new floor).
    pub fn reset_floor(&mut self, header: Header) {
        assert!(header.op > self.floor, "a checkpoint installs above the floor");
        let op = header.op;
        self.frame_bytes -= frame_bytes_of(&self.entries.remove_below(op + 1));
        self.entries.insert(op, Entry::new(header, None, true));
        self.floor = op;
        // The entry above now has a new parent to match.
        self.mark_chain(op + 1);
        self.debug_check();
    }

    /// The highest op with an entry (0 if only the root).
    pub fn head(&self) -> u64 {
        self.entries.last_op().unwrap_or(0)
    }

    /// The entry at `op`.
    pub fn get(&self, op: u64) -> Option<&Entry> {
        self.entries.get(op)
    }

    /// The entry at `op`, mutably. Its trust is all a caller can change, so the next
    /// chain walk starts there (trust given propagates down).
    pub fn get_mut(&mut self, op: u64) -> Option<&mut Entry> {
        self.mark_chain(op);
        self.entries.get_mut(op)
    }

    /// The header checksum at `op`, if any.
    pub fn checksum(&self, op: u64) -> Option<u128> {
        self.entries.get(op).map(Entry::checksum)
    }

    /// Whether `op` holds a trusted entry with its frame (or is the floor, whose state
    /// is already applied).
    pub fn ready(&self, op: u64) -> bool {
        op == self.floor
            || self
                .entries
                .get(op)
                .is_some_and(|entry| entry.trusted && entry.has_body())
    }

    /// Put an entry at its op, replacing whatever was there.
    pub fn put(&mut self, entry: Entry) {
        let op = entry.op();
        assert!(op > self.floor, "the floor is never replaced");
        self.frame_bytes += entry.frame_len();
        if let Some(old) = self.entries.insert(op, entry) {
            self.frame_bytes -= old.frame_len();
        }
        // The new entry's own parent check, and the one of the entry above it.
        self.mark_chain(op);
        self.mark_chain(op + 1);
    }

    /// Keep only the header of `op`'s frame in memory: its store holds the frame, and
    /// the replica reads it back when a peer asks for it ([`Entry::has_body`] stays
    /// true, and the frame bytes still count). For an applied op: the store keeps the
    /// record of every op above the journal's floor (the replica lets it forget only
    /// what the ring evicted). Nothing happens to an entry holding no frame of its own.
    pub fn release_frame(&mut self, op: u64) {
        assert!(op > self.floor, "the floor holds no frame");
        let Some(entry) = self.entries.get_mut(op) else { return };
        let Held::Frame(frame) = &entry.held else { return };
        let stored_frame_len = u32::try_from(frame.len()).expect("a frame is at most FRAME_BYTES_MAX");
        entry.held = Held::Header(Box::new(Decoded {
            header: entry.header(),
            frame: None,
            stored_frame_len,
        }));
    }

    /// Forget which entries above `op` are trusted: a new view's log is about to be
    /// installed, and trust earned in an older view proves nothing about it (the old
    /// primary's own uncommitted ops, say). The chain walk from the new view's headers
    /// restores trust to every entry that belongs.
    pub fn distrust_above(&mut self, op: u64) {
        for (_, entry) in self.entries.iter_mut_above(op) {
            entry.trusted = false;
        }
    }

    /// Remove every entry above `op`.
    pub fn truncate_after(&mut self, op: u64) {
        assert!(op >= self.floor, "truncating below the floor");
        self.frame_bytes -= frame_bytes_of(&self.entries.remove_above(op));
        self.debug_check();
    }

    /// Remove the entry at `op` (a stale op found by the chain walk).
    pub fn remove(&mut self, op: u64) {
        assert!(op > self.floor, "the floor is never removed");
        if let Some(old) = self.entries.remove(op) {
            self.frame_bytes -= old.frame_len();
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
    ///
    /// What a walk leaves behind: every trusted entry above `floor` whose op below is
    /// held names that entry as its parent, and that entry is trusted. Only a change
    /// to an entry can break it (a put, trust given), and each change marks its op,
    /// so a walk starts only at the marked ops and follows trust down from each until
    /// it reaches an entry already trusted: the work of a repaired prepare is its own
    /// link, not the whole log above the commit point (a replica refilling thousands
    /// of ops after a restart walked them all after each one). Debug builds check
    /// every [`CHAIN_CHECK_INTERVAL_WALKS`] walks that no entry anywhere is left to do.
    pub fn walk_chain(&mut self, floor: u64) -> Result<Vec<u64>, (u64, u128, u128)> {
        let mut removed = Vec::new();
        let head = self.head();
        let marks = self.chain_marks.replace(Vec::new());
        let walked_floor = std::mem::replace(&mut self.chain_walked_floor, floor);
        if head <= floor {
            return Ok(removed);
        }
        let starts: Vec<u64> = match marks {
            Some(mut marks) if floor >= walked_floor => {
                marks.retain(|&op| op > floor && op <= head);
                marks.sort_unstable_by(|a, b| b.cmp(a));
                marks.dedup();
                marks
            }
            Some(_) | None => self.entries.range(floor + 1, head).rev().map(|(op, _)| op).collect(),
        };
        // Descending, so stale ops are removed top down, as one walk over every entry
        // would; a start already covered by a walk from above finds nothing to do.
        for start in starts {
            let mut op = start;
            while let Some(entry) = self.entries.get(op)
                && entry.trusted
            {
                let parent = entry.parent();
                let below = op - 1;
                match self.entries.get_mut(below) {
                    // Already trusted: it was walked from (or marked, and is walked
                    // from next), so everything under it is in order.
                    Some(lower) if lower.checksum() == parent && lower.trusted => break,
                    Some(lower) if lower.checksum() == parent => {
                        lower.trusted = true;
                        if below <= floor {
                            break;
                        }
                        op = below;
                    }
                    Some(lower) if below <= floor => return Err((below, parent, lower.checksum())),
                    Some(_) => {
                        self.remove(below);
                        removed.push(below);
                        break;
                    }
                    None => break,
                }
            }
        }
        self.walks_since_check += 1;
        if cfg!(debug_assertions) && self.walks_since_check >= CHAIN_CHECK_INTERVAL_WALKS {
            self.walks_since_check = 0;
            self.check_chain_walked(floor);
        }
        Ok(removed)
    }

    /// Panics unless the chain walk has nothing left to do above `floor` (see
    /// [`Journal::walk_chain`]): a change that was not marked would show here.
    fn check_chain_walked(&self, floor: u64) {
        let head = self.head();
        if head <= floor {
            return;
        }
        for (op, entry) in self.entries.range(floor + 1, head) {
            if !entry.trusted {
                continue;
            }
            if let Some(lower) = self.entries.get(op - 1) {
                assert!(
                    lower.checksum() == entry.parent() && lower.trusted,
                    "after a chain walk, trusted op {op} still has an unwalked op below it: checksum {:#x}, parent {:#x}, trusted {}",
                    lower.checksum(),
                    entry.parent(),
                    lower.trusted
                );
            }
        }
    }

    /// Entries from `from` to `to` inclusive.
    pub fn range(&self, from: u64, to: u64) -> impl DoubleEndedIterator<Item = &Entry> {
        self.entries.range(from, to).map(|(_, entry)| entry)
    }

    /// The counts agree with the entries, and the floor is held (debug builds; on the
    /// rare operations only, as it walks every entry).
    fn debug_check(&self) {
        if cfg!(debug_assertions) {
            self.entries.check();
            let bytes: u64 = self.entries.iter().map(|(_, entry)| entry.frame_len()).sum();
            assert_eq!(bytes, self.frame_bytes, "the journal's frame bytes");
            assert!(self.entries.get(self.floor).is_some(), "the floor is held");
        }
    }
}

#[cfg(test)]
mod tests;
