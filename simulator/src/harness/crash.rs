//! The crash injector: when replicas crash and restart.
//!
//! Per tick, restart is decided before crash. With `restart_probability` it restarts
//! one replica that has been down at least [`DOWN_TICKS_MIN`]; with
//! `crash_probability` it crashes one that has been up at least [`UP_TICKS_MIN`], only
//! while more than a quorum of rejoined replicas (up, no group still recovering) stays
//! live, and never a primary unless `crash_primary`. With `at_moments`, the crash
//! falls on a replica caught at a protocol moment (a [`Moment`]) whenever an eligible
//! one is: the crash rate is unchanged, its timing is not.
//!
//! "A quorum" is the larger of the replication and view-change quorums. With three
//! replicas they are both 2; with flexible quorums (six replicas: replication 3, view
//! change 4) keeping only a replication quorum live lets the injector kill the primary
//! of a group that can then never elect another, a wedge outside the fault model the
//! protocol promises to survive, reported as a liveness failure that says nothing. Draws come from the crash stream alone, and a zero probability
//! draws nothing, so a run without crashes replays like a run without the injector.

use crate::rng::SimRng;

/// Ticks a replica stays up before it may crash again: time to catch up after a
/// restart before the next failure.
pub const UP_TICKS_MIN: u64 = 500;

/// Ticks a replica stays down before it may restart: time for the survivors to commit
/// past its log, so its rejoin has something to repair.
pub const DOWN_TICKS_MIN: u64 = 300;

/// Crash injection settings.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CrashConfig {
    /// Per tick, probability of crashing one eligible replica.
    pub crash_probability: f64,
    /// Per tick, probability of restarting one eligible replica.
    pub restart_probability: f64,
    /// Whether primaries may be crashed.
    pub crash_primary: bool,
    /// Whether a crash prefers a replica caught at a protocol moment.
    pub at_moments: bool,
}

/// A protocol moment a crash is most telling at: work half done, which the restart
/// (and its peers) must finish or undo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    /// A primary with prepares sent but not yet committed: the view change that
    /// follows must keep or drop a half-replicated tail.
    PrimaryPreparing,
    /// A backup waiting for a repair answer: the restart repairs over a log it was
    /// still filling.
    BackupRepairing,
    /// A replica receiving a state transfer: the restart finds half a transfer, or
    /// none, and an older checkpoint.
    Transferring,
}

impl Moment {
    /// Every moment, in the order the report counts them.
    pub const ALL: [Moment; 3] = [Moment::PrimaryPreparing, Moment::BackupRepairing, Moment::Transferring];

    /// The name the report uses.
    pub fn name(self) -> &'static str {
        match self {
            Moment::PrimaryPreparing => "primary_preparing",
            Moment::BackupRepairing => "backup_repairing",
            Moment::Transferring => "transferring",
        }
    }
}

/// One replica as the injector sees it.
#[derive(Clone, Copy, Debug)]
pub struct ReplicaLife {
    /// Up or down.
    pub up: bool,
    /// The tick it last crashed or restarted.
    pub since: u64,
    /// Whether it currently believes it is the primary.
    pub primary: bool,
    /// Up and rejoined: none of its groups is still recovering after a restart. A
    /// recovering replica ignores view changes and acks nothing, so it is no help to a
    /// quorum until it has learned a view.
    pub rejoined: bool,
    /// The protocol moment it is at, if any (only looked for with `at_moments`).
    pub moment: Option<Moment>,
}

/// What to do this tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashAction {
    /// Restart this replica with this incarnation number.
    Restart {
        /// Which replica.
        replica: usize,
        /// Its new incarnation (feeds its boot nonce).
        incarnation: u64,
    },
    /// Crash this replica.
    Crash {
        /// Which replica.
        replica: usize,
        /// The protocol moment it was caught at, if it was picked for one.
        moment: Option<Moment>,
    },
}

/// Decides crashes and restarts from its own seed stream.
#[derive(Clone, Debug)]
pub struct CrashInjector {
    rng: SimRng,
    config: CrashConfig,
    quorum_live_min: usize,
}

impl CrashInjector {
    /// Reseed who crashes and restarts when, for a branch of the run (see
    /// [`crate::timeline`]).
    pub fn branch(&mut self, key: crate::timeline::BranchKey) {
        self.rng.branch(key);
    }

    /// Whether it can ever act (a crash or restart probability above zero); if not,
    /// the harness need not describe the replicas to it every tick.
    pub fn active(&self) -> bool {
        self.config.crash_probability > 0.0 || self.config.restart_probability > 0.0
    }

    /// Whether crashes prefer replicas at a protocol moment (so the harness must say
    /// which are).
    pub fn at_moments(&self) -> bool {
        self.config.at_moments
    }

    /// An injector drawing from `seed` that always leaves at least `quorum_live_min`
    /// replicas up (the larger of the replication and view-change quorums).
    pub fn new(seed: u64, config: CrashConfig, quorum_live_min: usize) -> Self {
        Self {
            rng: SimRng::new(seed),
            config,
            quorum_live_min,
        }
    }

    /// The decisions for tick `now` (at most one restart and one crash).
    pub fn decide(&mut self, now: u64, lives: &[ReplicaLife]) -> Vec<CrashAction> {
        let mut actions = Vec::new();
        if self.config.restart_probability > 0.0 && self.rng.chance(self.config.restart_probability) {
            let eligible: Vec<usize> = (0..lives.len())
                .filter(|&i| !lives[i].up && now.saturating_sub(lives[i].since) >= DOWN_TICKS_MIN)
                .collect();
            if !eligible.is_empty() {
                let replica = eligible[self.rng.index(eligible.len())];
                let incarnation = self.rng.next_u64();
                actions.push(CrashAction::Restart { replica, incarnation });
            }
        }
        if self.config.crash_probability > 0.0 && self.rng.chance(self.config.crash_probability) {
            let restarted = |i: usize| {
                actions
                    .iter()
                    .any(|a| matches!(a, CrashAction::Restart { replica, .. } if *replica == i))
            };
            // Only replicas that have rejoined count: crashing one while another is
            // still recovering from its restart leaves no quorum that can act, which
            // is a fault the protocol does not promise to survive (and a run that
            // does it over and over only measures how long recovery takes).
            let live = lives.iter().filter(|life| life.up && life.rejoined).count();
            if live > self.quorum_live_min {
                let mut eligible: Vec<usize> = (0..lives.len())
                    .filter(|&i| {
                        lives[i].up
                            && !restarted(i)
                            && now.saturating_sub(lives[i].since) >= UP_TICKS_MIN
                            && (self.config.crash_primary || !lives[i].primary)
                    })
                    .collect();
                if self.config.at_moments && eligible.iter().any(|&i| lives[i].moment.is_some()) {
                    eligible.retain(|&i| lives[i].moment.is_some());
                }
                if !eligible.is_empty() {
                    let replica = eligible[self.rng.index(eligible.len())];
                    let moment = lives[replica].moment.filter(|_| self.config.at_moments);
                    actions.push(CrashAction::Crash { replica, moment });
                }
            }
        }
        actions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lives(up: &[bool], since: u64) -> Vec<ReplicaLife> {
        up.iter()
            .map(|&up| ReplicaLife {
                up,
                since,
                primary: false,
                rejoined: up,
                moment: None,
            })
            .collect()
    }

    #[test]
    fn never_crashes_below_a_live_quorum_or_too_soon() {
        let config = CrashConfig {
            crash_probability: 1.0,
            restart_probability: 0.0,
            crash_primary: true,
            at_moments: false,
        };
        let mut injector = CrashInjector::new(1, config, 2);
        assert_eq!(injector.decide(499, &lives(&[true, true, true], 0)), []);
        assert_eq!(
            injector.decide(500, &lives(&[true, true, false], 0)),
            [],
            "2 live = quorum: keep them"
        );
        assert!(matches!(
            injector.decide(500, &lives(&[true, true, true], 0))[..],
            [CrashAction::Crash { .. }]
        ));
    }

    #[test]
    fn restarts_only_after_the_down_window_and_spares_primaries() {
        let config = CrashConfig {
            crash_probability: 1.0,
            restart_probability: 1.0,
            crash_primary: false,
            at_moments: false,
        };
        let mut injector = CrashInjector::new(2, config, 2);
        let mut world = lives(&[false, true, true, true], 0);
        world[1].primary = true;
        let early = injector.decide(299, &world);
        assert!(early.iter().all(|a| !matches!(a, CrashAction::Restart { .. })));
        let actions = injector.decide(600, &world);
        assert!(matches!(actions[0], CrashAction::Restart { replica: 0, .. }));
        assert!(
            actions
                .iter()
                .all(|a| !matches!(a, CrashAction::Crash { replica: 1, .. })),
            "the primary is spared"
        );
    }

    #[test]
    fn a_replica_still_recovering_does_not_count_towards_the_live_quorum() {
        let config = CrashConfig {
            crash_probability: 1.0,
            restart_probability: 0.0,
            crash_primary: true,
            at_moments: false,
        };
        let mut injector = CrashInjector::new(4, config, 2);
        let mut world = lives(&[true, true, true], 0);
        world[0].rejoined = false;
        assert_eq!(
            injector.decide(1_000, &world),
            [],
            "two rejoined replicas are exactly a quorum: keep them"
        );
        world[0].rejoined = true;
        assert!(matches!(
            injector.decide(1_000, &world)[..],
            [CrashAction::Crash { .. }]
        ));
    }

    #[test]
    fn at_moments_a_crash_falls_on_a_replica_caught_mid_protocol() {
        let config = CrashConfig {
            crash_probability: 1.0,
            restart_probability: 0.0,
            crash_primary: true,
            at_moments: true,
        };
        let mut injector = CrashInjector::new(5, config, 2);
        let mut world = lives(&[true, true, true, true, true], 0);
        world[3].moment = Some(Moment::BackupRepairing);
        for tick in 1_000..1_050 {
            assert_eq!(
                injector.decide(tick, &world),
                [CrashAction::Crash {
                    replica: 3,
                    moment: Some(Moment::BackupRepairing)
                }],
                "the only replica at a moment is the one crashed"
            );
        }
        // Nobody at a moment: any eligible replica, as without `at_moments`.
        world[3].moment = None;
        let crashed: std::collections::BTreeSet<usize> = (1_000..1_200)
            .flat_map(|tick| injector.decide(tick, &world))
            .map(|action| match action {
                CrashAction::Crash { replica, moment } => {
                    assert_eq!(moment, None);
                    replica
                }
                CrashAction::Restart { .. } => unreachable!("restarts are off"),
            })
            .collect();
        assert_eq!(crashed.len(), 5, "every replica is picked some time");
    }

    #[test]
    fn zero_probabilities_draw_nothing() {
        let mut injector = CrashInjector::new(3, CrashConfig::default(), 2);
        let before = injector.rng.clone().next_u64();
        for tick in 0..1000 {
            assert!(injector.decide(tick, &lives(&[true, true, true], 0)).is_empty());
        }
        assert_eq!(injector.rng.next_u64(), before);
    }
}
