//! The nemesis's part of a campaign report: what a real-cluster campaign adds to
//! `report.json` (each run's fault schedule as it happened, its availability figures,
//! where its node logs are) and the section `report.html` shows for it.
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

use serde::{Deserialize, Serialize};

use super::check::{LIVENESS_GAP_MS_MAX, RunStats};
use super::faults::FaultRecord;
use crate::html::{escape, open_section};

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
        self.runs.push(run);
    }
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
         (ms)</th></tr></thead><tbody>"
    )?;
    for (kind, count) in &summary.faults_by_kind {
        writeln!(
            out,
            "<tr><td>{}</td><td>{count}</td><td>{:.1}</td><td>{}</td><td>{}</td></tr>",
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

/// The default liveness bound, for a summary made before any run.
pub fn liveness_bound() -> u64 {
    LIVENESS_GAP_MS_MAX
}
