//! [`MetadataMachine`]: the metadata state as the VSR group's state machine.
//!
//! The op's context comes from its prepare header: the primary's timestamp, the op
//! number, the view it was prepared in, and the entropy the primary drew (the header's
//! nonce). A body that does
//! not decode to the operation its header names is refused on the request path
//! ([`MetadataMachine::validate`]), so a committed op always decodes; if one ever does
//! not, applying it changes nothing and replies with an empty body on every replica alike.

use super::{ApplyContext, MetadataOp, MetadataState};
use crate::vsr::StateMachine;
use crate::wire::Header;

/// The root password every simulated and test cluster boots with. Production takes it
/// from configuration.
pub const DEFAULT_ROOT_PASSWORD: &str = "secret";

/// The metadata state machine of one replica.
#[derive(Clone, Debug)]
pub struct MetadataMachine {
    state: MetadataState,
    /// Counts applied ops that may have changed who may do what (logins, user and
    /// permission changes, stream deletions) and restores: a node rebuilds the access
    /// view it admits requests by only when this moves. Local to this replica, not
    /// replicated state.
    access_version: u64,
}

impl MetadataMachine {
    /// Genesis state for a cluster: the root user with `root_password`, salted from the
    /// cluster id (every replica of the cluster derives the same genesis).
    pub fn new(cluster: u64, root_password: &str) -> Self {
        Self {
            state: MetadataState::new(root_password, cluster),
            access_version: 0,
        }
    }

    /// The state.
    pub fn state(&self) -> &MetadataState {
        &self.state
    }

    /// See the field: moves whenever sessions or permissions may have changed.
    pub fn access_version(&self) -> u64 {
        self.access_version
    }

    /// Whether a request body decodes to the operation its header names.
    pub fn validate(operation: u8, body: &[u8]) -> bool {
        MetadataOp::decode(body).is_ok_and(|op| op.operation_code() == operation)
    }
}

impl StateMachine for MetadataMachine {
    fn apply(&mut self, header: &Header, body: &[u8]) -> Vec<u8> {
        let Ok(op) = MetadataOp::decode(body) else {
            return Vec::new();
        };
        if op.operation_code() != header.operation {
            return Vec::new();
        }
        let context = ApplyContext {
            timestamp_micros: header.timestamp,
            op_number: header.op,
            view: header.view,
            entropy: header.nonce,
            client: header.client,
            // A context beyond any session id names no session.
            session: u64::try_from(header.context).unwrap_or(u64::MAX),
        };
        let reply = self.state.apply_request(&op, &context);
        if reply.is_ok() && changes_access(&op) {
            self.access_version += 1;
        }
        reply.encode()
    }

    fn digest(&self) -> u128 {
        self.state.digest()
    }

    fn snapshot(&self) -> Vec<u8> {
        self.state.encode_state()
    }

    /// Replaces the state only once the whole snapshot decoded and passed every
    /// invariant check of [`MetadataState::decode_state`].
    fn restore(&mut self, bytes: &[u8]) -> Result<(), crate::codec::DecodeError> {
        self.state = MetadataState::decode_state(bytes)?;
        self.access_version += 1;
        Ok(())
    }

    fn validate_request(&self, operation: u8, body: &[u8]) -> bool {
        Self::validate(operation, body)
    }
}

/// Whether `op`, applied successfully, may change a session or what it may do.
fn changes_access(op: &MetadataOp) -> bool {
    matches!(
        op,
        MetadataOp::LoginUser { .. }
            | MetadataOp::LoginWithPersonalAccessToken { .. }
            | MetadataOp::UpdateUser { .. }
            | MetadataOp::DeleteUser { .. }
            | MetadataOp::UpdatePermissions { .. }
            | MetadataOp::DeleteStream { .. }
    )
}
