//! The byte codec shared by every state machine's ops, replies and state encodings (metadata and partition planes).
//!
//! Models: little-endian fixed-width integers, LEB128 varints for lengths and counts,
//! length-prefixed UTF-8 strings, strict booleans, and a [`DecodeError`] that names
//! the field that was wrong. Decoding never panics and never allocates more than the
//! bounds it is given: every length is checked against a named maximum before any
//! buffer is built, so garbage or hostile bytes cost at most a small allocation.
//!
//! Does not model: versioning (the formats are versionless; the op and reply codes
//! are the contract), checksums (the frame envelope in `wire` carries those), or
//! semantic validation (a decoded name may still be an invalid name; the state
//! machine answers that with a reply a client can act on).
//!
//! The ops and replies are tagged enums declared once each with [`wire_table!`]
//! (`codec/table.rs`), whose fields encode through [`WireField`].

use std::collections::BTreeMap;
use std::fmt;

mod table;

pub(crate) use table::{Redacted, WireField, WireTable, wire_table};

/// Longest string a decoder accepts, in bytes. Four times the longest valid name or
/// password, so a slightly over-long name still decodes and is answered with
/// `InvalidName` (something a client can act on) rather than dropped as garbage, while a
/// hostile length field cannot make a replica allocate more than a kilobyte per string.
pub const STRING_DECODE_BYTES_MAX: usize = 1_024;

/// Longest LEB128 encoding of a u64, in bytes: ceil(64 / 7).
const VARINT_BYTES_MAX: usize = 10;

/// Why bytes did not decode. Every variant names the field being read, so a log line
/// says what was wrong, not only that something was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The input ended before `field` was complete.
    Truncated {
        /// The field being read.
        field: &'static str,
        /// Byte offset where the field started.
        offset: usize,
    },
    /// A discriminant byte (operation code, reply code, enum value) is not assigned.
    UnknownCode {
        /// The field being read.
        field: &'static str,
        /// The byte found.
        code: u8,
    },
    /// A boolean was neither 0 nor 1.
    InvalidBool {
        /// The field being read.
        field: &'static str,
        /// The byte found.
        byte: u8,
    },
    /// A string was not valid UTF-8.
    InvalidUtf8 {
        /// The field being read.
        field: &'static str,
    },
    /// A length or count exceeds its bound.
    TooLong {
        /// The field being read.
        field: &'static str,
        /// What the input claims.
        len: u64,
        /// The bound.
        max: u64,
    },
    /// The bytes have a meaning but not the canonical encoding (over-long varint, map
    /// keys not strictly ascending, reserved flag bits set). Rejected so that decoding
    /// then encoding gives back the same bytes, which checksums and digests rely on.
    NonCanonical {
        /// The field being read.
        field: &'static str,
    },
    /// Bytes were left over after a complete value.
    TrailingBytes {
        /// How many.
        count: usize,
    },
    /// A snapshot decoded but breaks an invariant of the state it describes.
    InvalidState {
        /// The invariant broken.
        what: &'static str,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Truncated { field, offset } => {
                write!(f, "input ends inside {field} (starting at byte {offset})")
            }
            DecodeError::UnknownCode { field, code } => write!(f, "{field} has unknown code {code}"),
            DecodeError::InvalidBool { field, byte } => {
                write!(f, "{field} must be a boolean (0 or 1), found {byte}")
            }
            DecodeError::InvalidUtf8 { field } => write!(f, "{field} is not valid UTF-8"),
            DecodeError::TooLong { field, len, max } => {
                write!(f, "{field} claims {len}, more than the maximum {max}")
            }
            DecodeError::NonCanonical { field } => write!(f, "{field} is not in canonical encoding"),
            DecodeError::TrailingBytes { count } => write!(f, "{count} trailing bytes after a complete value"),
            DecodeError::InvalidState { what } => write!(f, "snapshot breaks an invariant: {what}"),
        }
    }
}

impl std::error::Error for DecodeError {}

/// The buffer a [`Writer::new`] starts with, in bytes: most encodings (replies,
/// requests, small ops) fit, so they are written with one allocation instead of the
/// four a buffer grown from empty takes to reach 64 bytes (8, 16, 32, 64: a partition
/// run spent about 2% of its instructions in those regrowths).
pub(crate) const WRITER_INITIAL_BYTES: usize = 64;

/// Appends encoded values to a growing buffer. Encoding cannot fail.
#[derive(Debug)]
pub(crate) struct Writer {
    bytes: Vec<u8>,
}

impl Writer {
    pub(crate) fn new() -> Self {
        Self::with_capacity(WRITER_INITIAL_BYTES)
    }

    /// A writer whose buffer holds `bytes` before it grows: for an encoding whose size
    /// is known up front (a poll reply, a batch of messages).
    pub(crate) fn with_capacity(bytes: usize) -> Self {
        Self {
            bytes: Vec::with_capacity(bytes),
        }
    }

    /// Bytes a [`Writer::len`] of `len` takes (its varint).
    pub(crate) fn len_bytes(len: usize) -> usize {
        let bits = usize::BITS - len.leading_zeros();
        (bits as usize).div_ceil(7).max(1)
    }

    pub(crate) fn u8(&mut self, value: u8) {
        self.bytes.push(value);
    }

    pub(crate) fn u32(&mut self, value: u32) {
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }

    pub(crate) fn u64(&mut self, value: u64) {
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }

    pub(crate) fn u128(&mut self, value: u128) {
        self.bytes.extend_from_slice(&value.to_le_bytes());
    }

    pub(crate) fn bool(&mut self, value: bool) {
        self.bytes.push(u8::from(value));
    }

    /// Bytes with no length prefix (a fixed-size field).
    pub(crate) fn raw(&mut self, value: &[u8]) {
        self.bytes.extend_from_slice(value);
    }

    /// LEB128, least significant group first; the shortest form (canonical).
    pub(crate) fn varint(&mut self, mut value: u64) {
        loop {
            // Truncation intended: the low seven bits.
            let group = (value & 0x7f) as u8;
            value >>= 7;
            if value == 0 {
                self.bytes.push(group);
                return;
            }
            self.bytes.push(group | 0x80);
        }
    }

    /// A count or length: usize always fits in u64 on supported targets.
    pub(crate) fn len(&mut self, len: usize) {
        self.varint(len as u64);
    }

    /// A count-prefixed list: the count, then each item as `item` writes it (the
    /// inverse of [`Reader::list`]).
    pub(crate) fn list<I: ExactSizeIterator>(&mut self, items: I, mut item: impl FnMut(&mut Self, I::Item)) {
        self.len(items.len());
        for each in items {
            item(self, each);
        }
    }

    pub(crate) fn str(&mut self, value: &str) {
        self.len(value.len());
        self.bytes.extend_from_slice(value.as_bytes());
    }

    pub(crate) fn opt_str(&mut self, value: Option<&str>) {
        match value {
            None => self.u8(0),
            Some(s) => {
                self.u8(1);
                self.str(s);
            }
        }
    }

    pub(crate) fn opt_bool(&mut self, value: Option<bool>) {
        match value {
            None => self.u8(0),
            Some(b) => {
                self.u8(1);
                self.bool(b);
            }
        }
    }

    pub(crate) fn opt_u64(&mut self, value: Option<u64>) {
        match value {
            None => self.u8(0),
            Some(v) => {
                self.u8(1);
                self.u64(v);
            }
        }
    }

    /// Length-prefixed bytes.
    pub(crate) fn bytes(&mut self, value: &[u8]) {
        self.len(value.len());
        self.bytes.extend_from_slice(value);
    }

    pub(crate) fn finish(self) -> Vec<u8> {
        self.bytes
    }
}

/// Reads encoded values from a slice, failing with a [`DecodeError`] naming the field.
#[derive(Debug)]
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    offset: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, offset: 0 }
    }

    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], DecodeError> {
        let truncated = DecodeError::Truncated {
            field,
            offset: self.offset,
        };
        let end = self.offset.checked_add(n).ok_or(truncated.clone())?;
        let slice = self.bytes.get(self.offset..end).ok_or(truncated)?;
        self.offset = end;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, field)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self, field: &'static str) -> Result<u8, DecodeError> {
        Ok(self.array::<1>(field)?[0])
    }

    pub(crate) fn u32(&mut self, field: &'static str) -> Result<u32, DecodeError> {
        Ok(u32::from_le_bytes(self.array(field)?))
    }

    pub(crate) fn u64(&mut self, field: &'static str) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.array(field)?))
    }

    pub(crate) fn u128(&mut self, field: &'static str) -> Result<u128, DecodeError> {
        Ok(u128::from_le_bytes(self.array(field)?))
    }

    pub(crate) fn bool(&mut self, field: &'static str) -> Result<bool, DecodeError> {
        match self.u8(field)? {
            0 => Ok(false),
            1 => Ok(true),
            byte => Err(DecodeError::InvalidBool { field, byte }),
        }
    }

    pub(crate) fn varint(&mut self, field: &'static str) -> Result<u64, DecodeError> {
        let start = self.offset;
        let mut value: u64 = 0;
        for index in 0..VARINT_BYTES_MAX {
            let byte = self
                .u8(field)
                .map_err(|_| DecodeError::Truncated { field, offset: start })?;
            let group = u64::from(byte & 0x7f);
            // The tenth byte may only carry the top bit of a u64.
            if index == VARINT_BYTES_MAX - 1 && byte > 1 {
                return Err(DecodeError::NonCanonical { field });
            }
            value |= group << (7 * index);
            if byte & 0x80 == 0 {
                // A zero final group after the first byte means a shorter form existed.
                if index > 0 && byte == 0 {
                    return Err(DecodeError::NonCanonical { field });
                }
                return Ok(value);
            }
        }
        Err(DecodeError::NonCanonical { field })
    }

    /// A length or count, rejected before anything is allocated if above `max`.
    pub(crate) fn len(&mut self, field: &'static str, max: usize) -> Result<usize, DecodeError> {
        let len = self.varint(field)?;
        let max_u64 = max as u64;
        if len > max_u64 {
            return Err(DecodeError::TooLong {
                field,
                len,
                max: max_u64,
            });
        }
        // len <= max, which is a usize.
        Ok(len as usize)
    }

    /// Exactly `len` bytes with no length prefix (a fixed-size field), borrowed.
    pub(crate) fn raw(&mut self, field: &'static str, len: usize) -> Result<&'a [u8], DecodeError> {
        self.take(len, field)
    }

    /// Length-prefixed bytes of at most `max`, borrowed.
    pub(crate) fn slice(&mut self, field: &'static str, max: usize) -> Result<&'a [u8], DecodeError> {
        let len = self.len(field, max)?;
        self.take(len, field)
    }

    /// Length-prefixed bytes of at most `max`; copied only once known to be present.
    pub(crate) fn bytes(&mut self, field: &'static str, max: usize) -> Result<Vec<u8>, DecodeError> {
        Ok(self.bytes_borrowed(field, max)?.to_vec())
    }

    /// As [`Reader::bytes`], borrowing the bytes from the input instead of copying them.
    pub(crate) fn bytes_borrowed(&mut self, field: &'static str, max: usize) -> Result<&'a [u8], DecodeError> {
        let len = self.len(field, max)?;
        self.take(len, field)
    }

    pub(crate) fn string(&mut self, field: &'static str) -> Result<String, DecodeError> {
        let len = self.len(field, STRING_DECODE_BYTES_MAX)?;
        let bytes = self.take(len, field)?;
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| DecodeError::InvalidUtf8 { field })
    }

    fn option_tag(&mut self, field: &'static str) -> Result<bool, DecodeError> {
        match self.u8(field)? {
            0 => Ok(false),
            1 => Ok(true),
            code => Err(DecodeError::UnknownCode { field, code }),
        }
    }

    pub(crate) fn opt_string(&mut self, field: &'static str) -> Result<Option<String>, DecodeError> {
        if self.option_tag(field)? {
            Ok(Some(self.string(field)?))
        } else {
            Ok(None)
        }
    }

    pub(crate) fn opt_bool(&mut self, field: &'static str) -> Result<Option<bool>, DecodeError> {
        if self.option_tag(field)? {
            Ok(Some(self.bool(field)?))
        } else {
            Ok(None)
        }
    }

    pub(crate) fn opt_u64(&mut self, field: &'static str) -> Result<Option<u64>, DecodeError> {
        if self.option_tag(field)? {
            Ok(Some(self.u64(field)?))
        } else {
            Ok(None)
        }
    }

    /// A count-prefixed list of at most `max` items, each read by `item`. The room
    /// reserved up front is bounded by the bytes left as well as by `max` (every item
    /// takes at least one byte), so a count the bytes cannot hold allocates nothing
    /// beyond them.
    pub(crate) fn list<T>(
        &mut self,
        count_field: &'static str,
        max: usize,
        mut item: impl FnMut(&mut Self) -> Result<T, DecodeError>,
    ) -> Result<Vec<T>, DecodeError> {
        let count = self.len(count_field, max)?;
        let mut items = Vec::with_capacity(count.min(self.bytes.len() - self.offset));
        for _ in 0..count {
            items.push(item(self)?);
        }
        Ok(items)
    }

    /// A count-prefixed map (at most `max` entries), each entry read by `entry` and
    /// then checked: its key must be above the previous one (the canonical order; else
    /// [`DecodeError::NonCanonical`] naming `keys_field`), then `check` must accept it.
    pub(crate) fn ascending_map<K: Ord, V>(
        &mut self,
        count_field: &'static str,
        max: usize,
        keys_field: &'static str,
        mut entry: impl FnMut(&mut Self) -> Result<(K, V), DecodeError>,
        mut check: impl FnMut(&V) -> Result<(), DecodeError>,
    ) -> Result<BTreeMap<K, V>, DecodeError> {
        let mut map = BTreeMap::new();
        for _ in 0..self.len(count_field, max)? {
            let (key, value) = entry(self)?;
            if map.last_key_value().is_some_and(|(last, _)| *last >= key) {
                return Err(DecodeError::NonCanonical { field: keys_field });
            }
            check(&value)?;
            map.insert(key, value);
        }
        Ok(map)
    }

    /// Succeeds only if every byte was consumed.
    pub(crate) fn finish(self) -> Result<(), DecodeError> {
        let count = self.bytes.len() - self.offset;
        if count == 0 {
            Ok(())
        } else {
            Err(DecodeError::TrailingBytes { count })
        }
    }
}

/// Test support: `decode` refuses every strict prefix of `bytes` and, given a `pad`
/// byte, `bytes` followed by it with exactly one trailing byte.
#[cfg(test)]
pub(crate) fn assert_cuts_and_padding_refused<T: fmt::Debug>(
    bytes: &[u8],
    pad: Option<u8>,
    decode: impl Fn(&[u8]) -> Result<T, DecodeError>,
) {
    for len in 0..bytes.len() {
        let decoded = decode(&bytes[..len]);
        assert!(
            decoded.is_err(),
            "the {len}-byte prefix of {bytes:?} decoded: {decoded:?}"
        );
    }
    if let Some(pad) = pad {
        let padded = [bytes, &[pad]].concat();
        assert_eq!(decode(&padded).err(), Some(DecodeError::TrailingBytes { count: 1 }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn len_bytes_is_the_size_of_the_varint_len_writes() {
        for len in [
            0,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            2_097_151,
            2_097_152,
            usize::MAX >> 1,
            usize::MAX,
        ] {
            let mut w = Writer::with_capacity(0);
            w.len(len);
            assert_eq!(Writer::len_bytes(len), w.finish().len(), "len {len}");
        }
    }

    #[test]
    fn varints_round_trip_and_reject_overlong_forms() {
        for value in [0, 1, 127, 128, 300, 16_383, 16_384, u64::from(u32::MAX), u64::MAX] {
            let mut w = Writer::new();
            w.varint(value);
            let bytes = w.finish();
            let mut r = Reader::new(&bytes);
            assert_eq!(r.varint("v"), Ok(value));
            assert_eq!(r.finish(), Ok(()));
        }
        // 1 written as two bytes (0x81 0x00): a shorter form exists.
        assert_eq!(
            Reader::new(&[0x81, 0x00]).varint("v"),
            Err(DecodeError::NonCanonical { field: "v" })
        );
        // Eleven continuation bytes: longer than any u64.
        assert!(Reader::new(&[0xff; 11]).varint("v").is_err());
        // Ten bytes whose last carries more than the top bit of a u64.
        let mut overflow = [0xffu8; 10];
        overflow[9] = 0x02;
        assert_eq!(
            Reader::new(&overflow).varint("v"),
            Err(DecodeError::NonCanonical { field: "v" })
        );
        assert_eq!(
            Reader::new(&[0x80]).varint("v"),
            Err(DecodeError::Truncated { field: "v", offset: 0 })
        );
    }

    #[test]
    fn strings_are_bounded_before_allocation_and_must_be_utf8() {
        let mut w = Writer::new();
        w.varint(u64::MAX);
        let bytes = w.finish();
        let error = Reader::new(&bytes).string("name").err();
        assert!(matches!(error, Some(DecodeError::TooLong { field: "name", .. })));
        assert_eq!(
            Reader::new(&[2, 0xff, 0xfe]).string("name"),
            Err(DecodeError::InvalidUtf8 { field: "name" })
        );
        assert_eq!(
            Reader::new(&[5, b'a']).string("name"),
            Err(DecodeError::Truncated {
                field: "name",
                offset: 1
            })
        );
        let message = DecodeError::InvalidBool {
            field: "user active",
            byte: 7,
        }
        .to_string();
        assert!(message.contains("user active") && message.contains('7'), "{message}");
    }
}
