//! Viewstamped Replication (Revisited): one implementation for every group.
//!
//! [`Replica`] is a synchronous state machine: frames and ticks go in, frames to send
//! come out of its outbox. It never waits, reads a clock or draws randomness: the
//! realtime clock is passed in with each call, and the entropy for salts comes from a
//! seed given at construction and is replicated in each prepare. The shard pump feeds
//! it from the bus; the simulator runs the same pump.
//!
//! Files, by concern: [`replica`] (state, boot, dispatch, invariants), `normal`
//! (request, prepare, prepare-ok, commit, reply, heartbeat),
//! `leave_view` (a view is left only when a quorum votes to leave it),
//! [`view_change`] (StartViewChange / DoViewChange / StartView and the merge),
//! [`recovery`] (RequestStartView after a restart), [`repair`] (fetching prepares and
//! the chain walk), [`checkpoint`] (durable checkpoints and the journal's bounds),
//! [`transfer`] (state transfer from a peer's checkpoint), [`journal`], [`store`],
//! [`client_table`], [`timeout`], [`constants`].

pub mod budget;
pub mod buggify;
pub mod checkpoint;
pub mod client_table;
pub mod constants;
mod idle_ticks;
pub mod journal;
mod leave_view;
mod normal;
mod query;
pub mod recovery;
pub mod repair;
pub mod replica;
pub mod round_trip;
pub mod store;
pub mod timeout;
pub mod transfer;
pub mod view_change;

#[cfg(test)]
mod catch_up_tests;
#[cfg(test)]
mod leave_view_tests;
#[cfg(test)]
mod query_tests;
#[cfg(test)]
mod repair_tests;
#[cfg(test)]
mod tests;

pub use buggify::Buggify;
pub use normal::{ClientError, seal_refusal};
pub use replica::{CheckpointDigests, Replica, ReplicaConfig, ReplicaStats, Status};
pub use store::{MemoryStore, ReplicaStore, StorageBreak, StoreError, StoredRecord, Superblock};
pub use transfer::TransferProgress;

use crate::wire::Header;

/// What a VSR group replicates: applied in op order, identically on every replica.
pub trait StateMachine {
    /// Apply a committed op (the prepare's header and body) and return the reply body.
    /// Must be a pure function of the state and the arguments.
    fn apply(&mut self, header: &Header, body: &[u8]) -> Vec<u8>;

    /// A checksum of the whole state, for comparing replicas.
    fn digest(&self) -> u128;

    /// The canonical bytes of the whole state: what a checkpoint stores and what state
    /// transfer ships. Equal states give equal bytes.
    fn snapshot(&self) -> Vec<u8>;

    /// Replace the whole state with one decoded from [`StateMachine::snapshot`] bytes.
    /// Bytes that are not a valid snapshot are refused and leave the state unchanged.
    fn restore(&mut self, bytes: &[u8]) -> Result<(), crate::codec::DecodeError>;

    /// Whether a client request is well-formed enough to prepare. The primary refuses
    /// the rest, so every committed op is one the state machine understands.
    fn validate_request(&self, _operation: u8, _body: &[u8]) -> bool {
        true
    }

    /// The reply a request gets whatever the state, when applying it would change
    /// nothing but retention (a batch too large or empty): the primary answers it at
    /// once instead of replicating an op that is refused on apply. The reply header
    /// says op 0: nothing was prepared. `None` for every other request.
    fn refuse_before_prepare(&self, _operation: u8, _body: &[u8]) -> Option<Vec<u8>> {
        None
    }

    /// Whether `operation` is a query: answered by the primary from its applied state,
    /// with no consensus round, never journaled and never deduplicated.
    fn is_query(&self, _operation: u8) -> bool {
        false
    }

    /// Answer a query (see [`StateMachine::is_query`]) from the applied state, or
    /// `None` if the body is malformed (the request is then dropped and counted).
    fn query(&self, _operation: u8, _body: &[u8]) -> Option<Vec<u8>> {
        None
    }
}
