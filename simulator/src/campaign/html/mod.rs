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
//! 6. charts: wall time and commits per run, in report order.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write};

use super::report::{CampaignReport, FailureGroup, RunRecord, RunVerdict, Totals};
use super::shrink::ShrunkRepro;

/// Repro commands (and seeds) listed per failure group before a "+N more" line.
pub const MAX_LISTED_PER_GROUP: usize = 20;

/// Up to this many runs a chart draws one mark per run; above it, runs are drawn as
/// [`CHART_BUCKETS`] min-max ranges so the page stays small.
pub const MAX_CHART_MARKS: usize = 3000;

/// Number of ranges a chart of more than [`MAX_CHART_MARKS`] runs draws.
pub const CHART_BUCKETS: usize = 600;

const CHART_WIDTH: f64 = 1100.0;
const CHART_HEIGHT: f64 = 230.0;
const MARGIN_LEFT: f64 = 72.0;
const MARGIN_RIGHT: f64 = 16.0;
const MARGIN_TOP: f64 = 22.0;
const MARGIN_BOTTOM: f64 = 42.0;

const STYLE: &str = "
.shrunk { border-left: 3px solid #1f883d; padding-left: 12px; margin: 12px 0; }
table.shrink td, table.shrink th { padding: 2px 10px; text-align: right; }
.timeline { overflow-x: auto; }
.timeline svg { max-width: 100%; height: auto; }
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif; color: #1f2328;
  margin: 0 auto; padding: 24px 32px 48px; max-width: 1180px; background: #fff; }
h1 code { font-size: 17px; }
h1 { font-size: 22px; margin: 0 0 4px; display: flex; align-items: center; gap: 12px; flex-wrap: wrap; }
h2 { font-size: 18px; margin: 32px 0 10px; padding-bottom: 4px; border-bottom: 1px solid #d0d7de; }
h3 { font-size: 15px; margin: 0 0 6px; }
h3 code { font-size: 14px; }
h4 { font-size: 13px; margin: 12px 0 4px; color: #57606a; }
code, pre { font: 12.5px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 10px; margin: 0;
  white-space: pre-wrap; overflow-wrap: anywhere; }
pre.repro { white-space: pre; overflow-x: auto; }
.badge { font-size: 13px; font-weight: 600; padding: 2px 10px; border-radius: 12px; color: #fff; }
.badge.pass { background: #1a7f37; } .badge.fail { background: #cf222e; } .badge.vacuous { background: #bf8700; }
.badge.empty { background: #6e7781; } .badge.partial { background: #57606a; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 12px 0 0; }
dl.meta dt { color: #57606a; } dl.meta dd { margin: 0; }
.totals { display: flex; gap: 12px; flex-wrap: wrap; }
.total { border: 1px solid #d0d7de; border-radius: 8px; padding: 8px 16px; min-width: 92px; }
.total .num { display: block; font-size: 24px; font-weight: 600; }
.total .label { color: #57606a; font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.total.pass .num { color: #1a7f37; } .total.fail .num { color: #cf222e; }
.total.vacuous .num { color: #9a6700; } .total.invalid .num { color: #8250df; }
.note { color: #57606a; }
.warn { color: #9a6700; }
table.matrix { border-collapse: collapse; }
table.matrix th, table.matrix td { border: 1px solid #d0d7de; padding: 6px 12px; text-align: center; }
table.matrix th { background: #f6f8fa; }
table.matrix th.profile { text-align: left; }
td.cell .main { font-weight: 600; } td.cell .sub { display: block; font-size: 12px; }
td.cell.pass { background: #dafbe1; } td.cell.fail { background: #ffd8d3; }
td.cell.vacuous { background: #fff1c5; } td.cell.none { background: #f6f8fa; color: #8c959f; }
.legend span { display: inline-block; padding: 0 8px; margin-right: 6px; border-radius: 4px; }
table.coverage tr.never td { background: #ffd8d3; font-weight: 600; }
table.coverage td.num { text-align: right; }
.legend .pass { background: #dafbe1; } .legend .fail { background: #ffd8d3; } .legend .vacuous { background: #fff1c5; }
article.group { border: 1px solid #d0d7de; border-left: 4px solid #cf222e; border-radius: 6px;
  padding: 12px 16px; margin: 0 0 16px; }
article.group.vacuous { border-left-color: #bf8700; }
article.group p { margin: 4px 0; }
.more { color: #57606a; font-style: italic; }
ol.toc { margin: 0 0 16px; padding-left: 24px; }
figure { margin: 0 0 20px; } figcaption { color: #57606a; font-size: 12px; }
svg.chart { display: block; max-width: 100%; height: auto; font: 11px system-ui, sans-serif; }
svg.chart .axis { stroke: #57606a; stroke-width: 1; }
svg.chart .grid { stroke: #eaeef2; stroke-width: 1; }
svg.chart .band-0 { fill: #ffffff; } svg.chart .band-1 { fill: #f6f8fa; }
svg.chart .band-label { fill: #57606a; font-size: 10px; }
svg.chart .tick { fill: #57606a; }
svg.chart .axis-label { fill: #1f2328; font-size: 12px; }
svg.chart .mark.pass { fill: #0969da; fill-opacity: .7; }
svg.chart .mark.fail { fill: #cf222e; stroke: #82071e; stroke-width: .5; }
svg.chart .mark.vacuous { fill: #bf8700; } svg.chart .mark.invalid { fill: #8250df; }
svg.chart .range { stroke: #0969da; stroke-opacity: .7; stroke-width: 1.5; }
svg.chart .range.fail { stroke: #cf222e; stroke-opacity: 1; stroke-width: 2; }
svg.chart .range.vacuous { stroke: #bf8700; } svg.chart .range.invalid { stroke: #8250df; }
.key span { margin-right: 14px; } .key .dot { display: inline-block; width: 9px; height: 9px; border-radius: 50%;
  margin-right: 4px; vertical-align: baseline; }
.key .pass { background: #0969da; } .key .fail { background: #cf222e; } .key .vacuous { background: #bf8700; }
.key .invalid { background: #8250df; }
footer { margin-top: 40px; color: #8c959f; font-size: 12px; }
";

/// Render `report` as one self-contained HTML5 page.
pub fn render(report: &CampaignReport) -> String {
    let mut out = String::with_capacity(16 * 1024 + report.runs.len() * 256);
    // Writing into a String cannot fail; the error type is only fmt's signature.
    write_page(&mut out, report).expect("formatting into a String never fails");
    out
}

/// Escape text for HTML text content and attribute values (both quote kinds). Control
/// characters XML cannot carry (all C0 controls but tab, newline and carriage return)
/// become U+FFFD, so the page stays parseable as XML.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() && (c as u32) < 0x20 || c == '\u{7f}' || c == '\u{fffe}' || c == '\u{ffff}' => {
                out.push('\u{fffd}')
            }
            c => out.push(c),
        }
    }
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
    write_matrix(out, report)?;
    write_failures(out, &groups, &report.shrunk)?;
    if let Some(nemesis) = &report.nemesis {
        crate::nemesis::report::write_html(out, nemesis)?;
    }
    write_vacuous(out, report, totals.vacuous)?;
    if report.nemesis.is_none() {
        // Real processes count no coverage marks: the table would say none was reached.
        coverage::write_coverage(out, report)?;
    }
    write_charts(out, report)?;

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
    writeln!(out, "<section id=\"totals\">")?;
    writeln!(out, "<h2>Totals</h2>")?;
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

/// The colour class of a matrix cell.
fn cell_class(totals: &Totals) -> &'static str {
    if totals.fail + totals.invalid > 0 {
        "fail"
    } else if totals.vacuous > 0 {
        "vacuous"
    } else if totals.pass > 0 {
        "pass"
    } else {
        "none"
    }
}

fn write_matrix(out: &mut String, report: &CampaignReport) -> fmt::Result {
    let cells = report.totals_by_cell();
    let profiles: BTreeSet<&str> = cells.keys().map(|(profile, _)| profile.as_str()).collect();
    let planes: BTreeSet<&str> = cells.keys().map(|(_, plane)| plane.as_str()).collect();

    writeln!(out, "<section id=\"matrix\">")?;
    writeln!(out, "<h2>Profiles &#215; planes</h2>")?;
    if cells.is_empty() {
        writeln!(out, "<p class=\"note\">No runs.</p>")?;
        writeln!(out, "</section>")?;
        return Ok(());
    }
    writeln!(
        out,
        "<p class=\"legend\"><span class=\"pass\">every run passed</span><span class=\"fail\">a run failed or was \
         invalid</span><span class=\"vacuous\">a run was vacuous</span> Each cell: passed/runs, then the other \
         verdicts.</p>"
    )?;
    writeln!(out, "<table class=\"matrix\">")?;
    write!(out, "<thead><tr><th class=\"profile\">profile \\ plane</th>")?;
    for plane in &planes {
        write!(out, "<th>{}</th>", escape(plane))?;
    }
    writeln!(out, "</tr></thead>")?;
    writeln!(out, "<tbody>")?;
    for profile in &profiles {
        write!(out, "<tr><th class=\"profile\">{}</th>", escape(profile))?;
        for plane in &planes {
            match cells.get(&((*profile).to_owned(), (*plane).to_owned())) {
                None => write!(out, "<td class=\"cell none\">&#8212;</td>")?,
                Some(totals) => {
                    write!(
                        out,
                        "<td class=\"cell {}\" title=\"{} / {}: pass {}, fail {}, vacuous {}, invalid {}\">\
                         <span class=\"main\">{}/{}</span>",
                        cell_class(totals),
                        escape(profile),
                        escape(plane),
                        totals.pass,
                        totals.fail,
                        totals.vacuous,
                        totals.invalid,
                        thousands(totals.pass),
                        thousands(totals.runs())
                    )?;
                    let others: Vec<String> = [
                        ("fail", totals.fail),
                        ("vacuous", totals.vacuous),
                        ("invalid", totals.invalid),
                    ]
                    .iter()
                    .filter(|(_, count)| *count > 0)
                    .map(|(label, count)| format!("{} {label}", thousands(*count)))
                    .collect();
                    if others.is_empty() {
                        write!(out, "<span class=\"sub\">all pass</span>")?;
                    } else {
                        write!(out, "<span class=\"sub\">{}</span>", others.join(", "))?;
                    }
                    write!(out, "</td>")?;
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

fn write_run_list(out: &mut String, runs: &[RunRecord]) -> fmt::Result {
    let shown = runs.len().min(MAX_LISTED_PER_GROUP);
    let seeds: Vec<String> = runs[..shown].iter().map(|run| run.seed.to_string()).collect();
    write!(out, "<p>seeds: <span class=\"seeds\">{}</span>", seeds.join(", "))?;
    if runs.len() > shown {
        write!(
            out,
            " <span class=\"more\">+{} more</span>",
            thousands((runs.len() - shown) as u64)
        )?;
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
    if runs.len() > shown {
        writeln!(
            out,
            "<p class=\"more\">+{} more (every command is in report.json)</p>",
            thousands((runs.len() - shown) as u64)
        )?;
    }
    Ok(())
}

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

fn write_failures(out: &mut String, groups: &[FailureGroup], shrunk: &[ShrunkRepro]) -> fmt::Result {
    writeln!(out, "<section id=\"failures\">")?;
    writeln!(out, "<h2>Failures by signature</h2>")?;
    if groups.is_empty() {
        writeln!(out, "<p class=\"note\">No failures.</p>")?;
        writeln!(out, "</section>")?;
        return Ok(());
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

fn write_vacuous(out: &mut String, report: &CampaignReport, count: u64) -> fmt::Result {
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
    writeln!(out, "<section id=\"vacuous\">")?;
    writeln!(out, "<h2>Vacuous runs</h2>")?;
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

fn write_charts(out: &mut String, report: &CampaignReport) -> fmt::Result {
    writeln!(out, "<section id=\"charts\">")?;
    writeln!(out, "<h2>Runs</h2>")?;
    if report.runs.is_empty() {
        writeln!(out, "<p class=\"note\">No runs to chart.</p>")?;
        writeln!(out, "</section>")?;
        return Ok(());
    }
    writeln!(
        out,
        "<p class=\"key\"><span><span class=\"dot pass\"></span>pass</span><span><span class=\"dot fail\"></span>\
         fail</span><span><span class=\"dot vacuous\"></span>vacuous</span><span><span class=\"dot invalid\">\
         </span>invalid</span> Runs in report order (profile, plane, seed); shaded bands separate profile/plane \
         cells.</p>"
    )?;
    write_chart(out, report, "chart-wall", "wall time (ms)", "ms", |run| run.wall_ms)?;
    write_chart(out, report, "chart-commits", "commits", "commits", |run| {
        run.commits as f64
    })?;
    writeln!(out, "</section>")?;
    Ok(())
}

/// A verdict's CSS class; the worst verdict wins for a bucket of runs.
fn verdict_class(verdict: RunVerdict) -> &'static str {
    match verdict {
        RunVerdict::Pass => "pass",
        RunVerdict::Fail => "fail",
        RunVerdict::Vacuous => "vacuous",
        RunVerdict::Invalid => "invalid",
    }
}

fn severity(verdict: RunVerdict) -> u8 {
    match verdict {
        RunVerdict::Pass => 0,
        RunVerdict::Vacuous => 1,
        RunVerdict::Invalid => 2,
        RunVerdict::Fail => 3,
    }
}

fn finite(value: f64) -> f64 {
    if value.is_finite() && value > 0.0 { value } else { 0.0 }
}

/// A round step for about four gridlines up to `max`: 1, 2, 2.5 or 5 times a power of ten.
fn nice_step(max: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let rough = max / 4.0;
    let magnitude = 10f64.powf(rough.log10().floor());
    for factor in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if factor * magnitude >= rough {
            return factor * magnitude;
        }
    }
    10.0 * magnitude
}

/// A number for an axis tick: no trailing zeros.
fn tick_label(value: f64) -> String {
    if value == value.trunc() && value.abs() < 1e15 {
        thousands(value as u64)
    } else {
        let text = format!("{value:.3}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

fn write_chart(
    out: &mut String,
    report: &CampaignReport,
    id: &str,
    label: &str,
    unit: &str,
    value: impl Fn(&RunRecord) -> f64,
) -> fmt::Result {
    let runs = &report.runs;
    let n = runs.len();
    let plot_width = CHART_WIDTH - MARGIN_LEFT - MARGIN_RIGHT;
    let plot_height = CHART_HEIGHT - MARGIN_TOP - MARGIN_BOTTOM;
    let max = runs.iter().map(|run| finite(value(run))).fold(0.0, f64::max);
    let step = nice_step(max);
    let mut y_max = step * 4.0;
    while y_max < max {
        y_max += step;
    }
    let x_of = |index: f64| MARGIN_LEFT + index * plot_width / n as f64;
    let y_of = |v: f64| MARGIN_TOP + plot_height - finite(v) / y_max * plot_height;
    let bottom = MARGIN_TOP + plot_height;

    writeln!(out, "<figure>")?;
    writeln!(
        out,
        "<svg class=\"chart\" id=\"{id}\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {CHART_WIDTH} \
         {CHART_HEIGHT}\" width=\"{CHART_WIDTH}\" height=\"{CHART_HEIGHT}\" role=\"img\" aria-label=\"{} per run\">",
        escape(label)
    )?;

    // Bands: one per contiguous (profile, plane) cell, labelled when wide enough.
    let mut start = 0;
    let mut band = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && runs[end].profile == runs[start].profile && runs[end].plane == runs[start].plane {
            end += 1;
        }
        let (x0, x1) = (x_of(start as f64), x_of(end as f64));
        let name = format!("{}/{}", runs[start].profile, runs[start].plane);
        writeln!(
            out,
            "<rect class=\"band band-{}\" x=\"{x0:.2}\" y=\"{MARGIN_TOP}\" width=\"{:.2}\" height=\"{plot_height}\"><title>\
             {}</title></rect>",
            band % 2,
            x1 - x0,
            escape(&name)
        )?;
        if x1 - x0 >= 7.0 * name.chars().count() as f64 {
            writeln!(
                out,
                "<text class=\"band-label\" x=\"{:.2}\" y=\"{:.2}\">{}</text>",
                x0 + 3.0,
                MARGIN_TOP - 6.0,
                escape(&name)
            )?;
        }
        band += 1;
        start = end;
    }

    // Grid and y axis ticks.
    let mut tick = 0.0;
    while tick <= y_max + step / 2.0 {
        let y = y_of(tick);
        writeln!(
            out,
            "<line class=\"grid\" x1=\"{MARGIN_LEFT}\" x2=\"{:.2}\" y1=\"{y:.2}\" y2=\"{y:.2}\" />",
            MARGIN_LEFT + plot_width
        )?;
        writeln!(
            out,
            "<text class=\"tick\" x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"end\">{}</text>",
            MARGIN_LEFT - 6.0,
            y + 4.0,
            tick_label(tick)
        )?;
        tick += step;
    }

    // Marks.
    if n <= MAX_CHART_MARKS {
        let radius = if n <= 200 {
            3.5
        } else if n <= 1000 {
            2.5
        } else {
            1.6
        };
        for (index, run) in runs.iter().enumerate() {
            let v = finite(value(run));
            writeln!(
                out,
                "<circle class=\"mark {}\" cx=\"{:.2}\" cy=\"{:.2}\" r=\"{radius}\"><title>{}/{} seed {}: {} {unit} \
                 ({})</title></circle>",
                verdict_class(run.verdict),
                x_of(index as f64 + 0.5),
                y_of(v),
                escape(&run.profile),
                escape(&run.plane),
                run.seed,
                tick_label((v * 10.0).round() / 10.0),
                run.verdict
            )?;
        }
    } else {
        for bucket in 0..CHART_BUCKETS {
            let first = bucket * n / CHART_BUCKETS;
            let last = ((bucket + 1) * n / CHART_BUCKETS).max(first + 1).min(n);
            let slice = &runs[first..last];
            let (mut low, mut high) = (f64::INFINITY, 0.0f64);
            let mut worst = RunVerdict::Pass;
            for run in slice {
                let v = finite(value(run));
                low = low.min(v);
                high = high.max(v);
                if severity(run.verdict) > severity(worst) {
                    worst = run.verdict;
                }
            }
            if !low.is_finite() {
                low = 0.0;
            }
            let x = x_of((first + last) as f64 / 2.0);
            let (y_low, y_high) = (y_of(low), y_of(high));
            // Keep a flat bucket visible.
            let y_high = if y_low - y_high < 1.5 { y_low - 1.5 } else { y_high };
            writeln!(
                out,
                "<line class=\"range {}\" x1=\"{x:.2}\" x2=\"{x:.2}\" y1=\"{y_low:.2}\" y2=\"{y_high:.2}\"><title>runs \
                 {}..{}: {}..{} {unit}</title></line>",
                verdict_class(worst),
                first + 1,
                last,
                tick_label((low * 10.0).round() / 10.0),
                tick_label((high * 10.0).round() / 10.0)
            )?;
        }
    }

    // Axes and labels.
    writeln!(
        out,
        "<line class=\"axis\" x1=\"{MARGIN_LEFT}\" x2=\"{MARGIN_LEFT}\" y1=\"{MARGIN_TOP}\" y2=\"{bottom:.2}\" />"
    )?;
    writeln!(
        out,
        "<line class=\"axis\" x1=\"{MARGIN_LEFT}\" x2=\"{:.2}\" y1=\"{bottom:.2}\" y2=\"{bottom:.2}\" />",
        MARGIN_LEFT + plot_width
    )?;
    writeln!(
        out,
        "<text class=\"tick\" x=\"{MARGIN_LEFT}\" y=\"{:.2}\" text-anchor=\"start\">1</text>",
        bottom + 14.0
    )?;
    writeln!(
        out,
        "<text class=\"tick\" x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"end\">{}</text>",
        MARGIN_LEFT + plot_width,
        bottom + 14.0,
        thousands(n as u64)
    )?;
    writeln!(
        out,
        "<text class=\"axis-label\" x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"middle\">run (report order)</text>",
        MARGIN_LEFT + plot_width / 2.0,
        CHART_HEIGHT - 8.0
    )?;
    writeln!(
        out,
        "<text class=\"axis-label\" transform=\"translate(16 {:.2}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
        MARGIN_TOP + plot_height / 2.0,
        escape(label)
    )?;
    writeln!(out, "</svg>")?;
    if n <= MAX_CHART_MARKS {
        writeln!(
            out,
            "<figcaption>{}: one mark per run ({} runs).</figcaption>",
            escape(label),
            thousands(n as u64)
        )?;
    } else {
        writeln!(
            out,
            "<figcaption>{}: {} runs drawn as {CHART_BUCKETS} ranges (min to max of about {} consecutive runs), \
             coloured by the worst verdict in the range.</figcaption>",
            escape(label),
            thousands(n as u64),
            n.div_ceil(CHART_BUCKETS)
        )?;
    }
    writeln!(out, "</figure>")?;
    Ok(())
}

/// `1234567` as `1,234,567`.
fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

fn plural(count: u64) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// Seconds as `42.0 s`, `12 min 03 s` or `2 h 05 min`.
fn duration(seconds: f64) -> String {
    if !seconds.is_finite() || seconds < 0.0 {
        return "n/a".to_owned();
    }
    if seconds < 60.0 {
        return format!("{seconds:.1} s");
    }
    let whole = seconds.round() as u64;
    let (hours, minutes, secs) = (whole / 3600, whole / 60 % 60, whole % 60);
    if hours > 0 {
        format!("{hours} h {minutes:02} min {secs:02} s")
    } else {
        format!("{minutes} min {secs:02} s")
    }
}

mod coverage;
mod shrunk;
mod timeline;
pub use timeline::timeline_svg;

#[cfg(test)]
mod tests;
