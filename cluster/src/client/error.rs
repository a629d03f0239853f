//! What a [`Client`](super::Client) call can fail with, and what the caller should do
//! about it.
//!
//! Two families: *transport* outcomes (the cluster never took the request, or may have
//! taken it but no answer came back within the budget, or a node refused to act for
//! this session), and *committed answers* (the cluster applied the request and the
//! state machine said no: a name already taken, an offset beyond the log). The second
//! family is final and the same whichever node is asked again.

use std::fmt;
use std::net::SocketAddr;

use crate::metadata::MetadataReply;
use crate::partition::PartitionReply;

/// Why a client call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The request budget ran out and every copy that reached a node was refused
    /// `TransientNotAccepted` (or never left this process): the cluster never took it.
    /// Sending it again is safe.
    NotAccepted {
        /// The group the request was for.
        group: u64,
        /// Its request number.
        request: u64,
        /// The budget that ran out, in milliseconds.
        budget_ms: u64,
        /// The last thing that went wrong, for the operator.
        last: Option<String>,
    },
    /// The request budget ran out while some copy may have been taken (written to a
    /// node that never answered, or answered `TransientNotCommitted`): the outcome is
    /// unknown. Sending the same data again as a new request may apply it twice.
    NotCommitted {
        /// The group the request was for.
        group: u64,
        /// Its request number.
        request: u64,
        /// The budget that ran out, in milliseconds.
        budget_ms: u64,
        /// The last thing that went wrong, for the operator.
        last: Option<String>,
    },
    /// The session's user lacks the permission the request needs. Final.
    PermissionDenied {
        /// The group the request was for.
        group: u64,
        /// The node (roster index) that refused.
        node: usize,
    },
    /// No session to act in: never logged in, the session was refused when binding it
    /// on another node, or its user was deleted or deactivated. Log in again.
    Unauthenticated {
        /// The group the request was for.
        group: u64,
        /// The node (roster index) that refused, if one did.
        node: Option<usize>,
        /// Why, in words.
        why: &'static str,
    },
    /// The metadata state machine applied the op and answered with an error outcome
    /// (committed: asking again gives the same answer).
    Metadata {
        /// The metadata op number it was applied at (0 for answers that are not ops).
        op: u64,
        /// The answer.
        reply: MetadataReply,
    },
    /// The partition state machine applied the op and answered with an error outcome.
    Partition {
        /// The partition's group.
        group: u64,
        /// The answer.
        reply: PartitionReply,
    },
    /// A node could not be reached (status requests, which go to one node only).
    Unreachable {
        /// The node's roster index.
        node: usize,
        /// Its client address.
        address: SocketAddr,
        /// What the operating system or the stream said.
        error: String,
    },
    /// A node did not answer a status request in time.
    Timeout {
        /// The node's roster index.
        node: usize,
        /// Its client address.
        address: SocketAddr,
        /// How long the client waited, in milliseconds.
        waited_ms: u64,
    },
    /// A node answered with a body that does not decode as the answer to the request:
    /// a node of another version, or a bug.
    UnexpectedReply {
        /// The node's roster index.
        node: usize,
        /// The group the request was for.
        group: u64,
        /// What did not fit.
        what: String,
    },
    /// The call itself is invalid (empty roster, batch too large, unknown node index).
    InvalidRequest(String),
    /// A node refused the request as malformed: its operation is unknown to the group,
    /// or its body does not decode as that operation's (a client of another version).
    /// Never taken; sending it again gets the same answer.
    Malformed {
        /// The group the request was for.
        group: u64,
        /// The node (roster index) that refused.
        node: usize,
    },
    /// The node refused to try the login: too many failed logins lately from this
    /// address or for this user. Never taken; try again after a pause.
    Throttled {
        /// The node (roster index) that refused.
        node: usize,
    },
}

impl Error {
    /// Whether the request certainly had no effect, so sending it again is safe.
    pub fn is_safe_to_resend(&self) -> bool {
        matches!(
            self,
            Error::NotAccepted { .. }
                | Error::Unauthenticated { .. }
                | Error::PermissionDenied { .. }
                | Error::Unreachable { .. }
                | Error::Timeout { .. }
                | Error::InvalidRequest(_)
                | Error::Malformed { .. }
                | Error::Throttled { .. }
        )
    }
}

fn last_suffix(last: &Option<String>) -> String {
    match last {
        Some(last) => format!(" (last: {last})"),
        None => String::new(),
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotAccepted {
                group,
                request,
                budget_ms,
                last,
            } => write!(
                f,
                "request {request} to group {group} was not accepted by any node within {budget_ms} ms{}: \
                 the cluster never took it (no primary reachable, or a view change in progress); \
                 sending it again is safe",
                last_suffix(last)
            ),
            Error::NotCommitted {
                group,
                request,
                budget_ms,
                last,
            } => write!(
                f,
                "request {request} to group {group} got no answer within {budget_ms} ms{}: \
                 outcome unknown, it may or may not have been applied; sending it again may append it twice",
                last_suffix(last)
            ),
            Error::PermissionDenied { group, node } => write!(
                f,
                "node {node} refused the request to group {group}: permission denied \
                 (the logged-in user lacks the permission it needs)"
            ),
            Error::Unauthenticated { group, node, why } => match node {
                Some(node) => write!(
                    f,
                    "node {node} refused the request to group {group}: unauthenticated ({why}); log in again"
                ),
                None => write!(
                    f,
                    "request to group {group} not sent: unauthenticated ({why}); log in first"
                ),
            },
            Error::Metadata { op, reply } => {
                write!(f, "the cluster answered {reply:?}")?;
                if *op != 0 {
                    write!(f, " (committed at metadata op {op})")?;
                }
                Ok(())
            }
            Error::Partition { group, reply } => write!(f, "partition group {group} answered {reply:?}"),
            Error::Unreachable { node, address, error } => write!(f, "node {node} ({address}) unreachable: {error}"),
            Error::Timeout {
                node,
                address,
                waited_ms,
            } => write!(f, "node {node} ({address}) did not answer within {waited_ms} ms"),
            Error::UnexpectedReply { node, group, what } => {
                write!(f, "node {node} sent an unexpected answer for group {group}: {what}")
            }
            Error::InvalidRequest(why) => write!(f, "invalid request: {why}"),
            Error::Malformed { group, node } => write!(
                f,
                "node {node} refused the request to group {group} as malformed: the operation is unknown to it, or \
                 the body does not decode as that operation's (a client and cluster of different versions?); \
                 it was not taken"
            ),
            Error::Throttled { node } => write!(
                f,
                "node {node} refused to try the login: too many failed logins lately from this address or for this \
                 user; it was not tried; wait a minute and try again"
            ),
        }
    }
}

impl std::error::Error for Error {}
