//! One file's bytes as the platter holds them (stable, what a power loss leaves) and as
//! the page cache holds them (buffered, what reads see), the latter kept as the pages
//! that may differ from the former.
//!
//! Dirtiness is tracked per page, and a dirty page holds its buffered bytes. The
//! invariant every method keeps: outside the dirty pages, the buffered bytes are the
//! stable bytes cut or zero-extended to the buffered length (so a clean page holds
//! nothing of its own), and whenever the two lengths differ the page holding the
//! buffered end is dirty. A dirty page's bytes past the buffered length mean nothing
//! (nothing reads or writes back past the length); whatever grows the length zeroes
//! the bytes it exposes, so an append does not first zero the rest of its page. So
//! flushing every dirty page makes stable equal buffered, and any subset of them is a
//! state the disk could really be in.
//!
//! Length: writing back page `p` extends the stable length to cover the page (up to the
//! buffered length), and a page that reaches the buffered end carries the exact length
//! (it cuts a stable file that a `truncate` shortened; a shrink to a page boundary is
//! carried by the empty page just past the new end). Bytes between the old stable end
//! and a flushed page read as zeros, as a hole or unwritten extent does after a crash.
//!
//! Memory: a file costs its stable bytes plus a page per dirty page, not two whole
//! copies; a sync copies only the dirty pages.

use std::cell::RefCell;
use std::collections::BTreeMap;

use super::stable::StableBytes;

/// Page size, bytes: Linux tracks dirty data and writes it back per page (4 KiB on
/// x86-64 and most arm64 kernels), so a page is the unit that background writeback
/// makes stable on its own, in any order relative to the others.
pub const PAGE_BYTES: usize = 4096;

/// Sector size, bytes: what a disk writes atomically (512-byte logical sectors), so a
/// torn write lands a whole number of sectors and never half of one.
pub const SECTOR_BYTES: usize = 512;

/// Largest file SimStorage holds, bytes (1 GiB). Far above any file the simulated
/// cluster writes, low enough that a garbage offset or length is a `FileTooLarge`
/// error (Linux's `EFBIG`) instead of an allocation that takes the simulator down.
pub const FILE_BYTES_MAX: u64 = 1 << 30;

/// Spare page buffers kept for reuse, per thread, at most this many (1 MiB): a dirty
/// page lives from a write to the next sync, so a run allocated and freed a 4 KiB
/// buffer for nearly every write, too large for the allocator's per-thread cache
/// (measured: about 15,000 a 30,000-tick partition run, with the allocator's
/// consolidation of freed chunks among the most expensive calls of the run). A few
/// hundred cover every file's dirty pages between syncs in the runs measured; beyond
/// that, buffers go back to the allocator.
const PAGE_POOL_PAGES_MAX: usize = 256;

thread_local! {
    /// Page buffers no dirty page holds now. What a buffer held never matters: every
    /// page taken from here is overwritten whole before it is read.
    static PAGE_POOL: RefCell<Vec<Box<[u8]>>> = const { RefCell::new(Vec::new()) };
}

/// A page buffer of [`PAGE_BYTES`], with arbitrary contents.
fn take_page() -> Box<[u8]> {
    PAGE_POOL
        .with(|pool| pool.borrow_mut().pop())
        // Tests fill a new buffer with a pattern, so a byte the inode fails to set reads
        // as 0xA5, not as the zero a fresh allocation happens to hold.
        .unwrap_or_else(|| vec![if cfg!(test) { 0xA5 } else { 0 }; PAGE_BYTES].into_boxed_slice())
}

/// Give back a page buffer no dirty page holds any more.
fn recycle_page(page: Box<[u8]>) {
    debug_assert_eq!(page.len(), PAGE_BYTES);
    PAGE_POOL.with(|pool| {
        let mut pool = pool.borrow_mut();
        if pool.len() < PAGE_POOL_PAGES_MAX {
            pool.push(page);
        }
    });
}

/// One file (an inode): its bytes, which pages differ from the disk, who refers to it.
#[derive(Clone, Debug, Default)]
pub(super) struct Inode {
    /// What survives a power loss.
    pub stable: StableBytes,
    /// The length reads see.
    len: usize,
    /// Pages whose buffered bytes (or the length they carry) may not be stable, by page
    /// index, each with its buffered bytes ([`PAGE_BYTES`] of them, zeros past `len`).
    dirty: BTreeMap<usize, Box<[u8]>>,
    /// Directory entries (buffered plus stable) naming this inode.
    pub links: u32,
    /// Handles open on it in the current process.
    pub handles: u32,
    /// Writeback failures so far (Linux's per-mapping errseq counter); each handle
    /// remembers the value it last reported.
    pub writeback_errors: u64,
}

impl Inode {
    /// The length reads see.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether any page may differ from the disk.
    pub fn is_dirty(&self) -> bool {
        !self.dirty.is_empty()
    }

    /// Dirty page indices, ascending.
    pub fn dirty_pages(&self) -> impl Iterator<Item = usize> + '_ {
        self.dirty.keys().copied()
    }

    /// Page `page`'s buffered bytes now, as a dirty page holds them: from the dirty page
    /// if it is one, else the stable bytes below the buffered length, zeros past them.
    fn page_now(&self, page: usize) -> Box<[u8]> {
        if let Some(bytes) = self.dirty.get(&page) {
            return bytes.clone();
        }
        self.clean_page_except(page, 0..0)
    }

    /// Clean page `page`'s buffered bytes now (the stable bytes below the buffered
    /// length, zeros past them up to it), except the bytes at `skip` (offsets within
    /// the page), which hold garbage: the caller overwrites them next. Bytes past the
    /// buffered length hold garbage too (see the module docs). An append that starts a
    /// page then costs no fill at all.
    fn clean_page_except(&self, page: usize, skip: std::ops::Range<usize>) -> Box<[u8]> {
        debug_assert!(!self.dirty.contains_key(&page) && skip.start <= skip.end && skip.end <= PAGE_BYTES);
        let from = page * PAGE_BYTES;
        let visible = self.len.saturating_sub(from).min(PAGE_BYTES);
        let held = self.len.min(self.stable.len()).saturating_sub(from).min(PAGE_BYTES);
        let mut bytes = take_page();
        for part in [0..skip.start, skip.end..PAGE_BYTES] {
            let part = part.start..part.end.min(visible);
            if part.is_empty() {
                continue;
            }
            let stable_end = held.clamp(part.start, part.end);
            if part.start < stable_end {
                self.stable.read(from + part.start, &mut bytes[part.start..stable_end]);
            }
            bytes[stable_end..part.end].fill(0);
        }
        bytes
    }

    /// Mark the pages holding bytes `start..end` dirty, each keeping its bytes now.
    fn mark(&mut self, start: usize, end: usize) {
        if start < end {
            for page in start / PAGE_BYTES..=(end - 1) / PAGE_BYTES {
                self.mark_page(page);
            }
        }
    }

    fn mark_page(&mut self, page: usize) {
        if !self.dirty.contains_key(&page) {
            let bytes = self.page_now(page);
            self.dirty.insert(page, bytes);
        }
    }

    /// The page that carries a pending length change: for a longer file the page
    /// holding its last byte, for a shorter one the page holding its new end.
    fn end_page(&self) -> Option<usize> {
        let (len, stable) = (self.len, self.stable.len());
        match len.cmp(&stable) {
            std::cmp::Ordering::Equal => None,
            std::cmp::Ordering::Greater => Some((len - 1) / PAGE_BYTES),
            std::cmp::Ordering::Less => Some(len / PAGE_BYTES),
        }
    }

    fn mark_length(&mut self) {
        if let Some(page) = self.end_page() {
            self.mark_page(page);
        }
    }

    /// Cut or zero-extend the buffered bytes to `len` (the caller bounds `len` by
    /// [`FILE_BYTES_MAX`]).
    pub fn resize(&mut self, len: usize) {
        let old = self.len;
        if len > old {
            self.grow(len, len);
            return;
        }
        if len < old {
            self.len = len;
            // The cut bytes of the page holding the new end stay, meaning nothing: a
            // growth zeroes them.
            for page in self.dirty.split_off(&(len / PAGE_BYTES + 1)).into_values() {
                recycle_page(page);
            }
        }
        self.mark_length();
    }

    /// Grow the buffered bytes to `len`, the new ones zeros up to `zeros_to` (a write
    /// covers the rest at once: zeroing them first would be wasted).
    fn grow(&mut self, len: usize, zeros_to: usize) {
        let old = self.len;
        debug_assert!(len > old && zeros_to <= len);
        // Where the disk still holds older, longer contents (a shrink not yet written
        // back) the pages now differ: they become dirty, keeping their bytes below the
        // old end; the new bytes are zeroed below with every other dirty page's.
        self.mark(old, len.min(self.stable.len()));
        self.len = len;
        if old < zeros_to {
            let pages = old / PAGE_BYTES..=(zeros_to - 1) / PAGE_BYTES;
            for (&page, bytes) in self.dirty.range_mut(pages) {
                let start = page * PAGE_BYTES;
                bytes[old.max(start) - start..zeros_to.min(start + PAGE_BYTES) - start].fill(0);
            }
        }
        self.mark_length();
    }

    /// Write `bytes` at `offset` into the page cache (the caller bounds the end by
    /// [`FILE_BYTES_MAX`]). An empty write changes nothing, as `pwrite` of 0 bytes.
    pub fn write(&mut self, offset: usize, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let end = offset + bytes.len();
        // Mark the written pages dirty first, each keeping its bytes as they are before
        // the write (what `resize` would keep too: zeros past the old end), but for the
        // part the write covers, which is overwritten below.
        for page in offset / PAGE_BYTES..=(end - 1) / PAGE_BYTES {
            if !self.dirty.contains_key(&page) {
                let start = page * PAGE_BYTES;
                let skip = offset.max(start) - start..end.min(start + PAGE_BYTES) - start;
                let bytes = self.clean_page_except(page, skip);
                self.dirty.insert(page, bytes);
            }
        }
        if end > self.len {
            // Zeros only in a hole before the write: the write covers the rest.
            self.grow(end, offset.max(self.len));
        }
        let (mut at, mut rest) = (offset, bytes);
        while !rest.is_empty() {
            let within = at % PAGE_BYTES;
            let n = rest.len().min(PAGE_BYTES - within);
            let page = self
                .dirty
                .get_mut(&(at / PAGE_BYTES))
                .expect("a written page was marked dirty");
            page[within..within + n].copy_from_slice(&rest[..n]);
            at += n;
            rest = &rest[n..];
        }
    }

    /// Read buffered bytes from `offset` into `buf`; returns how many (none past the end).
    pub fn read(&self, offset: usize, buf: &mut [u8]) -> usize {
        let start = offset.min(self.len);
        let n = buf.len().min(self.len - start);
        let (mut at, mut filled) = (start, 0);
        while filled < n {
            let within = at % PAGE_BYTES;
            let take = (n - filled).min(PAGE_BYTES - within);
            self.copy_page(at / PAGE_BYTES, within, &mut buf[filled..filled + take]);
            at += take;
            filled += take;
        }
        n
    }

    /// Fill `out` with page `page`'s buffered bytes from `within` on (zeros past the
    /// buffered end): from the dirty page, else the stable bytes zero-extended.
    fn copy_page(&self, page: usize, within: usize, out: &mut [u8]) {
        if let Some(bytes) = self.dirty.get(&page) {
            out.copy_from_slice(&bytes[within..within + out.len()]);
            return;
        }
        let from = page * PAGE_BYTES + within;
        let held = self.len.min(self.stable.len()).saturating_sub(from).min(out.len());
        if held > 0 {
            self.stable.read(from, &mut out[..held]);
        }
        out[held..].fill(0);
    }

    /// The buffered bytes, whole (what reads see).
    pub fn buffered(&self) -> Vec<u8> {
        let mut bytes = vec![0u8; self.len];
        self.read(0, &mut bytes);
        bytes
    }

    /// Feed the buffered bytes, in order, to `sink`, a page at a time (without a copy
    /// of the whole file).
    pub fn for_each_buffered(&self, mut sink: impl FnMut(&[u8])) {
        let mut page_bytes = [0u8; PAGE_BYTES];
        for page in 0..self.len.div_ceil(PAGE_BYTES) {
            let n = (self.len - page * PAGE_BYTES).min(PAGE_BYTES);
            self.copy_page(page, 0, &mut page_bytes[..n]);
            sink(&page_bytes[..n]);
        }
    }

    /// Write one page back (see the module doc for what it does to the length).
    pub fn flush_page(&mut self, page: usize) {
        let bytes = self.dirty.remove(&page);
        let start = page * PAGE_BYTES;
        let len = self.len;
        if start > len {
            if let Some(bytes) = bytes {
                recycle_page(bytes);
            }
            return;
        }
        let end = (start + PAGE_BYTES).min(len);
        if let Some(bytes) = bytes {
            self.stable.write_extending(start, &bytes[..end - start]);
            recycle_page(bytes);
        } else if self.stable.len() < end {
            // A clean page's buffered bytes are the stable ones, zero-extended.
            self.stable.resize(end);
        }
        if len <= start + PAGE_BYTES && len < self.stable.len() {
            self.stable.resize(len);
        }
    }

    /// A writeback of dirty page `page` torn by a power cut: its first `sectors` sectors
    /// reach the platter (the stable bytes grow to cover them, zeros before them if the
    /// stable copy was shorter), the rest do not. Called just before the power is lost,
    /// which drops what stayed dirty.
    pub fn tear_page(&mut self, page: usize, sectors: usize) {
        let Some(bytes) = self.dirty.get(&page) else {
            return;
        };
        let start = page * PAGE_BYTES;
        let end = (start + sectors * SECTOR_BYTES).min(self.len);
        if end <= start {
            return;
        }
        self.stable.write_extending(start, &bytes[..end - start]);
    }

    /// fdatasync: every byte and the length become stable.
    pub fn sync(&mut self) {
        let len = self.len;
        // Ascending, so a growing file's pages are appended, never zeroed first.
        for (page, bytes) in std::mem::take(&mut self.dirty) {
            let start = page * PAGE_BYTES;
            if start < len {
                let end = (start + PAGE_BYTES).min(len);
                self.stable.write_extending(start, &bytes[..end - start]);
            }
            recycle_page(bytes);
        }
        // The exact length: zeros past the last page written if the file grew beyond
        // it, cut if it shrank.
        self.stable.resize(len);
    }

    /// A writeback failure: the dirty pages are dropped (the cache forgets them, so the
    /// buffered bytes revert to the stable ones) and an extension reverts to the stable
    /// length. A pending shrink stays pending (it is metadata, not a data page).
    pub fn drop_dirty(&mut self) {
        self.len = self.len.min(self.stable.len());
        self.recycle_dirty();
        self.mark_length();
        self.writeback_errors += 1;
    }

    /// Forget every dirty page, giving its buffer back.
    fn recycle_dirty(&mut self) {
        for page in std::mem::take(&mut self.dirty).into_values() {
            recycle_page(page);
        }
    }

    /// Power loss: only the stable bytes remain.
    pub fn lose_unstable(&mut self) {
        self.len = self.stable.len();
        self.recycle_dirty();
    }

    /// Check the module invariant; `Err` describes the first page that breaks it. (That
    /// a clean page's bytes are the stable ones holds by construction: it keeps none.)
    #[cfg(test)]
    pub fn check(&self) -> Result<(), String> {
        let len = self.len;
        if self.end_page().is_some_and(|page| !self.dirty.contains_key(&page)) {
            return Err(format!(
                "lengths differ (buffered {len}, stable {}) but the end page is clean",
                self.stable.len()
            ));
        }
        for (&page, bytes) in &self.dirty {
            let start = page * PAGE_BYTES;
            if start > len {
                return Err(format!("dirty page {page} lies past the end ({len} bytes)"));
            }
            if bytes.len() != PAGE_BYTES {
                return Err(format!("dirty page {page} holds {} bytes", bytes.len()));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::rng::SimRng;

    /// The file as two whole copies (the model this inode keeps in less memory): what
    /// each call must do, spelled out directly.
    #[derive(Default)]
    struct TwoCopies {
        buffered: Vec<u8>,
        stable: Vec<u8>,
        dirty: BTreeSet<usize>,
    }

    impl TwoCopies {
        fn mark(&mut self, start: usize, end: usize) {
            if start < end {
                self.dirty.extend(start / PAGE_BYTES..=(end - 1) / PAGE_BYTES);
            }
        }

        fn mark_length(&mut self) {
            let (len, stable) = (self.buffered.len(), self.stable.len());
            match len.cmp(&stable) {
                std::cmp::Ordering::Equal => {}
                std::cmp::Ordering::Greater => {
                    self.dirty.insert((len - 1) / PAGE_BYTES);
                }
                std::cmp::Ordering::Less => {
                    self.dirty.insert(len / PAGE_BYTES);
                }
            }
        }

        fn resize(&mut self, len: usize) {
            let old = self.buffered.len();
            if len > old {
                self.buffered.resize(len, 0);
                self.mark(old, len.min(self.stable.len()));
            } else if len < old {
                self.buffered.truncate(len);
                self.dirty.retain(|&page| page * PAGE_BYTES <= len);
            }
            self.mark_length();
        }

        fn write(&mut self, offset: usize, bytes: &[u8]) {
            if bytes.is_empty() {
                return;
            }
            let end = offset + bytes.len();
            if end > self.buffered.len() {
                self.resize(end);
            }
            self.buffered[offset..end].copy_from_slice(bytes);
            self.mark(offset, end);
        }

        fn flush_page(&mut self, page: usize) {
            self.dirty.remove(&page);
            let start = page * PAGE_BYTES;
            let len = self.buffered.len();
            if start > len {
                return;
            }
            let end = (start + PAGE_BYTES).min(len);
            if self.stable.len() < end {
                self.stable.resize(end, 0);
            }
            self.stable[start..end].copy_from_slice(&self.buffered[start..end]);
            if len <= start + PAGE_BYTES {
                self.stable.truncate(len);
            }
        }

        fn sync(&mut self) {
            self.stable.clone_from(&self.buffered);
            self.dirty.clear();
        }

        fn drop_dirty(&mut self) {
            let keep = self.buffered.len().min(self.stable.len());
            self.buffered = self.stable[..keep].to_vec();
            self.dirty.clear();
            self.mark_length();
        }

        fn lose_unstable(&mut self) {
            self.buffered.clone_from(&self.stable);
            self.dirty.clear();
        }
    }

    /// Random calls over a few pages (lengths off page boundaries, shrinks and
    /// extensions, partial writeback) leave the inode reading, holding on disk and
    /// calling dirty exactly what two whole copies would.
    #[test]
    fn the_paged_inode_behaves_as_two_whole_copies() {
        let mut rng = SimRng::new(7);
        for _ in 0..100 {
            let (mut inode, mut model) = (Inode::default(), TwoCopies::default());
            for step in 0..200u32 {
                let span = 5 * PAGE_BYTES;
                match rng.index(10) {
                    0..=3 => {
                        let offset = rng.index(span);
                        let bytes: Vec<u8> = (0..rng.index(2 * PAGE_BYTES))
                            .map(|i| (i as u32 + step) as u8 | 1)
                            .collect();
                        inode.write(offset, &bytes);
                        model.write(offset, &bytes);
                    }
                    4 => {
                        let len = rng.index(span);
                        inode.resize(len);
                        model.resize(len);
                    }
                    5 | 6 => {
                        let pages: Vec<usize> = model.dirty.iter().copied().collect();
                        if !pages.is_empty() {
                            let page = pages[rng.index(pages.len())];
                            inode.flush_page(page);
                            model.flush_page(page);
                        }
                    }
                    7 => {
                        inode.sync();
                        model.sync();
                    }
                    8 => {
                        inode.drop_dirty();
                        model.drop_dirty();
                    }
                    _ => {
                        inode.lose_unstable();
                        model.lose_unstable();
                    }
                }
                inode.check().expect("the invariant");
                assert_eq!(inode.buffered(), model.buffered, "buffered bytes at step {step}");
                assert_eq!(inode.stable.to_vec(), model.stable, "stable bytes at step {step}");
                assert_eq!(
                    inode.dirty_pages().collect::<BTreeSet<_>>(),
                    model.dirty,
                    "dirty pages at step {step}"
                );
                let offset = rng.index(span);
                let mut read = vec![0xAA; rng.index(2 * PAGE_BYTES)];
                let n = inode.read(offset, &mut read);
                let expected = model
                    .buffered
                    .get(offset..)
                    .map_or(&[][..], |rest| &rest[..rest.len().min(read.len())]);
                assert_eq!(&read[..n], expected, "a read at {offset} at step {step}");
                let mut streamed = Vec::new();
                inode.for_each_buffered(|bytes| streamed.extend_from_slice(bytes));
                assert_eq!(streamed, model.buffered);
            }
        }
    }
}
