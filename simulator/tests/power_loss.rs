//! Power loss on the whole cluster at once: what `replicated` and `persisted` promise.
//!
//! A `replicated` topic acknowledges a write once a quorum's WALs have queued it, so it
//! survives one replica losing its disk's unpublished tail, not all of them: after
//! every replica loses power together, its acknowledged-but-unpublished messages are
//! gone everywhere. A `persisted` topic acknowledges only what a quorum has published,
//! so every acknowledged message survives. The cluster must come back either way: the
//! replicated partition's group starts a view from every replica's durable prefix.

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use cluster::metadata::{Durability, MetadataOp, MetadataReply, partition_group_id};
use cluster::partition::{Message, PartitionOp, PartitionReply};
use cluster::vsr::Status;
use cluster::wire::Header;
use simulator::harness::client::{ClientDriver, ClientRequest};
use simulator::harness::{Harness, HarnessConfig};
use simulator::simulation::SimulationConfig;

/// Messages sent to each topic before the power goes.
const SENDS_PER_TOPIC: u64 = 12;

/// One client: a stream, a replicated and a persisted topic of one partition each,
/// then `SENDS_PER_TOPIC` one-message batches to each, alternating.
#[derive(Default)]
struct TwoTopics {
    stream: Option<u32>,
    /// Group ids of the replicated and the persisted partition, once created.
    groups: [Option<u64>; 2],
    /// Messages acknowledged per topic.
    acknowledged: [u64; 2],
    sends: u64,
    unexpected: Vec<String>,
}

impl TwoTopics {
    fn topic(index: usize) -> (&'static str, Durability) {
        [
            ("replicated", Durability::Replicated),
            ("persisted", Durability::Persisted),
        ][index]
    }
}

impl ClientDriver for TwoTopics {
    fn branch(&mut self, _key: simulator::timeline::BranchKey) {
        // Draws nothing: every request is fixed.
    }

    fn next_request(&mut self, _client: usize) -> Option<ClientRequest> {
        let metadata = |op: MetadataOp| ClientRequest::metadata(&op);
        let Some(stream_id) = self.stream else {
            return Some(metadata(MetadataOp::CreateStream { name: "s".to_owned() }));
        };
        if let Some(index) = self.groups.iter().position(Option::is_none) {
            let (name, durability) = Self::topic(index);
            return Some(metadata(MetadataOp::CreateTopic {
                stream_id,
                name: name.to_owned(),
                partitions: 1,
                durability,
                message_expiry_micros: 0,
            }));
        }
        if self.sends >= 2 * SENDS_PER_TOPIC {
            return None;
        }
        let index = (self.sends % 2) as usize;
        self.sends += 1;
        let op = PartitionOp::SendMessages {
            messages: vec![Message {
                id: u128::from(self.sends),
                payload: self.sends.to_le_bytes().to_vec(),
            }],
        };
        Some(ClientRequest::partition(
            self.groups[index].expect("created above"),
            &op,
        ))
    }

    fn on_reply(&mut self, _client: usize, reply: &Header, body: &[u8]) {
        if reply.group == 0 {
            match MetadataReply::decode(body) {
                Ok(MetadataReply::StreamCreated { stream_id }) => self.stream = Some(stream_id),
                Ok(MetadataReply::TopicCreated { .. }) => {
                    let index = self.groups.iter().position(Option::is_none).expect("a topic to create");
                    self.groups[index] = Some(partition_group_id(reply.op, 0));
                }
                other => self.unexpected.push(format!("metadata: {other:?}")),
            }
            return;
        }
        let index = self
            .groups
            .iter()
            .position(|group| *group == Some(reply.group))
            .expect("a known group");
        match PartitionReply::decode(body) {
            Ok(PartitionReply::Appended { .. }) => self.acknowledged[index] += 1,
            other => self.unexpected.push(format!("partition: {other:?}")),
        }
    }
}

/// Messages each live replica of `group` holds, and whether one of them leads it.
fn messages_held(harness: &Harness, group: u64) -> (Vec<u64>, bool) {
    let replicas = harness.partition_replicas(group);
    let held = replicas
        .iter()
        .map(|(_, replica)| replica.state_machine().state().next_offset())
        .collect();
    let led = replicas
        .iter()
        .any(|(_, replica)| replica.is_primary() && replica.status() == Status::Normal);
    (held, led)
}

#[test]
fn a_cluster_wide_power_loss_keeps_persisted_writes_and_loses_the_unpublished_replicated_tail() {
    let driver = Rc::new(RefCell::new(TwoTopics::default()));
    let config = HarnessConfig::new(SimulationConfig::perfect(3, 1, 1));
    let mut harness = Harness::new(5, &config, driver.clone());
    common::step(&mut harness, 3_000);
    let (replicated, persisted) = {
        let driver = driver.borrow();
        assert!(driver.unexpected.is_empty(), "{:?}", driver.unexpected);
        assert_eq!(
            driver.acknowledged, [SENDS_PER_TOPIC; 2],
            "every send acknowledged before the power goes"
        );
        (driver.groups[0].expect("created"), driver.groups[1].expect("created"))
    };
    assert_eq!(messages_held(&harness, persisted).0, vec![SENDS_PER_TOPIC; 3]);
    assert_eq!(messages_held(&harness, replicated).0, vec![SENDS_PER_TOPIC; 3]);

    for replica in 0..3 {
        harness.power_loss_now(replica);
    }
    for replica in 0..3 {
        harness.restart_now(replica, 1 + replica as u64);
    }
    common::step(&mut harness, 3_000);

    let (held, led) = messages_held(&harness, persisted);
    assert!(led, "the persisted partition is led again");
    assert_eq!(
        held,
        vec![SENDS_PER_TOPIC; 3],
        "every acknowledged persisted message survives on every replica"
    );
    let (held, led) = messages_held(&harness, replicated);
    assert!(
        led,
        "the replicated partition is led again, from every replica's durable prefix"
    );
    assert_eq!(held.len(), 3);
    assert!(
        held.iter().all(|&messages| messages < SENDS_PER_TOPIC),
        "the replicated partition published nothing after its creation, so its acknowledged \
         tail is gone from every replica: held {held:?} of {SENDS_PER_TOPIC}"
    );
    assert_eq!(harness.stats().power_losses, 3);
}
