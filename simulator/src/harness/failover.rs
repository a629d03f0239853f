//! Failover timing: how long a group goes without a primary after its primary's process
//! ends, and how many view changes start while the old primary was healthy.
//!
//! Models, per group:
//! - a *primary loss*: the process of the replica that was the group's primary, Normal
//!   in its view, ends (a crash, a power loss, a fail-stop) while a quorum of the other
//!   replicas is up. It ends when some replica is the Normal primary of a later view
//!   (which needs a quorum of the replicas to have joined that view: from then on the
//!   group can commit). Its failover time is the ticks in between. A second loss
//!   before the first one ends extends it. A loss is dropped, not timed, when fewer than
//!   a quorum of the replicas stay up (an outage: recovery, not failover) or when the
//!   group is deleted; one still open when the run ends is counted as unresolved.
//! - a *spurious view change*: a view above every view seen so far for the group, first
//!   seen while no loss of the group is open, when the highest view seen before was
//!   established (some replica was Normal in it) and its primary was healthy: up, and
//!   not cut off by a partition from a quorum of the replicas (counting itself), and
//!   its process did not end while it led that view (an outage ends every primary
//!   without opening a loss; the view changes after it are recovery, not spurious). The
//!   views a view change escalates through count once, with the first. A clogged link
//!   or a slow disk does not make a primary unhealthy, so view changes they cause count
//!   as spurious: that is the point.
//!
//! Does not model: how long a group waits for its first primary after creation, or
//! anything about groups whose replicas all went down together.

use std::collections::BTreeMap;

use cluster::vsr::Status;

/// A loss of a group's primary not yet over.
#[derive(Clone, Copy, Debug)]
struct Loss {
    /// The view whose primary's process ended.
    view: u64,
    /// The tick it ended.
    since: u64,
}

/// The views seen of one group.
#[derive(Clone, Copy, Debug)]
struct Views {
    /// The highest view any replica was seen in.
    highest: u64,
    /// The highest view some replica was seen Normal in.
    established: u64,
}

/// A deposed primary seen: a replica still the Normal primary of a view its group had
/// replaced (some replica was Normal in a later view), which has not heard yet. It can
/// no longer commit, but clients that still think it leads keep sending to it: the
/// window where a request races the round that replaced it.
#[derive(Clone, Copy, Debug)]
struct Deposed {
    /// The replaced view it still leads.
    view: u64,
    /// The tick it was first seen deposed.
    since: u64,
    /// Its (updates, queries) taken up as primary when last seen (see `ReplicaStats`).
    taken: (u64, u64),
}

/// The failover figures of a run, gathered as it goes.
#[derive(Debug, Default)]
pub struct Failover {
    /// Per group, its open loss.
    open: BTreeMap<u64, Loss>,
    /// Per group, the highest view any replica was seen in and the highest some replica
    /// was Normal in (dropped once every replica tombstoned the group, see `retire.rs`).
    views: BTreeMap<u64, Views>,
    /// The failover time of each loss that ended, in ticks, in the order they ended.
    /// One per primary loss: bounded by the run's crashes times the groups a node leads.
    ended_ticks: Vec<u64>,
    /// Losses dropped untimed (quorum down, group deleted).
    dropped: u64,
    /// View changes started while the old primary was healthy.
    spurious: u64,
    /// Replicas healthy this tick, a bit each (see the module docs), set once per tick
    /// before the groups are checked.
    healthy: u64,
    /// Per group, the latest view whose Normal primary's process ended (with or
    /// without a quorum up): a view change past it is never spurious. Dropped when the
    /// group's view moves past it, or with the group.
    unled: BTreeMap<u64, u64>,
    /// Groups whose highest view seen is above the highest some replica was Normal in:
    /// groups in a view change now (a watermark, `wm.view_change_groups`).
    unsettled: u64,
    /// Per group, the latest deposed primary seen (replaced when another is; dropped
    /// with the group): the race marks and `wm.deposed_primary_ticks`.
    deposed: BTreeMap<u64, Deposed>,
}

/// A run's failover figures, as printed and reported.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FailoverFigures {
    /// Failover times of the losses that ended, ticks, ascending.
    pub ended_ticks: Vec<u64>,
    /// Losses still open at the end of the run.
    pub unresolved: u64,
    /// Losses dropped untimed (fewer than a quorum stayed up, or the group was deleted).
    pub dropped: u64,
    /// View changes started while the old primary was healthy.
    pub spurious: u64,
}

impl FailoverFigures {
    /// The `q` quantile (0..=1) of the ended losses' failover times, nearest rank.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        quantile(&self.ended_ticks, q)
    }

    /// The `failover:` output line's text after its label.
    pub fn line(&self) -> String {
        let show = ticks_or_dash;
        format!(
            "primary_losses={} ended={} p50_ticks={} p99_ticks={} max_ticks={} unresolved={} dropped={} \
             spurious_view_changes={}",
            self.ended_ticks.len() as u64 + self.unresolved + self.dropped,
            self.ended_ticks.len(),
            show(self.quantile(0.5)),
            show(self.quantile(0.99)),
            show(self.ended_ticks.last().copied()),
            self.unresolved,
            self.dropped,
            self.spurious
        )
    }
}

/// A tick figure as printed: `-` when there is none (no loss ended).
pub fn ticks_or_dash(ticks: Option<u64>) -> String {
    ticks.map_or_else(|| "-".to_owned(), |ticks| ticks.to_string())
}

/// The nearest-rank `q` quantile of `sorted` (ascending), `None` when it is empty.
pub fn quantile(sorted: &[u64], q: f64) -> Option<u64> {
    debug_assert!(sorted.is_sorted());
    debug_assert!((0.0..=1.0).contains(&q));
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

impl Failover {
    /// The replicas healthy this tick, a bit each.
    pub fn set_healthy(&mut self, healthy: u64) {
        self.healthy = healthy;
    }

    /// The process of replica `index` ended at `tick`; `primaries` are the groups it was
    /// the Normal primary of, each with its view; `up_after` counts the replicas still
    /// up and `quorum` is a group's quorum.
    pub fn process_ended(
        &mut self,
        tick: u64,
        primaries: impl IntoIterator<Item = (u64, u64)>,
        up_after: usize,
        quorum: usize,
    ) {
        let primaries: Vec<(u64, u64)> = primaries.into_iter().collect();
        for &(group, view) in &primaries {
            let unled = self.unled.entry(group).or_insert(view);
            *unled = (*unled).max(view);
        }
        if up_after < quorum {
            // Recovery now waits for a restart: not a failover.
            self.dropped += self.open.len() as u64;
            self.open.clear();
            return;
        }
        for (group, view) in primaries {
            self.open.entry(group).or_insert(Loss { view, since: tick });
        }
    }

    /// Replica `index` of `group` is seen at `tick` in `view` with `status`, the primary
    /// of it if `primary`, having taken up `taken` (updates, queries) as a Normal
    /// primary so far; `primary_of` names the primary of a view.
    pub fn observe(
        &mut self,
        tick: u64,
        group: u64,
        (view, status, primary): (u64, Status, bool),
        taken: (u64, u64),
        primary_of: impl Fn(u64) -> u8,
    ) {
        if let Some(loss) = self.open.get(&group)
            && primary
            && status == Status::Normal
            && view > loss.view
        {
            self.ended_ticks.push(tick - loss.since);
            self.open.remove(&group);
        }
        let views = self.views.entry(group).or_insert(Views {
            highest: view,
            established: view,
        });
        // Only a new highest view or a newly established one can settle or unsettle the
        // group: the common call (nothing new) pays one compare of each.
        let was_unsettled = views.highest > views.established;
        let mut moved = false;
        if view > views.highest {
            let before = views.highest;
            views.highest = view;
            moved = true;
            cluster::watermark!(View, view);
            let primary_ended = self.unled.remove(&group).is_some_and(|unled| unled >= before);
            if before == views.established
                && !self.open.contains_key(&group)
                && !primary_ended
                && self.healthy & (1 << primary_of(before)) != 0
            {
                self.spurious += 1;
            }
        }
        if status == Status::Normal && view > views.established {
            views.established = view;
            moved = true;
        }
        if moved {
            let unsettled = views.highest > views.established;
            if unsettled && !was_unsettled {
                self.unsettled += 1;
                cluster::watermark!(ViewChangeGroups, self.unsettled);
            } else if !unsettled && was_unsettled {
                self.unsettled -= 1;
            }
        }
        if primary && status == Status::Normal && view < views.established {
            self.observe_deposed(tick, group, view, taken);
        }
    }

    /// The primary of `view` of `group`, which the group has replaced, is still Normal
    /// in it at `tick` with `taken` (updates, queries) taken up so far.
    fn observe_deposed(&mut self, tick: u64, group: u64, view: u64, taken: (u64, u64)) {
        cluster::cover!(DeposedPrimaryNormal);
        let seen = self.deposed.entry(group).or_insert(Deposed {
            view,
            since: tick,
            taken,
        });
        if seen.view != view {
            *seen = Deposed {
                view,
                since: tick,
                taken,
            };
        }
        // Counters only grow while the replica lives; a restart (lower counts) is a
        // new baseline, never a reach.
        if taken.0 > seen.taken.0 {
            cluster::cover!(UpdateAtDeposedPrimary);
        }
        if taken.1 > seen.taken.1 {
            cluster::cover!(QueryAtDeposedPrimary);
        }
        seen.taken = taken;
        cluster::watermark!(DeposedPrimaryTicks, tick - seen.since);
    }

    /// The groups it keeps a record of.
    pub fn groups(&self) -> impl Iterator<Item = u64> + '_ {
        self.views.keys().copied()
    }

    /// `group` was deleted everywhere: its open loss (if any) is dropped untimed.
    pub fn forget(&mut self, group: u64) {
        if self
            .views
            .remove(&group)
            .is_some_and(|views| views.highest > views.established)
        {
            self.unsettled -= 1;
        }
        self.unled.remove(&group);
        self.deposed.remove(&group);
        if self.open.remove(&group).is_some() {
            self.dropped += 1;
        }
    }

    /// The figures so far.
    pub fn figures(&self) -> FailoverFigures {
        let mut ended_ticks = self.ended_ticks.clone();
        ended_ticks.sort_unstable();
        FailoverFigures {
            ended_ticks,
            unresolved: self.open.len() as u64,
            dropped: self.dropped,
            spurious: self.spurious,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn primary_of(view: u64) -> u8 {
        (view % 3) as u8
    }

    #[test]
    fn groups_in_a_view_change_are_counted_and_the_most_at_once_is_a_watermark() {
        use cluster::coverage::{Watermark, watermarks};
        cluster::coverage::reset();
        let mut failover = Failover::default();
        failover.observe(0, 1, (0, Status::Normal, true), (0, 0), primary_of);
        failover.observe(0, 2, (0, Status::Normal, true), (0, 0), primary_of);
        assert_eq!(failover.unsettled, 0, "both groups Normal in their highest view");
        failover.observe(5, 1, (1, Status::ViewChange, false), (0, 0), primary_of);
        failover.observe(5, 2, (2, Status::ViewChange, false), (0, 0), primary_of);
        failover.observe(6, 2, (2, Status::ViewChange, false), (0, 0), primary_of);
        assert_eq!(failover.unsettled, 2, "two groups in a view change, each counted once");
        failover.observe(9, 1, (1, Status::Normal, true), (0, 0), primary_of);
        assert_eq!(failover.unsettled, 1, "group 1's new view started");
        failover.forget(2);
        assert_eq!(failover.unsettled, 0, "a deleted group leaves the count");
        let highest = watermarks();
        assert!(highest.contains(&(Watermark::ViewChangeGroups, 2)), "{highest:?}");
        assert!(highest.contains(&(Watermark::View, 2)), "{highest:?}");
        cluster::coverage::reset();
    }

    #[test]
    fn a_primary_still_normal_in_a_replaced_view_is_deposed_and_what_it_takes_up_is_a_race() {
        use cluster::coverage::{Mark, Watermark, hits, watermarks};
        let reached = |mark: Mark| hits()[mark as usize].1 > 0;
        cluster::coverage::reset();
        let mut failover = Failover::default();
        failover.observe(10, 7, (0, Status::Normal, true), (4, 2), primary_of);
        failover.observe(20, 7, (1, Status::ViewChange, false), (0, 0), primary_of);
        failover.observe(21, 7, (0, Status::Normal, true), (5, 3), primary_of);
        assert!(
            !reached(Mark::DeposedPrimaryNormal),
            "view 1 has not started anywhere: view 0's primary still leads"
        );
        failover.observe(30, 7, (1, Status::Normal, true), (0, 0), primary_of);
        failover.observe(40, 7, (0, Status::Normal, true), (5, 3), primary_of);
        assert!(
            reached(Mark::DeposedPrimaryNormal),
            "view 1 started while view 0's primary is Normal"
        );
        assert!(
            !reached(Mark::UpdateAtDeposedPrimary) && !reached(Mark::QueryAtDeposedPrimary),
            "first seen deposed: its counts so far are the baseline"
        );
        failover.observe(90, 7, (0, Status::Normal, true), (5, 4), primary_of);
        assert!(reached(Mark::QueryAtDeposedPrimary), "it took up a query since");
        assert!(!reached(Mark::UpdateAtDeposedPrimary), "and no update");
        failover.observe(95, 7, (0, Status::Normal, true), (6, 4), primary_of);
        assert!(reached(Mark::UpdateAtDeposedPrimary));
        assert!(
            watermarks().contains(&(Watermark::DeposedPrimaryTicks, 55)),
            "deposed from tick 40 to 95: {:?}",
            watermarks()
        );
        // A backup of the old view, or the new view's primary, is no deposed primary.
        cluster::coverage::reset();
        failover.observe(100, 7, (0, Status::Normal, false), (0, 0), primary_of);
        failover.observe(100, 7, (1, Status::Normal, true), (9, 9), primary_of);
        assert!(!reached(Mark::DeposedPrimaryNormal));
        cluster::coverage::reset();
    }

    #[test]
    fn a_loss_ends_when_a_later_view_has_a_normal_primary() {
        let mut failover = Failover::default();
        failover.set_healthy(0b111);
        failover.observe(10, 7, (0, Status::Normal, true), (0, 0), primary_of);
        failover.set_healthy(0b110);
        failover.process_ended(100, [(7, 0)], 2, 2);
        // The view change is seen, then its primary goes Normal.
        failover.observe(150, 7, (1, Status::ViewChange, false), (0, 0), primary_of);
        failover.observe(160, 7, (1, Status::ViewChange, true), (0, 0), primary_of);
        assert_eq!(failover.figures().ended_ticks, Vec::<u64>::new(), "not Normal yet");
        failover.observe(180, 7, (1, Status::Normal, true), (0, 0), primary_of);
        let figures = failover.figures();
        assert_eq!(figures.ended_ticks, vec![80]);
        assert_eq!(figures.spurious, 0, "the old primary was down: the view change was due");
        assert!(
            figures.line().contains("primary_losses=1 ended=1 p50_ticks=80"),
            "{}",
            figures.line()
        );
    }

    #[test]
    fn a_view_change_while_the_old_primary_is_healthy_is_spurious() {
        let mut failover = Failover::default();
        failover.set_healthy(0b111);
        failover.observe(10, 7, (3, Status::Normal, false), (0, 0), primary_of);
        failover.observe(20, 7, (4, Status::ViewChange, false), (0, 0), primary_of);
        failover.observe(21, 7, (4, Status::ViewChange, false), (0, 0), primary_of);
        assert_eq!(failover.figures().spurious, 1, "one new view, counted once");
        failover.observe(30, 7, (5, Status::ViewChange, false), (0, 0), primary_of);
        assert_eq!(failover.figures().spurious, 1, "an escalation of the same view change");
        failover.observe(40, 7, (5, Status::Normal, true), (0, 0), primary_of);
        failover.set_healthy(0b011);
        failover.observe(50, 7, (6, Status::ViewChange, false), (0, 0), primary_of);
        assert_eq!(
            failover.figures().spurious,
            1,
            "view 5's primary, replica 2, is cut off: not counted"
        );
        failover.observe(60, 7, (6, Status::Normal, false), (0, 0), primary_of);
        failover.observe(70, 7, (7, Status::ViewChange, false), (0, 0), primary_of);
        assert_eq!(
            failover.figures().spurious,
            2,
            "view 6's primary, replica 0, is healthy"
        );
    }

    #[test]
    fn an_outage_drops_open_losses_and_the_run_end_counts_the_rest() {
        let mut failover = Failover::default();
        failover.process_ended(100, [(7, 0), (8, 3)], 2, 2);
        failover.process_ended(101, [], 1, 2);
        failover.process_ended(200, [(9, 0)], 2, 2);
        let figures = failover.figures();
        assert_eq!((figures.dropped, figures.unresolved), (2, 1));
        assert!(
            figures.line().contains("primary_losses=3 ended=0 p50_ticks=-"),
            "{}",
            figures.line()
        );
        failover.forget(9);
        assert_eq!(failover.figures().dropped, 3);
    }

    #[test]
    fn a_view_change_after_an_outage_ended_its_primary_is_not_spurious() {
        let mut failover = Failover::default();
        failover.set_healthy(0b111);
        failover.observe(10, 7, (0, Status::Normal, true), (0, 0), primary_of);
        failover.observe(10, 8, (1, Status::Normal, false), (0, 0), primary_of);
        // Every replica ends (an outage): no loss is timed, and after the restarts
        // everyone is up (healthy) again when the views change.
        failover.process_ended(100, [(7, 0)], 2, 2);
        failover.process_ended(100, [], 1, 2);
        failover.process_ended(100, [(8, 1)], 0, 2);
        assert_eq!(failover.figures().dropped, 1);
        failover.observe(300, 7, (1, Status::ViewChange, false), (0, 0), primary_of);
        failover.observe(300, 8, (2, Status::ViewChange, false), (0, 0), primary_of);
        assert_eq!(failover.figures().spurious, 0, "both primaries' processes ended");
        failover.observe(310, 7, (1, Status::Normal, true), (0, 0), primary_of);
        failover.observe(400, 7, (2, Status::ViewChange, false), (0, 0), primary_of);
        assert_eq!(
            failover.figures().spurious,
            1,
            "view 1's primary is up and led it throughout"
        );
    }

    #[test]
    fn quantiles_are_nearest_rank() {
        let ticks: Vec<u64> = (1..=100).collect();
        assert_eq!(quantile(&ticks, 0.5), Some(50));
        assert_eq!(quantile(&ticks, 0.99), Some(99));
        assert_eq!(quantile(&ticks, 1.0), Some(100));
        assert_eq!(quantile(&[7], 0.5), Some(7));
        assert_eq!(quantile(&[], 0.5), None);
    }
}
