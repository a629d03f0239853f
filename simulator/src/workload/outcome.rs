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

/// `Outcome`, its `ALL` and its `From` the metadata and partition outcomes, from the
/// metadata plane's error list (`cluster::with_metadata_errors!`), the partition plane's
/// outcomes (`cluster::with_partition_outcomes!`) and the classes only the workload has.
macro_rules! outcome_classes {
    (partition [$($partition:ident),*] $( $(#[$doc:meta])* $other:ident, )* [$($error:ident),*]) => {
        /// The class of one reply. Declaration order is the bit order of [`OutcomeSet`]
        /// and the order reports list outcomes in; append new variants at the end.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Outcome {
            /// A success of either plane (`MetadataReply` success variants,
            /// `PartitionReply::Ok`).
            Ok,
            $(
                #[doc = concat!("Metadata: [`metadata::Outcome::", stringify!($error), "`].")]
                $error,
            )*
            $(
                #[doc = concat!("Partition: [`PartitionOutcome::", stringify!($partition), "`].")]
                $partition,
            )*
            $( $(#[$doc])* $other, )*
        }

        impl Outcome {
            /// Every outcome, in declaration order.
            pub const ALL: [Outcome; 1
                + [$(stringify!($error)),*].len()
                + [$(stringify!($partition)),*].len()
                + [$(stringify!($other)),*].len()] =
                [Outcome::Ok, $(Outcome::$error,)* $(Outcome::$partition,)* $(Outcome::$other,)*];

            /// Its bit in an [`OutcomeSet`].
            fn bit(self) -> u64 {
                1 << (self as u32)
            }
        }

        impl From<metadata::Outcome> for Outcome {
            fn from(outcome: metadata::Outcome) -> Self {
                // Exhaustive on purpose: a new metadata outcome must be given a class here.
                match outcome {
                    metadata::Outcome::Ok => Outcome::Ok,
                    $(metadata::Outcome::$error => Outcome::$error,)*
                    metadata::Outcome::Unauthenticated => Outcome::Unauthenticated,
                    metadata::Outcome::PermissionDenied => Outcome::PermissionDenied,
                    metadata::Outcome::SessionRefused => Outcome::SessionRefused,
                }
            }
        }

        impl From<PartitionOutcome> for Outcome {
            fn from(outcome: PartitionOutcome) -> Self {
                match outcome {
                    PartitionOutcome::Ok => Outcome::Ok,
                    $(PartitionOutcome::$partition => Outcome::$partition,)*
                }
            }
        }
    };
}

/// [`outcome_classes!`] with the partition plane's list first, then the metadata
/// plane's (each list comes from the cluster crate's own enum).
macro_rules! outcome_classes_of_both_planes {
    ($( $(#[$doc:meta])* $other:ident, )* [$($partition:ident),*]) => {
        cluster::with_metadata_errors!(outcome_classes! {
            partition [$($partition),*] $( $(#[$doc])* $other, )*
        });
    };
}

cluster::with_partition_outcomes!(outcome_classes_of_both_planes! {
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
});

// Every outcome has a bit in the set's u64.
const _: () = assert!(Outcome::ALL.len() <= u64::BITS as usize);

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
