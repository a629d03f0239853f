//! Batches: many header-only frames from one node to another, carried as one frame.
//!
//! A node hosts one replica of every group, and each group keeps its own timers: a node
//! leading a hundred partition groups sends a hundred Commit heartbeats to each peer
//! every commit interval, and a hundred groups that lost the same primary send a hundred
//! RequestStartView or LeaveView frames to each peer at once. Sent one by one, that
//! liveness traffic alone fills a bounded link (seen in the simulator: 36,650 Commit
//! frames against 4,830 Prepares in a 6,000-tick swarm run, with a third of all packets
//! evicted from full links and a restarted replica's repair answers evicted with them).
//! Packed, it is one message per node pair per flush, whatever the group count.
//!
//! A batch is a frame whose command is [`Command::Batch`] and whose body is whole frames
//! end to end, each sealed with its own checksums and sized by its own header: the
//! header-only ones (heartbeats, votes, probes, acknowledgements, repair requests) and
//! the view-change messages that carry logs (DoViewChange, StartView), which a hundred
//! groups changing view at once also send together. The batch's own body checksum
//! covers them all, so a damaged batch is dropped whole, as a damaged single frame is.
//! Nothing a batch carries is trusted for being in a batch: a receiver opens each inner
//! frame as if it had arrived alone.

use super::header::SIZE_OFFSET;
use super::{Command, FRAME_BYTES_MAX, HEADER_BYTES, Header, peek_command, seal_header};

/// The most bytes of frames one batch carries: the body of the largest frame. A flush
/// with more for one peer sends more than one batch.
pub const BATCH_BODY_BYTES_MAX: usize = FRAME_BYTES_MAX - HEADER_BYTES;

/// Whether `frame` may travel in a batch: header-only or a view-change message, small
/// enough to fit, and not itself a batch.
pub fn batchable(frame: &[u8]) -> bool {
    let command = peek_command(frame);
    let header_only = frame.len() == HEADER_BYTES && command != Command::Batch as u8;
    let view_change = command == Command::DoViewChange as u8 || command == Command::StartView as u8;
    header_only || (view_change && frame.len() <= BATCH_BODY_BYTES_MAX)
}

/// Seal `frames` (each [`batchable`]; at least one, together at most
/// [`BATCH_BODY_BYTES_MAX`] bytes) into one batch of `cluster` (a transport refuses a
/// frame naming another cluster, and drops the connection it came on).
///
/// Panics on a frame that is not batchable or on too many bytes: the sender builds
/// batches from its own frames, so either is a programming error, not input.
pub fn pack<'a>(cluster: u64, frames: impl Iterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut body = Vec::new();
    for frame in frames {
        assert!(
            batchable(frame),
            "only header-only and view-change frames travel in a batch"
        );
        body.extend_from_slice(frame);
    }
    assert!(
        !body.is_empty() && body.len() <= BATCH_BODY_BYTES_MAX,
        "a batch carries 1 to {BATCH_BODY_BYTES_MAX} bytes of frames, not {}",
        body.len()
    );
    let mut header = Header::new(Command::Batch);
    header.cluster = cluster;
    seal_header(header, &body)
}

/// Why a batch's body was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchError {
    /// The body is empty.
    Empty,
    /// An inner frame's header claims a size shorter than a header or past the body's end.
    Size {
        /// Its place in the batch.
        index: usize,
        /// The size its header claims.
        claimed: usize,
    },
    /// An inner frame is itself a batch (batches do not nest).
    Nested {
        /// Its place in the batch.
        index: usize,
    },
}

impl std::fmt::Display for BatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BatchError::Empty => write!(f, "a batch carries no frame"),
            BatchError::Size { index, claimed } => write!(
                f,
                "frame {index} of a batch claims {claimed} bytes: under a {HEADER_BYTES}-byte header or past the batch's end"
            ),
            BatchError::Nested { index } => write!(f, "frame {index} of a batch is itself a batch"),
        }
    }
}

impl std::error::Error for BatchError {}

/// The frames in a batch's `body` (its checksum already verified by `wire::open`), each
/// still to be opened and verified by whoever takes it. Refuses the whole batch unless
/// its body is one or more whole frames, as their own size fields say (read before
/// any checksum: a lying size only cuts the body wrongly, and the pieces then fail
/// their own checks), none of them a batch.
pub fn unpack(body: &[u8]) -> Result<Vec<&[u8]>, BatchError> {
    if body.is_empty() {
        return Err(BatchError::Empty);
    }
    let mut frames = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let index = frames.len();
        let claimed = rest.get(SIZE_OFFSET..SIZE_OFFSET + 4).map_or(0, |bytes| {
            u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize
        });
        if claimed < HEADER_BYTES || claimed > rest.len() {
            return Err(BatchError::Size { index, claimed });
        }
        let (frame, after) = rest.split_at(claimed);
        if peek_command(frame) == Command::Batch as u8 {
            return Err(BatchError::Nested { index });
        }
        frames.push(frame);
        rest = after;
    }
    Ok(frames)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Header, open};

    fn commit(group: u64) -> Vec<u8> {
        let mut header = Header::new(Command::Commit);
        header.group = group;
        header.commit = group * 10;
        crate::wire::seal_header(header, &[])
    }

    #[test]
    fn a_batch_carries_its_frames_byte_for_byte_in_order() {
        let frames: Vec<Vec<u8>> = (1..=5).map(commit).collect();
        let batch = pack(0xC1, frames.iter().map(Vec::as_slice));
        let (header, body) = open(&batch).expect("a sealed batch opens");
        assert_eq!((header.command, header.cluster), (Command::Batch, 0xC1));
        let inner = unpack(body).expect("a packed body unpacks");
        assert_eq!(inner, frames.iter().map(Vec::as_slice).collect::<Vec<_>>());
        for (frame, group) in inner.iter().zip(1..) {
            let (header, _) = open(frame).expect("each inner frame opens on its own");
            assert_eq!((header.group, header.commit), (group, group * 10));
        }
    }

    #[test]
    fn a_batch_cut_wrong_or_holding_a_batch_is_refused() {
        let one = commit(1);
        assert_eq!(unpack(&[]).err(), Some(BatchError::Empty));
        assert_eq!(
            unpack(&one[..HEADER_BYTES - 1]).err(),
            Some(BatchError::Size {
                index: 0,
                claimed: HEADER_BYTES
            }),
            "a header longer than what is left"
        );
        let mut lying = one.clone();
        lying[SIZE_OFFSET..SIZE_OFFSET + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            unpack(&lying).err(),
            Some(BatchError::Size {
                index: 0,
                claimed: u32::MAX as usize
            }),
            "a size past the end is refused, never allocated"
        );
        lying[SIZE_OFFSET..SIZE_OFFSET + 4].copy_from_slice(&3u32.to_le_bytes());
        assert_eq!(unpack(&lying).err(), Some(BatchError::Size { index: 0, claimed: 3 }));
        let mut nested = one.clone();
        let inner_batch = pack(0xC1, [one.as_slice()].into_iter());
        nested.extend_from_slice(&inner_batch);
        assert_eq!(unpack(&nested).err(), Some(BatchError::Nested { index: 1 }));
        assert!(!batchable(&inner_batch), "a batch never goes into a batch");
        assert!(
            !batchable(&crate::wire::seal(Command::Prepare, b"body")),
            "prepares travel alone"
        );
        assert!(batchable(&crate::wire::seal(Command::DoViewChange, b"headers")));
    }

    #[test]
    fn frames_with_bodies_unpack_at_their_own_sizes() {
        let frames = [
            crate::wire::seal(Command::DoViewChange, &[7u8; 512]),
            commit(3),
            crate::wire::seal(Command::StartView, &[9u8; 256]),
        ];
        let batch = pack(0xC1, frames.iter().map(Vec::as_slice));
        let inner = unpack(open(&batch).expect("opens").1).expect("unpacks");
        assert_eq!(inner, frames.iter().map(Vec::as_slice).collect::<Vec<_>>());
    }
}
