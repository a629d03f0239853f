//! The consumer-group membership model: one object per consumer group, a metadata
//! object holding its members and its generation.
//!
//! Sequential rules: a join of a member already in is `AlreadyMember` and changes
//! nothing; otherwise the member is added, the generation goes up by one and the answer
//! names it. A leave of a member not in is `MemberNotFound`; otherwise the member is
//! removed and the generation goes up by one.
//!
//! Does not model: the group's creation and deletion (the workload checks a group's
//! history from its creation, with the generation it was created at), the metadata
//! plane's other objects, or which partitions a member owns (the partition model's
//! `SetOwner` holds that).

use std::collections::BTreeSet;

use super::Model;

/// What a client asks of a consumer group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupInput {
    /// Add a member.
    Join {
        /// The member joining.
        member_id: u32,
    },
    /// Remove a member.
    Leave {
        /// The member leaving.
        member_id: u32,
    },
}

/// What a consumer group answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupOutput {
    /// Joined; the group is now at `generation`.
    Joined {
        /// The generation after the join.
        generation: u64,
    },
    /// Left; the group is now at `generation`.
    Left {
        /// The generation after the leave.
        generation: u64,
    },
    /// A join of a member already in, refused.
    AlreadyMember,
    /// A leave of a member not in, refused.
    MemberNotFound,
}

/// The consumer group's sequential specification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupModel {
    /// The group's generation when its history starts (with no members).
    pub initial_generation: u64,
}

/// A consumer group's members and generation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GroupState {
    members: BTreeSet<u32>,
    generation: u64,
}

impl Model for GroupModel {
    type State = GroupState;
    type Input = GroupInput;
    type Output = GroupOutput;

    fn kind(&self) -> &'static str {
        "consumer group"
    }

    fn init(&self) -> GroupState {
        GroupState {
            members: BTreeSet::new(),
            generation: self.initial_generation,
        }
    }

    fn step(&self, state: &GroupState, input: &GroupInput, output: Option<&GroupOutput>) -> Option<GroupState> {
        let mut next = state.clone();
        let answer = match *input {
            GroupInput::Join { member_id } => {
                if next.members.insert(member_id) {
                    next.generation += 1;
                    GroupOutput::Joined {
                        generation: next.generation,
                    }
                } else {
                    GroupOutput::AlreadyMember
                }
            }
            GroupInput::Leave { member_id } => {
                if next.members.remove(&member_id) {
                    next.generation += 1;
                    GroupOutput::Left {
                        generation: next.generation,
                    }
                } else {
                    GroupOutput::MemberNotFound
                }
            }
        };
        if output.is_some_and(|output| *output != answer) {
            return None;
        }
        Some(next)
    }

    fn is_read(&self, _input: &GroupInput) -> bool {
        false
    }
}
