//! The model of one consumer group's offset on one partition, with the owner fence:
//! which member owns the partition for the group (at which generation), and the offset
//! the group stored.
//!
//! Why an object of its own: it shares nothing with the partition's log but one check
//! (a stored offset must not be past the log's next offset). Checked with the log, its
//! unknown outcomes multiplied the log's in the search (a run whose partition history
//! held seven unknown sends and five unknown owner operations ran out of a million
//! states); apart, each is small. The one shared check is kept by the workload: it
//! stores only offsets at or below a next offset an answer showed before the request
//! was sent, so a correct cluster never answers `OffsetBeyondLog`, and this model
//! takes that answer as a violation.
//!
//! Does not model: single consumers' offsets (no fence), or offsets past the log.

use super::Model;

/// An operation on a group's offset and owner on one partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupOffsetInput {
    /// A member stores the group's offset (the workload keeps `offset` at or below a
    /// next offset seen before it sent the request).
    Store {
        /// The member.
        member_id: u32,
        /// The owner generation the member believes current.
        generation: u64,
        /// The offset.
        offset: u64,
    },
    /// A member deletes the group's offset.
    Delete {
        /// The member.
        member_id: u32,
        /// The owner generation the member believes current.
        generation: u64,
    },
    /// The partition's ownership for the group goes to a member at a newer generation.
    SetOwner {
        /// The new owner.
        member_id: u32,
        /// Must be above the current generation.
        generation: u64,
    },
}

/// An answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupOffsetOutput {
    /// Done.
    Ok,
    /// The fence refused a member that is not the owner at its generation.
    StaleOwner {
        /// The owner's generation.
        current_generation: u64,
    },
    /// `SetOwner` at a generation not above the current one.
    StaleGeneration,
    /// The offset was past the log's next offset: never right here (see the module docs).
    OffsetBeyondLog {
        /// The next offset the cluster reported.
        next_offset: u64,
    },
}

/// The state: the owner (member, generation), if any, and the stored offset, if any.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct GroupOffsetState {
    /// Who owns the partition for the group, and at which generation.
    pub owner: Option<(u32, u64)>,
    /// The group's stored offset.
    pub offset: Option<u64>,
}

/// The model (see the module docs).
#[derive(Clone, Copy, Debug, Default)]
pub struct GroupOffsetModel;

impl GroupOffsetModel {
    /// The fence: `Err(current generation)` unless the group has no owner or the
    /// member is the owner at its generation.
    fn fence(state: &GroupOffsetState, member_id: u32, generation: u64) -> Result<(), u64> {
        match state.owner {
            None => Ok(()),
            Some(owner) if owner == (member_id, generation) => Ok(()),
            Some((_, current)) => Err(current),
        }
    }
}

impl Model for GroupOffsetModel {
    type State = GroupOffsetState;
    type Input = GroupOffsetInput;
    type Output = GroupOffsetOutput;

    fn kind(&self) -> &'static str {
        "group offset"
    }

    fn init(&self) -> GroupOffsetState {
        GroupOffsetState::default()
    }

    fn step(
        &self,
        state: &GroupOffsetState,
        input: &GroupOffsetInput,
        output: Option<&GroupOffsetOutput>,
    ) -> Option<GroupOffsetState> {
        let (answer, next) = match *input {
            GroupOffsetInput::Store {
                member_id,
                generation,
                offset,
            } => match Self::fence(state, member_id, generation) {
                Err(current_generation) => (GroupOffsetOutput::StaleOwner { current_generation }, state.clone()),
                Ok(()) => (
                    GroupOffsetOutput::Ok,
                    GroupOffsetState {
                        offset: Some(offset),
                        ..state.clone()
                    },
                ),
            },
            GroupOffsetInput::Delete { member_id, generation } => match Self::fence(state, member_id, generation) {
                Err(current_generation) => (GroupOffsetOutput::StaleOwner { current_generation }, state.clone()),
                Ok(()) => (
                    GroupOffsetOutput::Ok,
                    GroupOffsetState {
                        offset: None,
                        ..state.clone()
                    },
                ),
            },
            GroupOffsetInput::SetOwner { member_id, generation } => {
                let current = state.owner.map_or(0, |(_, generation)| generation);
                if generation <= current {
                    (GroupOffsetOutput::StaleGeneration, state.clone())
                } else {
                    (
                        GroupOffsetOutput::Ok,
                        GroupOffsetState {
                            owner: Some((member_id, generation)),
                            ..state.clone()
                        },
                    )
                }
            }
        };
        match output {
            None => Some(next),
            Some(output) if *output == answer => Some(next),
            Some(_) => None,
        }
    }

    fn is_read(&self, _input: &GroupOffsetInput) -> bool {
        false
    }
}
