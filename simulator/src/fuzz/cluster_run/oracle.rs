//! The end-of-run oracle: replicas that applied the same ops hold the same state, and
//! what the cluster holds is what the shadow predicted.
//!
//! Metadata: no live replica ahead of the leader; replicas at the leader's op hold
//! identical metadata (sessions included) and identical client tables (deduplication
//! entries and replies). Partitions, for every partition in the leader's applied
//! metadata: exactly one live primary; replicas at the primary's op hold identical
//! partition state and client tables. The shadow (only once every answer is in): the
//! leader's metadata, and each client namespace's messages, offsets and owners on its
//! partitions' primaries, are what the shadow predicted, and the shadow and the cluster
//! agree on which partitions exist. Shared objects (contended, `--shared`) are judged
//! by their histories instead (`checks::linearizability`).
//!
//! It only reads: a run's output does not depend on whether the oracle ran.

use std::collections::BTreeSet;

use cluster::node::Directory;
use cluster::vsr::{StateMachine, Status};

use crate::harness::{Harness, MetadataReplica};
use crate::workload::{Contended, MetadataWorkload};

/// What the oracle compared, as (name, count) in the order the `compared:` line
/// prints them.
pub(super) type Compared = Vec<(&'static str, u64)>;

/// Run the oracle. `Err` names the first disagreement.
pub(super) fn run(harness: &Harness, workload: &MetadataWorkload) -> Result<Compared, String> {
    let live = harness.live_replicas();
    let Some((leader_index, leader)) = live
        .iter()
        .find(|(_, r)| r.borrow().is_primary() && r.borrow().status() == Status::Normal)
    else {
        return Ok(vec![("replicas_compared", 0)]);
    };
    let leader = leader.borrow();
    let mut replicas_compared = 0;
    for (index, replica) in &live {
        if compare_metadata_replica(*index, &replica.borrow(), *leader_index, &leader)? {
            replicas_compared += 1;
        }
    }
    let mut counts = vec![("replicas_compared", replicas_compared), ("view", leader.view())];

    let directory = Directory::from_metadata(leader.state_machine().state());
    let (primaries, partition_replicas_compared) = compare_partitions(harness, &directory)?;
    counts.push(("partitions", directory.partitions.len() as u64));
    counts.push(("partition_replicas_compared", partition_replicas_compared));
    counts.push(("partition_ops_compared", harness.partition_ops_compared()));

    // Without a drain (--no-quiesce) a request may still be in flight; the shadow can
    // only be compared once every answer is in.
    if workload.outstanding() > 0 {
        counts.push(("shadow_skipped", 1));
        return Ok(counts);
    }
    counts.extend(compare_shadow(harness, workload, &leader, &directory, &primaries)?);
    Ok(counts)
}

/// Whether `replica` applied exactly the leader's ops (and so was compared); `Err` if
/// it applied more, or the same ops into different metadata or client tables.
fn compare_metadata_replica(
    index: usize,
    replica: &MetadataReplica,
    leader_index: usize,
    leader: &MetadataReplica,
) -> Result<bool, String> {
    if replica.commit_min() > leader.commit_min() {
        return Err(format!(
            "replica {index} applied op {} ahead of the leader (replica {leader_index}) at {}",
            replica.commit_min(),
            leader.commit_min()
        ));
    }
    if replica.commit_min() < leader.commit_min() {
        return Ok(false);
    }
    if replica.state_machine().digest() != leader.state_machine().digest() {
        return Err(format!(
            "replica {index} and the leader (replica {leader_index}) applied the same {} ops but hold different metadata",
            leader.commit_min()
        ));
    }
    if replica.client_table_digest() != leader.client_table_digest() {
        return Err(format!(
            "replica {index} and the leader (replica {leader_index}) applied the same {} metadata ops but hold \
             different client tables (deduplication entries and replies)",
            leader.commit_min()
        ));
    }
    Ok(true)
}

/// Every partition group of the directory has exactly one live Normal primary, and
/// its replicas that applied the primary's ops agree with it. Returns each group's
/// primary and the replicas compared.
fn compare_partitions(harness: &Harness, directory: &Directory) -> Result<(Vec<(u64, usize)>, u64), String> {
    let mut compared = 0;
    let mut primaries: Vec<(u64, usize)> = Vec::new();
    for group in directory.partitions.keys() {
        let replicas = harness.partition_replicas(*group);
        let leading: Vec<usize> = replicas
            .iter()
            .filter(|(_, r)| r.is_primary() && r.status() == Status::Normal)
            .map(|(index, _)| *index)
            .collect();
        let [primary_index] = leading[..] else {
            return Err(format!(
                "partition group {group:#x} has {} live primaries (replicas {leading:?}); it must have exactly one",
                leading.len()
            ));
        };
        primaries.push((*group, primary_index));
        let Some((_, primary)) = replicas.iter().find(|(index, _)| *index == primary_index) else {
            unreachable!("the primary is one of the group's replicas")
        };
        let (primary_commit, primary_digest, primary_clients) = (
            primary.commit_min(),
            primary.state_machine().digest(),
            primary.client_table_digest(),
        );
        for (index, replica) in &replicas {
            if replica.commit_min() > primary_commit {
                return Err(format!(
                    "partition group {group:#x}: replica {index} applied op {} ahead of its primary (replica {primary_index}) at {primary_commit}",
                    replica.commit_min(),
                ));
            }
            if replica.commit_min() == primary_commit {
                if replica.state_machine().digest() != primary_digest {
                    return Err(format!(
                        "partition group {group:#x}: replica {index} and its primary (replica {primary_index}) applied the same {primary_commit} ops but hold different partition state",
                    ));
                }
                if replica.client_table_digest() != primary_clients {
                    return Err(format!(
                        "partition group {group:#x}: replica {index} and its primary (replica {primary_index}) applied the same {primary_commit} ops but hold different client tables (deduplication entries and replies)",
                    ));
                }
                compared += 1;
            }
        }
    }
    Ok((primaries, compared))
}

/// The shadow against the cluster, once every answer is in: the leader's metadata,
/// the set of partition groups, and each client namespace's partitions on their
/// primaries. Every client keeps to its own namespace, so after the drain the shadow
/// is exact whatever the number of clients.
fn compare_shadow(
    harness: &Harness,
    workload: &MetadataWorkload,
    leader: &MetadataReplica,
    directory: &Directory,
    primaries: &[(u64, usize)],
) -> Result<Compared, String> {
    let shadow = workload.compare_with(leader.state_machine().state())?;
    let mut counts = vec![
        ("shadow_skipped", 0),
        ("streams_compared", shadow.streams_compared),
        ("topics_compared", shadow.topics_compared),
        ("partitions_compared", shadow.partitions_compared),
        ("groups_compared", shadow.groups_compared),
        ("users_compared", shadow.users_compared),
        ("tokens_compared", shadow.tokens_compared),
    ];
    let shared: BTreeSet<u64> = workload
        .contended()
        .map(Contended::partition_groups)
        .unwrap_or_default()
        .into_iter()
        .collect();
    let expected: BTreeSet<u64> = workload
        .partition_groups()
        .into_iter()
        .chain(shared.iter().copied())
        .collect();
    let actual: BTreeSet<u64> = directory.partitions.keys().copied().collect();
    if expected != actual {
        return Err(format!(
            "the shadow expects partition groups {:?} but the leader's metadata has {:?}",
            expected.difference(&actual).collect::<Vec<_>>(),
            actual.difference(&expected).collect::<Vec<_>>()
        ));
    }
    let (mut namespaces_checked, mut messages_compared, mut offsets_compared, mut owners_compared) = (0, 0, 0, 0);
    for &(group, primary_index) in primaries {
        if shared.contains(&group) {
            // Judged by its history, not by the exact shadow.
            continue;
        }
        let replicas = harness.partition_replicas(group);
        let Some((_, primary)) = replicas.iter().find(|(index, _)| *index == primary_index) else {
            unreachable!("the primary was just seen")
        };
        let compared = workload
            .compare_partition(group, primary.state_machine().state())
            .map_err(|detail| format!("partition group {group:#x}: {detail}"))?;
        namespaces_checked += 1;
        messages_compared += compared.messages_compared;
        offsets_compared += compared.offsets_compared;
        owners_compared += compared.owners_compared;
    }
    counts.extend([
        ("namespaces_checked", namespaces_checked),
        ("messages_compared", messages_compared),
        ("offsets_compared", offsets_compared),
        ("owners_compared", owners_compared),
    ]);
    Ok(counts)
}
