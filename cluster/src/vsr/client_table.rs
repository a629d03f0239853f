//! The client table: the last committed request of each client and its reply, so a
//! resent request is answered from the table instead of executing twice.

use std::collections::BTreeMap;

use super::constants::CLIENT_TABLE_CLIENTS_MAX;
use crate::seam::ProcessId;

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
}
