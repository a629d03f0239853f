//! Configuration, strategies and helpers every decoder test shares.

#[allow(unused_imports)]
pub(crate) use std::cell::RefCell;
#[allow(unused_imports)]
pub(crate) use std::collections::BTreeMap;
#[allow(unused_imports)]
pub(crate) use std::fmt::Debug;
#[allow(unused_imports)]
pub(crate) use std::io;
#[allow(unused_imports)]
pub(crate) use std::rc::Rc;

#[allow(unused_imports)]
pub(crate) use futures::FutureExt;
#[allow(unused_imports)]
pub(crate) use proptest::prelude::*;
#[allow(unused_imports)]
pub(crate) use proptest::sample::Index;
#[allow(unused_imports)]
pub(crate) use proptest::test_runner::{RngAlgorithm, RngSeed, TestRunner, contextualize_config};

#[allow(unused_imports)]
pub(crate) use cluster::metadata::{
    ApplyContext as MetadataContext, BindSession, DecodeError, Durability, GlobalPermissions, Limit, MetadataOp,
    MetadataReply, MetadataState, PERMISSION_STREAMS_MAX, Permissions, SESSIONS_MAX, STREAMS_MAX,
    STRING_DECODE_BYTES_MAX, StreamPermissions, USERS_MAX,
};
#[allow(unused_imports)]
pub(crate) use cluster::node::status::{GroupStatus, HostedGroup, PartitionEntry, STATUS_PARTITIONS_MAX};
#[allow(unused_imports)]
pub(crate) use cluster::partition::{
    ApplyContext as PartitionContext, Consumer, INDEX_ENTRY_BYTES, IndexEntry, MESSAGES_PER_BATCH_MAX, Message,
    OwnerFence, PAYLOAD_BYTES_MAX, POLL_MESSAGES_CODE, POLL_MESSAGES_MAX, PartitionOp, PartitionReply, PartitionState,
    PollReply, PollRequest, PolledMessage, StoredMessage, decode_index_entry, encode_index_entry,
};
#[allow(unused_imports)]
pub(crate) use cluster::runtime::framing::{ReadFrameError, read_frame};
#[allow(unused_imports)]
pub(crate) use cluster::runtime::handshake::{HELLO_BYTES as PEER_HELLO_BYTES, Hello as PeerHello, NONCE_BYTES};
#[allow(unused_imports)]
pub(crate) use cluster::seam::{DurableFile, DurableStorage, OpenMode, ProcessId, validate_relative_path};
#[allow(unused_imports)]
pub(crate) use cluster::storage::partition_wal::{
    Durability as WalDurability, FRONTIER_FILE, FRONTIER_SLOT_BYTES, Frontier, PARTITION_WAL_FILE, PartitionWal,
};
#[allow(unused_imports)]
pub(crate) use cluster::storage::record::{self, RECORD_HEADER_BYTES, RECORD_PAYLOAD_BYTES_MAX, RecordError};
#[allow(unused_imports)]
pub(crate) use cluster::storage::segment::{
    MESSAGE_RECORD_KIND, SEGMENT_MAGIC, SegmentLog, SegmentOptions, SegmentRecovery, index_file_name, log_file_name,
    verify_log_bytes,
};
#[allow(unused_imports)]
pub(crate) use cluster::storage::snapshot_file::{
    SNAPSHOT_CHUNK_KIND, SNAPSHOT_MAGIC, SNAPSHOT_RECORD_KIND, SNAPSHOT_TRAILER_KIND, Snapshot, SnapshotFileError,
    read_snapshot, write_snapshot,
};
#[allow(unused_imports)]
pub(crate) use cluster::storage::superblock::{
    Identity, SUPERBLOCK_COPIES, SUPERBLOCK_FILE, SUPERBLOCK_SLOT_BYTES, SuperblockError, SuperblockFile,
    SuperblockState, cluster_id,
};
#[allow(unused_imports)]
pub(crate) use cluster::storage::wal::{WAL_PATH, Wal};
#[allow(unused_imports)]
pub(crate) use cluster::vsr::client_table::ClientTable;
#[allow(unused_imports)]
pub(crate) use cluster::vsr::{ClientError, Status, StoredRecord};
#[allow(unused_imports)]
pub(crate) use cluster::wire::{self, Command, FRAME_BYTES_MAX, FrameError, HEADER_BYTES, Header};

#[allow(unused_imports)]
use crate::{memory::*, metadata::*, partition::*, storage_boot::*, storage_logs::*, vsr_node::*, wire::*};

// ---------------------------------------------------------------------------------------
// Configuration and shared helpers
// ---------------------------------------------------------------------------------------

/// 256 cases from a fixed ChaCha seed unless the environment asks for others (`proptest!`
/// applies `PROPTEST_CASES` and `PROPTEST_RNG_SEED` over it); no failure persistence.
pub(crate) use crate::proptest_support::config;

/// Check `test` on `cases` cases of `strategy` whatever `PROPTEST_CASES` says (the
/// environment still picks the seed): for properties whose every case is expensive.
pub(crate) fn check_few<S: Strategy>(cases: u32, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>) {
    let mut runner = TestRunner::new(ProptestConfig {
        cases,
        ..contextualize_config(config())
    });
    if let Err(error) = runner.run(&strategy, test) {
        panic!("{error}");
    }
}

/// Where spliced-in bytes come from.
#[derive(Clone, Debug)]
pub(crate) enum Source {
    /// A slice of another valid encoding of the same kind.
    Donor { from: Index, len: usize },
    /// Arbitrary bytes.
    Garbage(Vec<u8>),
}

/// One way an encoding is damaged on a disk or in transit.
#[derive(Clone, Debug)]
pub(crate) enum Damage {
    /// One bit flipped.
    Flip { at: Index, bit: u8 },
    /// Cut short: only a strict prefix survives.
    Cut { at: Index },
    /// A range replaced by other bytes (a misdirected or torn write, a stale sector).
    Splice { at: Index, remove: usize, source: Source },
}

impl Damage {
    /// Apply to `original`; `donor` is another valid encoding to splice from.
    pub(crate) fn apply(&self, original: &[u8], donor: &[u8]) -> Vec<u8> {
        let mut out = original.to_vec();
        match self {
            Damage::Flip { at, bit } => {
                if !out.is_empty() {
                    let index = at.index(out.len());
                    out[index] ^= 1 << bit;
                }
            }
            Damage::Cut { at } => {
                if !out.is_empty() {
                    out.truncate(at.index(out.len()));
                }
            }
            Damage::Splice { at, remove, source } => {
                let start = at.index(out.len() + 1);
                let end = start.saturating_add(*remove).min(out.len());
                let insert = match source {
                    Source::Donor { from, len } => {
                        let from = from.index(donor.len() + 1);
                        donor[from..from.saturating_add(*len).min(donor.len())].to_vec()
                    }
                    Source::Garbage(bytes) => bytes.clone(),
                };
                out.splice(start..end, insert);
            }
        }
        out
    }

    /// The byte position a flip lands on, if this is a flip of a non-empty encoding.
    pub(crate) fn flipped_at(&self, len: usize) -> Option<usize> {
        match self {
            Damage::Flip { at, .. } if len > 0 => Some(at.index(len)),
            _ => None,
        }
    }

    /// The length a cut leaves, if this is a cut of a non-empty encoding.
    pub(crate) fn cut_to(&self, len: usize) -> Option<usize> {
        match self {
            Damage::Cut { at } if len > 0 => Some(at.index(len)),
            _ => None,
        }
    }

    /// Whether any checksum over the whole encoding must catch this damage.
    pub(crate) fn is_flip_or_cut(&self) -> bool {
        matches!(self, Damage::Flip { .. } | Damage::Cut { .. })
    }
}

pub(crate) fn damage() -> impl Strategy<Value = Damage> {
    let source = prop_oneof![
        (any::<Index>(), 0usize..300).prop_map(|(from, len)| Source::Donor { from, len }),
        prop::collection::vec(any::<u8>(), 0..48).prop_map(Source::Garbage),
    ];
    prop_oneof![
        (any::<Index>(), 0u8..8).prop_map(|(at, bit)| Damage::Flip { at, bit }),
        any::<Index>().prop_map(|at| Damage::Cut { at }),
        (any::<Index>(), 0usize..48, source).prop_map(|(at, remove, source)| Damage::Splice { at, remove, source }),
    ]
}

/// A claimed length or count past `max`, up to `u64::MAX`: what a decoder must refuse
/// before it allocates anything for it.
pub(crate) fn beyond(max: u64) -> std::ops::RangeInclusive<u64> {
    max + 1..=u64::MAX
}

pub(crate) fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..max)
}

/// Any string, control characters and multi-byte characters included (names and
/// passwords need not be valid to decode: the state machine answers invalid ones).
pub(crate) fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(any::<char>(), 0..20).prop_map(String::from_iter)
}

/// A name the metadata state machine accepts.
pub(crate) fn valid_name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9 ._-]{0,15}"
}

/// LEB128, as the codec writes lengths and counts.
pub(crate) fn varint(mut value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let group = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(group);
            return out;
        }
        out.push(group | 0x80);
    }
}

/// A decoder of the canonical byte codec: a value it returns must re-encode to exactly
/// the bytes it came from.
pub(crate) fn check_canonical<T: Debug, E: Debug>(
    input: &[u8],
    decoded: &Result<T, E>,
    encode: impl Fn(&T) -> Vec<u8>,
) -> Result<(), TestCaseError> {
    if let Ok(value) = decoded {
        let again = encode(value);
        prop_assert!(
            again == input,
            "{value:?} decoded from {} bytes that are not its encoding ({} bytes)",
            input.len(),
            again.len()
        );
    }
    Ok(())
}

/// A canonical codec under test: how a value encodes and how bytes decode.
pub(crate) struct Codec<T, E> {
    pub(crate) encode: fn(&T) -> Vec<u8>,
    pub(crate) decode: fn(&[u8]) -> Result<T, E>,
}

impl<T: Clone + Debug + PartialEq, E: Debug + PartialEq> Codec<T, E> {
    /// `value`'s encoding decodes back to it.
    pub(crate) fn round_trips(&self, value: &T) -> Result<(), TestCaseError> {
        prop_assert_eq!((self.decode)(&(self.encode)(value)), Ok(value.clone()));
        Ok(())
    }

    /// `bytes` decode to an error or to a value that re-encodes to exactly them.
    pub(crate) fn canonical(&self, bytes: &[u8]) -> Result<(), TestCaseError> {
        check_canonical(bytes, &(self.decode)(bytes), self.encode)
    }

    /// `input` is canonical alone and behind the code byte `code`, so the same bytes
    /// reach the field decoders of a real variant.
    pub(crate) fn canonical_alone_and_led(&self, input: &[u8], code: u8) -> Result<(), TestCaseError> {
        self.canonical(input)?;
        self.canonical(&[&[code][..], input].concat())
    }

    /// `value`'s encoding with `damage` (splicing from `donor`) is canonical; returns the
    /// damaged bytes.
    pub(crate) fn damaged(&self, value: &T, donor: &[u8], damage: &Damage) -> Result<Vec<u8>, TestCaseError> {
        let damaged = damage.apply(&(self.encode)(value), donor);
        self.canonical(&damaged)?;
        Ok(damaged)
    }
}

/// A boxed strategy for one struct or enum variant, each field drawn from its own
/// strategy: `arbitrary! { MetadataOp::DeleteTopic { stream_id: id(), topic_id: id() } }`.
macro_rules! arbitrary {
    ($($path:ident)::+ { $($field:ident: $strategy:expr),* $(,)? }) => {
        ($($strategy,)*)
            .prop_map(|($($field,)*)| $($path)::+ { $($field),* })
            .boxed()
    };
}

pub(crate) use arbitrary;

/// The properties every `[code][fields]` codec has, as three property tests with the
/// names given: a value's encoding decodes back to it; random bytes, alone and behind a
/// code from `codes`, decode to an error or to exactly themselves; and a damaged
/// encoding decodes the same way, a strict prefix never (every variant has a fixed
/// shape after its code).
macro_rules! tagged_codec_properties {
    (
        $codec:expr, $strategy:expr, garbage: $garbage:expr, codes: $codes:expr;
        $round_trip:ident, $random:ident, $damaged:ident $(,)?
    ) => {
        proptest! {
            #![proptest_config(config())]

            #[test]
            fn $round_trip(value in $strategy) {
                $codec.round_trips(&value)?;
            }

            #[test]
            fn $random(input in bytes($garbage), code in $codes) {
                $codec.canonical_alone_and_led(&input, code)?;
            }

            #[test]
            fn $damaged(value in $strategy, donor in $strategy, damage in damage()) {
                let encoded = ($codec.encode)(&value);
                let damaged = $codec.damaged(&value, &(($codec.encode)(&donor)), &damage)?;
                if damage.cut_to(encoded.len()).is_some() {
                    prop_assert!(($codec.decode)(&damaged).is_err());
                }
            }
        }
    };
}

pub(crate) use tagged_codec_properties;

/// The properties of a state's snapshot codec, as three property tests with the names
/// given: a state's snapshot decodes back to it, digest and all; random bytes decode to
/// an error or to exactly themselves; and so does a damaged snapshot, a strict prefix
/// never. (A snapshot has no checksum of its own, the store and the transfer carry
/// one: every state it decodes to must still encode to the damaged bytes, and so pass
/// every invariant its decoder checks.)
macro_rules! snapshot_properties {
    ($codec:expr, $strategy:expr; $round_trip:ident, $random:ident, $damaged:ident $(,)?) => {
        proptest! {
            #![proptest_config(config())]

            #[test]
            fn $round_trip(state in $strategy) {
                let decoded = ($codec.decode)(&($codec.encode)(&state)).expect("a state's own snapshot decodes");
                prop_assert_eq!(decoded.digest(), state.digest());
                prop_assert_eq!(decoded, state);
            }

            #[test]
            fn $random(input in bytes(4096)) {
                $codec.canonical(&input)?;
            }

            #[test]
            fn $damaged(state in $strategy, donor in $strategy, damage in damage()) {
                let encoded = ($codec.encode)(&state);
                let damaged = $codec.damaged(&state, &(($codec.encode)(&donor)), &damage)?;
                if damage.cut_to(encoded.len()).is_some() {
                    prop_assert!(($codec.decode)(&damaged).is_err(), "a cut snapshot decoded");
                }
            }
        }
    };
}

pub(crate) use snapshot_properties;

/// One property test with the name given: a value from `$strategy` round trips, its
/// encoding damaged (splicing from another's) and `$garbage` random bytes decode to an
/// error or to exactly themselves.
macro_rules! codec_properties {
    ($codec:expr, $strategy:expr, garbage: $garbage:expr; $name:ident) => {
        proptest! {
            #![proptest_config(config())]

            #[test]
            fn $name(value in $strategy, donor in $strategy, damage in damage(), input in bytes($garbage)) {
                $codec.round_trips(&value)?;
                $codec.damaged(&value, &($codec.encode)(&donor), &damage)?;
                $codec.canonical(&input)?;
            }
        }
    };
}

pub(crate) use codec_properties;

/// A length-prefixed field whose claim exceeds its bound must be refused by name
/// with `TooLong` (the claim itself, not the missing bytes, is what is refused).
pub(crate) fn check_too_long<T: Debug>(decoded: Result<T, DecodeError>, field: &str) -> Result<(), TestCaseError> {
    match decoded {
        Err(DecodeError::TooLong { field: got, len, max }) => {
            prop_assert_eq!(got, field);
            prop_assert!(len > max);
            Ok(())
        }
        other => Err(TestCaseError::fail(format!("{field}: expected TooLong, got {other:?}"))),
    }
}

/// Run a future that never waits (the in-memory storage and `&[u8]` streams are always
/// ready).
pub(crate) fn now<T>(future: impl Future<Output = T>) -> T {
    future.now_or_never().expect("in-memory futures complete at once")
}
