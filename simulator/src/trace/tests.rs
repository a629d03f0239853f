//! The trace of a short synthetic run, read back as JSON: processes and threads named,
//! states as complete spans in virtual time, counters on change, instants for faults
//! and the failure, the cap, byte-for-byte determinism, and the compact timeline.
use serde_json::Value;

use super::*;

/// A partition group's id, as the harness would pass it.
const PARTITION: u64 = 0x1a2b;

/// Three replicas and two clients for 26 ticks:
/// - ticks 0..=9: every replica normal in view 0 in the metadata group and the
///   partition, reported every tick; commits, a head, a checkpoint, two requests;
/// - tick 10: replica 2 crashes; ticks 12 and 14: replicas 0 and 1 change view to 1;
/// - ticks 15 and 18: a partition and its heal;
/// - tick 20: replica 2 restarts, recovers at 21, normal in view 1 at 23;
/// - tick 25: a check fails; the run finishes at 26.
fn synthetic_run() -> TraceRecorder {
    let mut trace = TraceRecorder::new(3, 2);
    for tick in 0..10 {
        for replica in 0..3 {
            trace.replica_state(tick, replica, METADATA_GROUP, "normal", 0);
            trace.replica_state(tick, replica, PARTITION, "normal", 0);
        }
    }
    trace.commit(2, 0, METADATA_GROUP, 1);
    trace.commit(3, 0, METADATA_GROUP, 1);
    trace.commit(4, 0, METADATA_GROUP, 2);
    trace.head(2, 0, METADATA_GROUP, 3);
    trace.checkpoint(5, 1, METADATA_GROUP, 2);
    trace.request_sent(2, 0, 1, "create topic t");
    trace.request_answered(6, 0, 1, "ok");
    trace.request_sent(3, 1, 1, "send partition 0");
    trace.fault(10, Lane::Replica(2), "crash", "replica 2 crashed".to_owned());
    for replica in 0..2 {
        trace.replica_state(12, replica, METADATA_GROUP, "view-change", 1);
        trace.replica_state(14, replica, METADATA_GROUP, "normal", 1);
    }
    trace.fault(15, Lane::Network, "partition", "{0} | {1, 2}".to_owned());
    trace.fault(18, Lane::Network, "heal", String::new());
    trace.fault(20, Lane::Replica(2), "restart", String::new());
    trace.replica_state(21, 2, METADATA_GROUP, "recovering", 1);
    trace.replica_state(23, 2, METADATA_GROUP, "normal", 1);
    trace.failure(25, "commit regressed", "replica 0 <view 1> & op 2");
    trace.finish(26);
    trace
}

fn chrome_json(trace: &TraceRecorder) -> Vec<u8> {
    let mut out = Vec::new();
    trace.write_chrome_json(&mut out).expect("writing to a Vec never fails");
    out
}

fn parse(trace: &TraceRecorder) -> Value {
    serde_json::from_slice(&chrome_json(trace)).expect("the trace is JSON")
}

fn events(doc: &Value) -> &Vec<Value> {
    doc["traceEvents"].as_array().expect("traceEvents is an array")
}

/// The pid of the process named `name`.
fn pid_of(doc: &Value, name: &str) -> u64 {
    events(doc)
        .iter()
        .find(|e| e["ph"] == "M" && e["name"] == "process_name" && e["args"]["name"] == name)
        .and_then(|e| e["pid"].as_u64())
        .unwrap_or_else(|| panic!("no process named {name:?}"))
}

/// The tid of the thread named `name` in process `pid`.
fn tid_of(doc: &Value, pid: u64, name: &str) -> u64 {
    events(doc)
        .iter()
        .find(|e| e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == pid && e["args"]["name"] == name)
        .and_then(|e| e["tid"].as_u64())
        .unwrap_or_else(|| panic!("no thread {name:?} in pid {pid}"))
}

/// (name, ts, dur) of every complete event on one thread, in file order.
fn spans(doc: &Value, pid: u64, tid: u64) -> Vec<(String, u64, u64)> {
    events(doc)
        .iter()
        .filter(|e| e["ph"] == "X" && e["pid"] == pid && e["tid"] == tid)
        .map(|e| {
            let name = e["name"].as_str().expect("a name").to_owned();
            (name, e["ts"].as_u64().expect("ts"), e["dur"].as_u64().expect("dur"))
        })
        .collect()
}

/// A span of `from..to` ticks as (name, ts, dur) in microseconds.
fn span(name: &str, from: u64, to: u64) -> (String, u64, u64) {
    (name.to_owned(), from * MICROS_PER_TICK, (to - from) * MICROS_PER_TICK)
}

#[test]
fn metadata_names_every_process_replicas_first_and_each_group_thread() {
    let doc = parse(&synthetic_run());
    let names = [
        "replica 0",
        "replica 1",
        "replica 2",
        "client 0",
        "client 1",
        "network",
        "cluster",
    ];
    let sort_index = |pid: u64| {
        events(&doc)
            .iter()
            .find(|e| e["ph"] == "M" && e["name"] == "process_sort_index" && e["pid"] == pid)
            .and_then(|e| e["args"]["sort_index"].as_u64())
            .expect("every process has a sort index")
    };
    let order: Vec<u64> = names.iter().map(|name| sort_index(pid_of(&doc, name))).collect();
    assert_eq!(order, [0, 1, 2, 3, 4, 5, 6], "replicas, clients, network, cluster");

    for replica in 0..3 {
        let pid = pid_of(&doc, &format!("replica {replica}"));
        assert_eq!(tid_of(&doc, pid, "metadata"), 1);
        assert_eq!(
            tid_of(&doc, pid, "partition 0x1a2b"),
            2,
            "the same thread id on every replica"
        );
    }
    for client in 0..2 {
        let pid = pid_of(&doc, &format!("client {client}"));
        assert_eq!(tid_of(&doc, pid, "requests"), 1);
    }
    assert_eq!(doc["displayTimeUnit"], "ms");
}

#[test]
fn replica_states_are_complete_spans_from_change_to_change() {
    let doc = parse(&synthetic_run());
    let replica_0 = pid_of(&doc, "replica 0");
    assert_eq!(
        spans(&doc, replica_0, 1),
        [
            span("normal v0", 0, 12),
            span("view-change v1", 12, 14),
            span("normal v1", 14, 26)
        ],
        "ten reports of normal v0 make one span, closed by the view change"
    );
    let replica_2 = pid_of(&doc, "replica 2");
    assert_eq!(
        spans(&doc, replica_2, 1),
        [
            span("normal v0", 0, 10),
            span("down v0", 10, 21),
            span("recovering v1", 21, 23),
            span("normal v1", 23, 26),
        ],
        "the crash puts the metadata group down until the next state reported"
    );
    assert_eq!(
        spans(&doc, replica_2, 2),
        [span("normal v0", 0, 10)],
        "the crash closes the partition's span, and no report reopens it"
    );
    let normal = events(&doc)
        .iter()
        .find(|e| e["ph"] == "X" && e["pid"] == replica_0 && e["name"] == "normal v1")
        .expect("the span");
    assert_eq!(normal["args"]["status"], "normal");
    assert_eq!(normal["args"]["view"], 1);
}

#[test]
fn an_unchanged_state_opens_no_new_span() {
    let mut trace = TraceRecorder::new(1, 0);
    for tick in 0..100 {
        trace.replica_state(tick, 0, METADATA_GROUP, "normal", 4);
    }
    assert_eq!(trace.events(), 1, "one open span");
    trace.finish(100);
    let doc = parse(&trace);
    assert_eq!(spans(&doc, pid_of(&doc, "replica 0"), 1), [span("normal v4", 0, 100)]);
}

#[test]
fn commits_and_heads_are_counters_recorded_only_when_they_move() {
    let doc = parse(&synthetic_run());
    let replica_0 = pid_of(&doc, "replica 0");
    let counters: Vec<(String, u64, u64)> = events(&doc)
        .iter()
        .filter(|e| e["ph"] == "C" && e["pid"] == replica_0)
        .map(|e| {
            let name = e["name"].as_str().expect("a name").to_owned();
            (
                name,
                e["ts"].as_u64().expect("ts"),
                e["args"]["op"].as_u64().expect("op"),
            )
        })
        .collect();
    let micros = |tick: u64| tick * MICROS_PER_TICK;
    assert_eq!(
        counters,
        [
            ("commit metadata".to_owned(), micros(2), 1),
            ("head metadata".to_owned(), micros(2), 3),
            ("commit metadata".to_owned(), micros(4), 2),
        ],
        "commit 1 reported again at tick 3 is not recorded"
    );
}

#[test]
fn checkpoints_are_instants_on_their_group_thread() {
    let doc = parse(&synthetic_run());
    let checkpoints: Vec<&Value> = events(&doc).iter().filter(|e| e["name"] == "checkpoint").collect();
    assert_eq!(checkpoints.len(), 1);
    let checkpoint = checkpoints[0];
    assert_eq!(checkpoint["ph"], "i");
    assert_eq!(checkpoint["s"], "t");
    assert_eq!(checkpoint["pid"], pid_of(&doc, "replica 1"));
    assert_eq!(checkpoint["tid"], 1);
    assert_eq!(checkpoint["ts"], 5 * MICROS_PER_TICK);
    assert_eq!(checkpoint["args"]["op"], 2);
}

#[test]
fn requests_span_from_send_to_answer_and_unanswered_ones_end_with_the_run() {
    let doc = parse(&synthetic_run());
    let client_0 = pid_of(&doc, "client 0");
    let client_1 = pid_of(&doc, "client 1");
    assert_eq!(spans(&doc, client_0, 1), [span("create topic t", 2, 6)]);
    assert_eq!(spans(&doc, client_1, 1), [span("send partition 0", 3, 26)]);
    let outcome = |pid: u64| {
        events(&doc)
            .iter()
            .find(|e| e["ph"] == "X" && e["pid"] == pid)
            .map(|e| e["args"]["outcome"].clone())
            .expect("a request span")
    };
    assert_eq!(outcome(client_0), "ok");
    assert_eq!(outcome(client_1), REQUEST_OPEN_AT_END);
}

#[test]
fn faults_are_instants_process_scoped_on_processes_and_global_on_the_network() {
    let doc = parse(&synthetic_run());
    let faults: Vec<(&str, u64, u64, &str)> = events(&doc)
        .iter()
        .filter(|e| e["cat"] == "fault")
        .map(|e| {
            assert_eq!(e["ph"], "i");
            let name = e["name"].as_str().expect("a name");
            let scope = e["s"].as_str().expect("a scope");
            (
                name,
                e["ts"].as_u64().expect("ts"),
                e["pid"].as_u64().expect("pid"),
                scope,
            )
        })
        .collect();
    let replica_2 = pid_of(&doc, "replica 2");
    let network = pid_of(&doc, "network");
    let micros = |tick: u64| tick * MICROS_PER_TICK;
    assert_eq!(
        faults,
        [
            ("crash", micros(10), replica_2, "p"),
            ("partition", micros(15), network, "g"),
            ("heal", micros(18), network, "g"),
            ("restart", micros(20), replica_2, "p"),
        ]
    );
    let partition = events(&doc)
        .iter()
        .find(|e| e["name"] == "partition")
        .expect("the partition");
    assert_eq!(partition["args"]["detail"], "{0} | {1, 2}");
}

#[test]
fn the_failure_is_a_global_instant_after_every_event_that_started_before_it() {
    let doc = parse(&synthetic_run());
    let all = events(&doc);
    let index = all
        .iter()
        .position(|e| e["name"] == "FAILED: commit regressed")
        .expect("the failure instant");
    let failure = &all[index];
    assert_eq!(failure["ph"], "i");
    assert_eq!(failure["s"], "g");
    assert_eq!(failure["pid"], pid_of(&doc, "cluster"));
    assert_eq!(failure["ts"], 25 * MICROS_PER_TICK);
    assert_eq!(failure["args"]["detail"], "replica 0 <view 1> & op 2");
    assert_eq!(
        index,
        all.len() - 1,
        "nothing in this run starts after the failing tick"
    );
    let starts: Vec<u64> = all.iter().map(|e| e["ts"].as_u64().expect("ts")).collect();
    assert!(
        starts.windows(2).all(|pair| pair[0] <= pair[1]),
        "events in start order"
    );
}

#[test]
fn finish_is_idempotent() {
    let mut once = synthetic_run();
    let twice = {
        let mut trace = synthetic_run();
        trace.finish(26);
        trace
    };
    assert_eq!(chrome_json(&once), chrome_json(&twice));
    once.finish(30);
    assert_eq!(once.events(), twice.events(), "nothing open is left to close");
}

#[test]
fn the_same_calls_write_the_same_bytes() {
    let first = chrome_json(&synthetic_run());
    let second = chrome_json(&synthetic_run());
    assert_eq!(first, second);
    assert!(first.ends_with(b"}\n"));
}

#[test]
fn the_other_data_counts_what_was_kept_and_dropped() {
    let trace = synthetic_run();
    let doc = parse(&trace);
    let other = &doc["otherData"];
    assert_eq!(other["events_kept"], trace.events() as u64);
    assert_eq!(other["events_dropped"], 0);
    assert_eq!(other["ticks"], 26);
    assert_eq!(other["micros_per_tick"], MICROS_PER_TICK);
    assert!(other["note"].as_str().is_some_and(|note| note.contains("virtual time")));
    let recorded = events(&doc).iter().filter(|e| e["ph"] != "M").count();
    assert_eq!(recorded, trace.events(), "every event kept is written once");
}

#[test]
fn the_cap_drops_and_counts_events_but_keeps_the_failure_and_closes_every_span() {
    const EVENTS_MAX: usize = 20;
    let mut trace = TraceRecorder::with_events_max(3, 1, EVENTS_MAX);
    for replica in 0..3 {
        trace.replica_state(0, replica, METADATA_GROUP, "normal", 0);
    }
    for op in 1..=100 {
        trace.commit(op, 0, METADATA_GROUP, op);
    }
    let ordinary = EVENTS_MAX - TRACE_FAILURE_RESERVE_EVENTS;
    assert_eq!(trace.events(), ordinary, "three open spans and 13 commits");
    assert_eq!(trace.dropped(), 100 - (ordinary as u64 - 3));
    trace.failure(101, "commit stuck", "replica 0");
    trace.finish(102);
    assert_eq!(trace.events(), ordinary + 1, "the failure took a reserved slot");
    assert!(trace.events() <= EVENTS_MAX);

    let doc = parse(&trace);
    let all = events(&doc);
    assert!(all.iter().any(|e| e["name"] == "FAILED: commit stuck"));
    let closed = all.iter().filter(|e| e["ph"] == "X").count();
    assert_eq!(closed, 3, "every span opened is closed");
    let last = all.last().expect("events");
    assert_eq!(
        last["name"],
        format!("trace truncated: {} events dropped", trace.dropped())
    );
    assert_eq!(doc["otherData"]["events_dropped"], trace.dropped());
}

#[test]
fn the_default_cap_is_trace_events_max() {
    let mut trace = TraceRecorder::new(1, 0);
    let calls = TRACE_EVENTS_MAX as u64 + 10;
    for op in 1..=calls {
        trace.commit(op, 0, METADATA_GROUP, op);
    }
    assert_eq!(trace.events(), TRACE_EVENTS_MAX - TRACE_FAILURE_RESERVE_EVENTS);
    assert_eq!(trace.dropped(), calls - trace.events() as u64);
}

#[test]
fn a_closed_group_ends_its_span_and_a_new_report_opens_another() {
    let mut trace = TraceRecorder::new(1, 0);
    trace.replica_state(0, 0, PARTITION, "normal", 2);
    trace.group_closed(5, 0, PARTITION);
    trace.replica_state(8, 0, PARTITION, "normal", 2);
    trace.finish(10);
    let doc = parse(&trace);
    let replica_0 = pid_of(&doc, "replica 0");
    let tid = tid_of(&doc, replica_0, "partition 0x1a2b");
    assert_eq!(
        spans(&doc, replica_0, tid),
        [span("normal v2", 0, 5), span("normal v2", 8, 10)]
    );
}

#[test]
fn the_timeline_has_a_lane_per_replica_then_the_network() {
    let timeline = synthetic_run().timeline();
    assert_eq!(timeline.ticks, 26);
    let names: Vec<&str> = timeline.lanes.iter().map(|lane| lane.name.as_str()).collect();
    assert_eq!(names, ["replica 0", "replica 1", "replica 2", "network"]);

    let span = |from: u64, to: u64, status: &str, view: u64| TimelineSpan {
        from,
        to,
        status: status.to_owned(),
        view,
    };
    assert_eq!(
        timeline.lanes[2].spans,
        [
            span(0, 10, "normal", 0),
            span(10, 21, "down", 0),
            span(21, 23, "recovering", 1),
            span(23, 26, "normal", 1)
        ],
        "the metadata group only"
    );
    let kinds = |lane: &TimelineLane| lane.marks.iter().map(|m| (m.tick, m.kind.clone())).collect::<Vec<_>>();
    assert_eq!(
        kinds(&timeline.lanes[2]),
        [(10, "crash".to_owned()), (20, "restart".to_owned())]
    );
    assert!(timeline.lanes[0].marks.is_empty());
    assert!(timeline.lanes[3].spans.is_empty());
    assert_eq!(
        kinds(&timeline.lanes[3]),
        [(15, "partition".to_owned()), (18, "heal".to_owned())]
    );
    let failure = timeline.failure.expect("the run failed");
    assert_eq!((failure.tick, failure.kind.as_str()), (25, "commit regressed"));
}

#[test]
fn the_timeline_of_an_unfinished_run_ends_its_open_spans_at_the_last_tick() {
    let mut trace = TraceRecorder::new(2, 0);
    trace.replica_state(0, 0, METADATA_GROUP, "normal", 0);
    trace.replica_state(7, 0, METADATA_GROUP, "view-change", 1);
    let timeline = trace.timeline();
    assert_eq!(timeline.ticks, 7);
    assert_eq!(
        timeline.lanes.len(),
        3,
        "two replicas, one never reported, and the network"
    );
    assert_eq!(timeline.lanes[0].spans.last().map(|s| (s.from, s.to)), Some((7, 7)));
    assert!(timeline.lanes[1].spans.is_empty());
    assert_eq!(timeline.failure, None);
}

#[test]
fn the_timeline_keeps_the_first_marks_of_a_lane_and_counts_the_rest() {
    let mut trace = TraceRecorder::new(1, 0);
    let faults = TIMELINE_MARKS_PER_LANE_MAX as u64 + 5;
    for tick in 0..faults {
        trace.fault(tick, Lane::Cluster, "outage", format!("outage {tick}"));
    }
    let timeline = trace.timeline();
    let network = timeline.lanes.last().expect("the network lane");
    assert_eq!(network.marks.len(), TIMELINE_MARKS_PER_LANE_MAX);
    assert_eq!(network.marks[0].detail, "outage 0");
    assert_eq!(network.marks_dropped, 5);
}

#[test]
fn the_timeline_survives_a_json_round_trip() {
    let timeline = synthetic_run().timeline();
    let json = serde_json::to_string(&timeline).expect("serializable");
    let back: Timeline = serde_json::from_str(&json).expect("deserializable");
    assert_eq!(back, timeline);
}
