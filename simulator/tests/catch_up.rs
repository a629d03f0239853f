//! A replica down long enough that every partition's ring moved past it, under steady
//! load (the shape of part 2's run 1): it must catch every partition up by state
//! transfer while the writes go on, and its installs must connect to the ring instead
//! of going stale on arrival.
//!
//! The reference cluster made 47 installs across 21 partitions in that run, and after
//! 45 of them the next repair found the ring already past the install. Here the peer
//! ships its state as of the transfer's start and pins its ring above that op until
//! the install, so an install is stale only if a pin had to be released.

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use cluster::metadata::{Durability, MetadataOp, MetadataReply, partition_group_id};
use cluster::node::JournalBounds;
use cluster::partition::{Message, PartitionOp, PartitionReply};
use cluster::vsr::constants::{JOURNAL_OPS_MIN, RING_BYTES_DEFAULT};
use cluster::wire::Header;
use simulator::harness::client::{ClientDriver, ClientRequest};
use simulator::harness::{Harness, HarnessConfig};
use simulator::simulation::SimulationConfig;

/// Partitions of the one topic.
const PARTITIONS: usize = 8;
/// Clients writing, each to every partition in turn.
const CLIENTS: usize = 4;
/// Ticks the cluster runs before the backup goes down.
const WARM_UP_TICKS: u64 = 1_000;
/// Ticks the backup stays down: each partition takes several rings' worth of ops.
const DOWN_TICKS: u64 = 4_000;
/// Ticks the backup has to catch up, with the load still on.
const CATCH_UP_TICKS_MAX: u64 = 6_000;
/// The backup that goes down (replica 0 leads view 0 of the metadata group).
const LAGGING: usize = 2;

/// Creates one topic of `PARTITIONS` partitions, then writes one-message batches to
/// every partition in turn from every client, forever.
#[derive(Default)]
struct SteadyLoad {
    stream: Option<u32>,
    topic_requested: bool,
    groups: Vec<u64>,
    sends: Vec<u64>,
    acknowledged: u64,
    unexpected: Vec<String>,
}

impl ClientDriver for SteadyLoad {
    fn branch(&mut self, _key: simulator::timeline::BranchKey) {
        // Draws nothing: every request is fixed.
    }

    fn next_request(&mut self, client: usize) -> Option<ClientRequest> {
        let metadata = |op: MetadataOp| ClientRequest::metadata(&op);
        if self.sends.is_empty() {
            self.sends = vec![0; CLIENTS];
        }
        if self.groups.is_empty() {
            if client != 0 {
                return None;
            }
            let Some(stream_id) = self.stream else {
                return Some(metadata(MetadataOp::CreateStream { name: "s".to_owned() }));
            };
            if self.topic_requested {
                return None;
            }
            self.topic_requested = true;
            return Some(metadata(MetadataOp::CreateTopic {
                stream_id,
                name: "load".to_owned(),
                partitions: PARTITIONS as u32,
                durability: Durability::Replicated,
                message_expiry_micros: 0,
            }));
        }
        let send = self.sends[client];
        self.sends[client] += 1;
        let group = self.groups[(client + send as usize) % PARTITIONS];
        let op = PartitionOp::SendMessages {
            messages: vec![Message {
                id: (client as u128) << 64 | u128::from(send),
                payload: vec![client as u8; 100],
            }],
        };
        Some(ClientRequest::partition(group, &op))
    }

    fn on_reply(&mut self, _client: usize, reply: &Header, body: &[u8]) {
        if reply.group == 0 {
            match MetadataReply::decode(body) {
                Ok(MetadataReply::StreamCreated { stream_id }) => self.stream = Some(stream_id),
                Ok(MetadataReply::TopicCreated { .. }) => {
                    self.groups = (0..PARTITIONS as u32)
                        .map(|partition| partition_group_id(reply.op, partition))
                        .collect();
                }
                other => self.unexpected.push(format!("metadata: {other:?}")),
            }
            return;
        }
        match PartitionReply::decode(body) {
            Ok(PartitionReply::Appended { .. }) => self.acknowledged += 1,
            other => self.unexpected.push(format!("partition: {other:?}")),
        }
    }
}

/// Per partition group: (the lagging replica's applied op, the primary's applied op).
fn progress(harness: &Harness, groups: &[u64]) -> Vec<(u64, u64)> {
    groups
        .iter()
        .map(|&group| {
            let replicas = harness.partition_replicas(group);
            let lagging = replicas
                .iter()
                .find(|(index, _)| *index == LAGGING)
                .map_or(0, |(_, replica)| replica.commit_min());
            let primary = replicas
                .iter()
                .find(|(_, replica)| replica.is_primary())
                .map_or(0, |(_, replica)| replica.commit_min());
            (lagging, primary)
        })
        .collect()
}

/// (installs, stale, started, abandoned) over the lagging replica's partition groups,
/// and the transfer requests its peers refused for want of a place in their shard.
fn transfers(harness: &Harness, groups: &[u64]) -> ((u64, u64, u64, u64), u64) {
    let mut totals = (0, 0, 0, 0);
    let mut refused = 0;
    for &group in groups {
        for (index, replica) in harness.partition_replicas(group) {
            refused += replica.stats().transfers_refused;
            if index == LAGGING {
                let stats = replica.stats();
                totals.0 += stats.transfers_installed;
                totals.1 += stats.transfers_stale;
                totals.2 += stats.transfers_started;
                totals.3 += stats.transfers_abandoned;
            }
        }
    }
    (totals, refused)
}

#[test]
fn a_replica_down_past_every_ring_catches_every_partition_up_under_load() {
    let driver = Rc::new(RefCell::new(SteadyLoad::default()));
    let config = HarnessConfig {
        journal: JournalBounds {
            journal_slots: JOURNAL_OPS_MIN,
            ring_entries: JOURNAL_OPS_MIN,
            ring_bytes: RING_BYTES_DEFAULT,
            ..JournalBounds::default()
        },
        ..HarnessConfig::new(SimulationConfig::perfect(3, CLIENTS, 2))
    };
    let mut harness = Harness::new(11, &config, driver.clone());
    for _ in 0..WARM_UP_TICKS {
        common::step(&mut harness, 1);
    }
    let groups = driver.borrow().groups.clone();
    assert_eq!(groups.len(), PARTITIONS, "the topic was created during the warm-up");

    harness.crash_now(LAGGING);
    for _ in 0..DOWN_TICKS {
        common::step(&mut harness, 1);
    }
    let at_restart = progress(&harness, &groups);
    for (partition, (_, primary)) in at_restart.iter().enumerate() {
        assert!(
            *primary > 2 * JOURNAL_OPS_MIN,
            "partition {partition} took only {primary} ops: not past the ring"
        );
    }
    let restarted_at = harness.simulation().tick();
    harness.restart_now(LAGGING, 1);

    // Caught up: the lagging replica applied everything its primary had applied when
    // it came back. Writes go on the whole time.
    let mut caught_up_at: Vec<Option<u64>> = vec![None; PARTITIONS];
    for _ in 0..CATCH_UP_TICKS_MAX {
        common::step(&mut harness, 1);
        let tick = harness.simulation().tick();
        for (partition, (lagging, _)) in progress(&harness, &groups).into_iter().enumerate() {
            if caught_up_at[partition].is_none() && lagging >= at_restart[partition].1 {
                caught_up_at[partition] = Some(tick - restarted_at);
            }
        }
        if caught_up_at.iter().all(Option::is_some) {
            break;
        }
    }
    let ((installs, stale, started, abandoned), refused) = transfers(&harness, &groups);
    let slowest = caught_up_at.iter().flatten().max().copied();
    println!(
        "catch-up after {DOWN_TICKS} ticks down, {PARTITIONS} partitions, ring {JOURNAL_OPS_MIN} entries: \
         transfers started={started} installed={installs} stale={stale} abandoned={abandoned} \
         (requests refused by a full shard: {refused}); \
         ticks to catch up per partition: {caught_up_at:?} (slowest {slowest:?})"
    );
    assert!(
        driver.borrow().unexpected.is_empty(),
        "{:?}",
        driver.borrow().unexpected
    );
    assert!(
        caught_up_at.iter().all(Option::is_some),
        "partitions not caught up after {CATCH_UP_TICKS_MAX} ticks: {caught_up_at:?}"
    );
    assert!(
        installs >= PARTITIONS as u64,
        "every partition was past the ring, so each needs an install: {installs}"
    );
    assert!(
        stale * 4 < installs,
        "{stale} of {installs} installs were stale on arrival (target: fewer than 1 in 4)"
    );
}
