//! A node's disk belongs to one cluster and one replica: booting on another's refuses,
//! naming both, and never reformats.

use cluster::node::{DurableStores, NodeIdentity, StoreProvider};
use cluster::storage::superblock::cluster_id;
use simulator::storage::{CrashKind, SimStorage};

fn identity(cluster: &str, replica: u8) -> NodeIdentity {
    NodeIdentity {
        cluster: cluster_id(cluster),
        replica,
        replica_count: 3,
    }
}

#[test]
fn a_node_started_on_another_clusters_disk_refuses_with_a_clear_error() {
    let disk = SimStorage::default();
    let stores = DurableStores::open(disk.clone(), identity("alpha", 1)).expect("first boot stamps the disk");
    stores.open(0).expect("the metadata group's store opens");
    disk.crash(CrashKind::PowerLoss);

    let error = DurableStores::open(disk.clone(), identity("beta", 1)).expect_err("another cluster's disk");
    let message = error.to_string();
    assert!(message.contains("another cluster"), "{message}");
    assert!(
        message.contains(&format!("{:#x}", cluster_id("alpha")))
            || message.contains(&format!("{:x}", cluster_id("alpha"))),
        "names the cluster on disk: {message}"
    );

    let error = DurableStores::open(disk.clone(), identity("alpha", 2)).expect_err("another replica's disk");
    assert!(error.to_string().contains("replica"), "{error}");

    // Neither refusal touched the disk: its own node still boots.
    DurableStores::open(disk, identity("alpha", 1)).expect("the right node boots after the refusals");
}
