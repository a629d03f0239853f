//! A run's fault schedule: the faults it injected, as events on ticks, that can be
//! written out (`--record-faults FILE`, one JSON object per line), edited, and replayed
//! in place of the random draws (`--faults-from FILE`) while the workload, the packet
//! coins and the task scheduler still follow the seed.
//!
//! Models: the faults the harness decides a tick at a time: crashes (and whether each
//! cut the power) and restarts, network partitions and heals, path clogs, which
//! replica's disk may fail (the disk-error window), WAL rot at a restart, and
//! whole-cluster outages. Does not model: the per-call disk faults inside a window
//! (each write or sync still fails by the disk's own seeded coin), slow disks, packet
//! loss, replay and corruption (seeded coins per packet; a shrink turns those off by
//! their profile flags instead), or what the checks do (the liveness phase's crashes
//! and cuts belong to the check, not to the schedule).
//!
//! Each consumer reads its own events at its own moment of the tick and each event
//! names the tick its consumer saw: crashes, restarts, disk-error windows and rot
//! at the harness's tick before the simulation steps; partitions, heals and clogs at
//! the network's tick after it advanced (one more than the harness's tick of that
//! step); outages at the harness's tick after its step. A replayed schedule that was
//! recorded by the same build with the same flags makes the same decisions at the same
//! moments, and every random stream a decision used to draw from is drawn the same
//! way or belongs to the decision alone, so the run is the same run, byte for byte.
//! An edited schedule gives another run, just as deterministic; an event that no
//! longer makes sense when it comes due (a crash of a replica that is down, or one the
//! crash budget would not allow) is skipped and not recorded again.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::network::{NetworkFault, PartitionCut};
pub use crate::replay::Replay;

/// Longest schedule file read, in events: a 100,000-tick heavy run injects a few
/// thousand; a file far beyond that is not a schedule this tool wrote.
pub const SCHEDULE_EVENTS_MAX: usize = 1_000_000;

/// Whose disk errors are switched on (the disk-error window).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DiskErrorsOn {
    /// Nobody's.
    Nobody,
    /// This replica's.
    Replica(usize),
    /// Everyone's (`--storage-faults unsafe`).
    Everyone,
}

/// One fault.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fault", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Fault {
    /// A replica's process ends; with `power_loss` its disk keeps only what was stable.
    Crash {
        /// Which replica.
        replica: usize,
        /// Whether the crash cut the power.
        power_loss: bool,
        /// The protocol moment it was caught at (`--crash-moments`), if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        moment: Option<String>,
    },
    /// A replica that is down starts again.
    Restart {
        /// Which replica.
        replica: usize,
        /// Its new incarnation (feeds its boot nonce).
        incarnation: u64,
    },
    /// The replicas split in two; packets are dropped in the cut direction(s).
    Partition(PartitionCut),
    /// The standing partition heals.
    Heal,
    /// One directed path holds its packets for `ticks` ticks.
    Clog {
        /// The sending process: `r<replica>` or `c<client>`.
        from: String,
        /// The receiving process.
        to: String,
        /// How long, in ticks.
        ticks: u64,
    },
    /// From now on, writes and syncs on these disks may fail (each by the disk's coin).
    DiskErrors {
        /// Whose.
        on: DiskErrorsOn,
    },
    /// One stable bit of the replica's WAL or checkpoint files rots as it restarts.
    Rot {
        /// Which replica.
        replica: usize,
    },
    /// A whole-cluster power outage starts (quiet, dark, recovery: see `fuzz::outage`).
    Outage,
}

/// The fault classes a shrink turns off one at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FaultClass {
    /// Crashes and restarts.
    Crash,
    /// Crashes cutting the power (turned off, they stay process crashes).
    PowerLoss,
    /// Partitions and heals.
    Partition,
    /// Path clogs.
    Clog,
    /// Disk-error windows.
    DiskErrors,
    /// WAL rot.
    Rot,
    /// Whole-cluster outages.
    Outage,
}

impl FaultClass {
    /// Every class, in the order a shrink tries them.
    pub const ALL: [FaultClass; 7] = [
        FaultClass::Outage,
        FaultClass::Crash,
        FaultClass::PowerLoss,
        FaultClass::Partition,
        FaultClass::Clog,
        FaultClass::DiskErrors,
        FaultClass::Rot,
    ];

    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            FaultClass::Crash => "crash",
            FaultClass::PowerLoss => "power-loss",
            FaultClass::Partition => "partition",
            FaultClass::Clog => "clog",
            FaultClass::DiskErrors => "disk-errors",
            FaultClass::Rot => "rot",
            FaultClass::Outage => "outage",
        }
    }
}

impl Fault {
    /// The event's kind, as its JSON spells it.
    pub fn kind(&self) -> &'static str {
        match self {
            Fault::Crash { power_loss: true, .. } => "power-loss",
            Fault::Crash { .. } => "crash",
            Fault::Restart { .. } => "restart",
            Fault::Partition(_) => "partition",
            Fault::Heal => "heal",
            Fault::Clog { .. } => "clog",
            Fault::DiskErrors { .. } => "disk-errors",
            Fault::Rot { .. } => "rot",
            Fault::Outage => "outage",
        }
    }

    /// The class the event belongs to (a power-loss crash is a crash; `PowerLoss` is
    /// the flag on it).
    pub fn class(&self) -> FaultClass {
        match self {
            Fault::Crash { .. } | Fault::Restart { .. } => FaultClass::Crash,
            Fault::Partition(_) | Fault::Heal => FaultClass::Partition,
            Fault::Clog { .. } => FaultClass::Clog,
            Fault::DiskErrors { .. } => FaultClass::DiskErrors,
            Fault::Rot { .. } => FaultClass::Rot,
            Fault::Outage => FaultClass::Outage,
        }
    }

    /// The replicas the event names (for a shrink to fewer replicas).
    fn replicas_named(&self) -> Vec<usize> {
        match self {
            Fault::Crash { replica, .. } | Fault::Restart { replica, .. } | Fault::Rot { replica } => vec![*replica],
            Fault::Partition(cut) => cut.side_a.clone(),
            Fault::DiskErrors {
                on: DiskErrorsOn::Replica(replica),
            } => vec![*replica],
            Fault::Clog { from, to, .. } => [from, to]
                .into_iter()
                .filter_map(|name| match parse_process(name) {
                    Ok(Process::Replica(replica)) => Some(replica),
                    _ => None,
                })
                .collect(),
            Fault::Heal | Fault::DiskErrors { .. } | Fault::Outage => Vec::new(),
        }
    }
}

impl Fault {
    /// The schedule's form of a fault the network made, in a world of `replicas`
    /// replicas (processes are named, not numbered, in a schedule).
    pub fn from_network(fault: &NetworkFault, replicas: usize) -> Fault {
        match fault {
            NetworkFault::Partition(cut) => Fault::Partition(cut.clone()),
            NetworkFault::Heal => Fault::Heal,
            NetworkFault::Clog { from, to, ticks } => Fault::Clog {
                from: process_name(*from, replicas),
                to: process_name(*to, replicas),
                ticks: *ticks,
            },
        }
    }

    /// The network's form of a partition, heal or clog in a world of `replicas`
    /// replicas and `clients` clients; `None` for the other faults and for a clog
    /// naming a process the world lacks.
    pub fn to_network(&self, replicas: usize, clients: usize) -> Option<NetworkFault> {
        Some(match self {
            Fault::Partition(cut) => NetworkFault::Partition(cut.clone()),
            Fault::Heal => NetworkFault::Heal,
            Fault::Clog { from, to, ticks } => NetworkFault::Clog {
                from: process_index(from, replicas, clients)?,
                to: process_index(to, replicas, clients)?,
                ticks: *ticks,
            },
            _ => return None,
        })
    }
}

/// One fault on one tick.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultEvent {
    /// The tick its consumer saw (see the module docs).
    pub tick: u64,
    /// What happened.
    #[serde(flatten)]
    pub fault: Fault,
}

/// A process a clog names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Process {
    /// Replica `i`.
    Replica(usize),
    /// Client `i`.
    Client(usize),
}

/// The name of process `index` in a world of `replicas` replicas (replicas first).
pub fn process_name(index: usize, replicas: usize) -> String {
    if index < replicas {
        format!("r{index}")
    } else {
        format!("c{}", index - replicas)
    }
}

/// The process a clog's `from` or `to` names.
pub fn parse_process(name: &str) -> Result<Process, String> {
    let number = |digits: &str| {
        digits
            .parse::<usize>()
            .map_err(|_| format!("process `{name}`: expected r<replica> or c<client>, e.g. r0 or c2"))
    };
    match name.split_at_checked(1) {
        Some(("r", digits)) => number(digits).map(Process::Replica),
        Some(("c", digits)) => number(digits).map(Process::Client),
        _ => Err(format!(
            "process `{name}`: expected r<replica> or c<client>, e.g. r0 or c2"
        )),
    }
}

/// The index of a named process in a world of `replicas` replicas and `clients`
/// clients, or `None` if the world has no such process.
pub fn process_index(name: &str, replicas: usize, clients: usize) -> Option<usize> {
    match parse_process(name).ok()? {
        Process::Replica(replica) if replica < replicas => Some(replica),
        Process::Client(client) if client < clients => Some(replicas + client),
        _ => None,
    }
}

/// Why a schedule file could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleError(pub String);

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ScheduleError {}

/// A run's faults in tick order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultSchedule {
    /// The events, by tick (stable: events of one tick keep their order).
    pub events: Vec<FaultEvent>,
}

/// The `fault schedule:` line of a run's output from how many events of each kind
/// (by [`Fault::kind`]) it made: every event, then each kind in name order.
pub fn summary_line(counts: &std::collections::BTreeMap<&'static str, u64>) -> String {
    let kinds: Vec<String> = counts.iter().map(|(kind, count)| format!("{kind}={count}")).collect();
    format!(
        "fault schedule: events={}{}{}",
        counts.values().sum::<u64>(),
        if kinds.is_empty() { "" } else { " " },
        kinds.join(" ")
    )
}

impl FaultSchedule {
    /// A schedule of `events`, put in tick order (stable).
    pub fn new(mut events: Vec<FaultEvent>) -> Self {
        events.sort_by_key(|event| event.tick);
        Self { events }
    }

    /// Parse JSON lines (blank lines and lines starting with `#` are skipped), naming
    /// the line of the first bad one.
    pub fn parse(text: &str, origin: &str) -> Result<Self, ScheduleError> {
        let mut events = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if events.len() >= SCHEDULE_EVENTS_MAX {
                return Err(ScheduleError(format!(
                    "{origin}: more than {SCHEDULE_EVENTS_MAX} events; not a schedule this tool wrote"
                )));
            }
            let event: FaultEvent = serde_json::from_str(line).map_err(|error| {
                ScheduleError(format!(
                    "{origin} line {}: {error} (expected e.g. {{\"tick\":120,\"fault\":\"crash\",\"replica\":1,\"power_loss\":false}})",
                    number + 1
                ))
            })?;
            if let Fault::Clog { from, to, .. } = &event.fault {
                for name in [from, to] {
                    parse_process(name)
                        .map_err(|error| ScheduleError(format!("{origin} line {}: {error}", number + 1)))?;
                }
            }
            events.push(event);
        }
        Ok(Self::new(events))
    }

    /// Read a schedule file.
    pub fn read(path: &Path) -> Result<Self, ScheduleError> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| ScheduleError(format!("cannot read fault schedule {}: {error}", path.display())))?;
        Self::parse(&text, &path.display().to_string())
    }

    /// The schedule as JSON lines, one event per line.
    pub fn to_json_lines(&self) -> String {
        let mut text = String::new();
        for event in &self.events {
            // A `FaultEvent` holds only integers, booleans and plain strings.
            text.push_str(&serde_json::to_string(event).unwrap_or_default());
            text.push('\n');
        }
        text
    }

    /// Write it to `path`.
    pub fn write(&self, path: &Path) -> Result<(), ScheduleError> {
        std::fs::write(path, self.to_json_lines())
            .map_err(|error| ScheduleError(format!("cannot write fault schedule {}: {error}", path.display())))
    }

    /// Events per kind, in kind order: the `fault schedule:` line.
    pub fn summary(&self) -> String {
        let mut counts: std::collections::BTreeMap<&'static str, u64> = std::collections::BTreeMap::new();
        for event in &self.events {
            *counts.entry(event.fault.kind()).or_default() += 1;
        }
        summary_line(&counts)
    }

    /// Whether any event belongs to `class`.
    pub fn has(&self, class: FaultClass) -> bool {
        self.events.iter().any(|event| match class {
            FaultClass::PowerLoss => matches!(event.fault, Fault::Crash { power_loss: true, .. }),
            _ => event.fault.class() == class,
        })
    }

    /// The schedule without `class` (power losses become process crashes).
    pub fn without(&self, class: FaultClass) -> Self {
        let events = self
            .events
            .iter()
            .filter(|event| class == FaultClass::PowerLoss || event.fault.class() != class)
            .map(|event| match (&event.fault, class) {
                (Fault::Crash { replica, moment, .. }, FaultClass::PowerLoss) => FaultEvent {
                    tick: event.tick,
                    fault: Fault::Crash {
                        replica: *replica,
                        power_loss: false,
                        moment: moment.clone(),
                    },
                },
                _ => event.clone(),
            })
            .collect();
        Self { events }
    }

    /// The schedule of a world of `replicas` replicas and `clients` clients: events
    /// naming a process it lacks are left out.
    pub fn within(&self, replicas: usize, clients: usize) -> Self {
        let events = self
            .events
            .iter()
            .filter(|event| {
                let clog_fits = match &event.fault {
                    Fault::Clog { from, to, .. } => {
                        process_index(from, replicas, clients).is_some()
                            && process_index(to, replicas, clients).is_some()
                    }
                    _ => true,
                };
                clog_fits && event.fault.replicas_named().iter().all(|&replica| replica < replicas)
            })
            .cloned()
            .collect();
        Self { events }
    }

    /// The events up to and including `tick`.
    pub fn until(&self, tick: u64) -> Self {
        Self {
            events: self.events.iter().filter(|event| event.tick <= tick).cloned().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_round_trips_through_json_lines() {
        let schedule = FaultSchedule::new(vec![
            FaultEvent {
                tick: 40,
                fault: Fault::Clog {
                    from: "r0".into(),
                    to: "c1".into(),
                    ticks: 7,
                },
            },
            FaultEvent {
                tick: 12,
                fault: Fault::Crash {
                    replica: 1,
                    power_loss: true,
                    moment: Some("transferring".into()),
                },
            },
            FaultEvent {
                tick: 12,
                fault: Fault::DiskErrors {
                    on: DiskErrorsOn::Replica(2),
                },
            },
            FaultEvent {
                tick: 300,
                fault: Fault::Restart {
                    replica: 1,
                    incarnation: u64::MAX,
                },
            },
            FaultEvent {
                tick: 301,
                fault: Fault::Partition(PartitionCut {
                    side_a: vec![0, 2],
                    cut_a_to_b: true,
                    cut_b_to_a: false,
                }),
            },
            FaultEvent {
                tick: 302,
                fault: Fault::Heal,
            },
            FaultEvent {
                tick: 303,
                fault: Fault::Outage,
            },
        ]);
        assert_eq!(schedule.events[0].tick, 12, "sorted by tick");
        assert_eq!(schedule.events[1].fault.kind(), "disk-errors", "stable within a tick");
        let text = schedule.to_json_lines();
        assert!(
            text.starts_with(
                "{\"tick\":12,\"fault\":\"crash\",\"replica\":1,\"power_loss\":true,\"moment\":\"transferring\"}\n"
            ),
            "{text}"
        );
        assert_eq!(FaultSchedule::parse(&text, "test").expect("parses"), schedule);
        assert_eq!(
            schedule.summary(),
            "fault schedule: events=7 clog=1 disk-errors=1 heal=1 outage=1 partition=1 power-loss=1 restart=1"
        );
    }

    #[test]
    fn a_bad_line_is_named() {
        let text = "{\"tick\":1,\"fault\":\"heal\"}\n\n# a comment\n{\"tick\":2,\"fault\":\"crash\"}\n";
        let error = FaultSchedule::parse(text, "f.jsonl").expect_err("missing fields");
        assert!(
            error.0.starts_with("f.jsonl line 4: missing field `replica`"),
            "{error}"
        );
        let error = FaultSchedule::parse(
            "{\"tick\":1,\"fault\":\"clog\",\"from\":\"x1\",\"to\":\"r0\",\"ticks\":3}",
            "f",
        )
        .expect_err("bad process");
        assert!(
            error.0.contains("process `x1`: expected r<replica> or c<client>"),
            "{error}"
        );
        let error = FaultSchedule::parse("{\"tick\":1,\"fault\":\"meteor\"}", "f").expect_err("unknown fault");
        assert!(error.0.contains("unknown variant `meteor`"), "{error}");
    }

    #[test]
    fn classes_and_worlds_cut_the_schedule() {
        let schedule = FaultSchedule::new(vec![
            FaultEvent {
                tick: 1,
                fault: Fault::Crash {
                    replica: 3,
                    power_loss: true,
                    moment: None,
                },
            },
            FaultEvent {
                tick: 2,
                fault: Fault::Clog {
                    from: "c1".into(),
                    to: "r0".into(),
                    ticks: 5,
                },
            },
            FaultEvent {
                tick: 3,
                fault: Fault::Heal,
            },
        ]);
        assert!(schedule.has(FaultClass::PowerLoss));
        let no_power = schedule.without(FaultClass::PowerLoss);
        assert!(!no_power.has(FaultClass::PowerLoss) && no_power.has(FaultClass::Crash));
        assert_eq!(schedule.without(FaultClass::Crash).events.len(), 2);
        let small = schedule.within(3, 1);
        assert_eq!(
            small.events,
            vec![schedule.events[2].clone()],
            "replica 3 and client 1 are gone"
        );
        assert_eq!(schedule.until(2).events.len(), 2);
        assert_eq!(process_index("c1", 3, 2), Some(4));
        assert_eq!(process_name(4, 3), "c1");
    }
}
