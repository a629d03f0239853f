//! Disk faults inside a cluster run and their budget: which replica's disk may fail
//! and when (errors on one replica at a time, for `DISK_ERROR_WINDOW_TICKS` each,
//! while more than a quorum is up and rejoined), which replica's files may rot at its
//! restarts (one per run), and the `storage-faults:` counts.
//!
//! It does not inject the faults itself: the simulated disks (`crate::storage`) do,
//! at the rates set here.

use super::*;
use crate::fault_schedule::{DiskErrorsOn, Fault, FaultEvent};
use crate::storage::{FaultRates, InjectedFaults, PARTS_PER_MILLION};
use cluster::storage::superblock::{self};
use std::collections::BTreeSet;

/// Ticks each replica in turn is the one whose disk may fail (see [`StorageFaults`]):
/// long enough for several writes and syncs, short enough that every replica, the
/// primary included, gets its turn many times in a run.
pub const DISK_ERROR_WINDOW_TICKS: u64 = 200;

/// Longest stall one slow disk call causes, in ticks (the draw is uniform from 1):
/// 400 ms of a node blocked in one fsync, a disk limping badly but not dead. Longer
/// than a primary's commit heartbeat, shorter than the backups' liveness window, so a
/// single slow call delays the group and a run of them forces a view change.
pub const SLOW_IO_TICKS_MAX: u64 = 40;

/// Most transient read errors a simulated disk returns in a row within the budget: one
/// fewer than the cluster's read attempts (`cluster::storage::read_retry::READ_ATTEMPTS_MAX`),
/// so a budgeted read error is always outlasted and never turns into damage on a
/// replica the corruption budget did not choose.
pub const READ_ERRORS_IN_A_ROW_MAX: u32 = cluster::storage::read_retry::READ_ATTEMPTS_MAX - 1;

/// Faults a run must have been able to expect before getting none makes it vacuous: at
/// fifteen expected (Poisson), none arriving has odds of about 1 in 3.3 million, so a
/// run that sees none points at the fault machinery, not at luck, even across a
/// campaign. (It was five, odds of 1 in 148 per run: CI's 450-run catch-up campaign
/// drew such a run by luck, `--seed 146 ... --journal-slots 80 --ring-entries 80`,
/// 5.1 expected, once the query confirmation round moved its schedule; a nightly of
/// thousands of runs would draw dozens.)
pub const DISK_FAULTS_EXPECTED_MIN: f64 = 15.0;

/// One rot in this many hits a publish frontier or a superblock instead of a WAL or a
/// checkpoint (see `maybe_rot`).
const ROT_STRUCTURES_ONE_IN: u64 = 4;

/// Salts the storage seed into the draw of the corruptible replica.
pub(super) const CORRUPTIBLE_SALT: u64 = 0xC0FF_EE00_5EED_0001;

/// Salts the storage seed into the corruption coin's stream.
pub(super) const CORRUPTION_SALT: u64 = 0xC0FF_EE00_5EED_0002;

/// Disk faults a cluster run injects on its simulated disks, and the budget that keeps
/// every failure a bug rather than bad luck.
///
/// Errors may hit any replica, primaries included: a write or a sync refused with EIO
/// (a refused sync drops the file's dirty pages, errseq style). The cluster's answer is to stop the replica and fail-stop its
/// node (publishing what its healthy stores hold); the harness's supervisor starts it
/// again on the same disk. A restart costs a `replicated` partition whatever it had
/// not published (by design: such a write is safe while some replica that holds it
/// stays up), so errors are budgeted like crashes: one replica at a time may be hit,
/// each in turn for [`DISK_ERROR_WINDOW_TICKS`], and only while more than a quorum of
/// replicas are up and rejoined.
///
/// Corruption is budgeted: the protocol repairs a damaged record from a peer that
/// holds it, so no op may be damaged on more replicas than the rest can cover. The
/// budget here is the simplest that holds for every cluster size: one replica per run,
/// drawn from the storage stream (the *corruptible* replica), may have bits of its WAL,
/// checkpoint, publish-frontier and superblock files rot; a bit rots, with
/// `corruption_probability`, each time that replica restarts, before it boots (latent
/// corruption found by the boot's read). A superblock rots only while all its copies
/// are intact, so boot always has the others.
///
/// Reads fail like writes (one replica at a time, and at any replica's boot) but stay
/// transient ([`READ_ERRORS_IN_A_ROW_MAX`]). Slowness ([`SLOW_IO_TICKS_MAX`]) damages
/// nothing and hits anyone.
/// With `unsafe_budget`, errors hit every replica at once, a background writeback may
/// fail (dropping dirty pages silently until the file's next sync), any replica may rot
/// and writes may be misdirected: such runs explore, and are reported, never counted as
/// passes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StorageFaults {
    /// Probability that one write, sync or background writeback fails with EIO.
    pub error_probability: f64,
    /// Probability, per restart of a replica the budget allows, that a bit of its WAL
    /// rots before it boots.
    pub corruption_probability: f64,
    /// Probability that one write or sync of any replica's disk is slow (see
    /// [`SLOW_IO_TICKS_MAX`]); slowness corrupts nothing, so it is outside the budget.
    pub slow_probability: f64,
    /// Lift the budget (see above).
    pub unsafe_budget: bool,
}

impl StorageFaults {
    /// Whether any fault is asked for.
    pub fn enabled(&self) -> bool {
        self.error_probability > 0.0 || self.corruption_probability > 0.0 || self.slow_probability > 0.0
    }

    /// The disk's random rates, in parts per million.
    pub(super) fn rates(&self) -> FaultRates {
        let ppm = |probability: f64| (probability * f64::from(PARTS_PER_MILLION)).round() as u32;
        let error = ppm(self.error_probability);
        FaultRates {
            write_error_probability: error,
            sync_error_probability: error,
            // A failed background writeback drops dirty pages silently, to be reported
            // at the file's next sync, possibly long after this replica's turn: a
            // `replicated` partition would lose its unpublished tail while the budget
            // counts the replica as whole. Only the unsafe mode injects it.
            writeback_failure_probability: if self.unsafe_budget { error } else { 0 },
            misdirected_write_probability: if self.unsafe_budget {
                ppm(self.corruption_probability / 100.0)
            } else {
                0
            },
            read_error_probability: error,
            // Budgeted read errors are transient: fewer in a row than the cluster's
            // read attempts, so none becomes damage a peer must cover. Unsafe runs lift
            // the bound (an unreadable page is read as damaged, on any replica).
            read_errors_in_a_row_max: if self.unsafe_budget {
                u32::MAX
            } else {
                READ_ERRORS_IN_A_ROW_MAX
            },
            slow_probability: ppm(self.slow_probability),
            slow_ticks_max: SLOW_IO_TICKS_MAX,
        }
    }

    /// The rates every replica's disk has whoever's turn it is to fail: slowness, and
    /// (unsafe only) misdirected writes.
    pub(super) fn rates_for_everyone(&self) -> FaultRates {
        let rates = self.rates();
        FaultRates {
            misdirected_write_probability: rates.misdirected_write_probability,
            slow_probability: rates.slow_probability,
            slow_ticks_max: rates.slow_ticks_max,
            ..FaultRates::default()
        }
    }
}

/// Whose disks the budget lets fail (see [`StorageFaults`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ErrorsOn {
    /// Nobody's: too few replicas are whole, or errors are off.
    Nobody,
    /// The one replica whose turn it is.
    One(usize),
    /// Everyone's (`--storage-faults unsafe`).
    Everyone,
}

/// What the run's disks suffered and what the cluster made of it, over every replica
/// and incarnation (the `storage-faults:` line).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StorageFaultCounts {
    /// Storage calls made on every disk.
    pub calls: u64,
    /// Faults the budget let the run expect: writes and syncs exposed to errors times
    /// the error probability, plus the corruptible replica's restarts times the
    /// corruption probability.
    pub expected: f64,
    /// Faults injected by the disks.
    pub injected: InjectedFaults,
    /// Damaged records found at boot (held but unknown).
    pub detected: u64,
    /// Logs that booted with damaged records and were replaced by a view's log, then
    /// repaired from peers.
    pub repaired: u64,
    /// Logs that booted incomplete for any reason (damage, or a partition WAL's
    /// unpublished tail discarded) and were replaced by a view's log.
    pub incomplete_replaced: u64,
    /// Replicas that stopped on a storage failure.
    pub stopped: u64,
    /// Nodes that fail-stopped (and were restarted by the supervisor).
    pub fail_stops: u64,
}

impl StorageFaultCounts {
    /// Every fault injected, of every kind.
    pub fn injected_total(&self) -> u64 {
        self.injected.total()
    }

    /// Whether the run asked for disk faults, the budget allowed enough of them that
    /// at least one was all but certain ([`DISK_FAULTS_EXPECTED_MIN`]), and none came:
    /// the fault machinery did not work, and the run tested less than it claims.
    pub fn vacuous(&self) -> bool {
        self.expected >= DISK_FAULTS_EXPECTED_MIN && self.injected_total() == 0
    }
}

impl std::fmt::Display for StorageFaultCounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = self.injected;
        write!(
            f,
            "storage-faults: calls={} exposed_calls={} expected={:.1} injected write_errors={} sync_errors={} read_errors={} slow_calls={} \
             writeback_failures={} misdirected_writes={} corruptions={} torn_writes={}; detected damaged_records={}; repaired damaged_logs={} (incomplete_logs={}); stopped \
             replicas={} fail_stops={}",
            self.calls,
            i.exposed_calls,
            self.expected,
            i.write_errors,
            i.sync_errors,
            i.read_errors,
            i.slow_calls,
            i.writeback_failures,
            i.misdirected_writes,
            i.corruptions,
            i.torn_writes,
            self.detected,
            self.repaired,
            self.incomplete_replaced,
            self.stopped,
            self.fail_stops
        )
    }
}

impl Harness {
    /// Faults replica `index`'s disk has injected so far (0 for in-memory stores).
    pub(super) fn injected_on(&self, index: usize) -> u64 {
        match &self.slots[index].disk {
            Disk::Sim(storage) => storage.injected().total(),
            Disk::Memory(_) => 0,
        }
    }

    /// The replica whose WAL may rot under the budget (see [`StorageFaults`]).
    pub fn corruptible_replica(&self) -> usize {
        self.corruptible
    }

    /// The `storage-faults:` counts so far.
    pub fn storage_fault_counts(&self) -> StorageFaultCounts {
        let catch_up = self.catch_up();
        let mut injected = InjectedFaults::default();
        let mut calls = 0;
        for slot in &self.slots {
            if let Disk::Sim(storage) = &slot.disk {
                calls += storage.operations();
                injected = injected.plus(&storage.injected());
            }
        }
        StorageFaultCounts {
            calls,
            expected: injected.exposed_calls as f64 * self.storage_faults.error_probability
                + self.rot_chances as f64 * self.storage_faults.corruption_probability,
            injected,
            detected: catch_up.damaged_at_boot,
            repaired: catch_up.damaged_logs_replaced,
            incomplete_replaced: catch_up.incomplete_logs_replaced,
            stopped: catch_up.storage_failures,
            fail_stops: self.stats.fail_stops,
        }
    }

    /// With the budget's leave, rot one bit of replica `index`'s WAL before it boots.
    pub(super) fn maybe_rot(&mut self, index: usize) {
        let probability = self.storage_faults.corruption_probability;
        if !self.crashes_enabled || probability <= 0.0 || !matches!(self.slots[index].disk, Disk::Sim(_)) {
            return;
        }
        if !self.storage_faults.unsafe_budget && index != self.corruptible {
            return;
        }
        self.rot_chances += 1;
        let tick = self.simulation.tick();
        let drawn = self.corruption_rng.chance(probability);
        let rot = match &mut self.replay {
            Some(replay) => replay.rots(tick, index),
            None => drawn,
        };
        if !rot {
            return;
        }
        self.note_fault(FaultEvent {
            tick,
            fault: Fault::Rot { replica: index },
        });
        let Disk::Sim(storage) = &self.slots[index].disk else {
            return;
        };
        // A superblock may rot only while every copy is intact, so boot always has all
        // but one to choose from (four copies, written in two synced halves, so the
        // newest state survives in another copy); rotting more would be beyond the
        // budget: with every copy damaged the replica rightly refuses to boot, for good.
        let whole_superblocks: BTreeSet<String> = storage
            .paths()
            .into_iter()
            .filter(|path| path.ends_with("/superblock"))
            .filter(|path| {
                storage
                    .buffered_bytes(path)
                    .is_some_and(|bytes| superblock::intact_copies(&bytes) == superblock::SUPERBLOCK_COPIES)
            })
            .collect();
        // Three rots in four hit what peers repair (WAL records, checkpoints), one the
        // structures a replica keeps its own copies of (publish frontiers, superblocks):
        // these are many small files, and picked like the rest they would take most
        // hits from the data the protocol has to answer for.
        let structures = self.corruption_rng.below(ROT_STRUCTURES_ONE_IN) == 0;
        if let Some((path, offset)) = storage.corrupt_stable_bit(|path| {
            if structures {
                path.ends_with("/frontier") || whole_superblocks.contains(path)
            } else {
                path.ends_with("/wal") || path.ends_with("/checkpoint")
            }
        }) {
            tracing::info!(replica = index, path, offset, "latent corruption");
        }
    }

    /// Turn disk errors on for the replica whose turn it is, if the cluster can afford
    /// it a restart now, and off for every other (see [`StorageFaults`]).
    pub(super) fn gate_disk_errors(&mut self, tick: u64) {
        let rates = self.storage_faults.rates();
        if !self.crashes_enabled || rates.write_error_probability == 0 {
            return;
        }
        let scheduled = self.replay.as_mut().map(|replay| replay.disk_at(tick));
        let target = match scheduled {
            Some(DiskErrorsOn::Nobody) => ErrorsOn::Nobody,
            Some(DiskErrorsOn::Everyone) if self.storage_faults.unsafe_budget => ErrorsOn::Everyone,
            None if self.storage_faults.unsafe_budget => ErrorsOn::Everyone,
            Some(DiskErrorsOn::Everyone) => ErrorsOn::Nobody,
            Some(DiskErrorsOn::Replica(turn)) if turn >= self.slots.len() => ErrorsOn::Nobody,
            Some(DiskErrorsOn::Replica(turn)) if self.storage_faults.unsafe_budget => ErrorsOn::One(turn),
            // The budget's turn, or the schedule's replica under the budget's rule.
            scheduled => {
                let live = self.wholes().into_iter().filter(|&whole| whole).count();
                let turn = match scheduled {
                    Some(DiskErrorsOn::Replica(turn)) => turn,
                    _ => (tick / DISK_ERROR_WINDOW_TICKS) as usize % self.slots.len(),
                };
                if live > self.quorum_live_min && self.slots[turn].node.is_some() {
                    ErrorsOn::One(turn)
                } else {
                    ErrorsOn::Nobody
                }
            }
        };
        if target == self.errors_on {
            return;
        }
        self.errors_on = target;
        self.note_fault(FaultEvent {
            tick,
            fault: Fault::DiskErrors {
                on: match target {
                    ErrorsOn::Nobody => DiskErrorsOn::Nobody,
                    ErrorsOn::One(replica) => DiskErrorsOn::Replica(replica),
                    ErrorsOn::Everyone => DiskErrorsOn::Everyone,
                },
            },
        });
        for (index, slot) in self.slots.iter().enumerate() {
            if let Disk::Sim(storage) = &slot.disk {
                let on = target == ErrorsOn::Everyone || target == ErrorsOn::One(index);
                storage.set_fault_rates(if on {
                    rates
                } else {
                    self.storage_faults.rates_for_everyone()
                });
            }
        }
    }
}
