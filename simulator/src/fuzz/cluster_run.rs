//! The consensus planes (metadata, partition, mixed, uniform, lifecycle): a simulated
//! cluster of nodes under the workload, judged by the per-tick checks, a state checker
//! per group, the drain and the oracle.

use std::cell::RefCell;
use std::io::{self, Write};
use std::rc::Rc;

use std::collections::BTreeSet;

use cluster::node::{Directory, METADATA_GROUP};
use cluster::vsr::{StateMachine, Status};

use super::args::Plane;
use super::outage::{OUTAGE_DARK_TICKS, OUTAGE_QUIET_TICKS_MAX, OUTAGE_RECOVERY_TICKS_MAX, Outages};
use super::{FuzzArgs, RunReport, Verdict, print_packets, print_world};
use crate::fault_schedule::{Fault, FaultEvent, FaultSchedule};
use crate::harness::crash::CrashConfig;
use crate::harness::{CheckFailure, Harness, HarnessConfig, StorageModel};
use crate::profile::StorageRates;
use crate::seeds::SimSeeds;
use crate::simulation::SimulationConfig;
use crate::workload::{ActionWeights, Contended, LinearizabilityReport, MetadataWorkload};
use cluster::metadata::Durability;

/// With `--shared`, the percent of a client's requests (between plans) that go to the
/// shared objects: a third, so the exact plane still does most of its work.
pub const SHARED_REQUEST_PERCENT: u64 = 33;

/// Mixed into the workload seed for the contended driver's own streams, so turning it
/// on moves no draw of the exact workload.
const CONTENDED_SEED_SALT: u64 = 0xC0_7E7D_ED5E_ED01;

/// Ticks the end-of-run drain may take to answer every outstanding request and settle
/// on one view. Generous (200 s of cluster time, forty liveness windows) so that only
/// a real wedge runs it out, and bounded so a wedge fails instead of hanging.
pub const QUIESCE_TICKS_MAX: u64 = 20_000;

/// Whether every live replica is Normal in one view with one primary and caught up
/// with it, for the metadata group and for every partition group in the leader's
/// applied metadata (each hosted by every live node).
pub(super) fn settled(harness: &Harness) -> bool {
    let live = harness.live_replicas();
    let Some((_, leader)) = live
        .iter()
        .find(|(_, r)| r.borrow().is_primary() && r.borrow().status() == Status::Normal)
    else {
        return false;
    };
    let (view, commit, head, directory) = {
        let leader = leader.borrow();
        (
            leader.view(),
            leader.commit_min(),
            leader.head(),
            Directory::from_metadata(leader.state_machine().state()),
        )
    };
    // Everything the leader holds is committed and applied (ops inherited from an
    // earlier view are re-committed first), and every replica has applied it.
    let metadata_settled = head == commit
        && live.iter().all(|(_, r)| {
            let r = r.borrow();
            r.status() == Status::Normal && r.view() == view && r.commit_min() == commit
        });
    metadata_settled
        && directory
            .partitions
            .keys()
            .all(|group| partition_settled(harness, *group, live.len()))
}

/// Whether `group` is hosted by all `live` nodes, all Normal in one view, with one
/// primary that has committed everything it holds, and every replica has applied that.
fn partition_settled(harness: &Harness, group: u64, live: usize) -> bool {
    let replicas = harness.partition_replicas(group);
    let mut primaries = replicas.iter().filter(|(_, r)| r.is_primary());
    let (Some((_, primary)), None) = (primaries.next(), primaries.next()) else {
        return false;
    };
    replicas.len() == live
        && primary.head() == primary.commit_max()
        && replicas.iter().all(|(_, r)| {
            r.status() == Status::Normal
                && r.view() == primary.view()
                && r.commit_min() == primary.commit_max()
                && r.commit_max() == primary.commit_max()
        })
}

/// Run a consensus plane and judge it.
pub(super) fn run(
    args: &FuzzArgs,
    config: &SimulationConfig,
    profile_storage: StorageRates,
    schedule: Option<&FaultSchedule>,
    report: &mut RunReport,
    out: &mut dyn Write,
) -> io::Result<()> {
    let seeds = SimSeeds::derive(report.seed);
    let contended_plane = args.plane == Plane::Contended;
    let weights = if contended_plane {
        // Every request after the login goes to the shared objects.
        ActionWeights::from_fn(|_| 0)
    } else {
        ActionWeights::for_plane(args.plane.name()).expect("every consensus plane has a weight table")
    };
    let mut workload = MetadataWorkload::with_weights(seeds.workload, config.clients, weights);
    workload.set_requests_max(args.requests_max);
    if contended_plane || args.shared {
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
    let workload = Rc::new(RefCell::new(workload));
    let harness_config = HarnessConfig {
        simulation: config.clone(),
        crash: CrashConfig {
            crash_probability: args.crash_prob,
            restart_probability: args.restart_prob,
            crash_primary: args.crash_primary,
            at_moments: args.crash_moments,
        },
        break_check: args.break_check,
        break_fence: args.break_fence,
        storage: args.storage,
        power_loss_probability: args.power_loss_prob,
        journal: args.journal(),
        storage_faults: args.storage_faults(profile_storage),
        storage_break: args.break_storage,
        buggify: if args.buggify {
            draw_buggify(report.seed)
        } else {
            cluster::vsr::Buggify::OFF
        },
    };
    let mut harness = Harness::new(report.seed, &harness_config, workload.clone());
    print_world(harness.simulation(), out)?;
    if args.buggify {
        writeln!(out, "buggify: {}", harness_config.buggify.describe())?;
    }
    writeln!(
        out,
        "crashes: crash_prob={} restart_prob={} crash_primary={} power_loss_prob={} storage={}",
        args.crash_prob, args.restart_prob, args.crash_primary, args.power_loss_prob, args.storage
    )?;
    let storage_faults = args.storage_faults(profile_storage);
    if storage_faults.enabled() && args.storage == StorageModel::Sim {
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
    let mut outages = Outages::new(seeds.storage, args.power_outage_probability(profile_storage));
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
            "outages: power_outage_prob={} (per tick; quiet {OUTAGE_QUIET_TICKS_MAX}, dark {OUTAGE_DARK_TICKS}, recovery \
             {OUTAGE_RECOVERY_TICKS_MAX} ticks at most)",
            args.power_outage_probability(profile_storage)
        )?;
    }

    let mut failure: Option<CheckFailure> = None;
    // `--ticks` of workload: an outage's own ticks (quiet, dark, recovery) come on top.
    for fault_tick in 1..=args.ticks {
        // If this tick fails, `--ticks` of this many reproduces the failure.
        report.failure_fault_ticks = Some(fault_tick);
        if let Err(error) = harness.step() {
            failure = Some(error);
            break;
        }
        if outages.due(harness.simulation().tick()) {
            harness.trace_cluster_fault(
                "outage",
                "every replica loses power (once the cluster is quiet)".to_owned(),
            );
            if let Err(error) = outages.run(&mut harness, &workload) {
                failure = Some(error);
                break;
            }
        }
        if let Some(first) = workload.borrow().failures().first() {
            failure = Some(CheckFailure {
                check: "workload",
                detail: first.clone(),
                tick: harness.simulation().tick(),
            });
            break;
        }
    }
    let ran = harness.simulation().tick();
    if failure.is_none() {
        report.failure_fault_ticks = None;
    }

    // The liveness phase: a healed core of replicas must settle on its own in bounded
    // time (the rest stay down or cut off); then everything heals for the drain.
    let mut liveness = None;
    if failure.is_none() && !args.no_quiesce && !args.no_liveness {
        match super::liveness::run(&mut harness, &workload, report.seed, config.replicas) {
            Ok(outcome) => liveness = Some(outcome),
            Err(error) => failure = Some(error),
        }
    }

    if failure.is_none() && !args.no_quiesce {
        // The drain: no new requests, outstanding ones finish.
        workload.borrow_mut().stop();
        harness.disable_crashes();
        if args.heal_before_quiesce || liveness.is_some() {
            heal(&mut harness);
        }
        let mut drained = false;
        for _ in 0..QUIESCE_TICKS_MAX {
            if workload.borrow().outstanding() == 0 && settled(&harness) {
                drained = true;
                break;
            }
            if let Err(error) = harness.step() {
                failure = Some(error);
                break;
            }
        }
        if failure.is_none() && !drained {
            failure = Some(CheckFailure {
                check: "drain",
                detail: format!(
                    "after {QUIESCE_TICKS_MAX} ticks of drain, {} requests are outstanding and the cluster has {}settled on one view",
                    workload.borrow().outstanding(),
                    if settled(&harness) { "" } else { "not " }
                ),
                tick: harness.simulation().tick(),
            });
        }
        if failure.is_none()
            && let Some(first) = workload.borrow().failures().first()
        {
            failure = Some(CheckFailure {
                check: "workload",
                detail: first.clone(),
                tick: harness.simulation().tick(),
            });
        }
    }

    // The run's last ticks in full, whatever the interval of full checks: every group,
    // quiet or not (see `FULL_CHECK_INTERVAL_TICKS`).
    if failure.is_none()
        && let Err(error) = harness.check_in_full()
    {
        failure = Some(error);
    }

    // Every shared object's history against its sequential model (answers still open
    // count as unknown outcomes). After a drain, each shared partition's final log (on
    // its primary) settles what it can of the sends whose outcome was unknown.
    if failure.is_none()
        && !args.no_quiesce
        && let Some(contended) = workload.borrow_mut().contended_mut()
    {
        let tick = harness.simulation().tick();
        if let Err(detail) = contended.settle_with_final_logs(tick, |group| final_log(&harness, group)) {
            failure = Some(CheckFailure {
                check: "linearizability",
                detail,
                tick,
            });
        }
    }
    let linearizability: Option<LinearizabilityReport> = workload.borrow().contended().map(Contended::check);
    if failure.is_none()
        && let Some(violation) = linearizability.as_ref().and_then(|report| report.violation.clone())
    {
        failure = Some(CheckFailure {
            check: "linearizability",
            detail: violation,
            tick: harness.simulation().tick(),
        });
    }

    if let Some(outcome) = &liveness {
        writeln!(
            out,
            "liveness: core {:?} settled {} groups and answered every request in {} ticks (bound {})",
            outcome.core,
            outcome.groups,
            outcome.ticks,
            super::liveness::LIVENESS_TICKS_MAX
        )?;
    }
    report.ticks = harness.simulation().tick();
    report.requests = workload.borrow().handed_out();
    report.faults = FaultSchedule::new(
        harness
            .faults_made()
            .into_iter()
            .chain(outages.made().iter().map(|&tick| FaultEvent {
                tick,
                fault: Fault::Outage,
            }))
            .collect(),
    );
    report.polls = harness.simulation().executor().totals().0;
    report.group_ticks = harness.group_ticks();
    report.schedule_hash = harness.simulation().executor().schedule_hash();

    let clients = harness.client_stats();
    let sum = |field: fn(&crate::harness::client::ClientStats) -> u64| clients.iter().map(field).sum::<u64>();
    let down = harness.simulation().process_count() - config.clients - harness.live_replicas().len();
    writeln!(
        out,
        "ran {ran} ticks (+{} drain); requests={} replies={} resends={} redirects={} not_accepted={} not_committed={} stale_replies={}; crashes={} power_losses={} restarts={} still down: {down}",
        report.ticks - ran,
        sum(|c| c.requests),
        sum(|c| c.replies),
        sum(|c| c.resends),
        sum(|c| c.redirects),
        sum(|c| c.refusals),
        sum(|c| c.not_committed),
        sum(|c| c.replies_stale),
        harness.stats().crashes,
        harness.stats().power_losses,
        harness.stats().restarts,
    )?;
    if args.crash_moments {
        let counts = harness.stats().moment_crashes;
        let named: Vec<String> = crate::harness::crash::Moment::ALL
            .iter()
            .zip(counts)
            .map(|(moment, count)| format!("{}={count}", moment.name()))
            .collect();
        writeln!(out, "crash moments: {}", named.join(" "))?;
    }
    print_packets(harness.simulation(), out)?;
    writeln!(out, "{}", report.faults.summary())?;
    if outages.enabled() {
        writeln!(out, "{}", outages.stats)?;
    }
    let storage_counts = harness.storage_fault_counts();
    if args.storage == StorageModel::Sim {
        writeln!(out, "{storage_counts}")?;
    }
    let catch_up = harness.catch_up();
    report.checkpoints = catch_up.checkpoints;
    report.transfers_installed = catch_up.transfers_installed;
    let (peak_entries, peak_bytes) = harness.journal_peak();
    writeln!(
        out,
        "{catch_up} checkpoint_states_compared={} journal_peak_entries={peak_entries} journal_peak_bytes={peak_bytes}",
        harness.checkpoints_compared()
    )?;
    let mut nodes = cluster::node::NodeStats::default();
    for (_, node) in harness.live_nodes() {
        nodes += node.stats();
    }
    writeln!(
        out,
        "nodes (live, this incarnation): router_hops={} unknown_group_frames={} rejected_headers={} groups_opened={} \
         groups_closed={} forwards_dropped_full={}",
        nodes.shard.frames_routed,
        nodes.shard.frames_unknown_group,
        nodes.shard.frames_rejected,
        nodes.shard.groups_opened,
        nodes.shard.groups_closed,
        nodes.forwards_dropped_full
    )?;
    writeln!(
        out,
        "sessions: binds_sent={} binds_refused={} unbound_refusals={} denied={} (nodes, this incarnation: binds={} \
         binds_refused={} unbound={} denied={} parked={} parked_expired={} parked_full={})",
        sum(|c| c.binds),
        sum(|c| c.binds_refused),
        sum(|c| c.unbound),
        sum(|c| c.denied),
        nodes.shard.binds,
        nodes.shard.binds_refused,
        nodes.shard.requests_unbound,
        nodes.shard.requests_denied,
        nodes.shard.requests_parked,
        nodes.shard.requests_parked_expired,
        nodes.shard.requests_parked_full
    )?;

    let oracle = if failure.is_none() {
        oracle(&harness, &workload.borrow())
    } else {
        Ok(Vec::new())
    };
    let (commits, compared) = (harness.commits_total(), harness.ops_compared_total());
    report.commits = commits;
    report.ops_compared = compared;
    let mut compared_line = format!(
        "compared: commits={commits} ops_compared={compared} metadata_commits={} groups_checked={}",
        harness.checker().commits(),
        harness.checkers().len()
    );
    match &oracle {
        Ok(counts) => {
            for (name, value) in counts {
                compared_line.push_str(&format!(" {name}={value}"));
            }
        }
        Err(detail) => {
            failure = Some(CheckFailure {
                check: "oracle",
                detail: detail.clone(),
                tick: harness.simulation().tick(),
            });
        }
    }
    writeln!(out, "{compared_line}")?;
    let report_of_workload = workload.borrow().report();
    writeln!(out, "{report_of_workload}")?;
    if let Some(linearizability) = &linearizability {
        let requests: Vec<String> = workload
            .borrow()
            .contended()
            .map(|contended| {
                contended
                    .requests()
                    .iter()
                    .map(|(kind, count)| format!("{}={count}", kind.name()))
                    .collect()
            })
            .unwrap_or_default();
        writeln!(out, "contended: {}", requests.join(" "))?;
        writeln!(out, "{linearizability}")?;
    }
    let outcomes: Vec<String> = report_of_workload
        .outcomes
        .iter()
        .map(|((action, outcome), count)| format!("{action}/{outcome:?}={count}"))
        .collect();
    writeln!(out, "outcomes: {}", outcomes.join(" "))?;
    for line in harness.status_lines() {
        writeln!(out, "{line}")?;
    }
    let mut replies = crate::executor::Fnv1a64::default();
    for client in &clients {
        replies.write(&client.reply_hash.to_le_bytes());
    }
    writeln!(
        out,
        "schedule_hash={:#018x} reply_hash={:#018x} polls={}",
        report.schedule_hash,
        replies.finish(),
        report.polls
    )?;

    // An exhausted search is its own verdict: never a pass.
    let undecided = linearizability.as_ref().and_then(|report| report.undecided.clone());
    report.failure_tick = failure.as_ref().map(|failure| failure.tick);
    report.trace = harness.finish_trace(failure.as_ref());
    report.verdict = match failure {
        Some(failure) => Verdict::Failed(failure.to_string()),
        None if commits < args.min_commits => Verdict::Vacuous(format!(
            "{commits} committed ops, below --min-commits {}",
            args.min_commits
        )),
        None if compared < args.min_ops_compared => Verdict::Vacuous(format!(
            "{compared} ops compared, below --min-ops-compared {}",
            args.min_ops_compared
        )),
        None if storage_faults.enabled() && args.storage == StorageModel::Sim && storage_counts.vacuous() => {
            Verdict::Vacuous(format!(
                "disk faults were asked for and the budget let the run expect {:.1} of them, but none was injected",
                storage_counts.expected
            ))
        }
        None if storage_faults.unsafe_budget => Verdict::Vacuous(
            "--storage-faults unsafe lifts the fault budget: an exploration run is reported, never counted as a pass"
                .to_owned(),
        ),
        None if args.asks_for_checkpoints() && catch_up.checkpoints == 0 => Verdict::Vacuous(format!(
            "asked for a small journal (--journal-slots {} --ring-entries {}) but no checkpoint was taken",
            args.journal_slots, args.ring_entries
        )),
        None if linearizability.as_ref().is_some_and(|report| report.operations == 0) => {
            Verdict::Vacuous("the run checked no operation on the shared objects for linearizability".to_owned())
        }
        None if undecided.is_some() => {
            Verdict::Vacuous(format!("linearizability undecided: {}", undecided.unwrap_or_default()))
        }
        None if contended_plane => Verdict::Pass,
        None => match workload.borrow().defining_outcome_missing(args.plane.name()) {
            Some(missing) => Verdict::Vacuous(format!("the {} plane never saw {missing}", args.plane.name())),
            None => Verdict::Pass,
        },
    };
    Ok(())
}

/// Mixed into the run's seed to draw the buggify knobs from a stream of their own.
const BUGGIFY_SEED_SALT: u64 = 0xB066_1F1E_5EED_0001;

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

/// The messages of the partition replicated by `group`, as (offset, id), and its next
/// offset, on its one live Normal primary; `None` without exactly one.
fn final_log(harness: &Harness, group: u64) -> Option<(Vec<(u64, u128)>, u64)> {
    let replicas = harness.partition_replicas(group);
    let mut primaries = replicas
        .iter()
        .filter(|(_, replica)| replica.is_primary() && replica.status() == Status::Normal);
    let (Some((_, primary)), None) = (primaries.next(), primaries.next()) else {
        return None;
    };
    let state = primary.state_machine().state();
    let messages = state
        .log()
        .segments()
        .iter()
        .flat_map(|segment| segment.messages())
        .map(|message| (message.offset, message.id))
        .collect();
    Some((messages, state.next_offset()))
}

/// Heal the network and restart every crashed replica (`--heal-before-quiesce`).
fn heal(harness: &mut Harness) {
    harness.simulation_mut().network_mut().calm();
    let live: Vec<usize> = harness.live_replicas().iter().map(|(index, _)| *index).collect();
    let replicas = harness.simulation().process_count() - harness.client_stats().len();
    for index in (0..replicas).filter(|index| !live.contains(index)) {
        harness.restart_now(index, 0x4EA1_0000 + index as u64);
    }
}

/// The end-of-run oracle. Metadata: no live replica ahead of the leader, replicas at
/// the leader's op hold identical metadata (sessions included) and identical client
/// tables (deduplication entries and replies), and (one client, nothing outstanding)
/// the leader's metadata is what the shadow predicted. Partitions, for every partition
/// in the leader's applied metadata: exactly one live primary; replicas at the
/// primary's op hold identical partition state and client tables; and (one client) the primary's messages,
/// offsets and owners are what the shadow predicted, and the shadow and the cluster
/// agree on which partitions exist. Returns what it compared.
fn oracle(harness: &Harness, workload: &MetadataWorkload) -> Result<Vec<(&'static str, u64)>, String> {
    let live = harness.live_replicas();
    let Some((leader_index, leader)) = live
        .iter()
        .find(|(_, r)| r.borrow().is_primary() && r.borrow().status() == Status::Normal)
    else {
        return Ok(vec![("replicas_compared", 0)]);
    };
    let leader = leader.borrow();
    let mut replicas_compared = 0;
    for (index, replica) in &live {
        let replica = replica.borrow();
        if replica.commit_min() > leader.commit_min() {
            return Err(format!(
                "replica {index} applied op {} ahead of the leader (replica {leader_index}) at {}",
                replica.commit_min(),
                leader.commit_min()
            ));
        }
        if replica.commit_min() == leader.commit_min() {
            if replica.state_machine().digest() != leader.state_machine().digest() {
                return Err(format!(
                    "replica {index} and the leader (replica {leader_index}) applied the same {} ops but hold different metadata",
                    leader.commit_min()
                ));
            }
            if replica.client_table_digest() != leader.client_table_digest() {
                return Err(format!(
                    "replica {index} and the leader (replica {leader_index}) applied the same {} metadata ops but hold \
                     different client tables (deduplication entries and replies)",
                    leader.commit_min()
                ));
            }
            replicas_compared += 1;
        }
    }
    let mut counts = vec![("replicas_compared", replicas_compared), ("view", leader.view())];

    // Partitions: one primary each, replicas that applied the same ops agree.
    let directory = Directory::from_metadata(leader.state_machine().state());
    let mut partition_replicas_compared = 0;
    let mut primaries: Vec<(u64, usize)> = Vec::new();
    for group in directory.partitions.keys() {
        let replicas = harness.partition_replicas(*group);
        let leading: Vec<usize> = replicas
            .iter()
            .filter(|(_, r)| r.is_primary() && r.status() == Status::Normal)
            .map(|(index, _)| *index)
            .collect();
        let [primary_index] = leading[..] else {
            return Err(format!(
                "partition group {group:#x} has {} live primaries (replicas {leading:?}); it must have exactly one",
                leading.len()
            ));
        };
        primaries.push((*group, primary_index));
        let Some((_, primary)) = replicas.iter().find(|(index, _)| *index == primary_index) else {
            unreachable!("the primary is one of the group's replicas")
        };
        let (primary_commit, primary_digest, primary_clients) = (
            primary.commit_min(),
            primary.state_machine().digest(),
            primary.client_table_digest(),
        );
        for (index, replica) in &replicas {
            if replica.commit_min() > primary_commit {
                return Err(format!(
                    "partition group {group:#x}: replica {index} applied op {} ahead of its primary (replica {primary_index}) at {primary_commit}",
                    replica.commit_min(),
                ));
            }
            if replica.commit_min() == primary_commit {
                if replica.state_machine().digest() != primary_digest {
                    return Err(format!(
                        "partition group {group:#x}: replica {index} and its primary (replica {primary_index}) applied the same {primary_commit} ops but hold different partition state",
                    ));
                }
                if replica.client_table_digest() != primary_clients {
                    return Err(format!(
                        "partition group {group:#x}: replica {index} and its primary (replica {primary_index}) applied the same {primary_commit} ops but hold different client tables (deduplication entries and replies)",
                    ));
                }
                partition_replicas_compared += 1;
            }
        }
    }
    counts.push(("partitions", directory.partitions.len() as u64));
    counts.push(("partition_replicas_compared", partition_replicas_compared));
    let partition_ops_compared: u64 = harness
        .checkers()
        .iter()
        .filter(|(group, _)| **group != METADATA_GROUP)
        .map(|(_, checker)| checker.ops_compared())
        .sum();
    counts.push(("partition_ops_compared", partition_ops_compared));

    // Without a drain (--no-quiesce) a request may still be in flight; the shadow can
    // only be compared once every answer is in.
    if workload.outstanding() > 0 {
        counts.push(("shadow_skipped", 1));
        return Ok(counts);
    }
    // Every client keeps to its own namespace, so after the drain the shadow is exact
    // whatever the number of clients.
    let shadow = workload.compare_with(leader.state_machine().state())?;
    counts.extend([
        ("shadow_skipped", 0),
        ("streams_compared", shadow.streams_compared),
        ("topics_compared", shadow.topics_compared),
        ("partitions_compared", shadow.partitions_compared),
        ("groups_compared", shadow.groups_compared),
        ("users_compared", shadow.users_compared),
        ("tokens_compared", shadow.tokens_compared),
    ]);
    let shared: BTreeSet<u64> = workload
        .contended()
        .map(Contended::partition_groups)
        .unwrap_or_default()
        .into_iter()
        .collect();
    let expected: BTreeSet<u64> = workload
        .partition_groups()
        .into_iter()
        .chain(shared.iter().copied())
        .collect();
    let actual: BTreeSet<u64> = directory.partitions.keys().copied().collect();
    if expected != actual {
        return Err(format!(
            "the shadow expects partition groups {:?} but the leader's metadata has {:?}",
            expected.difference(&actual).collect::<Vec<_>>(),
            actual.difference(&expected).collect::<Vec<_>>()
        ));
    }
    let (mut namespaces_checked, mut messages_compared, mut offsets_compared, mut owners_compared) = (0, 0, 0, 0);
    for (group, primary_index) in primaries {
        if shared.contains(&group) {
            // Judged by its history, not by the exact shadow.
            continue;
        }
        let replicas = harness.partition_replicas(group);
        let Some((_, primary)) = replicas.iter().find(|(index, _)| *index == primary_index) else {
            unreachable!("the primary was just seen")
        };
        let compared = workload
            .compare_partition(group, primary.state_machine().state())
            .map_err(|detail| format!("partition group {group:#x}: {detail}"))?;
        namespaces_checked += 1;
        messages_compared += compared.messages_compared;
        offsets_compared += compared.offsets_compared;
        owners_compared += compared.owners_compared;
    }
    counts.extend([
        ("namespaces_checked", namespaces_checked),
        ("messages_compared", messages_compared),
        ("offsets_compared", offsets_compared),
        ("owners_compared", owners_compared),
    ]);
    Ok(counts)
}
