//! The report page's failure groups (one per signature, largest first, with seeds,
//! repro commands, the shrunk repro and the first run's detail) and the vacuous runs,
//! listed the same way.

use std::collections::BTreeMap;
use std::fmt::{self, Write};

use super::shrunk;
use super::text::{plural, thousands};
use crate::campaign::report::{CampaignReport, FailureGroup, RunRecord, RunVerdict};
use crate::campaign::shrink::ShrunkRepro;
use crate::html::{close_empty_section, escape, open_section};

/// Repro commands (and seeds) listed per failure group before a "+N more" line.
pub const MAX_LISTED_PER_GROUP: usize = 20;

/// "heavy/metadata x3, swarm/metadata x1": where a group's runs come from.
fn cell_breakdown(runs: &[RunRecord]) -> String {
    let mut cells: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    for run in runs {
        *cells.entry((run.profile.as_str(), run.plane.as_str())).or_default() += 1;
    }
    cells
        .iter()
        .map(|((profile, plane), count)| format!("{profile}/{plane} \u{d7}{count}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The first seeds and repro commands of `runs`, and how many more there are.
fn write_run_list(out: &mut String, runs: &[RunRecord]) -> fmt::Result {
    let shown = runs.len().min(MAX_LISTED_PER_GROUP);
    let seeds: Vec<String> = runs[..shown].iter().map(|run| run.seed.to_string()).collect();
    let more = (runs.len() > shown).then(|| thousands((runs.len() - shown) as u64));
    write!(out, "<p>seeds: <span class=\"seeds\">{}</span>", seeds.join(", "))?;
    if let Some(more) = &more {
        write!(out, " <span class=\"more\">+{more} more</span>")?;
    }
    writeln!(out, "</p>")?;
    writeln!(out, "<h4>Repro</h4>")?;
    write!(out, "<pre class=\"repro\">")?;
    for (index, run) in runs[..shown].iter().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        out.push_str(&escape(&run.command));
    }
    writeln!(out, "</pre>")?;
    if let Some(more) = &more {
        writeln!(
            out,
            "<p class=\"more\">+{more} more (every command is in report.json)</p>"
        )?;
    }
    Ok(())
}

/// The detail of the first of `runs`: what a reader opens first.
fn write_first_detail(out: &mut String, runs: &[RunRecord]) -> fmt::Result {
    let Some(first) = runs.first() else {
        return Ok(());
    };
    writeln!(
        out,
        "<h4>Detail of seed {} ({}/{}, {}, {} ticks, {} commits)</h4>",
        first.seed,
        escape(&first.profile),
        escape(&first.plane),
        first.verdict,
        thousands(first.ticks),
        thousands(first.commits)
    )?;
    match &first.detail {
        Some(detail) => writeln!(out, "<pre class=\"detail\">{}</pre>", escape(detail))?,
        None => writeln!(out, "<p class=\"note\">The run left no detail.</p>")?,
    }
    Ok(())
}

/// Write the failures section: a table of contents, then one article per group.
pub(super) fn write_failures(out: &mut String, groups: &[FailureGroup], shrunk: &[ShrunkRepro]) -> fmt::Result {
    open_section(out, "failures", "Failures by signature")?;
    if groups.is_empty() {
        return close_empty_section(out, "No failures.");
    }
    writeln!(out, "<ol class=\"toc\">")?;
    for (index, group) in groups.iter().enumerate() {
        writeln!(
            out,
            "<li><a href=\"#group-{}\"><code>{}</code></a> &#8212; {} run{}</li>",
            index + 1,
            escape(&group.signature),
            thousands(group.runs.len() as u64),
            plural(group.runs.len() as u64)
        )?;
    }
    writeln!(out, "</ol>")?;
    for (index, group) in groups.iter().enumerate() {
        let failed = group.runs.iter().filter(|run| run.verdict == RunVerdict::Fail).count() as u64;
        let invalid = group.runs.len() as u64 - failed;
        writeln!(out, "<article class=\"group\" id=\"group-{}\">", index + 1)?;
        writeln!(
            out,
            "<h3 class=\"signature\"><code>{}</code></h3>",
            escape(&group.signature)
        )?;
        write!(
            out,
            "<p><strong>{} run{}</strong>",
            thousands(group.runs.len() as u64),
            plural(group.runs.len() as u64)
        )?;
        if invalid > 0 {
            write!(out, " ({} failed, {} invalid)", thousands(failed), thousands(invalid))?;
        }
        writeln!(out, " in {}</p>", escape(&cell_breakdown(&group.runs)))?;
        write_run_list(out, &group.runs)?;
        if let Some(repro) = shrunk.iter().find(|repro| repro.signature == group.signature) {
            shrunk::write_shrunk(out, repro)?;
        }
        write_first_detail(out, &group.runs)?;
        writeln!(out, "</article>")?;
    }
    writeln!(out, "</section>")?;
    Ok(())
}

/// Write the vacuous runs section, when there are any (`count`).
pub(super) fn write_vacuous(out: &mut String, report: &CampaignReport, count: u64) -> fmt::Result {
    if count == 0 {
        return Ok(());
    }
    let mut runs: Vec<RunRecord> = report
        .runs
        .iter()
        .filter(|run| run.verdict == RunVerdict::Vacuous)
        .cloned()
        .collect();
    runs.sort_by(|a, b| (a.seed, &a.profile, &a.plane).cmp(&(b.seed, &b.profile, &b.plane)));
    open_section(out, "vacuous", "Vacuous runs")?;
    writeln!(out, "<article class=\"group vacuous\">")?;
    writeln!(
        out,
        "<p><strong>{} run{}</strong> compared too little to prove anything, in {}</p>",
        thousands(count),
        plural(count),
        escape(&cell_breakdown(&runs))
    )?;
    write_run_list(out, &runs)?;
    write_first_detail(out, &runs)?;
    writeln!(out, "</article>")?;
    writeln!(out, "</section>")?;
    Ok(())
}
