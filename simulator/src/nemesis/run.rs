//! One nemesis run, its phases top to bottom: the cluster up, the topic made, clients
//! and faults together for the fault phase, everything healed, the clients given a
//! last stretch on a healed cluster, the settle, then the checks (`check.rs`).

use std::cell::RefCell;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use cluster::client::{Client, ClientConfig};
use cluster::metadata::Durability;
use cluster::vsr::Status;

use super::check::{self, Verdict};
use super::faults::{Category, FAULTS_CONCURRENT_MAX, FaultKind, FaultRecord, Plan, PlannedFault};
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
    next_id: u64,
}

impl FaultState {
    fn held(&self) -> Vec<usize> {
        self.active
            .iter()
            .flat_map(|(_, record)| record.nodes.iter().copied())
            .collect()
    }
}

impl Run {
    fn now_ms(&self) -> u64 {
        self.workload.now_ms()
    }

    fn problem(&self, text: String) {
        eprintln!("nemesis: {text}");
        self.state.borrow_mut().problems.push(text);
    }

    /// Nodes running, not held by another fault.
    fn free_nodes(&self) -> Vec<usize> {
        let held = self.state.borrow().held();
        let nodes = self.nodes.borrow();
        (0..nodes.count())
            .filter(|node| nodes.is_running(*node) && !held.contains(node))
            .collect()
    }

    /// Wait until node `node` is ready (or fails to be), without holding a borrow
    /// across the wait.
    async fn wait_ready(&self, node: usize) -> Result<(), String> {
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

    async fn terminate(&self, node: usize) -> Result<(), String> {
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

    fn start(&self, node: usize, clock: Clock, fiu: &str) -> Result<(), String> {
        self.state.borrow_mut().disk_faulted[node] = !fiu.is_empty();
        self.nodes.borrow_mut().start(node, clock, fiu)
    }

    /// The node most running nodes name as `group`'s primary, asked now.
    async fn primary_of(&self, group: u64) -> Option<usize> {
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
    for client in clients {
        let _ = client.await;
    }
    let clients_done_ms = run.now_ms();
    *finished.borrow_mut() = true;
    let _ = supervisor.await;
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
            return Err(format!(
                "liveness: every fault was healed but clients {waiting:?} had no send acknowledged within {} ms",
                check::LIVENESS_GAP_MS_MAX
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
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
                    "node {node} stopped on a storage failure with no disk fault injected; its log: {}",
                    run.nodes.borrow().log_path(node).display()
                )),
                Exit::Unexpected(text) => run.problem(text),
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Deal the plan's faults until the phase ends and every kind was dealt once (at most
/// twice the phase), then wait for the faults under way to end.
async fn drive_faults(run: &Rc<Run>) {
    let mut plan = Plan::new(run.spec.seed, &run.spec.kinds);
    let start = Instant::now();
    let phase = Duration::from_millis(run.spec.phase_ms);
    let mut tasks = Vec::new();
    'deal: loop {
        tokio::time::sleep(Duration::from_millis(plan.gap_ms())).await;
        if (start.elapsed() >= phase && plan.deck_dealt()) || start.elapsed() >= 2 * phase {
            break;
        }
        let Some(planned) = plan.next_fault() else {
            continue;
        };
        // Wait for room: the concurrency bound, exclusivity, one network fault at a time.
        loop {
            if start.elapsed() >= 2 * phase {
                break 'deal;
            }
            if let Some(id) = admit(run, planned.kind) {
                let run = Rc::clone(run);
                tasks.push(tokio::task::spawn_local(async move { apply(&run, id, planned).await }));
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let drain = async {
        for task in tasks {
            let _ = task.await;
        }
    };
    if tokio::time::timeout(Duration::from_millis(FAULT_DRAIN_MS_MAX), drain)
        .await
        .is_err()
    {
        run.problem(format!(
            "a fault was still under way {FAULT_DRAIN_MS_MAX} ms after the fault phase"
        ));
    }
}

/// Reserve a slot for a fault of `kind` if the bounds allow one now.
fn admit(run: &Run, kind: FaultKind) -> Option<u64> {
    let mut state = run.state.borrow_mut();
    let kinds: Vec<FaultKind> = state
        .active
        .iter()
        .map(|(_, record)| record.kind)
        .chain(state.reserved.iter().map(|(_, kind)| *kind))
        .collect();
    let busy = kinds.len();
    let allowed = busy < FAULTS_CONCURRENT_MAX
        && !kinds.iter().any(|other| other.exclusive())
        && (!kind.exclusive() || busy == 0)
        && (kind.category() != Category::Network || !kinds.iter().any(|other| other.category() == Category::Network));
    if !allowed {
        return None;
    }
    state.next_id += 1;
    let id = state.next_id;
    state.reserved.push((id, kind));
    Some(id)
}

/// Hold `nodes` for fault `id` and log its start.
fn hold(run: &Run, id: u64, kind: FaultKind, nodes: Vec<usize>, impaired: Vec<usize>, detail: String) {
    let now = run.now_ms();
    let record = FaultRecord {
        start_ms: now,
        end_ms: None,
        kind,
        nodes,
        impaired: impaired.clone(),
        detail,
    };
    println!(
        "  fault +{:>6} ms  {:<15} nodes {:?}  {}",
        now,
        kind.name(),
        record.nodes,
        record.detail
    );
    let mut state = run.state.borrow_mut();
    state.reserved.retain(|(other, _)| *other != id);
    for node in impaired {
        state.impaired.push((node, now, None));
    }
    state.active.push((id, record));
}

/// End fault `id`: log it and release its nodes.
fn release(run: &Run, id: u64, note: Option<String>) {
    let now = run.now_ms();
    let mut state = run.state.borrow_mut();
    state.reserved.retain(|(other, _)| *other != id);
    let Some(position) = state.active.iter().position(|(other, _)| *other == id) else {
        return;
    };
    let (_, mut record) = state.active.remove(position);
    record.end_ms = Some(now);
    if let Some(note) = note {
        record.detail.push_str("; ");
        record.detail.push_str(&note);
    }
    for interval in state.impaired.iter_mut() {
        if record.impaired.contains(&interval.0) && interval.2.is_none() {
            interval.2 = Some(now);
        }
    }
    state.done.push(record);
}

fn pick(candidates: &[usize], coin: u64) -> Option<usize> {
    (!candidates.is_empty()).then(|| candidates[(coin % candidates.len() as u64) as usize])
}

/// Inject one fault, wait its duration, heal it.
async fn apply(run: &Rc<Run>, id: u64, planned: PlannedFault) {
    let kind = planned.kind;
    let coins = planned.coins;
    let duration = Duration::from_millis(planned.duration_ms);
    let nodes_total = run.spec.nodes;
    let result: Result<Option<String>, String> = async {
        match kind {
            FaultKind::Kill => {
                let Some(node) = pick(&run.free_nodes(), coins[0]) else {
                    return Ok(None);
                };
                hold(
                    run,
                    id,
                    kind,
                    vec![node],
                    vec![node],
                    format!("SIGKILL, down {} ms", planned.duration_ms),
                );
                run.nodes.borrow_mut().kill(node)?;
                tokio::time::sleep(duration).await;
                let clock = run.nodes.borrow().clock(node);
                run.start(node, clock, "")?;
                run.wait_ready(node).await?;
            }
            FaultKind::KillAll => {
                let all: Vec<usize> = (0..nodes_total).collect();
                hold(
                    run,
                    id,
                    kind,
                    all.clone(),
                    all.clone(),
                    format!("SIGKILL every node, down {} ms", planned.duration_ms),
                );
                for node in 0..nodes_total {
                    run.nodes.borrow_mut().kill(node)?;
                }
                tokio::time::sleep(duration).await;
                for node in 0..nodes_total {
                    let clock = run.nodes.borrow().clock(node);
                    run.start(node, clock, "")?;
                }
                for node in 0..nodes_total {
                    run.wait_ready(node).await?;
                }
            }
            FaultKind::PausePrimary => {
                let groups = run.groups.borrow().clone();
                let group = *std::iter::once(&0u64)
                    .chain(groups.iter())
                    .nth((coins[1] % (groups.len() as u64 + 1)) as usize)
                    .unwrap_or(&0);
                let free = run.free_nodes();
                let node = match run.primary_of(group).await {
                    Some(primary) if run.free_nodes().contains(&primary) => primary,
                    _ => match pick(&run.free_nodes(), coins[0]).or_else(|| pick(&free, coins[0])) {
                        Some(node) if run.free_nodes().contains(&node) => node,
                        _ => return Ok(None),
                    },
                };
                hold(
                    run,
                    id,
                    kind,
                    vec![node],
                    vec![node],
                    format!("SIGSTOP (group {group:#x}'s primary), {} ms", planned.duration_ms),
                );
                run.nodes.borrow_mut().signal(node, "STOP")?;
                tokio::time::sleep(duration).await;
                if run.nodes.borrow().is_running(node) {
                    run.nodes.borrow_mut().signal(node, "CONT")?;
                }
            }
            FaultKind::Terminate => {
                let Some(node) = pick(&run.free_nodes(), coins[0]) else {
                    return Ok(None);
                };
                hold(
                    run,
                    id,
                    kind,
                    vec![node],
                    vec![node],
                    format!("SIGTERM, down {} ms", planned.duration_ms),
                );
                run.terminate(node).await?;
                tokio::time::sleep(duration).await;
                let clock = run.nodes.borrow().clock(node);
                run.start(node, clock, "")?;
                run.wait_ready(node).await?;
            }
            FaultKind::RollingRestart => {
                let all: Vec<usize> = (0..nodes_total).collect();
                hold(
                    run,
                    id,
                    kind,
                    all,
                    Vec::new(),
                    format!(
                        "SIGTERM and restart each node in turn, {} ms apart",
                        planned.duration_ms
                    ),
                );
                for node in 0..nodes_total {
                    impair(run, node, true);
                    run.terminate(node).await?;
                    let clock = run.nodes.borrow().clock(node);
                    run.start(node, clock, "")?;
                    run.wait_ready(node).await?;
                    impair(run, node, false);
                    tokio::time::sleep(duration).await;
                }
            }
            FaultKind::Isolate | FaultKind::OneWay | FaultKind::CutLink | FaultKind::Split => {
                let mut all: Vec<usize> = (0..nodes_total).collect();
                let (cuts, nodes, impaired, detail) = match kind {
                    FaultKind::Isolate => {
                        let node = pick(&all, coins[0]).unwrap_or(0);
                        let cuts: Vec<(usize, usize)> = all
                            .iter()
                            .filter(|other| **other != node)
                            .flat_map(|&other| [(node, other), (other, node)])
                            .collect();
                        (cuts, vec![node], vec![node], format!("node {node} cut off both ways"))
                    }
                    FaultKind::OneWay | FaultKind::CutLink => {
                        let from = pick(&all, coins[0]).unwrap_or(0);
                        all.retain(|node| *node != from);
                        let to = pick(&all, coins[1]).unwrap_or(0);
                        if kind == FaultKind::OneWay {
                            (
                                vec![(from, to)],
                                vec![from, to],
                                vec![from],
                                format!("{from} -> {to} dropped"),
                            )
                        } else {
                            (
                                vec![(from, to), (to, from)],
                                vec![from, to],
                                vec![from],
                                format!("{from} <-> {to} cut"),
                            )
                        }
                    }
                    _ => {
                        let minority_size = (nodes_total - 1) / 2;
                        let mut minority = Vec::new();
                        for coin in coins.iter().take(minority_size.max(1)) {
                            let rest: Vec<usize> =
                                all.iter().copied().filter(|node| !minority.contains(node)).collect();
                            if let Some(node) = pick(&rest, *coin) {
                                minority.push(node);
                            }
                        }
                        minority.sort();
                        let majority: Vec<usize> =
                            all.iter().copied().filter(|node| !minority.contains(node)).collect();
                        let cuts = minority
                            .iter()
                            .flat_map(|&a| majority.iter().flat_map(move |&b| [(a, b), (b, a)]))
                            .collect();
                        (
                            cuts,
                            minority.clone(),
                            minority.clone(),
                            format!("{minority:?} | {majority:?}"),
                        )
                    }
                };
                hold(
                    run,
                    id,
                    kind,
                    nodes,
                    impaired,
                    format!("{detail}, {} ms", planned.duration_ms),
                );
                for (from, to) in cuts {
                    run.network.borrow_mut().cut(from, to)?;
                }
                tokio::time::sleep(duration).await;
                run.network.borrow_mut().heal_all()?;
            }
            FaultKind::FsyncPrimary | FaultKind::WriteError => {
                let node = if kind == FaultKind::FsyncPrimary {
                    match run.primary_of(0).await {
                        Some(primary) if run.free_nodes().contains(&primary) => Some(primary),
                        _ => pick(&run.free_nodes(), coins[0]),
                    }
                } else {
                    pick(&run.free_nodes(), coins[0])
                };
                let Some(node) = node else { return Ok(None) };
                let point = if kind == FaultKind::FsyncPrimary {
                    "posix/io/sync/fdatasync"
                } else {
                    "posix/io/rw/pwrite"
                };
                hold(
                    run,
                    id,
                    kind,
                    vec![node],
                    vec![node],
                    format!("fiu {point} EIO, {} ms", planned.duration_ms),
                );
                let pid = run.nodes.borrow().pid(node);
                run.state.borrow_mut().disk_faulted[node] = true;
                run.nodes
                    .borrow()
                    .fiu_ctrl(node, &format!("enable name={point},failinfo=5"))?;
                tokio::time::sleep(duration).await;
                let same = run.nodes.borrow().pid(node) == pid;
                if same {
                    let _ = run.nodes.borrow().fiu_ctrl(node, &format!("disable name={point}"));
                    return Ok(Some("healed; the node ran on".to_owned()));
                }
                return Ok(Some("the node stopped on it".to_owned()));
            }
            FaultKind::ReadError => {
                let Some(node) = pick(&run.free_nodes(), coins[0]) else {
                    return Ok(None);
                };
                let point = "posix/io/rw/pread";
                hold(
                    run,
                    id,
                    kind,
                    vec![node],
                    vec![node],
                    format!(
                        "restarted with a fifth of {point} failing EIO, {} ms",
                        planned.duration_ms
                    ),
                );
                run.nodes.borrow_mut().kill(node)?;
                let clock = run.nodes.borrow().clock(node);
                run.start(
                    node,
                    clock,
                    &format!("enable_random name={point},probability=0.2,failinfo=5"),
                )?;
                let ready = run.wait_ready(node).await;
                tokio::time::sleep(duration).await;
                if run.nodes.borrow().is_running(node) {
                    let _ = run.nodes.borrow().fiu_ctrl(node, &format!("disable name={point}"));
                }
                if let Err(error) = ready {
                    return Ok(Some(format!("it did not come up under the faults ({error})")));
                }
            }
            FaultKind::ClockOffset | FaultKind::ClockDrift => {
                let Some(node) = pick(&run.free_nodes(), coins[0]) else {
                    return Ok(None);
                };
                let clock = if kind == FaultKind::ClockOffset {
                    Clock::OffsetSeconds(planned.clock)
                } else {
                    Clock::RatePerMille(planned.clock)
                };
                let shown = clock.faketime().unwrap_or_default();
                hold(
                    run,
                    id,
                    kind,
                    vec![node],
                    vec![node],
                    format!("restarted with FAKETIME='{shown}', {} ms", planned.duration_ms),
                );
                run.terminate(node).await?;
                run.start(node, clock, "")?;
                run.wait_ready(node).await?;
                tokio::time::sleep(duration).await;
                run.terminate(node).await?;
                run.start(node, Clock::True, "")?;
                run.wait_ready(node).await?;
            }
        }
        Ok(None)
    }
    .await;
    match result {
        Ok(note) => {
            if !run.state.borrow().active.iter().any(|(other, _)| *other == id) {
                // Nothing could be targeted: the slot goes back.
                run.state.borrow_mut().reserved.retain(|(other, _)| *other != id);
                return;
            }
            release(run, id, note);
        }
        Err(error) => {
            run.problem(format!("{kind}: {error}"));
            release(run, id, Some(format!("failed: {error}")));
        }
    }
}

/// Mark `node` impaired (or not any more) outside a fault's own hold.
fn impair(run: &Run, node: usize, on: bool) {
    let now = run.now_ms();
    let mut state = run.state.borrow_mut();
    if on {
        state.impaired.push((node, now, None));
    } else if let Some(interval) = state
        .impaired
        .iter_mut()
        .rev()
        .find(|interval| interval.0 == node && interval.2.is_none())
    {
        interval.2 = Some(now);
    }
}

/// Undo whatever is still broken: links, pauses, libfiu points, clocks, stopped nodes.
async fn heal_everything(run: &Rc<Run>) {
    if let Err(error) = run.network.borrow_mut().heal_all() {
        run.problem(format!("heal: {error}"));
    }
    for node in 0..run.spec.nodes {
        let running = run.nodes.borrow().is_running(node);
        if running {
            let _ = run.nodes.borrow_mut().signal(node, "CONT");
            if run.spec.fiu {
                for point in ["posix/io/sync/fdatasync", "posix/io/rw/pwrite", "posix/io/rw/pread"] {
                    let _ = run.nodes.borrow().fiu_ctrl(node, &format!("disable name={point}"));
                }
            }
            if run.nodes.borrow().clock(node) != Clock::True {
                if let Err(error) = run.terminate(node).await {
                    run.problem(format!("heal: {error}"));
                }
                if let Err(error) = run.start(node, Clock::True, "") {
                    run.problem(format!("heal: {error}"));
                }
            }
        } else {
            // Give a supervisor restart under way its chance first.
            tokio::time::sleep(Duration::from_millis(2 * SUPERVISOR_RESTART_MS)).await;
            if !run.nodes.borrow().is_running(node)
                && let Err(error) = run.start(node, Clock::True, "")
            {
                run.problem(format!("heal: {error}"));
            }
        }
    }
    for node in 0..run.spec.nodes {
        if let Err(error) = run.wait_ready(node).await {
            run.problem(format!("heal: {error}"));
        }
    }
}
