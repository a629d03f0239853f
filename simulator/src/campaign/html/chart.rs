//! The report page's charts: wall time and commits per run, in report order, as inline
//! SVG. One mark per run up to [`MAX_CHART_MARKS`] runs, else [`CHART_BUCKETS`] min-max
//! ranges coloured by their worst verdict; shaded bands separate profile/plane cells.

use std::fmt::{self, Write};

use super::text::thousands;
use crate::campaign::report::{CampaignReport, RunRecord, RunVerdict};
use crate::html::{close_empty_section, escape, open_section};

/// Up to this many runs a chart draws one mark per run; above it, runs are drawn as
/// [`CHART_BUCKETS`] min-max ranges so the page stays small.
pub const MAX_CHART_MARKS: usize = 3000;

/// Number of ranges a chart of more than [`MAX_CHART_MARKS`] runs draws.
pub const CHART_BUCKETS: usize = 600;

/// A chart's width in SVG pixels: the page's content width.
const CHART_WIDTH: f64 = 1100.0;
/// A chart's height in SVG pixels.
const CHART_HEIGHT: f64 = 230.0;
/// Room left of the plot for the value axis's tick labels and title.
const MARGIN_LEFT: f64 = 72.0;
/// Room right of the plot, so the last run's mark is not cut.
const MARGIN_RIGHT: f64 = 16.0;
/// Room above the plot for the bands' labels.
const MARGIN_TOP: f64 = 22.0;
/// Room below the plot for the run axis's labels and title.
const MARGIN_BOTTOM: f64 = 42.0;

/// Write the charts section.
pub(super) fn write_charts(out: &mut String, report: &CampaignReport) -> fmt::Result {
    open_section(out, "charts", "Runs")?;
    if report.runs.is_empty() {
        return close_empty_section(out, "No runs to chart.");
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

/// How bad a verdict is, for the worst of a bucket: fail, invalid, vacuous, pass.
fn severity(verdict: RunVerdict) -> u8 {
    match verdict {
        RunVerdict::Pass => 0,
        RunVerdict::Vacuous => 1,
        RunVerdict::Invalid => 2,
        RunVerdict::Fail => 3,
    }
}

/// `value` if it is a positive finite number, else 0 (the chart has no negative axis).
fn finite(value: f64) -> f64 {
    if value.is_finite() && value > 0.0 { value } else { 0.0 }
}

/// A round step for about four gridlines up to `max`: 1, 2, 2.5 or 5 times a power of ten.
pub(super) fn nice_step(max: f64) -> f64 {
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
pub(super) fn tick_label(value: f64) -> String {
    if value == value.trunc() && value.abs() < 1e15 {
        thousands(value as u64)
    } else {
        let text = format!("{value:.3}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// What a chart draws: the runs, each one's value (positive and finite, else 0) and
/// the values' unit.
struct Series<'a> {
    runs: &'a [RunRecord],
    values: Vec<f64>,
    unit: &'a str,
}

/// Where a chart's values land: the plot area's size, the y scale (a round step, four
/// gridlines at least) and the x position of each of its `n` runs.
struct Frame {
    n: usize,
    plot_width: f64,
    plot_height: f64,
    step: f64,
    y_max: f64,
}

impl Frame {
    /// The frame for `n` runs whose largest value is `max`.
    fn new(n: usize, max: f64) -> Frame {
        let step = nice_step(max);
        let mut y_max = step * 4.0;
        while y_max < max {
            y_max += step;
        }
        Frame {
            n,
            plot_width: CHART_WIDTH - MARGIN_LEFT - MARGIN_RIGHT,
            plot_height: CHART_HEIGHT - MARGIN_TOP - MARGIN_BOTTOM,
            step,
            y_max,
        }
    }

    /// The x of a run position (`index` runs from the left edge).
    fn x_of(&self, index: f64) -> f64 {
        MARGIN_LEFT + index * self.plot_width / self.n as f64
    }

    /// The y of a value.
    fn y_of(&self, v: f64) -> f64 {
        MARGIN_TOP + self.plot_height - finite(v) / self.y_max * self.plot_height
    }

    /// The y of the x axis.
    fn bottom(&self) -> f64 {
        MARGIN_TOP + self.plot_height
    }
}

/// Write one chart of `value` per run as a figure: bands, grid, marks (or ranges), axes
/// and a caption saying which.
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
    let series = Series {
        runs,
        values: runs.iter().map(|run| finite(value(run))).collect(),
        unit,
    };
    let max = series.values.iter().copied().fold(0.0, f64::max);
    let frame = Frame::new(n, max);

    writeln!(out, "<figure>")?;
    writeln!(
        out,
        "<svg class=\"chart\" id=\"{id}\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {CHART_WIDTH} \
         {CHART_HEIGHT}\" width=\"{CHART_WIDTH}\" height=\"{CHART_HEIGHT}\" role=\"img\" aria-label=\"{} per run\">",
        escape(label)
    )?;
    write_bands(out, runs, &frame)?;
    write_grid(out, &frame)?;
    if n <= MAX_CHART_MARKS {
        write_marks(out, &series, &frame)?;
    } else {
        write_ranges(out, &series, &frame)?;
    }
    write_axes(out, &frame, label)?;
    writeln!(out, "</svg>")?;
    write_caption(out, n, label)?;
    writeln!(out, "</figure>")?;
    Ok(())
}

/// Bands: one per contiguous (profile, plane) cell, labelled when wide enough.
fn write_bands(out: &mut String, runs: &[RunRecord], frame: &Frame) -> fmt::Result {
    let n = runs.len();
    let plot_height = frame.plot_height;
    let mut start = 0;
    let mut band = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && runs[end].profile == runs[start].profile && runs[end].plane == runs[start].plane {
            end += 1;
        }
        let (x0, x1) = (frame.x_of(start as f64), frame.x_of(end as f64));
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
    Ok(())
}

/// Grid and y axis ticks.
fn write_grid(out: &mut String, frame: &Frame) -> fmt::Result {
    let mut tick = 0.0;
    while tick <= frame.y_max + frame.step / 2.0 {
        let y = frame.y_of(tick);
        writeln!(
            out,
            "<line class=\"grid\" x1=\"{MARGIN_LEFT}\" x2=\"{:.2}\" y1=\"{y:.2}\" y2=\"{y:.2}\" />",
            MARGIN_LEFT + frame.plot_width
        )?;
        writeln!(
            out,
            "<text class=\"tick\" x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"end\">{}</text>",
            MARGIN_LEFT - 6.0,
            y + 4.0,
            tick_label(tick)
        )?;
        tick += frame.step;
    }
    Ok(())
}

/// One mark per run, smaller as runs get many, coloured by verdict.
fn write_marks(out: &mut String, series: &Series, frame: &Frame) -> fmt::Result {
    let Series { runs, values, unit } = series;
    let n = runs.len();
    let radius = if n <= 200 {
        3.5
    } else if n <= 1000 {
        2.5
    } else {
        1.6
    };
    for (index, (run, &v)) in runs.iter().zip(values).enumerate() {
        writeln!(
            out,
            "<circle class=\"mark {}\" cx=\"{:.2}\" cy=\"{:.2}\" r=\"{radius}\"><title>{}/{} seed {}: {} {unit} \
             ({})</title></circle>",
            verdict_class(run.verdict),
            frame.x_of(index as f64 + 0.5),
            frame.y_of(v),
            escape(&run.profile),
            escape(&run.plane),
            run.seed,
            tick_label((v * 10.0).round() / 10.0),
            run.verdict
        )?;
    }
    Ok(())
}

/// [`CHART_BUCKETS`] min-max ranges of consecutive runs, each coloured by its worst
/// verdict.
fn write_ranges(out: &mut String, series: &Series, frame: &Frame) -> fmt::Result {
    let Series { runs, values, unit } = series;
    let n = runs.len();
    for bucket in 0..CHART_BUCKETS {
        let first = bucket * n / CHART_BUCKETS;
        let last = ((bucket + 1) * n / CHART_BUCKETS).max(first + 1).min(n);
        let (mut low, mut high) = (f64::INFINITY, 0.0f64);
        let mut worst = RunVerdict::Pass;
        for (run, &v) in runs[first..last].iter().zip(&values[first..last]) {
            low = low.min(v);
            high = high.max(v);
            if severity(run.verdict) > severity(worst) {
                worst = run.verdict;
            }
        }
        if !low.is_finite() {
            low = 0.0;
        }
        let x = frame.x_of((first + last) as f64 / 2.0);
        let (y_low, y_high) = (frame.y_of(low), frame.y_of(high));
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
    Ok(())
}

/// Axes and labels: the run axis from 1 to `n`, the value axis titled `label`.
fn write_axes(out: &mut String, frame: &Frame, label: &str) -> fmt::Result {
    let bottom = frame.bottom();
    let plot_width = frame.plot_width;
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
        thousands(frame.n as u64)
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
        MARGIN_TOP + frame.plot_height / 2.0,
        escape(label)
    )?;
    Ok(())
}

/// The caption: one mark per run, or how the `n` runs were bucketed.
fn write_caption(out: &mut String, n: usize, label: &str) -> fmt::Result {
    if n <= MAX_CHART_MARKS {
        writeln!(
            out,
            "<figcaption>{}: one mark per run ({} runs).</figcaption>",
            escape(label),
            thousands(n as u64)
        )
    } else {
        writeln!(
            out,
            "<figcaption>{}: {} runs drawn as {CHART_BUCKETS} ranges (min to max of about {} consecutive runs), \
             coloured by the worst verdict in the range.</figcaption>",
            escape(label),
            thousands(n as u64),
            n.div_ceil(CHART_BUCKETS)
        )
    }
}
