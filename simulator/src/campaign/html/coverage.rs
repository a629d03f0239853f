//! The report page's coverage table: every coverage mark of the cluster
//! (`cluster::coverage`), how many runs reached it, the first run that did (with its
//! repro command), and the runs per plane; marks no run reached come first and stand out.

use std::fmt::{self, Write};

use crate::campaign::report::{CampaignReport, RunVerdict};
use crate::html::{close_table_section, escape, open_section};

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
    open_section(out, "coverage", "Coverage")?;
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
        let required = report.required_marks.iter().any(|name| name == mark.name());
        write!(
            out,
            "<tr class=\"{class}\"><td><code>{}</code>{}</td><td>{}</td>",
            escape(mark.name()),
            if required { " <strong>required</strong>" } else { "" },
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
                let (_, profile, plane, seed, branches) = &reach.first;
                let timeline = if branches.is_empty() {
                    String::new()
                } else {
                    format!(" branched at {branches}")
                };
                write!(
                    out,
                    "<td class=\"num\">{}</td><td title=\"{}\">{} {} seed {seed}{}</td>",
                    reach.runs,
                    escape(&command),
                    escape(profile),
                    escape(plane),
                    escape(&timeline)
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
    close_table_section(out)
}

/// Write the sub-campaigns section (only for a campaign that has more than one): each
/// sub-campaign's flags, weight, runs, verdicts and share of the run time.
pub(super) fn write_sub_campaigns(out: &mut String, report: &CampaignReport) -> fmt::Result {
    if report.sub_campaigns.len() < 2 {
        return Ok(());
    }
    let total_ms: f64 = report.runs.iter().map(|run| run.wall_ms).sum::<f64>().max(1e-9);
    let total_weight: f64 = report.sub_campaigns.iter().map(|sub| sub.sub.weight).sum();
    open_section(out, "sub-campaigns", "Sub-campaigns")?;
    writeln!(out, "<table>")?;
    writeln!(
        out,
        "<thead><tr><th>sub-campaign</th><th>flags</th><th>weight</th><th>share of run time</th>\
         <th>runs</th><th>passed</th><th>not passed</th><th>not started</th><th>marks reached</th></tr></thead>"
    )?;
    writeln!(out, "<tbody>")?;
    for sub in &report.sub_campaigns {
        let runs: Vec<_> = report.runs.iter().filter(|run| run.campaign == sub.sub.name).collect();
        let passed = runs.iter().filter(|run| run.verdict == RunVerdict::Pass).count();
        // (`sum` of no f64 is -0.0, which prints as "-0")
        let ms: f64 = runs.iter().map(|run| run.wall_ms).sum::<f64>() + 0.0;
        let mut marks: Vec<&String> = runs.iter().flat_map(|run| &run.coverage).collect();
        marks.sort();
        marks.dedup();
        writeln!(
            out,
            "<tr class=\"{}\"><td>{}</td><td><code>{}</code></td><td class=\"num\">{:.0}%</td>\
             <td class=\"num\">{:.0}%</td><td class=\"num\">{}</td><td class=\"num\">{passed}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            if passed == runs.len() { "pass" } else { "fail" },
            escape(&sub.sub.name),
            escape(&sub.sub.flags),
            100.0 * sub.sub.weight / total_weight,
            100.0 * ms / total_ms,
            runs.len(),
            runs.len() - passed,
            sub.not_started,
            marks.len()
        )?;
    }
    close_table_section(out)
}
