//! `report.html`: a campaign report as one self-contained page to read.
//!
//! The page is a pure function of the [`CampaignReport`] (no clock, no randomness, no
//! external resources, no JavaScript): inline CSS, inline SVG charts. Every string that
//! comes from the report is escaped, and the markup is kept well-formed XML apart from
//! the doctype (void elements are written self-closed), so tools can parse it too.
//!
//! Sections, top to bottom:
//! 1. header: campaign id, an overall status, command, build, shard, wall time, runs/s;
//! 2. totals: runs by verdict, planned and not started;
//! 3. matrix: pass/fail/vacuous/invalid per fault profile (rows) x plane (columns);
//! 4. failures: one group per signature, largest first, with seeds and repro commands;
//! 5. vacuous runs, when there are any;
//! 6. exploration (`--explore`): what it did and each branched root's tree of
//!    timelines;
//! 7. coverage; charts: wall time and commits per run, in report order.
//!
//! Module map: this file lays the page out and writes its header and totals;
//! `matrix.rs`, `failures.rs` (and the vacuous runs), `coverage.rs` (and the
//! sub-campaigns), `explore.rs`, `chart.rs` write their sections; `shrunk.rs` and `timeline.rs` a
//! failure group's shrunk repro; `style.rs` holds the CSS, `text.rs` the number
//! formats. The nemesis section comes from `crate::nemesis_format`; escaping from
//! `crate::html`, which both use.

mod chart;
mod coverage;
mod explore;
mod failures;
mod matrix;
mod shrunk;
mod style;
mod text;
mod timeline;

use std::fmt::{self, Write};

pub use chart::{CHART_BUCKETS, MAX_CHART_MARKS};
pub use explore::{EXPLORE_TREE_NODES_MAX, EXPLORE_TREES_LISTED_MAX};
pub use failures::MAX_LISTED_PER_GROUP;
pub use timeline::timeline_svg;

use super::report::{CampaignReport, Totals};
use crate::html::{escape, open_section};
use style::STYLE;
use text::{duration, plural, thousands};

/// Render `report` as one self-contained HTML5 page.
pub fn render(report: &CampaignReport) -> String {
    let mut out = String::with_capacity(16 * 1024 + report.runs.len() * 256);
    // Writing into a String cannot fail; the error type is only fmt's signature.
    write_page(&mut out, report).expect("formatting into a String never fails");
    out
}

fn write_page(out: &mut String, report: &CampaignReport) -> fmt::Result {
    let totals = report.totals();
    let groups = report.failure_groups();
    let status = Status::of(report, &totals);

    writeln!(out, "<!DOCTYPE html>")?;
    writeln!(out, "<html lang=\"en\">")?;
    writeln!(out, "<head>")?;
    writeln!(out, "<meta charset=\"utf-8\" />")?;
    writeln!(
        out,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\" />"
    )?;
    writeln!(out, "<meta name=\"generator\" content=\"simulator campaign report\" />")?;
    writeln!(
        out,
        "<title>{} campaign {}</title>",
        status.label(),
        escape(&report.campaign_id)
    )?;
    writeln!(out, "<style>{STYLE}</style>")?;
    writeln!(out, "</head>")?;
    writeln!(out, "<body>")?;

    write_header(out, report, &totals, status)?;
    write_totals(out, report, &totals, groups.len())?;
    coverage::write_sub_campaigns(out, report)?;
    matrix::write_matrix(out, report)?;
    failures::write_failures(out, &groups, &report.shrunk)?;
    if let Some(nemesis) = &report.nemesis {
        crate::nemesis_format::write_html(out, nemesis)?;
    }
    failures::write_vacuous(out, report, totals.vacuous)?;
    explore::write_exploration(out, report)?;
    if report.nemesis.is_none() {
        // Real processes count no coverage marks: the table would say none was reached.
        coverage::write_coverage(out, report)?;
    }
    chart::write_charts(out, report)?;

    writeln!(
        out,
        "<footer>report format {} &#183; written by the simulator&#39;s campaign runner; report.json next to this \
         page holds every run.</footer>",
        report.format
    )?;
    writeln!(out, "</body>")?;
    writeln!(out, "</html>")?;
    Ok(())
}

/// The one-word verdict of the whole campaign.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    Fail,
    Vacuous,
    Pass,
    Empty,
}

impl Status {
    fn of(report: &CampaignReport, totals: &Totals) -> Status {
        if totals.fail + totals.invalid > 0 {
            Status::Fail
        } else if report.runs.is_empty() {
            Status::Empty
        } else if totals.vacuous > 0 {
            Status::Vacuous
        } else {
            Status::Pass
        }
    }

    fn label(self) -> &'static str {
        match self {
            Status::Fail => "FAIL",
            Status::Vacuous => "VACUOUS",
            Status::Pass => "PASS",
            Status::Empty => "NO RUNS",
        }
    }

    fn class(self) -> &'static str {
        match self {
            Status::Fail => "fail",
            Status::Vacuous => "vacuous",
            Status::Pass => "pass",
            Status::Empty => "empty",
        }
    }
}

fn write_header(out: &mut String, report: &CampaignReport, totals: &Totals, status: Status) -> fmt::Result {
    writeln!(out, "<header>")?;
    write!(
        out,
        "<h1><span>Campaign <code>{}</code></span><span class=\"badge {}\">{}</span>",
        escape(&report.campaign_id),
        status.class(),
        status.label()
    )?;
    if report.not_started > 0 {
        write!(out, "<span class=\"badge partial\">INCOMPLETE</span>")?;
    }
    writeln!(out, "</h1>")?;
    writeln!(out, "<dl class=\"meta\">")?;
    writeln!(
        out,
        "<dt>command</dt><dd><pre id=\"command\">{}</pre></dd>",
        escape(&report.command)
    )?;
    writeln!(out, "<dt>build</dt><dd><code>{}</code></dd>", escape(&report.build))?;
    let shard = match report.shard {
        Some((k, n)) => format!("shard {k} of {n}"),
        None => "whole campaign (or a merge of shards)".to_owned(),
    };
    writeln!(out, "<dt>shard</dt><dd>{}</dd>", escape(&shard))?;
    writeln!(
        out,
        "<dt>wall time</dt><dd>{}</dd>",
        escape(&duration(report.wall_seconds))
    )?;
    let rate = if report.wall_seconds.is_finite() && report.wall_seconds > 0.0 {
        format!("{:.1}", totals.runs() as f64 / report.wall_seconds)
    } else {
        "n/a".to_owned()
    };
    writeln!(out, "<dt>runs/s</dt><dd>{rate}</dd>")?;
    writeln!(out, "</dl>")?;
    writeln!(out, "</header>")?;
    Ok(())
}

fn write_totals(out: &mut String, report: &CampaignReport, totals: &Totals, groups: usize) -> fmt::Result {
    open_section(out, "totals", "Totals")?;
    writeln!(out, "<div class=\"totals\">")?;
    let boxes: [(&str, &str, u64); 7] = [
        ("runs", "runs", totals.runs()),
        ("pass", "pass", totals.pass),
        ("fail", "fail", totals.fail),
        ("vacuous", "vacuous", totals.vacuous),
        ("invalid", "invalid", totals.invalid),
        ("planned", "planned", report.planned),
        ("not-started", "not started", report.not_started),
    ];
    for (id, label, count) in boxes {
        writeln!(
            out,
            "<div class=\"total {id}\"><span class=\"num\" id=\"total-{id}\">{}</span><span class=\"label\">{label}\
             </span></div>",
            thousands(count)
        )?;
    }
    writeln!(out, "</div>")?;
    if totals.fail + totals.invalid > 0 {
        writeln!(
            out,
            "<p>{} failed and {} invalid runs in {} signature group{}: see <a href=\"#failures\">Failures</a>.</p>",
            thousands(totals.fail),
            thousands(totals.invalid),
            groups,
            plural(groups as u64)
        )?;
    }
    writeln!(out, "<p id=\"failover\">{}</p>", escape(&report.failover_line()))?;
    if report.not_started > 0 {
        writeln!(
            out,
            "<p class=\"warn\">The time budget ran out before {} of {} planned runs started; the seeds not run are \
             not covered by this report.</p>",
            thousands(report.not_started),
            thousands(report.planned)
        )?;
    }
    writeln!(out, "</section>")?;
    Ok(())
}

#[cfg(test)]
mod tests;
