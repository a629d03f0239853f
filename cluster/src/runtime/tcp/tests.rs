//! The transport's replica port in-process, over real loopback sockets: what a proven
//! connection replaces and what an unproven one cannot.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::TcpTransport;
use crate::runtime::handshake::{self, CHALLENGE_BYTES, ClusterSecret, Hello, NONCE_BYTES, PROOF_BYTES};
use crate::seam::{Inbox, ProcessId};
use crate::wire::{Command, Header, seal_header};

const CLUSTER: u64 = 0x5eed_cafe;
const REPLICAS: u8 = 2;
/// How long a test waits for the transport to act before it fails.
const WAIT_MS: u64 = 5_000;

fn secret(text: &str) -> ClusterSecret {
    ClusterSecret::from_text(text.as_bytes()).expect("a secret long enough")
}

/// Dial `address` as replica 1 and run the dialler's side of the handshake with
/// `secret`; with the wrong secret, send a made-up proof (the acceptor's challenge
/// does not verify, so no real one can be made).
async fn dial_as_replica_one(address: std::net::SocketAddr, secret: &ClusterSecret) -> TcpStream {
    let mut stream = TcpStream::connect(address).await.expect("connect");
    let hello = Hello {
        cluster: CLUSTER,
        replica: 1,
        replicas: REPLICAS,
        nonce: [7; NONCE_BYTES],
    }
    .encode();
    stream.write_all(&hello).await.expect("hello");
    let mut challenge = [0u8; CHALLENGE_BYTES];
    stream.read_exact(&mut challenge).await.expect("challenge");
    let proof = handshake::answer(secret, &hello, 0, &challenge).unwrap_or([0xAB; PROOF_BYTES]);
    stream.write_all(&proof).await.expect("proof");
    stream
}

/// A Commit frame of this cluster "from" replica 1, told apart by its commit point.
fn frame(commit: u64) -> Vec<u8> {
    let mut header = Header::new(Command::Commit);
    header.cluster = CLUSTER;
    header.replica = 1;
    header.commit = commit;
    seal_header(header, &[])
}

/// Wait until `done` holds, or fail naming `what`.
async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..WAIT_MS / 10 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("not within {WAIT_MS} ms: {what}");
}

/// The commit points of the frames the inbox holds, all from replica 1.
fn received(inbox: &Inbox) -> Vec<u64> {
    std::iter::from_fn(|| inbox.try_recv())
        .map(|(from, bytes)| {
            assert_eq!(from, ProcessId(1), "frames on replica 1's connection are replica 1's");
            Header::decode(&bytes).expect("a delivered frame decodes").commit
        })
        .collect()
}

#[test]
fn a_proven_connection_replaces_the_older_one_and_an_unproven_one_replaces_nothing() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async {
        let inbox = Inbox::new();
        let the_secret = secret("the cluster's secret, thirty-two bytes or more");
        let transport = TcpTransport::new(CLUSTER, 0, REPLICAS, the_secret.clone(), vec![inbox.clone()].into());
        let replica_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = replica_listener.local_addr().expect("address");
        let client_listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        transport.start(&[], Some(replica_listener), client_listener);

        // Replica 1 connects and is heard.
        let mut first = dial_as_replica_one(address, &the_secret).await;
        first.write_all(&frame(1)).await.expect("send");
        wait_for("the first connection's frame", || !inbox.is_empty()).await;
        assert_eq!(received(&inbox), vec![1]);

        // It connects again (a restart; the old connection may be half open): the new
        // connection replaces the old, whose reader is stopped and its socket closed.
        let mut second = dial_as_replica_one(address, &the_secret).await;
        wait_for("the replacement", || transport.stats().peer_connections_replaced == 1).await;
        let mut byte = [0u8; 1];
        let ended = tokio::time::timeout(Duration::from_millis(WAIT_MS), first.read(&mut byte))
            .await
            .expect("the replaced connection is closed by the node");
        assert!(
            matches!(ended, Ok(0) | Err(_)),
            "the replaced connection ended: {ended:?}"
        );
        let _ = first.write_all(&frame(2)).await;
        second.write_all(&frame(3)).await.expect("send");
        wait_for("the second connection's frame", || !inbox.is_empty()).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(received(&inbox), vec![3], "only the replacing connection is read");

        // Someone without the secret claims replica 1: refused, and replica 1's proven
        // connection stays.
        let mut impostor = dial_as_replica_one(address, &secret("not the cluster's secret at all, but long")).await;
        wait_for("the impostor's refusal", || {
            transport.stats().peer_connections_refused == 1
        })
        .await;
        let _ = impostor.write_all(&frame(4)).await;
        second.write_all(&frame(5)).await.expect("send");
        wait_for("the proven connection's frame", || !inbox.is_empty()).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(received(&inbox), vec![5], "the impostor's frame was not read");
        let stats = transport.stats();
        assert_eq!(
            (
                stats.peer_connections,
                stats.peer_connections_replaced,
                stats.peer_connections_refused
            ),
            (2, 1, 1)
        );
    });
}
