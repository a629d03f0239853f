//! The `node` binary as a process: start-up refusals, and what its client port does
//! with bytes that are not frames. Raw sockets on purpose: these tests speak the wire
//! format byte by byte, below any client library.

#![allow(clippy::disallowed_methods, reason = "tests time their deadlines on the wall clock")]

mod support;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use cluster::metadata::{DEFAULT_ROOT_PASSWORD, MetadataOp, MetadataReply, ROOT_USERNAME};
use cluster::node::{GROUP_STATUS_CODE, GroupStatus};
use cluster::server::cluster_header_id;
use cluster::vsr::Status;
use cluster::wire::{self, Command, Header};
use support::{ANSWER_TIMEOUT, LoopbackCluster, read_frame, request, status};

/// Send a login to `address` until a node answers `LoggedIn` (the cluster may still be
/// electing its first primary; a refusal names the primary to try).
fn login(cluster: &str, addresses: &[SocketAddr], client: u128) -> (u8, u64) {
    let op = MetadataOp::LoginUser {
        username: ROOT_USERNAME.to_owned(),
        password: DEFAULT_ROOT_PASSWORD.to_owned(),
    };
    let frame = request(cluster, client, 1, 0, op.operation_code(), &op.encode());
    let started = Instant::now();
    let mut target = 0usize;
    while started.elapsed() < ANSWER_TIMEOUT * 3 {
        if let Ok(mut stream) = TcpStream::connect(addresses[target])
            && stream.write_all(&frame).is_ok()
            && let Some((header, body)) = read_frame(&mut stream)
        {
            match header.command {
                Command::Reply => {
                    if let Ok(MetadataReply::LoggedIn { .. }) = MetadataReply::decode(&body) {
                        return (header.replica, header.op);
                    }
                    panic!("login answered {:?}", MetadataReply::decode(&body));
                }
                Command::Refused => {
                    target = usize::from(header.flags) % addresses.len();
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        target = (target + 1) % addresses.len();
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no node logged the client in within {:?}", ANSWER_TIMEOUT * 3);
}

#[test]
fn three_nodes_replicate_a_login_and_every_node_reports_the_same_metadata() {
    let mut cluster = LoopbackCluster::new("smoke", 3, 2);
    cluster.start_all();
    let addresses = cluster.client_addresses();
    let (primary, op) = login(&cluster.name, &addresses, 0xC11E_0001);
    assert_eq!(primary, 0, "view 0's primary is replica 0");
    // Every node applies the login: same commit, same state digest.
    let started = Instant::now();
    loop {
        let statuses: Vec<GroupStatus> = addresses
            .iter()
            .map(|address| status(&cluster.name, *address, 0).expect("status answered"))
            .collect();
        let hosted: Vec<_> = statuses.iter().map(|s| s.hosted.expect("metadata hosted")).collect();
        if hosted.iter().all(|h| h.commit >= op && h.status == Status::Normal)
            && hosted
                .iter()
                .all(|h| h.commit == hosted[0].commit && h.state_digest == hosted[0].state_digest)
        {
            assert!(hosted.iter().all(|h| h.primary == 0 && h.view == 0), "{hosted:?}");
            break;
        }
        assert!(started.elapsed() < ANSWER_TIMEOUT, "nodes never agreed: {hosted:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_node_pointed_at_another_clusters_data_dir_refuses_to_start_and_says_why() {
    let mut ours = LoopbackCluster::new("ours", 1, 1);
    ours.start_all();
    ours.kill(0);
    let theirs = LoopbackCluster::new("theirs", 1, 1);
    let output = theirs
        .command(0, &ours.data_dir(0))
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("run node");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "exit status; stderr:\n{stderr}");
    assert!(
        stderr.contains("belongs to another cluster") && stderr.contains(&ours.data_dir(0).display().to_string()),
        "the error names the directory and the reason:\n{stderr}"
    );
    // Its own cluster still starts on it.
    ours.spawn(0);
    ours.wait_ready(0);
}

#[test]
fn a_port_in_use_and_a_bad_roster_are_refused_with_the_address_or_field() {
    let holder = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let taken = holder.local_addr().expect("address");
    let cluster = LoopbackCluster::new("port-in-use", 1, 1);
    let output = std::process::Command::new(support::node_binary())
        .args(["--cluster", "x", "--insecure-dev", "--data-dir"])
        .arg(cluster.data_dir(0))
        .arg("--client-address")
        .arg(taken.to_string())
        .output()
        .expect("run node");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&taken.to_string()) && stderr.contains("in use"),
        "{stderr}"
    );
    let output = std::process::Command::new(support::node_binary())
        .args([
            "--cluster",
            "x",
            "--replica",
            "1",
            "--roster",
            "127.0.0.1:1=127.0.0.1",
            "--data-dir",
        ])
        .arg(cluster.data_dir(0))
        .output()
        .expect("run node");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--roster entry 0 client address"), "{stderr}");
}

#[test]
fn malformed_truncated_and_corrupted_frames_are_rejected_and_counted_while_other_clients_are_served() {
    let mut cluster = LoopbackCluster::new("bad-frames", 1, 1);
    cluster.start_all();
    let address = cluster.client_addresses()[0];
    let name = cluster.name.clone();
    let good = request(&name, 5, 1, 0, GROUP_STATUS_CODE, &[]);
    let mut body_corrupted = request(&name, 5, 1, 0, GROUP_STATUS_CODE, b"body");
    *body_corrupted.last_mut().expect("body") ^= 0x40;
    let mut header_corrupted = good.clone();
    header_corrupted[100] ^= 1;
    let foreign = request("another-cluster", 5, 1, 0, GROUP_STATUS_CODE, &[]);
    let not_a_request = {
        let mut header = Header::new(Command::Prepare);
        header.cluster = cluster_header_id(&name);
        wire::seal_header(header, &[])
    };
    let bad: Vec<(&str, Vec<u8>)> = vec![
        ("http", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".repeat(20)),
        ("header checksum", header_corrupted),
        ("body checksum", body_corrupted),
        ("another cluster", foreign),
        ("not a request", not_a_request),
        ("truncated", good[..good.len() / 2].to_vec()),
    ];
    // A well-behaved client connected before, during and after the abuse.
    let mut steady = TcpStream::connect(address).expect("connect");
    for (what, bytes) in &bad {
        let mut stream = TcpStream::connect(address).expect("connect");
        stream.write_all(bytes).expect("write");
        if *what == "truncated" {
            stream.shutdown(std::net::Shutdown::Write).expect("half-close");
        }
        // The node closes the connection without answering.
        assert!(
            read_frame(&mut stream).is_none(),
            "{what}: the node answered a bad frame"
        );
        steady.write_all(&good).expect("write");
        let (header, _) = read_frame(&mut steady).unwrap_or_else(|| panic!("after {what}: steady client not served"));
        assert_eq!(header.command, Command::Reply, "after {what}");
    }
    // Each rejection is counted: the node's log holds one warning per bad frame, the
    // last with the running total.
    let started = Instant::now();
    loop {
        let log = cluster.log(0);
        let rejections = log.matches("rejected a frame from a client").count();
        if rejections == bad.len() {
            assert!(log.contains(&format!("total={}", bad.len())), "{log}");
            break;
        }
        assert!(
            started.elapsed() < ANSWER_TIMEOUT,
            "{rejections} of {} rejections logged:\n{log}",
            bad.len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_node_without_a_cluster_secret_refuses_to_start_and_says_how_to_give_one() {
    let cluster = LoopbackCluster::new("no-secret", 1, 1);
    let holder = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let taken = holder.local_addr().expect("address").to_string();
    let run = |extra: &[&str], env_secret: Option<&str>| {
        let mut command = std::process::Command::new(support::node_binary());
        command
            .args(["--cluster", "x", "--data-dir"])
            .arg(cluster.data_dir(0))
            .args(["--client-address", &taken])
            .args(extra)
            .env_remove(cluster::server::SECRET_ENV);
        if let Some(secret) = env_secret {
            command.env(cluster::server::SECRET_ENV, secret);
        }
        let output = command.output().expect("run node");
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (status, stderr) = run(&[], None);
    assert_eq!(status, Some(2), "{stderr}");
    assert!(
        stderr.contains("no cluster secret") && stderr.contains("--secret-file") && stderr.contains("CLUSTER_SECRET"),
        "{stderr}"
    );
    let (status, stderr) = run(&[], Some("short"));
    assert_eq!(status, Some(2), "{stderr}");
    assert!(stderr.contains("at least 16"), "{stderr}");
    let missing = cluster.dir().join("no-such-file");
    let (status, stderr) = run(&["--secret-file", &missing.display().to_string()], None);
    assert_eq!(status, Some(2), "{stderr}");
    assert!(stderr.contains("no-such-file"), "the error names the file: {stderr}");
    // With a secret the start goes on, to the next problem (the port is taken).
    let (status, stderr) = run(&[], Some("a secret long enough to use"));
    assert_eq!(status, Some(1), "{stderr}");
    assert!(stderr.contains("cannot listen"), "{stderr}");
}

#[test]
fn a_node_whose_superblock_was_deleted_refuses_to_start_instead_of_formatting_a_new_identity() {
    let mut cluster = LoopbackCluster::new("lost-identity", 1, 1);
    cluster.start_all();
    cluster.kill(0);
    let superblock = cluster.data_dir(0).join("node").join("superblock");
    std::fs::remove_file(&superblock).expect("the node superblock exists after a start");
    let output = cluster
        .command(0, &cluster.data_dir(0))
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("run node");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "exit status; stderr:\n{stderr}");
    assert!(
        stderr.contains("node/superblock is missing") && stderr.contains("refusing to start"),
        "the error names the missing file:\n{stderr}"
    );
    assert!(!superblock.exists(), "nothing was formatted in its place");
}
