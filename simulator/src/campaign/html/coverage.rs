//! The report page's coverage table: every coverage mark of the cluster
//! (`cluster::coverage`), how many runs reached it, the first run that did (with its
//! repro command), and the runs per plane; marks no run reached come first and stand out.

use std::fmt::{self, Write};

use super::escape;
use crate::campaign::report::CampaignReport;

/// Write the coverage section.
pub(super) fn write_coverage(out: &mut String, report: &CampaignReport) -> fmt::Result {
    let reached = report.coverage();
    let planes: Vec<String> = {
        let mut planes: Vec<String> = report.runs.iter().map(|run| run.plane.clone()).collect();
        planes.sort();
        planes.dedup();
        planes
    };
    let marks = cluster::coverage::Mark::ALL;
    let never = report.marks_never_reached().len();
    writeln!(out, "<section id=\"coverage\">")?;
    writeln!(out, "<h2>Coverage</h2>")?;
    writeln!(
        out,
        "<p>{} of {} coverage marks reached; {never} never reached{}</p>",
        marks.len() - never,
        marks.len(),
        if never > 0 { " (listed first)" } else { "" }
    )?;
    writeln!(out, "<table class=\"coverage\">")?;
    write!(
        out,
        "<thead><tr><th>mark</th><th>where</th><th>runs</th><th>first run</th>"
    )?;
    for plane in &planes {
        write!(out, "<th>{}</th>", escape(plane))?;
    }
    writeln!(out, "</tr></thead>")?;
    writeln!(out, "<tbody>")?;
    let mut ordered: Vec<_> = marks.to_vec();
    ordered.sort_by_key(|mark| reached.contains_key(mark.name()));
    for mark in ordered {
        let reach = reached.get(mark.name());
        let class = if reach.is_some() { "pass" } else { "never" };
        write!(
            out,
            "<tr class=\"{class}\"><td><code>{}</code></td><td>{}</td>",
            escape(mark.name()),
            escape(mark.why())
        )?;
        match reach {
            Some(reach) => {
                let command = report
                    .runs
                    .iter()
                    .find(|run| run.key() == reach.first)
                    .map(|run| run.command.clone())
                    .unwrap_or_default();
                let (profile, plane, seed) = &reach.first;
                write!(
                    out,
                    "<td class=\"num\">{}</td><td title=\"{}\">{} {} seed {seed}</td>",
                    reach.runs,
                    escape(&command),
                    escape(profile),
                    escape(plane)
                )?;
                for plane in &planes {
                    write!(
                        out,
                        "<td class=\"num\">{}</td>",
                        reach.by_plane.get(plane).copied().unwrap_or(0)
                    )?;
                }
            }
            None => {
                write!(out, "<td class=\"num\">0</td><td>never</td>")?;
                for _ in &planes {
                    write!(out, "<td class=\"num\">0</td>")?;
                }
            }
        }
        writeln!(out, "</tr>")?;
    }
    writeln!(out, "</tbody>")?;
    writeln!(out, "</table>")?;
    writeln!(out, "</section>")?;
    Ok(())
}
