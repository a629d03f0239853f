//! What a user may do: global permissions plus per-stream permissions, and their codec.
//!
//! Models: the permission set a `UpdatePermissions` op installs and a user record holds,
//! with a canonical binary form (flags as bits, per-stream entries in ascending stream
//! id, at most [`PERMISSION_STREAMS_MAX`] of them). Does not model: enforcement (which
//! request needs which permission is decided where requests are authorised, not here),
//! per-topic permissions, or inheritance rules beyond what the fields say.

use std::collections::BTreeMap;

use super::limits::PERMISSION_STREAMS_MAX;
use crate::codec::{DecodeError, Reader, WireField, Writer};

/// Permissions that apply to every stream and to user administration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GlobalPermissions {
    /// Create, update and delete streams, topics and consumer groups anywhere.
    pub manage_streams: bool,
    /// Read every stream's metadata and messages.
    pub read_streams: bool,
    /// Create, update and delete users and their permissions.
    pub manage_users: bool,
    /// Read every user's record.
    pub read_users: bool,
}

impl GlobalPermissions {
    fn bits(self) -> u8 {
        pack_flags([
            self.manage_streams,
            self.read_streams,
            self.manage_users,
            self.read_users,
        ])
    }

    fn from_bits(bits: u8) -> Result<Self, DecodeError> {
        let [manage_streams, read_streams, manage_users, read_users] = unpack_flags(bits, "global permission bits")?;
        Ok(Self {
            manage_streams,
            read_streams,
            manage_users,
            read_users,
        })
    }
}

/// Permissions on one stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StreamPermissions {
    /// Create, update and delete this stream's topics and consumer groups.
    pub manage_topics: bool,
    /// Read this stream's metadata and poll its messages.
    pub read: bool,
    /// Send messages to this stream's topics.
    pub write: bool,
}

impl StreamPermissions {
    fn bits(self) -> u8 {
        pack_flags([self.manage_topics, self.read, self.write])
    }

    fn from_bits(bits: u8) -> Result<Self, DecodeError> {
        let [manage_topics, read, write] = unpack_flags(bits, "stream permission bits")?;
        Ok(Self {
            manage_topics,
            read,
            write,
        })
    }
}

/// Flags as bits, the first flag in the lowest bit.
fn pack_flags<const N: usize>(flags: [bool; N]) -> u8 {
    flags
        .iter()
        .enumerate()
        .fold(0, |bits, (bit, &set)| bits | u8::from(set) << bit)
}

/// The inverse of [`pack_flags`]; a bit above the `N` flags is not canonical.
fn unpack_flags<const N: usize>(bits: u8, field: &'static str) -> Result<[bool; N], DecodeError> {
    if u32::from(bits) >> N != 0 {
        return Err(DecodeError::NonCanonical { field });
    }
    Ok(std::array::from_fn(|bit| bits & 1 << bit != 0))
}

/// A user's permissions. [`Permissions::default`] grants nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Permissions {
    /// Cluster-wide permissions.
    pub global: GlobalPermissions,
    /// Per-stream permissions by stream id, at most [`PERMISSION_STREAMS_MAX`] entries.
    pub streams: BTreeMap<u32, StreamPermissions>,
}

impl Permissions {
    /// Everything: what the root user holds, always.
    pub fn full() -> Self {
        Self {
            global: GlobalPermissions {
                manage_streams: true,
                read_streams: true,
                manage_users: true,
                read_users: true,
            },
            streams: BTreeMap::new(),
        }
    }

    /// Layout: `[global bits: u8][count: varint]` then per entry
    /// `[stream id: u32][stream bits: u8]` in ascending stream id.
    pub(super) fn encode_into(&self, w: &mut Writer) {
        w.u8(self.global.bits());
        w.len(self.streams.len());
        for (stream_id, stream) in &self.streams {
            w.u32(*stream_id);
            w.u8(stream.bits());
        }
    }

    /// Inverse of [`Permissions::encode_into`]; rejects unknown bits, more than
    /// [`PERMISSION_STREAMS_MAX`] entries and stream ids that are not strictly ascending.
    pub(super) fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let global = GlobalPermissions::from_bits(r.u8("global permission bits")?)?;
        let count = r.len("stream permission count", PERMISSION_STREAMS_MAX)?;
        let mut streams = BTreeMap::new();
        let mut previous: Option<u32> = None;
        for _ in 0..count {
            let stream_id = r.u32("stream permission id")?;
            if previous.is_some_and(|p| p >= stream_id) {
                return Err(DecodeError::NonCanonical {
                    field: "stream permission ids",
                });
            }
            previous = Some(stream_id);
            streams.insert(
                stream_id,
                StreamPermissions::from_bits(r.u8("stream permission bits")?)?,
            );
        }
        Ok(Self { global, streams })
    }
}

/// Permissions name their own parts in a [`DecodeError`], so the field label is unused.
impl WireField for Permissions {
    fn encode_field(&self, w: &mut Writer) {
        self.encode_into(w);
    }

    fn decode_field(r: &mut Reader<'_>, _field: &'static str) -> Result<Self, DecodeError> {
        Self::decode_from(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(permissions: &Permissions) -> Result<Permissions, DecodeError> {
        let mut w = Writer::new();
        permissions.encode_into(&mut w);
        let bytes = w.finish();
        let mut r = Reader::new(&bytes);
        let decoded = Permissions::decode_from(&mut r)?;
        r.finish()?;
        Ok(decoded)
    }

    #[test]
    fn permissions_round_trip() {
        let mut permissions = Permissions::default();
        permissions.global.read_users = true;
        permissions.streams.insert(
            3,
            StreamPermissions {
                manage_topics: false,
                read: true,
                write: true,
            },
        );
        permissions.streams.insert(9, StreamPermissions::default());
        assert_eq!(round_trip(&permissions), Ok(permissions));
        assert_eq!(round_trip(&Permissions::full()), Ok(Permissions::full()));
    }

    #[test]
    fn unknown_bits_and_unsorted_streams_are_rejected() {
        assert_eq!(
            Permissions::decode_from(&mut Reader::new(&[0b1_0000, 0])),
            Err(DecodeError::NonCanonical {
                field: "global permission bits"
            })
        );
        // Two entries: stream 5 then stream 5 again.
        let bytes = [0, 2, 5, 0, 0, 0, 1, 5, 0, 0, 0, 1];
        assert_eq!(
            Permissions::decode_from(&mut Reader::new(&bytes)),
            Err(DecodeError::NonCanonical {
                field: "stream permission ids"
            })
        );
        let bytes = [0, 1, 5, 0, 0, 0, 0b1000];
        assert_eq!(
            Permissions::decode_from(&mut Reader::new(&bytes)),
            Err(DecodeError::NonCanonical {
                field: "stream permission bits"
            })
        );
    }
}
