//! What "the cluster has settled" means, for every phase that waits for it (the
//! outage's recovery, the drain) and for the contended plane's final logs.
//!
//! A group is settled when every live replica is Normal in one view under one primary
//! that has committed everything it holds, and every replica has applied that. These
//! are reads of the harness: they draw nothing and step nothing.

use cluster::node::Directory;
use cluster::vsr::Status;

use crate::harness::Harness;

/// Whether every live replica is Normal in one view with one primary and caught up
/// with it, for the metadata group and for every partition group in the leader's
/// applied metadata (each hosted by every live node).
pub(super) fn settled(harness: &Harness) -> bool {
    let live = harness.live_replicas();
    let Some((_, leader)) = live
        .iter()
        .find(|(_, r)| r.borrow().is_primary() && r.borrow().status() == Status::Normal)
    else {
        return false;
    };
    let (view, commit, head, directory) = {
        let leader = leader.borrow();
        (
            leader.view(),
            leader.commit_min(),
            leader.head(),
            Directory::from_metadata(leader.state_machine().state()),
        )
    };
    // Everything the leader holds is committed and applied (ops inherited from an
    // earlier view are re-committed first), and every replica has applied it.
    let metadata_settled = head == commit
        && live.iter().all(|(_, r)| {
            let r = r.borrow();
            r.status() == Status::Normal && r.view() == view && r.commit_min() == commit
        });
    metadata_settled
        && directory
            .partitions
            .keys()
            .all(|group| partition_settled(harness, *group, live.len()))
}

/// The groups to settle: the metadata group and every partition group in the applied
/// metadata of the metadata primary among `among` (every live replica if None), or of
/// the first of them if none is primary yet.
pub(super) fn groups_known_to(harness: &Harness, among: Option<&[usize]>) -> Vec<u64> {
    let live = harness.live_replicas();
    let members: Vec<_> = live
        .iter()
        .filter(|(index, _)| among.is_none_or(|among| among.contains(index)))
        .collect();
    let source = members
        .iter()
        .find(|(_, r)| r.borrow().is_primary())
        .or_else(|| members.first());
    let mut groups = vec![cluster::node::METADATA_GROUP];
    if let Some((_, replica)) = source {
        groups.extend(
            Directory::from_metadata(replica.borrow().state_machine().state())
                .partitions
                .keys(),
        );
    }
    groups
}

/// Whether `group` is hosted by all `live` nodes, all Normal in one view, with one
/// primary that has committed everything it holds, and every replica has applied that.
fn partition_settled(harness: &Harness, group: u64, live: usize) -> bool {
    let replicas = harness.partition_replicas(group);
    let mut primaries = replicas.iter().filter(|(_, r)| r.is_primary());
    let (Some((_, primary)), None) = (primaries.next(), primaries.next()) else {
        return false;
    };
    replicas.len() == live
        && primary.head() == primary.commit_max()
        && replicas.iter().all(|(_, r)| {
            r.status() == Status::Normal
                && r.view() == primary.view()
                && r.commit_min() == primary.commit_max()
                && r.commit_max() == primary.commit_max()
        })
}

/// The messages of the partition replicated by `group`, as (offset, id), and its next
/// offset, on its one live Normal primary; `None` without exactly one.
pub(super) fn final_log(harness: &Harness, group: u64) -> Option<(Vec<(u64, u128)>, u64)> {
    let replicas = harness.partition_replicas(group);
    let mut primaries = replicas
        .iter()
        .filter(|(_, replica)| replica.is_primary() && replica.status() == Status::Normal);
    let (Some((_, primary)), None) = (primaries.next(), primaries.next()) else {
        return None;
    };
    let state = primary.state_machine().state();
    let messages = state
        .log()
        .segments()
        .iter()
        .flat_map(|segment| segment.messages())
        .map(|message| (message.offset, message.id))
        .collect();
    Some((messages, state.next_offset()))
}
