//! Hostile input against real `node` processes: what a careful attacker on the same
//! network tries, each attack checked to be refused while the cluster serves.
//!
//! - a forged replica hello (the old unauthenticated one, and the new one without a
//!   proof) followed by forged VSR frames, a view of 2^64-1 among them: refused, the
//!   view does not move, and the cluster still fails over after `kill -9` of its primary;
//! - slow-loris: 1,000 client connections that each send a header declaring a 1 MiB
//!   body and 100 bytes of it: the node's memory stays bounded and comes back after;
//! - 5,000 idle connections from one address: a client from another still logs in;
//! - unknown and undecodable operations: an explicit `Malformed` refusal;
//! - a login flood: throttled at the node, after a few failures, without replicated ops.
//!
//! Figures (RSS, reply times, throttled counts) are printed; run with `--nocapture`.
//! `NODE_UNDER_TEST=path/to/old/node` runs the suite against another build (which
//! is how it was shown to fail before these defences existed).

#![allow(clippy::disallowed_methods, reason = "tests time their deadlines on the wall clock")]

mod support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use cluster::metadata::{DEFAULT_ROOT_PASSWORD, MetadataOp, MetadataReply, ROOT_USERNAME};
use cluster::node::HostedGroup;
use cluster::server::cluster_header_id;
use cluster::vsr::{ClientError, Status};
use cluster::wire::{self, Command, FRAME_BYTES_MAX, HEADER_BYTES, Header};
use support::{ANSWER_TIMEOUT, LoopbackCluster, read_frame, request, status};

/// The attacks open thousands of sockets and start clusters: one test at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The node's resident memory, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the node's /proc status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc status")
}

/// A TCP connection to `to` from source address `from` (loopback has all of
/// 127.0.0.0/8, so a test can be two addresses at once).
fn connect_from(from: &str, to: SocketAddr) -> std::io::Result<TcpStream> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime
        .block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(format!("{from}:0").parse().expect("an address"))?;
            let stream = socket.connect(to).await?;
            stream.into_std()
        })
        .and_then(|stream| {
            stream.set_nonblocking(false)?;
            Ok(stream)
        })
}

/// The metadata group as the node at `address` holds it.
fn metadata(cluster: &LoopbackCluster, address: SocketAddr) -> Option<HostedGroup> {
    status(&cluster.name, address, 0).and_then(|status| status.hosted)
}

/// The metadata group's (view, status) on `address`.
fn metadata_view(cluster: &LoopbackCluster, address: SocketAddr) -> Option<(u64, Status)> {
    metadata(cluster, address).map(|group| (group.view, group.status))
}

/// Whether the node `index` leads the metadata group in a normal view.
fn leads(cluster: &LoopbackCluster, index: usize) -> bool {
    metadata(cluster, cluster.client_addresses()[index])
        .is_some_and(|group| group.status == Status::Normal && usize::from(group.primary) == index)
}

/// Wait until some node leads the metadata group in a normal view; its index.
fn wait_for_primary(cluster: &LoopbackCluster) -> usize {
    let started = Instant::now();
    while started.elapsed() < ANSWER_TIMEOUT * 3 {
        if let Some(index) = (0..cluster.client_addresses().len()).find(|&index| leads(cluster, index)) {
            return index;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no metadata primary within {:?}", ANSWER_TIMEOUT * 3);
}

/// Log in as `username` with `password` on `stream` (connected to the metadata
/// primary: a refusal is returned, not followed). The answer: the reply or the
/// refusal, and how long it took.
fn try_login(
    cluster: &str,
    stream: &mut TcpStream,
    client: u128,
    username: &str,
    password: &str,
) -> (Result<MetadataReply, Option<ClientError>>, Duration) {
    let op = MetadataOp::LoginUser {
        username: username.to_owned(),
        password: password.to_owned(),
    };
    let sent = Instant::now();
    stream
        .write_all(&request(cluster, client, 1, 0, op.operation_code(), &op.encode()))
        .expect("send a login");
    let (header, body) = read_frame(stream).expect("the login is answered");
    let took = sent.elapsed();
    match header.command {
        Command::Reply => (MetadataReply::decode(&body).map_err(|_| None), took),
        Command::Refused => (Err(ClientError::decode(&body)), took),
        other => panic!("a login answered with {other:?}"),
    }
}

/// Log in as root on a fresh connection to the metadata primary: the connection
/// (bound to the session) and the session id.
fn logged_in(cluster: &LoopbackCluster, primary: usize, client: u128) -> (TcpStream, u64) {
    let address = cluster.client_addresses()[primary];
    let mut stream = TcpStream::connect(address).expect("connect");
    match try_login(&cluster.name, &mut stream, client, ROOT_USERNAME, DEFAULT_ROOT_PASSWORD).0 {
        Ok(MetadataReply::LoggedIn { session, .. }) => (stream, session),
        other => panic!("root's login answered {other:?}"),
    }
}

/// A sealed frame from "replica `replica`": what an attacker who knows the wire format
/// and the cluster's name can make (checksums are not secrets).
fn forged(cluster: &str, command: Command, replica: u8, view: u64) -> Vec<u8> {
    let mut header = Header::new(command);
    header.cluster = cluster_header_id(cluster);
    header.group = 0;
    header.replica = replica;
    header.view = view;
    header.log_view = view.min(wire::VIEW_MAX);
    wire::seal_header(header, &[])
}

/// Whether the node closed `stream` within a few seconds (a read sees its end or an error).
fn closed_by_node(stream: &mut TcpStream) -> bool {
    stream.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    let mut byte = [0u8; 64];
    loop {
        match stream.read(&mut byte) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(error) => {
                return !matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                );
            }
        }
    }
}

#[test]
fn forged_replica_hellos_and_vsr_frames_are_refused_and_the_view_does_not_move() {
    let _serial = one_at_a_time();
    let mut cluster = LoopbackCluster::new("forged-peer", 3, 1);
    cluster.start_all();
    let primary = wait_for_primary(&cluster);
    let before: Vec<_> = cluster
        .client_addresses()
        .into_iter()
        .map(|address| metadata_view(&cluster, address).expect("status").0)
        .collect();
    let forged_view = before.iter().max().copied().unwrap_or(0) + 1_000;
    let cluster_id = cluster_header_id(&cluster.name);
    let mut refused = 0;
    for (index, address) in cluster.replica_addresses().into_iter().enumerate() {
        let claimed = u8::try_from((index + 1) % 3).expect("small");
        // The hello of the build that trusted any hello: magic v1, cluster, replica.
        let mut old_hello = [0u8; 24];
        old_hello[..8].copy_from_slice(b"VSRPEER\x01");
        old_hello[8..16].copy_from_slice(&cluster_id.to_le_bytes());
        old_hello[16] = claimed;
        old_hello[17] = 3;
        // The current hello, with a nonce and then a proof the attacker has to guess.
        let mut new_hello = [0u8; 56];
        new_hello[..8].copy_from_slice(b"VSRPEER\x02");
        new_hello[8..16].copy_from_slice(&cluster_id.to_le_bytes());
        new_hello[16] = claimed;
        new_hello[17] = 3;
        new_hello[24..].copy_from_slice(&[7u8; 32]);
        for opening in [&old_hello[..], &new_hello[..]] {
            let mut stream = TcpStream::connect(address).expect("connect to the replica port");
            let _ = stream.write_all(opening);
            if opening.len() == new_hello.len() {
                // Whatever challenge comes back, answer it with a guess.
                let _ = stream.write_all(&[0u8; 32]);
            }
            for frame in [
                forged(&cluster.name, Command::StartViewChange, claimed, forged_view),
                forged(&cluster.name, Command::StartViewChange, claimed, u64::MAX),
                forged(&cluster.name, Command::LeaveView, claimed, forged_view),
                forged(&cluster.name, Command::DoViewChange, claimed, forged_view),
            ] {
                let _ = stream.write_all(&frame);
            }
            if closed_by_node(&mut stream) {
                refused += 1;
            }
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let after: Vec<_> = cluster
        .client_addresses()
        .into_iter()
        .map(|address| metadata_view(&cluster, address).expect("every node still answers"))
        .collect();
    println!("views before {before:?}, after {after:?}; {refused} of 6 forged connections closed by the node");
    for (index, (view, _)) in after.iter().enumerate() {
        assert!(
            *view < forged_view,
            "node {index} moved to view {view}: it acted on a forged frame"
        );
    }
    assert_eq!(refused, 6, "every forged connection is closed by the node");
    // The original attack ended here: the next view change overflowed `view + 1` on
    // every node. Kill the primary: the survivors must elect and serve.
    cluster.kill(primary);
    let survivors: Vec<usize> = (0..3).filter(|index| *index != primary).collect();
    let started = Instant::now();
    let new_primary = loop {
        assert!(
            started.elapsed() < ANSWER_TIMEOUT * 3,
            "no survivor took over within {:?}",
            ANSWER_TIMEOUT * 3
        );
        for &index in &survivors {
            assert!(cluster.running(index), "node {index} exited:\n{}", cluster.log(index));
        }
        let leading = survivors.iter().copied().find(|&index| leads(&cluster, index));
        if let Some(index) = leading {
            break index;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (_, session) = logged_in(&cluster, new_primary, 0xfa11);
    println!("after kill -9 of node {primary}, node {new_primary} leads and logged root in (session {session})");
    for index in 0..3 {
        if index != primary {
            assert!(
                cluster.log(index).contains("refused a replica connection"),
                "node {index} logs the refusals"
            );
        }
    }
}

/// How far above its baseline a node's RSS may settle once a slow-loris wave has
/// closed, in KiB: room for what the node keeps for good after its first thousand
/// connections (the accept loop's and the timer wheel's grown tables, the log's
/// buffers), far below the ~10 MB a wave leaves when freed memory is not returned.
const RSS_RETURN_SLACK_KIB: u64 = 2 * 1024;

#[test]
fn a_slow_loris_of_a_thousand_connections_costs_the_node_little_memory_and_it_returns_after() {
    let _serial = one_at_a_time();
    let mut cluster = LoopbackCluster::new("slow-loris", 1, 1);
    cluster.start_all();
    wait_for_primary(&cluster);
    let pid = cluster.pid(0).expect("the node runs");
    let baseline = rss_kib(pid);
    // A real request header declaring a 1 MiB body (its checksum is right), then 100
    // bytes of the body and nothing more.
    let body = vec![0u8; FRAME_BYTES_MAX - HEADER_BYTES];
    let frame = request(&cluster.name, 9, 1, 0, 1, &body);
    let address = cluster.client_addresses()[0];
    let wave = || {
        let mut connections: Vec<TcpStream> = Vec::new();
        for _ in 0..1_000 {
            let mut stream = TcpStream::connect(address).expect("connect");
            stream
                .write_all(&frame[..HEADER_BYTES + 100])
                .expect("send the start of a frame");
            connections.push(stream);
        }
        std::thread::sleep(Duration::from_secs(1));
        let held = rss_kib(pid);
        drop(connections);
        std::thread::sleep(Duration::from_secs(2));
        (held, rss_kib(pid))
    };
    let (held, after) = wave();
    let (held_again, after_again) = wave();
    println!(
        "slow-loris, 1,000 connections: node RSS {baseline} KiB before, {held} KiB while held, {after} KiB after they \
         closed; a second wave: {held_again} KiB held, {after_again} KiB after"
    );
    assert!(held < 64 * 1024, "RSS {held} KiB while 1,000 slow frames are held");
    assert!(
        held_again < 64 * 1024,
        "RSS {held_again} KiB while the second wave is held"
    );
    // What a wave held is handed back when it closes (the node returns freed heap
    // pages to the OS after a burst of closed connections, runtime/memory.rs): RSS
    // comes back to within RSS_RETURN_SLACK_KIB of the baseline, after each wave.
    // Without that return it settled about 10 MB above the baseline.
    for (wave, after) in [("first", after), ("second", after_again)] {
        assert!(
            after <= baseline + RSS_RETURN_SLACK_KIB,
            "RSS {after} KiB after the {wave} wave closed, against a baseline of {baseline} KiB: \
             the connections' memory was not returned"
        );
    }
    assert!(status(&cluster.name, address, 0).is_some(), "the node still answers");
}

#[test]
fn five_thousand_idle_connections_from_one_address_do_not_lock_out_another() {
    let _serial = one_at_a_time();
    let mut cluster = LoopbackCluster::new("idle-flood", 1, 1);
    cluster.start_all();
    let primary = wait_for_primary(&cluster);
    let address = cluster.client_addresses()[0];
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let open_files = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .and_then(|line| line.split_whitespace().nth(3))
        .and_then(|soft| soft.parse::<u64>().ok());
    assert!(
        open_files.is_none_or(|soft| soft >= 6_000),
        "this test holds 5,000 connections; the soft limit on open files is {open_files:?}: run it through \
         scripts/test.sh, which raises it, or `ulimit -n 12000` first"
    );
    let mut idle: Vec<TcpStream> = Vec::new();
    for _ in 0..5_000 {
        match connect_from("127.0.0.2", address) {
            Ok(stream) => idle.push(stream),
            Err(error) => panic!("the attacker's connect failed: {error}"),
        }
    }
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    let (mut stream, session) = logged_in(&cluster, primary, 0x0dd);
    let create = MetadataOp::CreateStream {
        name: "after-the-flood".to_owned(),
    };
    let mut header = Header::new(Command::Request);
    header.cluster = cluster_header_id(&cluster.name);
    header.client = 0x0dd;
    header.request = 2;
    header.context = u128::from(session);
    header.operation = create.operation_code();
    stream
        .write_all(&wire::seal_header(header, &create.encode()))
        .expect("send");
    let (reply, body) = read_frame(&mut stream).expect("the create is answered");
    println!(
        "with 5,000 idle connections from 127.0.0.2, a client from 127.0.0.1 logged in and created a stream in {:?}",
        started.elapsed()
    );
    assert_eq!(reply.command, Command::Reply, "{:?}", ClientError::decode(&body));
    assert!(matches!(
        MetadataReply::decode(&body),
        Ok(MetadataReply::StreamCreated { .. })
    ));
    drop(idle);
}

#[test]
fn unknown_and_undecodable_operations_get_an_explicit_refusal() {
    let _serial = one_at_a_time();
    let mut cluster = LoopbackCluster::new("malformed-ops", 1, 1);
    cluster.start_all();
    let primary = wait_for_primary(&cluster);
    let (mut stream, session) = logged_in(&cluster, primary, 0xbad);
    let create = MetadataOp::CreateStream { name: "x".to_owned() };
    for (number, (operation, body)) in [(250u8, vec![1u8, 2, 3]), (create.operation_code(), vec![0xff; 3])]
        .into_iter()
        .enumerate()
    {
        let mut header = Header::new(Command::Request);
        header.cluster = cluster_header_id(&cluster.name);
        header.client = 0xbad;
        header.request = 2 + number as u64;
        header.context = u128::from(session);
        header.operation = operation;
        let sent = Instant::now();
        stream.write_all(&wire::seal_header(header, &body)).expect("send");
        let answer = read_frame(&mut stream);
        let took = sent.elapsed();
        println!("operation {operation} with a body of {body:?}: answered in {took:?}");
        let (header, body) = answer.expect("an answer, not silence");
        assert_eq!(header.command, Command::Refused);
        assert_eq!(ClientError::decode(&body), Some(ClientError::Malformed));
    }
}

#[test]
fn a_login_flood_is_throttled_at_the_node_after_a_few_failures() {
    let _serial = one_at_a_time();
    let mut cluster = LoopbackCluster::new("login-flood", 1, 1);
    cluster.start_all();
    let primary = wait_for_primary(&cluster);
    let address = cluster.client_addresses()[primary];
    let mut stream = TcpStream::connect(address).expect("connect");
    let (mut failed, mut throttled, mut slowest) = (0, 0, Duration::ZERO);
    let started = Instant::now();
    for attempt in 0..200u128 {
        let (answer, took) = try_login(&cluster.name, &mut stream, 0x1000 + attempt, ROOT_USERNAME, "guess");
        slowest = slowest.max(took);
        match answer {
            Ok(MetadataReply::InvalidCredentials) => failed += 1,
            Err(Some(ClientError::Throttled)) => throttled += 1,
            other => panic!("a wrong password answered {other:?}"),
        }
    }
    let metadata_head = metadata(&cluster, address).expect("status").commit_max;
    println!(
        "200 wrong passwords in {:?}: {failed} tried (InvalidCredentials), {throttled} throttled, slowest answer \
         {slowest:?}; metadata commit point {metadata_head}",
        started.elapsed()
    );
    assert_eq!(failed, 10, "the address's first failures are tried");
    assert_eq!(throttled, 190, "the rest are refused at the node");
    // The address is held off; the user is not (10 failures are under its bound), so
    // root still logs in from elsewhere.
    let mut other = connect_from("127.0.0.2", address).expect("connect from another address");
    match try_login(&cluster.name, &mut other, 0x2000, ROOT_USERNAME, DEFAULT_ROOT_PASSWORD).0 {
        Ok(MetadataReply::LoggedIn { .. }) => {}
        other => panic!("root from another address answered {other:?}"),
    }
}
