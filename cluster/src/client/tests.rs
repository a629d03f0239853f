//! The client against fake nodes: tokio listeners on loopback that read frames and
//! answer from a script, so each rule of the discipline is exercised on real sockets.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use super::*;
use crate::metadata::{BIND_SESSION_CODE, BindSession};
use crate::node::HostedGroup;
use crate::partition::PartitionReply;
use crate::runtime::framing::read_frame;
use crate::vsr::{Status, seal_refusal};
use crate::wire::HEADER_BYTES;

const CLUSTER: &str = "fake";
/// A partition group for the tests.
const GROUP: u64 = 5 << 10;
/// Bounds every test by: a test that hangs fails instead.
const TEST_DEADLINE: Duration = Duration::from_secs(10);

/// One frame a fake node received.
#[derive(Clone, Debug)]
struct Received {
    /// Which accepted connection (0-based, in accept order).
    connection: usize,
    header: Header,
    frame: Vec<u8>,
}

/// What a fake node does after a frame.
enum Act {
    /// Write these bytes.
    Send(Vec<u8>),
    /// Close the connection.
    Close,
}

/// The script: given the frame's index among everything this node received, the frame,
/// and its body, what to do.
type Script = Arc<dyn Fn(usize, &Received, &[u8]) -> Vec<Act> + Send + Sync>;

struct FakeNode {
    address: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
}

impl FakeNode {
    async fn start(replica: u8, script: Script) -> FakeNode {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let received: Arc<Mutex<Vec<Received>>> = Arc::default();
        let log = received.clone();
        let cluster = cluster_header_id(CLUSTER);
        let _ = replica;
        tokio::spawn(async move {
            let mut connection = 0usize;
            while let Ok((stream, _)) = listener.accept().await {
                let log = log.clone();
                let script = script.clone();
                let this = connection;
                connection += 1;
                tokio::spawn(async move {
                    let (read, mut write) = stream.into_split();
                    let mut read = tokio::io::BufReader::new(read);
                    while let Ok(frame) = read_frame(&mut read, cluster).await {
                        let Ok((header, body)) = wire::open(&frame) else { return };
                        let got = Received {
                            connection: this,
                            header,
                            frame: frame.clone(),
                        };
                        let index = {
                            let mut log = log.lock().expect("log");
                            log.push(got.clone());
                            log.len() - 1
                        };
                        for act in script(index, &got, body) {
                            match act {
                                Act::Send(bytes) => {
                                    if write.write_all(&bytes).await.is_err() {
                                        return;
                                    }
                                }
                                Act::Close => return,
                            }
                        }
                    }
                });
            }
        });
        FakeNode { address, received }
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().expect("log").clone()
    }
}

/// Replica 0's `LoggedIn` answer to a login `request` applied at op `session` (a
/// session's id is its login's op).
fn logged_in(request: &Header, user_id: u32, session: u64, secret: u128) -> Vec<u8> {
    let body = MetadataReply::LoggedIn {
        user_id,
        session,
        secret,
    };
    reply(request, 0, session, &body.encode())
}

/// A reply from `replica` to `request` with `body`, at op `op`.
fn reply(request: &Header, replica: u8, op: u64, body: &[u8]) -> Vec<u8> {
    let mut header = Header::answering(Command::Reply, request, replica);
    header.op = op;
    header.commit = op;
    wire::seal_header(header, body)
}

/// A refusal of `request` by `replica`, naming `hint` as the primary.
fn refusal(request: &Header, replica: u8, hint: u8, error: Refusal) -> Vec<u8> {
    let mut sender = Header::new(Command::Refused);
    sender.cluster = request.cluster;
    sender.group = request.group;
    sender.replica = replica;
    seal_refusal(sender, request, hint, error)
}

fn appended(request: &Header, replica: u8) -> Vec<u8> {
    let body = PartitionReply::Appended {
        base_offset: 10,
        last_offset: 11,
    }
    .encode();
    reply(request, replica, 3, &body)
}

fn batch() -> Vec<Message> {
    vec![
        Message {
            id: 1,
            payload: b"one".to_vec(),
        },
        Message {
            id: 2,
            payload: b"two".to_vec(),
        },
    ]
}

/// A configuration with short bounds so failure paths finish quickly.
fn quick_config(nodes: Vec<SocketAddr>) -> ClientConfig {
    ClientConfig {
        client_id: Some(0xC11E_0001),
        request_budget: Duration::from_millis(600),
        reply_timeout: Duration::from_millis(150),
        resend_interval: Duration::from_millis(20),
        node_refusal_window: Duration::from_millis(100),
        dial_timeout: Duration::from_millis(200),
        write_timeout: Duration::from_millis(200),
        status_timeout: Duration::from_millis(300),
        ..ClientConfig::new(CLUSTER, nodes)
    }
}

/// Run `test` on a current-thread runtime, failing it if it takes longer than
/// [`TEST_DEADLINE`].
fn run<F: std::future::Future<Output = ()>>(test: F) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        tokio::time::timeout(TEST_DEADLINE, test)
            .await
            .expect("test took too long");
    });
}

/// An address nothing listens on.
async fn dead_address() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    listener.local_addr().expect("address")
}

#[test]
fn a_refusal_naming_another_primary_redirects_there_at_once() {
    run(async {
        let backup = FakeNode::start(
            0,
            Arc::new(|_, got, _| vec![Act::Send(refusal(&got.header, 0, 1, Refusal::TransientNotAccepted))]),
        )
        .await;
        let primary = FakeNode::start(1, Arc::new(|_, got, _| vec![Act::Send(appended(&got.header, 1))])).await;
        let mut client = Client::new(quick_config(vec![backup.address, primary.address])).expect("client");
        let offsets = client.send_messages(GROUP, batch()).await.expect("appended");
        assert_eq!(offsets, (10, 11));
        let (to_backup, to_primary) = (backup.received(), primary.received());
        assert_eq!(to_backup.len(), 1);
        assert_eq!(to_primary.len(), 1);
        assert_eq!(
            to_backup[0].frame, to_primary[0].frame,
            "the same bytes went to the hinted node"
        );
        let stats = client.stats();
        assert_eq!((stats.redirects, stats.refusals, stats.replies), (1, 1, 1));
        // The next request to that group starts at the node that answered.
        client.send_messages(GROUP, batch()).await.expect("appended");
        assert_eq!(backup.received().len(), 1, "the leader memory skipped the backup");
        assert_eq!(primary.received().len(), 2);
        assert_eq!(primary.received()[1].header.request, 2);
    });
}

#[test]
fn unbound_binds_the_session_then_resends_the_same_request_bytes() {
    run(async {
        let node = FakeNode::start(
            0,
            Arc::new(|index, got, _| {
                let header = &got.header;
                let answer = match index {
                    0 => logged_in(header, 0, 42, 0xBEEF),
                    1 => refusal(header, 0, 0, Refusal::Unbound),
                    2 => {
                        let mut bound = Header::new(Command::Reply);
                        bound.cluster = header.cluster;
                        bound.client = header.client;
                        bound.request = header.request;
                        bound.operation = BIND_SESSION_CODE;
                        bound.commit = 44;
                        wire::seal_header(bound, &MetadataReply::SessionBound { user_id: 0 }.encode())
                    }
                    _ => appended(header, 0),
                };
                vec![Act::Send(answer)]
            }),
        )
        .await;
        let mut client = Client::new(quick_config(vec![node.address])).expect("client");
        assert_eq!(client.login("root", "secret").await, Ok(0));
        assert_eq!(client.session().map(|s| s.session), Some(42));
        assert_eq!(client.send_messages(GROUP, batch()).await, Ok((10, 11)));
        let got = node.received();
        assert_eq!(got.len(), 4, "login, send, bind, send again");
        let (send, bind, resend) = (&got[1], &got[2], &got[3]);
        assert_eq!(send.frame, resend.frame, "the same request bytes after the bind");
        assert_eq!(send.header.request, 2);
        assert_eq!(send.header.context, 42, "the request names its session");
        assert_eq!(
            send.header.commit, 42,
            "the request carries the newest metadata op seen"
        );
        assert_eq!(bind.header.operation, BIND_SESSION_CODE);
        assert_eq!(bind.header.group, 0);
        assert_eq!(
            bind.header.request, send.header.request,
            "the bind uses the request's number"
        );
        assert_eq!(bind.header.commit, 42);
        let body = &bind.frame[HEADER_BYTES..];
        assert_eq!(
            BindSession::decode(body),
            Ok(BindSession {
                session: 42,
                secret: 0xBEEF
            })
        );
        assert!(got.iter().all(|r| r.connection == 0), "one connection throughout");
        assert_eq!(client.newest_metadata_op(), 44, "the bind reply's commit is remembered");
        let stats = client.stats();
        assert_eq!((stats.unbound, stats.binds, stats.replies), (1, 1, 2));
    });
}

#[test]
fn a_refused_bind_forgets_the_session_and_reports_unauthenticated() {
    run(async {
        let node = FakeNode::start(
            0,
            Arc::new(|index, got, _| {
                let header = &got.header;
                let answer = match index {
                    0 => logged_in(header, 3, 7, 1),
                    1 => refusal(header, 0, 0, Refusal::Unbound),
                    _ => {
                        let mut refused = Header::new(Command::Reply);
                        refused.cluster = header.cluster;
                        refused.client = header.client;
                        refused.request = header.request;
                        refused.operation = BIND_SESSION_CODE;
                        wire::seal_header(refused, &MetadataReply::SessionRefused.encode())
                    }
                };
                vec![Act::Send(answer)]
            }),
        )
        .await;
        let mut client = Client::new(quick_config(vec![node.address])).expect("client");
        assert_eq!(client.login("u", "p").await, Ok(3));
        let result = client.send_messages(GROUP, batch()).await;
        assert!(
            matches!(result, Err(Error::Unauthenticated { node: Some(0), .. })),
            "{result:?}"
        );
        assert!(client.session().is_none());
        assert_eq!(client.stats().binds_refused, 1);
    });
}

#[test]
fn not_committed_then_success_on_the_resend_within_the_budget() {
    run(async {
        let node = FakeNode::start(
            0,
            Arc::new(|index, got, _| {
                if index == 0 {
                    vec![Act::Send(refusal(&got.header, 0, 0, Refusal::TransientNotCommitted))]
                } else {
                    vec![Act::Send(appended(&got.header, 0))]
                }
            }),
        )
        .await;
        let mut client = Client::new(quick_config(vec![node.address])).expect("client");
        assert_eq!(client.send_messages(GROUP, batch()).await, Ok((10, 11)));
        let got = node.received();
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0].frame, got[1].frame,
            "resent as the same request (number and bytes)"
        );
        let stats = client.stats();
        assert_eq!((stats.not_committed, stats.resends, stats.replies), (1, 1, 1));
    });
}

#[test]
fn a_budget_of_refusals_only_is_not_accepted_and_moves_across_nodes() {
    run(async {
        let refuse_self = |replica: u8| -> Script {
            Arc::new(move |_, got, _| {
                vec![Act::Send(refusal(
                    &got.header,
                    replica,
                    replica,
                    Refusal::TransientNotAccepted,
                ))]
            })
        };
        let a = FakeNode::start(0, refuse_self(0)).await;
        let b = FakeNode::start(1, refuse_self(1)).await;
        let mut config = quick_config(vec![a.address, b.address]);
        config.request_budget = Duration::from_millis(500);
        let mut client = Client::new(config).expect("client");
        let started = crate::runtime::monotonic_now();
        let result = client.send_messages(GROUP, batch()).await;
        let elapsed = started.elapsed();
        assert!(matches!(result, Err(Error::NotAccepted { .. })), "{result:?}");
        let error = result.expect_err("refused");
        assert!(error.is_safe_to_resend());
        assert!(error.to_string().contains("sending it again is safe"), "{error}");
        // Copies stop a reply timeout (150 ms) before the budget ends; once the last one
        // is refused nothing is outstanding and the answer comes at once.
        assert!(
            elapsed >= Duration::from_millis(300) && elapsed < Duration::from_millis(1_000),
            "{elapsed:?}"
        );
        let (to_a, to_b) = (a.received(), b.received());
        assert!(
            to_a.len() >= 3,
            "resent to the refusing node every interval: {}",
            to_a.len()
        );
        assert!(!to_b.is_empty(), "moved to the next node after the refusal window");
        assert!(
            to_a.iter().chain(&to_b).all(|r| r.frame == to_a[0].frame),
            "always the same bytes"
        );
        let stats = client.stats();
        assert!(stats.moves >= 1);
        assert_eq!(
            stats.refusals as usize,
            to_a.len() + to_b.len(),
            "every copy was refused"
        );
        assert_eq!(stats.redirects, 0, "a node naming itself is no redirect");
    });
}

#[test]
fn a_connection_lost_after_the_write_with_no_answer_anywhere_is_not_committed() {
    run(async {
        let closer = FakeNode::start(0, Arc::new(|_, _, _| vec![Act::Close])).await;
        let dead = dead_address().await;
        let mut config = quick_config(vec![closer.address, dead]);
        config.request_budget = Duration::from_millis(400);
        let mut client = Client::new(config).expect("client");
        let result = client.send_messages(GROUP, batch()).await;
        let Err(error) = result else {
            panic!("expected a failure, got {result:?}");
        };
        assert!(matches!(error, Error::NotCommitted { .. }), "{error:?}");
        assert!(!error.is_safe_to_resend());
        assert!(error.to_string().contains("outcome unknown"), "{error}");
        assert!(error.to_string().contains("append it twice"), "{error}");
        let stats = client.stats();
        assert!(stats.disconnects >= 1);
        assert!(stats.dial_failures >= 1, "the dead node was dialed");
        assert!(stats.reconnects >= 1, "the closing node was redialed");
        assert!(
            closer.received().len() >= 2,
            "copies went again to the node that took them"
        );
    });
}

#[test]
fn a_dead_roster_without_any_write_is_not_accepted() {
    run(async {
        let mut config = quick_config(vec![dead_address().await, dead_address().await]);
        config.request_budget = Duration::from_millis(300);
        let mut client = Client::new(config).expect("client");
        let result = client.send_messages(GROUP, batch()).await;
        assert!(matches!(result, Err(Error::NotAccepted { .. })), "{result:?}");
        let stats = client.stats();
        assert!(stats.dial_failures >= 2);
        assert!(
            stats.dials < 20,
            "redials back off instead of spinning: {} dials",
            stats.dials
        );
    });
}

#[test]
fn frames_for_another_client_or_corrupted_or_stale_are_ignored_and_counted() {
    run(async {
        let node = FakeNode::start(
            0,
            Arc::new(|index, got, _| {
                let header = &got.header;
                match index {
                    // Request 1 is answered normally.
                    0 => vec![Act::Send(appended(header, 0))],
                    // Request 2: a stale duplicate of request 1, a reply for another
                    // client, then a frame whose body checksum is broken (the client
                    // must drop the connection: it cannot trust that stream).
                    1 => {
                        let mut old = *header;
                        old.request -= 1;
                        let mut other = *header;
                        other.client ^= 0xFF;
                        let mut corrupt = appended(header, 0);
                        if let Some(last) = corrupt.last_mut() {
                            *last ^= 1;
                        }
                        vec![
                            Act::Send(appended(&old, 0)),
                            Act::Send(appended(&other, 0)),
                            Act::Send(corrupt),
                        ]
                    }
                    // The resend on a new connection is answered.
                    _ => vec![Act::Send(appended(header, 0))],
                }
            }),
        )
        .await;
        let mut client = Client::new(quick_config(vec![node.address])).expect("client");
        assert_eq!(client.send_messages(GROUP, batch()).await, Ok((10, 11)));
        assert_eq!(client.send_messages(GROUP, batch()).await, Ok((10, 11)));
        let stats = client.stats();
        assert_eq!(stats.replies_stale, 1, "the duplicate of request 1");
        assert_eq!(
            stats.frames_rejected, 2,
            "another client's reply and the corrupted frame"
        );
        assert_eq!(stats.replies, 2);
        let got = node.received();
        assert_eq!(got.len(), 3);
        assert_eq!(got[1].frame, got[2].frame, "the same request resent");
        assert_eq!(got[2].connection, 1, "on a new connection");
        assert_eq!(stats.reconnects, 1);
    });
}

#[test]
fn permission_denied_is_final_and_named() {
    run(async {
        let node = FakeNode::start(
            0,
            Arc::new(|_, got, _| vec![Act::Send(refusal(&got.header, 0, 0, Refusal::PermissionDenied))]),
        )
        .await;
        let mut client = Client::new(quick_config(vec![node.address])).expect("client");
        let result = client.send_messages(GROUP, batch()).await;
        assert_eq!(result, Err(Error::PermissionDenied { group: GROUP, node: 0 }));
        assert_eq!(node.received().len(), 1, "not resent");
    });
}

#[test]
fn committed_error_answers_are_returned_as_such() {
    run(async {
        let node = FakeNode::start(
            0,
            Arc::new(|_, got, _| {
                vec![Act::Send(reply(
                    &got.header,
                    0,
                    9,
                    &MetadataReply::NameAlreadyExists.encode(),
                ))]
            }),
        )
        .await;
        let mut client = Client::new(quick_config(vec![node.address])).expect("client");
        let result = client.create_stream("taken").await;
        assert_eq!(
            result,
            Err(Error::Metadata {
                op: 9,
                reply: MetadataReply::NameAlreadyExists
            })
        );
        assert_eq!(client.newest_metadata_op(), 9);
    });
}

#[test]
fn a_created_topic_names_its_partition_groups_from_the_op_number() {
    run(async {
        let node = FakeNode::start(
            0,
            Arc::new(|_, got, _| {
                vec![Act::Send(reply(
                    &got.header,
                    0,
                    17,
                    &MetadataReply::TopicCreated { topic_id: 2 }.encode(),
                ))]
            }),
        )
        .await;
        let mut client = Client::new(quick_config(vec![node.address])).expect("client");
        let topic = client
            .create_topic(1, "t", 3, Durability::Persisted)
            .await
            .expect("created");
        assert_eq!(topic.topic_id, 2);
        assert_eq!(
            topic.groups,
            (0..3).map(|p| partition_group_id(17, p)).collect::<Vec<_>>()
        );
    });
}

#[test]
fn status_asks_one_node_once_and_reports_an_unreachable_one() {
    run(async {
        let status = GroupStatus {
            replica: 0,
            group: 0,
            hosted: Some(HostedGroup {
                status: Status::Normal,
                view: 3,
                primary: 0,
                commit: 12,
                commit_max: 12,
                head: 12,
                state_digest: 5,
                next_offset: 0,
            }),
            partitions: Vec::new(),
            partitions_truncated: false,
        };
        let answer = status.clone();
        let node = FakeNode::start(
            0,
            Arc::new(move |_, got, _| {
                let mut header = got.header;
                header.operation = GROUP_STATUS_CODE;
                vec![Act::Send(reply(&header, 0, 0, &answer.encode()))]
            }),
        )
        .await;
        let dead = dead_address().await;
        let mut client = Client::new(quick_config(vec![node.address, dead])).expect("client");
        assert_eq!(client.status(0, 0).await, Ok(status));
        assert_eq!(node.received()[0].header.operation, GROUP_STATUS_CODE);
        assert!(matches!(
            client.status(1, 0).await,
            Err(Error::Unreachable { node: 1, .. })
        ));
        assert!(matches!(client.status(2, 0).await, Err(Error::InvalidRequest(_))));
        let metadata = client.cluster_metadata().await;
        assert_eq!(metadata.nodes.len(), 2);
        assert!(metadata.nodes[0].status.is_ok());
        assert!(metadata.nodes[1].status.is_err());
    });
}
