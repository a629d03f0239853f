//! Swarm ranges and the per-seed draw.
//!
//! A swarm profile holds, for every parameter, the set of values it may take: an
//! integer or probability range on a step grid, or a list of choices. `draw` turns one
//! swarm seed into one concrete [`NetworkConfig`] plus one [`SwarmDraw`].
//!
//! THE DRAW ORDER IS PART OF THE SEED CONTRACT. Parameters are drawn from one
//! `SimRng::new(swarm_seed)` stream in the order of the fields below (which is also the
//! order of the shipped `fault-profiles/swarm.json` and of its README): first every
//! `network` field, then every `cluster` field. Reordering, removing, or inserting a
//! draw in the middle changes what every existing swarm seed means. A new parameter
//! may only be APPENDED after `power_loss_share`, and a new way of drawing an existing
//! parameter needs a new field, not a changed one.

use crate::network::config::{NetworkConfig, PartitionMode, PartitionSymmetry};
use crate::rng::SimRng;

/// An inclusive integer range on a grid: `min, min + step, ..., max`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntRange {
    /// Smallest value.
    pub min: u64,
    /// Largest value; `max - min` is a multiple of `step`.
    pub max: u64,
    /// Grid spacing, at least 1.
    pub step: u64,
}

impl IntRange {
    /// Number of steps from `min` to `max` (so the grid holds `steps() + 1` values).
    /// Total on unvalidated input: a zero step or an inverted range gives 0.
    pub fn steps(&self) -> u64 {
        self.max
            .checked_sub(self.min)
            .and_then(|span| span.checked_div(self.step))
            .unwrap_or(0)
    }

    /// The `k`-th grid value (saturating; `k` is at most `steps()` in practice).
    fn at(&self, k: u64) -> u64 {
        self.min.saturating_add(k.saturating_mul(self.step))
    }

    /// Whether `value` lies in the range and on its grid.
    pub fn contains(&self, value: u64) -> bool {
        value >= self.min && value <= self.max && (self.step == 0 || (value - self.min).is_multiple_of(self.step))
    }

    /// One uniform grid value. Consumes the stream exactly as `range_inclusive` does.
    pub(crate) fn draw(&self, rng: &mut SimRng) -> u64 {
        self.draw_at_least(rng, self.min)
    }

    /// One uniform grid value that is `>= floor` (the range's `min` otherwise). When no
    /// grid value reaches `floor` (only possible on an unvalidated range) the top of the
    /// range is returned.
    pub(crate) fn draw_at_least(&self, rng: &mut SimRng, floor: u64) -> u64 {
        let steps = self.steps();
        let lowest = if floor <= self.min || self.step == 0 {
            0
        } else {
            (floor - self.min).div_ceil(self.step).min(steps)
        };
        self.at(rng.range_inclusive(lowest, steps))
    }
}

/// Upper bound on the number of grid points of a probability range; larger grids are
/// a sign of a mistyped step.
pub const MAX_GRID_STEPS: u64 = 1_000_000;

/// Relative tolerance when checking that a probability step divides its range.
pub(crate) const GRID_TOLERANCE: f64 = 1e-9;

/// An inclusive probability range on a grid: `min, min + step, ..., max`, within `[0, 1]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbabilityRange {
    /// Smallest value, in `[0, 1]`.
    pub min: f64,
    /// Largest value, in `[min, 1]`; `(max - min) / step` is a whole number.
    pub max: f64,
    /// Grid spacing, positive.
    pub step: f64,
}

impl ProbabilityRange {
    /// Number of steps from `min` to `max`, rounded to the nearest whole number. Total
    /// on unvalidated input: anything non-finite or negative gives 0, and the count is
    /// capped at [`MAX_GRID_STEPS`].
    pub fn steps(&self) -> u64 {
        let steps = (self.max - self.min) / self.step;
        if steps.is_finite() && steps >= 0.0 {
            // Saturating float-to-int cast, then capped: a huge grid cannot overflow.
            (steps.round() as u64).min(MAX_GRID_STEPS)
        } else {
            0
        }
    }

    /// The `k`-th grid value. The ends are returned exactly; values in between are
    /// rounded to 12 decimal places so that `0.1 * 3` prints as `0.3`, and kept within
    /// `[min, max]`.
    fn at(&self, k: u64, steps: u64) -> f64 {
        if k == 0 {
            return self.min;
        }
        if k >= steps {
            return self.max;
        }
        // k <= MAX_GRID_STEPS, exactly representable.
        let raw = self.min + k as f64 * self.step;
        let rounded = (raw * 1e12).round() / 1e12;
        if rounded > self.max {
            self.max
        } else if rounded < self.min {
            self.min
        } else {
            rounded
        }
    }

    /// Whether `value` lies in the range and (within tolerance) on its grid.
    pub fn contains(&self, value: f64) -> bool {
        if !(value >= self.min && value <= self.max) {
            return false;
        }
        if self.max == self.min {
            return true;
        }
        let k = (value - self.min) / self.step;
        (k - k.round()).abs() <= 1e-6
    }

    /// One uniform grid value.
    pub(crate) fn draw(&self, rng: &mut SimRng) -> f64 {
        let steps = self.steps();
        let k = rng.range_inclusive(0, steps);
        self.at(k, steps)
    }
}

/// Draws one option uniformly. An empty list (only possible unvalidated) still consumes
/// one draw and yields `fallback`, so the stream stays aligned.
fn draw_choice<T: Copy>(options: &[T], fallback: T, rng: &mut SimRng) -> T {
    if options.is_empty() {
        rng.next_u64();
        fallback
    } else {
        options[rng.index(options.len())]
    }
}

/// The range of every [`NetworkConfig`] field, in draw order.
#[derive(Clone, Debug, PartialEq)]
pub struct SwarmNetworkRanges {
    /// Delay floor in ticks; `min >= 1`.
    pub one_way_delay_min_ticks: IntRange,
    /// Delay mean in ticks. The draw is restricted to grid values `>=` the drawn
    /// `one_way_delay_min_ticks` (so mean >= min always); `max` must be at least
    /// `one_way_delay_min_ticks.max`.
    pub one_way_delay_mean_ticks: IntRange,
    /// Per-packet loss probability.
    pub packet_loss_probability: ProbabilityRange,
    /// Per-packet replay (duplicate) probability.
    pub packet_replay_probability: ProbabilityRange,
    /// Per-packet corruption probability.
    pub packet_corruption_probability: ProbabilityRange,
    /// Link capacity in packets; `min >= 8`.
    pub link_capacity_packets: IntRange,
    /// Per-tick partition probability.
    pub partition_probability: ProbabilityRange,
    /// Per-tick heal probability; `min > 0` (a partition always heals eventually).
    pub unpartition_probability: ProbabilityRange,
    /// Minimum ticks partitioned.
    pub partition_stability_ticks: IntRange,
    /// Minimum ticks healed.
    pub unpartition_stability_ticks: IntRange,
    /// Partition shapes to choose from (non-empty, no repeats).
    pub partition_mode: Vec<PartitionMode>,
    /// Partition symmetries to choose from (non-empty, no repeats).
    pub partition_symmetry: Vec<PartitionSymmetry>,
    /// Per-tick, per-path clog probability.
    pub path_clog_probability: ProbabilityRange,
    /// Mean clog duration in ticks.
    pub path_clog_duration_mean_ticks: IntRange,
    /// Largest realtime clock offset, microseconds.
    pub clock_offset_max_micros: IntRange,
    /// Largest realtime clock drift, ppm.
    pub clock_drift_max_ppm: IntRange,
}

/// Ranges of everything a swarm seed decides beyond the network, drawn after it.
#[derive(Clone, Debug, PartialEq)]
pub struct SwarmClusterRanges {
    /// Replica count, within `1..=6`.
    pub replicas: IntRange,
    /// Client count, at least 1.
    pub clients: IntRange,
    /// Shards per replica, at least 1.
    pub shards: IntRange,
    /// Per-tick crash probability (the crash injector's `--crash-prob`).
    pub crash_probability: ProbabilityRange,
    /// Per-tick restart probability (the crash injector's `--restart-prob`).
    pub restart_probability: ProbabilityRange,
    /// Share of crashes that are power losses (unsynced data lost).
    pub power_loss_share: ProbabilityRange,
}

/// Ranges of the disk fault rates, drawn after the cluster's.
#[derive(Clone, Debug, PartialEq)]
pub struct SwarmStorageRanges {
    /// Per write, sync or writeback: probability of EIO.
    pub disk_error_probability: ProbabilityRange,
    /// Per restart of the corruptible replica: probability a WAL bit rots.
    pub disk_corruption_probability: ProbabilityRange,
    /// Per write or sync: probability it is slow (drawn after the two above).
    pub disk_slow_probability: ProbabilityRange,
    /// Per tick: probability of a whole-cluster power outage (drawn last).
    pub power_outage_probability: ProbabilityRange,
}

/// The adversary's range, drawn after everything else (absent from a file: none).
#[derive(Clone, Debug, PartialEq)]
pub struct SwarmAdversaryRanges {
    /// Per tick: probability the adversary sends a replica a frame.
    pub forged_frame_probability: ProbabilityRange,
}

impl Default for SwarmAdversaryRanges {
    fn default() -> Self {
        Self {
            forged_frame_probability: ProbabilityRange {
                min: 0.0,
                max: 0.0,
                step: 1.0,
            },
        }
    }
}

/// Everything a swarm profile may draw.
#[derive(Clone, Debug, PartialEq)]
pub struct SwarmRanges {
    /// The network parameters' ranges, drawn first.
    pub network: SwarmNetworkRanges,
    /// Topology and crash ranges, drawn after the network.
    pub cluster: SwarmClusterRanges,
    /// Disk fault rates, drawn after the cluster.
    pub storage: SwarmStorageRanges,
    /// The adversary's range (absent from the file: none).
    pub adversary: SwarmAdversaryRanges,
}

/// The non-network values one swarm seed drew.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SwarmDraw {
    /// Replica count.
    pub replicas: usize,
    /// Client count.
    pub clients: usize,
    /// Shards per replica.
    pub shards: usize,
    /// Per-tick crash probability.
    pub crash_probability: f64,
    /// Per-tick restart probability.
    pub restart_probability: f64,
    /// Share of crashes that are power losses.
    pub power_loss_share: f64,
    /// The disk fault rates.
    pub storage: super::StorageRates,
    /// The adversary drawn.
    pub adversary: super::AdversaryRates,
}

/// `u64` to `usize`, saturating (only reachable with absurd unvalidated ranges).
fn to_usize(value: u64) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}

impl SwarmRanges {
    /// Draws one concrete configuration from `SimRng::new(swarm_seed)`.
    ///
    /// A pure function of `(self, swarm_seed)`. Never panics, even on ranges that did
    /// not pass validation (the values are then unspecified but the stream stays
    /// aligned). The statement order below IS the seed contract: append only.
    pub fn draw(&self, swarm_seed: u64) -> (NetworkConfig, SwarmDraw) {
        let mut rng = SimRng::new(swarm_seed);
        let r = &self.network;
        // Seed contract: draw order. Do not reorder; append new draws at the end.
        let one_way_delay_min_ticks = r.one_way_delay_min_ticks.draw(&mut rng);
        let one_way_delay_mean_ticks = r
            .one_way_delay_mean_ticks
            .draw_at_least(&mut rng, one_way_delay_min_ticks);
        let packet_loss_probability = r.packet_loss_probability.draw(&mut rng);
        let packet_replay_probability = r.packet_replay_probability.draw(&mut rng);
        let packet_corruption_probability = r.packet_corruption_probability.draw(&mut rng);
        let link_capacity_packets = to_usize(r.link_capacity_packets.draw(&mut rng));
        let partition_probability = r.partition_probability.draw(&mut rng);
        let unpartition_probability = r.unpartition_probability.draw(&mut rng);
        let partition_stability_ticks = r.partition_stability_ticks.draw(&mut rng);
        let unpartition_stability_ticks = r.unpartition_stability_ticks.draw(&mut rng);
        let partition_mode = draw_choice(&r.partition_mode, PartitionMode::None, &mut rng);
        let partition_symmetry = draw_choice(&r.partition_symmetry, PartitionSymmetry::Symmetric, &mut rng);
        let path_clog_probability = r.path_clog_probability.draw(&mut rng);
        let path_clog_duration_mean_ticks = r.path_clog_duration_mean_ticks.draw(&mut rng);
        let clock_offset_max_micros = r.clock_offset_max_micros.draw(&mut rng);
        let clock_drift_max_ppm = r.clock_drift_max_ppm.draw(&mut rng);

        let c = &self.cluster;
        let replicas = to_usize(c.replicas.draw(&mut rng));
        let clients = to_usize(c.clients.draw(&mut rng));
        let shards = to_usize(c.shards.draw(&mut rng));
        let crash_probability = c.crash_probability.draw(&mut rng);
        let restart_probability = c.restart_probability.draw(&mut rng);
        let power_loss_share = c.power_loss_share.draw(&mut rng);
        let storage = super::StorageRates {
            disk_error_probability: self.storage.disk_error_probability.draw(&mut rng),
            disk_corruption_probability: self.storage.disk_corruption_probability.draw(&mut rng),
            // Drawn below, after every older draw (append only).
            disk_slow_probability: 0.0,
            power_outage_probability: 0.0,
        };
        // New draws go here, below every existing one.
        let disk_slow_probability = self.storage.disk_slow_probability.draw(&mut rng);
        let power_outage_probability = self.storage.power_outage_probability.draw(&mut rng);
        let storage = super::StorageRates {
            disk_slow_probability,
            power_outage_probability,
            ..storage
        };
        let adversary = super::AdversaryRates {
            forged_frame_probability: self.adversary.forged_frame_probability.draw(&mut rng),
        };

        let network = NetworkConfig {
            one_way_delay_min_ticks,
            one_way_delay_mean_ticks,
            packet_loss_probability,
            packet_replay_probability,
            packet_corruption_probability,
            link_capacity_packets,
            partition_probability,
            unpartition_probability,
            partition_stability_ticks,
            unpartition_stability_ticks,
            partition_mode,
            partition_symmetry,
            path_clog_probability,
            path_clog_duration_mean_ticks,
            clock_offset_max_micros,
            clock_drift_max_ppm,
        };
        let draw = SwarmDraw {
            replicas,
            clients,
            shards,
            crash_probability,
            restart_probability,
            power_loss_share,
            storage,
            adversary,
        };
        (network, draw)
    }
}
