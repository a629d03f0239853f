//! The first phase of a consensus run: build the world the flags describe (the
//! workload, the harness with its replicas, clients and fault injectors, the outage
//! coin, a replayed fault schedule) and print its banner.
//!
//! Everything is drawn from the run's seed through `SimSeeds` and a few salted
//! streams of its own, so building the world moves no draw of another phase.

use std::cell::RefCell;
use std::io::{self, Write};
use std::rc::Rc;

use cluster::metadata::Durability;

use super::super::args::Plane;
use super::super::outage::{OUTAGE_DARK_TICKS, OUTAGE_QUIET_TICKS_MAX, OUTAGE_RECOVERY_TICKS_MAX, Outages};
use super::super::{FuzzArgs, print_world};
use crate::fault_schedule::{Fault, FaultSchedule};
use crate::harness::crash::CrashConfig;
use crate::harness::{Harness, HarnessConfig, StorageFaults, StorageModel};
use crate::profile::StorageRates;
use crate::seeds::SimSeeds;
use crate::simulation::SimulationConfig;
use crate::workload::{ActionWeights, Contended, MetadataWorkload};

/// With `--shared`, the percent of a client's requests (between plans) that go to the
/// shared objects: a third, so the exact plane still does most of its work.
pub const SHARED_REQUEST_PERCENT: u64 = 33;

/// Mixed into the workload seed for the contended driver's own streams, so turning it
/// on moves no draw of the exact workload.
const CONTENDED_SEED_SALT: u64 = 0xC0_7E7D_ED5E_ED01;

/// Mixed into the run's seed to draw the buggify knobs from a stream of their own.
const BUGGIFY_SEED_SALT: u64 = 0xB066_1F1E_5EED_0001;

/// What the later phases act on and read.
pub(super) struct World {
    /// The simulated cluster, its clients and its fault injectors.
    pub harness: Harness,
    /// The clients' workload, shared with the harness's client tasks.
    pub workload: Rc<RefCell<MetadataWorkload>>,
    /// The whole-cluster outage coin (or a replayed schedule's outages).
    pub outages: Outages,
    /// The disk faults the run asked for (within the budget, or lifted).
    pub storage_faults: StorageFaults,
}

/// Build the world and print its banner: the world's seeds and network, the buggify
/// knobs, the crash flags, the disk faults and the outages.
pub(super) fn build(
    args: &FuzzArgs,
    config: &SimulationConfig,
    profile_storage: StorageRates,
    schedule: Option<&FaultSchedule>,
    seed: u64,
    out: &mut dyn Write,
) -> io::Result<World> {
    let seeds = SimSeeds::derive(seed);
    let workload = Rc::new(RefCell::new(workload(args, config, profile_storage, &seeds)));
    let storage_faults = args.storage_faults(profile_storage);
    let harness_config = HarnessConfig {
        simulation: config.clone(),
        crash: CrashConfig {
            crash_probability: args.run.crash_prob,
            restart_probability: args.run.restart_prob,
            crash_primary: args.run.crash_primary,
            at_moments: args.run.crash_moments,
        },
        break_check: args.run.break_check,
        break_fence: args.break_fence,
        storage: args.run.storage,
        power_loss_probability: args.run.power_loss_prob,
        journal: args.journal(),
        storage_faults,
        storage_break: args.run.break_storage,
        buggify: if args.run.buggify {
            draw_buggify(seed)
        } else {
            cluster::vsr::Buggify::OFF
        },
    };
    let mut harness = Harness::new(seed, &harness_config, workload.clone());
    harness.keep_fault_events(args.keeps_fault_schedule());
    harness.set_branches(args.branch.clone());
    print_world(harness.simulation(), out)?;
    if !args.branch.is_empty() {
        writeln!(
            out,
            "timeline: branches at {} (tick:salt; every choice stream reseeded as each tick starts)",
            args.branch
        )?;
    }
    if args.run.buggify {
        writeln!(out, "buggify: {}", harness_config.buggify.describe())?;
    }
    writeln!(
        out,
        "crashes: crash_prob={} restart_prob={} crash_primary={} power_loss_prob={} storage={}",
        args.run.crash_prob, args.run.restart_prob, args.run.crash_primary, args.run.power_loss_prob, args.run.storage
    )?;
    if storage_faults.enabled() && args.run.storage == StorageModel::Sim {
        writeln!(
            out,
            "disk faults: error_prob={} corruption_prob={} budget={} corruptible_replica={}",
            storage_faults.error_probability,
            storage_faults.corruption_probability,
            if storage_faults.unsafe_budget {
                "lifted (unsafe)"
            } else {
                "one corruptible replica"
            },
            harness.corruptible_replica()
        )?;
    }

    if args.trace.is_some() {
        harness.enable_trace();
    }
    let outage_probability = args.power_outage_probability(profile_storage);
    let mut outages = Outages::new(seeds.storage, outage_probability);
    if let Some(schedule) = schedule {
        harness.replay_faults(schedule);
        let outage_ticks: Vec<u64> = schedule
            .events
            .iter()
            .filter(|event| event.fault == Fault::Outage)
            .map(|event| event.tick)
            .collect();
        if outages.enabled() || !outage_ticks.is_empty() {
            outages.replay(outage_ticks);
        }
    }
    if outages.enabled() {
        writeln!(
            out,
            "outages: power_outage_prob={outage_probability} (per tick; quiet {OUTAGE_QUIET_TICKS_MAX}, dark \
             {OUTAGE_DARK_TICKS}, recovery {OUTAGE_RECOVERY_TICKS_MAX} ticks at most)",
        )?;
    }
    Ok(World {
        harness,
        workload,
        outages,
        storage_faults,
    })
}

/// The clients' workload: the plane's weight table, and with `--shared` or the
/// contended plane, the driver that races on shared objects.
fn workload(
    args: &FuzzArgs,
    config: &SimulationConfig,
    profile_storage: StorageRates,
    seeds: &SimSeeds,
) -> MetadataWorkload {
    let contended_plane = args.plane == Plane::Contended;
    let weights = if contended_plane {
        // Every request after the login goes to the shared objects.
        ActionWeights::from_fn(|_| 0)
    } else {
        ActionWeights::for_plane(args.plane.name()).expect("every consensus plane has a weight table")
    };
    let mut workload = MetadataWorkload::with_weights(seeds.workload, config.clients, weights);
    workload.set_requests_max(args.requests_max);
    if contended_plane || args.run.shared {
        // A whole-cluster outage may take back what a `replicated` topic acknowledged
        // (by design); the histories hold every acknowledgement to account, so the
        // shared topic is `persisted` whenever outages may happen.
        let durability = if args.power_outage_probability(profile_storage) > 0.0 {
            Durability::Persisted
        } else {
            Durability::Replicated
        };
        let contended = Contended::new(seeds.workload ^ CONTENDED_SEED_SALT, config.clients, durability);
        let percent = if contended_plane { 100 } else { SHARED_REQUEST_PERCENT };
        workload = workload.with_contended(contended, percent);
    }
    workload
}

/// The knobs of `--buggify`: each on with probability 1/2, then one of three small
/// values (the smallest legal bound, and two a little above it).
fn draw_buggify(seed: u64) -> cluster::vsr::Buggify {
    let mut rng = crate::rng::SimRng::new(seed ^ BUGGIFY_SEED_SALT);
    let mut knob = |off: u64, small: [u64; 3]| {
        if rng.chance(0.5) {
            small[rng.index(small.len())]
        } else {
            off
        }
    };
    let off = cluster::vsr::Buggify::OFF;
    let buggify = cluster::vsr::Buggify {
        pipeline_prepares_max: knob(off.pipeline_prepares_max as u64, [1, 2, 4]) as usize,
        request_queue_max: knob(off.request_queue_max as u64, [1, 2, 4]) as usize,
        repair_window_initial: knob(off.repair_window_initial, [1, 2, 8]),
        liveness_window_ticks: knob(off.liveness_window_ticks, [200, 250, 350]),
        checkpoint_interval_ops_max: knob(off.checkpoint_interval_ops_max, [32, 64, 128]),
        prepare_ok_skip_every: knob(off.prepare_ok_skip_every, [3, 5, 8]),
        queries_waiting_max: knob(off.queries_waiting_max as u64, [1, 2, 4]) as usize,
    };
    buggify.assert_valid();
    buggify
}
