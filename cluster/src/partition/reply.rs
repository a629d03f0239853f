//! What applying a partition op answers, its binary codec, and its outcome class.
//!
//! Models: the successes (`Appended` with the batch's first and last offsets, `Ok`,
//! `SegmentsDeleted` with how many segments went)
//! and every error a client can act on: an empty or oversized batch, an offset beyond
//! the log, a stale group owner, a non-increasing owner generation. Replies encode as
//! `[reply code: u8][fields]`; success codes are below [`REPLY_ERROR_CODE_MIN`].
//!
//! Does not model: transport outcomes (not accepted, not committed, redirects) that
//! the request path produces without applying an op, or poll results (a query, answered
//! with a `PollReply`).

use crate::codec::DecodeError;

use crate::codec::{Reader, Writer};

/// The first reply code that is an error; codes are append-only.
pub const REPLY_ERROR_CODE_MIN: u8 = 16;

const CODE_OK: u8 = 0;
const CODE_APPENDED: u8 = 1;
const CODE_SEGMENTS_DELETED: u8 = 2;
const CODE_EMPTY_BATCH: u8 = REPLY_ERROR_CODE_MIN;
const CODE_BATCH_TOO_LARGE: u8 = REPLY_ERROR_CODE_MIN + 1;
const CODE_OFFSET_BEYOND_LOG: u8 = REPLY_ERROR_CODE_MIN + 2;
const CODE_STALE_OWNER: u8 = REPLY_ERROR_CODE_MIN + 3;
const CODE_STALE_GENERATION: u8 = REPLY_ERROR_CODE_MIN + 4;

/// The answer to one applied partition op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionReply {
    /// `SendMessages` succeeded: the batch holds offsets `base_offset..=last_offset`.
    Appended {
        /// The first message's offset.
        base_offset: u64,
        /// The last message's offset.
        last_offset: u64,
    },
    /// Done; nothing to report.
    Ok,
    /// `DeleteSegments` succeeded and dropped `count` segments (possibly 0).
    SegmentsDeleted {
        /// How many segments were dropped.
        count: u32,
    },
    /// `SendMessages` with no messages.
    EmptyBatch,
    /// `SendMessages` with too many messages or payload bytes.
    BatchTooLarge,
    /// A stored offset must be at most the log's next offset.
    OffsetBeyondLog {
        /// The log's next offset when the op applied.
        next_offset: u64,
    },
    /// A group offset write from a member that is not the owner at the current generation.
    StaleOwner {
        /// The group's current owner generation.
        current_generation: u64,
    },
    /// `SetGroupOwner` with a generation not above the current one.
    StaleGeneration,
}

/// Hands `$callback` the partition plane's outcomes other than `Ok` (which both planes
/// share), in declaration order, after whatever tokens it was given:
/// `with_partition_outcomes!(my_macro! { prefix })` expands to
/// `my_macro! { prefix [Appended, ..., StaleGeneration] }`. The one list both
/// [`PartitionOutcome`] and a workload's outcome classes are made from.
#[macro_export]
macro_rules! with_partition_outcomes {
    ($callback:ident ! { $($prefix:tt)* }) => {
        $callback! { $($prefix)* [
            Appended,
            SegmentsDeleted,
            EmptyBatch,
            BatchTooLarge,
            OffsetBeyondLog,
            StaleOwner,
            StaleGeneration
        ] }
    };
}

/// [`PartitionOutcome`] from the list of [`with_partition_outcomes!`]: `Ok` second, as
/// it always was (the derived order is the enum's).
macro_rules! partition_outcome_enum {
    ([$first:ident, $($rest:ident),*]) => {
        /// A reply's class without its fields, for classifying against expectations.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
        pub enum PartitionOutcome {
            #[doc = concat!("See [`PartitionReply::", stringify!($first), "`].")]
            $first,
            /// See [`PartitionReply::Ok`].
            Ok,
            $(
                #[doc = concat!("See [`PartitionReply::", stringify!($rest), "`].")]
                $rest,
            )*
        }
    };
}

with_partition_outcomes!(partition_outcome_enum! {});

impl PartitionOutcome {
    /// Whether the op took effect.
    pub fn is_success(self) -> bool {
        matches!(
            self,
            PartitionOutcome::Appended | PartitionOutcome::Ok | PartitionOutcome::SegmentsDeleted
        )
    }
}

impl PartitionReply {
    /// Its class.
    pub fn outcome(&self) -> PartitionOutcome {
        match self {
            PartitionReply::Appended { .. } => PartitionOutcome::Appended,
            PartitionReply::Ok => PartitionOutcome::Ok,
            PartitionReply::SegmentsDeleted { .. } => PartitionOutcome::SegmentsDeleted,
            PartitionReply::EmptyBatch => PartitionOutcome::EmptyBatch,
            PartitionReply::BatchTooLarge => PartitionOutcome::BatchTooLarge,
            PartitionReply::OffsetBeyondLog { .. } => PartitionOutcome::OffsetBeyondLog,
            PartitionReply::StaleOwner { .. } => PartitionOutcome::StaleOwner,
            PartitionReply::StaleGeneration => PartitionOutcome::StaleGeneration,
        }
    }

    /// `[reply code][fields]`.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        match *self {
            PartitionReply::Appended {
                base_offset,
                last_offset,
            } => {
                w.u8(CODE_APPENDED);
                w.u64(base_offset);
                w.u64(last_offset);
            }
            PartitionReply::Ok => w.u8(CODE_OK),
            PartitionReply::SegmentsDeleted { count } => {
                w.u8(CODE_SEGMENTS_DELETED);
                w.u32(count);
            }
            PartitionReply::EmptyBatch => w.u8(CODE_EMPTY_BATCH),
            PartitionReply::BatchTooLarge => w.u8(CODE_BATCH_TOO_LARGE),
            PartitionReply::OffsetBeyondLog { next_offset } => {
                w.u8(CODE_OFFSET_BEYOND_LOG);
                w.u64(next_offset);
            }
            PartitionReply::StaleOwner { current_generation } => {
                w.u8(CODE_STALE_OWNER);
                w.u64(current_generation);
            }
            PartitionReply::StaleGeneration => w.u8(CODE_STALE_GENERATION),
        }
        w.finish()
    }

    /// The inverse of [`PartitionReply::encode`]; every byte must be used.
    pub fn decode(bytes: &[u8]) -> Result<PartitionReply, DecodeError> {
        let mut r = Reader::new(bytes);
        let reply = match r.u8("reply code")? {
            CODE_OK => PartitionReply::Ok,
            CODE_APPENDED => {
                let base_offset = r.u64("base offset")?;
                let last_offset = r.u64("last offset")?;
                if last_offset < base_offset {
                    return Err(DecodeError::InvalidState {
                        what: "last offset below base offset",
                    });
                }
                PartitionReply::Appended {
                    base_offset,
                    last_offset,
                }
            }
            CODE_SEGMENTS_DELETED => PartitionReply::SegmentsDeleted {
                count: r.u32("segment count")?,
            },
            CODE_EMPTY_BATCH => PartitionReply::EmptyBatch,
            CODE_BATCH_TOO_LARGE => PartitionReply::BatchTooLarge,
            CODE_OFFSET_BEYOND_LOG => PartitionReply::OffsetBeyondLog {
                next_offset: r.u64("next offset")?,
            },
            CODE_STALE_OWNER => PartitionReply::StaleOwner {
                current_generation: r.u64("current generation")?,
            },
            CODE_STALE_GENERATION => PartitionReply::StaleGeneration,
            code => {
                return Err(DecodeError::UnknownCode {
                    field: "reply code",
                    code,
                });
            }
        };
        r.finish()?;
        Ok(reply)
    }
}
