//! Sessions across restarts: a node forgets which sender it bound to which session when
//! it restarts, and the client binds again under the same session, so the request it
//! had in flight is resent with its original number and takes effect once.

mod common;

use std::cell::RefCell;
use std::rc::Rc;

use cluster::metadata::{Durability, MetadataOp, MetadataReply, partition_group_id};
use cluster::partition::{Message, PartitionOp, PartitionReply};
use cluster::wire::Header;
use simulator::harness::client::{ClientDriver, ClientRequest};
use simulator::harness::{Harness, HarnessConfig};
use simulator::simulation::SimulationConfig;

/// One-message sends the client makes in all.
const SENDS: u64 = 40;

/// A stream, a topic of one partition, then `SENDS` one-message batches; the transport
/// logs the client in as root first (the driver does not log in itself).
#[derive(Default)]
struct Sends {
    stream: Option<u32>,
    topic_requested: bool,
    group: Option<u64>,
    sent: u64,
    acknowledged: u64,
    unexpected: Vec<String>,
}

impl ClientDriver for Sends {
    fn branch(&mut self, _key: simulator::timeline::BranchKey) {
        // Draws nothing: every request is fixed.
    }

    fn next_request(&mut self, _client: usize) -> Option<ClientRequest> {
        let metadata = |op: MetadataOp| ClientRequest::metadata(&op);
        let Some(stream_id) = self.stream else {
            return Some(metadata(MetadataOp::CreateStream { name: "s".to_owned() }));
        };
        let Some(group) = self.group else {
            if self.topic_requested {
                return None;
            }
            self.topic_requested = true;
            return Some(metadata(MetadataOp::CreateTopic {
                stream_id,
                name: "t".to_owned(),
                partitions: 1,
                durability: Durability::Persisted,
                message_expiry_micros: 0,
            }));
        };
        if self.sent >= SENDS {
            return None;
        }
        self.sent += 1;
        let op = PartitionOp::SendMessages {
            messages: vec![Message {
                id: u128::from(self.sent),
                payload: self.sent.to_le_bytes().to_vec(),
            }],
        };
        Some(ClientRequest::partition(group, &op))
    }

    fn on_reply(&mut self, _client: usize, reply: &Header, body: &[u8]) {
        if reply.group == 0 {
            match MetadataReply::decode(body) {
                Ok(MetadataReply::StreamCreated { stream_id }) => self.stream = Some(stream_id),
                Ok(MetadataReply::TopicCreated { .. }) => self.group = Some(partition_group_id(reply.op, 0)),
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

#[test]
fn after_every_node_restarts_the_client_binds_its_session_again_and_each_send_lands_once() {
    let driver = Rc::new(RefCell::new(Sends::default()));
    let config = HarnessConfig::new(SimulationConfig::perfect(3, 1, 2));
    let mut harness = Harness::new(9, &config, driver.clone());
    // Until about half the sends are in, then crash every node with a send in flight.
    let mut ticks = 0;
    while driver.borrow().acknowledged < SENDS / 2 {
        common::step(&mut harness, 1);
        ticks += 1;
        assert!(ticks < 5_000, "half the sends within 5,000 ticks");
    }
    let before = harness.client_stats()[0];
    assert!(before.outstanding, "a send is in flight when the nodes go down");
    for replica in 0..3 {
        harness.crash_now(replica);
    }
    common::step(&mut harness, 50);
    for replica in 0..3 {
        harness.restart_now(replica, 1 + replica as u64);
    }
    common::step(&mut harness, 6_000);

    let driver = driver.borrow();
    assert!(driver.unexpected.is_empty(), "{:?}", driver.unexpected);
    assert_eq!(driver.acknowledged, SENDS, "every send acknowledged");
    let after = harness.client_stats()[0];
    assert!(after.unbound > before.unbound, "the restarted nodes forgot the binding");
    assert!(after.binds > before.binds, "the client bound its session again");
    assert_eq!(after.binds_refused, 0, "the same session, still known to every node");
    assert_eq!(after.denied, 0);
    // Exactly once: the partition holds one message per acknowledged send, on every
    // replica (the resent in-flight send was not appended twice).
    let group = driver.group.expect("created");
    let held: Vec<u64> = harness
        .partition_replicas(group)
        .iter()
        .map(|(_, replica)| replica.state_machine().state().next_offset())
        .collect();
    assert_eq!(held, vec![SENDS; 3]);
}
