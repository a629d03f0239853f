//! The checks at the end of a nemesis run, after everything is healed:
//!
//! 1. **settle**: within [`SETTLE_MS_MAX`] every node reports every group normal, in
//!    one view, with one commit point, one state digest and one next offset. Two
//!    nodes at one commit point with different digests is a divergence; no agreement
//!    in time is a liveness failure.
//! 2. **logs**: each partition read in full through the cluster: every acknowledged
//!    message is there exactly once at the offset it was acknowledged at, no message
//!    of a send the client library called *not accepted* is, and nothing is there
//!    that no client sent. With the digests equal on every node, what one read shows
//!    every node holds.
//! 3. **linearizability** (contended mode): each shared partition's history, the final
//!    reads included, has a linearization (`crate::linearizability`).
//! 4. **availability**: the longest stretch without an acknowledged send (polls alone
//!    do not count: a cluster that reads but takes no write is down), overall and per
//!    fault kind; a stretch longer than [`LIVENESS_GAP_MS_MAX`] during which a majority
//!    of nodes was unimpaired (in no fault, and not within [`RECOVERY_ALLOWANCE_MS`]
//!    of the end of one) fails the run, and so does a healed cluster on which some
//!    client gets no send acknowledged within that bound (`run.rs`).
//! 5. **disk use**: every data directory together under [`DATA_BYTES_MAX`].
//! 6. **problems**: a node that exited on its own, stopped on a storage failure with no
//!    disk fault, or would not stop on SIGTERM; a tool that failed.
//!
//! A run that acknowledged nothing compared nothing: vacuous.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use cluster::client::{Client, ClientConfig};
use cluster::vsr::Status;

use crate::linearizability::{self, Operation, PartitionInput, PartitionModel, PartitionOutput, Verdict as Linear};

use super::faults::FaultKind;
use super::run::Run;
use super::workload::Mode;
pub use crate::nemesis_format::RunStats;

/// How long the healed cluster may take to agree on every group, in milliseconds: a
/// restarted node repairs its logs from its peers (a few thousand prepares) and a view
/// change may still run; 60 s is many times that on this machine.
pub const SETTLE_MS_MAX: u64 = 60_000;
/// The longest a majority of healthy nodes may go without acknowledging a send, and
/// the longest a healed cluster may take to acknowledge one to every client, in
/// milliseconds. The slowest recovery the design allows without loss: every node
/// Recovering, four unanswered probes then a view change for the metadata group, the
/// same again for the partition groups it opens after (measured 12 to 13 s on this
/// machine), plus a client's reply timeout and move to the next node; the bound leaves
/// twice that. A healthy majority that needs longer is stuck.
pub const LIVENESS_GAP_MS_MAX: u64 = 30_000;
/// How long a node counts as impaired after its fault ended, in milliseconds: a
/// restarted node is Recovering until a normal primary answers its probes; when none
/// does, four unanswered probes (about 5.5 s) start a view change, and the partition
/// groups, opened only once the metadata group recovered, do the same after it. A
/// cluster where every node restarted took 12 to 13 s from the last restart to its
/// first acknowledged send on this machine.
pub const RECOVERY_ALLOWANCE_MS: u64 = 15_000;
/// The most bytes every node's data directory may hold together at the end of a run: a
/// run's 20,000 requests of at most 3 messages of 16 bytes write a few MB per node with
/// their headers and checkpoints; 1 GiB is far past any honest use and still bounds the
/// disk a runaway node could fill.
pub const DATA_BYTES_MAX: u64 = 1 << 30;
/// The most messages one final read asks for (the cluster's own cap per poll).
const READ_MESSAGES: u32 = cluster::partition::POLL_MESSAGES_MAX as u32;

/// The run's verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every check held, and something was compared.
    Pass,
    /// A check failed: why (its first clause is the signature).
    Fail(String),
    /// Nothing failed but nothing was compared.
    Vacuous(String),
    /// The run could not be made (the machine, not the cluster).
    Invalid(String),
}

/// When the run's phases happened, milliseconds from its start.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// The fault phase began.
    pub phase_start_ms: u64,
    /// Everything was healed.
    pub healed_ms: u64,
    /// The clients stopped.
    pub end_ms: u64,
}

/// Settle, read, and judge the run.
pub(super) async fn settle_and_check(
    run: &Run,
    groups: &[u64],
    window: Window,
    recovered_ms: u64,
) -> (Verdict, RunStats) {
    let mut stats = RunStats {
        recovered_ms,
        supervisor_restarts: run.state.borrow().supervisor_restarts,
        ..RunStats::default()
    };
    let mut failures: Vec<String> = run.state.borrow().problems.clone();
    stats.data_bytes = (0..run.spec.nodes)
        .map(|node| directory_bytes(&run.nodes.borrow().data_dir(node)))
        .sum();
    if stats.data_bytes > DATA_BYTES_MAX {
        failures.push(format!(
            "disk use: the data directories hold {} bytes, over {DATA_BYTES_MAX} (a log that is never trimmed?)",
            stats.data_bytes
        ));
    }
    {
        let recorded = run.workload.recorded.borrow();
        stats.requests = recorded.requests;
        stats.successes = recorded.successes_ms.len() as u64;
        stats.polls_checked = recorded.polls_checked;
        failures.extend(
            recorded
                .violations
                .iter()
                .map(|violation| format!("workload: {violation}")),
        );
    }
    availability(run, window, &mut stats, &mut failures);

    let mut all_groups = vec![0u64];
    all_groups.extend_from_slice(groups);
    let settle_start = Instant::now();
    match settle(run, &all_groups).await {
        Ok(()) => {
            stats.settle_ms = u64::try_from(settle_start.elapsed().as_millis()).unwrap_or(u64::MAX);
            stats.groups_agreed = all_groups.len() as u64;
        }
        Err(failure) => failures.push(failure),
    }

    match read_logs(run, groups).await {
        Ok(logs) => {
            check_logs(run, &logs, &mut stats, &mut failures);
            if run.spec.mode == Mode::Contended {
                linearize(run, &logs, &mut stats, &mut failures);
            }
        }
        Err(failure) => failures.push(failure),
    }

    // Safety first: the signature is the gravest failure's.
    failures.sort_by_key(|failure| severity_rank(failure));
    if let Some(first) = failures.first() {
        let mut text = first.clone();
        if failures.len() > 1 {
            text.push_str(&format!(
                "; and {} more: {}",
                failures.len() - 1,
                failures[1..].join(" | ")
            ));
        }
        return (Verdict::Fail(text), stats);
    }
    if stats.acked_messages == 0 {
        return (
            Verdict::Vacuous("no send was acknowledged: nothing to compare".to_owned()),
            stats,
        );
    }
    (Verdict::Pass, stats)
}

/// Bytes of the files under `dir`, recursively (0 if it cannot be read).
fn directory_bytes(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => directory_bytes(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Where a failure sorts: what the cluster answered wrongly before what it failed to
/// answer, and both before the harness's own trouble.
fn severity_rank(failure: &str) -> usize {
    const ORDER: [&str; 13] = [
        "divergence",
        "lost",
        "moved",
        "duplicate",
        "phantom",
        "not-accepted",
        "linearizability",
        "log",
        "workload",
        "crash",
        "disk use",
        "liveness",
        "settle",
    ];
    ORDER
        .iter()
        .position(|prefix| failure.starts_with(prefix))
        .unwrap_or(ORDER.len())
}

/// Gaps between successes over the fault phase and the recovery stretch, and how much
/// of each a healthy majority saw.
fn availability(run: &Run, window: Window, stats: &mut RunStats, failures: &mut Vec<String>) {
    let recorded = run.workload.recorded.borrow();
    let mut times: Vec<u64> = recorded
        .writes_ms
        .iter()
        .copied()
        .filter(|t| *t >= window.phase_start_ms && *t <= window.end_ms)
        .collect();
    times.sort_unstable();
    stats.successes_by_second = vec![0; usize::try_from(window.end_ms / 1000 + 1).unwrap_or(0)];
    for t in &recorded.successes_ms {
        if let Some(slot) = stats
            .successes_by_second
            .get_mut(usize::try_from(t / 1000).unwrap_or(usize::MAX))
        {
            *slot += 1;
        }
    }
    let mut edges = vec![window.phase_start_ms];
    edges.extend(times);
    edges.push(window.end_ms);
    let state = run.state.borrow();
    let quorum = run.spec.nodes / 2 + 1;
    let impaired_at = |t: u64| -> usize {
        let nodes: BTreeSet<usize> = state
            .impaired
            .iter()
            .filter(|(_, from, to)| *from <= t && to.is_none_or(|to| t < to + RECOVERY_ALLOWANCE_MS))
            .map(|(node, _, _)| *node)
            .collect();
        nodes.len()
    };
    let mut faults: Vec<(FaultKind, u64, u64)> = state
        .done
        .iter()
        .chain(state.active.iter().map(|(_, record)| record))
        .map(|record| (record.kind, record.start_ms, record.end_ms.unwrap_or(window.end_ms)))
        .collect();
    faults.sort_by_key(|fault| fault.1);
    // Per fault: how long after it ended the first send was acknowledged (overlapping
    // faults confound it: the figure is the kind's worst case in this run).
    let writes = &edges[1..edges.len() - 1];
    for (kind, start, _) in &faults {
        let served = served_after(&recorded.writes_by_client_ms, run.spec.clients, *start, window.end_ms);
        stats
            .served_after_fault_ms
            .entry(kind.name().to_owned())
            .or_default()
            .push(served);
    }
    for (kind, _, end) in &faults {
        let after = match writes.iter().find(|t| **t >= *end) {
            Some(t) => t - end,
            None => window.end_ms.saturating_sub(*end),
        };
        let entry = stats.recovery_by_kind_ms.entry(kind.name().to_owned()).or_default();
        *entry = (*entry).max(after);
    }
    for pair in edges.windows(2) {
        let (from, to) = (pair[0], pair[1]);
        let gap = to.saturating_sub(from);
        stats.longest_gap_ms = stats.longest_gap_ms.max(gap);
        for (kind, start, end) in &faults {
            if *start < to && *end > from {
                let entry = stats.gap_by_kind_ms.entry(kind.name().to_owned()).or_default();
                *entry = (*entry).max(gap);
            }
        }
        // The longest healthy stretch inside the gap, sampled every 50 ms.
        let mut stretch = 0u64;
        let mut best = 0u64;
        let mut t = from;
        while t < to {
            if run.spec.nodes - impaired_at(t) >= quorum {
                stretch += 50.min(to - t);
                best = best.max(stretch);
            } else {
                stretch = 0;
            }
            t += 50;
        }
        if best > stats.longest_healthy_gap_ms {
            stats.longest_healthy_gap_ms = best;
        }
        if best > LIVENESS_GAP_MS_MAX {
            failures.push(format!(
                "liveness: no send was acknowledged for {best} ms while a majority was healthy \
                 (bound {LIVENESS_GAP_MS_MAX} ms); the gap ran from +{from} ms to +{to} ms"
            ));
        }
    }
}

/// How long after `start` every one of the `clients` had a send acknowledged, in
/// milliseconds: the time from a fault to the next acknowledged send of the client it
/// stalled longest. A client with no acknowledged send after `start` counts until `end`
/// (the clients stopped): its wait is at least that.
fn served_after(writes_by_client: &BTreeMap<usize, Vec<u64>>, clients: usize, start: u64, end: u64) -> u64 {
    (0..clients)
        .map(|client| {
            let first = writes_by_client.get(&client).and_then(|times| {
                // Acknowledgements are recorded as they complete, so the list is sorted.
                let at = times.partition_point(|t| *t < start);
                times.get(at).copied()
            });
            first.unwrap_or(end.max(start)).saturating_sub(start)
        })
        .max()
        .unwrap_or(0)
}

fn status_client(run: &Run) -> Option<Client> {
    let mut config = ClientConfig::new(run.cluster.clone(), run.client_addresses.clone());
    config.status_timeout = Duration::from_millis(super::run::STATUS_PROBE_MS);
    Client::new(config).ok()
}

/// Wait until every node agrees on every group.
async fn settle(run: &Run, groups: &[u64]) -> Result<(), String> {
    let Some(mut client) = status_client(run) else {
        return Err("nemesis: no status client".to_owned());
    };
    let deadline = Instant::now() + Duration::from_millis(SETTLE_MS_MAX);
    loop {
        let mut disagreement = None;
        'groups: for &group in groups {
            let mut seen = Vec::new();
            for node in 0..run.spec.nodes {
                match client.status(node, group).await {
                    Ok(status) => match status.hosted {
                        Some(hosted) => seen.push((node, hosted)),
                        None => {
                            disagreement = Some(format!("node {node} does not host group {group:#x}"));
                            break 'groups;
                        }
                    },
                    Err(error) => {
                        disagreement = Some(format!("node {node} does not answer for group {group:#x}: {error}"));
                        break 'groups;
                    }
                }
            }
            let first = seen[0].1;
            for (node, hosted) in &seen {
                if hosted.status != Status::Normal || hosted.commit != hosted.commit_max {
                    disagreement = Some(format!(
                        "group {group:#x} on node {node}: {:?} view {} commit {}/{}",
                        hosted.status, hosted.view, hosted.commit, hosted.commit_max
                    ));
                    break 'groups;
                }
                if hosted.commit == first.commit
                    && (hosted.state_digest != first.state_digest || hosted.next_offset != first.next_offset)
                {
                    return Err(format!(
                        "divergence: group {group:#x} at commit {}: node {} has digest {:#x} next offset {}, node {} \
                         has digest {:#x} next offset {}",
                        hosted.commit,
                        seen[0].0,
                        first.state_digest,
                        first.next_offset,
                        node,
                        hosted.state_digest,
                        hosted.next_offset
                    ));
                }
                if hosted.view != first.view || hosted.commit != first.commit {
                    disagreement = Some(format!(
                        "group {group:#x}: node {} at view {} commit {}, node {node} at view {} commit {}",
                        seen[0].0, first.view, first.commit, hosted.view, hosted.commit
                    ));
                    break 'groups;
                }
            }
        }
        match disagreement {
            None => return Ok(()),
            Some(what) if Instant::now() > deadline => {
                return Err(format!(
                    "settle: the healed cluster did not agree within {SETTLE_MS_MAX} ms; {what}"
                ));
            }
            Some(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// One partition's final log, read through the cluster, and the reads as operations.
pub(super) struct FinalLog {
    messages: Vec<(u64, u128)>,
    reads: Vec<Operation<PartitionInput, PartitionOutput>>,
}

async fn read_logs(run: &Run, groups: &[u64]) -> Result<BTreeMap<u64, FinalLog>, String> {
    let mut config = ClientConfig::new(run.cluster.clone(), run.client_addresses.clone());
    config.client_id = Some(0x4e45_eeee_0000);
    let mut client = Client::new(config).map_err(|error| format!("nemesis: {error}"))?;
    client
        .login("root", cluster::metadata::DEFAULT_ROOT_PASSWORD)
        .await
        .map_err(|error| format!("final read: login: {error}"))?;
    let mut logs = BTreeMap::new();
    for &group in groups {
        let mut log = FinalLog {
            messages: Vec::new(),
            reads: Vec::new(),
        };
        let mut offset = 0;
        loop {
            let invoke = run.workload.now_ms();
            let reply = client
                .poll(group, offset, READ_MESSAGES)
                .await
                .map_err(|error| format!("final read: group {group:#x} from offset {offset}: {error}"))?;
            let complete = run.workload.now_ms();
            let messages: Vec<(u64, u128)> = reply.messages.iter().map(|m| (m.offset, m.id)).collect();
            log.reads.push(Operation {
                client: run.spec.clients,
                invoke_tick: invoke,
                complete_tick: Some(complete),
                input: PartitionInput::Poll {
                    offset,
                    count: READ_MESSAGES,
                },
                output: Some(PartitionOutput::Polled {
                    next_offset: reply.next_offset,
                    messages: messages.clone(),
                }),
            });
            let Some(&(last, _)) = messages.last() else {
                if offset < reply.next_offset {
                    return Err(format!(
                        "lost: group {group:#x}: a read from offset {offset} returned nothing though the next offset is {}",
                        reply.next_offset
                    ));
                }
                break;
            };
            log.messages.extend(messages);
            offset = last + 1;
            if offset >= reply.next_offset {
                break;
            }
        }
        logs.insert(group, log);
    }
    Ok(logs)
}

fn check_logs(run: &Run, logs: &BTreeMap<u64, FinalLog>, stats: &mut RunStats, failures: &mut Vec<String>) {
    let recorded = run.workload.recorded.borrow();
    let unknown: BTreeSet<u128> = recorded.unknown.iter().copied().collect();
    let not_accepted: BTreeSet<u128> = recorded.not_accepted.iter().copied().collect();
    stats.unknown_messages = unknown.len() as u64;
    stats.not_accepted_messages = not_accepted.len() as u64;
    let mut acked_at: BTreeMap<u128, (u64, u64, usize)> = BTreeMap::new();
    for acked in &recorded.acked {
        for (i, id) in acked.ids.iter().enumerate() {
            acked_at.insert(*id, (acked.group, acked.base_offset + i as u64, acked.client));
        }
    }
    stats.acked_messages = acked_at.len() as u64;
    let mut found: BTreeMap<u128, (u64, u64)> = BTreeMap::new();
    for (&group, log) in logs {
        let mut expected_offset = log.messages.first().map(|m| m.0).unwrap_or(0);
        for &(offset, id) in &log.messages {
            stats.logged_messages += 1;
            if offset != expected_offset {
                failures.push(format!(
                    "log: group {group:#x} skips from offset {expected_offset} to {offset}"
                ));
            }
            expected_offset = offset + 1;
            if let Some((other_group, other_offset)) = found.insert(id, (group, offset)) {
                failures.push(format!(
                    "duplicate: message {id:#x} is in the log twice: group {other_group:#x} offset {other_offset} and \
                     group {group:#x} offset {offset}"
                ));
            }
            if not_accepted.contains(&id) {
                failures.push(format!(
                    "not-accepted appended: message {id:#x} at group {group:#x} offset {offset} was reported not \
                     accepted (safe to resend) to its client"
                ));
            }
            if !acked_at.contains_key(&id) && !unknown.contains(&id) && !not_accepted.contains(&id) {
                failures.push(format!(
                    "phantom: group {group:#x} offset {offset} holds message {id:#x}, which no client sent"
                ));
            }
        }
    }
    for (id, (group, offset, client)) in &acked_at {
        match found.get(id) {
            None => failures.push(format!(
                "lost: message {id:#x} acknowledged to client {client} at group {group:#x} offset {offset} is in no log"
            )),
            Some((found_group, found_offset)) if (found_group, found_offset) != (group, offset) => {
                failures.push(format!(
                    "moved: message {id:#x} acknowledged at group {group:#x} offset {offset} is at group \
                     {found_group:#x} offset {found_offset}"
                ))
            }
            Some(_) => {}
        }
    }
}

fn linearize(run: &Run, logs: &BTreeMap<u64, FinalLog>, stats: &mut RunStats, failures: &mut Vec<String>) {
    let model = PartitionModel {
        poll_messages_max: READ_MESSAGES,
    };
    let recorded = run.workload.recorded.borrow();
    for (group, log) in logs {
        let mut history: Vec<Operation<PartitionInput, PartitionOutput>> =
            recorded.histories.get(group).cloned().unwrap_or_default();
        history.extend(log.reads.iter().cloned());
        let result = linearizability::check(&model, &history, linearizability::SEARCH_STATES_MAX);
        stats.linearized_operations += result.operations as u64;
        match result.verdict {
            Linear::Linearizable => {}
            Linear::Violation { minimal, .. } => failures.push(format!(
                "linearizability: partition group {group:#x} answered what no order of its {} operations explains; {}",
                result.operations,
                linearizability::describe(&model, &history, &minimal)
            )),
            Linear::Exhausted => failures.push(format!(
                "linearizability: the search over partition group {group:#x}'s {} operations ran out of states \
                 (not a pass)",
                result.operations
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_answers_sort_before_missing_ones_and_both_before_the_harness_s_trouble() {
        let mut failures = [
            "nemesis: kill: ip failed",
            "liveness: no send was acknowledged for 31000 ms",
            "crash: node 1 exited on its own (exit status: 101)",
            "lost: message 0x1 acknowledged",
            "linearizability: partition group 0xc00",
            "divergence: group 0x0 at commit 7",
        ];
        failures.sort_by_key(|failure| severity_rank(failure));
        let first_words: Vec<&str> = failures
            .iter()
            .map(|failure| failure.split(':').next().unwrap_or(""))
            .collect();
        assert_eq!(
            first_words,
            ["divergence", "lost", "linearizability", "crash", "liveness", "nemesis"]
        );
    }

    #[test]
    fn a_fault_is_over_for_the_clients_when_the_one_it_stalled_longest_is_served() {
        // Client 0 writes to a healthy partition throughout; client 1's primary died at
        // 1,000 ms and its next send was acknowledged at 1,900 ms; client 2 was never
        // served again before the clients stopped at 5,000 ms.
        let writes: BTreeMap<usize, Vec<u64>> = [
            (0, vec![900, 1_010, 1_020, 1_030]),
            (1, vec![950, 1_900, 1_950]),
            (2, vec![990]),
        ]
        .into_iter()
        .collect();
        assert_eq!(served_after(&writes, 2, 1_000, 5_000), 900, "the stalled client's wait");
        assert_eq!(
            served_after(&writes, 3, 1_000, 5_000),
            4_000,
            "never served: counted to the end"
        );
        assert_eq!(served_after(&writes, 1, 1_000, 5_000), 10, "a healthy client alone");
        // A send acknowledged at the fault's very start is after it (nothing waited).
        assert_eq!(served_after(&writes, 1, 1_010, 5_000), 0);
        // A client that never wrote at all waits from the start to the end.
        assert_eq!(served_after(&BTreeMap::new(), 1, 1_000, 5_000), 4_000);
    }
}
