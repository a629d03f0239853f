//! `SendOversizedBatch`: a batch whose payload bytes exceed the batch budget, which the
//! partition refuses. Its own action because each request is over half a megabyte:
//! a plane weights it apart from ordinary sends.

use cluster::partition::{BATCH_BYTES_MAX, Message, PAYLOAD_BYTES_MAX, PartitionOp};
use cluster::wire::{FRAME_BYTES_MAX, HEADER_BYTES};

use crate::rng::SimRng;
use crate::workload::outcome::{Outcome, OutcomeSet};
use crate::workload::request::{Answered, Plan, Request};
use crate::workload::scope::Scope;
use crate::workload::shadow::Shadow;

/// The action's name.
pub const NAME: &str = "SendOversizedBatch";

/// Outcomes it can produce.
pub const OUTCOMES: &[Outcome] = outcomes!(BatchTooLarge);

/// Messages in the batch, each of the largest payload: the fewest that exceed
/// `BATCH_BYTES_MAX` (a batch of too many messages would not even decode, and the
/// request would be dropped unanswered).
pub const OVERSIZED_MESSAGES: usize = BATCH_BYTES_MAX / PAYLOAD_BYTES_MAX + 1;

/// Bytes one message adds to the body besides its payload: id (16) and a length varint
/// (3 bytes cover `PAYLOAD_BYTES_MAX`, 64 KiB < 2^21).
const MESSAGE_OVERHEAD_BYTES_MAX: usize = 16 + 3;

// Over the budget, and still one frame: operation code, count varint (2 bytes cover
// OVERSIZED_MESSAGES), the messages, the header.
const _: () = assert!(OVERSIZED_MESSAGES * PAYLOAD_BYTES_MAX > BATCH_BYTES_MAX);
const _: () = assert!(
    HEADER_BYTES + 1 + 2 + OVERSIZED_MESSAGES * (MESSAGE_OVERHEAD_BYTES_MAX + PAYLOAD_BYTES_MAX) <= FRAME_BYTES_MAX
);

/// `BatchTooLarge`: [`OVERSIZED_MESSAGES`] messages of `PAYLOAD_BYTES_MAX` bytes to any
/// partition of the client's.
pub fn generate(scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
    if aim != Outcome::BatchTooLarge {
        return None;
    }
    let at = scope.pick_partition_where(rng, |_, _| true)?;
    let messages = (0..OVERSIZED_MESSAGES)
        .map(|_| Message {
            id: u128::from(rng.next_u64()),
            payload: super::send_messages::payload_bytes(rng.next_u64(), PAYLOAD_BYTES_MAX),
        })
        .collect();
    partition_plan!(at, SendMessages { messages })
}

/// As `SendMessages`.
pub fn predict(_scope: &Scope<'_>, request: &Request) -> OutcomeSet {
    let (_, PartitionOp::SendMessages { messages }) = super::partition_op(NAME, request) else {
        super::wrong_op(NAME, request)
    };
    super::send_messages::predict_batch(messages).into()
}

/// As `SendMessages` (a refused batch changes nothing).
pub fn observe(shadow: &mut Shadow, answered: &Answered<'_>) {
    super::send_messages::observe_batch(shadow, answered, NAME);
}
