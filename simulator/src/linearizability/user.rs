//! The user-name register model: one object per user name, a metadata object that
//! either holds a user (by the id the cluster gave it) or does not.
//!
//! Sequential rules: a create of a free name takes it and answers the new user's id; of
//! a taken name, `NameAlreadyExists`. A delete naming the user the name holds frees it
//! (`Deleted`); any other delete is `UserNotFound`.
//!
//! An ambiguous create that takes effect holds a user whose id no answer told: the slot
//! is [`UserSlot::Unknown`]. A delete never matches it, which rests on two facts the
//! workload must keep: the cluster never reuses a user id, and a deleter names only ids
//! some create answered. An id a create answered belongs to that create's user, so the
//! unknown user (another create's) never has it.
//!
//! Does not model: the id counter (ids are compared, not predicted: several names share
//! it), users reached by id rather than by name, passwords and permissions.

use super::Model;

/// What a client asks of a user name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserInput {
    /// Create a user with this name.
    Create,
    /// Delete the user `user_id`, which had this name.
    Delete {
        /// The user's id, as a create answered it.
        user_id: u32,
    },
}

/// What the cluster answers about a user name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UserOutput {
    /// Created, with this id.
    Created {
        /// The new user's id.
        user_id: u32,
    },
    /// A create of a taken name, refused.
    NameAlreadyExists,
    /// Deleted.
    Deleted,
    /// A delete of a user the name does not hold, refused.
    UserNotFound,
}

/// The user-name register's sequential specification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserModel;

/// The user a taken name holds (the state is `Option<UserSlot>`: None = free).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UserSlot {
    /// Created by a create that answered this id.
    Known(u32),
    /// Created by an ambiguous create: the id is not known.
    Unknown,
}

impl Model for UserModel {
    type State = Option<UserSlot>;
    type Input = UserInput;
    type Output = UserOutput;

    fn kind(&self) -> &'static str {
        "user name"
    }

    fn init(&self) -> Option<UserSlot> {
        None
    }

    fn step(
        &self,
        state: &Option<UserSlot>,
        input: &UserInput,
        output: Option<&UserOutput>,
    ) -> Option<Option<UserSlot>> {
        let holds = |user_id: u32| *state == Some(UserSlot::Known(user_id));
        match (input, output) {
            // The id is the cluster's to choose (one counter for every name): any is
            // accepted, and remembered for the deletes that name it.
            (UserInput::Create, Some(UserOutput::Created { user_id })) if state.is_none() => {
                Some(Some(UserSlot::Known(*user_id)))
            }
            (UserInput::Create, None) if state.is_none() => Some(Some(UserSlot::Unknown)),
            (UserInput::Create, None | Some(UserOutput::NameAlreadyExists)) if state.is_some() => Some(*state),
            (UserInput::Delete { user_id }, None | Some(UserOutput::Deleted)) if holds(*user_id) => Some(None),
            (UserInput::Delete { user_id }, None | Some(UserOutput::UserNotFound)) if !holds(*user_id) => Some(*state),
            _ => None,
        }
    }

    fn is_read(&self, _input: &UserInput) -> bool {
        false
    }
}
