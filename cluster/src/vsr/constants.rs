//! Every timeout (in ticks of 10 ms) and every bound of the consensus core, with why.

/// Ticks between the primary's commit broadcasts (its heartbeat): half a second, so a
/// backup's 500-tick liveness window spans ten of them and one late broadcast never
/// starts an election.
pub const COMMIT_BROADCAST_TICKS: u64 = 50;

/// Ticks a backup waits without a commit broadcast from its primary before it votes to
/// leave the view (see `vsr::leave_view`). Only a commit broadcast resets it (a Prepare
/// does not), so a primary that can send but not commit is still replaced.
pub const LIVENESS_WINDOW_TICKS: u64 = 500;

/// Ticks a backup waits, after its primary's connection closed (the transport saw
/// it end, or a dial of it refused: the kernel's word that the process is gone), for
/// a commit broadcast that proves the primary still leads, before it gives up on the
/// view; the same wait for a view change whose primary's connection is closed. A
/// healthy primary broadcasts every `COMMIT_BROADCAST_TICKS`, and a connection that
/// dropped under a live process is redialled within milliseconds, so one interval
/// and a half covers the broadcast due plus its delivery. Silence without a close
/// (a pause, a partition, a one-way cut) still waits the whole liveness window.
pub const PRIMARY_CLOSED_CONFIRM_TICKS: u64 = COMMIT_BROADCAST_TICKS + COMMIT_BROADCAST_TICKS / 2;

/// Ticks before a primary resends a query confirmation round nobody confirmed yet
/// (see `vsr::query`): the same wait as a prepare's first resend, since a round is a
/// heartbeat and its answers, a round trip like a prepare's.
pub const QUERY_ROUND_RESEND_TICKS: u64 = PREPARE_RETRANSMIT_BASE_TICKS;

/// Queries a primary holds while they wait for their confirmation round; more are
/// refused (the client tries again). One per client in flight covers the simulator's
/// 64 clients on one partition; a query holds its request header and a poll's few
/// body bytes, so the bound is a few tens of KiB per group.
pub const QUERIES_WAITING_MAX: usize = 64;

/// Base ticks before the primary resends an unacknowledged prepare; doubled per attempt.
pub const PREPARE_RETRANSMIT_BASE_TICKS: u64 = 25;

/// The prepare retransmit backoff stops doubling at this multiple of the base (400
/// ticks), so a healed link is retried within four seconds.
pub const PREPARE_RETRANSMIT_BACKOFF_MULTIPLIER_MAX: u64 = 16;

/// Pipeline ops, from the oldest uncommitted one, whose prepares the primary resends
/// when their timeouts fire; the ops behind them wait (their timeouts do not run) until
/// the front commits. Commits go in op order, so an acknowledgement of a later op is
/// no use before the front's; resending the whole pipeline at once (32 ops, or up to
/// 128 inherited by a view change) overflows a link of the smallest capacity the swarm
/// profile draws (8 packets), and a full link drops the front as readily as the back:
/// after a whole-cluster outage a 2-replica group needed over 20,000 ticks to commit 42
/// inherited ops that way. Four leaves room on such a link for heartbeats and replies.
pub const PREPARE_RESEND_WINDOW_OPS: usize = 4;

/// Ticks between resends of StartViewChange and DoViewChange while a view change runs.
pub const VIEW_CHANGE_RESEND_TICKS: u64 = 50;

/// Ticks a vote to leave a view counts after it was heard (see `vsr::leave_view`):
/// two resend intervals, so a voter that still wants out is always counted (it
/// resends every `VIEW_CHANGE_RESEND_TICKS`), and one that heard its primary again
/// and stopped drops out soon, before its old vote can join a later, unrelated one.
pub const LEAVE_VOTE_FRESH_TICKS: u64 = 2 * VIEW_CHANGE_RESEND_TICKS;

/// Unanswered RequestStartView probes after which a recovering replica votes to leave
/// its view (see `vsr::leave_view`). One: a Normal primary answers a probe within a
/// round trip, so a whole probe interval without an answer means there is no view to
/// adopt. The vote only counts with a quorum's, so a replica cut off from a view that
/// stands cannot end it.
pub const REQUEST_START_VIEW_PROBES_UNANSWERED_BEFORE_VOTING: u64 = 1;

/// Ticks a view change may run without a started view before a replica votes to move
/// to the next view (and the next primary; it moves once a view-change quorum votes
/// so, see `vsr::leave_view`). Not randomized: replicas that time out together ask for
/// the same view with the same primary, so there is no split vote.
pub const VIEW_CHANGE_ESCALATE_TICKS: u64 = 500;

/// Ticks between a recovering replica's RequestStartView probes (the first goes at the
/// first tick after boot).
pub const REQUEST_START_VIEW_TICKS: u64 = 100;

/// Ticks before a repair request is retried when its answer did not arrive, at most:
/// the wait before a replica has measured a round trip, and the cap of its backoff
/// (see `vsr::round_trip`). A round takes at most this long, which is what the
/// simulator's catch-up bound counts per round.
pub const REPAIR_RETRY_TICKS: u64 = 100;

/// The shortest wait before a repair request is retried, however fast the measured
/// round trips, in ticks: 200 ms, TCP's usual floor for its retransmission timeout,
/// and two mean one-way delays of the slowest link the simulator's profiles draw (9
/// ticks, with an exponential tail), so a request is not sent twice while a slow
/// answer is still on its way.
pub const REPAIR_RETRY_TICKS_MIN: u64 = 20;

/// Prepares asked for (and served) in one repair round, at most, and the span of ops a
/// round covers (the held ones left out included). Bounds the burst one request can
/// cause; a round's answers that a full link cuts short halve the window asked for
/// (`Replica::repair_window`).
pub const REPAIR_PREPARES_MAX: u64 = 128;

/// Applied ops whose frames the journal keeps in memory, counting down from the applied
/// head; below them it keeps only headers and reads a frame back from the store when
/// a peer asks for it (`Journal::release_frame`). One repair round's worth: a peer a
/// little behind (a backup that missed a few prepares, the usual repair) asks for ops
/// just above its own applied head, within a round of the head, and is served from
/// memory; only a peer further behind costs store reads. The frames of a long-lived
/// partition group (its ring holds up to 64 MiB of them) stay on disk, where the WAL
/// already keeps them. A node's default: a simulation keeps fewer
/// (`ReplicaConfig::applied_frames_in_memory_ops`).
pub const JOURNAL_APPLIED_FRAMES_IN_MEMORY_OPS: u64 = REPAIR_PREPARES_MAX;

/// Repaired prepares held back until the chain above proves them: one repair round.
pub const REPAIR_BUFFER_PREPARES_MAX: usize = REPAIR_PREPARES_MAX as usize;

/// Headers a DoViewChange or StartView carries at most. Larger than the pipeline, so
/// every op that might be uncommitted is always covered.
pub const VIEW_CHANGE_HEADERS_MAX: u64 = 128;

/// Prepares the primary keeps in flight (prepared, not yet committed). Bounds how far
/// a log can run ahead of its commit point, which bounds what a view change must merge.
pub const PIPELINE_PREPARES_MAX: usize = 32;

/// Ops the commit point may run ahead of the one in the superblock before a replica in
/// a normal view persists it again. After a restart a replica knows committed only what
/// its superblock says, and a view started by restarted replicas must replicate every
/// op above that once more before it commits anything new. Persisted only when a view
/// started, that grew without bound: after a whole-cluster power outage a 2-replica
/// group re-replicated 466 ops, four at a time over a link up half the time, for more
/// than 20,000 ticks (`--seed 1000006 --clients 8 --faults swarm`, issue #17). One
/// superblock write per pipeline's worth of commits keeps what a view inherits under
/// two pipelines (inside `VIEW_CHANGE_HEADERS_MAX`) for a write per 32 synced prepares.
pub const SUPERBLOCK_COMMIT_INTERVAL_OPS: u64 = PIPELINE_PREPARES_MAX as u64;

/// Client requests the primary queues behind a full pipeline; past it, requests are
/// refused as not accepted (safe to resend).
pub const REQUEST_QUEUE_MAX: usize = 64;

/// Clients the client table remembers (for deduplication and reply replay). Past it,
/// the client whose last request committed earliest is forgotten; a forgotten client's
/// resend of an old request is refused rather than executed twice.
pub const CLIENT_TABLE_CLIENTS_MAX: usize = 8_192;

/// Journal slots of the metadata group by default: ops held in memory and in its WAL.
/// With a checkpoint every 960 ops ([`crate::vsr::checkpoint::checkpoint_interval_ops`])
/// the ring keeps at least 64 ops below the checkpoint for a peer a little behind.
pub const JOURNAL_SLOTS_DEFAULT: u64 = 1_024;

/// Prepare ring entries of a partition group by default: about a minute of a busy
/// partition's ops, so a replica down for seconds repairs instead of transferring state.
pub const RING_ENTRIES_DEFAULT: u64 = 65_536;

/// Fewest journal entries allowed: two pipelines of slack above a checkpoint plus a
/// checkpoint interval of 16 ops (`--journal-slots 80` in the simulator forces a
/// checkpoint every 16 applied ops).
pub const JOURNAL_OPS_MIN: u64 = 2 * PIPELINE_PREPARES_MAX as u64 + 16;

/// Largest journal entry cap accepted: the DoViewChange window and the op numbers are
/// far from it; it only keeps a typo from reserving the machine.
pub const JOURNAL_OPS_MAX: u64 = 1 << 24;

/// Frame bytes a ring holds by default, in bytes.
pub const RING_BYTES_DEFAULT: u64 = 64 << 20;

/// Least frame bytes a ring may be capped at, in bytes: a checkpoint is due at half the
/// cap, and a full pipeline of the largest frames must still fit above it, so a primary
/// never stops preparing for want of room.
pub const RING_BYTES_MIN: u64 = 2 * PIPELINE_PREPARES_MAX as u64 * crate::wire::FRAME_BYTES_MAX as u64;

/// Most frame bytes a ring may be capped at, in bytes (the reference's ceiling).
pub const RING_BYTES_MAX: u64 = 256 << 20;

/// Largest checkpoint taken, accepted from a peer or read from a disk, in bytes: 256
/// MiB. Bounds the buffer a state transfer fills. A partition's checkpoint holds its
/// whole state, messages included (until segments on disk take them out), so this is
/// also how much a partition holds before its checkpoints stop and, once its journal
/// is full, new writes wait; the state is in memory anyway. 64 MiB stopped a loopback
/// benchmark's partitions within seconds.
pub const CHECKPOINT_BYTES_MAX: usize = 256 << 20;

/// Ticks before a failed checkpoint is tried again: 100 (1 s). Taking one encodes the
/// whole state; retried after every input, a failing disk or an oversized state kept
/// the shard encoding tens of MB several times a second, and its groups missed their
/// heartbeats. One attempt a second keeps that cost bounded.
pub const CHECKPOINT_RETRY_TICKS: u64 = 100;

/// Bytes per state-transfer chunk: a quarter of the largest frame, so a chunk never
/// monopolises a link, and a 64 MiB checkpoint is 256 round trips.
pub const TRANSFER_CHUNK_BYTES: usize = 256 << 10;

/// Transfers one replica serves at once: each pins a checkpoint in memory and its
/// ring above it.
pub const TRANSFERS_SERVED_MAX: usize = 2;

/// Ticks before an unanswered checkpoint chunk request is sent again (as repair).
pub const TRANSFER_RETRY_TICKS: u64 = REPAIR_RETRY_TICKS;

/// Unanswered chunk requests in a row after which a transfer is abandoned (repair
/// starts a new one, perhaps from another peer): eight seconds of silence.
pub const TRANSFER_RETRIES_MAX: u32 = 8;

/// Ticks a served transfer may go without a chunk request before its pin is released:
/// longer than the receiver's whole retry budget, so a live transfer is never unpinned.
pub const TRANSFER_PIN_IDLE_TICKS_MAX: u64 = TRANSFER_RETRY_TICKS * (TRANSFER_RETRIES_MAX as u64 + 2);

/// Ticks a served transfer may go without a word once its last chunk has been sent:
/// a receiver that lost that chunk asks again after [`TRANSFER_RETRY_TICKS`], and one
/// that installed it says so with a single ask for the ops above, which a lossy or
/// congested link may drop. Held for the full [`TRANSFER_PIN_IDLE_TICKS_MAX`], such a
/// pin kept one of its shard's two transfer places from every other group for 1,000
/// ticks (seed 10002124: after a whole-cluster outage, two lost asks left a group's
/// last replicas refused for 2,000 ticks). Two retry periods: the receiver's re-ask
/// has time to arrive, and a pin released early only costs a fresh transfer.
pub const TRANSFER_PIN_SHIPPED_IDLE_TICKS_MAX: u64 = TRANSFER_RETRY_TICKS * 2;

/// Largest replica count: the header's replica field and the quorum tables are sized for it.
pub const REPLICAS_MAX: usize = 6;

const _: () = assert!(VIEW_CHANGE_HEADERS_MAX as usize > PIPELINE_PREPARES_MAX);
const _: () = assert!(LIVENESS_WINDOW_TICKS >= 5 * COMMIT_BROADCAST_TICKS);
const _: () = assert!(PRIMARY_CLOSED_CONFIRM_TICKS > COMMIT_BROADCAST_TICKS);
const _: () = assert!(
    PRIMARY_CLOSED_CONFIRM_TICKS < LIVENESS_WINDOW_TICKS && PRIMARY_CLOSED_CONFIRM_TICKS < VIEW_CHANGE_ESCALATE_TICKS
);
const _: () = assert!(JOURNAL_SLOTS_DEFAULT >= JOURNAL_OPS_MIN && RING_ENTRIES_DEFAULT >= JOURNAL_OPS_MIN);
const _: () = assert!(RING_BYTES_MIN <= RING_BYTES_DEFAULT && RING_BYTES_DEFAULT <= RING_BYTES_MAX);
const _: () = assert!(TRANSFER_CHUNK_BYTES + crate::wire::HEADER_BYTES <= crate::wire::FRAME_BYTES_MAX);

/// Replication quorum: min(3, majority). Capped at 3 so that large groups commit
/// after three copies (flexible quorums), paid for by a larger view-change quorum.
pub fn quorum_replication(replicas: usize) -> usize {
    assert!((1..=REPLICAS_MAX).contains(&replicas), "{replicas} replicas");
    (replicas / 2 + 1).min(3)
}

/// View-change quorum: n - replication quorum + 1, so it intersects every replication quorum.
pub fn quorum_view_change(replicas: usize) -> usize {
    replicas - quorum_replication(replicas) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quorums_intersect_for_every_cluster_size() {
        let expected = [(1, 1, 1), (2, 2, 1), (3, 2, 2), (4, 3, 2), (5, 3, 3), (6, 3, 4)];
        for (n, replication, view_change) in expected {
            assert_eq!(quorum_replication(n), replication, "replication quorum of {n}");
            assert_eq!(quorum_view_change(n), view_change, "view-change quorum of {n}");
            assert!(
                quorum_replication(n) + quorum_view_change(n) > n,
                "quorums of {n} must intersect"
            );
        }
    }
}
