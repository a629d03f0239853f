//! The query confirmation round (`vsr::query`): a primary answers a query only after a
//! replication quorum confirmed, after the query arrived, that it still leads its view.

use super::tests::{Counter, config};
use super::*;
use crate::seam::ProcessId;
use crate::vsr::replica::Outgoing;
use crate::wire::{self, Command, Header};

/// The operation code of the test machine's one query.
const QUERY: u8 = 200;

/// A counter whose query answers the count.
struct Queried(Counter);

impl StateMachine for Queried {
    fn apply(&mut self, header: &Header, body: &[u8]) -> Vec<u8> {
        self.0.apply(header, body)
    }
    fn digest(&self) -> u128 {
        self.0.digest()
    }
    fn snapshot(&self) -> Vec<u8> {
        self.0.snapshot()
    }
    fn restore(&mut self, bytes: &[u8]) -> Result<(), crate::codec::DecodeError> {
        self.0.restore(bytes)
    }
    fn is_query(&self, operation: u8) -> bool {
        operation == QUERY
    }
    fn query(&self, _operation: u8, _body: &[u8]) -> Option<Vec<u8>> {
        Some((self.0).0.to_le_bytes().to_vec())
    }
}

const CLIENT: ProcessId = ProcessId(9);

fn query_frame(request: u64) -> Vec<u8> {
    let mut header = Header::new(Command::Request);
    header.cluster = 7;
    header.client = 0x5EED;
    header.request = request;
    header.operation = QUERY;
    wire::seal_header(header, b"")
}

fn primary(storage_break: StorageBreak) -> Replica<Queried, MemoryStore> {
    Replica::open(
        ReplicaConfig {
            storage_break,
            ..config(0)
        },
        Queried(Counter(0)),
        MemoryStore::new(),
        0,
    )
    .expect("open")
}

fn opened(out: &[Outgoing]) -> Vec<(ProcessId, Header)> {
    out.iter()
        .map(|out| (out.to, wire::open(&out.frame).expect("a sealed frame").0))
        .collect()
}

/// A backup's confirmation of `round` in `view`.
fn commit_ok(from: u8, view: u64, round: u64) -> Vec<u8> {
    let mut header = Header::new(Command::CommitOk);
    header.cluster = 7;
    header.replica = from;
    header.view = view;
    header.request = round;
    wire::seal_header(header, &[])
}

#[test]
fn a_query_is_answered_only_after_a_quorum_confirms_the_primary_still_leads_its_view() {
    let mut primary = primary(StorageBreak::None);
    assert!(primary.is_primary());
    primary.on_frame(CLIENT, &query_frame(1), 0);
    let sent = opened(&primary.drain_outbox().collect::<Vec<_>>());
    // No answer yet: a round asked both backups to confirm view 0.
    assert!(
        sent.iter().all(|(to, _)| *to != CLIENT),
        "answered before any confirmation: {sent:?}"
    );
    let probes: Vec<&Header> = sent
        .iter()
        .filter(|(_, header)| header.command == Command::Commit && header.request != 0)
        .map(|(_, header)| header)
        .collect();
    assert_eq!(probes.len(), 2, "one probe per backup: {sent:?}");
    let round = probes[0].request;
    // A confirmation of another round or view does not count.
    primary.on_frame(ProcessId(1), &commit_ok(1, 0, round + 1), 0);
    primary.on_frame(ProcessId(1), &commit_ok(1, 1, round), 0);
    assert!(primary.drain_outbox().all(|out| out.to != CLIENT));
    // One backup plus the primary is a replication quorum of three.
    primary.on_frame(ProcessId(1), &commit_ok(1, 0, round), 0);
    let answers: Vec<Header> = opened(&primary.drain_outbox().collect::<Vec<_>>())
        .into_iter()
        .filter(|(to, _)| *to == CLIENT)
        .map(|(_, header)| header)
        .collect();
    assert_eq!(answers.len(), 1);
    assert_eq!((answers[0].command, answers[0].request), (Command::Reply, 1));
    assert_eq!(primary.stats().query_rounds_confirmed, 1);
}

#[test]
fn a_query_that_arrives_while_a_round_is_out_waits_for_the_next_round() {
    let mut primary = primary(StorageBreak::None);
    primary.on_frame(CLIENT, &query_frame(1), 0);
    primary.drain_outbox().for_each(drop);
    // A second client's query arrives after the round went out: a backup may already
    // have confirmed that round before this query existed.
    let mut second = Header::new(Command::Request);
    second.cluster = 7;
    second.client = 0x5EEE;
    second.request = 1;
    second.operation = QUERY;
    primary.on_frame(ProcessId(10), &wire::seal_header(second, b""), 0);
    // The clients answered once backup `from` confirms round `round`.
    let mut answered_after = |from: u8, round: u64| -> Vec<ProcessId> {
        primary.on_frame(ProcessId(u32::from(from)), &commit_ok(from, 0, round), 0);
        primary
            .drain_outbox()
            .filter(|out| out.to == CLIENT || out.to == ProcessId(10))
            .map(|out| out.to)
            .collect()
    };
    assert_eq!(
        answered_after(1, 1),
        vec![CLIENT],
        "round 1 answers only the query it started for"
    );
    assert_eq!(
        answered_after(2, 2),
        vec![ProcessId(10)],
        "round 2, started after it, answers it"
    );
}

#[test]
fn a_primary_that_leaves_its_view_refuses_the_queries_waiting_for_confirmation() {
    let mut primary = primary(StorageBreak::None);
    primary.on_frame(CLIENT, &query_frame(1), 0);
    primary.drain_outbox().for_each(drop);
    primary.start_view_change(1);
    // The next input settles the waiting queries.
    primary.tick(0);
    primary.on_frame(ProcessId(1), &commit_ok(1, 0, 1), 0);
    let to_client: Vec<(Command, Option<ClientError>)> = primary
        .drain_outbox()
        .filter(|out| out.to == CLIENT)
        .map(|out| {
            let (header, body) = wire::open(&out.frame).expect("a sealed frame");
            (header.command, ClientError::decode(body))
        })
        .collect();
    assert_eq!(
        to_client,
        vec![(Command::Refused, Some(ClientError::TransientNotAccepted))],
        "refused once (so the client tries the new primary), never answered"
    );
}

#[test]
fn a_backup_confirms_a_round_its_primary_asks_for_and_ignores_ordinary_heartbeats() {
    let mut backup = Replica::open(config(1), Queried(Counter(0)), MemoryStore::new(), 0).expect("open");
    let heartbeat = |round: u64| {
        let mut header = Header::new(Command::Commit);
        header.cluster = 7;
        header.replica = 0;
        header.view = 0;
        header.request = round;
        wire::seal_header(header, &[])
    };
    backup.on_frame(ProcessId(0), &heartbeat(0), 0);
    assert!(
        backup
            .drain_outbox()
            .all(|out| wire::open(&out.frame).expect("sealed").0.command != Command::CommitOk)
    );
    backup.on_frame(ProcessId(0), &heartbeat(7), 0);
    let confirmations: Vec<(ProcessId, u64, u64)> = opened(&backup.drain_outbox().collect::<Vec<_>>())
        .into_iter()
        .filter(|(_, header)| header.command == Command::CommitOk)
        .map(|(to, header)| (to, header.view, header.request))
        .collect();
    assert_eq!(confirmations, vec![(ProcessId(0), 0, 7)]);
}

#[test]
fn the_test_only_break_answers_a_query_at_once_without_a_round() {
    let mut primary = primary(StorageBreak::AnswerQueriesUnconfirmed);
    primary.on_frame(CLIENT, &query_frame(1), 0);
    let sent = opened(&primary.drain_outbox().collect::<Vec<_>>());
    assert!(
        sent.iter()
            .any(|(to, header)| *to == CLIENT && header.command == Command::Reply)
    );
    assert_eq!(primary.stats().query_rounds_started, 0);
}
