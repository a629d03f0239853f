//! One nemesis run, its phases top to bottom: the cluster up, the topic made, clients
//! and faults together for the fault phase, everything healed, the clients given a
//! last stretch on a healed cluster, the settle, then the checks (`check.rs`).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use cluster::client::{Client, ClientConfig};
use cluster::metadata::Durability;
use cluster::vsr::Status;

use super::check::{self, Verdict};
use super::faults::{FaultKind, FaultRecord};
use super::inject::{drive_faults, heal_everything};
use super::net::Network;
use super::procs::{Clock, Exit, NodeCommand, Nodes, SUPERVISOR_RESTART_MS};
use super::workload::{self, Mode, Workload};

/// Shared partitions in contended mode: few, so clients really race on each.
pub const CONTENDED_PARTITIONS: u32 = 2;
/// The least the clients go on after everything is healed, in milliseconds: a short
/// stretch of load on the healed cluster (each client must also have had a send
/// acknowledged since the heal before they stop).
pub const RECOVERY_MS: u64 = 2_000;
/// How long a fault task may still run after the fault phase ends before the run
/// fails as stuck, in milliseconds: a rolling restart of five nodes under load.
pub const FAULT_DRAIN_MS_MAX: u64 = 120_000;
/// How long a fault phase may run on to finish dealing its deck, in milliseconds: the
/// 14 kinds at the longest gaps and durations, two at a time, with the exclusive ones
/// waiting for the rest to end, take about 20 s.
pub const DECK_DEAL_MS_MAX: u64 = 30_000;
/// How long the setup (login, stream, topic) may take, in milliseconds: a few requests
/// on a fresh cluster, within a client's request budget each.
pub const SETUP_MS_MAX: u64 = 60_000;

/// One run's settings.
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// The seed: the fault plan and the clients' draws.
    pub seed: u64,
    /// Nodes (3 or 5).
    pub nodes: usize,
    /// Concurrent clients.
    pub clients: usize,
    /// The workload mode.
    pub mode: Mode,
    /// Fault kinds dealt (those this machine can inject).
    pub kinds: Vec<FaultKind>,
    /// The fault phase's planned length, milliseconds (it runs on until every kind
    /// was dealt once, at most twice as long).
    pub phase_ms: u64,
    /// Requests the clients may send in all.
    pub requests_max: u64,
    /// The run's directory (data dirs, logs, schedule).
    pub dir: PathBuf,
    /// The node binary.
    pub node_binary: PathBuf,
    /// Extra flags for every node.
    pub node_flags: Vec<String>,
    /// Use network namespaces.
    pub namespaces: bool,
    /// libfaketime's library, if clock faults are on.
    pub faketime: Option<PathBuf>,
    /// Start nodes under libfiu.
    pub fiu: bool,
    /// Namespace name prefix (unique per nemesis process).
    pub namespace_prefix: String,
    /// One fault at a time, each dealt once every client was served after the last.
    pub one_fault_at_a_time: bool,
}

/// What a run found.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    /// The verdict and why.
    pub verdict: Verdict,
    /// Every fault, in start order.
    pub faults: Vec<FaultRecord>,
    /// What the checks compared and measured.
    pub stats: check::RunStats,
    /// Wall time, milliseconds.
    pub wall_ms: u64,
}

/// A run's shared state.
pub(super) struct Run {
    pub spec: RunSpec,
    pub nodes: RefCell<Nodes>,
    pub network: RefCell<Network>,
    pub workload: Rc<Workload>,
    pub cluster: String,
    pub client_addresses: Vec<std::net::SocketAddr>,
    pub groups: RefCell<Vec<u64>>,
    pub state: RefCell<FaultState>,
}

/// The faults under way and done, and what went wrong outside the cluster's answers.
#[derive(Default)]
pub(super) struct FaultState {
    /// Active faults: id -> record.
    pub active: Vec<(u64, FaultRecord)>,
    /// Ended faults.
    pub done: Vec<FaultRecord>,
    /// Slots reserved by faults not yet holding nodes: (id, kind).
    pub reserved: Vec<(u64, FaultKind)>,
    /// Per node: its current incarnation had a disk fault switched on.
    pub disk_faulted: Vec<bool>,
    /// Per node: intervals (from, to) it was impaired, milliseconds.
    pub impaired: Vec<(usize, u64, Option<u64>)>,
    /// Problems: a node that died on its own, a tool that failed.
    pub problems: Vec<String>,
    /// Supervisor restarts done.
    pub supervisor_restarts: u64,
    /// The last fault id handed out.
    pub next_id: u64,
}

impl FaultState {
    /// Nodes some active fault holds.
    pub(super) fn held(&self) -> Vec<usize> {
        self.active
            .iter()
            .flat_map(|(_, record)| record.nodes.iter().copied())
            .collect()
    }
}

impl Run {
    pub(super) fn now_ms(&self) -> u64 {
        self.workload.now_ms()
    }

    pub(super) fn problem(&self, text: String) {
        eprintln!("nemesis: {text}");
        self.state.borrow_mut().problems.push(text);
    }

    /// Nodes running, not held by another fault.
    pub(super) fn free_nodes(&self) -> Vec<usize> {
        let held = self.state.borrow().held();
        let nodes = self.nodes.borrow();
        (0..nodes.count())
            .filter(|node| nodes.is_running(*node) && !held.contains(node))
            .collect()
    }

    /// Wait until node `node` is ready (or fails to be), without holding a borrow
    /// across the wait.
    pub(super) async fn wait_ready(&self, node: usize) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_millis(super::procs::NODE_READY_TIMEOUT_MS);
        loop {
            match self.nodes.borrow_mut().ready_now(node) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(error) => return Err(error),
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "node {node} not ready within {} ms",
                    super::procs::NODE_READY_TIMEOUT_MS
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub(super) async fn terminate(&self, node: usize) -> Result<(), String> {
        self.nodes.borrow_mut().signal(node, "TERM")?;
        let deadline = Instant::now() + Duration::from_millis(super::procs::NODE_TERM_TIMEOUT_MS);
        loop {
            if let Some(status) = self.nodes.borrow_mut().exited(node) {
                return if status.success() {
                    Ok(())
                } else {
                    Err(format!(
                        "node {node} exited with {status} on SIGTERM instead of stopping cleanly; its log: {}",
                        self.nodes.borrow().log_path(node).display()
                    ))
                };
            }
            if Instant::now() > deadline {
                let _ = self.nodes.borrow_mut().kill(node);
                return Err(format!(
                    "node {node} did not stop within {} ms of SIGTERM",
                    super::procs::NODE_TERM_TIMEOUT_MS
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub(super) fn start(&self, node: usize, clock: Clock, fiu: &str) -> Result<(), String> {
        self.state.borrow_mut().disk_faulted[node] = !fiu.is_empty();
        self.nodes.borrow_mut().start(node, clock, fiu)
    }

    /// The node most running nodes name as `group`'s primary, asked now.
    pub(super) async fn primary_of(&self, group: u64) -> Option<usize> {
        let mut votes = vec![0usize; self.spec.nodes];
        let mut config = ClientConfig::new(self.cluster.clone(), self.client_addresses.clone());
        config.status_timeout = Duration::from_millis(STATUS_PROBE_MS);
        let mut client = Client::new(config).ok()?;
        for node in 0..self.spec.nodes {
            if !self.nodes.borrow().is_running(node) {
                continue;
            }
            if let Ok(status) = client.status(node, group).await
                && let Some(hosted) = status.hosted
                && hosted.status == Status::Normal
            {
                votes[usize::from(hosted.primary) % self.spec.nodes] += 1;
            }
        }
        let best = (0..self.spec.nodes).max_by_key(|node| (votes[*node], std::cmp::Reverse(*node)))?;
        (votes[best] > 0).then_some(best)
    }
}

/// How long one status probe waits, milliseconds: a healthy node answers in
/// microseconds; a paused one never does.
pub const STATUS_PROBE_MS: u64 = 500;

/// Run one nemesis run.
pub async fn run(spec: RunSpec) -> RunOutcome {
    let started = Instant::now();
    let network = if spec.namespaces {
        match Network::namespaces(&spec.namespace_prefix, spec.nodes) {
            Ok(network) => network,
            Err(error) => return early_failure(started, format!("nemesis: could not build the network: {error}")),
        }
    } else {
        Network::loopback(spec.nodes)
    };
    let cluster = format!("nemesis-{}", spec.seed);
    let command = NodeCommand {
        binary: spec.node_binary.clone(),
        cluster: cluster.clone(),
        roster: network.roster_flag(),
        prefixes: (0..spec.nodes).map(|node| network.exec_prefix(node)).collect(),
        extra: spec.node_flags.clone(),
        fiu: spec.fiu,
        faketime: spec.faketime.clone(),
    };
    let client_addresses: Vec<_> = network.roster().iter().map(|(_, client)| *client).collect();
    let nodes = Nodes::new(command, &spec.dir, spec.nodes);
    let run = Rc::new(Run {
        workload: Rc::new(Workload {
            start: Instant::now(),
            recorded: RefCell::default(),
            stop: RefCell::new(false),
            requests_max: spec.requests_max,
        }),
        nodes: RefCell::new(nodes),
        network: RefCell::new(network),
        cluster,
        client_addresses,
        groups: RefCell::new(Vec::new()),
        state: RefCell::new(FaultState {
            disk_faulted: vec![false; spec.nodes],
            ..FaultState::default()
        }),
        spec,
    });
    let outcome = phases(&run).await;
    run.nodes.borrow_mut().stop_all();
    let state = run.state.borrow();
    let mut faults: Vec<FaultRecord> = state.done.to_vec();
    faults.extend(state.active.iter().map(|(_, record)| record.clone()));
    faults.sort_by_key(|record| record.start_ms);
    let (verdict, stats) = outcome;
    RunOutcome {
        verdict,
        faults,
        stats,
        wall_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    }
}

fn early_failure(started: Instant, reason: String) -> RunOutcome {
    RunOutcome {
        verdict: Verdict::Invalid(reason),
        faults: Vec::new(),
        stats: check::RunStats::default(),
        wall_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    }
}

/// The phases; the verdict and what was compared.
async fn phases(run: &Rc<Run>) -> (Verdict, check::RunStats) {
    // 1. The cluster up.
    for node in 0..run.spec.nodes {
        if let Err(error) = run.start(node, Clock::True, "") {
            return (
                Verdict::Invalid(format!("nemesis: {error}")),
                check::RunStats::default(),
            );
        }
    }
    for node in 0..run.spec.nodes {
        if let Err(error) = run.wait_ready(node).await {
            return (Verdict::Fail(format!("start-up: {error}")), check::RunStats::default());
        }
    }
    // 2. The topic.
    let partitions = match run.spec.mode {
        Mode::Exact => u32::try_from(run.spec.clients).unwrap_or(u32::MAX),
        Mode::Contended => CONTENDED_PARTITIONS,
    };
    let groups = match setup(run, partitions).await {
        Ok(groups) => groups,
        Err(error) => return (Verdict::Fail(format!("setup: {error}")), check::RunStats::default()),
    };
    *run.groups.borrow_mut() = groups.clone();
    // 3. Clients and faults together.
    let mut clients = Vec::new();
    for index in 0..run.spec.clients {
        let mut config = ClientConfig::new(run.cluster.clone(), run.client_addresses.clone());
        config.client_id = Some(0x4e45_0000_0000 + index as u128 + 1);
        let mut client = match Client::new(config) {
            Ok(client) => client,
            Err(error) => {
                return (
                    Verdict::Invalid(format!("nemesis: client: {error}")),
                    check::RunStats::default(),
                );
            }
        };
        if let Err(error) = client.login("root", cluster::metadata::DEFAULT_ROOT_PASSWORD).await {
            return (
                Verdict::Fail(format!("setup: client {index} login: {error}")),
                check::RunStats::default(),
            );
        }
        let own = match run.spec.mode {
            Mode::Exact => vec![groups[index]],
            Mode::Contended => groups.clone(),
        };
        clients.push(tokio::task::spawn_local(workload::client_task(
            Rc::clone(&run.workload),
            client,
            index,
            run.spec.mode,
            own,
            run.spec.seed,
        )));
    }
    let finished = Rc::new(RefCell::new(false));
    let supervisor = tokio::task::spawn_local(supervise(Rc::clone(run), Rc::clone(&finished)));
    let phase_start_ms = run.now_ms();
    drive_faults(run).await;
    // 4. Heal everything still broken; then every client must get a send acknowledged
    //    by the healed cluster, within the liveness bound.
    heal_everything(run).await;
    let healed_ms = run.now_ms();
    let recovered = recover(run, healed_ms).await;
    *run.workload.stop.borrow_mut() = true;
    for (index, client) in clients.into_iter().enumerate() {
        if let Err(error) = client.await {
            run.problem(format!("nemesis: client {index}'s task failed: {error}"));
        }
    }
    let clients_done_ms = run.now_ms();
    *finished.borrow_mut() = true;
    if let Err(error) = supervisor.await {
        run.problem(format!("nemesis: the supervisor task failed: {error}"));
    }
    let recovered_ms = match recovered {
        Ok(ms) => ms,
        Err(failure) => {
            run.problem(failure);
            check::LIVENESS_GAP_MS_MAX
        }
    };
    // 5. Settle and check.
    let window = check::Window {
        phase_start_ms,
        healed_ms,
        end_ms: clients_done_ms,
    };
    check::settle_and_check(run, &groups, window, recovered_ms).await
}

/// How much of each client's last failure a liveness failure quotes, in characters:
/// enough for the error and the node it names, short enough that four clients' fit
/// on a report line.
const LIVENESS_FAILURE_TEXT_CHARS_MAX: usize = 200;

/// Wait until every client has had a send acknowledged since `healed_ms` (and at least
/// [`RECOVERY_MS`] passed), or fail after [`check::LIVENESS_GAP_MS_MAX`].
async fn recover(run: &Run, healed_ms: u64) -> Result<u64, String> {
    let mut recovered_ms = None;
    loop {
        let now = run.now_ms();
        let waiting: Vec<usize> = {
            let recorded = run.workload.recorded.borrow();
            (0..run.spec.clients)
                .filter(|client| recorded.last_write_ms.get(client).is_none_or(|at| *at < healed_ms))
                .collect()
        };
        if waiting.is_empty() && recovered_ms.is_none() {
            recovered_ms = Some(now - healed_ms);
        }
        if let Some(ms) = recovered_ms
            && now >= healed_ms + RECOVERY_MS
        {
            return Ok(ms);
        }
        if !waiting.is_empty() && run.workload.recorded.borrow().requests >= run.spec.requests_max {
            // The request budget ran out: nothing more to wait for.
            return Ok(now - healed_ms);
        }
        if now >= healed_ms + check::LIVENESS_GAP_MS_MAX {
            let recorded = run.workload.recorded.borrow();
            return Err(liveness_failure(&waiting, &recorded.last_send_failure));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The liveness failure for clients `waiting` that had no send acknowledged, quoting
/// why each one's last failed send failed (`last_send_failure`), if it had one.
fn liveness_failure(waiting: &[usize], last_send_failure: &BTreeMap<usize, String>) -> String {
    let told: Vec<String> = waiting
        .iter()
        .filter_map(|client| {
            let failure = last_send_failure.get(client)?;
            let cut: String = failure.chars().take(LIVENESS_FAILURE_TEXT_CHARS_MAX).collect();
            Some(format!("client {client}: {cut}"))
        })
        .collect();
    let told = if told.is_empty() {
        String::new()
    } else {
        // After a `;`, so the failure's signature (its first clause) stays the same.
        format!("; their last failed sends: {}", told.join(" / "))
    };
    format!(
        "liveness: every fault was healed but clients {waiting:?} had no send acknowledged within {} ms{told}",
        check::LIVENESS_GAP_MS_MAX
    )
}

/// Log in as root and make the stream and topic; the partitions' groups.
async fn setup(run: &Run, partitions: u32) -> Result<Vec<u64>, String> {
    let mut config = ClientConfig::new(run.cluster.clone(), run.client_addresses.clone());
    config.client_id = Some(0x4e45_ffff_0000);
    let mut client = Client::new(config).map_err(|error| error.to_string())?;
    let work = async {
        client
            .login("root", cluster::metadata::DEFAULT_ROOT_PASSWORD)
            .await
            .map_err(|error| format!("login: {error}"))?;
        let stream = client
            .create_stream("nemesis")
            .await
            .map_err(|error| format!("create stream: {error}"))?;
        let topic = client
            .create_topic(stream, "log", partitions, Durability::Persisted)
            .await
            .map_err(|error| format!("create topic: {error}"))?;
        Ok::<Vec<u64>, String>(topic.groups)
    };
    match tokio::time::timeout(Duration::from_millis(SETUP_MS_MAX), work).await {
        Ok(result) => result,
        Err(_) => Err(format!("not done within {SETUP_MS_MAX} ms")),
    }
}

/// Reap nodes that ended on their own; restart those that stopped on a storage failure
/// their disk fault explains; everything else is a problem.
async fn supervise(run: Rc<Run>, finished: Rc<RefCell<bool>>) {
    while !*finished.borrow() {
        let exits = run.nodes.borrow_mut().reap();
        for (node, exit) in exits {
            match exit {
                Exit::StorageFailure if run.state.borrow().disk_faulted[node] => {
                    let run = Rc::clone(&run);
                    tokio::task::spawn_local(async move {
                        tokio::time::sleep(Duration::from_millis(SUPERVISOR_RESTART_MS)).await;
                        if run.nodes.borrow().is_running(node) {
                            return;
                        }
                        if !run.nodes.borrow_mut().count_restart(node) {
                            run.problem(format!("node {node} stopped on a storage failure too many times"));
                            return;
                        }
                        run.state.borrow_mut().supervisor_restarts += 1;
                        let clock = run.nodes.borrow().clock(node);
                        if let Err(error) = run.start(node, clock, "") {
                            run.problem(format!("supervisor: {error}"));
                        }
                    });
                }
                Exit::StorageFailure => run.problem(format!(
                    "crash: node {node} stopped on a storage failure with no disk fault injected; its log: {}",
                    run.nodes.borrow().log_path(node).display()
                )),
                Exit::Unexpected(text) => run.problem(text),
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::signature;

    #[test]
    fn a_liveness_failure_quotes_what_the_waiting_clients_were_told_without_changing_its_signature() {
        let mut told = BTreeMap::new();
        told.insert(0, "request 9 to group 3072 was not accepted by node 1".to_owned());
        told.insert(2, "x".repeat(LIVENESS_FAILURE_TEXT_CHARS_MAX + 50));
        told.insert(3, "a client that is not waiting".to_owned());
        let failure = liveness_failure(&[0, 1, 2], &told);
        assert!(failure.starts_with("liveness: every fault was healed but clients [0, 1, 2] had no send acknowledged"));
        assert!(failure.contains(
            "; their last failed sends: client 0: request 9 to group 3072 was not accepted by node 1 / client 2: x"
        ));
        assert!(!failure.contains("client 1:"), "client 1 was told nothing: {failure}");
        assert!(!failure.contains("not waiting"), "{failure}");
        assert!(
            !failure.contains(&"x".repeat(LIVENESS_FAILURE_TEXT_CHARS_MAX + 1)),
            "quotes are cut"
        );
        let bare = liveness_failure(&[0, 1, 2], &BTreeMap::new());
        assert!(!bare.contains(';'), "{bare}");
        assert_eq!(signature(&failure), signature(&bare));
    }
}
