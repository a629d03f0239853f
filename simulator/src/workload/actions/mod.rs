//! The actions: one module per action, each exposing the same items, and one macro
//! that lists them and generates [`Action`] and its dispatch.
//!
//! Every action module exposes:
//!
//! | item | what it is |
//! |---|---|
//! | `NAME: &str` | the action's name in reports and failures ("CreateStream") |
//! | `OUTCOMES: &[Outcome]` | every outcome the action's requests can legitimately produce, its success (the outcome it exists to produce) first |
//! | `generate(scope, rng, aim) -> Option<Plan>` | requests the shadow predicts will produce `aim`, or `None` if the client cannot aim there now |
//! | `predict(scope, request) -> OutcomeSet` | what the request answers from the state the shadow models (one outcome unless other clients may change it) |
//! | `observe(shadow, answered)` | fold a committed reply into the shadow, noting what contradicts it |
//!
//! `predict` mirrors the order in which the state machine checks a request, so when
//! two errors apply the prediction names the one the state machine reports. `observe`
//! changes the shadow only for a success (a failed op changes nothing; the retention an
//! applied partition op may run is folded in by the workload for every outcome), and
//! notes a success of the wrong shape or an id, offset or message other than the
//! shadow's (`Shadow::note_mismatch`; stream and user ids, which every client draws
//! from one counter, go through `Shadow::assign_stream_id` / `assign_user_id`).
//!
//! `predict` and `observe` panic if handed another action's request: the workload
//! dispatches with the action that generated it, so that is a bug in the workload,
//! never input from the network (replies are decoded by the request's kind first).

use cluster::metadata::{MetadataOp, MetadataReply};
use cluster::partition::{PartitionOp, PartitionReply, PollReply, PollRequest};

use super::outcome::{Outcome, OutcomeSet};
use super::request::{Answered, PartitionAt, Plan, Reply, Request};
use super::scope::Scope;
use super::shadow::Shadow;
use crate::rng::SimRng;

/// Lists the actions as `Variant => module`. Generates `pub mod module;` for each (so
/// an action listed without a module file does not compile), the [`Action`] enum in
/// list order, and the dispatch functions (a module missing one of the items does not
/// compile either).
macro_rules! actions {
    ($($(#[$doc:meta])* $variant:ident => $module:ident,)+) => {
        $(pub mod $module;)+

        /// One action of the workload.
        ///
        /// The declaration order is part of the seed contract: a weighted or uniform
        /// draw of an action maps a number to a position in [`Action::ALL`], so inserting
        /// or reordering actions makes every recorded seed replay a different workload.
        /// APPEND new actions at the end, never in between (the first three positions
        /// and the first appended after the metadata actions are pinned by compile-time
        /// assertions below).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(u8)]
        pub enum Action {
            $($(#[$doc])* $variant,)+
        }

        impl Action {
            /// Every action, in declaration order.
            pub const ALL: &'static [Action] = &[$(Action::$variant,)+];

            /// How many actions there are.
            pub const COUNT: usize = Action::ALL.len();

            /// The action's name, as in reports and failures.
            pub fn name(self) -> &'static str {
                match self {
                    $(Action::$variant => $module::NAME,)+
                }
            }

            /// Every outcome the action's requests can legitimately produce.
            pub fn outcomes(self) -> &'static [Outcome] {
                match self {
                    $(Action::$variant => $module::OUTCOMES,)+
                }
            }

            /// Requests the shadow predicts will produce `aim`, or `None` if the client
            /// cannot aim there now.
            pub fn generate(self, scope: &Scope<'_>, rng: &mut SimRng, aim: Outcome) -> Option<Plan> {
                match self {
                    $(Action::$variant => $module::generate(scope, rng, aim),)+
                }
            }

            /// What `request` answers from the modelled state. Panics if `request` is
            /// not this action's kind.
            pub fn predict(self, scope: &Scope<'_>, request: &Request) -> OutcomeSet {
                match self {
                    $(Action::$variant => $module::predict(scope, request),)+
                }
            }

            /// Fold a committed reply into the shadow. Panics if the request is not this
            /// action's kind.
            pub fn observe(self, shadow: &mut Shadow, answered: &Answered<'_>) {
                match self {
                    $(Action::$variant => $module::observe(shadow, answered),)+
                }
            }
        }
    };
}

/// Destructure `request` as this action's metadata op, binding its fields (a request
/// of another action is a workload bug and panics): `let_metadata_op!(DeleteStream {
/// stream_id } = request);`
macro_rules! let_metadata_op {
    ($variant:ident { $($fields:tt)* } = $request:expr) => {
        let cluster::metadata::MetadataOp::$variant { $($fields)* } = super::metadata_op(NAME, $request) else {
            super::wrong_op(NAME, $request)
        };
    };
}

/// Destructure `answered` as this action's metadata op, binding its fields, and its
/// reply as `$reply`: `let_metadata_answer!(DeleteStream { stream_id }, reply = answered);`
macro_rules! let_metadata_answer {
    ($variant:ident { $($fields:tt)* }, $reply:ident = $answered:expr) => {
        let (op, $reply) = super::metadata_answer(NAME, $answered);
        let cluster::metadata::MetadataOp::$variant { $($fields)* } = op else {
            super::wrong_op(NAME, $answered.request)
        };
    };
}

/// The plan of one request of this action's metadata op, built from fields in scope:
/// `metadata_plan!(DeleteStream { stream_id })`.
macro_rules! metadata_plan {
    ($variant:ident { $($fields:tt)* }) => {
        Some(cluster::metadata::MetadataOp::$variant { $($fields)* }.into())
    };
}

/// The plan of one request of a partition op to the partition `$at`, built from fields
/// in scope: `partition_plan!(at, DeleteSegments { count })`.
macro_rules! partition_plan {
    ($at:expr, $variant:ident { $($fields:tt)* }) => {
        Some(
            crate::workload::request::Request::Partition {
                at: $at,
                op: cluster::partition::PartitionOp::$variant { $($fields)* },
            }
            .into(),
        )
    };
}

/// The shadow's topic `$stream_id`/`$topic_id` (references, as an op's fields bind), or
/// return from `predict` with the outcome its absence gives (see
/// `Shadow::existing_topic`): `let topic = topic_or_return!(scope, stream_id, topic_id);`
macro_rules! topic_or_return {
    ($scope:expr, $stream_id:expr, $topic_id:expr) => {
        match $scope.shadow.existing_topic(*$stream_id, *$topic_id) {
            Ok(topic) => topic,
            Err(missing) => return missing.into(),
        }
    };
}

/// An action's declared outcomes: `outcomes!(Ok, StreamNotFound)`.
macro_rules! outcomes {
    ($($outcome:ident),* $(,)?) => {
        &[$(crate::workload::outcome::Outcome::$outcome),*]
    };
}

mod fence;

// The order is part of the seed contract: APPEND ONLY (see `Action`).
actions! {
    /// Create a stream.
    CreateStream => create_stream,
    /// Rename a stream.
    UpdateStream => update_stream,
    /// Delete a stream with its topics, partitions and groups.
    DeleteStream => delete_stream,
    /// Create a topic (and its partitions) in a stream.
    CreateTopic => create_topic,
    /// Rename a topic, change its durability or expiry.
    UpdateTopic => update_topic,
    /// Delete a topic with its partitions and groups.
    DeleteTopic => delete_topic,
    /// Create a user.
    CreateUser => create_user,
    /// Rename, activate or deactivate a user.
    UpdateUser => update_user,
    /// Delete a user with its tokens.
    DeleteUser => delete_user,
    /// Replace a user's password.
    ChangePassword => change_password,
    /// Replace a user's permissions.
    UpdatePermissions => update_permissions,
    /// Create a personal access token.
    CreatePersonalAccessToken => create_personal_access_token,
    /// Delete a personal access token.
    DeletePersonalAccessToken => delete_personal_access_token,
    /// Create a consumer group on a topic.
    CreateConsumerGroup => create_consumer_group,
    /// Delete a consumer group.
    DeleteConsumerGroup => delete_consumer_group,
    /// Log in with a username and password (appended: the order is the seed contract).
    LoginUser => login_user,
    /// Append a batch of messages to a partition.
    SendMessages => send_messages,
    /// Poll a partition's messages (a query, no consensus).
    PollMessages => poll_messages,
    /// Store a consumer's offset in a partition (a group's by its owner).
    StoreConsumerOffset => store_consumer_offset,
    /// Delete a consumer's offset in a partition.
    DeleteConsumerOffset => delete_consumer_offset,
    /// A former owner of a partition writes its group's offset after a hand-off.
    StoreStaleOwnerOffset => store_stale_owner_offset,
    /// Add a member to a consumer group.
    JoinConsumerGroup => join_consumer_group,
    /// Remove a member from a consumer group.
    LeaveConsumerGroup => leave_consumer_group,
    /// Hand a partition to a group member at the group's current generation.
    SetGroupOwner => set_group_owner,
    /// Append partitions to a topic.
    CreatePartitions => create_partitions,
    /// Remove a topic's highest partitions.
    DeletePartitions => delete_partitions,
    /// Purge every partition of every topic of a stream, one request each.
    PurgeStream => purge_stream,
    /// Purge every partition of a topic, one request each.
    PurgeTopic => purge_topic,
    /// Delete a partition's oldest sealed segments.
    DeleteSegments => delete_segments,
    /// Send a batch over the payload budget (refused; a separate action so a plane can
    /// weight these half-megabyte requests apart from ordinary sends).
    SendOversizedBatch => send_oversized_batch,
    /// Log in as one of the client's users, make one request as that user (allowed or
    /// denied by its permissions), log back in as root.
    RequestAsUser => request_as_user,
}

// Pins the start of the order and the first action appended after the metadata plane's:
// an insertion before these shifts them and fails here.
const _: () = {
    assert!(Action::CreateStream as u8 == 0);
    assert!(Action::UpdateStream as u8 == 1);
    assert!(Action::DeleteStream as u8 == 2);
    assert!(Action::LoginUser as u8 == 15);
    assert!(Action::SendMessages as u8 == 16);
};

/// Called by an action's `predict` or `observe` when handed another action's request:
/// a bug in the caller (see the module docs).
fn wrong_op(action: &str, request: &Request) -> ! {
    panic!("{action} was handed another action's request: {request:?}")
}

/// The metadata op of `request`; panics (a workload bug) for a partition request.
fn metadata_op<'r>(action: &str, request: &'r Request) -> &'r MetadataOp {
    match request {
        Request::Metadata(op) => op,
        other => wrong_op(action, other),
    }
}

/// The metadata op and reply of `answered`; panics (a workload bug) for another kind.
fn metadata_answer<'r>(action: &str, answered: &Answered<'r>) -> (&'r MetadataOp, &'r MetadataReply) {
    match (answered.request, answered.reply) {
        (Request::Metadata(op), Reply::Metadata(reply)) => (op, reply),
        (request, _) => wrong_op(action, request),
    }
}

/// The partition and op of `request`; panics (a workload bug) for another kind.
fn partition_op<'r>(action: &str, request: &'r Request) -> (PartitionAt, &'r PartitionOp) {
    match request {
        Request::Partition { at, op } => (*at, op),
        other => wrong_op(action, other),
    }
}

/// The partition, op and reply of `answered`; panics (a workload bug) for another kind.
fn partition_answer<'r>(action: &str, answered: &Answered<'r>) -> (PartitionAt, &'r PartitionOp, PartitionReply) {
    match (answered.request, answered.reply) {
        (Request::Partition { at, op }, Reply::Partition(reply)) => (*at, op, *reply),
        (request, _) => wrong_op(action, request),
    }
}

/// The partition, poll and reply of `answered`; panics (a workload bug) for another kind.
fn poll_answer<'r>(action: &str, answered: &Answered<'r>) -> (PartitionAt, &'r PollRequest, &'r PollReply) {
    match (answered.request, answered.reply) {
        (Request::Poll { at, poll }, Reply::Poll(reply)) => (*at, poll, reply),
        (request, _) => wrong_op(action, request),
    }
}

/// Whether `reply` is `Ok` (the success reply of the actions that create nothing);
/// another success reply is noted as a mismatch, an error reply ignored.
fn replied_ok(shadow: &mut Shadow, action: &str, reply: &MetadataReply) -> bool {
    if *reply == MetadataReply::Ok {
        return true;
    }
    unexpected_reply(shadow, action, reply);
    false
}

/// Note a metadata success reply that is not the one `action` answers with. Error
/// replies change nothing and are ignored here (the workload classifies them).
fn unexpected_reply(shadow: &mut Shadow, action: &str, reply: &MetadataReply) {
    if reply.is_ok() {
        shadow.note_mismatch(format!("{action} answered {reply:?}, not its success reply"));
    }
}

/// Note a partition success reply that is not the one `action` answers with.
fn unexpected_partition_reply(shadow: &mut Shadow, action: &str, reply: &PartitionReply) {
    if reply.outcome().is_success() {
        shadow.note_mismatch(format!("{action} answered {reply:?}, not its success reply"));
    }
}

/// The prediction for a create that a global limit may stop: `Ok` when it fits,
/// `LimitReached` when it cannot, both when other clients decide (see `Scope::room`).
fn within(room: super::scope::Room) -> OutcomeSet {
    match room {
        super::scope::Room::Fits => Outcome::Ok.into(),
        super::scope::Room::Full => Outcome::LimitReached.into(),
        super::scope::Room::Maybe => OutcomeSet::one(Outcome::Ok).with(Outcome::LimitReached),
    }
}
