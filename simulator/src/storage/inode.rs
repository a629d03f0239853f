//! One file's bytes twice: as the page cache holds them (buffered, what reads see) and
//! as the platter holds them (stable, what a power loss leaves).
//!
//! Dirtiness is tracked per page. The invariant every method keeps: outside the dirty
//! pages, the buffered bytes equal the stable bytes cut or zero-extended to the
//! buffered length, and whenever the two lengths differ the page holding the buffered
//! end is dirty. So flushing every dirty page makes stable equal buffered, and any
//! subset of them is a state the disk could really be in.
//!
//! Length: writing back page `p` extends the stable length to cover the page (up to the
//! buffered length), and a page that reaches the buffered end carries the exact length
//! (it cuts a stable file that a `truncate` shortened; a shrink to a page boundary is
//! carried by the empty page just past the new end). Bytes between the old stable end
//! and a flushed page read as zeros, as a hole or unwritten extent does after a crash.

use std::collections::BTreeSet;

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

/// One file (an inode): its bytes, which pages differ from the disk, who refers to it.
#[derive(Clone, Debug, Default)]
pub(super) struct Inode {
    /// What reads see.
    pub buffered: Vec<u8>,
    /// What survives a power loss.
    pub stable: Vec<u8>,
    /// Page indices whose buffered bytes (or the length they carry) may not be stable.
    pub dirty: BTreeSet<usize>,
    /// Directory entries (buffered plus stable) naming this inode.
    pub links: u32,
    /// Handles open on it in the current process.
    pub handles: u32,
    /// Writeback failures so far (Linux's per-mapping errseq counter); each handle
    /// remembers the value it last reported.
    pub writeback_errors: u64,
}

/// Grow a file's bytes to `len`, zero-filled, with at most an eighth of slack. The
/// files here are mostly append-only logs, and `Vec`'s doubling would let each of an
/// inode's two copies hold up to twice the file (a simulated cluster's disks then
/// cost several times their bytes); growing by an eighth keeps appends amortised O(1).
fn grow_to(bytes: &mut Vec<u8>, len: usize) {
    if len > bytes.capacity() {
        let slack = (len / 8).max(PAGE_BYTES);
        bytes.reserve_exact(len + slack - bytes.len());
    }
    bytes.resize(len, 0);
}

impl Inode {
    fn mark(&mut self, start: usize, end: usize) {
        if start < end {
            self.dirty.extend(start / PAGE_BYTES..=(end - 1) / PAGE_BYTES);
        }
    }

    /// The page that carries a pending length change: for a longer file the page
    /// holding its last byte, for a shorter one the page holding its new end.
    fn end_page(&self) -> Option<usize> {
        let (len, stable) = (self.buffered.len(), self.stable.len());
        match len.cmp(&stable) {
            std::cmp::Ordering::Equal => None,
            std::cmp::Ordering::Greater => Some((len - 1) / PAGE_BYTES),
            std::cmp::Ordering::Less => Some(len / PAGE_BYTES),
        }
    }

    fn mark_length(&mut self) {
        if let Some(page) = self.end_page() {
            self.dirty.insert(page);
        }
    }

    /// Cut or zero-extend the buffered bytes to `len` (the caller bounds `len` by
    /// [`FILE_BYTES_MAX`]).
    pub fn resize(&mut self, len: usize) {
        let old = self.buffered.len();
        if len > old {
            grow_to(&mut self.buffered, len);
            // The new bytes are zeros; where the disk still holds older, longer
            // contents (a shrink not yet written back) those pages now differ.
            self.mark(old, len.min(self.stable.len()));
        } else if len < old {
            self.buffered.truncate(len);
            self.dirty.retain(|&page| page * PAGE_BYTES <= len);
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
        if end > self.buffered.len() {
            self.resize(end);
        }
        self.buffered[offset..end].copy_from_slice(bytes);
        self.mark(offset, end);
    }

    /// Write one page back (see the module doc for what it does to the length).
    pub fn flush_page(&mut self, page: usize) {
        self.dirty.remove(&page);
        let start = page * PAGE_BYTES;
        let len = self.buffered.len();
        if start > len {
            return;
        }
        let end = (start + PAGE_BYTES).min(len);
        if self.stable.len() < end {
            grow_to(&mut self.stable, end);
        }
        self.stable[start..end].copy_from_slice(&self.buffered[start..end]);
        if len <= start + PAGE_BYTES {
            self.stable.truncate(len);
        }
    }

    /// fdatasync: every byte and the length become stable.
    pub fn sync(&mut self) {
        self.stable.clone_from(&self.buffered);
        self.dirty.clear();
    }

    /// A writeback failure: the dirty pages are dropped (the cache forgets them, so the
    /// buffered bytes revert to the stable ones) and an extension reverts to the stable
    /// length. A pending shrink stays pending (it is metadata, not a data page).
    pub fn drop_dirty(&mut self) {
        let keep = self.buffered.len().min(self.stable.len());
        self.buffered.clear();
        self.buffered.extend_from_slice(&self.stable[..keep]);
        self.dirty.clear();
        self.mark_length();
        self.writeback_errors += 1;
    }

    /// Power loss: only the stable bytes remain.
    pub fn lose_unstable(&mut self) {
        self.buffered.clone_from(&self.stable);
        self.dirty.clear();
    }

    /// Check the module invariant; `Err` describes the first page that breaks it.
    #[cfg(test)]
    pub fn check(&self) -> Result<(), String> {
        let len = self.buffered.len();
        if self.end_page().is_some_and(|page| !self.dirty.contains(&page)) {
            return Err(format!(
                "lengths differ (buffered {len}, stable {}) but the end page is clean",
                self.stable.len()
            ));
        }
        let mut view = self.stable.clone();
        view.resize(len, 0);
        for page in 0..len.div_ceil(PAGE_BYTES) {
            let range = page * PAGE_BYTES..((page + 1) * PAGE_BYTES).min(len);
            if !self.dirty.contains(&page) && self.buffered[range.clone()] != view[range] {
                return Err(format!("page {page} is clean but differs from the disk"));
            }
        }
        Ok(())
    }
}
