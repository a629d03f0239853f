//! The per-tick checks: the walk over the groups of every live replica
//! (`Harness::check_groups`), the checks of one group on one replica, and what lets a
//! tick skip them.
//!
//! Every tick the harness checks every group of every live replica (see
//! `Harness::check`): views never go back, applied ops agree with the group's
//! canonical chain, checkpoints agree, a transfer or a replica behind its commit point
//! does not sit still for long. Most groups take no input on most ticks (a node hosts a
//! group per partition), and a group that took none has nothing new to check: its
//! replica's view, status, log, commit points, checkpoint and transfer are what the last
//! check saw. So a group the last check found quiet (no lag clock and no transfer clock
//! running for it) is skipped while its replica's [`Replica::activity`] stays put; one
//! with a clock running is checked at every tick, since a clock fires on time alone.
//!
//! Nor does the harness visit every group to find that out: each shard notes the
//! groups that took a frame or ran a tick (`Shard::take_touched_groups`), and while a
//! node's groups stay the same a tick visits only those and the ones with a clock
//! running ([`walk_hosted_group`]); the others would be skipped anyway. A restart, a
//! group opened or closed, or any watch changed outside a walk brings back a walk over
//! every group.
//!
//! Nothing is checked less: a skipped group's next input brings its check, on the tick
//! of the input, and a full check every [`FULL_CHECK_INTERVAL_TICKS`] (and at the end of
//! a run) checks every group whatever its activity, after verifying that each skipped
//! one is unchanged ([`GroupSeen`]), which fails the run if a change ever came without
//! an input.
//!
//! What it models: nothing. Which groups were skipped never reaches the output or the
//! schedule: the checks read the cluster and never change it.

use std::collections::{BTreeMap, BTreeSet};

use cluster::node::{METADATA_GROUP, Node};
use cluster::vsr::journal::root_header;
use cluster::vsr::{Replica, StateMachine, Status};

use super::catch_up::CheckpointChecker;
use super::retire::checker_of;
use super::state_checker::{CommittedOp, StateChecker};
use super::stores::SimStores;
use super::watches::{GroupSeen, GroupWatch, Quiet, TransferSeen};
use super::{COMMIT_STUCK_TICKS_MAX, CheckFailure, Harness, SIMULATED_CLUSTER_ID, SimReplicaStore};

/// Ticks between full checks, which check every group whatever its activity and verify
/// that each group skipped since is unchanged: 64 ticks (0.64 s simulated). A change
/// that came without an input (a harness or replica bug) fails the run at most this
/// late, far inside the 2,000-tick stuck bound and the 500-tick liveness window; a
/// full check costs what every tick's check cost before groups were skipped, so it adds
/// a sixty-fourth of that.
pub const FULL_CHECK_INTERVAL_TICKS: u64 = 64;

/// Which group, on which replica, in which incarnation.
#[derive(Clone, Copy, Debug)]
pub(super) struct GroupAt {
    pub index: usize,
    pub group: u64,
    pub incarnation: u64,
}

/// One group on one replica at one tick: what every per-group check reads, and the
/// tick its failures are stamped with.
struct Visit<'r, S: StateMachine> {
    at: GroupAt,
    replica: &'r Replica<S, SimReplicaStore>,
    tick: u64,
    /// The replica's activity counter now ([`Replica::activity`]).
    activity: u64,
}

impl<S: StateMachine> Visit<'_, S> {
    /// A failure of `check`, at this visit's tick.
    fn fail(&self, check: &'static str, detail: String) -> CheckFailure {
        CheckFailure {
            check,
            detail,
            tick: self.tick,
        }
    }
}

/// What one tick's checks share across groups.
pub(super) struct GroupChecks<'a> {
    pub checkers: &'a mut BTreeMap<u64, StateChecker>,
    /// Groups whose checkers were retired: none may apply an op again.
    pub retired: &'a BTreeSet<u64>,
    /// Failover timing, told what every visit sees.
    pub failover: &'a mut super::failover::Failover,
    pub checkpoints: &'a mut CheckpointChecker,
    pub tick: u64,
    /// Test only: fail on a committed op whose checksum ends in twelve zero bits.
    pub break_check: bool,
    /// Check every group whatever its activity (see [`FULL_CHECK_INTERVAL_TICKS`]).
    pub full: bool,
    /// The replicas found behind their commit point, for the harness to judge.
    pub lagging: &'a mut Vec<Lagging>,
}

/// A Normal replica of a group that applied nothing this tick while behind its commit
/// point (see `Harness::check`).
pub(super) struct Lagging {
    pub index: usize,
    pub group: u64,
    pub commit_min: u64,
    /// The failure's detail, when it has lagged longer than `COMMIT_STUCK_TICKS_MAX`.
    pub stuck: Option<String>,
    /// How long it has applied nothing, in ticks (what the near misses measure:
    /// `COMMIT_STUCK_HALF_WAY_TICKS`, `COMMIT_STUCK_NEAR_MISS_TICKS`).
    pub lag_ticks: u64,
}

impl Harness {
    /// The checks of `check` (every group, with `full`); returns the groups visited.
    pub(super) fn check_groups(&mut self, tick: u64, full: bool) -> Result<u64, CheckFailure> {
        let fail = |check: &'static str, detail: String| CheckFailure { check, detail, tick };
        if self.simulation.stats().frames_unroutable > 0 {
            return Err(fail(
                "unroutable frame",
                "a frame was sent to a process outside the world".into(),
            ));
        }
        // The replicas that lag behind their commit point: whether a lagging one is
        // stuck is decided after the loop, which sees every replica (see
        // `COMMIT_STUCK_TICKS_MAX`).
        let mut lagging = std::mem::take(&mut self.lagging_scratch);
        lagging.clear();
        let mut checks = GroupChecks {
            checkers: &mut self.checkers,
            retired: &self.retired_checkers.groups,
            failover: &mut self.failover,
            checkpoints: &mut self.checkpoints,
            tick,
            break_check: self.break_check,
            full,
            lagging: &mut lagging,
        };
        let mut visited = 0;
        let mut touched = std::mem::take(&mut self.touched_scratch);
        let mut plan = std::mem::take(&mut self.plan_scratch);
        for (index, slot) in self.slots.iter_mut().enumerate() {
            let Some(node) = &slot.node else { continue };
            let incarnation = slot.incarnation;
            let at = |group| GroupAt {
                index,
                group,
                incarnation,
            };
            // Which groups took an input or ran a tick since the last check: only
            // those, and the ones not quiet then, can need a check now.
            touched.clear();
            let (mut tracked, mut group_set_changes) = (true, 0);
            for shard in node.shards() {
                let mut shard = shard.borrow_mut();
                tracked &= shard.take_touched_groups(&mut touched);
                group_set_changes += shard.group_set_changes();
            }
            touched.sort_unstable();
            let layout = tracked.then_some((incarnation, group_set_changes));
            if !full
                && let Some(layout) = layout
                && slot.watches.plan_partial_walk(layout, &touched, &mut plan)
            {
                for &planned in &plan {
                    let (group, watch) = slot.watches.planned(planned);
                    let skipped = walk_hosted_group(node, at(group), watch, &mut checks)?;
                    self.group_checks_skipped += u64::from(skipped);
                }
                // Every other group is quiet and took no input: a whole walk skips it.
                let hosted = slot.watches.hosted();
                self.group_checks_skipped += (hosted - plan.len()) as u64;
                visited += hosted as u64;
                slot.watches.end_partial_walk(&plan);
                self.node_walks.0 += 1;
                continue;
            }
            slot.watches.begin_walk();
            for shard in node.shards() {
                let shard = shard.borrow();
                if let Some(metadata) = shard.metadata() {
                    let watch = slot.watches.visit(METADATA_GROUP, tick);
                    let skipped = walk_group(at(METADATA_GROUP), metadata, watch, &mut checks)?;
                    self.group_checks_skipped += u64::from(skipped);
                }
                for (&group, replica) in shard.partitions() {
                    let watch = slot.watches.visit(group, tick);
                    let skipped = walk_group(at(group), replica, watch, &mut checks)?;
                    self.group_checks_skipped += u64::from(skipped);
                }
            }
            slot.watches.end_walk();
            slot.watches.end_whole_walk(layout);
            self.node_walks.1 += 1;
            visited += slot.watches.visited() as u64;
        }
        self.touched_scratch = touched;
        self.plan_scratch = plan;
        if lagging.is_empty() {
            self.lagging_scratch = lagging;
            return Ok(visited);
        }
        // What every replica of every group applied: read only when some replica lags,
        // which few ticks have.
        let mut applied = std::mem::take(&mut self.applied_scratch);
        applied.clear();
        for (index, slot) in self.slots.iter().enumerate() {
            let Some(node) = &slot.node else { continue };
            for shard in node.shards() {
                let shard = shard.borrow();
                if let Some(metadata) = shard.metadata() {
                    applied.push((METADATA_GROUP, index, metadata.commit_min()));
                }
                for (&group, replica) in shard.partitions() {
                    applied.push((group, index, replica.commit_min()));
                }
            }
        }
        let network = self.simulation.network();
        for Lagging {
            index,
            group,
            commit_min,
            stuck,
            lag_ticks,
        } in lagging.drain(..)
        {
            // The only way a lagging replica moves on is a repair from a peer that
            // applied further, reachable both ways through the standing partition.
            let can_repair = applied.iter().any(|&(peer_group, peer, peer_applied)| {
                peer_group == group
                    && peer != index
                    && peer_applied > commit_min
                    && !network.path_cut(index, peer)
                    && !network.path_cut(peer, index)
            });
            if !can_repair {
                if let Some(watch) = self.slots[index].watches.get_mut(group) {
                    watch.progress = (commit_min, tick);
                }
            } else if let Some(detail) = stuck {
                return Err(fail("commit stuck", detail));
            } else {
                if lag_ticks > super::COMMIT_STUCK_HALF_WAY_TICKS {
                    cluster::cover!(CommitStuckHalfWay);
                }
                if lag_ticks > super::COMMIT_STUCK_NEAR_MISS_TICKS {
                    cluster::cover!(CommitStuckNearMiss);
                }
            }
        }
        self.applied_scratch = applied;
        self.lagging_scratch = lagging;
        Ok(visited)
    }
}

/// One group's turn in a tick's walk: skipped when it was quiet at its last check, its
/// replica has taken no input since ([`Replica::activity`]) and this is not a full
/// check; checked otherwise. Returns whether it was skipped. Called for every group at
/// every tick, so the skip reads one counter and is inlined into the walk.
#[inline]
pub(super) fn walk_group<S: StateMachine>(
    at: GroupAt,
    replica: &Replica<S, SimReplicaStore>,
    watch: &mut GroupWatch,
    checks: &mut GroupChecks<'_>,
) -> Result<bool, CheckFailure> {
    let activity = replica.activity();
    if !checks.full && watch.quiet.as_ref().is_some_and(|quiet| quiet.activity == activity) {
        return Ok(true);
    }
    check_group(at, replica, watch, checks)?;
    Ok(false)
}

/// [`walk_group`] for `at.group`, found on the node's shards: a walk that visits only
/// some groups (see the module docs) knows the group, not where it lives.
pub(super) fn walk_hosted_group(
    node: &Node<SimStores>,
    at: GroupAt,
    watch: &mut GroupWatch,
    checks: &mut GroupChecks<'_>,
) -> Result<bool, CheckFailure> {
    for shard in node.shards() {
        let shard = shard.borrow();
        if at.group == METADATA_GROUP {
            if let Some(metadata) = shard.metadata() {
                return walk_group(at, metadata, watch, checks);
            }
        } else if let Some(replica) = shard.partitions().get(&at.group) {
            return walk_group(at, replica, watch, checks);
        }
    }
    panic!(
        "replica {} does not host group {:#x}, which its last whole walk found, and no group opened or closed since",
        at.index, at.group
    );
}

/// The per-tick checks for one group on one replica (unless [`walk_group`] skips it).
///
/// On a full check, a group quiet since its last check is checked after verifying that
/// what the checks read of it is indeed what they last saw.
#[inline(never)]
fn check_group<S: StateMachine>(
    at: GroupAt,
    replica: &Replica<S, SimReplicaStore>,
    watch: &mut GroupWatch,
    checks: &mut GroupChecks<'_>,
) -> Result<(), CheckFailure> {
    let GroupAt { index, group, .. } = at;
    let GroupChecks {
        checkers,
        retired,
        failover,
        checkpoints,
        tick,
        break_check,
        full,
        lagging,
    } = checks;
    let visit = Visit {
        at,
        replica,
        tick: *tick,
        activity: replica.activity(),
    };
    check_quiet_unchanged(&visit, watch, *full)?;
    check_never_back(&visit, watch)?;
    failover.observe(
        *tick,
        group,
        (replica.view(), replica.status(), replica.is_primary()),
        (
            replica.stats().updates_taken_as_primary,
            replica.stats().queries_taken_as_primary,
        ),
        |view| replica.primary_of(view),
    );
    let commit_min = replica.commit_min();
    check_new_commits(&visit, watch, checkers, retired, *break_check)?;
    checkpoints
        .check(
            index,
            group,
            replica,
            &mut watch.checkpoint_seen,
            &mut watch.encoded_seen,
        )
        .map_err(|detail| visit.fail("checkpoint diverged", detail))?;
    let chunk_arrived = check_transfer(&visit, watch)?;
    track_progress(&visit, watch, commit_min, chunk_arrived, lagging);
    Ok(())
}

/// A group quiet since its last check (only a full check reaches one) must read as it
/// did then: every change must follow a frame or a fired timeout.
fn check_quiet_unchanged<S: StateMachine>(
    visit: &Visit<'_, S>,
    watch: &mut GroupWatch,
    full: bool,
) -> Result<(), CheckFailure> {
    let Visit {
        at: GroupAt { index, group, .. },
        replica,
        tick,
        activity,
    } = *visit;
    if let Some(quiet) = watch.quiet.take() {
        if quiet.activity == activity {
            // Only a full check comes here for a group quiet since (see `walk_group`).
            debug_assert!(full);
            let now = GroupSeen::of(replica);
            if now != quiet.seen {
                return Err(CheckFailure {
                    check: "incremental check",
                    detail: format!(
                        "replica {index} group {group:#x} changed with no input since its last check (activity \
                         {activity}): it was {:?} and is {now:?}; a skipped check may have missed it (a harness \
                         or replica bug: every change must follow a frame or a fired timeout)",
                        quiet.seen
                    ),
                    tick,
                });
            }
        }
        // Each tick skipped since would have restarted its lag clock (it was neither
        // behind its commit point nor transferring, and nothing changed).
        watch.progress.1 = tick.saturating_sub(1);
    }
    Ok(())
}

/// Views and commit points never go back; a replica that booted offering a complete
/// log holds at least what it held before it went down; no frame was misrouted.
fn check_never_back<S: StateMachine>(visit: &Visit<'_, S>, watch: &mut GroupWatch) -> Result<(), CheckFailure> {
    let Visit {
        at: GroupAt { index, group, .. },
        replica,
        ..
    } = *visit;
    let fail = |check, detail| visit.fail(check, detail);
    if replica.view() < watch.view_seen {
        return Err(fail(
            "view went back",
            format!(
                "replica {index} group {group:#x} is in view {} after view {}",
                replica.view(),
                watch.view_seen
            ),
        ));
    }
    watch.view_seen = replica.view();
    if let Some((log_view, held_head)) = watch.held_before_restart.take()
        && !replica.log_incomplete()
        && replica.log_view() == log_view
        && replica.held_head() < held_head
    {
        return Err(fail(
            "acknowledged op forgotten",
            format!(
                "replica {index} group {group:#x} held op {held_head} in log view {log_view} before it went down, \
                 and booted holding only up to op {} in the same log view while offering its log as complete \
                 (a log that may lack ops it acknowledged must say so, or a view change can outvote a committed op)",
                replica.held_head()
            ),
        ));
    }
    if replica.stats().frames_sender_mismatch > 0 {
        return Err(fail(
            "forged sender",
            format!(
                "replica {index} group {group:#x} received {} replica messages whose header names another sender \
                 than the one the network delivered them from (no honest replica sends one)",
                replica.stats().frames_sender_mismatch
            ),
        ));
    }
    if replica.stats().frames_misrouted > 0 {
        return Err(fail(
            "misrouted frame",
            format!("replica {index} group {group:#x} received a frame for another group or cluster"),
        ));
    }
    let commit_min = replica.commit_min();
    if commit_min < watch.checked {
        return Err(fail(
            "commit went back",
            format!(
                "replica {index} group {group:#x} applied up to {commit_min} after {}",
                watch.checked
            ),
        ));
    }
    Ok(())
}

/// Every op applied since the last check, against the group's canonical chain.
fn check_new_commits<S: StateMachine>(
    visit: &Visit<'_, S>,
    watch: &mut GroupWatch,
    checkers: &mut BTreeMap<u64, StateChecker>,
    retired: &BTreeSet<u64>,
    break_check: bool,
) -> Result<(), CheckFailure> {
    let Visit {
        at: GroupAt {
            index,
            group,
            incarnation,
        },
        replica,
        ..
    } = *visit;
    let fail = |check, detail| visit.fail(check, detail);
    let commit_min = replica.commit_min();
    if commit_min > watch.checked {
        let checker = checker_of(checkers, retired, group, || {
            StateChecker::new(root_header(SIMULATED_CLUSTER_ID, group).checksum)
        })
        .map_err(|detail| fail("retired group applied", detail))?;
        checker.note_floor(index, replica.replica_count(), replica.journal_floor());
        // Ops below the journal's floor were covered by a checkpoint this replica
        // installed (from a peer or its disk) without applying them one by one: the
        // checkpoint check compares its state instead, and the floor op's header is
        // still checked against the chain.
        for op in (watch.checked + 1).max(replica.journal_floor())..=commit_min {
            let header = replica.committed_header(op).ok_or_else(|| {
                fail(
                    "applied op missing",
                    format!("replica {index} group {group:#x} applied op {op} but no longer holds its header"),
                )
            })?;
            checker
                .on_commit(index, incarnation, CommittedOp::from(header), || {
                    replica.committed_header(op - 1).map(|header| header.checksum)
                })
                .map_err(|detail| fail("state checker", format!("group {group:#x}: {detail}")))?;
            if break_check && header.checksum.trailing_zeros() >= 12 {
                return Err(fail(
                    "broken check (test-only)",
                    format!(
                        "replica {index} applied op {op} of group {group:#x}, whose checksum {:#x} ends in twelve zero bits",
                        header.checksum
                    ),
                ));
            }
        }
        watch.checked = commit_min;
    }
    Ok(())
}

/// A state transfer is stuck when no chunk arrived for `COMMIT_STUCK_TICKS_MAX`, or
/// when it ran longer than that per `TRANSFER_CHUNK_BYTES` chunk of its checkpoint (a
/// small one must finish within the old whole-transfer bound; a large one may take a
/// round trip per chunk). A slow transfer within that is the timeliness check's to
/// judge. Returns whether a chunk arrived since the last check: progress for the
/// stuck check too.
fn check_transfer<S: StateMachine>(visit: &Visit<'_, S>, watch: &mut GroupWatch) -> Result<bool, CheckFailure> {
    let Visit {
        at: GroupAt { index, group, .. },
        replica,
        tick,
        ..
    } = *visit;
    let Some(progress) = replica.transfer_received() else {
        watch.transfer_since = None;
        return Ok(false);
    };
    let seen = watch.transfer_since.get_or_insert(TransferSeen {
        started: tick,
        progress,
        moved: tick,
    });
    if seen.progress != progress {
        seen.progress = progress;
        seen.moved = tick;
        return Ok(true);
    }
    let chunks = progress
        .total
        .div_ceil(cluster::vsr::constants::TRANSFER_CHUNK_BYTES as u64)
        .max(1);
    let stuck = if tick - seen.moved > COMMIT_STUCK_TICKS_MAX {
        Some(format!("received no chunk for {} ticks", tick - seen.moved))
    } else if tick - seen.started > COMMIT_STUCK_TICKS_MAX * chunks {
        Some(format!(
            "has run {} ticks for a checkpoint of {chunks} chunks ({COMMIT_STUCK_TICKS_MAX} a chunk at most)",
            tick - seen.started
        ))
    } else {
        None
    };
    if let Some(why) = stuck {
        return Err(visit.fail(
            "transfer stuck",
            format!(
                "replica {index} group {group:#x}: its state transfer {why} ({} of {} bytes; applied {}, committed {})",
                progress.received,
                progress.total,
                replica.commit_min(),
                replica.commit_max()
            ),
        ));
    }
    Ok(false)
}

/// Whether the group is steady (then quiet until its next input) or behind its
/// commit point (then lagging, and stuck past `COMMIT_STUCK_TICKS_MAX` without
/// applying an op or taking a chunk of the state transfer that will bring it up).
fn track_progress<S: StateMachine>(
    visit: &Visit<'_, S>,
    watch: &mut GroupWatch,
    commit_min: u64,
    chunk_arrived: bool,
    lagging: &mut Vec<Lagging>,
) {
    let (replica, tick) = (visit.replica, visit.tick);
    let steady = replica.status() != Status::Normal || commit_min >= replica.commit_max();
    if chunk_arrived && !steady {
        watch.progress = (commit_min, tick);
    }
    if commit_min != watch.progress.0 || steady {
        watch.progress = (commit_min, tick);
        // Quiet: no clock runs for it (it is not behind its commit point, nor
        // receiving a transfer), so until its next input every check would pass as
        // this one did.
        if steady && watch.transfer_since.is_none() {
            watch.quiet = Some(Quiet {
                activity: visit.activity,
                seen: GroupSeen::of(replica),
            });
        }
        return;
    }
    cluster::watermark!(OpsBehind, replica.commit_max() - commit_min);
    cluster::watermark!(LagTicks, tick - watch.progress.1);
    let GroupAt { index, group, .. } = visit.at;
    let stuck = (tick - watch.progress.1 > COMMIT_STUCK_TICKS_MAX).then(|| {
        let (requests, outstanding) = replica.repair_state();
        format!(
            "replica {index} group {group:#x} has applied {commit_min} of {} committed ops for {} ticks (head {}); \
             next: {}; below: {}; repair requests sent: {requests}, outstanding: {outstanding}",
            replica.commit_max(),
            tick - watch.progress.1,
            replica.head(),
            replica.describe_op(commit_min + 1),
            replica.describe_op(commit_min),
        )
    });
    lagging.push(Lagging {
        index,
        group,
        commit_min,
        stuck,
        lag_ticks: tick - watch.progress.1,
    });
}
