//! Branch points of the run's timeline (see [`crate::timeline`]): at the start of a
//! tick that holds one, every choice stream the harness owns is reseeded. And where a
//! run could branch: the tick each coverage mark was first reached.

use super::{Disk, Harness};
use crate::timeline::Branches;

impl Harness {
    /// Take `branches` as this run's timeline; each point is taken as the step that
    /// runs its tick starts. Set before the first step: a point at a tick already
    /// stepped past would never be taken.
    pub fn set_branches(&mut self, branches: Branches) {
        assert_eq!(self.simulation.tick(), 0, "branch points are set before the run starts");
        self.branches = branches;
    }

    /// The run's branch points.
    pub fn branches(&self) -> &Branches {
        &self.branches
    }

    /// Branch points taken so far (fewer than the timeline holds if the run ended
    /// before a point's tick).
    pub fn branches_taken(&self) -> usize {
        self.branches_taken
    }

    /// Each coverage point (mark or watermark level) the run reached, with the tick
    /// that first reached it, in the order reached: where an exploration branches this
    /// run.
    pub fn first_reached(&self) -> &[(cluster::coverage::Point, u64)] {
        &self.first_reached
    }

    /// Note the points the step just run reached for the first time (one compare of
    /// the reached set when none did).
    pub(super) fn note_marks_reached(&mut self) {
        let now = cluster::coverage::reached();
        if now == self.reached_seen {
            return;
        }
        let tick = self.simulation.tick();
        for point in cluster::coverage::newly_reached(&self.reached_seen, &now) {
            self.first_reached.push((point, tick));
        }
        self.reached_seen = now;
    }

    /// Take the point at `tick` if the timeline has one: reseed the world's streams
    /// (network, executor, entry shard, adversary), the crash injector, power losses,
    /// WAL rot, every disk, and the clients' driver.
    pub(super) fn take_branch_point(&mut self, tick: u64) {
        // A batch of siblings forks here, each copy taking its own timeline (see
        // `fork_point`): before the point is looked up.
        crate::fork_point::at_branch_point(tick, &mut self.branches);
        let Some(point) = self.branches.at(tick) else {
            return;
        };
        let key = point.key();
        self.simulation.branch(key);
        self.crash.branch(key);
        self.power_rng.branch(key);
        self.corruption_rng.branch(key);
        for slot in &self.slots {
            if let Disk::Sim(disk) = &slot.disk {
                disk.branch(key);
            }
        }
        self.driver.borrow_mut().branch(key);
        self.branches_taken += 1;
        if self.trace.is_some() {
            self.trace_cluster_fault(
                "branch",
                format!("the timeline branches here ({point}): every choice stream reseeded"),
            );
        }
    }
}
