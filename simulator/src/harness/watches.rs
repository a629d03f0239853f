//! What the per-tick checks remember about each group a replica hosts, kept in the
//! order the checks visit the groups.
//!
//! The checks walk every group of every live replica at every tick (see
//! `Harness::check`), and a replica hosts the same groups in the same order from one
//! tick to the next: only a partition's creation or deletion, or a restart, changes
//! them. So the watches sit in a `Vec` in the order of the last walk, and the walk
//! finds each group's watch at its cursor in one comparison. A map keyed by group cost
//! a search and an entry per group per tick, which was most of what the walk cost (a
//! fifth of all instructions on a uniform-plane run, where a replica hosts a dozen
//! groups).
//!
//! What it models: nothing. The order of the watches never reaches the output or the
//! schedule: every use is by group or over all watches alike.

use cluster::vsr::{Replica, ReplicaStore, StateMachine, Status};

/// A state transfer as the checks last saw it.
#[derive(Clone, Copy, Debug)]
pub(super) struct TransferSeen {
    /// The tick it was first seen.
    pub started: u64,
    /// What it had received then (`Replica::transfer_received`).
    pub progress: cluster::vsr::TransferProgress,
    /// The tick that last changed.
    pub moved: u64,
}

/// What the per-tick checks remember about one group on one replica.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct GroupWatch {
    /// Last applied op checked by the state checker, this incarnation.
    pub checked: u64,
    /// Highest view seen (views are durable: they never go back, even across restarts).
    pub view_seen: u64,
    /// (commit_min, tick it last moved) this incarnation, for the stuck check.
    pub progress: (u64, u64),
    /// Hosted at some check this incarnation (one that was, and no longer is, was
    /// closed: its partition was deleted).
    pub hosted: bool,
    /// The checkpoint op whose state was last compared, this incarnation.
    pub checkpoint_seen: u64,
    /// The op of the encoded checkpoint last compared, this incarnation
    /// (`Replica::last_encoded_checkpoint`).
    pub encoded_seen: u64,
    /// The state transfer in progress, this incarnation.
    pub transfer_since: Option<TransferSeen>,
    /// (log view, held head) when this incarnation crashed: the most it may have
    /// acknowledged in that log view (see `Replica::held_head`). Taken at the crash
    /// (what the last check saw, since a crash comes between steps), not every tick.
    pub held: Option<(u64, u64)>,
    /// `held` as the previous incarnation left it, compared at this incarnation's first
    /// check: a log offered as complete in the same log view holds at least as much.
    pub held_before_restart: Option<(u64, u64)>,
    /// Set when the last check found the group quiet: the next ones skip it until its
    /// replica takes an input (see `group_check`). `None`: check it at the next tick.
    pub quiet: Option<Quiet>,
}

/// A group the last check found quiet, and what that check read of its replica.
#[derive(Clone, Copy, Debug)]
pub(super) struct Quiet {
    /// The replica's [`Replica::activity`] then.
    pub activity: u64,
    /// What the checks read then, verified unchanged at the next full check.
    pub seen: GroupSeen,
}

/// Everything the per-tick checks read of a replica, as one value: two readings with
/// no input between them must be equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct GroupSeen {
    view: u64,
    log_view: u64,
    status: Status,
    log_incomplete: bool,
    commit_min: u64,
    commit_max: u64,
    journal_floor: u64,
    /// Entries and frame bytes.
    journal: (usize, u64),
    checkpoint_op: u64,
    transferring: bool,
    frames_misrouted: u64,
}

impl GroupSeen {
    /// What the checks read of `replica` now.
    pub fn of<S: StateMachine, T: ReplicaStore>(replica: &Replica<S, T>) -> Self {
        Self {
            view: replica.view(),
            log_view: replica.log_view(),
            status: replica.status(),
            log_incomplete: replica.log_incomplete(),
            commit_min: replica.commit_min(),
            commit_max: replica.commit_max(),
            journal_floor: replica.journal_floor(),
            journal: replica.journal_size(),
            checkpoint_op: replica.checkpoint_op(),
            transferring: replica.transferring(),
            frames_misrouted: replica.stats().frames_misrouted,
        }
    }
}

impl GroupWatch {
    fn new(tick: u64) -> Self {
        Self {
            progress: (0, tick),
            ..Self::default()
        }
    }
}

/// One replica's watches, by group.
#[derive(Debug, Default)]
pub(super) struct GroupWatches {
    /// At most one per group. During a walk, `entries[..cursor]` are the groups
    /// visited so far; between walks, in the order of the last walk.
    entries: Vec<(u64, GroupWatch)>,
    cursor: usize,
    /// The node's layout when the last walk over every group ended (its incarnation,
    /// and how often its shards opened or closed a group): while it holds, the groups
    /// and their order are the same, and a walk may visit only some of them. `None`
    /// after anything but a walk changed a watch: the next walk visits every group.
    layout: Option<(u64, u64)>,
    /// (group, index in `entries`) of every group the last whole walk visited,
    /// ascending by group.
    by_group: Vec<(u64, usize)>,
    /// Indices in `entries` of the groups the last walk left not quiet (checked again
    /// at the next tick whatever their replica did), ascending.
    unquiet: Vec<usize>,
}

impl GroupWatches {
    /// Every watch.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut GroupWatch> {
        self.layout = None;
        self.entries.iter_mut().map(|(_, watch)| watch)
    }

    /// `group`'s watch, if any.
    pub fn get_mut(&mut self, group: u64) -> Option<&mut GroupWatch> {
        self.layout = None;
        self.entries
            .iter_mut()
            .find(|(held, _)| *held == group)
            .map(|(_, watch)| watch)
    }

    /// Keep the watches `keep` says to.
    pub fn retain(&mut self, mut keep: impl FnMut(u64, &GroupWatch) -> bool) {
        self.layout = None;
        self.entries.retain(|(group, watch)| keep(*group, watch));
        self.cursor = self.cursor.min(self.entries.len());
    }

    /// Start a walk over the groups the replica hosts now.
    pub fn begin_walk(&mut self) {
        self.cursor = 0;
    }

    /// The watch of `group`, the walk's next group (a new one if it has none), marked
    /// hosted. One comparison when the walk visits the groups in the last walk's order.
    ///
    /// Called for every group on every replica at every tick: the common case (the
    /// group at the cursor) is inlined into the walk, the search is not.
    #[inline]
    pub fn visit(&mut self, group: u64, tick: u64) -> &mut GroupWatch {
        let at = self.cursor;
        let index = if self.entries.get(at).is_some_and(|(held, _)| *held == group) {
            self.cursor += 1;
            at
        } else {
            self.place(group, tick)
        };
        let watch = &mut self.entries[index].1;
        watch.hosted = true;
        watch
    }

    /// [`GroupWatches::visit`] off the walk's last order: find `group`'s watch (or make
    /// one) and return its index, moved to the cursor unless already visited.
    #[inline(never)]
    fn place(&mut self, group: u64, tick: u64) -> usize {
        let at = self.cursor;
        match self.entries.iter().position(|(held, _)| *held == group) {
            // Visited already in this walk (a group hosted twice over): the same watch,
            // as a map would give.
            Some(index) if index < at => index,
            Some(index) => {
                self.entries.swap(at, index);
                self.cursor += 1;
                at
            }
            None => {
                self.entries.insert(at, (group, GroupWatch::new(tick)));
                self.cursor += 1;
                at
            }
        }
    }

    /// End a walk over every group of a node with layout `layout` (see
    /// [`GroupWatches::plan_partial_walk`]), or `None` if the node does not say which
    /// groups it touched.
    pub fn end_whole_walk(&mut self, layout: Option<(u64, u64)>) {
        self.layout = layout;
        self.by_group.clear();
        self.by_group.extend(
            self.entries[..self.cursor]
                .iter()
                .enumerate()
                .map(|(index, (group, _))| (*group, index)),
        );
        self.by_group.sort_unstable();
        self.unquiet.clear();
        let unquiet = self.entries[..self.cursor]
            .iter()
            .enumerate()
            .filter(|(_, (_, watch))| watch.quiet.is_none());
        self.unquiet.extend(unquiet.map(|(index, _)| index));
    }

    /// For a node still in `layout`, whose groups `touched` (ascending) alone took an
    /// input or ran a tick since the last walk: the indices (ascending, so in the
    /// order of a whole walk) of the watches to visit, into `plan`: the touched groups
    /// and the ones the last walk left not quiet. Every other group is quiet, and its
    /// replica's activity did not move, so a whole walk would skip it. False if a whole
    /// walk is needed: the layout moved, or a touched group has no watch.
    pub fn plan_partial_walk(&self, layout: (u64, u64), touched: &[u64], plan: &mut Vec<usize>) -> bool {
        plan.clear();
        if self.layout != Some(layout) {
            return false;
        }
        for group in touched {
            let Ok(at) = self.by_group.binary_search_by_key(group, |(held, _)| *held) else {
                return false;
            };
            plan.push(self.by_group[at].1);
        }
        plan.extend_from_slice(&self.unquiet);
        plan.sort_unstable();
        plan.dedup();
        true
    }

    /// The group and watch at `index` of a plan.
    pub fn planned(&mut self, index: usize) -> (u64, &mut GroupWatch) {
        let (group, watch) = &mut self.entries[index];
        (*group, watch)
    }

    /// End a walk that visited only `plan`'s watches: those of them it left not
    /// quiet are the ones to visit at the next tick.
    pub fn end_partial_walk(&mut self, plan: &[usize]) {
        self.unquiet.clear();
        let unquiet = plan.iter().filter(|&&index| self.entries[index].1.quiet.is_none());
        self.unquiet.extend(unquiet);
    }

    /// Groups a whole walk visits while the layout holds.
    pub fn hosted(&self) -> usize {
        self.by_group.len()
    }

    /// Test only: alter what the watch of the first quiet group remembers (see
    /// `Harness::misremember_a_quiet_group_for_test`).
    pub fn misremember_a_quiet_group(&mut self) -> Option<u64> {
        self.layout = None;
        let (group, watch) = self.entries.iter_mut().find(|(_, watch)| watch.quiet.is_some())?;
        let quiet = watch.quiet.as_mut()?;
        quiet.seen.view += 1;
        Some(*group)
    }

    /// Groups the walk in progress (or the last one) visited.
    pub fn visited(&self) -> usize {
        self.cursor
    }

    /// End the walk: a group hosted at an earlier check and not visited in this one was
    /// closed here (its partition deleted), so what was seen of it is forgotten, since
    /// its store went with it. Watches never hosted in this incarnation stay (they carry
    /// what the last incarnation held, for its first check).
    pub fn end_walk(&mut self) {
        let visited = self.cursor;
        if self.entries[visited..].iter().any(|(_, watch)| watch.hosted) {
            let mut index = 0;
            self.entries.retain(|(_, watch)| {
                index += 1;
                index <= visited || !watch.hosted
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk(watches: &mut GroupWatches, groups: &[u64], tick: u64) {
        watches.begin_walk();
        for &group in groups {
            watches.visit(group, tick).checked = tick;
        }
        watches.end_walk();
    }

    fn groups(watches: &GroupWatches) -> Vec<u64> {
        let mut groups: Vec<u64> = watches.entries.iter().map(|(group, _)| *group).collect();
        groups.sort_unstable();
        groups
    }

    #[test]
    fn a_walk_keeps_one_watch_per_group_and_what_it_remembers() {
        let mut watches = GroupWatches::default();
        walk(&mut watches, &[0, 7, 3], 1);
        walk(&mut watches, &[0, 7, 3], 2);
        assert_eq!(groups(&watches), [0, 3, 7]);
        assert!(
            watches
                .values_mut()
                .all(|watch| watch.checked == 2 && watch.progress == (0, 1))
        );
        // Another order finds the same watches, and a new group gets a fresh one.
        walk(&mut watches, &[3, 9, 0, 7], 3);
        assert_eq!(groups(&watches), [0, 3, 7, 9]);
        assert_eq!(watches.get_mut(9).map(|watch| watch.progress), Some((0, 3)));
        assert_eq!(watches.get_mut(7).map(|watch| watch.progress), Some((0, 1)));
    }

    #[test]
    fn a_hosted_group_the_walk_no_longer_visits_is_forgotten_and_an_unhosted_one_stays() {
        let mut watches = GroupWatches::default();
        walk(&mut watches, &[0, 5, 6], 1);
        // A restart: every watch is kept, none hosted yet by the new incarnation.
        for watch in watches.values_mut() {
            watch.hosted = false;
            watch.held_before_restart = Some((1, 10));
        }
        walk(&mut watches, &[0, 6], 2);
        assert_eq!(groups(&watches), [0, 5, 6], "5 was never hosted by this incarnation");
        walk(&mut watches, &[6], 3);
        assert_eq!(groups(&watches), [5, 6], "0 was hosted at tick 2 and is gone now");
        assert!(watches.get_mut(0).is_none());
    }

    #[test]
    fn a_walk_counts_the_groups_it_visited_once_each() {
        let mut watches = GroupWatches::default();
        walk(&mut watches, &[0, 2, 4], 1);
        assert_eq!(watches.visited(), 3);
        walk(&mut watches, &[4, 6], 2);
        assert_eq!(watches.visited(), 2, "this walk's groups, not every watch held");
        assert_eq!(groups(&watches), [4, 6]);
    }

    #[test]
    fn a_group_visited_twice_in_one_walk_gets_the_same_watch() {
        let mut watches = GroupWatches::default();
        watches.begin_walk();
        watches.visit(4, 1).checked = 11;
        watches.visit(8, 1);
        assert_eq!(watches.visit(4, 1).checked, 11);
        watches.end_walk();
        assert_eq!(groups(&watches), [4, 8]);
    }
}
