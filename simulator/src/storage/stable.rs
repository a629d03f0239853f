//! One file's stable bytes (what the platter holds), kept as immutable pieces shared
//! between every simulated disk of the thread that holds the same bytes, plus a short
//! private tail.
//!
//! Why shared pieces: the replicas of a group write the same prepares, checkpoints and
//! frontiers, so a simulated cluster held every stable byte once per replica, and a
//! long run's memory grew three times as fast as what the cluster wrote. Pieces are
//! content-addressed: a piece's bytes are looked up by their XXH3-128 in a thread-local
//! [`Pool`] and, if another disk already holds a piece of the same bytes, that one is
//! shared. A piece is never changed in place: a write, a cut or a flipped bit that
//! touches one gives that file a new piece (copy on write), so power loss, torn writes,
//! corruption and misdirected writes still act on one replica's copy only.
//!
//! Why content-defined boundaries: replicas write the same records at different
//! offsets (a WAL's prefix drop copies its kept records to offset 0 at an op of that
//! replica's choosing), so fixed-size chunks of equal files fell out of step and shared
//! little (a 100,000-tick partition run: 56% of its pages unique, not 33%). A piece ends
//! where a rolling hash of the last 64 bytes ([`GEAR`]) hits a pattern, between
//! [`PIECE_BYTES_MIN`] and [`PIECE_BYTES_MAX`], so the same bytes are cut the same way
//! wherever they lie, and two files fall back into step within a piece of where their
//! contents agree again.
//!
//! The last bytes of a file, past its last boundary, are its *tail*: private and
//! mutable, as a log's end is written again at every sync. The pool holds no strong
//! reference: a piece no file holds is freed at once and leaves the pool (its drop
//! removes its entry).
//!
//! What it models: nothing new. It is the same bytes a `Vec<u8>` would hold, read and
//! written by offset; [`StableBytes::to_vec`] gives them whole. Sharing changes memory,
//! never a byte a reader sees, and nothing in it draws randomness.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::{Rc, Weak};

/// Fewest bytes in a piece, in bytes: the boundary hash looks at the last 64 bytes, so
/// below this a boundary would depend on where the piece started, and smaller pieces
/// cost more in bookkeeping (about 100 bytes each) than they could share.
pub const PIECE_BYTES_MIN: usize = 512;

/// Most bytes in a piece, in bytes: bytes that never hit the boundary pattern (a run of
/// zeros) are still cut here, so no piece grows without end and a one-bit change copies
/// at most this much.
pub const PIECE_BYTES_MAX: usize = 8 * 1024;

/// Bytes a file holds in its tail alone, uncut, until it grows past them: 16 KiB.
/// Superblocks (16 KiB) and publish frontiers (8 KiB) are rewritten in place again and
/// again and differ between replicas (each names its replica), so cutting and
/// interning them cost a quarter of a metadata-plane run's time and shared nothing;
/// logs and checkpoints, which replicas hold alike, grow past this. (At 64 KiB the
/// partition checkpoints stayed private too: a 100,000-tick light partition run
/// peaked 1 MB higher.)
const SMALL_FILE_BYTES_MAX: usize = 16 * 1024;

/// A boundary after a byte whose rolling hash has these bits all zero: one byte in
/// 1,024 past the minimum, so pieces average about 1.5 KiB, near one prepare record of
/// a partition run, and replicas whose files fell out of step share again within about
/// a record.
const BOUNDARY_MASK: u64 = (1 << 10) - 1;

/// The rolling hash's table: one fixed random word per byte value (SplitMix64 from 0),
/// the same in every build, so boundaries never depend on the process.
static GEAR: [u64; 256] = gear_table();

const fn gear_table() -> [u64; 256] {
    let mut table = [0u64; 256];
    let mut state = 0u64;
    let mut index = 0;
    while index < 256 {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        table[index] = z ^ (z >> 31);
        index += 1;
    }
    table
}

/// One step of the rolling hash: each byte shifts the older ones one bit further out,
/// so after 64 bytes the hash depends on those 64 alone.
fn roll(hash: u64, byte: u8) -> u64 {
    (hash << 1).wrapping_add(GEAR[byte as usize])
}

/// Immutable bytes, perhaps held by several files.
#[derive(Debug)]
struct PieceBytes {
    /// The bytes' XXH3-128: its key in the pool.
    key: u128,
    bytes: Box<[u8]>,
}

impl Drop for PieceBytes {
    /// The last file let go: the pool forgets the piece (unless it was replaced by
    /// another piece of the same key, which is alive).
    fn drop(&mut self) {
        let _ = POOL.try_with(|pool| {
            if let Ok(mut pool) = pool.try_borrow_mut()
                && pool.pieces.get(&self.key).is_some_and(|held| held.strong_count() == 0)
            {
                pool.pieces.remove(&self.key);
            }
        });
    }
}

type Piece = Rc<PieceBytes>;

/// The pieces some file of this thread holds, by content. Weak: the files own them.
#[derive(Default)]
struct Pool {
    pieces: BTreeMap<u128, Weak<PieceBytes>>,
}

thread_local! {
    /// Every simulated disk of a run lives on the run's thread, so a thread's pool is a
    /// run's (runs that follow on the same thread may share with it too: harmless).
    static POOL: RefCell<Pool> = RefCell::new(Pool::default());
}

/// A piece holding `bytes`: one already held anywhere in the thread if there is one.
fn intern(bytes: &[u8]) -> Piece {
    let key = cluster::wire::checksum(bytes);
    POOL.with(|pool| {
        let mut pool = pool.borrow_mut();
        if let Some(held) = pool.pieces.get(&key).and_then(Weak::upgrade)
            && *held.bytes == *bytes
        {
            return held;
        }
        let piece = Rc::new(PieceBytes {
            key,
            bytes: bytes.into(),
        });
        pool.pieces.insert(key, Rc::downgrade(&piece));
        piece
    })
}

/// Pieces the pool of this thread holds now.
#[cfg(test)]
fn pooled_pieces() -> usize {
    POOL.with(|pool| pool.borrow().pieces.len())
}

/// A file's stable bytes.
#[derive(Clone, Debug, Default)]
pub struct StableBytes {
    /// The sealed pieces, in order.
    pieces: Vec<Piece>,
    /// Where each piece ends (the offset past its last byte).
    ends: Vec<usize>,
    /// Bytes in the pieces.
    sealed: usize,
    /// The bytes past the last piece: no boundary found in them yet.
    tail: Vec<u8>,
    /// Tail bytes the boundary hash has covered, and the hash after them (a change
    /// below `scanned` starts the scan over).
    scanned: usize,
    hash: u64,
    /// Whether the file is cut into pieces: one that never grew past
    /// [`SMALL_FILE_BYTES_MAX`] keeps its bytes in its tail alone, uncut and unshared.
    pieced: bool,
}

impl PartialEq for StableBytes {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.to_vec() == other.to_vec()
    }
}

impl Eq for StableBytes {}

impl StableBytes {
    /// Bytes held.
    pub fn len(&self) -> usize {
        self.sealed + self.tail.len()
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Cut to `len`, or grow to it with zeros.
    pub fn resize(&mut self, len: usize) {
        if len == 0 {
            *self = Self::default();
            return;
        }
        if len >= self.sealed {
            let keep = len - self.sealed;
            if keep < self.scanned {
                self.restart_scan();
            }
            self.tail.resize(keep, 0);
            self.shrink_tail();
        } else {
            // The piece holding the new end becomes the tail, cut there.
            let index = self.ends.partition_point(|&end| end <= len);
            let start = self.piece_start(index);
            let mut tail = Vec::with_capacity(PIECE_BYTES_MAX.min(len - start).max(1));
            tail.extend_from_slice(&self.pieces[index].bytes[..len - start]);
            self.pieces.truncate(index);
            self.ends.truncate(index);
            self.sealed = start;
            self.tail = tail;
            self.restart_scan();
        }
        self.seal_ready();
        debug_assert_eq!(self.len(), len);
    }

    /// Copy `bytes` to `offset` on, growing the file to hold them (zeros between the
    /// old end and `offset`).
    pub fn write_extending(&mut self, offset: usize, bytes: &[u8]) {
        if offset > self.len() {
            self.resize(offset);
        }
        let inside = (self.len() - offset).min(bytes.len());
        self.write(offset, &bytes[..inside]);
        if inside < bytes.len() {
            self.tail.extend_from_slice(&bytes[inside..]);
            self.seal_ready();
        }
    }

    /// Copy `bytes` to `offset` on (the caller keeps `offset + bytes.len()` within
    /// [`StableBytes::len`]). Bytes equal to those held change nothing, so a sync that
    /// writes a log's last page again shares what it shared before.
    pub fn write(&mut self, offset: usize, bytes: &[u8]) {
        assert!(offset + bytes.len() <= self.len(), "a stable write within the file");
        let (mut at, mut rest) = (offset, bytes);
        while !rest.is_empty() && at < self.sealed {
            let index = self.ends.partition_point(|&end| end <= at);
            let start = self.piece_start(index);
            let n = rest.len().min(self.ends[index] - at);
            let held = &self.pieces[index].bytes[at - start..at - start + n];
            if held != &rest[..n] {
                let mut copy = self.pieces[index].bytes.to_vec();
                copy[at - start..at - start + n].copy_from_slice(&rest[..n]);
                self.pieces[index] = intern(&copy);
            }
            at += n;
            rest = &rest[n..];
        }
        if !rest.is_empty() {
            let within = at - self.sealed;
            let held = &mut self.tail[within..within + rest.len()];
            if held != rest {
                held.copy_from_slice(rest);
                if within < self.scanned {
                    self.restart_scan();
                }
                self.seal_ready();
            }
        }
    }

    /// Fill `out` with the bytes from `offset` on (the caller keeps the range within
    /// [`StableBytes::len`]).
    pub fn read(&self, offset: usize, out: &mut [u8]) {
        assert!(offset + out.len() <= self.len(), "a stable read within the file");
        let (mut at, mut filled) = (offset, 0);
        while filled < out.len() && at < self.sealed {
            let index = self.ends.partition_point(|&end| end <= at);
            let start = self.piece_start(index);
            let n = (out.len() - filled).min(self.ends[index] - at);
            out[filled..filled + n].copy_from_slice(&self.pieces[index].bytes[at - start..at - start + n]);
            at += n;
            filled += n;
        }
        if filled < out.len() {
            let within = at - self.sealed;
            let n = out.len() - filled;
            out[filled..].copy_from_slice(&self.tail[within..within + n]);
        }
    }

    /// Flip bit `bit` of the byte at `offset` (latent corruption): this file's copy only.
    pub fn flip_bit(&mut self, offset: usize, bit: u32) {
        let mut byte = [0u8];
        self.read(offset, &mut byte);
        byte[0] ^= 1 << bit;
        self.write(offset, &byte);
    }

    /// The bytes, in order, a piece at a time.
    pub fn slices(&self) -> impl Iterator<Item = &[u8]> {
        let tail = (!self.tail.is_empty()).then_some(self.tail.as_slice());
        self.pieces.iter().map(|piece| &*piece.bytes).chain(tail)
    }

    /// The bytes, whole.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.len());
        for slice in self.slices() {
            bytes.extend_from_slice(slice);
        }
        bytes
    }

    fn piece_start(&self, index: usize) -> usize {
        if index == 0 { 0 } else { self.ends[index - 1] }
    }

    fn restart_scan(&mut self) {
        self.scanned = 0;
        self.hash = 0;
    }

    /// Seal every piece the tail now ends: scan the tail bytes not yet hashed and cut
    /// at each boundary.
    fn seal_ready(&mut self) {
        if !self.pieced {
            if self.tail.len() <= SMALL_FILE_BYTES_MAX {
                return;
            }
            // Grown past a small file: cut into pieces from here on.
            self.pieced = true;
            self.restart_scan();
        }
        let mut start = 0;
        let mut at = start + self.scanned;
        let mut hash = self.hash;
        while at < self.tail.len() {
            // No boundary lies within a piece's first PIECE_BYTES_MIN bytes, and the
            // hash at the first place one may lie depends on the 64 bytes before it
            // alone: the bytes before those need no hashing.
            let unhashed_end = start + PIECE_BYTES_MIN - 64;
            if at < unhashed_end {
                at = unhashed_end.min(self.tail.len());
                hash = 0;
                continue;
            }
            hash = roll(hash, self.tail[at]);
            at += 1;
            let len = at - start;
            if (len >= PIECE_BYTES_MIN && hash & BOUNDARY_MASK == 0) || len == PIECE_BYTES_MAX {
                self.pieces.push(intern(&self.tail[start..at]));
                self.sealed += len;
                self.ends.push(self.sealed);
                start = at;
                hash = 0;
            }
        }
        if start > 0 {
            self.tail.drain(..start);
            self.shrink_tail();
        }
        self.scanned = at - start;
        self.hash = hash;
    }

    /// A tail that once held a large write gives most of its room back.
    fn shrink_tail(&mut self) {
        if self.pieced && self.tail.capacity() > 2 * PIECE_BYTES_MAX && self.tail.len() <= PIECE_BYTES_MAX {
            self.tail.shrink_to(PIECE_BYTES_MAX);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SimRng;

    fn random_bytes(rng: &mut SimRng, n: usize) -> Vec<u8> {
        (0..n).map(|_| rng.index(256) as u8).collect()
    }

    /// Random resizes, writes and bit flips, against a `Vec<u8>` doing the same: the
    /// pieces are always the same bytes.
    #[test]
    fn pieced_bytes_read_and_write_as_one_buffer_would() {
        let mut rng = SimRng::new(7);
        let mut pieced = StableBytes::default();
        let mut model: Vec<u8> = Vec::new();
        let size_max = 3 * SMALL_FILE_BYTES_MAX + 123;
        for step in 0..2_000 {
            match rng.index(6) {
                0 => {
                    let len = rng.index(size_max);
                    pieced.resize(len);
                    model.resize(len, 0);
                }
                4 | 5 => {
                    // Anywhere up to a little past the end, growing the file.
                    let offset = rng.index(model.len() + 2 * super::super::PAGE_BYTES);
                    let n = rng.index(2 * PIECE_BYTES_MAX + 1).min(size_max.saturating_sub(offset));
                    let bytes = random_bytes(&mut rng, n);
                    pieced.write_extending(offset, &bytes);
                    if model.len() < offset + n {
                        model.resize(offset + n, 0);
                    }
                    model[offset..offset + n].copy_from_slice(&bytes);
                }
                1 | 2 if !model.is_empty() => {
                    let offset = rng.index(model.len());
                    let n = rng.index((model.len() - offset).min(3 * PIECE_BYTES_MAX) + 1);
                    let bytes = random_bytes(&mut rng, n);
                    pieced.write(offset, &bytes);
                    model[offset..offset + n].copy_from_slice(&bytes);
                }
                3 if !model.is_empty() => {
                    let offset = rng.index(model.len());
                    let bit = rng.index(8) as u32;
                    pieced.flip_bit(offset, bit);
                    model[offset] ^= 1 << bit;
                }
                _ => {}
            }
            assert_eq!(pieced.len(), model.len(), "length at step {step}");
            assert!(
                pieced.tail.len() < PIECE_BYTES_MAX || (!pieced.pieced && pieced.tail.len() <= SMALL_FILE_BYTES_MAX),
                "the tail holds less than a piece, or a small file whole"
            );
            if step % 50 == 0 || model.len() < 3 * PIECE_BYTES_MAX {
                assert_eq!(pieced.to_vec(), model, "bytes at step {step}");
            }
            if !model.is_empty() {
                let offset = rng.index(model.len());
                let n = rng.index(model.len() - offset + 1);
                let mut out = vec![0u8; n];
                pieced.read(offset, &mut out);
                assert_eq!(out, model[offset..offset + n], "read at step {step}");
            }
        }
        assert_eq!(pieced.to_vec(), model);
    }

    /// Distinct allocations behind a set of files' pieces.
    fn distinct_pieces(files: &[&StableBytes]) -> usize {
        let mut seen: Vec<*const PieceBytes> = files
            .iter()
            .flat_map(|file| file.pieces.iter().map(Rc::as_ptr))
            .collect();
        seen.sort();
        seen.dedup();
        seen.len()
    }

    /// Three replicas' logs: the same records, one of them starting at another offset
    /// (as after a prefix drop at another op). Almost every piece is held once.
    #[test]
    fn equal_bytes_at_different_offsets_are_held_once() {
        let mut rng = SimRng::new(11);
        let records: Vec<Vec<u8>> = (0..200)
            .map(|_| {
                let n = 300 + rng.index(2_000);
                random_bytes(&mut rng, n)
            })
            .collect();
        let mut logs = [StableBytes::default(), StableBytes::default(), StableBytes::default()];
        for (replica, log) in logs.iter_mut().enumerate() {
            // Replica 2 dropped its first 7 records.
            let skip = if replica == 2 { 7 } else { 0 };
            for record in &records[skip..] {
                let end = log.len();
                log.write_extending(end, record);
            }
        }
        let one = logs[0].pieces.len();
        let all = distinct_pieces(&[&logs[0], &logs[1], &logs[2]]);
        assert_eq!(logs[0].to_vec(), logs[1].to_vec());
        assert!(all <= one + 4, "{all} distinct pieces for files of {one} pieces each");
        // A changed byte is that file's alone.
        let before = logs[1].to_vec();
        logs[0].flip_bit(1_000, 3);
        assert_eq!(logs[1].to_vec(), before, "a flipped bit stays in its file");
        assert_ne!(logs[0].to_vec(), before);
    }

    /// A page written again with the bytes it holds (a sync of a log's last page) keeps
    /// the pieces it shared.
    #[test]
    fn rewriting_the_same_bytes_keeps_sharing() {
        let mut rng = SimRng::new(3);
        let bytes = random_bytes(&mut rng, 200_000);
        let (mut a, mut b) = (StableBytes::default(), StableBytes::default());
        a.write_extending(0, &bytes);
        b.write_extending(0, &bytes);
        let shared = distinct_pieces(&[&a, &b]);
        b.write(4_096, &bytes[4_096..8_192]);
        assert_eq!(distinct_pieces(&[&a, &b]), shared);
        assert_eq!(shared, a.pieces.len());
        assert!(shared > 0, "a large file is cut into pieces");
    }

    /// The cuts are where hashing every byte from each piece's start puts them (the
    /// bytes the scan skips cannot move one).
    #[test]
    fn boundaries_are_where_hashing_every_byte_puts_them() {
        let mut rng = SimRng::new(8);
        let bytes = random_bytes(&mut rng, 300_000);
        let mut file = StableBytes::default();
        for chunk in bytes.chunks(777) {
            let end = file.len();
            file.write_extending(end, chunk);
        }
        let mut expected = Vec::new();
        let (mut start, mut hash) = (0, 0u64);
        for (at, &byte) in bytes.iter().enumerate() {
            hash = roll(hash, byte);
            let len = at + 1 - start;
            if (len >= PIECE_BYTES_MIN && hash & BOUNDARY_MASK == 0) || len == PIECE_BYTES_MAX {
                expected.push(at + 1);
                start = at + 1;
                hash = 0;
            }
        }
        assert_eq!(file.ends, expected);
        assert_eq!(file.to_vec(), bytes);
    }

    #[test]
    fn a_small_file_stays_whole_until_it_grows_past_the_bound() {
        let mut rng = SimRng::new(4);
        let mut file = StableBytes::default();
        file.write_extending(0, &random_bytes(&mut rng, SMALL_FILE_BYTES_MAX));
        assert!(
            file.pieces.is_empty() && !file.pieced,
            "a superblock-sized file is one buffer"
        );
        file.write(100, &[7; 10]);
        assert!(file.pieces.is_empty());
        file.write_extending(SMALL_FILE_BYTES_MAX, &[1]);
        assert!(file.pieced && !file.pieces.is_empty(), "past the bound it is cut");
        file.resize(0);
        assert!(!file.pieced, "an emptied file starts small again");
    }

    #[test]
    fn a_piece_no_file_holds_leaves_the_pool() {
        let mut rng = SimRng::new(5);
        let bytes = random_bytes(&mut rng, 100_000);
        let before = pooled_pieces();
        let mut file = StableBytes::default();
        file.write_extending(0, &bytes);
        assert!(pooled_pieces() > before);
        file.resize(0);
        assert_eq!(pooled_pieces(), before, "every piece was freed and forgotten");
        assert!(file.is_empty() && file.pieces.is_empty());
    }

    #[test]
    fn a_cut_file_grows_again_with_zeros() {
        let mut rng = SimRng::new(9);
        let mut bytes = StableBytes::default();
        bytes.write_extending(0, &random_bytes(&mut rng, 3 * PIECE_BYTES_MAX + 10));
        bytes.resize(PIECE_BYTES_MAX + 1);
        bytes.resize(3 * PIECE_BYTES_MAX + 10);
        let mut tail = [1u8; 10];
        bytes.read(3 * PIECE_BYTES_MAX, &mut tail);
        assert_eq!(tail, [0; 10], "bytes cut and grown again are zeros");
    }

    #[test]
    fn boundaries_depend_on_content_not_process() {
        // Pinned: a change of the table or the mask moves every boundary (and the
        // memory figures measured with them).
        assert_eq!(GEAR[0], 0xE220_A839_7B1D_CDAF);
    }
}
