//! The compact timeline: per replica, the metadata group's status and view spans and
//! the faults on that replica; one network lane with the network's and the cluster's
//! faults; the failing check. It goes into a campaign's `report.json`, so it is capped
//! per lane ([`TIMELINE_SPANS_PER_LANE_MAX`], [`TIMELINE_MARKS_PER_LANE_MAX`]), keeping
//! the first spans and marks and counting the rest.

use serde::{Deserialize, Serialize};

use super::Lane;

/// Spans kept per lane, the first ones. A lane of 2,000 views is already far more than
/// a drawing 1,100 pixels wide can tell apart, and keeps one run's timeline to about
/// 100 KB of JSON per replica at worst.
pub const TIMELINE_SPANS_PER_LANE_MAX: usize = 2_000;

/// Fault marks kept per lane, the first ones; same reasoning as
/// [`TIMELINE_SPANS_PER_LANE_MAX`].
pub const TIMELINE_MARKS_PER_LANE_MAX: usize = 2_000;

/// The name of the lane after the replicas'.
pub const NETWORK_LANE_NAME: &str = "network";

/// One run's timeline, for drawing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// The run's last tick.
    pub ticks: u64,
    /// One lane per replica, in order ("replica 0", ...), then the "network" lane.
    pub lanes: Vec<TimelineLane>,
    /// The failing tick and check (`kind` is the check's name), if the run failed.
    pub failure: Option<TimelineMark>,
}

/// One lane: a replica, or the network.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimelineLane {
    /// "replica 0", ..., or "network".
    pub name: String,
    /// The metadata group's status and view spans, in time order ("down" between a
    /// crash and the next state reported). None on the network lane.
    pub spans: Vec<TimelineSpan>,
    /// The faults on the lane, in time order.
    pub marks: Vec<TimelineMark>,
    /// Spans past [`TIMELINE_SPANS_PER_LANE_MAX`], not kept.
    #[serde(default)]
    pub spans_dropped: u64,
    /// Marks past [`TIMELINE_MARKS_PER_LANE_MAX`], not kept.
    #[serde(default)]
    pub marks_dropped: u64,
}

/// The metadata group on a replica was in `status` in `view` from tick `from` to tick `to`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineSpan {
    /// First tick.
    pub from: u64,
    /// Last tick (the next span's first).
    pub to: u64,
    /// "normal", "view-change", "recovering", "down", ...
    pub status: String,
    /// The view.
    pub view: u64,
}

/// Something that happened at one tick: a fault, or the failing check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineMark {
    /// The tick.
    pub tick: u64,
    /// The fault's kind ("crash", "partition", ...), or the failing check's name.
    pub kind: String,
    /// Free text.
    pub detail: String,
}

/// A lane being recorded.
#[derive(Clone, Debug, Default)]
struct LaneRecorder {
    spans: Vec<TimelineSpan>,
    /// The span still open: (from, status, view).
    open: Option<(u64, &'static str, u64)>,
    marks: Vec<TimelineMark>,
    spans_dropped: u64,
    marks_dropped: u64,
}

impl LaneRecorder {
    fn close(&mut self, tick: u64) {
        if let Some((from, status, view)) = self.open.take() {
            self.keep_span(TimelineSpan {
                from,
                to: tick.max(from),
                status: status.to_owned(),
                view,
            });
        }
    }

    fn keep_span(&mut self, span: TimelineSpan) {
        if self.spans.len() < TIMELINE_SPANS_PER_LANE_MAX {
            self.spans.push(span);
        } else {
            self.spans_dropped += 1;
        }
    }

    fn mark(&mut self, tick: u64, kind: &str, detail: &str) {
        if self.marks.len() < TIMELINE_MARKS_PER_LANE_MAX {
            self.marks.push(TimelineMark {
                tick,
                kind: kind.to_owned(),
                detail: detail.to_owned(),
            });
        } else {
            self.marks_dropped += 1;
        }
    }

    fn export(&self, name: String, ticks: u64) -> TimelineLane {
        let mut lane = self.clone();
        lane.close(ticks);
        TimelineLane {
            name,
            spans: lane.spans,
            marks: lane.marks,
            spans_dropped: lane.spans_dropped,
            marks_dropped: lane.marks_dropped,
        }
    }
}

/// Records the timeline alongside the trace.
#[derive(Clone, Debug)]
pub(super) struct TimelineRecorder {
    replicas: Vec<LaneRecorder>,
    network: LaneRecorder,
    failure: Option<TimelineMark>,
}

impl TimelineRecorder {
    pub(super) fn new(replicas: usize) -> Self {
        TimelineRecorder {
            replicas: vec![LaneRecorder::default(); replicas],
            network: LaneRecorder::default(),
            failure: None,
        }
    }

    fn replica(&mut self, replica: usize) -> &mut LaneRecorder {
        if self.replicas.len() <= replica {
            self.replicas.resize_with(replica + 1, LaneRecorder::default);
        }
        &mut self.replicas[replica]
    }

    /// The metadata group on `replica` changed to `status` in `view`.
    pub(super) fn state(&mut self, tick: u64, replica: usize, status: &'static str, view: u64) {
        let lane = self.replica(replica);
        lane.close(tick);
        lane.open = Some((tick, status, view));
    }

    /// The metadata group on `replica` is no longer hosted.
    pub(super) fn close(&mut self, tick: u64, replica: usize) {
        self.replica(replica).close(tick);
    }

    /// A fault: replica faults on their replica's lane, network and cluster faults on
    /// the network lane, client faults nowhere (the timeline draws no clients).
    pub(super) fn fault(&mut self, tick: u64, lane: Lane, kind: &str, detail: &str) {
        match lane {
            Lane::Replica(replica) => self.replica(replica).mark(tick, kind, detail),
            Lane::Network | Lane::Cluster => self.network.mark(tick, kind, detail),
            Lane::Client(_) => {}
        }
    }

    /// The failing check; the first one is kept.
    pub(super) fn failure(&mut self, tick: u64, check: &str, detail: &str) {
        if self.failure.is_none() {
            self.failure = Some(TimelineMark {
                tick,
                kind: check.to_owned(),
                detail: detail.to_owned(),
            });
        }
    }

    pub(super) fn finish(&mut self, tick: u64) {
        for lane in &mut self.replicas {
            lane.close(tick);
        }
    }

    /// The timeline as of tick `ticks`, with at least `replicas` replica lanes.
    pub(super) fn export(&self, ticks: u64, replicas: usize) -> Timeline {
        let empty = LaneRecorder::default();
        let mut lanes: Vec<TimelineLane> = (0..replicas.max(self.replicas.len()))
            .map(|replica| {
                let lane = self.replicas.get(replica).unwrap_or(&empty);
                lane.export(format!("replica {replica}"), ticks)
            })
            .collect();
        lanes.push(self.network.export(NETWORK_LANE_NAME.to_owned(), ticks));
        Timeline {
            ticks,
            lanes,
            failure: self.failure.clone(),
        }
    }
}
