//! `SimSeeds`: one child seed per source of randomness, derived from the run's seed.
//!
//! Streams are separate so that adding a draw in one never shifts another: with a
//! shared stream, enabling crash injection would change the network trace and a bug
//! found at one seed would vanish once an unrelated draw was added.
//!
//! The children are drawn from one parent generator in field order. That makes the
//! field order part of the seed contract: a new stream goes at the END of the struct
//! (and of `derive`), never in between, or every existing seed replays differently.

use crate::rng::SimRng;

/// The child seeds of one run. Field order is the draw order (append only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimSeeds {
    /// The run's seed, as given on the command line.
    pub root: u64,
    /// Packet delays, loss, duplication, corruption, clogs and partitions.
    pub network: u64,
    /// What the workload's clients ask for and when.
    pub workload: u64,
    /// Which ready task the executor polls next.
    pub executor: u64,
    /// Which shard of a replica an arriving packet lands on.
    pub entry_shard: u64,
    /// When replicas crash and restart, and each restart's incarnation.
    pub crash: u64,
    /// The per-seed parameters of the `swarm` fault profile.
    pub swarm: u64,
    /// Each replica's realtime clock offset and drift.
    pub clock: u64,
    /// Each replica's disk: writeback order, tears, and whether a crash cuts the power.
    pub storage: u64,
}

impl SimSeeds {
    /// Derive every child seed from `root`. Pure: the same root always gives the same
    /// children.
    pub fn derive(root: u64) -> Self {
        let mut parent = SimRng::new(root);
        // Struct-literal field initialisers run in the order written: keep it the
        // declaration order.
        Self {
            root,
            network: parent.next_u64(),
            workload: parent.next_u64(),
            executor: parent.next_u64(),
            entry_shard: parent.next_u64(),
            crash: parent.next_u64(),
            swarm: parent.next_u64(),
            clock: parent.next_u64(),
            storage: parent.next_u64(),
        }
    }

    /// The child seeds, in draw order, with their names.
    pub fn children(&self) -> [(&'static str, u64); 8] {
        [
            ("network", self.network),
            ("workload", self.workload),
            ("executor", self.executor),
            ("entry_shard", self.entry_shard),
            ("crash", self.crash),
            ("swarm", self.swarm),
            ("clock", self.clock),
            ("storage", self.storage),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derivation_is_pure() {
        assert_eq!(SimSeeds::derive(211), SimSeeds::derive(211));
        assert_eq!(SimSeeds::derive(0), SimSeeds::derive(0));
    }

    #[test]
    fn every_child_stream_differs_from_every_other_and_from_the_root() {
        for root in [0, 1, 144, 211, u64::MAX] {
            let seeds = SimSeeds::derive(root);
            let children = seeds.children();
            for (i, (name_a, a)) in children.iter().enumerate() {
                assert_ne!(*a, root, "{name_a} equals the root seed {root}");
                for (name_b, b) in &children[i + 1..] {
                    assert_ne!(a, b, "{name_a} and {name_b} share a seed for root {root}");
                }
            }
        }
    }

    #[test]
    fn different_roots_give_different_children() {
        let a = SimSeeds::derive(1);
        let b = SimSeeds::derive(2);
        for ((name, x), (_, y)) in a.children().iter().zip(b.children().iter()) {
            assert_ne!(x, y, "{name} did not change with the root");
        }
    }

    #[test]
    fn children_are_drawn_in_field_order_from_the_parent_stream() {
        // The contract: child k is the k-th draw of SimRng::new(root). Adding a stream
        // at the end must leave every earlier child untouched.
        let seeds = SimSeeds::derive(77);
        let mut parent = SimRng::new(77);
        for (name, child) in seeds.children() {
            assert_eq!(child, parent.next_u64(), "{name} out of order");
        }
    }

    #[test]
    fn derivation_is_locked_for_a_known_seed() {
        // Locked so that an accidental reorder or a generator change fails loudly.
        // Re-lock only with a changelog line in seeds/README.md: every stored seed
        // replays differently afterwards.
        let seeds = SimSeeds::derive(0xDEAD_BEEF);
        let mut parent = SimRng::new(0xDEAD_BEEF);
        assert_eq!(seeds.network, parent.next_u64());
        assert_eq!(format!("{:#018x}", seeds.network), LOCKED_NETWORK_CHILD_OF_DEADBEEF);
    }

    /// Network child of root 0xDEAD_BEEF on xoshiro256++ seeded via SplitMix64.
    /// Locks: 2026-11-29 first lock (issue #2).
    const LOCKED_NETWORK_CHILD_OF_DEADBEEF: &str = "0x0c520eb8fea98ede";
}
