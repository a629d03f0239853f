//! One file's stable bytes (what the platter holds), kept in fixed-size chunks instead
//! of one contiguous buffer.
//!
//! Why chunks: the files a simulated cluster writes are mostly append-only logs that
//! grow to megabytes. One `Vec` per file grew by reallocation, which copied the whole
//! file each time and, while it did, held the old and the new buffer at once; the
//! freed buffers of every size left the allocator's heap fragmented (a 100,000-tick
//! partition-plane run gave back 5-8 MB of resident memory when glibc was told to trim
//! freed memory eagerly, which is memory held and not used). Chunks of
//! [`CHUNK_BYTES`] grow a file without copying what it already holds, and a shorter
//! file gives whole chunks back. Only the last chunk is partial, sized like a small
//! file's buffer, so a superblock of a few KiB still costs a few KiB.
//!
//! What it models: nothing new. It is the same bytes as a `Vec<u8>` would hold, read
//! and written by offset; [`StableBytes::to_vec`] gives them whole.

/// Bytes per chunk (16 KiB, four pages): small enough that a growing log's last chunk
/// is allocated whole at once and wastes little (at most this much per file), large
/// enough that a megabyte file is under a hundred allocations. At 64 KiB the last
/// chunk grew by doubling instead, and the copies of each doubling were 1.3% of a
/// partition run's instructions (`--faults none --ticks 100000`).
pub const CHUNK_BYTES: usize = 16 * 1024;

/// A file's stable bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StableBytes {
    /// Every chunk but the last holds exactly [`CHUNK_BYTES`]; the last holds the rest
    /// (at least one byte: an empty file has no chunk).
    chunks: Vec<Vec<u8>>,
    len: usize,
}

impl StableBytes {
    /// Bytes held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Cut to `len`, or grow to it with zeros.
    pub fn resize(&mut self, len: usize) {
        if len < self.len {
            let chunks = len.div_ceil(CHUNK_BYTES);
            self.chunks.truncate(chunks);
            if let Some(last) = self.chunks.last_mut() {
                let keep = len - (chunks - 1) * CHUNK_BYTES;
                last.truncate(keep);
                // A chunk keeps its capacity when cut; give most of it back.
                if last.capacity() > 2 * chunk_capacity_for(keep) {
                    last.shrink_to(chunk_capacity_for(keep));
                }
            }
        } else if len > self.len {
            let mut at = self.len;
            while at < len {
                let index = at / CHUNK_BYTES;
                if index == self.chunks.len() {
                    self.chunks.push(Vec::new());
                }
                let chunk = &mut self.chunks[index];
                let want = (len - index * CHUNK_BYTES).min(CHUNK_BYTES);
                reserve_chunk(chunk, index, want);
                chunk.resize(want, 0);
                at = index * CHUNK_BYTES + want;
            }
        }
        self.len = len;
        debug_assert_eq!(self.chunks.len(), self.len.div_ceil(CHUNK_BYTES));
        debug_assert!(self.chunks.iter().rev().skip(1).all(|chunk| chunk.len() == CHUNK_BYTES));
    }

    /// Copy `bytes` to `offset` on, growing the file to hold them (zeros between the
    /// old end and `offset`): what `resize` to the end and then `write` do, without
    /// first zeroing the bytes about to be written (a page written back past the end
    /// of a growing log, on every sync).
    pub fn write_extending(&mut self, offset: usize, bytes: &[u8]) {
        if offset > self.len {
            self.resize(offset);
        }
        let inside = (self.len - offset).min(bytes.len());
        self.write(offset, &bytes[..inside]);
        let mut rest = &bytes[inside..];
        while !rest.is_empty() {
            let index = self.len / CHUNK_BYTES;
            if index == self.chunks.len() {
                self.chunks.push(Vec::new());
            }
            let chunk = &mut self.chunks[index];
            let n = rest.len().min(CHUNK_BYTES - chunk.len());
            reserve_chunk(chunk, index, chunk.len() + n);
            chunk.extend_from_slice(&rest[..n]);
            self.len += n;
            rest = &rest[n..];
        }
        debug_assert_eq!(self.chunks.len(), self.len.div_ceil(CHUNK_BYTES));
    }

    /// Copy `bytes` to `offset` on (the caller keeps `offset + bytes.len()` within
    /// [`StableBytes::len`]).
    pub fn write(&mut self, offset: usize, bytes: &[u8]) {
        assert!(offset + bytes.len() <= self.len, "a stable write within the file");
        let (mut at, mut rest) = (offset, bytes);
        while !rest.is_empty() {
            let within = at % CHUNK_BYTES;
            let n = rest.len().min(CHUNK_BYTES - within);
            self.chunks[at / CHUNK_BYTES][within..within + n].copy_from_slice(&rest[..n]);
            at += n;
            rest = &rest[n..];
        }
    }

    /// Fill `out` with the bytes from `offset` on (the caller keeps the range within
    /// [`StableBytes::len`]).
    pub fn read(&self, offset: usize, out: &mut [u8]) {
        assert!(offset + out.len() <= self.len, "a stable read within the file");
        let (mut at, mut filled) = (offset, 0);
        while filled < out.len() {
            let within = at % CHUNK_BYTES;
            let n = (out.len() - filled).min(CHUNK_BYTES - within);
            out[filled..filled + n].copy_from_slice(&self.chunks[at / CHUNK_BYTES][within..within + n]);
            at += n;
            filled += n;
        }
    }

    /// Flip bit `bit` of the byte at `offset` (latent corruption).
    pub fn flip_bit(&mut self, offset: usize, bit: u32) {
        self.chunks[offset / CHUNK_BYTES][offset % CHUNK_BYTES] ^= 1 << bit;
    }

    /// The bytes, in order, a chunk at a time.
    pub fn slices(&self) -> impl Iterator<Item = &[u8]> {
        self.chunks.iter().map(Vec::as_slice)
    }

    /// The bytes, whole.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.len);
        for slice in self.slices() {
            bytes.extend_from_slice(slice);
        }
        bytes
    }
}

/// Make room in `chunk` (chunk number `index`) for `want` bytes. A partial first chunk
/// (a small file: a frontier, a checkpoint) gets an eighth of slack, so it costs little
/// more than its bytes. Any later one belongs to a file already a chunk long, a
/// growing log, and is allocated whole: it will fill, and growing it step by step
/// copied it at every step.
fn reserve_chunk(chunk: &mut Vec<u8>, index: usize, want: usize) {
    if want > chunk.capacity() {
        let capacity = if index == 0 {
            chunk_capacity_for(want)
        } else {
            CHUNK_BYTES
        };
        chunk.reserve_exact(capacity - chunk.len());
    }
}

/// Capacity for a partial chunk of `len` bytes: an eighth of slack (at least a page),
/// never beyond a whole chunk.
fn chunk_capacity_for(len: usize) -> usize {
    (len + (len / 8).max(super::PAGE_BYTES)).min(CHUNK_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SimRng;

    /// Random resizes, writes and bit flips, against a `Vec<u8>` doing the same: the
    /// chunked bytes are always the same bytes.
    #[test]
    fn chunked_bytes_read_and_write_as_one_buffer_would() {
        let mut rng = SimRng::new(7);
        let mut chunked = StableBytes::default();
        let mut model: Vec<u8> = Vec::new();
        let size_max = 5 * CHUNK_BYTES + 123;
        for step in 0..2_000 {
            match rng.index(5) {
                0 => {
                    let len = rng.index(size_max);
                    chunked.resize(len);
                    model.resize(len, 0);
                }
                4 => {
                    // Anywhere up to a little past the end, growing the file.
                    let offset = rng.index(model.len() + 2 * super::super::PAGE_BYTES);
                    let n = rng.index(2 * CHUNK_BYTES + 1).min(size_max.saturating_sub(offset));
                    let bytes: Vec<u8> = (0..n).map(|_| rng.index(256) as u8).collect();
                    chunked.write_extending(offset, &bytes);
                    if model.len() < offset + n {
                        model.resize(offset + n, 0);
                    }
                    model[offset..offset + n].copy_from_slice(&bytes);
                }
                1 | 2 if !model.is_empty() => {
                    let offset = rng.index(model.len());
                    let n = rng.index((model.len() - offset).min(3 * CHUNK_BYTES) + 1);
                    let bytes: Vec<u8> = (0..n).map(|_| rng.index(256) as u8).collect();
                    chunked.write(offset, &bytes);
                    model[offset..offset + n].copy_from_slice(&bytes);
                }
                3 if !model.is_empty() => {
                    let offset = rng.index(model.len());
                    let bit = rng.index(8) as u32;
                    chunked.flip_bit(offset, bit);
                    model[offset] ^= 1 << bit;
                }
                _ => {}
            }
            assert_eq!(chunked.len(), model.len(), "length at step {step}");
            if step % 50 == 0 || model.len() < 3 * CHUNK_BYTES {
                assert_eq!(chunked.to_vec(), model, "bytes at step {step}");
            }
            if !model.is_empty() {
                let offset = rng.index(model.len());
                let n = rng.index(model.len() - offset + 1);
                let mut out = vec![0u8; n];
                chunked.read(offset, &mut out);
                assert_eq!(out, model[offset..offset + n], "read at step {step}");
            }
        }
        assert_eq!(chunked.to_vec(), model);
    }

    #[test]
    fn a_cut_file_gives_its_chunks_back_and_grows_again_with_zeros() {
        let mut bytes = StableBytes::default();
        bytes.resize(3 * CHUNK_BYTES + 10);
        bytes.write(3 * CHUNK_BYTES, &[9; 10]);
        assert_eq!(bytes.chunks.len(), 4);
        bytes.resize(CHUNK_BYTES + 1);
        assert_eq!(bytes.chunks.len(), 2, "whole chunks past the end are freed");
        assert!(bytes.chunks[1].capacity() < CHUNK_BYTES, "the cut last chunk shrank");
        bytes.resize(3 * CHUNK_BYTES + 10);
        let mut tail = [1u8; 10];
        bytes.read(3 * CHUNK_BYTES, &mut tail);
        assert_eq!(tail, [0; 10], "bytes cut and grown again are zeros");
        bytes.resize(0);
        assert!(bytes.is_empty() && bytes.chunks.is_empty());
    }

    #[test]
    fn a_small_file_costs_about_its_size() {
        let mut bytes = StableBytes::default();
        bytes.resize(4096);
        assert!(bytes.chunks[0].capacity() <= 2 * 4096, "{}", bytes.chunks[0].capacity());
    }
}
