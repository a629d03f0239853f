//! The metadata actions: one module per action, each exposing the same items, and one
//! macro that lists them and generates [`Action`] and its dispatch.
//!
//! Every action module exposes:
//!
//! | item | what it is |
//! |---|---|
//! | `NAME: &str` | the action's name in reports and failures ("CreateStream") |
//! | `OUTCOMES: &[Outcome]` | every outcome the action can legitimately produce |
//! | `matches(op) -> bool` | whether `op` is this action's kind of op |
//! | `generate(shadow, rng, aim) -> Option<MetadataOp>` | an op the shadow predicts will produce `aim`, or `None` if the shadow cannot aim there now |
//! | `predict(shadow, op) -> Outcome` | what applying `op` to the state the shadow models answers |
//! | `observe(shadow, op, reply)` | fold a committed reply into the shadow |
//!
//! `predict` mirrors the order in which `MetadataState::apply` checks an op, so when two
//! errors apply the prediction names the one the state machine reports. `observe`
//! changes the shadow only for a success (a failed op changes nothing), and notes a
//! success reply of the wrong shape (`Shadow::note_reply_mismatch`) or an id other
//! than predicted (`Shadow::note_id_mismatch`).
//!
//! `predict` and `observe` panic if handed another action's op: the caller dispatches
//! with the action that generated the op (or [`Action::of`]), so that is a bug in the
//! caller, never input from the network.

use cluster::metadata::{MetadataOp, MetadataReply, Outcome};

use super::shadow::Shadow;
use crate::rng::SimRng;

/// Lists the actions as `Variant => module`. Generates `pub mod module;` for each (so
/// an action listed without a module file does not compile), the [`Action`] enum in
/// list order, and the dispatch functions (a module missing one of the items does not
/// compile either).
macro_rules! actions {
    ($($(#[$doc:meta])* $variant:ident => $module:ident,)+) => {
        $(pub mod $module;)+

        /// One metadata action.
        ///
        /// The declaration order is part of the seed contract: a weighted or uniform
        /// draw of an action maps a number to a position in [`Action::ALL`], so inserting
        /// or reordering actions makes every recorded seed replay a different workload.
        /// APPEND new actions at the end, never in between (the first three positions
        /// are pinned by a compile-time assertion below).
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

            /// Every outcome the action can legitimately produce.
            pub fn outcomes(self) -> &'static [Outcome] {
                match self {
                    $(Action::$variant => $module::OUTCOMES,)+
                }
            }

            /// Whether `op` is this action's kind of op.
            pub fn matches(self, op: &MetadataOp) -> bool {
                match self {
                    $(Action::$variant => $module::matches(op),)+
                }
            }

            /// The action whose kind of op `op` is (`None` for the ops no action sends,
            /// such as the logins).
            pub fn of(op: &MetadataOp) -> Option<Action> {
                Action::ALL.iter().copied().find(|action| action.matches(op))
            }

            /// An op the shadow predicts will produce `aim`, or `None` if it cannot aim
            /// there now.
            pub fn generate(self, shadow: &Shadow, rng: &mut SimRng, aim: Outcome) -> Option<MetadataOp> {
                match self {
                    $(Action::$variant => $module::generate(shadow, rng, aim),)+
                }
            }

            /// What applying `op` to the modelled state answers. Panics if `op` is not
            /// this action's kind.
            pub fn predict(self, shadow: &Shadow, op: &MetadataOp) -> Outcome {
                match self {
                    $(Action::$variant => $module::predict(shadow, op),)+
                }
            }

            /// Fold a committed reply to `op` into the shadow. Panics if `op` is not
            /// this action's kind.
            pub fn observe(self, shadow: &mut Shadow, op: &MetadataOp, reply: &MetadataReply) {
                match self {
                    $(Action::$variant => $module::observe(shadow, op, reply),)+
                }
            }
        }
    };
}

// The order is part of the seed contract: APPEND ONLY (see `Action`).
actions! {
    /// Create a stream.
    CreateStream => create_stream,
    /// Rename a stream.
    UpdateStream => update_stream,
    /// Delete a stream with its topics and groups.
    DeleteStream => delete_stream,
    /// Create a topic in a stream.
    CreateTopic => create_topic,
    /// Rename a topic, change its durability or expiry.
    UpdateTopic => update_topic,
    /// Delete a topic with its groups.
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
}

// Pins the start of the order: an insertion before these shifts them and fails here.
const _: () = {
    assert!(Action::CreateStream as u8 == 0);
    assert!(Action::UpdateStream as u8 == 1);
    assert!(Action::DeleteStream as u8 == 2);
};

/// Called by an action's `predict` or `observe` when handed another action's op: a bug
/// in the caller (see the module docs).
fn wrong_op(action: &str, op: &MetadataOp) -> ! {
    panic!("{action} was handed another action's op: {op:?}")
}

/// Note a success reply that is not the one `action` answers with. Error replies
/// change nothing and are ignored here (the workload classifies them).
fn unexpected_reply(shadow: &mut Shadow, action: &str, reply: &MetadataReply) {
    if reply.is_ok() {
        shadow.note_reply_mismatch(format!("{action} answered {reply:?}, not its success reply"));
    }
}
