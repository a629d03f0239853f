//! `GroupStatus`: what one node says about one group it hosts, answered by the
//! group's shard from its own replica, without a consensus round.
//!
//! A client asks any node for any group (`Request`, operation [`GROUP_STATUS_CODE`],
//! the group in the header) and gets that node's view of it: status, view, which
//! replica it takes for primary, commit point, head, and the digest of the state it
//! has applied. For the metadata group the answer also lists the partitions of the
//! node's directory, which is how a client maps stream, topic and partition to a group
//! id it never created itself. For a partition group it carries the next offset.
//!
//! It needs no session: it says who leads and how far each replica got, nothing a
//! client could not learn from refusals' hints. The answer is one node's opinion, not
//! the cluster's: a replica cut off from the others still says it is in its old view.
//! That is what operators want from `cluster-cli metadata` and what the kill tests
//! compare across nodes (count and digest per partition on every replica).

use crate::codec::{DecodeError, Reader, Writer};
use crate::metadata::Durability;
use crate::vsr::{Replica, ReplicaStore, StateMachine, Status};

/// The operation code of a status request. Not a metadata or partition operation:
/// admission answers it before any group sees it (next to `BIND_SESSION_CODE`, 200).
pub const GROUP_STATUS_CODE: u8 = 201;

/// Most partitions one metadata status answer lists: 4,096 entries of 25 bytes is about
/// 100 KiB, well inside a frame. A larger directory is cut at this many (lowest group
/// ids first) and says so in [`GroupStatus::partitions_truncated`].
pub const STATUS_PARTITIONS_MAX: usize = 4_096;

/// One partition of a node's directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionEntry {
    /// The partition's VSR group.
    pub group: u64,
    /// The stream.
    pub stream_id: u32,
    /// The topic.
    pub topic_id: u32,
    /// The partition.
    pub partition_id: u32,
    /// The topic's durability.
    pub durability: Durability,
}

/// A replica's status as a byte on the wire.
fn status_code(status: Status) -> u8 {
    match status {
        Status::Normal => 0,
        Status::ViewChange => 1,
        Status::Recovering => 2,
    }
}

fn status_of_code(code: u8) -> Result<Status, DecodeError> {
    match code {
        0 => Ok(Status::Normal),
        1 => Ok(Status::ViewChange),
        2 => Ok(Status::Recovering),
        code => Err(DecodeError::UnknownCode { field: "status", code }),
    }
}

/// What one node says about one group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupStatus {
    /// The answering replica.
    pub replica: u8,
    /// The group asked about.
    pub group: u64,
    /// The group's replica on this node, or `None` if the node does not host the group
    /// (not created here yet, deleted, or refused by its disk).
    pub hosted: Option<HostedGroup>,
    /// Metadata group only: the node's partition directory (at most
    /// [`STATUS_PARTITIONS_MAX`] entries).
    pub partitions: Vec<PartitionEntry>,
    /// Whether `partitions` was cut at [`STATUS_PARTITIONS_MAX`].
    pub partitions_truncated: bool,
}

/// The state of a group's replica on the answering node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostedGroup {
    /// Normal, view change or recovering.
    pub status: Status,
    /// The replica's view.
    pub view: u64,
    /// The primary of that view (`view % replicas`).
    pub primary: u8,
    /// Ops applied (commit_min).
    pub commit: u64,
    /// Highest op known committed (commit_max).
    pub commit_max: u64,
    /// Highest op journaled.
    pub head: u64,
    /// Digest of the applied state.
    pub state_digest: u128,
    /// Partition groups: the next offset (messages ever appended). 0 for metadata.
    pub next_offset: u64,
}

impl HostedGroup {
    /// The group as `replica` sees it now; `next_offset` is the partition log's (0 for
    /// the metadata group, which has none).
    pub fn of<S: StateMachine, T: ReplicaStore>(replica: &Replica<S, T>, next_offset: u64) -> Self {
        Self {
            status: replica.status(),
            view: replica.view(),
            primary: replica.primary_of(replica.view()),
            commit: replica.commit_min(),
            commit_max: replica.commit_max(),
            head: replica.head(),
            state_digest: replica.state_machine().digest(),
            next_offset,
        }
    }
}

impl GroupStatus {
    /// `[replica u8][group u64][hosted bool][hosted fields?][truncated bool][len][entries]`.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(self.replica);
        w.u64(self.group);
        w.bool(self.hosted.is_some());
        if let Some(hosted) = &self.hosted {
            w.u8(status_code(hosted.status));
            w.u64(hosted.view);
            w.u8(hosted.primary);
            w.u64(hosted.commit);
            w.u64(hosted.commit_max);
            w.u64(hosted.head);
            w.u128(hosted.state_digest);
            w.u64(hosted.next_offset);
        }
        w.bool(self.partitions_truncated);
        w.list(self.partitions.iter(), |w, entry| {
            w.u64(entry.group);
            w.u32(entry.stream_id);
            w.u32(entry.topic_id);
            w.u32(entry.partition_id);
            w.u8(entry.durability.code());
        });
        w.finish()
    }

    /// Parse a body occupying all of `bytes`. Never panics.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(bytes);
        let replica = r.u8("replica")?;
        let group = r.u64("group")?;
        let hosted = if r.bool("hosted")? {
            Some(HostedGroup {
                status: status_of_code(r.u8("status")?)?,
                view: r.u64("view")?,
                primary: r.u8("primary")?,
                commit: r.u64("commit")?,
                commit_max: r.u64("commit max")?,
                head: r.u64("head")?,
                state_digest: r.u128("state digest")?,
                next_offset: r.u64("next offset")?,
            })
        } else {
            None
        };
        let partitions_truncated = r.bool("partitions truncated")?;
        let partitions = r.list("partitions", STATUS_PARTITIONS_MAX, |r| {
            Ok(PartitionEntry {
                group: r.u64("partition group")?,
                stream_id: r.u32("stream id")?,
                topic_id: r.u32("topic id")?,
                partition_id: r.u32("partition id")?,
                durability: Durability::decode_from(r)?,
            })
        })?;
        r.finish()?;
        Ok(Self {
            replica,
            group,
            hosted,
            partitions,
            partitions_truncated,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> GroupStatus {
        GroupStatus {
            replica: 2,
            group: 0,
            hosted: Some(HostedGroup {
                status: Status::ViewChange,
                view: 7,
                primary: 1,
                commit: 40,
                commit_max: 42,
                head: 43,
                state_digest: 0xfeed_beef,
                next_offset: 0,
            }),
            partitions: vec![PartitionEntry {
                group: 5 << 10,
                stream_id: 1,
                topic_id: 2,
                partition_id: 0,
                durability: Durability::Persisted,
            }],
            partitions_truncated: false,
        }
    }

    #[test]
    fn a_status_round_trips_and_a_truncated_one_is_refused() {
        let status = sample();
        let bytes = status.encode();
        assert_eq!(GroupStatus::decode(&bytes), Ok(status.clone()));
        let unhosted = GroupStatus {
            hosted: None,
            partitions: Vec::new(),
            ..status
        };
        assert_eq!(GroupStatus::decode(&unhosted.encode()), Ok(unhosted));
        for cut in 0..bytes.len() {
            assert!(
                GroupStatus::decode(&bytes[..cut]).is_err(),
                "a body cut at {cut} decoded"
            );
        }
        let mut unknown_status = bytes.clone();
        unknown_status[10] = 9;
        assert!(GroupStatus::decode(&unknown_status).is_err());
    }
}
