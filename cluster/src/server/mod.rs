//! The production node: the cluster's shards on a tokio runtime, real files
//! ([`DiskStorage`]), TCP ([`TcpTransport`]) and the system clock.
//!
//! Start-up, in order, each step failing with a [`StartupError`] that says what to fix:
//! 1. the configuration is checked ([`ServerConfig::validate`]);
//! 2. the data directory is opened and its node superblock checked: a directory
//!    written by another cluster, or by another replica index, is refused;
//! 3. the metadata group's store is opened (a damaged one refuses the start);
//! 4. the replica and client addresses are bound (a port in use is named);
//! 5. the shards' pumps and the transport's tasks start, and `node ready` is logged.
//!
//! On the shutdown signal every group's journal is made durable
//! ([`Node::flush_for_shutdown`]: a partition WAL publishes its whole log) before the
//! process exits, so stopping every node at once loses no acknowledged write of a
//! `replicated` topic. A crash (SIGKILL, power loss) publishes nothing; the others
//! then hold what the crashed node acknowledged.
//!
//! A group whose storage fails for good (a write or sync of its log or superblock
//! refused, see `ReplicaStore::failure`) stops the node: [`run`] publishes what the
//! other groups' stores hold (a sync error is per file; the failed store refuses) and
//! returns [`Stopped::StorageFailure`], and the
//! `node` binary exits with [`EXIT_STORAGE_FAILED`] so that a supervisor starts it
//! again; the new process boots from what the disk really holds. Its peers elect a new
//! primary meanwhile if it led.
//!
//! Every shard of a node runs on the one thread that calls [`run`], as tasks of one
//! `LocalSet`: the shards share the partition directory, the access view and the
//! session bindings by `Rc` (see `node::shard`), which ties them to one thread. The
//! simulator runs them the same way.

pub mod config;
mod signal;

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use tokio::net::TcpListener;

pub use config::{ConfigError, DEFAULT_CLIENT_ADDRESS, RosterEntry, ServerConfig, parse_roster, roster_flag};
pub use signal::stop_signal;

use crate::node::{DurableStores, JournalBounds, Node, NodeConfig, NodeIdentity, StorageFailure, StoresOpenError};
use crate::partition::OwnerFence;
use crate::runtime::handshake::{self, ClusterSecret};
use crate::runtime::tcp::{TcpTransport, TransportStats};
use crate::runtime::{DiskStorage, TokioBus, realtime_micros};
use crate::seam::{Bus, Inbox, ProcessId};
use crate::storage::superblock::{SuperblockError, cluster_id};

/// How often a running node logs its counters (transport and shards), in milliseconds:
/// often enough to watch a failover, rarely enough not to flood the log.
pub const STATS_LOG_INTERVAL_MS: u64 = 10_000;

/// How often the server looks at the node's fail-stop flag, in milliseconds: one tick,
/// so a node whose storage failed exits within a tick of the failure.
pub const STORAGE_FAILURE_POLL_MS: u64 = 10;

/// The exit status of a `node` that stopped on a storage failure: distinct from a
/// failed start (1) and bad flags (2), so a supervisor can restart on it and count it.
pub const EXIT_STORAGE_FAILED: u8 = 3;

/// The exit status of a `node` that panicked: an invariant of the cluster broke (an
/// assertion in the consensus core, say), so the process stops at once rather than
/// keep running with what it asserted false. 101 is what Rust gives a panicking `main`.
pub const EXIT_PANICKED: u8 = 101;

/// Make any panic on any task stop the whole process with [`EXIT_PANICKED`], after the
/// usual message and backtrace. The `node` binary calls it first thing.
///
/// Why: a shard's pump runs as a tokio task, and tokio catches a panicking task's
/// unwind and carries on, so without this hook a shard that hit an assertion left a
/// half-dead node behind: listening, accepting connections, logging its counters, and
/// never answering a request again (found by the nemesis: a lost committed op tripped
/// the view change's assertion on two nodes, and the cluster sat wedged with every
/// process alive). A process that exits is one a supervisor restarts and a harness
/// sees; every acknowledged write was made durable before it was acknowledged, so
/// stopping mid-flight loses nothing.
///
/// Process-wide and for good: call it only in a process that is a node (never in a
/// test harness or the simulator, which catch panics to report them).
pub fn fail_stop_on_panic() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        eprintln!("node: panicked; stopping with exit status {EXIT_PANICKED} (a broken invariant, see above)");
        std::process::exit(i32::from(EXIT_PANICKED));
    }));
}

/// Why a running node stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// The shutdown future completed (a signal); every journal was flushed.
    Shutdown,
    /// A group's storage failed for good; the other groups' journals were flushed.
    StorageFailure(StorageFailure),
}

/// The cluster id frames carry (the header's 64-bit `cluster`): the low 64 bits of the
/// storage's 128-bit [`cluster_id`] of the cluster's name. Clients derive it the same way.
pub fn cluster_header_id(name: &str) -> u64 {
    // Truncation is the definition: the low half of the name's checksum.
    cluster_id(name) as u64
}

/// Why a node did not start.
#[derive(Debug)]
pub enum StartupError {
    /// The configuration is wrong.
    Config(ConfigError),
    /// The data directory cannot be used.
    DataDir {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// An address could not be bound.
    Listen {
        /// Which address ("client" or "replica").
        what: &'static str,
        /// The address.
        address: SocketAddr,
        /// The OS error.
        error: std::io::Error,
    },
    /// The runtime could not be built.
    Runtime(std::io::Error),
    /// The disk failed while the node opened its data (a read or write refused even
    /// after its retries): not a wrong directory, and nothing to fix in the
    /// configuration. `node` exits with [`EXIT_STORAGE_FAILED`], as for a storage
    /// failure at run time, so a supervisor starts it again.
    Storage {
        /// The directory.
        path: PathBuf,
        /// What failed.
        problem: String,
    },
}

impl fmt::Display for StartupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(error) => write!(f, "bad configuration: {error}"),
            Self::DataDir { path, problem } => write!(f, "data dir {}: {problem}", path.display()),
            Self::Listen { what, address, error } => {
                let hint = if error.kind() == std::io::ErrorKind::AddrInUse {
                    " (is another node or program using this port?)"
                } else {
                    ""
                };
                write!(f, "cannot listen on the {what} address {address}: {error}{hint}")
            }
            Self::Runtime(error) => write!(f, "cannot start the runtime: {error}"),
            Self::Storage { path, problem } => write!(
                f,
                "data dir {}: the disk failed while the node opened it ({problem}); check the disk, then start the \
                 node again on the same data directory (a supervisor should)",
                path.display()
            ),
        }
    }
}

impl std::error::Error for StartupError {}

impl From<ConfigError> for StartupError {
    fn from(error: ConfigError) -> Self {
        Self::Config(error)
    }
}

/// 8 bytes of OS randomness: salts and nonces must differ between clusters and boots.
/// The system clock stands in if `/dev/urandom` cannot be read.
fn os_entropy() -> u64 {
    // The low half of 16 random bytes.
    crate::runtime::os_random_u128().map_or(realtime_micros() ^ 0x9E37_79B9_7F4A_7C15, |random| random as u64)
}

/// Run a node until `shutdown` completes (a signal, in the `node` binary) or its
/// storage fails. Blocks the calling thread; every shard runs on it.
pub fn run(config: &ServerConfig, shutdown: impl Future<Output = ()>) -> Result<Stopped, StartupError> {
    config.validate()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(StartupError::Runtime)?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, serve(config, shutdown))
}

/// What refusing to open the stores means for the operator: a disk that failed (start
/// again) or a directory that is not this node's (point elsewhere).
fn startup_error_of(error: &StoresOpenError, config: &ServerConfig) -> StartupError {
    let problem = match error {
        // Found by the nemesis: node superblock reads that failed through their retries
        // (a burst of EIO at boot) were reported as another node's or a damaged
        // directory, with the exit status of a configuration error, so no supervisor
        // restarted the node.
        StoresOpenError::Superblock(inner @ SuperblockError::Io { .. }) => {
            return StartupError::Storage {
                path: config.data_dir.clone(),
                problem: inner.to_string(),
            };
        }
        StoresOpenError::Superblock(inner @ SuperblockError::NoIntactCopy { damaged, .. })
            if damaged.iter().any(|copy| copy.unreadable) =>
        {
            // A copy the disk would not read may be whole: the disk failed, nothing
            // says the data did.
            return StartupError::Storage {
                path: config.data_dir.clone(),
                problem: inner.to_string(),
            };
        }
        StoresOpenError::Superblock(inner) => format!(
            "refusing to start replica {} of cluster {:?} ({} replicas) on it: {inner}. \
             Point --data-dir at this node's own directory, or at an empty one for a new node.",
            config.replica,
            config.cluster,
            config.replicas()
        ),
        other => other.to_string(),
    };
    StartupError::DataDir {
        path: config.data_dir.clone(),
        problem,
    }
}

/// The environment variable that may hold the cluster secret (when no `secret_file`
/// is configured). An environment variable, like a file, stays out of `ps` output;
/// a command-line flag would not, so there is none.
pub const SECRET_ENV: &str = "CLUSTER_SECRET";

/// The cluster secret this node proves itself with: from `secret_file`, else from
/// `env_secret` (the [`SECRET_ENV`] variable's value), else the insecure development
/// stand-in if `insecure_dev`; refused otherwise, saying how to give one.
pub fn load_secret(config: &ServerConfig, env_secret: Option<&[u8]>) -> Result<ClusterSecret, StartupError> {
    let refuse = |problem: String| {
        StartupError::Config(ConfigError {
            field: "secret_file".to_owned(),
            problem,
        })
    };
    if let Some(path) = &config.secret_file {
        let shown = path.display();
        let metadata = std::fs::metadata(path).map_err(|error| refuse(format!("cannot read {shown}: {error}")))?;
        if metadata.len() > handshake::SECRET_BYTES_MAX as u64 {
            return Err(refuse(format!(
                "{shown} holds {} bytes; a secret file holds one line of at most {} bytes",
                metadata.len(),
                handshake::SECRET_BYTES_MAX
            )));
        }
        let text = std::fs::read(path).map_err(|error| refuse(format!("cannot read {shown}: {error}")))?;
        return ClusterSecret::from_text(&text).map_err(|problem| refuse(format!("{shown}: {problem}")));
    }
    if let Some(text) = env_secret {
        return ClusterSecret::from_text(text).map_err(|problem| refuse(format!("${SECRET_ENV}: {problem}")));
    }
    if config.insecure_dev {
        return Ok(ClusterSecret::insecure_development(&config.cluster));
    }
    Err(refuse(format!(
        "no cluster secret: give every node the same secret with --secret-file PATH (or \"secret_file\" in the \
         config) or the {SECRET_ENV} environment variable, e.g. `openssl rand -hex 32 > cluster.secret`; or, on a \
         machine nobody else can reach, run with --insecure-dev"
    )))
}

async fn serve(config: &ServerConfig, shutdown: impl Future<Output = ()>) -> Result<Stopped, StartupError> {
    let data_dir_error = |problem: String| StartupError::DataDir {
        path: config.data_dir.clone(),
        problem,
    };
    let env_secret = std::env::var_os(SECRET_ENV).map(|value| value.into_encoded_bytes());
    let secret = load_secret(config, env_secret.as_deref())?;
    if secret.is_insecure() {
        tracing::warn!(
            "INSECURE DEVELOPMENT MODE: replica connections are not authenticated (--insecure-dev); anyone who can \
             reach the replica port can act as a replica. Never run this way on a shared network."
        );
    }
    let storage = DiskStorage::new(&config.data_dir).map_err(|error| data_dir_error(error.to_string()))?;
    let replicas = config.replicas();
    let identity = NodeIdentity {
        cluster: cluster_id(&config.cluster),
        replica: config.replica,
        replica_count: replicas,
    };
    if let Some(test_break) = config.test_break {
        tracing::warn!("TEST BREAK ACTIVE: {} ({})", test_break.name(), test_break.effect());
    }
    let stores = DurableStores::open(storage, identity)
        .map_err(|error| startup_error_of(&error, config))?
        .with_test_break(config.test_break);

    let client_address = match config.own_client_address() {
        Some(address) => address,
        None => DEFAULT_CLIENT_ADDRESS.parse().map_err(|_| {
            StartupError::Config(ConfigError {
                field: "client_address".to_owned(),
                problem: "the built-in default does not parse".to_owned(),
            })
        })?,
    };
    let replica_listener = match config.roster.get(usize::from(config.replica)) {
        Some(entry) => Some(
            TcpListener::bind(entry.replica_address)
                .await
                .map_err(|error| StartupError::Listen {
                    what: "replica",
                    address: entry.replica_address,
                    error,
                })?,
        ),
        None => None,
    };
    let client_listener = TcpListener::bind(client_address)
        .await
        .map_err(|error| StartupError::Listen {
            what: "client",
            address: client_address,
            error,
        })?;

    let cluster = cluster_header_id(&config.cluster);
    let node_config = NodeConfig {
        cluster,
        replica: config.replica,
        replicas,
        shards: config.shards,
        entropy_seed: os_entropy(),
        root_password: config.root_password.clone(),
        owner_fence: OwnerFence::Enforced,
        journal: JournalBounds::default(),
        storage_break: Default::default(),
        // Production never shrinks a bound: buggify is the simulator's alone.
        buggify: crate::vsr::Buggify::OFF,
    };
    let node = Node::open(&node_config, stores, realtime_micros());
    if node.stats().shard.groups_open_failed > 0 {
        return Err(data_dir_error(
            "the metadata group's files refused to open (damaged, or written by another cluster or \
             replica; the log above says which); refusing to start without them"
                .to_owned(),
        ));
    }
    let inboxes: Rc<[Inbox]> = (0..config.shards).map(|_| Inbox::new()).collect();
    let transport = TcpTransport::new(cluster, config.replica, replicas, secret, inboxes.clone());
    let bus = TokioBus::new(ProcessId(u32::from(config.replica)), Rc::new(transport.clone()));
    for pump in node.pumps(&bus, &inboxes) {
        bus.spawn(pump);
    }
    let peers: Vec<(u8, SocketAddr)> = config
        .roster
        .iter()
        .enumerate()
        .map(|(index, entry)| (u8::try_from(index).unwrap_or(u8::MAX), entry.replica_address))
        .collect();
    transport.start(&peers, replica_listener, client_listener);
    tracing::info!(
        cluster = %config.cluster,
        replica = config.replica,
        replicas,
        shards = config.shards,
        %client_address,
        data_dir = %config.data_dir.display(),
        "node ready"
    );
    let failure = {
        let logger = log_stats(&node, &transport);
        let watcher = storage_failure(&node);
        futures::pin_mut!(logger);
        futures::pin_mut!(watcher);
        futures::pin_mut!(shutdown);
        let stop = futures::future::select(logger, shutdown);
        match futures::future::select(watcher, stop).await {
            futures::future::Either::Left((failure, _)) => Some(failure),
            futures::future::Either::Right(_) => None,
        }
    };
    if let Some(failure) = failure {
        // The other groups' files are sound (a sync error is per file): publish what
        // they hold, so the restart finds it, as a clean shutdown would.
        let (flushed, failed) = node.flush_for_shutdown();
        tracing::error!(
            flushed,
            failed,
            replica = config.replica,
            %failure,
            exit_status = EXIT_STORAGE_FAILED,
            "node stopping on a storage failure; nothing written after it was acknowledged. Check the disk, \
             then start the node again on the same data directory (a supervisor should): it boots from what \
             the disk holds and repairs the rest from its peers"
        );
        return Ok(Stopped::StorageFailure(failure));
    }
    // From here on nothing awaits, so no pump runs again: the journals are flushed
    // with no input after them, and the runtime is dropped with its tasks on return.
    let (flushed, failed) = node.flush_for_shutdown();
    if failed > 0 {
        tracing::warn!(
            replica = config.replica,
            flushed,
            failed,
            "node stopping; some journals were not made durable"
        );
    } else {
        tracing::info!(
            replica = config.replica,
            flushed,
            "node stopping; every journal is durable"
        );
    }
    Ok(Stopped::Shutdown)
}

/// Complete once the node has stopped on a storage failure.
async fn storage_failure<P: crate::node::StoreProvider>(node: &Node<P>) -> StorageFailure {
    loop {
        if let Some(failure) = node.storage_failure() {
            return failure;
        }
        tokio::time::sleep(Duration::from_millis(STORAGE_FAILURE_POLL_MS)).await;
    }
}

/// Log the counters every [`STATS_LOG_INTERVAL_MS`] (when they changed).
async fn log_stats<P: crate::node::StoreProvider>(node: &Node<P>, transport: &TcpTransport) {
    let mut last: Option<TransportStats> = None;
    loop {
        tokio::time::sleep(Duration::from_millis(STATS_LOG_INTERVAL_MS)).await;
        let stats = transport.stats();
        if last != Some(stats) {
            tracing::info!(transport = ?stats, node = ?node.stats(), "counters");
            last = Some(stats);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::superblock::Identity;

    /// Set in a child copy of this test binary: which side of the panic test it runs.
    const PANIC_CHILD_ENV: &str = "CLUSTER_SERVER_PANIC_CHILD";

    /// The child's half: panic inside a `spawn_local` task, the way a shard's pump runs,
    /// with or without the hook; exit 0 if the process outlived the panic.
    fn panic_child(hooked: bool) -> ! {
        if hooked {
            fail_stop_on_panic();
        }
        let outlived = crate::runtime::run_local(async {
            drop(tokio::task::spawn_local(async {
                panic!("planted panic in a shard task");
            }));
            tokio::time::sleep(Duration::from_millis(200)).await;
        });
        std::process::exit(if outlived.is_ok() { 0 } else { 90 });
    }

    /// Run this test binary again with only `test` and `PANIC_CHILD_ENV=mode`.
    fn run_child(test: &str, mode: &str) -> std::process::Output {
        let exe = std::env::current_exe().expect("the test binary's path");
        std::process::Command::new(exe)
            .args(["--exact", test, "--nocapture", "--test-threads=1"])
            .env(PANIC_CHILD_ENV, mode)
            .output()
            .expect("the test binary runs again")
    }

    #[test]
    fn a_panicking_shard_task_stops_the_process_instead_of_leaving_it_half_dead() {
        const TEST: &str = "server::tests::a_panicking_shard_task_stops_the_process_instead_of_leaving_it_half_dead";
        match std::env::var(PANIC_CHILD_ENV).as_deref() {
            Ok("hooked") => panic_child(true),
            Ok("bare") => panic_child(false),
            _ => {}
        }
        // Without the hook, tokio swallows the task's panic and the process lives on:
        // the half-dead node the hook exists for.
        let bare = run_child(TEST, "bare");
        assert_eq!(bare.status.code(), Some(0), "tokio let the process outlive the panic");
        let hooked = run_child(TEST, "hooked");
        let stderr = String::from_utf8_lossy(&hooked.stderr);
        assert_eq!(hooked.status.code(), Some(i32::from(EXIT_PANICKED)), "stderr: {stderr}");
        assert!(
            stderr.contains("planted panic in a shard task"),
            "the panic's message is kept: {stderr}"
        );
        assert!(stderr.contains("stopping with exit status 101"), "stderr: {stderr}");
    }

    fn config() -> ServerConfig {
        ServerConfig {
            cluster: "demo".to_owned(),
            replica: 0,
            data_dir: PathBuf::from("/data/demo-0"),
            shards: 1,
            roster: Vec::new(),
            client_address: None,
            root_password: "secret".to_owned(),
            secret_file: None,
            insecure_dev: true,
            test_break: None,
        }
    }

    #[test]
    fn a_disk_that_fails_while_the_node_starts_is_a_storage_failure_not_a_wrong_directory() {
        let io = StoresOpenError::Superblock(SuperblockError::Io {
            path: "node/superblock".to_owned(),
            action: "reading",
            source: std::io::Error::from_raw_os_error(5),
        });
        let error = startup_error_of(&io, &config());
        assert!(matches!(error, StartupError::Storage { .. }), "{error:?}");
        let text = error.to_string();
        assert!(
            text.contains("the disk failed") && text.contains("start the node again"),
            "{text}"
        );
        assert!(!text.contains("Point --data-dir"), "{text}");
    }

    #[test]
    fn superblock_copies_the_disk_would_not_read_are_a_storage_failure_and_damaged_ones_a_refusal() {
        let copies = |unreadable: bool| {
            StoresOpenError::Superblock(SuperblockError::NoIntactCopy {
                path: "node/superblock".to_owned(),
                damaged: (0..4)
                    .map(|copy| crate::storage::superblock::CopyDamage {
                        copy,
                        reason: if unreadable {
                            "unreadable: EIO"
                        } else {
                            "checksum mismatch"
                        }
                        .to_owned(),
                        unreadable: unreadable && copy == 0,
                    })
                    .collect(),
            })
        };
        assert!(matches!(
            startup_error_of(&copies(true), &config()),
            StartupError::Storage { .. }
        ));
        assert!(matches!(
            startup_error_of(&copies(false), &config()),
            StartupError::DataDir { .. }
        ));
    }

    #[test]
    fn another_replica_s_directory_is_still_refused_as_the_wrong_directory() {
        let identity = Identity {
            cluster: 1,
            replica: 1,
            replica_count: 3,
            group: 0,
        };
        let wrong = StoresOpenError::Superblock(SuperblockError::WrongReplica {
            expected: identity,
            found: Identity { replica: 2, ..identity },
        });
        let error = startup_error_of(&wrong, &config());
        assert!(matches!(error, StartupError::DataDir { .. }), "{error:?}");
        assert!(error.to_string().contains("Point --data-dir"), "{error}");
    }
}
