//! The metadata plane: a simulated VSR cluster under the metadata workload, judged by
//! the per-tick checks, the state checker, the drain and the oracle.

use std::cell::RefCell;
use std::io::{self, Write};
use std::rc::Rc;

use cluster::metadata::{DEFAULT_ROOT_PASSWORD, MetadataMachine};
use cluster::vsr::{StateMachine, Status};

use super::{FuzzArgs, RunReport, Verdict, print_packets, print_world};
use crate::harness::crash::CrashConfig;
use crate::harness::{CheckFailure, Harness, HarnessConfig, SIMULATED_CLUSTER_ID};
use crate::seeds::SimSeeds;
use crate::simulation::SimulationConfig;
use crate::workload::{ActionWeights, MetadataWorkload};

/// Ticks the end-of-run drain may take to answer every outstanding request and settle
/// on one view. Generous (200 s of cluster time, forty liveness windows) so that only
/// a real wedge runs it out, and bounded so a wedge fails instead of hanging.
pub const QUIESCE_TICKS_MAX: u64 = 20_000;

/// Whether every live replica is Normal in one view with one primary, and caught up
/// with that primary's applied ops.
fn settled(harness: &Harness<MetadataMachine>) -> bool {
    let live = harness.live_replicas();
    let Some((_, leader)) = live
        .iter()
        .find(|(_, r)| r.borrow().is_primary() && r.borrow().status() == Status::Normal)
    else {
        return false;
    };
    let (view, commit) = {
        let leader = leader.borrow();
        (leader.view(), leader.commit_min())
    };
    live.iter().all(|(_, r)| {
        let r = r.borrow();
        r.status() == Status::Normal && r.view() == view && r.commit_min() == commit
    })
}

/// Run the metadata plane and judge it.
pub(super) fn run(
    args: &FuzzArgs,
    config: &SimulationConfig,
    report: &mut RunReport,
    out: &mut dyn Write,
) -> io::Result<()> {
    let seeds = SimSeeds::derive(report.seed);
    let workload = Rc::new(RefCell::new(MetadataWorkload::with_weights(
        seeds.workload,
        config.clients,
        ActionWeights::metadata_plane(),
    )));
    let harness_config = HarnessConfig {
        simulation: config.clone(),
        crash: CrashConfig {
            crash_probability: args.crash_prob,
            restart_probability: args.restart_prob,
            crash_primary: args.crash_primary,
        },
        break_check: args.break_check,
    };
    let mut harness = Harness::new(
        report.seed,
        &harness_config,
        Box::new(|| MetadataMachine::new(SIMULATED_CLUSTER_ID, DEFAULT_ROOT_PASSWORD)),
        workload.clone(),
    );
    print_world(harness.simulation(), out)?;
    writeln!(
        out,
        "crashes: crash_prob={} restart_prob={} crash_primary={}",
        args.crash_prob, args.restart_prob, args.crash_primary
    )?;

    let mut failure: Option<CheckFailure> = None;
    for _ in 0..args.ticks {
        if let Err(error) = harness.step() {
            failure = Some(error);
            break;
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

    if failure.is_none() && !args.no_quiesce {
        // The drain: no new requests, outstanding ones finish.
        workload.borrow_mut().stop();
        harness.disable_crashes();
        if args.heal_before_quiesce {
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

    report.ticks = harness.simulation().tick();
    report.polls = harness.simulation().executor().totals().0;
    report.schedule_hash = harness.simulation().executor().schedule_hash();

    let clients = harness.client_stats();
    let sum = |field: fn(&crate::harness::client::ClientStats) -> u64| clients.iter().map(field).sum::<u64>();
    let down = harness.simulation().process_count() - config.clients - harness.live_replicas().len();
    writeln!(
        out,
        "ran {ran} ticks (+{} drain); requests={} replies={} resends={} refusals={} stale_replies={}; crashes={} restarts={} still down: {down}",
        report.ticks - ran,
        sum(|c| c.requests),
        sum(|c| c.replies),
        sum(|c| c.resends),
        sum(|c| c.refusals),
        sum(|c| c.replies_stale),
        harness.stats().crashes,
        harness.stats().restarts,
    )?;
    print_packets(harness.simulation(), out)?;

    let oracle = if failure.is_none() {
        oracle(&harness, &workload.borrow())
    } else {
        Ok(Vec::new())
    };
    let (commits, compared) = (harness.checker().commits(), harness.checker().ops_compared());
    report.commits = commits;
    report.ops_compared = compared;
    let mut compared_line = format!("compared: commits={commits} ops_compared={compared}");
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
    writeln!(out, "{}", workload.borrow().report())?;
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
        None => Verdict::Pass,
    };
    Ok(())
}

/// Heal the network and restart every crashed replica (`--heal-before-quiesce`).
fn heal(harness: &mut Harness<MetadataMachine>) {
    let network = harness.simulation_mut().network_mut();
    network.set_automatic_partitions(false);
    network.set_automatic_clogs(false);
    network.heal_now();
    network.unclog_all();
    let live: Vec<usize> = harness.live_replicas().iter().map(|(index, _)| *index).collect();
    let replicas = harness.simulation().process_count() - harness.client_stats().len();
    for index in (0..replicas).filter(|index| !live.contains(index)) {
        harness.restart_now(index, 0x4EA1_0000 + index as u64);
    }
}

/// The end-of-run oracle: no live replica ahead of the leader, replicas at the
/// leader's op hold identical state, and (one client) the leader's metadata is what
/// the shadow predicted. Returns what it compared.
fn oracle(harness: &Harness<MetadataMachine>, workload: &MetadataWorkload) -> Result<Vec<(&'static str, u64)>, String> {
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
            replicas_compared += 1;
        }
    }
    // Without a drain (--no-quiesce) a request may still be in flight; the shadow can
    // only be compared once every answer is in.
    if workload.outstanding() > 0 {
        return Ok(vec![
            ("replicas_compared", replicas_compared),
            ("view", leader.view()),
            ("shadow_skipped", 1),
        ]);
    }
    let shadow = workload.compare_with(leader.state_machine().state())?;
    Ok(vec![
        ("replicas_compared", replicas_compared),
        ("view", leader.view()),
        ("shadow_skipped", u64::from(shadow.skipped)),
        ("streams_compared", shadow.streams_compared),
        ("topics_compared", shadow.topics_compared),
        ("groups_compared", shadow.groups_compared),
        ("users_compared", shadow.users_compared),
        ("tokens_compared", shadow.tokens_compared),
    ])
}
