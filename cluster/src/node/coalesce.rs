//! Coalescing a shard's outgoing frames: the header-only and view-change frames of
//! several groups bound for the same peer leave as one batch (`wire::batch`).
//!
//! Why: every group keeps its own heartbeat and view-change timers, so a node's
//! liveness traffic grows with the groups it hosts, and on a bounded link it evicts
//! itself and the repair answers behind it (the simulator's swarm runs lost a third of
//! their packets that way). One batch per peer per flush makes that traffic one message
//! per node pair, whatever the group count: the grouped heartbeat and the grouped view
//! change the design asks for, without changing what any group sends or when.
//!
//! What stays single: bulk frames (prepares, repair answers, checkpoint chunks),
//! frames to clients, and a flush whose batchable frames for a peer all belong to one
//! group (a group's own messages keep their own fates on
//! the network, as before; a batch forms only where several groups speak at once).

use std::collections::BTreeMap;

use crate::seam::ProcessId;
use crate::vsr::replica::Outgoing;
use crate::wire::batch::{BATCH_BODY_BYTES_MAX, batchable, pack};
use crate::wire::peek_group;

/// `outgoing` with the batchable frames of two or more groups for the same replica
/// packed into batches (as many as their bytes need). Every other frame keeps its place; a peer's batches take the
/// place of its first packed frame. `replicas` says which addresses are replicas;
/// batches carry `cluster`, as every frame does.
pub fn coalesce(outgoing: Vec<Outgoing>, replicas: u8, cluster: u64) -> Vec<Outgoing> {
    // Most flushes (one frame in, one or two out) have nothing to pack.
    if outgoing.len() < 2 {
        return outgoing;
    }
    let is_peer = |to: ProcessId| to.0 < u32::from(replicas);
    // Per peer: the groups of its batchable frames (only the first two matter).
    let mut groups: BTreeMap<ProcessId, (u64, bool)> = BTreeMap::new();
    for out in outgoing.iter().filter(|out| is_peer(out.to) && batchable(&out.frame)) {
        let group = peek_group(&out.frame);
        groups
            .entry(out.to)
            .and_modify(|(first, several)| *several |= *first != group)
            .or_insert((group, false));
    }
    if !groups.values().any(|(_, several)| *several) {
        return outgoing;
    }
    let packed = |out: &Outgoing| {
        is_peer(out.to) && batchable(&out.frame) && groups.get(&out.to).is_some_and(|(_, several)| *several)
    };
    let mut batched: BTreeMap<ProcessId, Vec<Vec<u8>>> = BTreeMap::new();
    let mut order: Vec<Result<Outgoing, ProcessId>> = Vec::with_capacity(outgoing.len());
    for out in outgoing {
        if packed(&out) {
            let frames = batched.entry(out.to).or_default();
            if frames.is_empty() {
                order.push(Err(out.to));
            }
            frames.push(out.frame);
        } else {
            order.push(Ok(out));
        }
    }
    let mut result = Vec::with_capacity(order.len());
    for slot in order {
        match slot {
            Ok(out) => result.push(out),
            Err(to) => {
                let frames = batched.remove(&to).unwrap_or_default();
                debug_assert!(
                    frames.len() >= 2,
                    "a batch forms only from frames of two groups or more"
                );
                let mut start = 0;
                while start < frames.len() {
                    let mut end = start;
                    let mut bytes = 0;
                    while end < frames.len() && bytes + frames[end].len() <= BATCH_BODY_BYTES_MAX {
                        bytes += frames[end].len();
                        end += 1;
                    }
                    debug_assert!(end > start, "every batchable frame fits in a batch alone");
                    result.push(Outgoing {
                        to,
                        frame: pack(cluster, frames[start..end].iter().map(Vec::as_slice)),
                    });
                    start = end;
                }
            }
        }
    }
    debug_assert!(batched.is_empty(), "every peer's batch took its place");
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Command, Header, open, seal_header};

    fn frame(command: Command, group: u64, body: &[u8]) -> Vec<u8> {
        let mut header = Header::new(command);
        header.cluster = 0xC1;
        header.group = group;
        seal_header(header, body)
    }

    fn out(to: u32, frame: Vec<u8>) -> Outgoing {
        Outgoing {
            to: ProcessId(to),
            frame,
        }
    }

    fn groups_in(out: &Outgoing) -> Vec<(Command, u64)> {
        let (header, body) = open(&out.frame).expect("opens");
        assert_eq!(header.cluster, 0xC1, "every frame names the cluster, batches too");
        if header.command != Command::Batch {
            return vec![(header.command, header.group)];
        }
        crate::wire::batch::unpack(body)
            .expect("unpacks")
            .into_iter()
            .map(|inner| {
                let (header, _) = open(inner).expect("inner opens");
                (header.command, header.group)
            })
            .collect()
    }

    #[test]
    fn heartbeats_of_many_groups_to_one_peer_leave_as_one_batch_and_the_rest_keeps_its_place() {
        let outgoing = vec![
            out(1, frame(Command::Commit, 7, &[])),
            out(1, frame(Command::Prepare, 7, b"op")),
            out(2, frame(Command::Commit, 7, &[])),
            out(1, frame(Command::Commit, 8, &[])),
            out(9, frame(Command::Reply, 7, b"to a client")),
            out(1, frame(Command::RequestStartView, 9, &[])),
        ];
        let result = coalesce(outgoing, 3, 0xC1);
        let seen: Vec<(u32, Vec<(Command, u64)>)> = result.iter().map(|out| (out.to.0, groups_in(out))).collect();
        assert_eq!(
            seen,
            vec![
                (
                    1,
                    vec![
                        (Command::Commit, 7),
                        (Command::Commit, 8),
                        (Command::RequestStartView, 9)
                    ]
                ),
                (1, vec![(Command::Prepare, 7)]),
                // Replica 2 hears from one group only: its frame travels alone.
                (2, vec![(Command::Commit, 7)]),
                (9, vec![(Command::Reply, 7)]),
            ]
        );
    }

    #[test]
    fn one_group_s_frames_are_never_batched() {
        let outgoing = vec![
            out(1, frame(Command::Commit, 0, &[])),
            out(1, frame(Command::StartViewChange, 0, &[])),
            out(2, frame(Command::Commit, 0, &[])),
        ];
        let before: Vec<Vec<u8>> = outgoing.iter().map(|out| out.frame.clone()).collect();
        let result = coalesce(outgoing, 3, 0xC1);
        assert_eq!(result.iter().map(|out| out.frame.clone()).collect::<Vec<_>>(), before);
    }

    #[test]
    fn more_bytes_than_a_batch_holds_leave_in_several_batches() {
        // View-change logs of 200 KiB each from 12 groups: five fit in a batch.
        let log = vec![1u8; 200 << 10];
        let count = 12u64;
        let outgoing: Vec<Outgoing> = (0..count)
            .map(|group| out(1, frame(Command::DoViewChange, group, &log)))
            .collect();
        let result = coalesce(outgoing, 3, 0xC1);
        let sizes: Vec<usize> = result.iter().map(|out| groups_in(out).len()).collect();
        assert_eq!(sizes, vec![5, 5, 2]);
        assert!(result.iter().all(|out| out.frame.len() <= crate::wire::FRAME_BYTES_MAX));
        let groups: Vec<u64> = result.iter().flat_map(groups_in).map(|(_, group)| group).collect();
        assert_eq!(groups, (0..count).collect::<Vec<_>>(), "every frame, once, in order");
    }
}
