//! The set of a node's deleted partition groups, kept as ranges so that it stays as
//! small as the set of live groups however many groups were ever deleted.
//!
//! Models: which group ids a node must never open again. A group id is
//! `(creating op << 10) | partition id` (`metadata::group_id`), so the ids of the
//! groups a node deleted are sparse: two deletes next to each other in creation order
//! are far apart as numbers. Kept one id at a time, the set grew by one entry per
//! delete for the node's whole life (a long simulated run on the uniform plane held
//! 150,000 of them per node, several megabytes).
//!
//! The set may also hold ids that no group will ever have. Once the metadata op that
//! could have created an id is committed and applied, the id names a live partition
//! (listed in the node's directory), a deleted one, or none, for good: op numbers are
//! never reused. So a gap between two deleted ids can be filled whenever every id in
//! it is settled ([`Settled::settled_through`]) and none of them is live
//! ([`Settled::any_live_in`]). Filled that way, the ranges number at most one more
//! than the live groups at the time they were last merged.
//!
//! Does not model: durability (`tombstone_log` writes what this set holds), or which
//! ids exist at all (the directory says which are live).

use std::collections::BTreeMap;

/// What a node knows for certain about which partition group ids can still be live.
pub trait Settled {
    /// Every id at or below this one is settled: it names a live group or no group, for
    /// good (its creating op is committed and applied). 0 settles nothing.
    fn settled_through(&self) -> u64;
    /// Whether some live group's id lies in `low..=high`.
    fn any_live_in(&self, low: u64, high: u64) -> bool;
}

/// Nothing is known to be settled: gaps are never filled (tests, sweeps and any
/// caller without a directory).
#[derive(Clone, Copy, Debug, Default)]
pub struct NothingSettled;

impl Settled for NothingSettled {
    fn settled_through(&self) -> u64 {
        0
    }

    fn any_live_in(&self, _low: u64, _high: u64) -> bool {
        true
    }
}

/// Deleted group ids (and settled ids that name no group), as disjoint ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TombstoneSet {
    /// First id of each range to its last (inclusive). Ranges neither overlap nor touch:
    /// two ranges with no id between them are one.
    ranges: BTreeMap<u64, u64>,
}

impl TombstoneSet {
    /// No tombstones.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `group` must never be opened again.
    pub fn contains(&self, group: u64) -> bool {
        self.ranges
            .range(..=group)
            .next_back()
            .is_some_and(|(_, &last)| group <= last)
    }

    /// Add `group`, and fill the gaps on either side of it that `settled` allows.
    /// Returns whether `group` was new.
    pub fn insert(&mut self, group: u64, settled: &dyn Settled) -> bool {
        if self.contains(group) {
            return false;
        }
        let (mut first, mut last) = (group, group);
        if let Some((&before_first, &before_last)) = self.ranges.range(..group).next_back() {
            debug_assert!(before_last < group);
            if gap_fillable(before_last, group, settled) {
                self.ranges.remove(&before_first);
                first = before_first;
            }
        }
        if let Some((&after_first, &after_last)) = self.ranges.range(group..).next() {
            debug_assert!(after_first > group);
            if gap_fillable(group, after_first, settled) {
                self.ranges.remove(&after_first);
                last = after_last;
            }
        }
        self.ranges.insert(first, last);
        self.debug_check();
        true
    }

    /// Add the ids `first..=last` (read back from disk), merging with ranges they
    /// overlap or touch.
    pub fn insert_range(&mut self, first: u64, last: u64) {
        assert!(first <= last, "a range runs upward: {first:#x}..={last:#x}");
        let (mut first, mut last) = (first, last);
        // Every range that overlaps or touches `first..=last` starts at or before
        // `last + 1` and ends at or after `first - 1`.
        let touching: Vec<(u64, u64)> = self
            .ranges
            .range(..=last.saturating_add(1))
            .rev()
            .take_while(|&(_, &end)| end.saturating_add(1) >= first)
            .map(|(&start, &end)| (start, end))
            .collect();
        for (start, end) in touching {
            self.ranges.remove(&start);
            first = first.min(start);
            last = last.max(end);
        }
        self.ranges.insert(first, last);
        self.debug_check();
    }

    /// Fill every gap between two ranges that `settled` allows (a gap kept open by a
    /// group that was live then may have been emptied by deletes this node never saw,
    /// such as those made while it was down).
    pub fn fill_gaps(&mut self, settled: &dyn Settled) {
        let mut merged = BTreeMap::new();
        let mut current: Option<(u64, u64)> = None;
        for (&first, &last) in &self.ranges {
            current = match current {
                Some((open_first, open_last)) if gap_fillable(open_last, first, settled) => Some((open_first, last)),
                Some(done) => {
                    merged.insert(done.0, done.1);
                    Some((first, last))
                }
                None => Some((first, last)),
            };
        }
        if let Some((first, last)) = current {
            merged.insert(first, last);
        }
        self.ranges = merged;
        self.debug_check();
    }

    /// The ranges, ascending: `(first, last)`, both included.
    pub fn ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().map(|(&first, &last)| (first, last))
    }

    /// How many ranges the set is.
    pub fn range_count(&self) -> usize {
        self.ranges.len()
    }

    /// Whether nothing was deleted.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    fn debug_check(&self) {
        if cfg!(debug_assertions) {
            let mut previous_last: Option<u64> = None;
            for (&first, &last) in &self.ranges {
                assert!(first <= last, "range {first:#x}..={last:#x} runs backward");
                if let Some(previous) = previous_last {
                    assert!(
                        previous < first && first - previous > 1,
                        "ranges ending at {previous:#x} and starting at {first:#x} overlap or touch"
                    );
                }
                previous_last = Some(last);
            }
        }
    }
}

/// Whether the ids strictly between `below` and `above` may all be tombstoned: none,
/// or all settled and none live.
fn gap_fillable(below: u64, above: u64, settled: &dyn Settled) -> bool {
    debug_assert!(below < above);
    if above - below == 1 {
        return true;
    }
    let (low, high) = (below + 1, above - 1);
    high <= settled.settled_through() && !settled.any_live_in(low, high)
}

/// Tests' stand-in for a directory: settled through `through`, with the live groups
/// `live`.
#[cfg(test)]
pub(crate) struct Known {
    pub through: u64,
    pub live: Vec<u64>,
}

#[cfg(test)]
impl Settled for Known {
    fn settled_through(&self) -> u64 {
        self.through
    }

    fn any_live_in(&self, low: u64, high: u64) -> bool {
        self.live.iter().any(|&group| (low..=high).contains(&group))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_settled_ids_only_neighbours_merge() {
        let mut set = TombstoneSet::new();
        for group in [10, 12, 11, 20] {
            assert!(set.insert(group, &NothingSettled));
        }
        assert!(!set.insert(11, &NothingSettled), "already there");
        assert_eq!(set.ranges().collect::<Vec<_>>(), vec![(10, 12), (20, 20)]);
        assert!(set.contains(10) && set.contains(11) && set.contains(12) && set.contains(20));
        assert!(!set.contains(9) && !set.contains(13) && !set.contains(19) && !set.contains(21));
    }

    #[test]
    fn a_settled_gap_with_no_live_group_is_filled_and_one_with_a_live_group_is_not() {
        let known = Known {
            through: 100,
            live: vec![30],
        };
        let mut set = TombstoneSet::new();
        set.insert(10, &known);
        set.insert(20, &known);
        assert_eq!(
            set.ranges().collect::<Vec<_>>(),
            vec![(10, 20)],
            "11..=19 is settled and dead"
        );
        set.insert(40, &known);
        assert_eq!(
            set.ranges().collect::<Vec<_>>(),
            vec![(10, 20), (40, 40)],
            "group 30 is live: its gap stays open"
        );
        assert!(!set.contains(30));
        set.insert(200, &known);
        assert_eq!(
            set.ranges().collect::<Vec<_>>(),
            vec![(10, 20), (40, 40), (200, 200)],
            "41..=199 reaches past the settled ids: a group may still be made there"
        );
    }

    #[test]
    fn filling_gaps_later_merges_what_a_live_group_kept_apart() {
        let mut set = TombstoneSet::new();
        let then = Known {
            through: 100,
            live: vec![30],
        };
        for group in [10, 40, 50] {
            set.insert(group, &then);
        }
        assert_eq!(set.ranges().collect::<Vec<_>>(), vec![(10, 10), (40, 50)]);
        // Group 30 was deleted while this node was down: it never removed it itself.
        let now = Known {
            through: 100,
            live: vec![],
        };
        set.fill_gaps(&now);
        assert_eq!(set.ranges().collect::<Vec<_>>(), vec![(10, 50)]);
        assert!(set.contains(30));
    }

    #[test]
    fn ranges_read_back_merge_with_those_they_touch_or_overlap() {
        let mut set = TombstoneSet::new();
        set.insert_range(10, 20);
        set.insert_range(30, 40);
        set.insert_range(21, 25);
        assert_eq!(set.ranges().collect::<Vec<_>>(), vec![(10, 25), (30, 40)]);
        set.insert_range(5, 35);
        assert_eq!(set.ranges().collect::<Vec<_>>(), vec![(5, 40)]);
        set.insert_range(u64::MAX - 1, u64::MAX);
        set.insert_range(0, 0);
        assert_eq!(
            set.ranges().collect::<Vec<_>>(),
            vec![(0, 0), (5, 40), (u64::MAX - 1, u64::MAX)]
        );
        assert!(set.contains(u64::MAX) && set.contains(0) && !set.contains(1));
    }

    #[test]
    fn the_ranges_stay_as_few_as_the_live_groups_however_many_are_deleted() {
        // Groups created in order and deleted a little later, a few live at a time, as
        // the uniform plane does: ids are (op << 10) | partition.
        let mut set = TombstoneSet::new();
        let mut live: Vec<u64> = Vec::new();
        for op in 1..10_000u64 {
            live.push((op << 10) | (op % 3));
            if live.len() > 5 {
                let group = live.remove((op % 5) as usize);
                let known = Known {
                    through: (op << 10) | 1023,
                    live: live.clone(),
                };
                set.insert(group, &known);
            }
        }
        assert!(set.range_count() <= live.len() + 1, "{} ranges", set.range_count());
        assert!(
            live.iter().all(|&group| !set.contains(group)),
            "no live group is tombstoned"
        );
    }
}
