//! Counters the packet simulator keeps about what happened to every packet.
//!
//! Models: a fate for every submitted or replayed packet (delivered, lost, evicted,
//! or dropped for one named reason) plus fault-schedule events (partitions, clogs),
//! and deliveries per command byte. Every packet ends up in exactly one bucket or is
//! still queued, which [`NetworkStats::accounted`] checks.
//!
//! Does not model: timing (no latency histograms), bytes, or per-link breakdowns;
//! the counters are totals over the whole network since construction.

use std::fmt;

/// Totals since the simulator was built. Plain counters; reading them draws nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkStats {
    /// Calls to `submit`, including those dropped right away.
    pub submitted: u64,
    /// Packets handed to the receiver (corrupted ones included).
    pub delivered: u64,
    /// Packets that came due and lost the loss coin.
    pub lost: u64,
    /// Duplicates re-queued by the replay coin (each also counts toward one fate later).
    pub replayed: u64,
    /// Delivered packets whose payload was damaged.
    pub corrupted: u64,
    /// Packets thrown out of a full link to make room for a new one.
    pub evicted: u64,
    /// Packets refused at submit because an end was crashed, or queued to a process when it crashed.
    pub dropped_crashed: u64,
    /// Packets that came due on a path a partition cuts.
    pub dropped_partitioned: u64,
    /// Packets that came due on a link whose filter blocks their command.
    pub dropped_filtered: u64,
    /// Packets submitted with `from == to`; the network does not carry loopback traffic.
    pub dropped_loopback: u64,
    /// Partitions started, by the state machine or by `partition_now`.
    pub partitions_started: u64,
    /// Partitions healed, by the state machine or by `heal_now`.
    pub partitions_healed: u64,
    /// Directed-path clogs started, by the per-tick draw or by `clog_path`.
    pub clogs_started: u64,
    /// Deliveries per command byte (the command as sent, before any corruption).
    pub delivered_by_command: [u64; 256],
}

impl Default for NetworkStats {
    fn default() -> Self {
        Self {
            submitted: 0,
            delivered: 0,
            lost: 0,
            replayed: 0,
            corrupted: 0,
            evicted: 0,
            dropped_crashed: 0,
            dropped_partitioned: 0,
            dropped_filtered: 0,
            dropped_loopback: 0,
            partitions_started: 0,
            partitions_healed: 0,
            clogs_started: 0,
            delivered_by_command: [0; 256],
        }
    }
}

impl NetworkStats {
    /// Packets that have reached a final fate (everything except those still queued).
    pub fn finished(&self) -> u64 {
        self.delivered
            + self.lost
            + self.evicted
            + self.dropped_crashed
            + self.dropped_partitioned
            + self.dropped_filtered
            + self.dropped_loopback
    }

    /// Whether every packet that entered the network is accounted for, given how
    /// many are still `queued`: `submitted + replayed == finished + queued`.
    pub fn accounted(&self, queued: usize) -> bool {
        self.submitted + self.replayed == self.finished() + queued as u64
    }
}

impl fmt::Display for NetworkStats {
    /// One line with every total except the per-command table.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "submitted={} delivered={} lost={} replayed={} corrupted={} evicted={} \
             dropped_crashed={} dropped_partitioned={} dropped_filtered={} dropped_loopback={} \
             partitions_started={} partitions_healed={} clogs_started={}",
            self.submitted,
            self.delivered,
            self.lost,
            self.replayed,
            self.corrupted,
            self.evicted,
            self.dropped_crashed,
            self.dropped_partitioned,
            self.dropped_filtered,
            self.dropped_loopback,
            self.partitions_started,
            self.partitions_healed,
            self.clogs_started,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounting_balances_submitted_and_replayed_against_fates_and_queue() {
        let stats = NetworkStats {
            submitted: 10,
            replayed: 2,
            delivered: 6,
            lost: 1,
            evicted: 1,
            dropped_crashed: 1,
            ..NetworkStats::default()
        };
        assert_eq!(stats.finished(), 9);
        assert!(stats.accounted(3));
        assert!(!stats.accounted(2));
        assert!(stats.to_string().starts_with("submitted=10 delivered=6 lost=1"));
    }
}
