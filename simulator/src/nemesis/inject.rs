//! The nemesis's hands: faults dealt from the plan under the concurrency bounds
//! (`drive_faults`), each injected, held for its duration and healed (`apply`, one
//! function per way of breaking things: stopping a node, every node, pausing a
//! primary, a rolling restart, cutting links, failing writes or reads, skewing a
//! clock), and everything still broken undone at the end of the fault phase
//! (`heal_everything`).
//! Every fault's start and end go to the run's schedule (`hold`, `release`) and every
//! node it impairs to the availability check's timeline.

use std::rc::Rc;
use std::time::{Duration, Instant};

use super::check::LIVENESS_GAP_MS_MAX;
use super::faults::{Category, FAULTS_CONCURRENT_MAX, FaultKind, FaultRecord, Plan, PlannedFault};
use super::procs::{Clock, SUPERVISOR_RESTART_MS};
use super::run::{DECK_DEAL_MS_MAX, FAULT_DRAIN_MS_MAX, Run};

/// Deal the plan's faults until the phase ends and every kind was dealt once (at most
/// twice the phase, or [`DECK_DEAL_MS_MAX`] if longer), then wait for the faults under
/// way to end.
pub(super) async fn drive_faults(run: &Rc<Run>) {
    let mut plan = Plan::new(run.spec.seed, &run.spec.kinds);
    let start = Instant::now();
    let phase = Duration::from_millis(run.spec.phase_ms);
    let hard_end = (2 * phase).max(Duration::from_millis(DECK_DEAL_MS_MAX));
    let mut tasks = Vec::new();
    'deal: loop {
        tokio::time::sleep(Duration::from_millis(plan.gap_ms())).await;
        if (start.elapsed() >= phase && plan.deck_dealt()) || start.elapsed() >= hard_end {
            break;
        }
        let Some(planned) = plan.next_fault() else {
            continue;
        };
        // Wait for room: the concurrency bound, exclusivity, one network fault at a time.
        loop {
            if start.elapsed() >= hard_end {
                break 'deal;
            }
            if run.spec.one_fault_at_a_time && !served_since_last_fault(run) {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
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
            if let Err(error) = task.await {
                run.problem(format!("nemesis: a fault task failed: {error}"));
            }
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

/// With one fault at a time: whether none is under way and every client had a send
/// acknowledged since the last one ended, or [`LIVENESS_GAP_MS_MAX`] passed since (the
/// availability check judges that wait; the plan goes on).
fn served_since_last_fault(run: &Run) -> bool {
    let state = run.state.borrow();
    if !state.active.is_empty() || !state.reserved.is_empty() {
        return false;
    }
    let Some(last_end) = state.done.iter().filter_map(|record| record.end_ms).max() else {
        return true;
    };
    if run.now_ms() >= last_end + LIVENESS_GAP_MS_MAX {
        return true;
    }
    let recorded = run.workload.recorded.borrow();
    (0..run.spec.clients).all(|client| recorded.last_write_ms.get(&client).is_some_and(|at| *at > last_end))
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

/// The candidate `coin` picks (modulo their count), or none if there are none.
fn pick(candidates: &[usize], coin: u64) -> Option<usize> {
    (!candidates.is_empty()).then(|| candidates[(coin % candidates.len() as u64) as usize])
}

/// How an injected fault ended: `Ok(None)` as planned (or nothing could be targeted),
/// `Ok(Some(note))` with a note for its record, `Err` a tool or a node that failed.
type Injected = Result<Option<String>, String>;

/// Inject one fault, wait its duration, heal it.
async fn apply(run: &Rc<Run>, id: u64, planned: PlannedFault) {
    let kind = planned.kind;
    let result = inject(run, id, &planned).await;
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

/// Inject fault `id` as `planned` and heal it after its duration, by its kind.
async fn inject(run: &Run, id: u64, planned: &PlannedFault) -> Injected {
    match planned.kind {
        FaultKind::Kill | FaultKind::Terminate => stop_one(run, id, planned).await,
        FaultKind::KillAll => kill_all(run, id, planned).await,
        FaultKind::PausePrimary => pause_primary(run, id, planned).await,
        FaultKind::RollingRestart => rolling_restart(run, id, planned).await,
        FaultKind::Isolate | FaultKind::OneWay | FaultKind::CutLink | FaultKind::Split => {
            cut_links(run, id, planned).await
        }
        FaultKind::FsyncPrimary | FaultKind::WriteError => fail_writes(run, id, planned).await,
        FaultKind::ReadError => fail_reads(run, id, planned).await,
        FaultKind::ClockOffset | FaultKind::ClockDrift => skew_clock(run, id, planned).await,
    }
}

/// Hold one `node` (the one it impairs too) for fault `id`.
fn hold_node(run: &Run, id: u64, kind: FaultKind, node: usize, detail: String) {
    hold(run, id, kind, vec![node], vec![node], detail);
}

/// Hold every node for fault `id`, impairing them all at once if `impaired` (a
/// rolling restart impairs each in its turn instead).
fn hold_all(run: &Run, id: u64, kind: FaultKind, impaired: bool, detail: String) {
    let all: Vec<usize> = (0..run.spec.nodes).collect();
    let impaired = if impaired { all.clone() } else { Vec::new() };
    hold(run, id, kind, all, impaired, detail);
}

/// Start `node` again on the clock it had, and wait until it is ready.
async fn restart(run: &Run, node: usize) -> Result<(), String> {
    let clock = run.nodes.borrow().clock(node);
    run.start(node, clock, "")?;
    run.wait_ready(node).await
}

/// Kill or terminate: stop a free node (SIGKILL, or SIGTERM and wait for its clean
/// exit), keep it down for the fault's duration, start it again.
async fn stop_one(run: &Run, id: u64, planned: &PlannedFault) -> Injected {
    let Some(node) = pick(&run.free_nodes(), planned.coins[0]) else {
        return Ok(None);
    };
    let kill = planned.kind == FaultKind::Kill;
    let signal = if kill { "SIGKILL" } else { "SIGTERM" };
    hold_node(
        run,
        id,
        planned.kind,
        node,
        format!("{signal}, down {} ms", planned.duration_ms),
    );
    if kill {
        run.nodes.borrow_mut().kill(node)?;
    } else {
        run.terminate(node).await?;
    }
    tokio::time::sleep(Duration::from_millis(planned.duration_ms)).await;
    restart(run, node).await?;
    Ok(None)
}

/// SIGKILL every node, keep them all down for the duration, start them all, then
/// wait for each.
async fn kill_all(run: &Run, id: u64, planned: &PlannedFault) -> Injected {
    let nodes_total = run.spec.nodes;
    let detail = format!("SIGKILL every node, down {} ms", planned.duration_ms);
    hold_all(run, id, planned.kind, true, detail);
    for node in 0..nodes_total {
        run.nodes.borrow_mut().kill(node)?;
    }
    tokio::time::sleep(Duration::from_millis(planned.duration_ms)).await;
    for node in 0..nodes_total {
        let clock = run.nodes.borrow().clock(node);
        run.start(node, clock, "")?;
    }
    for node in 0..nodes_total {
        run.wait_ready(node).await?;
    }
    Ok(None)
}

/// SIGSTOP the primary of a group (the metadata group or a partition's, by coin) for
/// the duration, then SIGCONT it; a free node by coin if the primary is not free.
async fn pause_primary(run: &Run, id: u64, planned: &PlannedFault) -> Injected {
    let coins = planned.coins;
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
    hold_node(
        run,
        id,
        planned.kind,
        node,
        format!("SIGSTOP (group {group:#x}'s primary), {} ms", planned.duration_ms),
    );
    run.nodes.borrow_mut().signal(node, "STOP")?;
    tokio::time::sleep(Duration::from_millis(planned.duration_ms)).await;
    if run.nodes.borrow().is_running(node) {
        run.nodes.borrow_mut().signal(node, "CONT")?;
    }
    Ok(None)
}

/// SIGTERM and restart each node in turn, the duration apart, each impaired while
/// it is down.
async fn rolling_restart(run: &Run, id: u64, planned: &PlannedFault) -> Injected {
    let nodes_total = run.spec.nodes;
    let detail = format!(
        "SIGTERM and restart each node in turn, {} ms apart",
        planned.duration_ms
    );
    hold_all(run, id, planned.kind, false, detail);
    for node in 0..nodes_total {
        impair(run, node, true);
        run.terminate(node).await?;
        restart(run, node).await?;
        impair(run, node, false);
        tokio::time::sleep(Duration::from_millis(planned.duration_ms)).await;
    }
    Ok(None)
}

/// The links a network fault cuts, and what its record says.
#[derive(Debug, PartialEq, Eq)]
struct Cuts {
    /// Each (from, to) link dropped.
    links: Vec<(usize, usize)>,
    /// The nodes the fault holds.
    nodes: Vec<usize>,
    /// The nodes it impairs (the availability check's minority side).
    impaired: Vec<usize>,
    /// What it did, for the schedule.
    detail: String,
}

/// The cuts of a network fault of `kind` among `nodes_total` nodes, targets drawn
/// from `coins`: one node cut off both ways, one link one way or both, or a minority
/// split from the majority.
fn plan_cuts(kind: FaultKind, coins: [u64; 4], nodes_total: usize) -> Cuts {
    let mut all: Vec<usize> = (0..nodes_total).collect();
    match kind {
        FaultKind::Isolate => {
            let node = pick(&all, coins[0]).unwrap_or(0);
            let links = all
                .iter()
                .filter(|other| **other != node)
                .flat_map(|&other| [(node, other), (other, node)])
                .collect();
            Cuts {
                links,
                nodes: vec![node],
                impaired: vec![node],
                detail: format!("node {node} cut off both ways"),
            }
        }
        FaultKind::OneWay | FaultKind::CutLink => {
            let from = pick(&all, coins[0]).unwrap_or(0);
            all.retain(|node| *node != from);
            let to = pick(&all, coins[1]).unwrap_or(0);
            let (links, detail) = if kind == FaultKind::OneWay {
                (vec![(from, to)], format!("{from} -> {to} dropped"))
            } else {
                (vec![(from, to), (to, from)], format!("{from} <-> {to} cut"))
            };
            Cuts {
                links,
                nodes: vec![from, to],
                impaired: vec![from],
                detail,
            }
        }
        _ => {
            let minority_size = (nodes_total - 1) / 2;
            let mut minority = Vec::new();
            for coin in coins.iter().take(minority_size.max(1)) {
                let rest: Vec<usize> = all.iter().copied().filter(|node| !minority.contains(node)).collect();
                if let Some(node) = pick(&rest, *coin) {
                    minority.push(node);
                }
            }
            minority.sort();
            let majority: Vec<usize> = all.iter().copied().filter(|node| !minority.contains(node)).collect();
            let links = minority
                .iter()
                .flat_map(|&a| majority.iter().flat_map(move |&b| [(a, b), (b, a)]))
                .collect();
            Cuts {
                links,
                nodes: minority.clone(),
                impaired: minority.clone(),
                detail: format!("{minority:?} | {majority:?}"),
            }
        }
    }
}

/// Cut the links of a network fault for the duration, then heal every link.
async fn cut_links(run: &Run, id: u64, planned: &PlannedFault) -> Injected {
    let cuts = plan_cuts(planned.kind, planned.coins, run.spec.nodes);
    hold(
        run,
        id,
        planned.kind,
        cuts.nodes,
        cuts.impaired,
        format!("{}, {} ms", cuts.detail, planned.duration_ms),
    );
    for (from, to) in cuts.links {
        run.network.borrow_mut().cut(from, to)?;
    }
    tokio::time::sleep(Duration::from_millis(planned.duration_ms)).await;
    run.network.borrow_mut().heal_all()?;
    Ok(None)
}

/// Make a node's fdatasync (the metadata group's primary, if free) or pwrite (a free
/// node) fail with EIO for the duration, through libfiu; the node may stop on it.
async fn fail_writes(run: &Run, id: u64, planned: &PlannedFault) -> Injected {
    let kind = planned.kind;
    let coins = planned.coins;
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
    hold_node(
        run,
        id,
        kind,
        node,
        format!("fiu {point} EIO, {} ms", planned.duration_ms),
    );
    let pid = run.nodes.borrow().pid(node);
    run.state.borrow_mut().disk_faulted[node] = true;
    run.nodes
        .borrow_mut()
        .fiu_ctrl(node, &format!("enable name={point},failinfo=5"))?;
    tokio::time::sleep(Duration::from_millis(planned.duration_ms)).await;
    let same = run.nodes.borrow().pid(node) == pid;
    if same {
        let _ = run.nodes.borrow_mut().fiu_ctrl(node, &format!("disable name={point}"));
        return Ok(Some("healed; the node ran on".to_owned()));
    }
    Ok(Some("the node stopped on it".to_owned()))
}

/// Restart a free node with a fifth of its preads failing EIO (libfiu), for the
/// duration; a node that stops while starting is left to its supervisor's restart.
async fn fail_reads(run: &Run, id: u64, planned: &PlannedFault) -> Injected {
    let Some(node) = pick(&run.free_nodes(), planned.coins[0]) else {
        return Ok(None);
    };
    let point = "posix/io/rw/pread";
    hold_node(
        run,
        id,
        planned.kind,
        node,
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
    let faulted = run.nodes.borrow().pid(node);
    let ready = run.wait_ready(node).await;
    tokio::time::sleep(Duration::from_millis(planned.duration_ms)).await;
    if run.nodes.borrow().is_running(node) {
        let _ = run.nodes.borrow_mut().fiu_ctrl(node, &format!("disable name={point}"));
    }
    if let Err(error) = ready {
        // A disk whose reads fail may stop a node while it starts: its
        // supervisor starts it again (on a healthy disk now); wait for that.
        let deadline = Instant::now() + Duration::from_millis(4 * SUPERVISOR_RESTART_MS);
        while run.nodes.borrow().pid(node) == faulted && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if run.nodes.borrow().pid(node).is_some_and(|pid| Some(pid) != faulted) {
            run.wait_ready(node).await?;
        }
        return Ok(Some(format!("it stopped while starting under the faults ({error})")));
    }
    Ok(None)
}

/// Restart a free node under libfaketime (a clock offset or drift) for the duration,
/// then restart it on the true clock.
async fn skew_clock(run: &Run, id: u64, planned: &PlannedFault) -> Injected {
    let Some(node) = pick(&run.free_nodes(), planned.coins[0]) else {
        return Ok(None);
    };
    let clock = if planned.kind == FaultKind::ClockOffset {
        Clock::OffsetSeconds(planned.clock)
    } else {
        Clock::RatePerMille(planned.clock)
    };
    let shown = clock.faketime().unwrap_or_default();
    hold_node(
        run,
        id,
        planned.kind,
        node,
        format!("restarted with FAKETIME='{shown}', {} ms", planned.duration_ms),
    );
    run.terminate(node).await?;
    run.start(node, clock, "")?;
    run.wait_ready(node).await?;
    tokio::time::sleep(Duration::from_millis(planned.duration_ms)).await;
    run.terminate(node).await?;
    run.start(node, Clock::True, "")?;
    run.wait_ready(node).await?;
    Ok(None)
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
pub(super) async fn heal_everything(run: &Rc<Run>) {
    if let Err(error) = run.network.borrow_mut().heal_all() {
        run.problem(format!("heal: {error}"));
    }
    for node in 0..run.spec.nodes {
        let running = run.nodes.borrow().is_running(node);
        if running {
            let _ = run.nodes.borrow_mut().signal(node, "CONT");
            if run.spec.fiu {
                for point in ["posix/io/sync/fdatasync", "posix/io/rw/pwrite", "posix/io/rw/pread"] {
                    let _ = run.nodes.borrow_mut().fiu_ctrl(node, &format!("disable name={point}"));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_isolated_node_loses_every_link_both_ways() {
        let cuts = plan_cuts(FaultKind::Isolate, [2, 0, 0, 0], 3);
        assert_eq!(cuts.links, vec![(2, 0), (0, 2), (2, 1), (1, 2)]);
        assert_eq!((cuts.nodes, cuts.impaired), (vec![2], vec![2]));
        assert_eq!(cuts.detail, "node 2 cut off both ways");
    }

    #[test]
    fn a_one_way_cut_drops_one_direction_and_a_cut_link_both() {
        let one_way = plan_cuts(FaultKind::OneWay, [1, 1, 0, 0], 3);
        assert_eq!(one_way.links, vec![(1, 2)]);
        assert_eq!((one_way.nodes, one_way.impaired), (vec![1, 2], vec![1]));
        assert_eq!(one_way.detail, "1 -> 2 dropped");
        let cut = plan_cuts(FaultKind::CutLink, [1, 1, 0, 0], 3);
        assert_eq!(cut.links, vec![(1, 2), (2, 1)]);
        assert_eq!(cut.detail, "1 <-> 2 cut");
    }

    #[test]
    fn a_split_cuts_a_sorted_minority_from_the_majority_both_ways() {
        let cuts = plan_cuts(FaultKind::Split, [3, 3, 0, 0], 5);
        assert_eq!((cuts.nodes, cuts.impaired), (vec![3, 4], vec![3, 4]));
        assert_eq!(cuts.links.len(), 2 * 2 * 3);
        assert!(cuts.links.contains(&(0, 4)) && cuts.links.contains(&(4, 0)));
        assert_eq!(cuts.detail, "[3, 4] | [0, 1, 2]");
    }
}
