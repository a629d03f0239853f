//! The checksummed record: the unit every log-shaped file on disk is made of.
//!
//! Layout (little-endian):
//!
//! ```text
//!  0 checksum  u128  XXH3-128 of bytes 16..40+len (the rest of the header and the payload)
//! 16 magic     u32   which kind of file this record belongs to (a WAL record copied into
//!                    a segment by a misdirected write is caught here, not applied)
//! 20 kind      u8    file-specific record type
//! 21 reserved  [u8; 3] zero
//! 24 len       u32   payload bytes
//! 28 reserved  u32   zero
//! 32 key       u64   file-specific: an op number, a sequence number, an offset
//! 40 payload   len bytes
//! ```
//!
//! A record is all-or-nothing: a torn write, a flipped bit or a stale sector fails the
//! checksum. Decoding never panics and never allocates from a length it has not
//! bounded; it tells a clean end (zeros, nothing left) from damage, and leaves to the
//! caller whether damage is a torn tail (nothing valid after it) or corruption in the
//! middle (valid records after it, so acknowledged data may be at stake).

use std::fmt;
use std::io;

use crate::seam::DurableFile;
pub use crate::wire::Checksums;

/// Bytes before a record's payload.
pub const RECORD_HEADER_BYTES: usize = 40;

/// Largest payload a record may carry, in bytes. Above the largest prepare frame or
/// segment batch the cluster writes (a 1 MiB message batch plus headers), so any larger
/// length read from disk is damage, and recovery never allocates from it.
pub const RECORD_PAYLOAD_BYTES_MAX: usize = 4 * 1024 * 1024;

/// XXH3-128, the checksum every on-disk structure uses (the frames' own, see
/// [`crate::wire::checksum`]).
pub fn checksum(bytes: &[u8]) -> u128 {
    crate::wire::checksum(bytes)
}

/// One decoded record, borrowing its payload from the bytes it was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// File-specific record type.
    pub kind: u8,
    /// File-specific key (op, sequence, offset).
    pub key: u64,
    /// The payload.
    pub payload: &'a [u8],
}

impl Record<'_> {
    /// Bytes the record occupies on disk, header included.
    pub fn encoded_bytes(&self) -> usize {
        RECORD_HEADER_BYTES + self.payload.len()
    }
}

/// Why bytes at some position are not a valid record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecordError {
    /// Nothing but zeros (or nothing at all) from here: the clean end of a log.
    End,
    /// Fewer bytes than the header or the declared payload needs: a torn tail.
    Truncated {
        /// Bytes the record needs.
        needed: usize,
        /// Bytes available.
        available: usize,
    },
    /// The magic names another kind of file.
    BadMagic {
        /// What this file's records carry.
        expected: u32,
        /// What was found.
        found: u32,
    },
    /// A length above [`RECORD_PAYLOAD_BYTES_MAX`].
    TooLong {
        /// The declared payload length.
        len: u64,
    },
    /// Reserved bytes are not zero.
    ReservedNotZero,
    /// The checksum does not match the bytes.
    ChecksumMismatch,
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::End => write!(f, "end of log (zeros or no bytes)"),
            Self::Truncated { needed, available } => {
                write!(f, "record truncated: needs {needed} bytes, {available} available")
            }
            Self::BadMagic { expected, found } => {
                write!(f, "record magic {found:#010x} is not this file's {expected:#010x}")
            }
            Self::TooLong { len } => {
                write!(
                    f,
                    "record length {len} exceeds RECORD_PAYLOAD_BYTES_MAX {RECORD_PAYLOAD_BYTES_MAX}"
                )
            }
            Self::ReservedNotZero => write!(f, "record reserved bytes are not zero"),
            Self::ChecksumMismatch => write!(f, "record checksum mismatch"),
        }
    }
}

impl std::error::Error for RecordError {}

/// Append the encoding of one record to `out`.
///
/// Panics if `payload` exceeds [`RECORD_PAYLOAD_BYTES_MAX`]: writers bound what they
/// write, so a larger payload is a bug in the caller, not input.
pub fn encode_into(out: &mut Vec<u8>, magic: u32, kind: u8, key: u64, payload: &[u8]) {
    encode_padded_into(out, magic, kind, key, payload, payload.len());
}

/// Append the encoding of one record whose payload is `payload` followed by zeros up
/// to `payload_len` bytes (a WAL slot reserving room for a larger record later), with
/// no copy of the padded payload of its own.
///
/// Panics if `payload_len` is below `payload.len()` or exceeds
/// [`RECORD_PAYLOAD_BYTES_MAX`] (a bug in the caller, as for [`encode_into`]).
pub fn encode_padded_into(out: &mut Vec<u8>, magic: u32, kind: u8, key: u64, payload: &[u8], payload_len: usize) {
    assert!(payload_len >= payload.len(), "a record padded to less than its payload");
    assert!(
        payload_len <= RECORD_PAYLOAD_BYTES_MAX,
        "record payload of {payload_len} bytes exceeds RECORD_PAYLOAD_BYTES_MAX"
    );
    // Sized once: growing field by field reallocated several times per record.
    out.reserve(RECORD_HEADER_BYTES + payload_len);
    let start = out.len();
    out.extend_from_slice(&[0; 16]);
    out.extend_from_slice(&magic.to_le_bytes());
    out.push(kind);
    out.extend_from_slice(&[0; 3]);
    let len = u32::try_from(payload_len).expect("bounded by RECORD_PAYLOAD_BYTES_MAX");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&key.to_le_bytes());
    out.extend_from_slice(payload);
    out.resize(start + RECORD_HEADER_BYTES + payload_len, 0);
    let sum = checksum(&out[start + 16..]);
    out[start..start + 16].copy_from_slice(&sum.to_le_bytes());
}

/// The encoding of one record.
pub fn encode(magic: u32, kind: u8, key: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(RECORD_HEADER_BYTES + payload.len());
    encode_into(&mut out, magic, kind, key, payload);
    out
}

pub(crate) fn le_u32(bytes: &[u8], at: usize) -> u32 {
    let mut raw = [0; 4];
    raw.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(raw)
}

pub(crate) fn le_u64(bytes: &[u8], at: usize) -> u64 {
    let mut raw = [0; 8];
    raw.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(raw)
}

pub(crate) fn le_u128(bytes: &[u8], at: usize) -> u128 {
    let mut raw = [0; 16];
    raw.copy_from_slice(&bytes[at..at + 16]);
    u128::from_le_bytes(raw)
}

/// Decode the record at the start of `bytes`, which must carry `magic`.
pub fn decode(magic: u32, bytes: &[u8]) -> Result<Record<'_>, RecordError> {
    decode_with(magic, bytes, Checksums::Verify)
}

/// [`decode`], verifying the checksum or not.
pub fn decode_with(magic: u32, bytes: &[u8], checksums: Checksums) -> Result<Record<'_>, RecordError> {
    if bytes.iter().take(RECORD_HEADER_BYTES).all(|&byte| byte == 0) {
        // A zeroed header (or no bytes) is where a log was never written. A record
        // torn so that only zeros reached the disk looks the same, and is, to the
        // reader, equally "not there".
        return Err(RecordError::End);
    }
    if bytes.len() < RECORD_HEADER_BYTES {
        return Err(RecordError::Truncated {
            needed: RECORD_HEADER_BYTES,
            available: bytes.len(),
        });
    }
    let found = le_u32(bytes, 16);
    if found != magic {
        return Err(RecordError::BadMagic { expected: magic, found });
    }
    let len = u64::from(le_u32(bytes, 24));
    if len > RECORD_PAYLOAD_BYTES_MAX as u64 {
        return Err(RecordError::TooLong { len });
    }
    let len = usize::try_from(len).map_err(|_| RecordError::TooLong { len })?;
    let needed = RECORD_HEADER_BYTES + len;
    if bytes.len() < needed {
        return Err(RecordError::Truncated {
            needed,
            available: bytes.len(),
        });
    }
    if bytes[21..24] != [0; 3] || bytes[28..32] != [0; 4] {
        return Err(RecordError::ReservedNotZero);
    }
    if checksums == Checksums::Verify && le_u128(bytes, 0) != checksum(&bytes[16..needed]) {
        return Err(RecordError::ChecksumMismatch);
    }
    Ok(Record {
        kind: bytes[20],
        key: le_u64(bytes, 32),
        payload: &bytes[RECORD_HEADER_BYTES..needed],
    })
}

/// Largest file [`read_to_end`] reads, in bytes: the metadata WAL, a partition WAL or a
/// segment is rolled long before this, so a longer file is refused rather than read
/// into memory whole.
pub const READ_TO_END_BYTES_MAX: u64 = 1 << 30;

/// Byte written in place of a page no read could fetch (see [`read_to_end`]). Not zero,
/// so an unreadable page never looks like space that was never written: it fails the
/// checksum of any record that overlaps it, and recovery treats it as damage.
pub const UNREADABLE_FILL_BYTE: u8 = 0xDB;

/// Granularity of the second pass over a file whose whole read failed, in bytes: a
/// page, the smallest unit a drive reports unreadable in practice (4 KiB sectors).
pub const UNREADABLE_PAGE_BYTES: usize = 4096;

/// Read a whole file (boot and recovery read each file once, front to back).
///
/// A read that fails (after the storage's own retries, see
/// [`super::read_retry::RetryReads`]) does not fail the boot: the file is read again
/// page by page, and every page that still cannot be read is filled with
/// [`UNREADABLE_FILL_BYTE`]. Every format read this way is checksummed, so an
/// unreadable page shows as damage, which recovery already answers (a WAL record held
/// but unknown and repaired from peers, a checkpoint not trusted): a read error is
/// answered as corruption is. The error is logged with the page's offset.
pub async fn read_to_end<F: DurableFile>(file: &F) -> io::Result<Vec<u8>> {
    let len = file.len().await?;
    if len > READ_TO_END_BYTES_MAX {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("file of {len} bytes exceeds READ_TO_END_BYTES_MAX {READ_TO_END_BYTES_MAX}"),
        ));
    }
    let len = usize::try_from(len).map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "file too large"))?;
    let mut bytes = vec![0; len];
    let mut filled = 0;
    while filled < len {
        let read = match file.read_at(filled as u64, &mut bytes[filled..]).await {
            Ok(read) => read,
            Err(_) => {
                read_by_page(file, filled, &mut bytes[filled..]).await;
                bytes.len() - filled
            }
        };
        if read == 0 {
            // The file shrank under us (another handle truncated it): what we have is it.
            bytes.truncate(filled);
            break;
        }
        filled += read;
    }
    Ok(bytes)
}

/// Fill `buf` (the file from `start` on) page by page, marking every page that cannot
/// be read with [`UNREADABLE_FILL_BYTE`]; a short read leaves the rest zero.
async fn read_by_page<F: DurableFile>(file: &F, start: usize, buf: &mut [u8]) {
    for (index, page) in buf.chunks_mut(UNREADABLE_PAGE_BYTES).enumerate() {
        let offset = (start + index * UNREADABLE_PAGE_BYTES) as u64;
        let mut filled = 0;
        while filled < page.len() {
            match file.read_at(offset + filled as u64, &mut page[filled..]).await {
                Ok(0) => break,
                Ok(read) => filled += read,
                Err(error) => {
                    tracing::warn!(offset, bytes = page.len(), %error, "unreadable page; read as damaged");
                    page.fill(UNREADABLE_FILL_BYTE);
                    crate::cover!(ReadUnreadablePage);
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAGIC: u32 = 0x5445_5354;

    #[test]
    fn a_padded_record_is_the_record_of_its_payload_followed_by_zeros() {
        let mut padded = b"prefix".to_vec();
        encode_padded_into(&mut padded, MAGIC, 3, 9, b"abc", 11);
        let mut expected = b"prefix".to_vec();
        encode_into(&mut expected, MAGIC, 3, 9, b"abc\0\0\0\0\0\0\0\0");
        assert_eq!(padded, expected);
        let record = decode(MAGIC, &padded[6..]).expect("valid");
        assert_eq!(record.payload, b"abc\0\0\0\0\0\0\0\0");
        // Padding to exactly the payload's length adds nothing.
        let (mut exact, mut plain) = (Vec::new(), Vec::new());
        encode_padded_into(&mut exact, MAGIC, 3, 9, b"abc", 3);
        encode_into(&mut plain, MAGIC, 3, 9, b"abc");
        assert_eq!(exact, plain);
    }

    #[test]
    fn a_record_decodes_to_what_was_encoded() {
        let bytes = encode(MAGIC, 7, 42, b"hello");
        assert_eq!(bytes.len(), RECORD_HEADER_BYTES + 5);
        let record = decode(MAGIC, &bytes).expect("valid");
        assert_eq!(
            record,
            Record {
                kind: 7,
                key: 42,
                payload: b"hello"
            }
        );
        assert_eq!(record.encoded_bytes(), bytes.len());
    }

    #[test]
    fn every_single_bit_flip_is_detected() {
        let bytes = encode(MAGIC, 1, 9, b"payload bytes");
        for index in 0..bytes.len() {
            for bit in 0..8 {
                let mut damaged = bytes.clone();
                damaged[index] ^= 1 << bit;
                assert!(
                    decode(MAGIC, &damaged).is_err(),
                    "flip of bit {bit} in byte {index} went unnoticed"
                );
            }
        }
    }

    #[test]
    fn zeros_are_the_end_and_a_short_tail_is_truncated() {
        assert_eq!(decode(MAGIC, &[]), Err(RecordError::End));
        assert_eq!(decode(MAGIC, &[0; 100]), Err(RecordError::End));
        let bytes = encode(MAGIC, 1, 1, b"abcdef");
        assert_eq!(
            decode(MAGIC, &bytes[..bytes.len() - 1]),
            Err(RecordError::Truncated {
                needed: bytes.len(),
                available: bytes.len() - 1
            })
        );
        assert!(matches!(
            decode(MAGIC, &bytes[..10]),
            Err(RecordError::Truncated { .. })
        ));
    }

    #[test]
    fn another_files_record_is_refused_by_magic() {
        let bytes = encode(MAGIC + 1, 1, 1, b"x");
        assert_eq!(
            decode(MAGIC, &bytes),
            Err(RecordError::BadMagic {
                expected: MAGIC,
                found: MAGIC + 1
            })
        );
    }

    #[test]
    fn an_absurd_length_is_refused_before_allocating() {
        let mut bytes = encode(MAGIC, 1, 1, b"x");
        bytes[24..28].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(decode(MAGIC, &bytes), Err(RecordError::TooLong { .. })));
    }
}
