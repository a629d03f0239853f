//! Replica-level tests that need no network: boot, restart, durable state.

use super::*;
use crate::wire::Header;

/// Counts applied ops; the digest is the count.
struct Counter(u64);

impl StateMachine for Counter {
    fn apply(&mut self, _header: &Header, _body: &[u8]) -> Vec<u8> {
        self.0 += 1;
        self.0.to_le_bytes().to_vec()
    }

    fn digest(&self) -> u128 {
        u128::from(self.0)
    }
}

fn config(replica: u8) -> ReplicaConfig {
    ReplicaConfig {
        cluster: 7,
        group: 0,
        replica,
        replicas: 3,
        entropy_seed: 11,
        initial_view: 0,
    }
}

#[test]
fn a_fresh_replica_writes_its_superblock_so_a_restart_is_recognised() {
    // Found by the heavy sweep: a replica that crashed in view 0 had never written a
    // superblock, so its restart looked like a fresh boot and it led view 0 again on a
    // journal it had not verified.
    let store = MemoryStore::new();
    let fresh = Replica::open(config(0), Counter(0), store.clone(), 0);
    assert_eq!(fresh.status(), Status::Normal);
    assert_eq!(
        store.superblock(),
        Some(Superblock::default()),
        "genesis superblock written at boot"
    );
    drop(fresh);
    let restarted = Replica::open(config(0), Counter(0), store, 1);
    assert_eq!(restarted.status(), Status::Recovering);
}

#[test]
fn a_replica_whose_genesis_superblock_write_fails_still_counts_it() {
    let store = MemoryStore::new();
    store.set_fail_superblock_writes(true);
    let replica = Replica::open(config(1), Counter(0), store.clone(), 0);
    assert_eq!(replica.stats().superblock_write_failures, 1);
    assert_eq!(store.superblock(), None);
}

#[test]
fn the_durable_commit_point_is_restored_on_restart() {
    let mut store = MemoryStore::new();
    store
        .write_superblock(Superblock {
            view: 4,
            log_view: 4,
            commit_max: 17,
        })
        .expect("memory store");
    let replica = Replica::open(config(2), Counter(0), store, 1);
    assert_eq!((replica.view(), replica.log_view(), replica.commit_max()), (4, 4, 17));
    assert_eq!(
        replica.commit_min(),
        0,
        "nothing is applied until the replica adopts a view"
    );
}
