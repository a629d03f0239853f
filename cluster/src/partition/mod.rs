//! The partition plane's state machine: what one partition's VSR group replicates.
//!
//! Models: the ops a partition group applies ([`PartitionOp`]: send messages, store and
//! delete consumer offsets, set a consumer group's owner, purge, delete segments), the
//! replies they get ([`PartitionReply`], classified by [`PartitionOutcome`]), the poll
//! query the primary answers without consensus ([`PollRequest`], [`PollReply`]), the
//! in-memory log with segments, per-message index entries and time-based retention
//! ([`PartitionLog`]), and [`PartitionMachine`], the VSR `StateMachine`. Applying is a
//! pure function of the committed ops and their [`ApplyContext`], so replicas compare
//! by digest. [`OwnerFence::DisabledForTest`] switches the owner fence off for
//! simulator tests that prove the fence check is load-bearing; never in production.
//!
//! Does not model: files and the write-ahead log, request deduplication watermarks,
//! state transfer, or the metadata plane (which owns topics, groups and members and will
//! drive `SetGroupOwner`). Nothing here reads a clock or OS randomness.
//!
//! | file | what it holds |
//! |---|---|
//! | `ops.rs` | [`PartitionOp`], [`Message`], [`Consumer`], operation codes, batch bounds |
//! | `reply.rs` | [`PartitionReply`], [`PartitionOutcome`], the reply codec |
//! | `log.rs` | [`PartitionLog`], [`Segment`], [`StoredMessage`], index entries, retention |
//! | `poll.rs` | [`POLL_MESSAGES_CODE`], [`PollRequest`], [`PollReply`], [`PolledMessage`], poll bounds |
//! | `state.rs` | [`PartitionState`], [`ApplyContext`], [`OwnerFence`], the rules, `digest` |
//! | `machine.rs` | [`PartitionMachine`]: the state as a VSR `StateMachine` |

mod log;
mod machine;
mod ops;
mod poll;
mod reply;
mod state;

#[cfg(test)]
mod tests;

pub use crate::codec::DecodeError;
pub use log::{
    INDEX_ENTRY_BYTES, IndexEntry, MESSAGE_HEADER_BYTES, MessageRef, PartitionLog, READ_MESSAGES_MAX,
    SEGMENT_BYTES_MAX, SEGMENT_MESSAGES_MAX, Segment, StoredMessage, decode_index_entry, encode_index_entry,
};
pub use machine::PartitionMachine;
pub use ops::{
    BATCH_BYTES_MAX, Consumer, ConsumerKey, MESSAGES_PER_BATCH_MAX, Message, OPERATION_CODE_MIN, OpShape,
    PAYLOAD_BYTES_MAX, PartitionOp, need_of_operation,
};
pub use poll::{
    POLL_MESSAGES_CODE, POLL_MESSAGES_MAX, POLL_REPLY_PAYLOAD_BYTES_MAX, PollReply, PollRequest, PolledMessage,
};
pub use reply::{PartitionOutcome, PartitionReply, REPLY_ERROR_CODE_MIN};
pub use state::{ApplyContext, GroupOwner, OwnerFence, PartitionState};
