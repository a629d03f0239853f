//! `SendMessages`: append a batch of small messages to a partition, or an empty batch.
//! (Batches over the payload budget are `SendOversizedBatch`'s.)

use cluster::partition::{BATCH_BYTES_MAX, MESSAGES_PER_BATCH_MAX, Message, PartitionOp, PartitionReply};

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::Shadow;

/// The action's name.
pub const NAME: &str = "SendMessages";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = outcomes!(Appended, EmptyBatch);

/// Most messages in a drawn batch: enough that a few dozen sends fill a segment (so
/// retention and segment deletion have sealed segments to drop), few enough that a
/// batch stays a small frame.
pub const BATCH_DRAW_MESSAGES_MAX: u64 = 50;

/// Largest drawn payload, in bytes: small, so the shadow's messages and the frames stay
/// cheap; 0 is drawn too (an empty payload is a message like any other).
pub const PAYLOAD_DRAW_BYTES_MAX: u64 = 32;

/// A drawn message: a random id and a payload of random length and bytes.
pub fn message(rng: &mut SimRng) -> Message {
    let id = (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64());
    // PAYLOAD_DRAW_BYTES_MAX is tiny, so the length fits a usize.
    let len = rng.below(PAYLOAD_DRAW_BYTES_MAX + 1) as usize;
    let payload = payload_bytes(rng.next_u64(), len);
    Message { id, payload }
}

/// `len` bytes spun out of `seed` (SplitMix64): one draw per payload, not per byte.
pub fn payload_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    // Filled a word at a time in place: an oversized batch draws megabytes, and a
    // push per word (with its capacity check) was a visible share of a campaign.
    let mut bytes = vec![0u8; len];
    let mut words = bytes.chunks_exact_mut(8);
    for word in &mut words {
        word.copy_from_slice(&next().to_le_bytes());
    }
    let tail = words.into_remainder();
    if !tail.is_empty() {
        let word = next().to_le_bytes();
        let take = tail.len();
        tail.copy_from_slice(&word[..take]);
    }
    bytes
}

/// `Appended`: any partition of the client's, 1 to [`BATCH_DRAW_MESSAGES_MAX`] drawn
/// messages; `EmptyBatch`: no messages.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    let at = scope.pick_partition_where(rng, |_, _| true)?;
    let messages = match aim {
        Outcome::Appended => {
            let count = rng.range_inclusive(1, BATCH_DRAW_MESSAGES_MAX);
            (0..count).map(|_| message(rng)).collect()
        }
        Outcome::EmptyBatch => Vec::new(),
        _ => return None,
    };
    partition_plan!(at, SendMessages { messages })
}

/// What `messages` answer: empty, over the bounds, or appended.
pub fn predict_batch(messages: &[Message]) -> Outcome {
    let payload_bytes: usize = messages.iter().map(|message| message.payload.len()).sum();
    if messages.is_empty() {
        Outcome::EmptyBatch
    } else if messages.len() > MESSAGES_PER_BATCH_MAX || payload_bytes > BATCH_BYTES_MAX {
        Outcome::BatchTooLarge
    } else {
        Outcome::Appended
    }
}

/// In the state machine's order: empty, then the bounds.
pub fn predict(_scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let (_, PartitionOp::SendMessages { messages }) = super::partition_op(NAME, request) else {
        super::wrong_op(NAME, request)
    };
    predict_batch(messages).into()
}

/// `Appended`: the batch holds the next offsets, exactly (one client writes the
/// partition), stamped with the prepare's timestamp from the reply header.
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    observe_batch(shadow, answered, NAME);
}

/// `observe` for any send: shared with `SendOversizedBatch`.
pub fn observe_batch(shadow: &mut Shadow, answered: &Answered<'_>, action: &str) {
    let (at, op, reply) = super::partition_answer(action, answered);
    let PartitionOp::SendMessages { messages } = op else {
        super::wrong_op(action, answered.request)
    };
    match reply {
        PartitionReply::Appended {
            base_offset,
            last_offset,
        } => {
            let Some(partition) = shadow.partition_mut(&at) else {
                return;
            };
            let expected_base = partition.log.next_offset();
            // A successful batch holds 1..=MESSAGES_PER_BATCH_MAX messages: fits a u64.
            let expected_last = expected_base + messages.len() as u64 - 1;
            partition.log.append(messages, answered.header.timestamp);
            if (base_offset, last_offset) != (expected_base, expected_last) {
                shadow.note_mismatch(format!(
                    "{action} of {} messages to group {:#x} was appended at offsets {base_offset}..={last_offset}, the shadow predicted {expected_base}..={expected_last}",
                    messages.len(),
                    at.group
                ));
            }
        }
        other => super::unexpected_partition_reply(shadow, action, &other),
    }
}

#[cfg(test)]
mod tests {
    use super::payload_bytes;

    /// The payload stream is SplitMix64's outputs, little-endian, cut at `len`: a
    /// recorded run replays only if these bytes never change.
    #[test]
    fn payload_bytes_are_the_splitmix64_stream_cut_at_the_length() {
        let first = 0xe220_a839_7b1d_cdafu64.to_le_bytes();
        let second = 0x6e78_9e6a_a1b9_65f4u64.to_le_bytes();
        assert_eq!(payload_bytes(0, 8), first);
        assert_eq!(payload_bytes(0, 11), [&first[..], &second[..3]].concat());
        assert!(payload_bytes(7, 0).is_empty());
        assert_eq!(payload_bytes(0, 100_003).len(), 100_003);
    }
}
