//! The partition replicas a shard hosts, by group id: a vector kept sorted by group.
//!
//! Why not a `BTreeMap`: a shard visits every group it hosts at every tick (and the
//! simulator's per-tick checks walk them again), while groups come and go only when the
//! metadata's partition set changes. The map paid its node navigation on every step of
//! those walks, about 4% of a partition-plane run's instructions. A sorted vector walks
//! as a slice and finds a group by binary search, as fast as the map for the handful of
//! groups a shard holds.
//!
//! What it keeps from the map: iteration is ascending by group id, so every walk visits
//! groups in the same order as before and a run's schedule does not move. Inserting or
//! removing shifts the entries above it, which is cheap at the sizes a shard hosts and
//! happens only when a group opens or closes.

use std::ops::Index;

/// Values by group id, ascending.
#[derive(Debug)]
pub struct GroupTable<V> {
    /// Strictly ascending by group id.
    entries: Vec<(u64, V)>,
}

impl<V> Default for GroupTable<V> {
    fn default() -> Self {
        Self { entries: Vec::new() }
    }
}

impl<V> GroupTable<V> {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Groups held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no group is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn position(&self, group: u64) -> Result<usize, usize> {
        self.entries.binary_search_by_key(&group, |(key, _)| *key)
    }

    /// The value of `group`, if held.
    pub fn get(&self, group: &u64) -> Option<&V> {
        self.position(*group).ok().map(|at| &self.entries[at].1)
    }

    /// The value of `group`, if held, to change.
    pub fn get_mut(&mut self, group: &u64) -> Option<&mut V> {
        self.position(*group).ok().map(|at| &mut self.entries[at].1)
    }

    /// Whether `group` is held.
    pub fn contains_key(&self, group: &u64) -> bool {
        self.position(*group).is_ok()
    }

    /// Hold `value` for `group`; returns the value it replaces, if any.
    pub fn insert(&mut self, group: u64, value: V) -> Option<V> {
        match self.position(group) {
            Ok(at) => Some(std::mem::replace(&mut self.entries[at].1, value)),
            Err(at) => {
                self.entries.insert(at, (group, value));
                debug_assert!(self.entries.windows(2).all(|pair| pair[0].0 < pair[1].0));
                None
            }
        }
    }

    /// Forget `group`; returns its value, if it was held.
    pub fn remove(&mut self, group: &u64) -> Option<V> {
        self.position(*group).ok().map(|at| self.entries.remove(at).1)
    }

    /// Every (group, value), ascending by group.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&u64, &V)> + ExactSizeIterator {
        self.entries.iter().map(|(group, value)| (group, value))
    }

    /// Every (group, value), ascending by group, values to change.
    pub fn iter_mut(&mut self) -> impl DoubleEndedIterator<Item = (&u64, &mut V)> + ExactSizeIterator {
        self.entries.iter_mut().map(|(group, value)| (&*group, value))
    }

    /// Every group, ascending.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &u64> + ExactSizeIterator {
        self.entries.iter().map(|(group, _)| group)
    }

    /// Every value, ascending by group.
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &V> + ExactSizeIterator {
        self.entries.iter().map(|(_, value)| value)
    }

    /// Every value, ascending by group, to change.
    pub fn values_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut V> + ExactSizeIterator {
        self.entries.iter_mut().map(|(_, value)| value)
    }
}

impl<V> Index<&u64> for GroupTable<V> {
    type Output = V;

    /// The value of `group`; panics if it is not held (as a map's index does).
    fn index(&self, group: &u64) -> &V {
        self.get(group)
            .unwrap_or_else(|| panic!("group {group:#x} is not in the table"))
    }
}

impl<'a, V> IntoIterator for &'a GroupTable<V> {
    type Item = (&'a u64, &'a V);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (u64, V)>, fn(&'a (u64, V)) -> (&'a u64, &'a V)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter().map(|(group, value)| (group, value))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// Random inserts, replacements and removals, against a `BTreeMap` doing the same:
    /// the table holds the same values and walks them in the same order.
    #[test]
    fn a_table_holds_and_walks_what_a_map_would() {
        let mut table = GroupTable::new();
        let mut map = BTreeMap::new();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for step in 0..5_000u64 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let group = (state >> 33) % 40;
            if (state >> 20).is_multiple_of(3) {
                assert_eq!(
                    table.remove(&group),
                    map.remove(&group),
                    "remove {group} at step {step}"
                );
            } else {
                assert_eq!(
                    table.insert(group, step),
                    map.insert(group, step),
                    "insert {group} at step {step}"
                );
            }
            assert_eq!(table.len(), map.len());
            assert_eq!(table.contains_key(&group), map.contains_key(&group));
            assert_eq!(table.get(&group), map.get(&group));
        }
        assert!(!table.is_empty(), "the walk below compares something");
        assert!(table.iter().eq(map.iter()), "same pairs, same order");
        assert!(table.keys().eq(map.keys()));
        assert!((&table).into_iter().rev().eq(map.iter().rev()));
        for value in table.values_mut() {
            *value += 1;
        }
        for (_, value) in table.iter_mut() {
            *value *= 2;
        }
        assert!(table.values().copied().eq(map.values().map(|value| (value + 1) * 2)));
        let first = *map.keys().next().expect("non-empty");
        assert_eq!(table[&first], (map[&first] + 1) * 2);
    }
}
