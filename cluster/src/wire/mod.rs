//! Frames on the wire and on disk: a fixed 256-byte [`Header`] followed by a body.
//!
//! The header carries two checksums (XXH3-128): one of the body, and one of the
//! header itself (bytes 16..256, which include the body checksum), so a flipped bit
//! anywhere in a frame is caught before anything reads it. A frame that fails any
//! check is rejected with a typed [`FrameError`], counted by the receiver and dropped,
//! never applied.

pub mod batch;
mod header;

pub use header::{Command, HEADER_BYTES, Header, PREPARE_FLAG_PERSISTED, prepare_demands_persisted};

use std::fmt;

/// Largest frame accepted, header included, in bytes. Bounds what a hostile size field
/// can make a receiver allocate; 1 MiB holds the largest metadata op and a full
/// StartView's headers (128 x 256 bytes) with room to spare.
pub const FRAME_BYTES_MAX: usize = 1 << 20;

/// Largest view number a header may carry. A view moves by one per view change, so a
/// cluster that changed view every millisecond would need 8,900 years to reach it; a
/// larger value is not a view but a forged or broken frame. Bounding it at decode time
/// leaves `2^64 - 2^48` of headroom, so `view + 1` anywhere in the core cannot overflow
/// on a number that came from outside (found by a forged StartViewChange for view
/// `2^64-1`, which moved every node there and then panicked them all on the next
/// view change).
pub const VIEW_MAX: u64 = 1 << 48;

/// Largest op number (and commit point, and byte offset in a checkpoint exchange) a
/// header may carry: a million ops a second for 2,000 years. Same reason as
/// [`VIEW_MAX`]: arithmetic on a checked op never overflows.
pub const OP_MAX: u64 = 1 << 56;

/// Largest timestamp a header may carry, in microseconds since the Unix epoch (the
/// year 146,000): the primary computes `last + 1` on the timestamps it inherits.
pub const TIMESTAMP_MAX_MICROS: u64 = 1 << 62;

/// Offset of the command byte in a frame, so the network can filter and count by
/// message type without decoding.
pub const COMMAND_OFFSET: usize = header::COMMAND_OFFSET;

/// A 128-bit checksum of `bytes`: XXH3-128 (seed 0, the default secret), the checksum
/// of every frame and every on-disk record.
///
/// Computed by `twox-hash`, which picks AVX2 at run time where the CPU has it (about
/// twice the throughput of the SSE2 loop `xxhash-rust` compiles in for the baseline
/// x86-64 target); checksums are a tenth of a simulated-disk run's instructions. The
/// value is the algorithm's, whatever the CPU: a test compares it with `xxhash-rust`'s
/// over every length up to 4 KiB and longer inputs
/// (`checksum_is_xxh3_128_on_every_path`).
pub fn checksum(bytes: &[u8]) -> u128 {
    twox_hash::XxHash3_128::oneshot(bytes)
}

/// Why a frame was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// Shorter than a header.
    Truncated {
        /// Bytes received.
        len: usize,
    },
    /// The header checksum does not match the header.
    HeaderChecksum,
    /// The size field disagrees with the bytes received.
    SizeMismatch {
        /// What the header claims.
        claimed: usize,
        /// What arrived.
        received: usize,
    },
    /// Larger than [`FRAME_BYTES_MAX`].
    TooLarge {
        /// Bytes claimed.
        size: usize,
    },
    /// The body checksum does not match the body.
    BodyChecksum,
    /// The command byte names no known command.
    UnknownCommand {
        /// The byte.
        command: u8,
    },
    /// Reserved header bytes are not zero.
    ReservedNotZero,
    /// A number in the header is past what any real frame can hold ([`VIEW_MAX`],
    /// [`OP_MAX`], [`TIMESTAMP_MAX_MICROS`]).
    OutOfRange {
        /// The header field.
        field: &'static str,
        /// Its value.
        value: u64,
        /// The largest value allowed.
        max: u64,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Truncated { len } => {
                write!(f, "frame of {len} bytes is shorter than the {HEADER_BYTES}-byte header")
            }
            FrameError::HeaderChecksum => write!(f, "header checksum mismatch (corrupted in transit or on disk)"),
            FrameError::SizeMismatch { claimed, received } => {
                write!(f, "header claims {claimed} bytes but {received} arrived")
            }
            FrameError::TooLarge { size } => {
                write!(f, "frame of {size} bytes exceeds FRAME_BYTES_MAX ({FRAME_BYTES_MAX})")
            }
            FrameError::BodyChecksum => write!(f, "body checksum mismatch (corrupted in transit or on disk)"),
            FrameError::UnknownCommand { command } => write!(f, "unknown command byte {command}"),
            FrameError::ReservedNotZero => write!(f, "reserved header bytes are not zero"),
            FrameError::OutOfRange { field, value, max } => {
                write!(
                    f,
                    "header field {field} is {value}, past its largest possible value {max}"
                )
            }
        }
    }
}

impl std::error::Error for FrameError {}

/// Build a frame from `header` and `body`: sets the size and both checksums.
///
/// Panics if the frame would exceed [`FRAME_BYTES_MAX`]: frames are built from bounded
/// parts, so an oversized one is a programming error, not input.
pub fn seal_header(mut header: Header, body: &[u8]) -> Vec<u8> {
    let size = HEADER_BYTES + body.len();
    assert!(size <= FRAME_BYTES_MAX, "frame of {size} bytes exceeds FRAME_BYTES_MAX");
    // size <= FRAME_BYTES_MAX < u32::MAX, checked above.
    header.size = size as u32;
    header.checksum_body = checksum(body);
    // Only the header is zeroed first (its unused bytes must be zero); the body is
    // copied in, not zeroed and then overwritten: a frame is sealed for every message
    // sent, and a zeroed allocation of the whole frame cost more than the copy.
    let mut frame = Vec::with_capacity(size);
    frame.resize(HEADER_BYTES, 0);
    header.encode_into(&mut frame[..HEADER_BYTES]);
    let sum = checksum(&frame[16..HEADER_BYTES]);
    frame[..16].copy_from_slice(&sum.to_le_bytes());
    frame.extend_from_slice(body);
    frame
}

/// Build a frame carrying `body` as `command`, every other header field zero.
pub fn seal(command: Command, body: &[u8]) -> Vec<u8> {
    seal_header(Header::new(command), body)
}

/// Whether a reader verifies checksums. Production always verifies; skipping exists
/// only for the test-only storage break that applies damaged records
/// (`StorageBreak::SkipWalChecksums`), so a campaign can show it would be caught.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Checksums {
    /// Verify every checksum (the only production setting).
    #[default]
    Verify,
    /// Take the bytes as they are (the broken answer).
    Skip,
}

/// Verify a frame and return its header (with `checksum` filled in) and body.
pub fn open(frame: &[u8]) -> Result<(Header, &[u8]), FrameError> {
    open_with(frame, Checksums::Verify)
}

/// [`open`], verifying the header and body checksums or not (skipping is for the
/// test-only storage break that applies damaged records, never for production).
pub fn open_with(frame: &[u8], checksums: Checksums) -> Result<(Header, &[u8]), FrameError> {
    let verify = checksums == Checksums::Verify;
    if frame.len() < HEADER_BYTES {
        return Err(FrameError::Truncated { len: frame.len() });
    }
    let mut sum = [0u8; 16];
    sum.copy_from_slice(&frame[..16]);
    if verify && u128::from_le_bytes(sum) != checksum(&frame[16..HEADER_BYTES]) {
        return Err(FrameError::HeaderChecksum);
    }
    header::check_bounds(&frame[..HEADER_BYTES])?;
    let header = Header::decode(&frame[..HEADER_BYTES])?;
    open_body_with(&header, frame, checksums).map(|body| (header, body))
}

/// The rest of [`open_with`] for a caller that already decoded `header` from `frame`'s
/// first [`HEADER_BYTES`] and verified its checksum (a shard routing the frame): the
/// size it claims and the body's checksum. Returns the body.
pub fn open_body_with<'a>(header: &Header, frame: &'a [u8], checksums: Checksums) -> Result<&'a [u8], FrameError> {
    let verify = checksums == Checksums::Verify;
    // The frame's own header: its checksum field names the header checksum verified
    // (a different header would name another; comparing 16 bytes is enough).
    assert!(
        frame.len() >= HEADER_BYTES && frame[..16] == header.checksum.to_le_bytes(),
        "the header given is the frame's own"
    );
    let claimed = header.size as usize;
    if claimed > FRAME_BYTES_MAX {
        return Err(FrameError::TooLarge { size: claimed });
    }
    if claimed != frame.len() {
        return Err(FrameError::SizeMismatch {
            claimed,
            received: frame.len(),
        });
    }
    let body = &frame[HEADER_BYTES..];
    if verify && checksum(body) != header.checksum_body {
        return Err(FrameError::BodyChecksum);
    }
    Ok(body)
}

/// The command byte of a frame without verifying it (for network filters and
/// counters); 0 if the frame is too short to have one.
pub fn peek_command(frame: &[u8]) -> u8 {
    frame.get(COMMAND_OFFSET).copied().unwrap_or(0)
}

/// The group id of a frame without verifying it (for a sender sorting its own frames);
/// 0 if the frame is too short to have one.
pub fn peek_group(frame: &[u8]) -> u64 {
    frame
        .get(header::GROUP_OFFSET..header::GROUP_OFFSET + 8)
        .map_or(0, |bytes| u64::from_le_bytes(bytes.try_into().unwrap_or([0; 8])))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every frame and record on disk carries this checksum, so it must be XXH3-128
    /// exactly, on every code path the hasher may take: the short-input ones (up to
    /// 16, 128 and 240 bytes), the long loop with and without a partial stripe and
    /// block, and whichever vector unit the CPU running the test offers. Compared with
    /// `xxhash-rust`, the implementation it replaced, whose values the disks written
    /// so far hold.
    #[test]
    fn checksum_is_xxh3_128_on_every_path() {
        let bytes: Vec<u8> = (0..300_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let mut lengths: Vec<usize> = (0..=4_096).collect();
        lengths.extend([8_191, 8_192, 65_535, 65_536, 65_537, 100_003, 262_144, 300_000]);
        for len in lengths {
            for start in [0, 1, 7] {
                let input = &bytes[start..(start + len).min(bytes.len())];
                assert_eq!(
                    checksum(input),
                    xxhash_rust::xxh3::xxh3_128(input),
                    "{} bytes from offset {start}",
                    input.len()
                );
            }
        }
        // The empty input's XXH3-128, from the reference implementation.
        assert_eq!(checksum(&[]), 0x99aa_06d3_0147_98d8_6001_c324_468d_497f);
    }

    #[test]
    fn a_sealed_frame_opens_to_its_header_and_body() {
        let mut header = Header::new(Command::Prepare);
        header.view = 3;
        header.op = 9;
        header.client = 0xABCD;
        let frame = seal_header(header, b"hello");
        assert_eq!(frame.len(), HEADER_BYTES + 5);
        assert_eq!(peek_command(&frame), Command::Prepare as u8);
        let (opened, body) = open(&frame).expect("valid frame");
        assert_eq!(body, b"hello");
        assert_eq!((opened.view, opened.op, opened.client), (3, 9, 0xABCD));
        assert_eq!(opened.command, Command::Prepare);
        assert_eq!(opened.size as usize, frame.len());
        assert_ne!(opened.checksum, 0, "open fills in the header checksum");
    }

    #[test]
    fn a_frame_whose_header_was_verified_is_judged_by_its_body_alone() {
        let frame = seal(Command::Prepare, b"a body of some length");
        let header = Header::decode_verified(&frame[..HEADER_BYTES]).expect("a sealed header");
        assert_eq!(
            open_body_with(&header, &frame, Checksums::Verify),
            Ok(&frame[HEADER_BYTES..])
        );
        let mut damaged = frame.clone();
        *damaged.last_mut().expect("a body") ^= 1;
        assert_eq!(
            open_body_with(&header, &damaged, Checksums::Verify),
            Err(FrameError::BodyChecksum)
        );
        assert_eq!(
            open_body_with(&header, &damaged, Checksums::Skip),
            Ok(&damaged[HEADER_BYTES..])
        );
        let longer = [&frame[..], &[0u8][..]].concat();
        assert!(matches!(
            open_body_with(&header, &longer, Checksums::Verify),
            Err(FrameError::SizeMismatch { .. })
        ));
    }

    #[test]
    #[should_panic(expected = "the header given is the frame's own")]
    fn a_header_from_another_frame_is_refused() {
        let frame = seal(Command::Prepare, b"one");
        let other = seal(Command::Prepare, b"two");
        let header = Header::decode_verified(&other[..HEADER_BYTES]).expect("a sealed header");
        let _ = open_body_with(&header, &frame, Checksums::Verify);
    }

    #[test]
    fn every_single_bit_flip_is_rejected() {
        let frame = seal(Command::Request, b"a body of some length");
        for byte in 0..frame.len() {
            for bit in 0..8 {
                let mut damaged = frame.clone();
                damaged[byte] ^= 1 << bit;
                assert!(open(&damaged).is_err(), "flip at byte {byte} bit {bit} accepted");
            }
        }
    }

    #[test]
    fn malformed_frames_get_typed_errors() {
        assert_eq!(open(&[1, 2, 3]), Err(FrameError::Truncated { len: 3 }));
        let mut frame = seal(Command::Request, b"xy");
        frame.push(0);
        assert_eq!(
            open(&frame),
            Err(FrameError::SizeMismatch {
                claimed: HEADER_BYTES + 2,
                received: HEADER_BYTES + 3
            })
        );
        assert!(FrameError::BodyChecksum.to_string().contains("checksum"));
        assert_eq!(peek_command(&[]), 0);
    }

    /// Re-seal raw header bytes with a valid header checksum, to reach the checks
    /// behind it.
    fn reseal(mut frame: Vec<u8>) -> Vec<u8> {
        let sum = checksum(&frame[16..HEADER_BYTES]);
        frame[..16].copy_from_slice(&sum.to_le_bytes());
        frame
    }

    #[test]
    fn checks_behind_a_valid_header_checksum_still_hold() {
        let frame = seal(Command::Request, b"body");
        let mut unknown = frame.clone();
        unknown[COMMAND_OFFSET] = 250;
        assert_eq!(open(&reseal(unknown)), Err(FrameError::UnknownCommand { command: 250 }));
        let mut reserved = frame.clone();
        reserved[HEADER_BYTES - 1] = 1;
        assert_eq!(open(&reseal(reserved)), Err(FrameError::ReservedNotZero));
        let mut huge = frame.clone();
        huge[header::SIZE_OFFSET..header::SIZE_OFFSET + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(open(&reseal(huge)), Err(FrameError::TooLarge { .. })));
        let mut body = frame;
        let last = body.len() - 1;
        body[last] ^= 1;
        assert_eq!(open(&body), Err(FrameError::BodyChecksum));
    }
}
