//! What a real-cluster (nemesis) campaign records, in the words it records it: the
//! fault kinds, each fault as it happened, each run's figures, the summary a campaign
//! report holds, and the section `report.html` shows for it.
//!
//! It sits below both `nemesis` (which injects the faults and measures the runs) and
//! `campaign` (whose report format holds the summary and whose page shows it), so
//! neither reaches into the other.
//!
//! Each run is also a `RunRecord` of the campaign format: profile `nemesis-<N>-nodes`,
//! plane = the workload mode, `ticks` = the run's wall milliseconds, `commits` =
//! acknowledged messages, `ops_compared` = those plus the linearized operations, and
//! `schedule_hash` = an FNV-1a hash of its schedule's JSON lines.
//!
//! A real run cannot replay bit for bit: the kernel schedules the processes, the disk
//! and the network. The seed replays the plan (which faults, in which order, for how
//! long, and the clients' draws); the schedule and the logs say what actually happened.

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::html::{escape, open_section};

/// What part of the world a fault kind breaks (the report counts faults per category
/// and per kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// Signals to node processes.
    Process,
    /// Links between the nodes' network namespaces.
    Network,
    /// libfiu failing a node's file system calls.
    Disk,
    /// libfaketime offsetting or drifting a node's clocks.
    Clock,
}

macro_rules! fault_kinds {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, $category:ident, exclusive: $exclusive:literal; )*) => {
        /// One kind of fault the nemesis injects.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        pub enum FaultKind {
            $( $(#[$doc])* #[serde(rename = $name)] $variant, )*
        }

        impl FaultKind {
            /// Every kind, in a fixed order (the deck before it is shuffled).
            pub const ALL: &'static [FaultKind] = &[$(FaultKind::$variant),*];

            /// The kind's name in flags, schedules and reports.
            pub fn name(self) -> &'static str {
                match self { $(FaultKind::$variant => $name,)* }
            }

            /// What the kind breaks.
            pub fn category(self) -> Category {
                match self { $(FaultKind::$variant => Category::$category,)* }
            }

            /// Whether the kind needs the whole cluster to itself: no other fault runs
            /// while it does, and it waits for every other one to end.
            pub fn exclusive(self) -> bool {
                match self { $(FaultKind::$variant => $exclusive,)* }
            }
        }
    };
}

fault_kinds! {
    /// SIGKILL one node, restart it after a while.
    Kill = "kill", Process, exclusive: false;
    /// SIGKILL every node at once (a whole-site power cut without the power loss:
    /// the page cache survives), restart them all.
    KillAll = "kill-all", Process, exclusive: true;
    /// SIGSTOP the primary of a group (a frozen primary: a long GC pause, a stuck
    /// disk), SIGCONT it later.
    PausePrimary = "pause-primary", Process, exclusive: false;
    /// SIGTERM one node (a clean shutdown: every journal made durable), restart it.
    Terminate = "terminate", Process, exclusive: false;
    /// SIGTERM and restart every node in turn, each back before the next goes.
    RollingRestart = "rolling-restart", Process, exclusive: true;
    /// Cut one node off from every other, both ways.
    Isolate = "isolate", Network, exclusive: false;
    /// Drop what one node sends to one other (the other way still works).
    OneWay = "one-way", Network, exclusive: false;
    /// Cut the link between two nodes both ways; each still reaches the rest (a
    /// partition that is not transitive).
    CutLink = "cut-link", Network, exclusive: false;
    /// Split the cluster into a minority and a majority.
    Split = "split", Network, exclusive: false;
    /// The primary's fdatasync fails with EIO (the outage the disk-fault work fixed:
    /// a primary that kept heartbeating over a disk that refused its prepares).
    FsyncPrimary = "fsync-primary", Disk, exclusive: false;
    /// One node's pwrite fails with EIO.
    WriteError = "write-error", Disk, exclusive: false;
    /// One node restarts with a fifth of its preads failing with EIO (boot and
    /// repair read under faults), switched off later.
    ReadError = "read-error", Disk, exclusive: false;
    /// One node restarts with its clocks (wall and monotonic) offset by seconds to
    /// hours, either way; later it restarts with the true time.
    ClockOffset = "clock-offset", Clock, exclusive: false;
    /// One node restarts with its clocks running fast or slow; later it restarts
    /// with the true time.
    ClockDrift = "clock-drift", Clock, exclusive: false;
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FaultKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        FaultKind::ALL
            .iter()
            .copied()
            .find(|kind| kind.name() == text)
            .ok_or_else(|| {
                let known: Vec<&str> = FaultKind::ALL.iter().map(|kind| kind.name()).collect();
                format!("unknown fault kind '{text}' (known: {})", known.join(", "))
            })
    }
}

/// One fault as it happened, for the schedule log and the report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FaultRecord {
    /// Milliseconds from the run's start (the cluster ready) to the fault's start.
    pub start_ms: u64,
    /// Milliseconds from the run's start to its end (healed); `None` while active.
    pub end_ms: Option<u64>,
    /// The kind.
    pub kind: FaultKind,
    /// The nodes it targets (for network faults: the side it cuts off, or the two
    /// ends of the link, sender first).
    pub nodes: Vec<usize>,
    /// Nodes it keeps from being part of a healthy majority while active.
    pub impaired: Vec<usize>,
    /// What was done, in words (the signal, the link, the fiu command, the clock).
    pub detail: String,
}

/// What a run compared and measured.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunStats {
    /// Requests the clients sent.
    pub requests: u64,
    /// Requests answered with success.
    pub successes: u64,
    /// Acknowledged messages, each checked in the final logs.
    pub acked_messages: u64,
    /// Messages of sends with unknown outcome.
    pub unknown_messages: u64,
    /// Messages the client library called not accepted (checked absent).
    pub not_accepted_messages: u64,
    /// Messages found in the final logs.
    pub logged_messages: u64,
    /// Operations the linearizability checker searched (contended).
    pub linearized_operations: u64,
    /// Polls checked against an exact shadow (exact).
    pub polls_checked: u64,
    /// Groups whose status matched on every node at the end.
    pub groups_agreed: u64,
    /// Bytes in every node's data directory at the end.
    #[serde(default)]
    pub data_bytes: u64,
    /// The longest stretch without an acknowledged send, milliseconds (fault phase to
    /// the end).
    pub longest_gap_ms: u64,
    /// Its longest part during which a majority was healthy, milliseconds.
    pub longest_healthy_gap_ms: u64,
    /// Per fault kind: the longest gap overlapping a fault of that kind, milliseconds.
    pub gap_by_kind_ms: BTreeMap<String, u64>,
    /// Per fault kind: the longest wait, from a fault's end to the next acknowledged
    /// send, milliseconds.
    #[serde(default)]
    pub recovery_by_kind_ms: BTreeMap<String, u64>,
    /// Per fault kind, one entry per fault in start order: milliseconds from the fault's
    /// start until every client had a send acknowledged after it (the client it stalled
    /// longest; a client never served again counts until the clients stopped).
    #[serde(default)]
    pub served_after_fault_ms: BTreeMap<String, Vec<u64>>,
    /// Supervisor restarts after storage failures.
    pub supervisor_restarts: u64,
    /// Milliseconds from healed to every group agreed.
    pub settle_ms: u64,
    /// Milliseconds from healed to every client having had a send acknowledged.
    #[serde(default)]
    pub recovered_ms: u64,
    /// Successful requests in each second of the run (its availability timeline).
    #[serde(default)]
    pub successes_by_second: Vec<u32>,
}

/// What a nemesis campaign adds to its report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NemesisSummary {
    /// How to read a run's command: what it replays and what it cannot.
    pub replay_note: String,
    /// Whether the nodes had network namespaces (network faults possible).
    pub namespaces: bool,
    /// Tools that were missing, and the fault kinds left out for it.
    pub missing: Vec<String>,
    /// Faults injected, per kind, over every run.
    pub faults_by_kind: BTreeMap<String, u64>,
    /// Per kind: the longest stretch without a successful request that overlapped a
    /// fault of that kind, over every run, milliseconds.
    pub gap_by_kind_ms: BTreeMap<String, u64>,
    /// Per kind: the longest wait from a fault's end to the next acknowledged send,
    /// over every run, milliseconds.
    #[serde(default)]
    pub recovery_by_kind_ms: BTreeMap<String, u64>,
    /// Per kind: every fault's wait from its start until every client had a send
    /// acknowledged, over every run, milliseconds, sorted (medians and worst cases).
    #[serde(default)]
    pub served_after_fault_ms: BTreeMap<String, Vec<u64>>,
    /// The liveness bound the runs were held to, milliseconds.
    pub liveness_gap_ms_max: u64,
    /// Every run.
    pub runs: Vec<NemesisRun>,
}

/// One run's schedule and figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NemesisRun {
    /// The seed.
    pub seed: u64,
    /// The workload mode.
    pub mode: String,
    /// Where its schedule and node logs are.
    pub dir: String,
    /// Every fault, in start order.
    pub faults: Vec<FaultRecord>,
    /// What it compared and measured.
    pub stats: RunStats,
}

impl NemesisSummary {
    /// Add a run's faults and gaps to the totals.
    pub fn add(&mut self, run: NemesisRun) {
        for fault in &run.faults {
            *self.faults_by_kind.entry(fault.kind.name().to_owned()).or_default() += 1;
        }
        for (kind, gap) in &run.stats.gap_by_kind_ms {
            let entry = self.gap_by_kind_ms.entry(kind.clone()).or_default();
            *entry = (*entry).max(*gap);
        }
        for (kind, wait) in &run.stats.recovery_by_kind_ms {
            let entry = self.recovery_by_kind_ms.entry(kind.clone()).or_default();
            *entry = (*entry).max(*wait);
        }
        for (kind, waits) in &run.stats.served_after_fault_ms {
            let entry = self.served_after_fault_ms.entry(kind.clone()).or_default();
            entry.extend_from_slice(waits);
            entry.sort_unstable();
        }
        self.runs.push(run);
    }

    /// Per kind: how many faults, and the median and longest wait from a fault's start
    /// until every client had a send acknowledged, milliseconds.
    pub fn served_figures(&self) -> Vec<(String, usize, u64, u64)> {
        self.served_after_fault_ms
            .iter()
            .filter(|(_, waits)| !waits.is_empty())
            .map(|(kind, waits)| {
                (
                    kind.clone(),
                    waits.len(),
                    median(waits),
                    waits.iter().copied().max().unwrap_or(0),
                )
            })
            .collect()
    }

    /// The median over runs of each run's longest stretch without an acknowledged send,
    /// milliseconds (none without runs).
    pub fn longest_gap_median_ms(&self) -> Option<u64> {
        let mut gaps: Vec<u64> = self.runs.iter().map(|run| run.stats.longest_gap_ms).collect();
        gaps.sort_unstable();
        (!gaps.is_empty()).then(|| median(&gaps))
    }
}

/// The median of sorted `values` (nearest rank: the lower middle of an even count).
fn median(values: &[u64]) -> u64 {
    crate::harness::failover::quantile(values, 0.5).unwrap_or(0)
}

/// The HTML section of a nemesis campaign.
pub fn write_html(out: &mut String, summary: &NemesisSummary) -> fmt::Result {
    open_section(out, "nemesis", "Real cluster (nemesis)")?;
    writeln!(out, "<p class=\"warn\">{}</p>", escape(&summary.replay_note))?;
    if !summary.namespaces {
        writeln!(
            out,
            "<p class=\"warn\">No network namespaces: the nodes ran on loopback, with no network faults.</p>"
        )?;
    }
    for missing in &summary.missing {
        writeln!(out, "<p class=\"warn\">{}</p>", escape(missing))?;
    }
    let runs = summary.runs.len().max(1) as f64;
    writeln!(
        out,
        "<table><thead><tr><th>fault kind</th><th>injected</th><th>per run</th><th>longest gap without an \
         acknowledged send overlapping it (ms)</th><th>longest wait from its end to the next acknowledged send \
         (ms)</th><th>from its start until every client had a send acknowledged: median (ms)</th><th>the same: \
         longest (ms)</th></tr></thead><tbody>"
    )?;
    let served = summary.served_figures();
    for (kind, count) in &summary.faults_by_kind {
        let (median, longest) = served
            .iter()
            .find(|(served_kind, ..)| served_kind == kind)
            .map_or((0, 0), |(_, _, median, longest)| (*median, *longest));
        writeln!(
            out,
            "<tr><td>{}</td><td>{count}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{median}</td><td>{longest}</td></tr>",
            escape(kind),
            *count as f64 / runs,
            summary.gap_by_kind_ms.get(kind).copied().unwrap_or(0),
            summary.recovery_by_kind_ms.get(kind).copied().unwrap_or(0)
        )?;
    }
    writeln!(out, "</tbody></table>")?;
    writeln!(
        out,
        "<p>A gap longer than {} ms while a majority of nodes was unimpaired fails a run (liveness), and so does a \
         healed cluster that leaves a client without an acknowledged send that long. Faults overlap (two at once, \
         the next a second or so after the last), so a gap overlaps many kinds: read the per-kind figures as \
         worst cases under this mix, not as the cost of one fault alone. Coverage marks are counted in simulated \
         runs only.</p>",
        summary.liveness_gap_ms_max
    )?;
    writeln!(
        out,
        "<table><thead><tr><th>seed</th><th>mode</th><th>faults</th><th>requests</th><th>acked msgs</th>\
         <th>unknown</th><th>linearized ops</th><th>longest gap (ms)</th><th>healthy gap (ms)</th><th>settle \
         (ms)</th><th>restarts</th><th>logs</th></tr></thead><tbody>"
    )?;
    for run in &summary.runs {
        let s = &run.stats;
        writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            run.seed,
            escape(&run.mode),
            run.faults.len(),
            s.requests,
            s.acked_messages,
            s.unknown_messages,
            s.linearized_operations,
            s.longest_gap_ms,
            s.longest_healthy_gap_ms,
            s.settle_ms,
            s.supervisor_restarts,
            escape(&run.dir)
        )?;
    }
    writeln!(out, "</tbody></table>")?;
    for run in &summary.runs {
        writeln!(
            out,
            "<details><summary>seed {} schedule ({} faults)</summary><pre>",
            run.seed,
            run.faults.len()
        )?;
        for fault in &run.faults {
            let mut line = String::new();
            let _ = write!(
                line,
                "+{:>7} ms .. {:>7}  {:<15} {:?}  {}",
                fault.start_ms,
                fault
                    .end_ms
                    .map(|end| format!("+{end} ms"))
                    .unwrap_or_else(|| "open".into()),
                fault.kind.name(),
                fault.nodes,
                fault.detail
            );
            writeln!(out, "{}", escape(&line))?;
        }
        writeln!(out, "</pre></details>")?;
    }
    writeln!(out, "</section>")?;
    Ok(())
}
