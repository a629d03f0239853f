//! [`Outcome`]: the one class every reply is judged by, whichever plane answered it, and
//! [`OutcomeSet`]: what a prediction allows.
//!
//! Models: the metadata plane's outcomes ([`cluster::metadata::Outcome`]), the partition
//! plane's ([`PartitionOutcome`]; its `Ok` is the same `Ok`), and the two answers a poll
//! can give (messages or none), and the refusals a node answers for the client's
//! session (`PermissionDenied`, `Unauthenticated`), flattened into one enum so that actions declare, aim at
//! and count outcomes alike. A prediction is a set: exactly one outcome where the shadow
//! knows everything the answer depends on, several where another client can change it
//! between the send and the commit (a global limit).
//!
//! Does not model: the fields a reply carries (ids, offsets, messages); the actions
//! check those against the shadow when they observe the reply.

use std::fmt;

use cluster::metadata;
use cluster::partition::PartitionOutcome;

/// The class of one reply. Declaration order is the bit order of [`OutcomeSet`] and the
/// order reports list outcomes in; append new variants at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    /// A success of either plane (`MetadataReply` success variants, `PartitionReply::Ok`).
    Ok,
    /// Metadata: the name is taken in its scope.
    NameAlreadyExists,
    /// Metadata: no such stream.
    StreamNotFound,
    /// Metadata: no such topic.
    TopicNotFound,
    /// Metadata: no such user.
    UserNotFound,
    /// Metadata: no such consumer group.
    GroupNotFound,
    /// Metadata: no such token.
    TokenNotFound,
    /// Metadata: the token expired.
    TokenExpired,
    /// Metadata: an invalid name.
    InvalidName,
    /// Metadata: an invalid password.
    InvalidPassword,
    /// Metadata: a partition count out of range.
    InvalidPartitionCount,
    /// Metadata: wrong credentials.
    InvalidCredentials,
    /// Metadata: the user is inactive.
    UserInactive,
    /// Metadata: root cannot be changed that way.
    CannotModifyRoot,
    /// Metadata: a bound was reached.
    LimitReached,
    /// Metadata: the member is already in the group.
    AlreadyMember,
    /// Metadata: the member is not in the group.
    MemberNotFound,
    /// Partition: a batch was appended.
    Appended,
    /// Partition: `DeleteSegments` answered how many segments it dropped.
    SegmentsDeleted,
    /// Partition: a batch with no messages.
    EmptyBatch,
    /// Partition: a batch over its bounds.
    BatchTooLarge,
    /// Partition: a stored offset beyond the log.
    OffsetBeyondLog,
    /// Partition: a group offset write from a member that is not the owner (the fence).
    StaleOwner,
    /// Partition: `SetGroupOwner` at a generation not above the current one.
    StaleGeneration,
    /// Poll: at least one message came back.
    Polled,
    /// Poll: no message came back.
    PolledNothing,
    /// Either plane: the client's session acts as a user that lacks the permission
    /// (metadata: a committed op refused on apply; partition: refused by the node
    /// before anything was prepared).
    PermissionDenied,
    /// Either plane: the client has no session, or its user is gone or inactive.
    Unauthenticated,
    /// A session bind refused (answered by a node, never an applied op).
    SessionRefused,
}

impl Outcome {
    /// Every outcome, in declaration order.
    pub const ALL: [Outcome; 29] = [
        Outcome::Ok,
        Outcome::NameAlreadyExists,
        Outcome::StreamNotFound,
        Outcome::TopicNotFound,
        Outcome::UserNotFound,
        Outcome::GroupNotFound,
        Outcome::TokenNotFound,
        Outcome::TokenExpired,
        Outcome::InvalidName,
        Outcome::InvalidPassword,
        Outcome::InvalidPartitionCount,
        Outcome::InvalidCredentials,
        Outcome::UserInactive,
        Outcome::CannotModifyRoot,
        Outcome::LimitReached,
        Outcome::AlreadyMember,
        Outcome::MemberNotFound,
        Outcome::Appended,
        Outcome::SegmentsDeleted,
        Outcome::EmptyBatch,
        Outcome::BatchTooLarge,
        Outcome::OffsetBeyondLog,
        Outcome::StaleOwner,
        Outcome::StaleGeneration,
        Outcome::Polled,
        Outcome::PolledNothing,
        Outcome::PermissionDenied,
        Outcome::Unauthenticated,
        Outcome::SessionRefused,
    ];

    /// Its bit in an [`OutcomeSet`].
    fn bit(self) -> u64 {
        1 << (self as u32)
    }
}

// Every outcome has a bit in the set's u64.
const _: () = assert!(Outcome::ALL.len() <= u64::BITS as usize);

impl From<metadata::Outcome> for Outcome {
    fn from(outcome: metadata::Outcome) -> Self {
        // Exhaustive on purpose: a new metadata outcome must be given a class here.
        match outcome {
            metadata::Outcome::Ok => Outcome::Ok,
            metadata::Outcome::NameAlreadyExists => Outcome::NameAlreadyExists,
            metadata::Outcome::StreamNotFound => Outcome::StreamNotFound,
            metadata::Outcome::TopicNotFound => Outcome::TopicNotFound,
            metadata::Outcome::UserNotFound => Outcome::UserNotFound,
            metadata::Outcome::GroupNotFound => Outcome::GroupNotFound,
            metadata::Outcome::TokenNotFound => Outcome::TokenNotFound,
            metadata::Outcome::TokenExpired => Outcome::TokenExpired,
            metadata::Outcome::InvalidName => Outcome::InvalidName,
            metadata::Outcome::InvalidPassword => Outcome::InvalidPassword,
            metadata::Outcome::InvalidPartitionCount => Outcome::InvalidPartitionCount,
            metadata::Outcome::InvalidCredentials => Outcome::InvalidCredentials,
            metadata::Outcome::UserInactive => Outcome::UserInactive,
            metadata::Outcome::CannotModifyRoot => Outcome::CannotModifyRoot,
            metadata::Outcome::LimitReached => Outcome::LimitReached,
            metadata::Outcome::AlreadyMember => Outcome::AlreadyMember,
            metadata::Outcome::MemberNotFound => Outcome::MemberNotFound,
            metadata::Outcome::Unauthenticated => Outcome::Unauthenticated,
            metadata::Outcome::PermissionDenied => Outcome::PermissionDenied,
            metadata::Outcome::SessionRefused => Outcome::SessionRefused,
        }
    }
}

impl From<PartitionOutcome> for Outcome {
    fn from(outcome: PartitionOutcome) -> Self {
        match outcome {
            PartitionOutcome::Appended => Outcome::Appended,
            PartitionOutcome::Ok => Outcome::Ok,
            PartitionOutcome::SegmentsDeleted => Outcome::SegmentsDeleted,
            PartitionOutcome::EmptyBatch => Outcome::EmptyBatch,
            PartitionOutcome::BatchTooLarge => Outcome::BatchTooLarge,
            PartitionOutcome::OffsetBeyondLog => Outcome::OffsetBeyondLog,
            PartitionOutcome::StaleOwner => Outcome::StaleOwner,
            PartitionOutcome::StaleGeneration => Outcome::StaleGeneration,
        }
    }
}

/// The outcomes a prediction allows: one where the shadow is exact, several where
/// another client may change the answer (see the module docs). Never empty when made
/// by [`OutcomeSet::one`] and [`OutcomeSet::with`].
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct OutcomeSet(u64);

impl OutcomeSet {
    /// Exactly `outcome`.
    pub fn one(outcome: Outcome) -> Self {
        Self(outcome.bit())
    }

    /// This set and `outcome`.
    pub fn with(self, outcome: Outcome) -> Self {
        Self(self.0 | outcome.bit())
    }

    /// Whether `outcome` is allowed.
    pub fn contains(self, outcome: Outcome) -> bool {
        self.0 & outcome.bit() != 0
    }

    /// The single outcome, if the prediction is exact.
    pub fn exact(self) -> Option<Outcome> {
        (self.0.count_ones() == 1).then(|| self.iter().next()).flatten()
    }

    /// The outcomes, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = Outcome> {
        Outcome::ALL.into_iter().filter(move |outcome| self.contains(*outcome))
    }
}

impl From<Outcome> for OutcomeSet {
    fn from(outcome: Outcome) -> Self {
        Self::one(outcome)
    }
}

impl fmt::Debug for OutcomeSet {
    /// `Ok` for one outcome, `{Ok, LimitReached}` for several.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.exact() {
            Some(outcome) => write!(f, "{outcome:?}"),
            None => f.debug_set().entries(self.iter()).finish(),
        }
    }
}
