//! A recorder of one simulated run's timeline, in virtual time only.
//!
//! What it models: each replica's view of each group it hosts (status and view, as
//! spans), each group's commit point and head op on each replica (as counters), durable
//! checkpoints, every client request from its send to its final answer, the faults the
//! harness injects (on a replica, a client, the network or the whole cluster), and the
//! failing check. It writes two things:
//! - the Chrome trace event JSON format ([`TraceRecorder::write_chrome_json`]), which
//!   opens in the Perfetto UI and in `chrome://tracing`;
//! - a compact [`Timeline`] ([`TraceRecorder::timeline`]) of the metadata group's
//!   spans and the faults per lane, small enough for a campaign's `report.json` and
//!   drawn as SVG by `campaign::html::timeline_svg`.
//!
//! What it does not model: wall time (one tick is [`MICROS_PER_TICK`] microseconds of
//! virtual time, and nothing here reads a clock), packets and messages, task
//! scheduling, or anything the harness does not report. It holds no reference to the
//! harness: the harness calls it, and the output is a pure function of those calls.
//!
//! Bounds: at most [`TRACE_EVENTS_MAX`] events are kept; past that, events are refused
//! and counted ([`TraceRecorder::dropped`]), and the file says so. A span takes its
//! slot when it opens, so closing it is always kept, and the last
//! [`TRACE_FAILURE_RESERVE_EVENTS`] slots are kept for the failing check. The timeline
//! has its own caps ([`TIMELINE_SPANS_PER_LANE_MAX`], [`TIMELINE_MARKS_PER_LANE_MAX`]).

use std::collections::{BTreeMap, BTreeSet};

mod chrome;
mod timeline;

#[cfg(test)]
mod tests;

pub use timeline::{
    NETWORK_LANE_NAME, TIMELINE_MARKS_PER_LANE_MAX, TIMELINE_SPANS_PER_LANE_MAX, Timeline, TimelineLane, TimelineMark,
    TimelineSpan,
};

use timeline::TimelineRecorder;

/// Microseconds of virtual time per tick: the simulation's tick is 10 ms, and the Chrome
/// format counts `ts` and `dur` in microseconds.
pub const MICROS_PER_TICK: u64 = 10_000;

/// Events kept at most; beyond it events are dropped and counted (the file says so).
/// 200,000 events write a file of about 30 MB, which Perfetto and `chrome://tracing`
/// still open at once; a long run that would write more is cut, not slowed down.
pub const TRACE_EVENTS_MAX: usize = 200_000;

/// Slots of [`TRACE_EVENTS_MAX`] only the failing check may take, so its instant is kept
/// when ordinary events filled the trace. A run stops at its first failing check; four
/// leaves room for a harness that reports a follow-on failure or two.
pub const TRACE_FAILURE_RESERVE_EVENTS: usize = 4;

/// The metadata group's id (every other group is a partition group).
pub const METADATA_GROUP: u64 = 0;

/// The status of a replica that is down (crashed or powered off): a crash or power-loss
/// fault on a replica's lane puts its metadata group in this status.
pub const STATUS_DOWN: &str = "down";

/// Where a fault happened: a process of the run, or the run as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lane {
    /// Replica `i` (a node: every group it hosts).
    Replica(usize),
    /// Client `i`.
    Client(usize),
    /// The network between processes (partitions, clogs).
    Network,
    /// The whole cluster (outages).
    Cluster,
}

/// Which counter of a group a [`Event::Counter`] moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Series {
    /// The commit point.
    Commit,
    /// The head op (the newest prepared).
    Head,
}

impl Series {
    fn name(self) -> &'static str {
        match self {
            Series::Commit => "commit",
            Series::Head => "head",
        }
    }
}

/// One recorded event, kept structured and rendered only when written.
#[derive(Clone, Debug)]
enum Event {
    /// A replica's group was in `status` in `view` from tick `from` to tick `to`.
    State {
        from: u64,
        to: u64,
        replica: usize,
        group: u64,
        status: &'static str,
        view: u64,
    },
    /// A group's counter on a replica moved to `value`.
    Counter {
        tick: u64,
        replica: usize,
        group: u64,
        series: Series,
        value: u64,
    },
    /// A checkpoint at `op` became durable.
    Checkpoint {
        tick: u64,
        replica: usize,
        group: u64,
        op: u64,
    },
    /// A client's request, from its send to its final answer (or the end of the run).
    Request {
        from: u64,
        to: u64,
        client: usize,
        request: u64,
        what: String,
        outcome: String,
    },
    /// An answer to a request the trace never saw sent.
    UnmatchedAnswer {
        tick: u64,
        client: usize,
        request: u64,
        outcome: String,
    },
    /// A fault on a lane.
    Fault {
        tick: u64,
        lane: Lane,
        kind: &'static str,
        detail: String,
    },
    /// The failing check.
    Failure { tick: u64, check: String, detail: String },
}

impl Event {
    /// The tick the event starts at (the order events are written in).
    fn start(&self) -> u64 {
        match self {
            Event::State { from, .. } | Event::Request { from, .. } => *from,
            Event::Counter { tick, .. }
            | Event::Checkpoint { tick, .. }
            | Event::UnmatchedAnswer { tick, .. }
            | Event::Fault { tick, .. }
            | Event::Failure { tick, .. } => *tick,
        }
    }
}

/// A request sent and not answered yet.
#[derive(Clone, Debug)]
struct OpenRequest {
    from: u64,
    what: String,
}

/// Records one run's timeline; see the module documentation.
#[derive(Clone, Debug)]
pub struct TraceRecorder {
    /// Replicas named in the output: the count given, or more if calls named more.
    replicas: usize,
    /// Clients named in the output, likewise.
    clients: usize,
    /// Slots in all (closed events plus open spans).
    events_max: usize,
    /// Closed spans and instants, in recording order.
    events: Vec<Event>,
    /// Events refused at the cap.
    dropped: u64,
    /// Every (replica, group)'s last reported status and view.
    states: BTreeMap<(usize, u64), (&'static str, u64)>,
    /// The tick each open state span started at (each holds a slot of the cap). A state
    /// refused at the cap has an entry in `states` and none here.
    open_states: BTreeMap<(usize, u64), u64>,
    /// Requests sent and not answered (each holds a slot of the cap).
    open_requests: BTreeMap<(usize, u64), OpenRequest>,
    /// Every counter's last recorded value.
    counters: BTreeMap<(usize, u64, Series), u64>,
    /// Each group's thread id, in first-seen order (the metadata group first).
    group_tids: BTreeMap<u64, u64>,
    /// The (replica, group) pairs that need a thread name.
    threads: BTreeSet<(usize, u64)>,
    /// The newest tick any call named.
    last_tick: u64,
    /// The compact timeline, recorded alongside.
    timeline: TimelineRecorder,
}

/// The thread id of a replica's metadata group; partition groups follow in first-seen
/// order. Thread 0 of every process carries its process-wide instants.
const METADATA_TID: u64 = 1;

impl TraceRecorder {
    /// A recorder for a run of `replicas` replicas and `clients` clients, keeping at most
    /// [`TRACE_EVENTS_MAX`] events.
    pub fn new(replicas: usize, clients: usize) -> Self {
        Self::with_events_max(replicas, clients, TRACE_EVENTS_MAX)
    }

    /// A recorder keeping at most `events_max` events, the last
    /// [`TRACE_FAILURE_RESERVE_EVENTS`] of them for failures: for tests, and for callers
    /// that want a smaller file.
    pub fn with_events_max(replicas: usize, clients: usize, events_max: usize) -> Self {
        TraceRecorder {
            replicas,
            clients,
            events_max,
            events: Vec::new(),
            dropped: 0,
            states: BTreeMap::new(),
            open_states: BTreeMap::new(),
            open_requests: BTreeMap::new(),
            counters: BTreeMap::new(),
            group_tids: BTreeMap::from([(METADATA_GROUP, METADATA_TID)]),
            threads: BTreeSet::new(),
            last_tick: 0,
            timeline: TimelineRecorder::new(replicas),
        }
    }

    /// Replica `replica`'s replica of `group` (0 = the metadata group, else a partition
    /// group id, printed as hex) is in `status` ("normal", "view-change", "recovering",
    /// "down") in `view`. Called every tick for every (replica, group); only a change
    /// closes the previous span of that (replica, group) and opens a new one (named like
    /// "normal v3", args `{status, view}`). A replica already "down" stays in its span
    /// whatever view it is reported in.
    pub fn replica_state(&mut self, tick: u64, replica: usize, group: u64, status: &'static str, view: u64) {
        self.saw_replica(tick, replica, group);
        if let Some(&(old_status, old_view)) = self.states.get(&(replica, group))
            && old_status == status
            && (old_view == view || status == STATUS_DOWN)
        {
            return;
        }
        self.close_state(tick, (replica, group));
        self.states.insert((replica, group), (status, view));
        if self.take_slot() {
            self.open_states.insert((replica, group), tick);
        }
        if group == METADATA_GROUP {
            self.timeline.state(tick, replica, status, view);
        }
    }

    /// The replica no longer hosts `group` (deleted, or the replica lost it): its span
    /// closes at `tick`, and a later report of it opens a new one. Groups a replica
    /// stops reporting without this call stay open until [`TraceRecorder::finish`].
    pub fn group_closed(&mut self, tick: u64, replica: usize, group: u64) {
        self.saw_tick(tick);
        self.close_state(tick, (replica, group));
        self.states.remove(&(replica, group));
        if group == METADATA_GROUP {
            self.timeline.close(tick, replica);
        }
    }

    /// The group's commit point on that replica moved (a Chrome counter event "C";
    /// only changes are recorded).
    pub fn commit(&mut self, tick: u64, replica: usize, group: u64, commit: u64) {
        self.counter(tick, replica, group, Series::Commit, commit);
    }

    /// The group's head op (prepared) moved on that replica: a counter too ("head").
    pub fn head(&mut self, tick: u64, replica: usize, group: u64, head: u64) {
        self.counter(tick, replica, group, Series::Head, head);
    }

    /// A checkpoint at `op` became durable: an instant on the group's thread.
    pub fn checkpoint(&mut self, tick: u64, replica: usize, group: u64, op: u64) {
        self.saw_replica(tick, replica, group);
        self.push(Event::Checkpoint {
            tick,
            replica,
            group,
            op,
        });
    }

    /// Client `client` sent request `request` (its number), described by `what`; a span
    /// opens. Sending a request already open restarts nothing (the first send counts).
    pub fn request_sent(&mut self, tick: u64, client: usize, request: u64, what: &str) {
        self.saw_client(tick, client);
        if self.open_requests.contains_key(&(client, request)) {
            return;
        }
        if self.take_slot() {
            let what = what.to_owned();
            self.open_requests
                .insert((client, request), OpenRequest { from: tick, what });
        }
    }

    /// The request got its final answer `outcome` (e.g. "ok", "refused", "unknown"): the
    /// span closes (an "X" complete event from send to answer). An answer to a request
    /// the trace has no open span for is an instant of its own.
    pub fn request_answered(&mut self, tick: u64, client: usize, request: u64, outcome: &str) {
        self.saw_client(tick, client);
        match self.open_requests.remove(&(client, request)) {
            // The span's slot was taken when it opened.
            Some(open) => self.events.push(Event::Request {
                from: open.from,
                to: tick,
                client,
                request,
                what: open.what,
                outcome: outcome.to_owned(),
            }),
            None => self.push(Event::UnmatchedAnswer {
                tick,
                client,
                request,
                outcome: outcome.to_owned(),
            }),
        }
    }

    /// A fault on a lane: `kind` like "crash", "restart", "power-loss", "partition",
    /// "heal", "clog", "disk-errors-on", "disk-errors-off", "disk-fault", "rot",
    /// "outage"; `detail` is free text. An instant (scope "p" on a replica's or a
    /// client's lane, "g" on the network's or the cluster's).
    ///
    /// A "crash" or "power-loss" on a replica closes the spans of every group it hosts
    /// and puts its metadata group "down" (in the view it was in) until the next
    /// [`TraceRecorder::replica_state`] of it, so the harness need not report "down".
    pub fn fault(&mut self, tick: u64, lane: Lane, kind: &'static str, detail: String) {
        self.saw_tick(tick);
        match lane {
            Lane::Replica(replica) => self.replicas = self.replicas.max(replica.saturating_add(1)),
            Lane::Client(client) => self.clients = self.clients.max(client.saturating_add(1)),
            Lane::Network | Lane::Cluster => {}
        }
        self.timeline.fault(tick, lane, kind, &detail);
        self.push(Event::Fault {
            tick,
            lane,
            kind,
            detail,
        });
        if let Lane::Replica(replica) = lane
            && matches!(kind, "crash" | "power-loss")
        {
            let hosted: Vec<u64> = self
                .states
                .range((replica, 0)..=(replica, u64::MAX))
                .map(|(&(_, group), _)| group)
                .filter(|&group| group != METADATA_GROUP)
                .collect();
            for group in hosted {
                self.close_state(tick, (replica, group));
                self.states.remove(&(replica, group));
            }
            let view = self.states.get(&(replica, METADATA_GROUP)).map_or(0, |&(_, view)| view);
            self.replica_state(tick, replica, METADATA_GROUP, STATUS_DOWN, view);
        }
    }

    /// The failing check: a final marked instant (global scope, named
    /// "FAILED: <check>", args `{check, detail}`). Kept even when the trace is full (up
    /// to [`TRACE_FAILURE_RESERVE_EVENTS`] failures); the timeline keeps the first.
    pub fn failure(&mut self, tick: u64, check: &str, detail: &str) {
        self.saw_tick(tick);
        self.timeline.failure(tick, check, detail);
        if self.used() < self.events_max {
            self.events.push(Event::Failure {
                tick,
                check: check.to_owned(),
                detail: detail.to_owned(),
            });
        } else {
            self.dropped += 1;
        }
    }

    /// Close every open span at `tick` (the end of the run): replica states and
    /// unanswered requests (outcome "open at end"). Idempotent.
    pub fn finish(&mut self, tick: u64) {
        self.saw_tick(tick);
        // The spans closed here go before the failure marks at the end, so the failing
        // check stays the final event.
        let failures_from = self.events.len()
            - self
                .events
                .iter()
                .rev()
                .take_while(|event| matches!(event, Event::Failure { .. }))
                .count();
        let failures = self.events.split_off(failures_from);
        let states: Vec<(usize, u64)> = self.open_states.keys().copied().collect();
        for key in states {
            self.close_state(tick, key);
        }
        for ((client, request), open) in std::mem::take(&mut self.open_requests) {
            self.events.push(Event::Request {
                from: open.from,
                to: tick,
                client,
                request,
                what: open.what,
                outcome: REQUEST_OPEN_AT_END.to_owned(),
            });
        }
        self.events.extend(failures);
        self.timeline.finish(tick);
    }

    /// Events kept: closed spans and instants, plus the spans still open (each is
    /// written as one event).
    pub fn events(&self) -> usize {
        self.used()
    }

    /// Events refused because the trace was full.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The compact drawing data: the metadata group's spans and the faults per replica,
    /// the network's (and the cluster's) faults, the failure. Spans still open end at
    /// the newest tick recorded.
    pub fn timeline(&self) -> Timeline {
        self.timeline.export(self.last_tick, self.replicas)
    }

    /// Slots taken: closed events plus open spans.
    fn used(&self) -> usize {
        self.events.len() + self.open_states.len() + self.open_requests.len()
    }

    /// Take a slot for an ordinary event, or count it dropped. The last
    /// [`TRACE_FAILURE_RESERVE_EVENTS`] slots are the failure's.
    fn take_slot(&mut self) -> bool {
        if self.used() < self.events_max.saturating_sub(TRACE_FAILURE_RESERVE_EVENTS) {
            true
        } else {
            self.dropped += 1;
            false
        }
    }

    fn push(&mut self, event: Event) {
        if self.take_slot() {
            self.events.push(event);
        }
    }

    /// Close the open span of `key`, if any, at `tick` (its slot is already taken).
    fn close_state(&mut self, tick: u64, key: (usize, u64)) {
        let Some(from) = self.open_states.remove(&key) else {
            return;
        };
        let Some(&(status, view)) = self.states.get(&key) else {
            return;
        };
        let (replica, group) = key;
        self.events.push(Event::State {
            from,
            to: tick,
            replica,
            group,
            status,
            view,
        });
    }

    fn counter(&mut self, tick: u64, replica: usize, group: u64, series: Series, value: u64) {
        self.saw_replica(tick, replica, group);
        let key = (replica, group, series);
        if self.counters.get(&key) == Some(&value) {
            return;
        }
        // The new value is remembered even when its event is refused, so a value
        // reported again is not counted as dropped twice.
        self.counters.insert(key, value);
        if self.take_slot() {
            self.events.push(Event::Counter {
                tick,
                replica,
                group,
                series,
                value,
            });
        }
    }

    fn saw_tick(&mut self, tick: u64) {
        self.last_tick = self.last_tick.max(tick);
    }

    fn saw_replica(&mut self, tick: u64, replica: usize, group: u64) {
        self.saw_tick(tick);
        self.replicas = self.replicas.max(replica.saturating_add(1));
        let next = self.group_tids.len() as u64 + METADATA_TID;
        self.group_tids.entry(group).or_insert(next);
        self.threads.insert((replica, group));
    }

    fn saw_client(&mut self, tick: u64, client: usize) {
        self.saw_tick(tick);
        self.clients = self.clients.max(client.saturating_add(1));
    }
}

/// The outcome written for a request still unanswered when the run ended.
pub const REQUEST_OPEN_AT_END: &str = "open at end";

/// A group's name: "metadata", or "partition 0x..." with the group id in hex.
pub fn group_name(group: u64) -> String {
    if group == METADATA_GROUP {
        "metadata".to_owned()
    } else {
        format!("partition {group:#x}")
    }
}
