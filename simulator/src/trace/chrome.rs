//! Writing a [`TraceRecorder`] as Chrome trace event JSON (the "JSON object format":
//! `{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}`).
//!
//! Processes: one per replica ("replica 0", ...; one thread per group it hosts), one per
//! client ("client 0", ...; one thread, "requests"), then "network" and "cluster",
//! ordered by `sort_index` in that order. Events follow the metadata events in the order
//! of their start tick (recording order among equals), so the file reads top to bottom;
//! the note on dropped events, if any, comes last.

use std::borrow::Cow;
use std::io::{self, Write};

use serde::Serialize;
use serde_json::{Value, json};

use super::{Event, Lane, METADATA_TID, MICROS_PER_TICK, REQUEST_OPEN_AT_END, STATUS_DOWN, TraceRecorder, group_name};

/// The thread of a process's process-wide and global instants (faults, the failure).
const PROCESS_TID: u64 = 0;

/// A client's one thread: its requests.
const REQUESTS_TID: u64 = 1;

/// One event of the Chrome format, as written.
#[derive(Serialize)]
struct ChromeEvent<'a> {
    name: Cow<'a, str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'static str>,
    ph: &'static str,
    ts: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<u64>,
    pid: u64,
    tid: u64,
    /// An instant's scope: "t" thread, "p" process, "g" global.
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    /// A colour name `chrome://tracing` knows (Perfetto picks its own).
    #[serde(skip_serializing_if = "Option::is_none")]
    cname: Option<&'static str>,
    args: Value,
}

/// Microseconds of virtual time at `tick`.
fn micros(tick: u64) -> u64 {
    tick.saturating_mul(MICROS_PER_TICK)
}

/// Process ids and sort order: replicas, then clients, then the network and the cluster.
struct Layout {
    replicas: u64,
    clients: u64,
}

impl Layout {
    /// The process's sort index; its pid is one more (pid 0 is left unused, as some
    /// viewers treat it as "no process").
    fn sort_index(&self, lane: Lane) -> u64 {
        match lane {
            Lane::Replica(replica) => replica as u64,
            Lane::Client(client) => self.replicas + client as u64,
            Lane::Network => self.replicas + self.clients,
            Lane::Cluster => self.replicas + self.clients + 1,
        }
    }

    fn pid(&self, lane: Lane) -> u64 {
        self.sort_index(lane) + 1
    }
}

/// A `chrome://tracing` colour for a replica status.
fn status_colour(status: &str) -> Option<&'static str> {
    match status {
        "normal" => Some("good"),
        "view-change" => Some("bad"),
        "recovering" => Some("yellow"),
        STATUS_DOWN => Some("grey"),
        _ => None,
    }
}

/// Writes comma-separated events, one per line.
struct EventWriter<'w, W: Write> {
    out: &'w mut W,
    first: bool,
}

impl<W: Write> EventWriter<'_, W> {
    fn write(&mut self, event: &ChromeEvent<'_>) -> io::Result<()> {
        self.out.write_all(if self.first { b"\n" } else { b",\n" })?;
        self.first = false;
        serde_json::to_writer(&mut *self.out, event)?;
        Ok(())
    }
}

impl TraceRecorder {
    /// [`TraceRecorder::write_chrome_json`] into a new file at `path` (`--trace FILE`).
    pub fn write_file(&self, path: &std::path::Path) -> io::Result<()> {
        let mut file = std::fs::File::create(path)?;
        self.write_chrome_json(&mut file)
    }

    /// The Chrome trace JSON object: `{"traceEvents":[...], "displayTimeUnit":"ms",
    /// "otherData":{"events_kept", "events_dropped", "ticks", "micros_per_tick",
    /// "note"}}`. "M" metadata events name the processes ("replica 0", "client 1",
    /// "network", "cluster", replicas first by `sort_index`) and threads (a replica's
    /// group: "metadata" or "partition 0x..", the same thread id for a group on every
    /// replica, in first-seen order; a client's "requests"). When events were dropped, a
    /// last global instant says how many. Spans still open (no [`TraceRecorder::finish`]
    /// yet) are written as ending at the newest tick recorded.
    ///
    /// The output is a pure function of the calls made: the same calls write the same
    /// bytes.
    pub fn write_chrome_json(&self, out: &mut dyn Write) -> io::Result<()> {
        let mut out = io::BufWriter::new(out);
        let layout = Layout {
            replicas: self.replicas as u64,
            clients: self.clients as u64,
        };
        out.write_all(b"{\"traceEvents\":[")?;
        let mut writer = EventWriter {
            out: &mut out,
            first: true,
        };
        for event in self.metadata_events(&layout) {
            writer.write(&event)?;
        }
        let open = self.open_events();
        let mut events: Vec<&Event> = self.events.iter().chain(&open).collect();
        // Stable: recording order among events of the same tick.
        events.sort_by_key(|event| event.start());
        for event in events {
            writer.write(&self.render(&layout, event))?;
        }
        if self.dropped > 0 {
            writer.write(&ChromeEvent {
                name: Cow::Owned(format!("trace truncated: {} events dropped", self.dropped)),
                cat: Some("trace"),
                ph: "i",
                ts: micros(self.last_tick),
                dur: None,
                pid: layout.pid(Lane::Cluster),
                tid: PROCESS_TID,
                s: Some("g"),
                cname: Some("terrible"),
                args: json!({ "dropped": self.dropped, "events_max": self.events_max }),
            })?;
        }
        out.write_all(b"\n],\"displayTimeUnit\":\"ms\",\"otherData\":")?;
        let note = format!(
            "virtual time of one simulated run: 1 tick = {MICROS_PER_TICK} us (ts and dur in microseconds); at most \
             {} events kept, {} dropped",
            self.events_max, self.dropped
        );
        let other = json!({
            "events_kept": self.events(),
            "events_dropped": self.dropped,
            "ticks": self.last_tick,
            "micros_per_tick": MICROS_PER_TICK,
            "note": note,
        });
        serde_json::to_writer(&mut out, &other)?;
        out.write_all(b"}\n")?;
        out.flush()
    }

    /// The spans still open, as if they closed at the newest tick recorded.
    fn open_events(&self) -> Vec<Event> {
        let states = self.open_states.iter().filter_map(|(&(replica, group), &from)| {
            let &(status, view) = self.states.get(&(replica, group))?;
            Some(Event::State {
                from,
                to: self.last_tick,
                replica,
                group,
                status,
                view,
            })
        });
        let requests = self
            .open_requests
            .iter()
            .map(|(&(client, request), open)| Event::Request {
                from: open.from,
                to: self.last_tick,
                client,
                request,
                what: open.what.clone(),
                outcome: REQUEST_OPEN_AT_END.to_owned(),
            });
        states.chain(requests).collect()
    }

    fn tid(&self, group: u64) -> u64 {
        // Every group recorded was given a thread id when first seen.
        self.group_tids.get(&group).copied().unwrap_or(METADATA_TID)
    }

    fn metadata_events(&self, layout: &Layout) -> Vec<ChromeEvent<'static>> {
        let meta = |name: &'static str, lane: Lane, tid: u64, args: Value| ChromeEvent {
            name: Cow::Borrowed(name),
            cat: None,
            ph: "M",
            ts: 0,
            dur: None,
            pid: layout.pid(lane),
            tid,
            s: None,
            cname: None,
            args,
        };
        let mut events = Vec::new();
        let mut process = |lane: Lane, name: String| {
            let sort_index = layout.sort_index(lane);
            events.push(meta("process_name", lane, PROCESS_TID, json!({ "name": name })));
            events.push(meta(
                "process_sort_index",
                lane,
                PROCESS_TID,
                json!({ "sort_index": sort_index }),
            ));
        };
        for replica in 0..self.replicas {
            process(Lane::Replica(replica), format!("replica {replica}"));
        }
        for client in 0..self.clients {
            process(Lane::Client(client), format!("client {client}"));
        }
        process(Lane::Network, "network".to_owned());
        process(Lane::Cluster, "cluster".to_owned());
        for &(replica, group) in &self.threads {
            let lane = Lane::Replica(replica);
            let tid = self.tid(group);
            events.push(meta("thread_name", lane, tid, json!({ "name": group_name(group) })));
            events.push(meta("thread_sort_index", lane, tid, json!({ "sort_index": tid })));
        }
        for client in 0..self.clients {
            let lane = Lane::Client(client);
            events.push(meta("thread_name", lane, REQUESTS_TID, json!({ "name": "requests" })));
        }
        events
    }

    fn render<'e>(&self, layout: &Layout, event: &'e Event) -> ChromeEvent<'e> {
        match event {
            &Event::State {
                from,
                to,
                replica,
                group,
                status,
                view,
            } => ChromeEvent {
                name: Cow::Owned(format!("{status} v{view}")),
                cat: Some("state"),
                ph: "X",
                ts: micros(from),
                dur: Some(micros(to.saturating_sub(from))),
                pid: layout.pid(Lane::Replica(replica)),
                tid: self.tid(group),
                s: None,
                cname: status_colour(status),
                args: json!({ "status": status, "view": view }),
            },
            &Event::Counter {
                tick,
                replica,
                group,
                series,
                value,
            } => ChromeEvent {
                name: Cow::Owned(format!("{} {}", series.name(), group_name(group))),
                cat: Some("progress"),
                ph: "C",
                ts: micros(tick),
                dur: None,
                pid: layout.pid(Lane::Replica(replica)),
                tid: self.tid(group),
                s: None,
                cname: None,
                args: json!({ "op": value }),
            },
            &Event::Checkpoint {
                tick,
                replica,
                group,
                op,
            } => ChromeEvent {
                name: Cow::Borrowed("checkpoint"),
                cat: Some("checkpoint"),
                ph: "i",
                ts: micros(tick),
                dur: None,
                pid: layout.pid(Lane::Replica(replica)),
                tid: self.tid(group),
                s: Some("t"),
                cname: None,
                args: json!({ "op": op }),
            },
            Event::Request {
                from,
                to,
                client,
                request,
                what,
                outcome,
            } => ChromeEvent {
                name: Cow::Borrowed(what),
                cat: Some("request"),
                ph: "X",
                ts: micros(*from),
                dur: Some(micros(to.saturating_sub(*from))),
                pid: layout.pid(Lane::Client(*client)),
                tid: REQUESTS_TID,
                s: None,
                cname: None,
                args: json!({ "request": request, "outcome": outcome }),
            },
            Event::UnmatchedAnswer {
                tick,
                client,
                request,
                outcome,
            } => ChromeEvent {
                name: Cow::Owned(format!("answer without a send: {outcome}")),
                cat: Some("request"),
                ph: "i",
                ts: micros(*tick),
                dur: None,
                pid: layout.pid(Lane::Client(*client)),
                tid: REQUESTS_TID,
                s: Some("t"),
                cname: None,
                args: json!({ "request": request, "outcome": outcome }),
            },
            Event::Fault {
                tick,
                lane,
                kind,
                detail,
            } => ChromeEvent {
                name: Cow::Borrowed(kind),
                cat: Some("fault"),
                ph: "i",
                ts: micros(*tick),
                dur: None,
                pid: layout.pid(*lane),
                tid: PROCESS_TID,
                s: Some(match lane {
                    Lane::Replica(_) | Lane::Client(_) => "p",
                    Lane::Network | Lane::Cluster => "g",
                }),
                cname: None,
                args: json!({ "detail": detail }),
            },
            Event::Failure { tick, check, detail } => ChromeEvent {
                name: Cow::Owned(format!("FAILED: {check}")),
                cat: Some("failure"),
                ph: "i",
                ts: micros(*tick),
                dur: None,
                pid: layout.pid(Lane::Cluster),
                tid: PROCESS_TID,
                s: Some("g"),
                cname: Some("terrible"),
                args: json!({ "check": check, "detail": detail }),
            },
        }
    }
}
