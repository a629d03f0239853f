//! [`PartitionMachine`]: one partition's state as its VSR group's state machine.
//!
//! Models: decoding the committed body by the header's operation code and applying it
//! with the context the primary fixed (header timestamp and op number). A body that
//! does not decode to the operation its header names is refused on the request path
//! ([`PartitionMachine::validate`]); if one is ever committed anyway, applying it
//! changes nothing and replies with an empty body on every replica alike.
//!
//! Polls are queries ([`POLL_MESSAGES_CODE`]): the primary answers them from its
//! applied state through [`StateMachine::query`], with no consensus round, so
//! [`PartitionMachine::validate`] refuses them (a query is never prepared).
//!
//! Does not model: the request path or deduplication.

use super::{ApplyContext, OwnerFence, POLL_MESSAGES_CODE, PartitionOp, PartitionState, PollRequest};
use crate::vsr::StateMachine;
use crate::wire::Header;

/// The partition state machine of one replica.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionMachine {
    state: PartitionState,
}

impl PartitionMachine {
    /// An empty partition whose messages expire after `message_expiry_micros` (0 = never).
    /// `fence` must be [`OwnerFence::Enforced`] outside tests (see [`OwnerFence`]).
    pub fn new(message_expiry_micros: u64, fence: OwnerFence) -> Self {
        Self {
            state: PartitionState::new(message_expiry_micros, fence),
        }
    }

    /// The state.
    pub fn state(&self) -> &PartitionState {
        &self.state
    }

    /// Whether a request body decodes to the committed operation its header names.
    /// Refuses [`POLL_MESSAGES_CODE`]: a query is answered, never prepared.
    pub fn validate(operation: u8, body: &[u8]) -> bool {
        if operation == POLL_MESSAGES_CODE {
            return false;
        }
        PartitionOp::decode_shape(body).is_ok_and(|shape| shape.operation == operation)
    }
}

impl StateMachine for PartitionMachine {
    fn apply(&mut self, header: &Header, body: &[u8]) -> Vec<u8> {
        let context = ApplyContext {
            timestamp_micros: header.timestamp,
            op_number: header.op,
        };
        self.state
            .apply_encoded(header.operation, body, &context)
            .map_or_else(Vec::new, |reply| reply.encode())
    }

    fn digest(&self) -> u128 {
        self.state.digest()
    }

    fn snapshot(&self) -> Vec<u8> {
        self.state.encode_state()
    }

    /// Decodes with this machine's owner fence (not part of the snapshot: it is test
    /// configuration) and replaces the state only once the whole snapshot decoded.
    fn restore(&mut self, bytes: &[u8]) -> Result<(), crate::codec::DecodeError> {
        self.state = PartitionState::decode_state(bytes, self.state.fence())?;
        Ok(())
    }

    fn validate_request(&self, operation: u8, body: &[u8]) -> bool {
        Self::validate(operation, body)
    }

    fn refuse_before_prepare(&self, operation: u8, body: &[u8]) -> Option<Vec<u8>> {
        // Empty and oversized batches are refused by every state: replicating one (an
        // oversized batch is over half a megabyte) would fill rings and WALs with ops
        // that append nothing.
        let shape = PartitionOp::decode_shape(body).ok()?;
        if shape.operation != operation {
            return None;
        }
        let (messages, payload_bytes) = shape.batch?;
        let refusal = super::state::batch_refusal_of(messages, payload_bytes)?;
        Some(refusal.encode())
    }

    fn is_query(&self, operation: u8) -> bool {
        operation == POLL_MESSAGES_CODE
    }

    fn query(&self, operation: u8, body: &[u8]) -> Option<Vec<u8>> {
        if operation != POLL_MESSAGES_CODE {
            return None;
        }
        let request = PollRequest::decode(body).ok()?;
        Some(self.state.poll_encoded(&request))
    }
}
