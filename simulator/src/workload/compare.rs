//! The end-of-run comparison of the shadow with the cluster: the metadata
//! ([`compare_metadata`]) and one partition ([`compare_partition`]).
//!
//! Both directions count: an entity on one side only is a difference, and so is every
//! field that differs. Differences are named with where they are ("stream 3 topic 1
//! partitions") and what each side holds; at most [`DIFFERENCES_REPORTED_MAX`] are
//! spelled out.
//!
//! Does not compare what the shadow does not model: creation timestamps, password
//! hashes and salts, token hashes and expiry, the view a partition was created in.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use cluster::metadata::MetadataState;
use cluster::partition::PartitionState;

use super::contended::SHARED_PREFIX;
use super::shadow::Shadow;

/// Differences named in one failed comparison; the rest are counted.
pub const DIFFERENCES_REPORTED_MAX: usize = 16;

/// What the metadata comparison compared.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShadowComparison {
    /// Streams found on both sides and compared field by field.
    pub streams_compared: u64,
    /// Topics compared.
    pub topics_compared: u64,
    /// Partitions compared (id, group id, the message expiry it was created with).
    pub partitions_compared: u64,
    /// Consumer groups compared (name, members, generation).
    pub groups_compared: u64,
    /// Users compared (root included).
    pub users_compared: u64,
    /// Token names found on both sides.
    pub tokens_compared: u64,
}

impl fmt::Display for ShadowComparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "shadow compared: streams={} topics={} partitions={} groups={} users={} tokens={}",
            self.streams_compared,
            self.topics_compared,
            self.partitions_compared,
            self.groups_compared,
            self.users_compared,
            self.tokens_compared
        )
    }
}

/// What one partition's comparison compared.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PartitionComparison {
    /// Retained messages compared (offset, id, payload checksum, timestamp).
    pub messages_compared: u64,
    /// Consumer offsets compared.
    pub offsets_compared: u64,
    /// Group owners compared.
    pub owners_compared: u64,
}

/// Compare the shadow's metadata with `state`. See the module docs.
pub fn compare_metadata(shadow: &Shadow, state: &MetadataState) -> Result<ShadowComparison, String> {
    let mut compared = ShadowComparison::default();
    let mut differences = Vec::new();
    compare_streams(shadow, state, &mut compared, &mut differences);
    compare_users(shadow, state, &mut compared, &mut differences);
    verdict(compared, differences, "the shadow differs from the cluster")
}

/// Compare the shadow's partition replicated by `group` with `state` (its primary's):
/// expiry, next offset, where the retained log starts (exactly where the shadow knows
/// it, else at or above the first offset possibly retained), every retained message,
/// consumer offsets and group owners.
pub fn compare_partition(shadow: &Shadow, group: u64, state: &PartitionState) -> Result<PartitionComparison, String> {
    let Some(partition) = shadow.partition_by_group(group) else {
        return Err(format!(
            "the cluster has partition group {group:#x}, the shadow does not"
        ));
    };
    let mut differences = Vec::new();
    let (messages_compared, offsets_compared, owners_compared) = partition.compare(state, &mut differences);
    let compared = PartitionComparison {
        messages_compared,
        offsets_compared,
        owners_compared,
    };
    verdict(
        compared,
        differences,
        "the shadow's partition differs from the cluster's",
    )
}

/// `Ok(compared)` without differences, else `Err` naming them.
fn verdict<T>(compared: T, mut differences: Vec<String>, what: &str) -> Result<T, String> {
    if differences.is_empty() {
        return Ok(compared);
    }
    let total = differences.len();
    differences.truncate(DIFFERENCES_REPORTED_MAX);
    let mut message = format!("{what}: {}", differences.join("; "));
    if total > DIFFERENCES_REPORTED_MAX {
        message.push_str(&format!("; and {} more", total - DIFFERENCES_REPORTED_MAX));
    }
    Err(message)
}

/// Push a difference if `shadow != cluster`.
fn differ<T: PartialEq + fmt::Debug>(differences: &mut Vec<String>, what: &str, shadow: &T, cluster: &T) {
    if shadow != cluster {
        differences.push(format!("{what}: shadow {shadow:?}, cluster {cluster:?}"));
    }
}

/// Keys present on one side only, as differences.
fn one_sided<A, B>(
    differences: &mut Vec<String>,
    what: &str,
    shadow: &BTreeMap<u32, A>,
    cluster: &BTreeMap<u32, B>,
    name_a: impl Fn(&A) -> String,
    name_b: impl Fn(&B) -> String,
) {
    for (id, a) in shadow {
        if !cluster.contains_key(id) {
            differences.push(format!(
                "{what} {id} ({}) is in the shadow, not in the cluster",
                name_a(a)
            ));
        }
    }
    for (id, b) in cluster {
        if !shadow.contains_key(id) {
            differences.push(format!(
                "{what} {id} ({}) is in the cluster, not in the shadow",
                name_b(b)
            ));
        }
    }
}

fn compare_streams(
    shadow: &Shadow,
    state: &MetadataState,
    compared: &mut ShadowComparison,
    differences: &mut Vec<String>,
) {
    // The contended workload's shared objects are judged by their histories, not here.
    let cluster_streams: BTreeMap<u32, &cluster::metadata::Stream> = state
        .streams()
        .iter()
        .filter(|(_, stream)| !stream.name.starts_with(SHARED_PREFIX))
        .map(|(id, stream)| (*id, stream))
        .collect();
    one_sided(
        differences,
        "stream",
        &shadow.streams,
        &cluster_streams,
        |s| s.name.clone(),
        |s| s.name.clone(),
    );
    for (stream_id, expected) in &shadow.streams {
        let Some(actual) = state.stream(*stream_id) else {
            continue;
        };
        compared.streams_compared += 1;
        let at = format!("stream {stream_id}");
        differ(differences, &format!("{at} name"), &expected.name, &actual.name);
        differ(
            differences,
            &format!("{at} next topic id"),
            &expected.next_topic_id,
            &actual.next_topic_id,
        );
        one_sided(
            differences,
            &format!("{at} topic"),
            &expected.topics,
            &actual.topics,
            |t| t.name.clone(),
            |t| t.name.clone(),
        );
        for (topic_id, expected) in &expected.topics {
            let Some(actual) = actual.topics.get(topic_id) else {
                continue;
            };
            compared.topics_compared += 1;
            let at = format!("{at} topic {topic_id}");
            differ(differences, &format!("{at} name"), &expected.name, &actual.name);
            let expected_partitions: Vec<(u32, u64, u64)> = expected
                .partitions
                .iter()
                .map(|p| (p.id, p.group, p.message_expiry_micros))
                .collect();
            let actual_partitions: Vec<(u32, u64, u64)> = actual
                .partitions
                .iter()
                .map(|p| (p.id, p.group_id, p.message_expiry_micros))
                .collect();
            differ(
                differences,
                &format!("{at} partitions (id, group, message expiry)"),
                &expected_partitions,
                &actual_partitions,
            );
            // usize -> u64 is lossless on every supported target.
            compared.partitions_compared += expected_partitions.len().min(actual_partitions.len()) as u64;
            differ(
                differences,
                &format!("{at} durability"),
                &expected.durability,
                &actual.durability,
            );
            differ(
                differences,
                &format!("{at} message expiry"),
                &expected.message_expiry_micros,
                &actual.message_expiry_micros,
            );
            differ(
                differences,
                &format!("{at} next group id"),
                &expected.next_group_id,
                &actual.next_group_id,
            );
            one_sided(
                differences,
                &format!("{at} group"),
                &expected.groups,
                &actual.consumer_groups,
                |g| g.name.clone(),
                |g| g.name.clone(),
            );
            for (group_id, expected) in &expected.groups {
                let Some(actual) = actual.consumer_groups.get(group_id) else {
                    continue;
                };
                compared.groups_compared += 1;
                let at = format!("{at} group {group_id}");
                differ(differences, &format!("{at} name"), &expected.name, &actual.name);
                differ(
                    differences,
                    &format!("{at} members"),
                    &expected.members,
                    &actual.members,
                );
                differ(
                    differences,
                    &format!("{at} generation"),
                    &expected.generation,
                    &actual.generation,
                );
            }
        }
    }
}

fn compare_users(
    shadow: &Shadow,
    state: &MetadataState,
    compared: &mut ShadowComparison,
    differences: &mut Vec<String>,
) {
    let cluster_users: BTreeMap<u32, &cluster::metadata::User> = state
        .users()
        .iter()
        .filter(|(_, user)| !user.username.starts_with(SHARED_PREFIX))
        .map(|(id, user)| (*id, user))
        .collect();
    one_sided(
        differences,
        "user",
        &shadow.users,
        &cluster_users,
        |u| u.username.clone(),
        |u| u.username.clone(),
    );
    for (user_id, expected) in &shadow.users {
        let Some(actual) = state.user(*user_id) else { continue };
        compared.users_compared += 1;
        let at = format!("user {user_id}");
        differ(
            differences,
            &format!("{at} username"),
            &expected.username,
            &actual.username,
        );
        differ(differences, &format!("{at} active"), &expected.active, &actual.active);
        differ(
            differences,
            &format!("{at} permissions"),
            &expected.permissions,
            &actual.permissions,
        );
        let expected_tokens: BTreeSet<&str> = expected.tokens.keys().map(String::as_str).collect();
        let actual_tokens: BTreeSet<&str> = actual.tokens.keys().map(String::as_str).collect();
        compared.tokens_compared += expected_tokens.intersection(&actual_tokens).count() as u64;
        differ(
            differences,
            &format!("{at} token names"),
            &expected_tokens,
            &actual_tokens,
        );
    }
}
