//! The network partition among replicas: which replica-to-replica paths are cut
//! right now, and the per-tick state machine that starts and heals partitions.
//!
//! Models: a two-sided split of the replicas in one of three shapes (uniform size,
//! a coin per replica, one replica isolated), cut in both directions or in one
//! direction drawn per partition, with minimum stability windows in both the
//! partitioned and the healed state.
//!
//! Does not model: client links (never cut: a client keeps its links to every
//! replica), splits into more than two sides, crashes (a partition is independent
//! of which processes are up, so it survives a crash and restart), or what happens
//! to packets (the simulator drops packets on a cut path when they come due).

use super::config::{NetworkConfig, PartitionMode, PartitionSymmetry};
use crate::rng::SimRng;

/// The kebab-case name of a mode, as profiles and run banners spell it.
pub fn mode_name(mode: PartitionMode) -> &'static str {
    match mode {
        PartitionMode::None => "none",
        PartitionMode::UniformSize => "uniform-size",
        PartitionMode::UniformPartition => "uniform-partition",
        PartitionMode::IsolateSingle => "isolate-single",
    }
}

/// The kebab-case name of a symmetry, as profiles and run banners spell it.
pub fn symmetry_name(symmetry: PartitionSymmetry) -> &'static str {
    match symmetry {
        PartitionSymmetry::Symmetric => "symmetric",
        PartitionSymmetry::Asymmetric => "asymmetric",
    }
}

/// What one state-machine step did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Unchanged,
    Started,
    Healed,
}

/// The current split and the state machine's clock.
#[derive(Clone, Debug)]
pub(crate) struct Partition {
    replicas: usize,
    partitioned: bool,
    /// Steps since the last start or heal (or since construction).
    ticks_in_state: u64,
    /// `side_a[r]`: replica `r` is on side A. Meaningful only while partitioned.
    side_a: Vec<bool>,
    /// Packets from side A to side B are dropped.
    cut_a_to_b: bool,
    /// Packets from side B to side A are dropped.
    cut_b_to_a: bool,
    /// Whether `step` may start or heal partitions at all.
    automatic: bool,
    /// Replica indices for the partial shuffle of uniform-size (kept to avoid allocating).
    scratch: Vec<usize>,
}

impl Partition {
    pub(crate) fn new(replicas: usize) -> Self {
        Self {
            replicas,
            partitioned: false,
            ticks_in_state: 0,
            side_a: vec![false; replicas],
            cut_a_to_b: false,
            cut_b_to_a: false,
            automatic: true,
            scratch: (0..replicas).collect(),
        }
    }

    pub(crate) fn is_partitioned(&self) -> bool {
        self.partitioned
    }

    pub(crate) fn set_automatic(&mut self, automatic: bool) {
        self.automatic = automatic;
    }

    /// Whether packets from `from` to `to` are dropped. Only replica pairs on
    /// opposite sides can be cut, and only in the cut direction(s).
    #[inline]
    pub(crate) fn is_cut(&self, from: usize, to: usize) -> bool {
        if !self.partitioned || from >= self.replicas || to >= self.replicas {
            return false;
        }
        let from_a = self.side_a[from];
        if from_a == self.side_a[to] {
            return false;
        }
        if from_a { self.cut_a_to_b } else { self.cut_b_to_a }
    }

    /// Whether [`Self::step`] can never draw under `config`, whatever is switched on or
    /// off later: the mode is `None` or there are fewer than two replicas (both fixed
    /// for a run).
    pub(crate) fn never_draws(&self, config: &NetworkConfig) -> bool {
        config.partition_mode == PartitionMode::None || self.replicas < 2
    }

    /// One tick of the state machine. Draws nothing when automatic partitions are
    /// off, the mode is `None`, or there are fewer than two replicas; otherwise one
    /// coin when a stability window has passed, plus the shape (and, if asymmetric,
    /// direction) draws when a partition starts.
    pub(crate) fn step(&mut self, config: &NetworkConfig, rng: &mut SimRng) -> Step {
        self.ticks_in_state = self.ticks_in_state.saturating_add(1);
        if !self.automatic || self.never_draws(config) {
            return Step::Unchanged;
        }
        if self.partitioned {
            if self.ticks_in_state >= config.partition_stability_ticks && rng.chance(config.unpartition_probability) {
                self.heal();
                return Step::Healed;
            }
        } else if self.ticks_in_state >= config.unpartition_stability_ticks && rng.chance(config.partition_probability)
        {
            self.start(config.partition_mode, config.partition_symmetry, rng);
            return Step::Started;
        }
        Step::Unchanged
    }

    /// Starts a partition of `mode`. Requires at least two replicas and a mode other than `None`.
    fn start(&mut self, mode: PartitionMode, symmetry: PartitionSymmetry, rng: &mut SimRng) {
        let n = self.replicas;
        debug_assert!(n >= 2);
        self.side_a.fill(false);
        match mode {
            PartitionMode::None => unreachable!("step never starts a partition of mode None"),
            PartitionMode::UniformSize => {
                // Size of side A uniform in 1..n, members by a partial Fisher-Yates
                // shuffle over a fresh identity permutation (so history can't leak in).
                let size = rng.range_inclusive(1, n as u64 - 1) as usize;
                for (i, slot) in self.scratch.iter_mut().enumerate() {
                    *slot = i;
                }
                for i in 0..size {
                    let j = i + rng.index(n - i);
                    self.scratch.swap(i, j);
                    self.side_a[self.scratch[i]] = true;
                }
            }
            PartitionMode::UniformPartition => loop {
                let mut on_a = 0;
                for side in &mut self.side_a {
                    *side = rng.chance(0.5);
                    on_a += usize::from(*side);
                }
                if on_a > 0 && on_a < n {
                    break;
                }
            },
            PartitionMode::IsolateSingle => {
                self.side_a[rng.index(n)] = true;
            }
        }
        match symmetry {
            PartitionSymmetry::Symmetric => {
                self.cut_a_to_b = true;
                self.cut_b_to_a = true;
            }
            PartitionSymmetry::Asymmetric => {
                self.cut_a_to_b = rng.chance(0.5);
                self.cut_b_to_a = !self.cut_a_to_b;
            }
        }
        self.partitioned = true;
        self.ticks_in_state = 0;
    }

    /// Starts a symmetric partition between `side_a` and every other replica,
    /// replacing any standing one. Draws nothing. An empty or all-replica side is
    /// allowed and cuts nothing (but still counts as partitioned).
    pub(crate) fn start_manual(&mut self, side_a: &[usize]) {
        self.side_a.fill(false);
        for &replica in side_a {
            assert!(
                replica < self.replicas,
                "partition side names process {replica}, but only replicas 0..{} can be partitioned",
                self.replicas
            );
            self.side_a[replica] = true;
        }
        self.cut_a_to_b = true;
        self.cut_b_to_a = true;
        self.partitioned = true;
        self.ticks_in_state = 0;
    }

    /// Starts exactly this partition (a replayed schedule's), replacing any standing
    /// one. Draws nothing. Sides naming replicas outside the world are left out.
    pub(crate) fn start_exact(&mut self, side_a: &[usize], cut_a_to_b: bool, cut_b_to_a: bool) {
        self.side_a.fill(false);
        for &replica in side_a.iter().filter(|&&replica| replica < self.replicas) {
            self.side_a[replica] = true;
        }
        self.cut_a_to_b = cut_a_to_b;
        self.cut_b_to_a = cut_b_to_a;
        self.partitioned = true;
        self.ticks_in_state = 0;
    }

    /// The standing partition as (side A, A-to-B cut, B-to-A cut), if one stands.
    pub(crate) fn current(&self) -> Option<(Vec<usize>, bool, bool)> {
        self.partitioned.then(|| {
            let side_a = (0..self.replicas).filter(|&replica| self.side_a[replica]).collect();
            (side_a, self.cut_a_to_b, self.cut_b_to_a)
        })
    }

    /// Whether the state machine may start or heal partitions now.
    pub(crate) fn automatic(&self) -> bool {
        self.automatic
    }

    /// Heals the partition (a no-op on the cuts if none stands) and restarts the
    /// healed stability window.
    pub(crate) fn heal(&mut self) {
        self.partitioned = false;
        self.cut_a_to_b = false;
        self.cut_b_to_a = false;
        self.ticks_in_state = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(mode: PartitionMode, symmetry: PartitionSymmetry) -> NetworkConfig {
        NetworkConfig {
            partition_probability: 0.3,
            unpartition_probability: 0.3,
            partition_stability_ticks: 7,
            unpartition_stability_ticks: 4,
            partition_mode: mode,
            partition_symmetry: symmetry,
            ..NetworkConfig::perfect()
        }
    }

    /// The cut matrix over replicas.
    fn cuts(p: &Partition) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for a in 0..p.replicas {
            for b in 0..p.replicas {
                if p.is_cut(a, b) {
                    out.push((a, b));
                }
            }
        }
        out
    }

    #[test]
    fn every_mode_splits_into_two_nonempty_sides_with_the_right_direction() {
        let modes = [
            PartitionMode::UniformSize,
            PartitionMode::UniformPartition,
            PartitionMode::IsolateSingle,
        ];
        let symmetries = [PartitionSymmetry::Symmetric, PartitionSymmetry::Asymmetric];
        for mode in modes {
            for symmetry in symmetries {
                let mut rng = SimRng::new(11);
                let mut partition = Partition::new(5);
                let mut sizes_seen = [false; 5];
                let mut starts = 0;
                for _ in 0..20_000 {
                    if partition.step(&config(mode, symmetry), &mut rng) != Step::Started {
                        continue;
                    }
                    starts += 1;
                    let on_a = partition.side_a.iter().filter(|&&a| a).count();
                    assert!((1..5).contains(&on_a), "{mode:?}: side A has {on_a}");
                    sizes_seen[on_a] = true;
                    if mode == PartitionMode::IsolateSingle {
                        assert_eq!(on_a, 1);
                    }
                    let cut = cuts(&partition);
                    let crossing = on_a * (5 - on_a);
                    match symmetry {
                        PartitionSymmetry::Symmetric => {
                            assert_eq!(cut.len(), 2 * crossing);
                        }
                        PartitionSymmetry::Asymmetric => {
                            assert_eq!(cut.len(), crossing);
                            // One direction only, and the same direction for every pair.
                            assert!(cut.iter().all(|&(a, b)| !partition.is_cut(b, a)));
                            let from_a = partition.side_a[cut[0].0];
                            assert!(cut.iter().all(|&(a, _)| partition.side_a[a] == from_a));
                        }
                    }
                }
                assert!(starts > 100, "{mode:?}/{symmetry:?} started {starts} times");
                if mode != PartitionMode::IsolateSingle {
                    // Every side size 1..=4 shows up.
                    assert!(sizes_seen[1..].iter().all(|&s| s), "{mode:?}: {sizes_seen:?}");
                }
            }
        }
    }

    #[test]
    fn step_draws_nothing_for_mode_none_one_replica_or_when_disabled() {
        let on = config(PartitionMode::IsolateSingle, PartitionSymmetry::Symmetric);
        let none = config(PartitionMode::None, PartitionSymmetry::Symmetric);
        let cases: [(Partition, &NetworkConfig); 3] = [
            (Partition::new(3), &none),
            (Partition::new(1), &on),
            (
                {
                    let mut p = Partition::new(3);
                    p.set_automatic(false);
                    p
                },
                &on,
            ),
        ];
        for (mut partition, config) in cases {
            let mut rng = SimRng::new(5);
            let mut untouched = SimRng::new(5);
            for _ in 0..1_000 {
                assert_eq!(partition.step(config, &mut rng), Step::Unchanged);
            }
            assert_eq!(rng.next_u64(), untouched.next_u64());
        }
    }

    #[test]
    fn manual_partition_cuts_both_ways_and_only_across_sides() {
        let mut partition = Partition::new(4);
        partition.start_manual(&[0, 2]);
        assert!(partition.is_partitioned());
        assert_eq!(
            cuts(&partition),
            vec![(0, 1), (0, 3), (1, 0), (1, 2), (2, 1), (2, 3), (3, 0), (3, 2)]
        );
        // Non-replica indices are never cut.
        assert!(!partition.is_cut(0, 4) && !partition.is_cut(4, 1));
        partition.heal();
        assert!(!partition.is_partitioned() && cuts(&partition).is_empty());
    }
}
