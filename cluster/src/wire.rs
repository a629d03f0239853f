//! Frames on the wire: a checksummed envelope around one message.
//!
//! Layout (little-endian): `[checksum: 16][size: 4][command: 1][body: size - 21]`.
//! The checksum is XXH3-128 over everything after it, so a flipped bit anywhere in
//! the frame (including the size and command) is caught. The consensus header
//! (issue #3) will live inside the body; the envelope is what the network and disks
//! see, and it is what the simulator's corruption fault must never get past.

use std::fmt;

use xxhash_rust::xxh3::xxh3_128;

/// Bytes before the body: checksum (16) + size (4) + command (1).
pub const ENVELOPE_BYTES: usize = 21;

/// Largest frame accepted, in bytes. Bounds what a malformed or hostile size field can
/// make a receiver allocate; 1 MiB covers a full batch of prepares and is far below
/// what a shard can buffer per peer.
pub const FRAME_BYTES_MAX: usize = 1 << 20;

/// Offset of the command byte, so the network can filter and count by message type
/// without decoding the frame.
pub const COMMAND_OFFSET: usize = 20;

/// A 128-bit checksum of `bytes`.
pub fn checksum(bytes: &[u8]) -> u128 {
    xxh3_128(bytes)
}

/// Why a frame was rejected. Every variant is counted by the receiver and the frame is
/// dropped, never applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// Shorter than the envelope.
    Truncated {
        /// Bytes received.
        len: usize,
    },
    /// The size field disagrees with the bytes received.
    SizeMismatch {
        /// What the frame claims.
        claimed: usize,
        /// What arrived.
        received: usize,
    },
    /// Larger than [`FRAME_BYTES_MAX`].
    TooLarge {
        /// Bytes claimed.
        size: usize,
    },
    /// The checksum does not match the contents.
    ChecksumMismatch,
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Truncated { len } => {
                write!(
                    f,
                    "frame of {len} bytes is shorter than the {ENVELOPE_BYTES}-byte envelope"
                )
            }
            FrameError::SizeMismatch { claimed, received } => {
                write!(f, "frame claims {claimed} bytes but {received} arrived")
            }
            FrameError::TooLarge { size } => {
                write!(f, "frame of {size} bytes exceeds FRAME_BYTES_MAX ({FRAME_BYTES_MAX})")
            }
            FrameError::ChecksumMismatch => write!(f, "frame checksum mismatch (corrupted in transit or on disk)"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Build a frame carrying `body` as message type `command`.
///
/// Panics if the frame would exceed [`FRAME_BYTES_MAX`]: callers build frames from
/// bounded parts, so an oversized one is a programming error, not input.
pub fn seal(command: u8, body: &[u8]) -> Vec<u8> {
    let size = ENVELOPE_BYTES + body.len();
    assert!(size <= FRAME_BYTES_MAX, "frame of {size} bytes exceeds FRAME_BYTES_MAX");
    let mut frame = Vec::with_capacity(size);
    frame.extend_from_slice(&[0u8; 16]);
    // size <= FRAME_BYTES_MAX < u32::MAX, checked above.
    frame.extend_from_slice(&(size as u32).to_le_bytes());
    frame.push(command);
    frame.extend_from_slice(body);
    let sum = checksum(&frame[16..]);
    frame[..16].copy_from_slice(&sum.to_le_bytes());
    frame
}

/// Verify a frame and return its command and body.
pub fn open(frame: &[u8]) -> Result<(u8, &[u8]), FrameError> {
    if frame.len() < ENVELOPE_BYTES {
        return Err(FrameError::Truncated { len: frame.len() });
    }
    let mut size_bytes = [0u8; 4];
    size_bytes.copy_from_slice(&frame[16..20]);
    let claimed = u32::from_le_bytes(size_bytes) as usize;
    if claimed > FRAME_BYTES_MAX {
        return Err(FrameError::TooLarge { size: claimed });
    }
    if claimed != frame.len() {
        return Err(FrameError::SizeMismatch {
            claimed,
            received: frame.len(),
        });
    }
    let mut sum_bytes = [0u8; 16];
    sum_bytes.copy_from_slice(&frame[..16]);
    if u128::from_le_bytes(sum_bytes) != checksum(&frame[16..]) {
        return Err(FrameError::ChecksumMismatch);
    }
    Ok((frame[COMMAND_OFFSET], &frame[ENVELOPE_BYTES..]))
}

/// The command byte of a frame without verifying it (for network filters and
/// counters); 0 if the frame is too short to have one.
pub fn peek_command(frame: &[u8]) -> u8 {
    frame.get(COMMAND_OFFSET).copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_frame_opens_to_its_command_and_body() {
        let frame = seal(7, b"hello");
        assert_eq!(frame.len(), ENVELOPE_BYTES + 5);
        assert_eq!(peek_command(&frame), 7);
        assert_eq!(open(&frame), Ok((7, &b"hello"[..])));
        assert_eq!(open(&seal(0, b"")), Ok((0, &b""[..])));
    }

    #[test]
    fn every_single_bit_flip_is_rejected() {
        let frame = seal(3, b"a body of some length");
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
        let mut frame = seal(1, b"xy");
        frame.push(0);
        assert_eq!(
            open(&frame),
            Err(FrameError::SizeMismatch {
                claimed: ENVELOPE_BYTES + 2,
                received: ENVELOPE_BYTES + 3
            })
        );
        let mut huge = seal(1, b"");
        huge[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(open(&huge), Err(FrameError::TooLarge { .. })));
        assert!(FrameError::ChecksumMismatch.to_string().contains("checksum"));
        assert_eq!(peek_command(&[]), 0);
    }
}
