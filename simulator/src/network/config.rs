//! The concrete parameters of one simulated network, as a fault profile resolves
//! them for one seed. Every delay and duration is in ticks (1 tick = 10 ms).

use serde::{Deserialize, Serialize};

/// How the network splits when a partition starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartitionMode {
    /// Never partition.
    None,
    /// One side has a size drawn uniformly in `1..replicas`, members drawn at random.
    UniformSize,
    /// Each replica picks its side by a coin flip (redrawn until both sides are non-empty).
    UniformPartition,
    /// One replica, drawn at random, is cut off from every other replica.
    IsolateSingle,
}

/// Whether a partition cuts both directions of a link or only one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PartitionSymmetry {
    /// Both directions between the two sides are cut.
    Symmetric,
    /// Only traffic from one side to the other is cut (which one is drawn per partition).
    Asymmetric,
}

/// Every network parameter the packet simulator reads. Probabilities are per packet
/// (loss, replay, corruption) or per tick (partition, unpartition, clog per path).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkConfig {
    /// Floor of a packet's one-way delay, in ticks (at least 1: nothing arrives in the tick it was sent).
    pub one_way_delay_min_ticks: u64,
    /// Mean of the exponential one-way delay, in ticks; the floor applies after drawing.
    pub one_way_delay_mean_ticks: u64,
    /// Probability that a packet coming due is dropped.
    pub packet_loss_probability: f64,
    /// Probability that a delivered packet is also re-queued with a fresh delay (duplicate).
    pub packet_replay_probability: f64,
    /// Probability that a delivered packet has bytes flipped on the way (the receiver's checksum must catch it).
    pub packet_corruption_probability: f64,
    /// Packets a link holds at most; a send to a full link evicts a random queued packet.
    pub link_capacity_packets: usize,
    /// Per tick, probability that a healed network partitions (once its healed stability window has passed).
    pub partition_probability: f64,
    /// Per tick, probability that a partitioned network heals (once its partitioned stability window has passed).
    pub unpartition_probability: f64,
    /// Minimum ticks a partition stands before it may heal.
    pub partition_stability_ticks: u64,
    /// Minimum ticks the network stays healed before it may partition again.
    pub unpartition_stability_ticks: u64,
    /// Shape of a partition.
    pub partition_mode: PartitionMode,
    /// Symmetric or asymmetric cuts.
    pub partition_symmetry: PartitionSymmetry,
    /// Per tick and per directed path, probability that an unclogged path clogs.
    pub path_clog_probability: f64,
    /// Mean of the exponential clog duration, in ticks.
    pub path_clog_duration_mean_ticks: u64,
    /// Largest absolute offset of a replica's realtime clock from true time, in microseconds.
    pub clock_offset_max_micros: u64,
    /// Largest absolute drift of a replica's realtime clock, in parts per million.
    pub clock_drift_max_ppm: u64,
}

impl NetworkConfig {
    /// A perfect network: fixed-point `none` profile values.
    pub fn perfect() -> Self {
        Self {
            one_way_delay_min_ticks: 1,
            one_way_delay_mean_ticks: 3,
            packet_loss_probability: 0.0,
            packet_replay_probability: 0.0,
            packet_corruption_probability: 0.0,
            link_capacity_packets: 64,
            partition_probability: 0.0,
            unpartition_probability: 0.0,
            partition_stability_ticks: 0,
            unpartition_stability_ticks: 0,
            partition_mode: PartitionMode::None,
            partition_symmetry: PartitionSymmetry::Symmetric,
            path_clog_probability: 0.0,
            path_clog_duration_mean_ticks: 0,
            clock_offset_max_micros: 0,
            clock_drift_max_ppm: 0,
        }
    }
}
