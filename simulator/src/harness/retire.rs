//! Retiring the state checker of a deleted partition group.
//!
//! A run that creates and deletes partitions (the uniform and lifecycle planes make
//! thousands of groups) kept one [`StateChecker`] per group ever seen, so its memory
//! grew with every group it ever made. A deleted group's checker is needed only while
//! some replica may still apply the group's ops: one that has not deleted it yet (it
//! has not applied the delete, or it was down). A node deletes a group by writing a
//! tombstone and never opens that group again, so once every replica's node has
//! tombstoned a group, no op of it can be applied anywhere: its checker is retired,
//! keeping only its counts and its id. An op of a retired group applied after all
//! fails the run ("retired group applied").
//!
//! A down replica's tombstones are read when it is up; the ones seen before it went
//! down stay seen (they are on its disk).

use std::collections::{BTreeMap, BTreeSet};

use cluster::node::METADATA_GROUP;

use super::Harness;
use super::state_checker::StateChecker;

/// What retired checkers leave behind.
#[derive(Debug, Default)]
pub struct RetiredCheckers {
    /// Retired groups.
    pub groups: BTreeSet<u64>,
    /// The commits their chains held.
    pub commits: u64,
    /// The ops they compared.
    pub ops_compared: u64,
    /// Per group not yet retired, the replicas seen holding its tombstone, a bit each.
    tombstoned: BTreeMap<u64, u64>,
}

impl Harness {
    /// Retire the checker of every partition group that every replica has tombstoned.
    /// Run at every full check (a walk of every group), so it costs a lookup per
    /// checker and replica every `FULL_CHECK_INTERVAL_TICKS`.
    pub(super) fn retire_deleted_groups(&mut self) {
        let everyone = (1u64 << self.slots.len()) - 1;
        for (index, slot) in self.slots.iter().enumerate() {
            let Some(node) = &slot.node else { continue };
            // A group's failover record is kept even if it never committed (and so has
            // no checker): it goes with the rest once the group is tombstoned everywhere.
            let failover_only = self
                .failover
                .groups()
                .filter(|group| !self.checkers.contains_key(group));
            for group in self
                .checkers
                .keys()
                .copied()
                .chain(failover_only)
                .filter(|&group| group != METADATA_GROUP)
            {
                // Covered by the tombstones and hosted by no shard: the tombstones may
                // cover a dead group before the shard hosting it has closed it.
                let shards = node.shards();
                if shards.iter().any(|shard| shard.borrow().group_deleted(group))
                    && shards
                        .iter()
                        .all(|shard| !shard.borrow().partitions().contains_key(&group))
                {
                    *self.retired_checkers.tombstoned.entry(group).or_insert(0) |= 1 << index;
                }
            }
        }
        let done: Vec<u64> = self
            .retired_checkers
            .tombstoned
            .iter()
            .filter(|&(_, &seen)| seen == everyone)
            .map(|(&group, _)| group)
            .collect();
        for group in done {
            self.retired_checkers.tombstoned.remove(&group);
            self.failover.forget(group);
            if let Some(checker) = self.checkers.remove(&group) {
                self.retired_checkers.commits += checker.commits();
                self.retired_checkers.ops_compared += checker.ops_compared();
                self.retired_checkers.groups.insert(group);
            }
        }
    }
}

/// The checker of a group that is not retired (a new one if it has none yet), or the
/// failure's detail for an op of a retired one.
pub(super) fn checker_of<'a>(
    checkers: &'a mut BTreeMap<u64, StateChecker>,
    retired: &BTreeSet<u64>,
    group: u64,
    new: impl FnOnce() -> StateChecker,
) -> Result<&'a mut StateChecker, String> {
    if retired.contains(&group) {
        return Err(format!(
            "group {group:#x} applied an op after every replica had tombstoned it (a node never reopens a group it \
             deleted)"
        ));
    }
    Ok(checkers.entry(group).or_insert_with(new))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_op_of_a_retired_group_is_refused_and_any_other_group_gets_a_checker() {
        let mut checkers = BTreeMap::new();
        let retired = BTreeSet::from([7]);
        let error = checker_of(&mut checkers, &retired, 7, || StateChecker::new(1)).expect_err("retired");
        assert!(error.contains("group 0x7") && error.contains("tombstoned"), "{error}");
        assert!(checkers.is_empty(), "no checker is made for a retired group");
        checker_of(&mut checkers, &retired, 8, || StateChecker::new(1)).expect("a live group");
        assert!(checkers.contains_key(&8));
    }
}
