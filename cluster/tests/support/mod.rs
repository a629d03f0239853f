//! A cluster of real `node` processes on 127.0.0.1, for the loopback tests: free
//! ports, a data directory per node, logs per incarnation, SIGKILL and restart.
//!
//! Every process is killed when the [`LoopbackCluster`] is dropped, so a failing test
//! leaves nothing running. The directory is removed after a passing test and kept
//! (its path printed) after a failing one, with every node's log in it.

#![allow(dead_code, reason = "each test binary uses part of the harness")]
#![allow(clippy::disallowed_methods, reason = "tests time their deadlines on the wall clock")]

use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command as Process, Stdio};
use std::time::{Duration, Instant};

use cluster::node::{GROUP_STATUS_CODE, GroupStatus};
use cluster::server::cluster_header_id;
use cluster::wire::{self, Command, HEADER_BYTES, Header};

/// How long a raw request waits for its answer: a metadata commit on loopback takes
/// milliseconds; a view change a few seconds.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// A request frame of `cluster` (by name), every field given.
pub fn request(cluster: &str, client: u128, number: u64, group: u64, operation: u8, body: &[u8]) -> Vec<u8> {
    let mut header = Header::new(Command::Request);
    header.cluster = cluster_header_id(cluster);
    header.client = client;
    header.request = number;
    header.group = group;
    header.operation = operation;
    wire::seal_header(header, body)
}

/// Read one verified frame (blocking, with [`ANSWER_TIMEOUT`]); `None` if the
/// connection ended, timed out or carried something that is not a frame.
pub fn read_frame(stream: &mut TcpStream) -> Option<(Header, Vec<u8>)> {
    stream.set_read_timeout(Some(ANSWER_TIMEOUT)).ok()?;
    let mut header = vec![0u8; HEADER_BYTES];
    stream.read_exact(&mut header).ok()?;
    let parsed = Header::decode_verified(&header).ok()?;
    let mut frame = header;
    frame.resize(parsed.size as usize, 0);
    stream.read_exact(&mut frame[HEADER_BYTES..]).ok()?;
    let (header, body) = wire::open(&frame).ok()?;
    Some((header, body.to_vec()))
}

/// What the node at `address` says about `group`; `None` if it cannot be asked.
pub fn status(cluster: &str, address: SocketAddr, group: u64) -> Option<GroupStatus> {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(1)).ok()?;
    stream
        .write_all(&request(cluster, 77, 1, group, GROUP_STATUS_CODE, &[]))
        .ok()?;
    let (header, body) = read_frame(&mut stream)?;
    assert_eq!(
        header.operation, GROUP_STATUS_CODE,
        "a status request answered with something else"
    );
    GroupStatus::decode(&body).ok()
}

/// How long a node may take from spawn to `node ready`: a debug build opening a data
/// dir with a few MB of WAL takes well under a second; 30 s absorbs a loaded CI machine.
pub const NODE_READY_TIMEOUT: Duration = Duration::from_secs(30);

/// One node's process and where its log goes.
struct NodeProcess {
    child: Child,
    log: PathBuf,
}

/// Real node processes on loopback.
pub struct LoopbackCluster {
    /// The cluster's name.
    pub name: String,
    dir: PathBuf,
    roster: Vec<(SocketAddr, SocketAddr)>,
    shards: u8,
    nodes: Vec<Option<NodeProcess>>,
    incarnations: Vec<u32>,
}

/// `count` distinct free ports on 127.0.0.1 (bound and released: another process could
/// take one in between, which would show as a clear "address in use" start-up error).
pub fn free_addresses(count: usize) -> Vec<SocketAddr> {
    let listeners: Vec<TcpListener> = (0..count)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port"))
        .collect();
    listeners
        .iter()
        .map(|listener| listener.local_addr().expect("local address"))
        .collect()
}

/// The environment variable naming another `node` binary to test instead of this
/// build's: how the hostile-input suite is shown to fail on an older build. Such a
/// binary is started without `--secret-file` (older builds have no such flag).
pub const NODE_UNDER_TEST_ENV: &str = "NODE_UNDER_TEST";

/// The `node` binary under test: this build's, unless [`NODE_UNDER_TEST_ENV`] names one.
pub fn node_binary() -> String {
    std::env::var(NODE_UNDER_TEST_ENV).unwrap_or_else(|_| env!("CARGO_BIN_EXE_node").to_owned())
}

/// Whether the node under test is another build's (see [`NODE_UNDER_TEST_ENV`]).
pub fn testing_another_build() -> bool {
    std::env::var_os(NODE_UNDER_TEST_ENV).is_some()
}

/// Whether the node under test takes `--secret-file`: this build's does; another
/// build's ([`NODE_UNDER_TEST_ENV`]) does if its `--help` names the flag (builds
/// before peer authentication do not, and refuse it).
pub fn node_takes_a_secret() -> bool {
    static TAKES: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TAKES.get_or_init(|| {
        !testing_another_build()
            || Process::new(node_binary())
                .arg("--help")
                .output()
                .is_ok_and(|help| String::from_utf8_lossy(&help.stdout).contains("--secret-file"))
    })
}

/// The name of the cluster secret's file in a test's directory.
pub const SECRET_FILE: &str = "cluster.secret";

impl LoopbackCluster {
    /// A cluster of `replicas` nodes (not started yet), in a fresh directory named
    /// after `test`.
    pub fn new(test: &str, replicas: usize, shards: u8) -> Self {
        let dir = std::env::temp_dir().join(format!("cluster-loopback-{test}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("test directory");
        // The cluster secret every node proves itself with, as an operator would give it.
        fs::write(dir.join(SECRET_FILE), format!("loopback-secret-of-{test}\n")).expect("secret file");
        let addresses = free_addresses(replicas * 2);
        let roster = (0..replicas)
            .map(|i| (addresses[2 * i], addresses[2 * i + 1]))
            .collect();
        Self {
            name: format!("loopback-{test}"),
            dir,
            roster,
            shards,
            nodes: (0..replicas).map(|_| None).collect(),
            incarnations: vec![0; replicas],
        }
    }

    /// The test's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file holding the cluster's secret.
    pub fn secret_file(&self) -> PathBuf {
        self.dir.join(SECRET_FILE)
    }

    /// Node `index`'s data directory.
    pub fn data_dir(&self, index: usize) -> PathBuf {
        self.dir.join(format!("data-{index}"))
    }

    /// The client addresses in replica order (what a client's roster is).
    pub fn client_addresses(&self) -> Vec<SocketAddr> {
        self.roster.iter().map(|(_, client)| *client).collect()
    }

    /// The replica addresses in replica order (where peers dial).
    pub fn replica_addresses(&self) -> Vec<SocketAddr> {
        self.roster.iter().map(|(replica, _)| *replica).collect()
    }

    /// The process id of node `index`, if it runs.
    pub fn pid(&self, index: usize) -> Option<u32> {
        self.nodes[index].as_ref().map(|node| node.child.id())
    }

    /// The `--roster` flag's value.
    pub fn roster_flag(&self) -> String {
        cluster::server::roster_flag(&self.roster)
    }

    /// Start every node and wait until each is ready.
    pub fn start_all(&mut self) {
        for index in 0..self.nodes.len() {
            self.spawn(index);
        }
        for index in 0..self.nodes.len() {
            self.wait_ready(index);
        }
    }

    /// The command that starts node `index` with `data_dir` (for tests that start one
    /// by hand, e.g. on the wrong directory).
    pub fn command(&self, index: usize, data_dir: &Path) -> Process {
        let mut command = Process::new(node_binary());
        command
            .arg("--cluster")
            .arg(&self.name)
            .arg("--replica")
            .arg(index.to_string())
            .arg("--data-dir")
            .arg(data_dir)
            .arg("--shards")
            .arg(self.shards.to_string())
            .arg("--roster")
            .arg(self.roster_flag())
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        if node_takes_a_secret() {
            command.arg("--secret-file").arg(self.secret_file());
        }
        command
    }

    /// Start node `index` (its next incarnation) without waiting.
    pub fn spawn(&mut self, index: usize) {
        self.spawn_wrapped(index, &[]);
    }

    /// Start node `index` under `wrapper` (a command and its arguments that runs the
    /// node's command line, e.g. `strace` injecting syscall faults), without waiting.
    /// An empty wrapper starts the node itself.
    pub fn spawn_wrapped(&mut self, index: usize, wrapper: &[&str]) {
        assert!(self.nodes[index].is_none(), "node {index} is already running");
        self.incarnations[index] += 1;
        let log = self.dir.join(format!("node-{index}.{}.log", self.incarnations[index]));
        let file = fs::File::create(&log).expect("log file");
        let node = self.command(index, &self.data_dir(index));
        let mut command = match wrapper.split_first() {
            None => node,
            Some((program, arguments)) => {
                let mut wrapped = Process::new(program);
                wrapped
                    .args(arguments)
                    .arg(node.get_program())
                    .args(node.get_args())
                    .envs(node.get_envs().filter_map(|(key, value)| Some((key, value?))))
                    .stdin(Stdio::null())
                    .stdout(Stdio::null());
                wrapped
            }
        };
        let child = command.stderr(Stdio::from(file)).spawn().expect("spawn node");
        self.nodes[index] = Some(NodeProcess { child, log });
    }

    /// Wait up to `timeout` for node `index` to exit on its own and reap it: its exit
    /// status, or `None` (still running) after the timeout.
    pub fn wait_exit(&mut self, index: usize, timeout: Duration) -> Option<std::process::ExitStatus> {
        let started = Instant::now();
        while started.elapsed() < timeout {
            let node = self.nodes[index].as_mut().expect("node is running");
            if let Some(status) = node.child.try_wait().expect("wait") {
                self.nodes[index] = None;
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    /// Wait until node `index` logged `node ready`; panics with its log if it exits or
    /// takes longer than [`NODE_READY_TIMEOUT`].
    pub fn wait_ready(&mut self, index: usize) {
        let started = Instant::now();
        loop {
            let node = self.nodes[index].as_mut().expect("node is running");
            let log = fs::read_to_string(&node.log).unwrap_or_default();
            if log.contains("node ready") {
                return;
            }
            if let Ok(Some(status)) = node.child.try_wait() {
                panic!("node {index} exited ({status}) before it was ready; its log:\n{log}");
            }
            assert!(
                started.elapsed() < NODE_READY_TIMEOUT,
                "node {index} not ready after {NODE_READY_TIMEOUT:?}; its log:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL node `index` and reap it.
    pub fn kill(&mut self, index: usize) {
        let mut node = self.nodes[index].take().expect("node is running");
        node.child.kill().expect("SIGKILL");
        node.child.wait().expect("reap");
    }

    /// Stop node `index` cleanly (SIGTERM) and wait for it to exit; panics with its log
    /// if it does not exit within [`NODE_READY_TIMEOUT`] or exits with an error.
    pub fn stop(&mut self, index: usize) {
        let mut node = self.nodes[index].take().expect("node is running");
        let status = Process::new("kill")
            .args(["-TERM", &node.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM failed");
        let started = Instant::now();
        loop {
            if let Some(status) = node.child.try_wait().expect("wait") {
                let log = fs::read_to_string(&node.log).unwrap_or_default();
                assert!(
                    status.success(),
                    "node {index} exited with {status} after SIGTERM; its log:\n{log}"
                );
                return;
            }
            assert!(
                started.elapsed() < NODE_READY_TIMEOUT,
                "node {index} still running {NODE_READY_TIMEOUT:?} after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The log of node `index`'s current (or last) incarnation.
    pub fn log(&self, index: usize) -> String {
        let path = self.dir.join(format!("node-{index}.{}.log", self.incarnations[index]));
        fs::read_to_string(path).unwrap_or_default()
    }

    /// Whether node `index` is running.
    pub fn running(&self, index: usize) -> bool {
        self.nodes[index].is_some()
    }
}

impl Drop for LoopbackCluster {
    fn drop(&mut self) {
        for node in self.nodes.iter_mut().flatten() {
            let _ = node.child.kill();
            let _ = node.child.wait();
        }
        if std::thread::panicking() {
            eprintln!("loopback test failed: node logs kept in {}", self.dir.display());
        } else {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}
