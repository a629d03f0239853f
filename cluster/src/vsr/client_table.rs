//! The client table: the last committed request of each client and its reply, so a
//! resent request is answered from the table instead of executing twice.
//!
//! The table is replicated state (every replica records the same committed requests,
//! and evicts the same client), so it has a canonical encoding for checkpoints and
//! state transfer ([`ClientTable::encode`], [`ClientTable::decode`]). A client's
//! address is not part of it: it is where this replica last saw the client, which
//! differs between replicas.

use std::collections::BTreeMap;

use super::constants::CLIENT_TABLE_CLIENTS_MAX;
use crate::codec::{DecodeError, Reader, Writer};
use crate::seam::ProcessId;
use crate::wire::{FRAME_BYTES_MAX, FrameError};

/// One client's entry.
#[derive(Clone, Debug)]
pub struct ClientEntry {
    /// The newest committed request number.
    pub request: u64,
    /// The op it committed at (orders eviction).
    pub op: u64,
    /// The sealed reply frame, replayed to a resend.
    pub reply: Vec<u8>,
    /// Where the client was last seen (replies go there); `None` when this replica
    /// applied the request without receiving it (a backup, or a replica catching up).
    pub address: Option<ProcessId>,
}

/// What the table says about an incoming request.
#[derive(Debug, PartialEq, Eq)]
pub enum Dedup<'a> {
    /// Newer than anything committed for this client: execute it.
    New,
    /// The newest committed request again: replay this reply frame.
    Duplicate(&'a [u8]),
    /// Older than the newest committed request: drop it.
    Stale,
}

/// Committed requests by client id. Deterministic: ordered maps only.
#[derive(Clone, Debug, Default)]
pub struct ClientTable {
    clients: BTreeMap<u128, ClientEntry>,
}

impl ClientTable {
    /// What to do with `request` from `client`.
    pub fn check(&self, client: u128, request: u64) -> Dedup<'_> {
        match self.clients.get(&client) {
            None => Dedup::New,
            Some(entry) if request > entry.request => Dedup::New,
            Some(entry) if request == entry.request => Dedup::Duplicate(&entry.reply),
            Some(_) => Dedup::Stale,
        }
    }

    /// Record a committed request's reply. Evicts the client whose last request
    /// committed earliest when the table is full (every replica evicts the same one,
    /// since they commit the same ops).
    pub fn record(&mut self, client: u128, request: u64, op: u64, reply: Vec<u8>, address: Option<ProcessId>) {
        if !self.clients.contains_key(&client) && self.clients.len() >= CLIENT_TABLE_CLIENTS_MAX {
            let oldest = self.clients.iter().min_by_key(|(_, entry)| entry.op).map(|(id, _)| *id);
            if let Some(oldest) = oldest {
                self.clients.remove(&oldest);
                crate::cover!(ClientEvicted);
            }
        }
        debug_assert!(
            self.clients.get(&client).is_none_or(|entry| entry.request < request),
            "client {client:#x} committed request {request} twice or out of order"
        );
        self.clients.insert(
            client,
            ClientEntry {
                request,
                op,
                reply,
                address,
            },
        );
    }

    /// The address a client was last seen at.
    pub fn address(&self, client: u128) -> Option<ProcessId> {
        self.clients.get(&client).and_then(|entry| entry.address)
    }

    /// Remember where a client is now (a resend through another route).
    pub fn set_address(&mut self, client: u128, address: ProcessId) {
        if let Some(entry) = self.clients.get_mut(&client) {
            entry.address = Some(address);
        }
    }

    /// Clients remembered.
    pub fn len(&self) -> usize {
        self.clients.len()
    }

    /// Whether no client is remembered.
    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }

    /// The canonical bytes of the table: `[client count: varint]`, then per client in
    /// ascending id order `[client id: u128][request: u64][op: u64][reply length:
    /// varint][reply]`, little-endian. Addresses are left out (not replicated state).
    pub fn encode(&self) -> Vec<u8> {
        self.encode_with(|reply| reply)
    }

    /// The table's layout with each reply as `reply` picks it (whole, or its body).
    fn encode_with(&self, reply: impl Fn(&[u8]) -> &[u8]) -> Vec<u8> {
        let mut w = Writer::new();
        w.len(self.clients.len());
        for (client, entry) in &self.clients {
            w.u128(*client);
            w.u64(entry.request);
            w.u64(entry.op);
            w.bytes(reply(&entry.reply));
        }
        w.finish()
    }

    /// The exact inverse of [`ClientTable::encode`]; every address decodes as `None`
    /// (the client's next request tells where it is). Refuses more than
    /// [`CLIENT_TABLE_CLIENTS_MAX`] clients (recording evicts before that), client ids
    /// not strictly ascending, a reply larger than [`FRAME_BYTES_MAX`] (a reply is one
    /// sealed frame), and trailing bytes. Never panics.
    pub fn decode(bytes: &[u8]) -> Result<ClientTable, DecodeError> {
        let mut r = Reader::new(bytes);
        let mut clients = BTreeMap::new();
        for _ in 0..r.len("client count", CLIENT_TABLE_CLIENTS_MAX)? {
            let client = r.u128("client id")?;
            let entry = ClientEntry {
                request: r.u64("client request")?,
                op: r.u64("client op")?,
                reply: r.bytes("client reply", FRAME_BYTES_MAX)?,
                address: None,
            };
            if clients.last_key_value().is_some_and(|(last, _)| *last >= client) {
                return Err(DecodeError::NonCanonical { field: "client id" });
            }
            clients.insert(client, entry);
        }
        r.finish()?;
        Ok(ClientTable { clients })
    }

    /// The first client (in id order) whose cached reply is not a frame that verifies
    /// (header and body checksums), with its newest request and why. A replica replays
    /// that reply to a resend, and a client drops a frame that does not verify, so such
    /// a reply leaves the client waiting for good. [`ClientTable::digest`] leaves reply
    /// headers out (each replica seals its own), so a checker that compares digests
    /// needs this too.
    pub fn first_unverifiable_reply(&self) -> Option<(u128, u64, FrameError)> {
        self.clients.iter().find_map(|(client, entry)| {
            crate::wire::open(&entry.reply)
                .err()
                .map(|why| (*client, entry.request, why))
        })
    }

    /// A checksum of the table's replicated part, for comparing replicas: per client
    /// in id order, its id, newest committed request, the op it committed at, and the
    /// reply's body (what the state machine answered). The reply's header is left out:
    /// each replica seals its own (its index, its view, so its checksum), and a table
    /// installed from a peer's checkpoint holds the peer's.
    pub fn digest(&self) -> u128 {
        crate::wire::checksum(&self.encode_with(|reply| reply.get(crate::wire::HEADER_BYTES..).unwrap_or(&[])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resent_request_replays_and_an_older_one_is_stale() {
        let mut table = ClientTable::default();
        assert_eq!(table.check(7, 1), Dedup::New);
        table.record(7, 1, 10, b"reply-1".to_vec(), Some(ProcessId(3)));
        assert_eq!(table.check(7, 1), Dedup::Duplicate(b"reply-1"));
        assert_eq!(table.check(7, 2), Dedup::New);
        table.record(7, 2, 11, b"reply-2".to_vec(), Some(ProcessId(3)));
        assert_eq!(table.check(7, 1), Dedup::Stale);
        assert_eq!(table.address(7), Some(ProcessId(3)));
    }

    #[test]
    fn a_cached_reply_that_does_not_verify_is_named_and_a_sealed_one_is_not() {
        let reply = crate::wire::seal(crate::wire::Command::Reply, b"answer");
        let mut header_damaged = reply.clone();
        header_damaged[40] ^= 0x01;
        let mut body_damaged = reply.clone();
        *body_damaged.last_mut().expect("a body") ^= 0x01;

        let table = |replies: [&Vec<u8>; 2]| {
            let mut table = ClientTable::default();
            table.record(7, 3, 10, replies[0].clone(), None);
            table.record(9, 1, 11, replies[1].clone(), None);
            table
        };
        let sealed = table([&reply, &reply]);
        assert_eq!(sealed.first_unverifiable_reply(), None, "sealed replies verify");

        // A flipped bit in client 9's reply header: the digest (bodies only) cannot see it.
        let header = table([&reply, &header_damaged]);
        assert_eq!(header.digest(), sealed.digest(), "the digest leaves reply headers out");
        let named = header
            .first_unverifiable_reply()
            .map(|(client, request, _)| (client, request));
        assert_eq!(named, Some((9, 1)), "a damaged header is named");

        // A flipped bit in client 7's body fails the body's checksum.
        let body = table([&body_damaged, &reply]);
        let named = body
            .first_unverifiable_reply()
            .map(|(client, request, _)| (client, request));
        assert_eq!(named, Some((7, 3)), "a damaged body is named");
    }

    #[test]
    fn a_full_table_evicts_the_client_that_committed_earliest() {
        let mut table = ClientTable::default();
        for client in 0..CLIENT_TABLE_CLIENTS_MAX as u128 {
            // Client 5 committed first.
            let op = if client == 5 { 0 } else { 100 + client as u64 };
            table.record(client, 1, op, Vec::new(), Some(ProcessId(0)));
        }
        table.record(u128::MAX, 1, 1_000_000, Vec::new(), Some(ProcessId(0)));
        assert_eq!(table.len(), CLIENT_TABLE_CLIENTS_MAX);
        assert_eq!(table.check(5, 1), Dedup::New, "client 5 was evicted");
        assert!(matches!(table.check(6, 1), Dedup::Duplicate(_)));
    }

    /// Three clients seen at different addresses, one with an empty reply.
    fn a_table_of_three_clients() -> ClientTable {
        let mut table = ClientTable::default();
        table.record(u128::MAX, 9, 30, b"reply-max".to_vec(), Some(ProcessId(4)));
        table.record(7, 2, 11, b"reply-7".to_vec(), Some(ProcessId(3)));
        table.record(0, 1, 12, Vec::new(), None);
        table
    }

    #[test]
    fn the_table_round_trips_through_its_encoding_without_addresses() {
        let table = a_table_of_three_clients();
        let bytes = table.encode();
        let decoded = ClientTable::decode(&bytes).expect("a table's own bytes decode");
        assert_eq!(decoded.encode(), bytes);
        assert_eq!(decoded.digest(), table.digest());
        assert_eq!(decoded.len(), 3);
        assert_eq!(decoded.check(7, 2), Dedup::Duplicate(b"reply-7"));
        assert_eq!(decoded.check(u128::MAX, 8), Dedup::Stale);
        assert_eq!(decoded.check(0, 1), Dedup::Duplicate(b""));
        // Where a client was seen is this replica's business, not replicated state.
        assert_eq!(decoded.address(7), None);
        assert_eq!(decoded.address(u128::MAX), None);
        let empty = ClientTable::decode(&ClientTable::default().encode()).expect("the empty table decodes");
        assert!(empty.is_empty());
    }

    #[test]
    fn addresses_do_not_move_the_digest() {
        let mut table = a_table_of_three_clients();
        let before = table.digest();
        table.set_address(7, ProcessId(99));
        assert_eq!(table.digest(), before);
        table.record(7, 3, 13, b"reply-7b".to_vec(), Some(ProcessId(3)));
        assert_ne!(table.digest(), before);
    }

    #[test]
    fn every_truncation_and_a_trailing_byte_are_refused() {
        let bytes = a_table_of_three_clients().encode();
        for len in 0..bytes.len() {
            assert!(
                ClientTable::decode(&bytes[..len]).is_err(),
                "a {len}-byte prefix decoded"
            );
        }
        let mut padded = bytes.clone();
        padded.push(0);
        assert_eq!(
            ClientTable::decode(&padded).err(),
            Some(DecodeError::TrailingBytes { count: 1 })
        );
    }

    /// An encoding written by hand: `entries` as (client, request, op, reply length),
    /// the reply bytes all zero.
    fn encoded(count: u64, entries: &[(u128, u64, u64, usize)]) -> Vec<u8> {
        let mut w = Writer::new();
        w.varint(count);
        for &(client, request, op, reply_bytes) in entries {
            w.u128(client);
            w.u64(request);
            w.u64(op);
            w.bytes(&vec![0; reply_bytes]);
        }
        w.finish()
    }

    #[test]
    fn client_ids_must_be_strictly_ascending() {
        let descending = encoded(2, &[(7, 1, 1, 0), (3, 1, 2, 0)]);
        assert_eq!(
            ClientTable::decode(&descending).err(),
            Some(DecodeError::NonCanonical { field: "client id" })
        );
        let repeated = encoded(2, &[(7, 1, 1, 0), (7, 2, 2, 0)]);
        assert_eq!(
            ClientTable::decode(&repeated).err(),
            Some(DecodeError::NonCanonical { field: "client id" })
        );
    }

    #[test]
    fn too_many_clients_or_an_oversized_reply_are_refused_before_allocation() {
        let too_many = encoded(CLIENT_TABLE_CLIENTS_MAX as u64 + 1, &[]);
        assert!(matches!(
            ClientTable::decode(&too_many),
            Err(DecodeError::TooLong {
                field: "client count",
                ..
            })
        ));
        // Only the length is written: the claim alone must be refused.
        let mut w = Writer::new();
        w.varint(1);
        w.u128(1);
        w.u64(1);
        w.u64(1);
        w.varint(FRAME_BYTES_MAX as u64 + 1);
        assert!(matches!(
            ClientTable::decode(&w.finish()),
            Err(DecodeError::TooLong {
                field: "client reply",
                ..
            })
        ));
        let largest = encoded(1, &[(1, 1, 1, FRAME_BYTES_MAX)]);
        assert!(ClientTable::decode(&largest).is_ok(), "a reply of a whole frame fits");
    }
}
