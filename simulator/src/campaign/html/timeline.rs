//! One run's [`Timeline`] drawn as an inline SVG: a lane per replica with the metadata
//! group's views as coloured rectangles along a tick axis and the replica's faults as
//! glyphs, a lane for the network (partitions shaded until their heal, clogs,
//! outages), a red line at the failing tick, and a legend.
//!
//! Like the rest of the page: a pure function of its input (floats written with fixed
//! precision), self-contained (an inline `<style>`, no script, no external resource),
//! well-formed XML, every string from the timeline escaped. It draws what the timeline
//! holds and nothing else: no clients, no partition groups, no counters (those are in
//! the Chrome trace).

use std::fmt::{self, Write};

use super::chart::nice_step;
use super::text::thousands;
use crate::html::escape;
use crate::trace::{Timeline, TimelineLane, TimelineMark};

/// The drawing's width: the page's charts are 1,100 px wide too.
const WIDTH_PX: f64 = 1100.0;
/// Room at the left for a lane's name ("replica 12" at 12 px fits in 84).
const LABEL_WIDTH_PX: f64 = 84.0;
/// Room at the right, so the last axis label is not cut.
const MARGIN_RIGHT_PX: f64 = 16.0;
/// Room above the first lane for the failure's label.
const MARGIN_TOP_PX: f64 = 26.0;
/// A lane's height: tall enough for a glyph and a view number.
const LANE_HEIGHT_PX: f64 = 22.0;
/// The space between lanes.
const LANE_GAP_PX: f64 = 6.0;
/// The axis below the lanes: its line, tick labels and title.
const AXIS_HEIGHT_PX: f64 = 40.0;
/// One legend row.
const LEGEND_ROW_PX: f64 = 20.0;
/// Space below the legend.
const MARGIN_BOTTOM_PX: f64 = 6.0;
/// The narrowest a span is drawn, so a one-tick view in a long run still shows.
const SPAN_MIN_WIDTH_PX: f64 = 0.75;
/// About how wide a character of the 10-11 px labels is, to decide whether a view
/// number fits in its span and to lay the legend out.
const CHAR_WIDTH_PX: f64 = 6.5;
/// The padding a view number needs on either side inside its span.
const VIEW_LABEL_PADDING_PX: f64 = 3.0;
/// A legend entry: the swatch or glyph and the gap before its label.
const LEGEND_SWATCH_PX: f64 = 18.0;
/// The gap between legend entries.
const LEGEND_GAP_PX: f64 = 14.0;

const STYLE: &str = "
svg.timeline { display: block; max-width: 100%; height: auto; font: 11px system-ui, sans-serif; }
svg.timeline .lane-bg { fill: #f6f8fa; }
svg.timeline .lane-label { fill: #1f2328; font-size: 12px; }
svg.timeline .lane-label.truncated { font-style: italic; }
svg.timeline .span { stroke: #ffffff; stroke-width: .5; }
svg.timeline .s-normal { fill: #6fdd8b; } svg.timeline .s-view-change { fill: #eac54f; }
svg.timeline .s-recovering { fill: #80ccff; } svg.timeline .s-down { fill: #afb8c1; }
svg.timeline .s-other { fill: #d8b9ff; }
svg.timeline .view { fill: #1f2328; font-size: 10px; }
svg.timeline .cut { fill: #ff8182; fill-opacity: .35; }
svg.timeline .axis { stroke: #57606a; stroke-width: 1; }
svg.timeline .grid { stroke: #d0d7de; stroke-width: 1; stroke-dasharray: 2 3; }
svg.timeline .tick { fill: #57606a; }
svg.timeline .axis-label { fill: #1f2328; }
svg.timeline .failure { stroke: #cf222e; stroke-width: 2; }
svg.timeline .failure-label { fill: #cf222e; font-weight: 600; }
svg.timeline .k-crash { fill: none; stroke: #cf222e; stroke-width: 2.2; }
svg.timeline .k-power-loss { fill: #82071e; }
svg.timeline .k-restart { fill: #1a7f37; }
svg.timeline .k-disk-fault { fill: #8250df; }
svg.timeline .k-disk-errors-on { fill: #bc4c00; }
svg.timeline .k-disk-errors-off { fill: #ffffff; stroke: #bc4c00; stroke-width: 1.5; }
svg.timeline .k-rot { fill: #953800; }
svg.timeline .k-partition { fill: #cf222e; }
svg.timeline .k-heal { fill: #1a7f37; }
svg.timeline .k-clog { fill: #bf8700; }
svg.timeline .k-outage { fill: #1f2328; }
svg.timeline .k-other { fill: #ffffff; stroke: #57606a; stroke-width: 1.5; }
";

/// The statuses drawn in a colour of their own (CSS class `s-<status>`); any other is
/// `s-other`.
const STATUSES: [&str; 4] = ["normal", "view-change", "recovering", "down"];

/// Each fault kind's glyph (CSS class `k-<kind>`), a path around the mark's centre; any
/// other kind is `k-other`, a hollow circle.
const GLYPHS: [(&str, &str); 11] = [
    ("crash", "M-4 -4L4 4M4 -4L-4 4"),
    ("power-loss", "M1.5 -6L-4 1H0L-1.5 6L4 -1H0Z"),
    ("restart", "M0 -5L5 4H-5Z"),
    ("disk-fault", "M0 -5.5L5.5 0L0 5.5L-5.5 0Z"),
    ("disk-errors-on", "M-4 -4H4V4H-4Z"),
    ("disk-errors-off", "M-4 -4H4V4H-4Z"),
    ("rot", "M-4.5 0A4.5 4.5 0 1 0 4.5 0A4.5 4.5 0 1 0 -4.5 0Z"),
    ("partition", "M-5 -4H5L0 5Z"),
    ("heal", "M-2 -5H2V-2H5V2H2V5H-2V2H-5V-2H-2Z"),
    ("clog", "M-4 -5H4L-4 5H4Z"),
    ("outage", "M-5 -5H5V5H-5Z"),
];
const OTHER_GLYPH: &str = "M-3.5 0A3.5 3.5 0 1 0 3.5 0A3.5 3.5 0 1 0 -3.5 0Z";

/// The CSS class suffix of a status.
fn status_class(status: &str) -> &'static str {
    STATUSES
        .iter()
        .find(|&&known| known == status)
        .copied()
        .unwrap_or("other")
}

/// The CSS class suffix and the path of a fault kind's glyph.
fn glyph(kind: &str) -> (&'static str, &'static str) {
    GLYPHS
        .iter()
        .find(|(known, _)| *known == kind)
        .copied()
        .unwrap_or(("other", OTHER_GLYPH))
}

/// `timeline` as one self-contained `<svg>` element (see the module documentation).
pub fn timeline_svg(timeline: &Timeline) -> String {
    let mut out = String::with_capacity(8 * 1024);
    // Writing into a String cannot fail; the error type is only fmt's signature.
    write_svg(&mut out, timeline).expect("formatting into a String never fails");
    out
}

/// Where things go.
struct Geometry {
    /// The tick at the right end of the axis (at least 1).
    scale: u64,
    plot_width: f64,
}

impl Geometry {
    fn x(&self, tick: u64) -> f64 {
        LABEL_WIDTH_PX + tick.min(self.scale) as f64 * self.plot_width / self.scale as f64
    }

    fn lane_top(lane: usize) -> f64 {
        MARGIN_TOP_PX + lane as f64 * (LANE_HEIGHT_PX + LANE_GAP_PX)
    }

    fn lanes_bottom(lanes: usize) -> f64 {
        Self::lane_top(lanes) - if lanes > 0 { LANE_GAP_PX } else { 0.0 }
    }
}

/// One legend entry.
enum Key {
    Status(&'static str),
    Cut,
    Glyph(&'static str, &'static str),
    Failure,
}

impl Key {
    fn label(&self) -> &'static str {
        match self {
            Key::Status(status) => status,
            Key::Cut => "partitioned",
            Key::Glyph(kind, _) => kind,
            Key::Failure => "failing check",
        }
    }

    fn width(&self) -> f64 {
        LEGEND_SWATCH_PX + self.label().len() as f64 * CHAR_WIDTH_PX + LEGEND_GAP_PX
    }
}

fn legend() -> Vec<Key> {
    let mut keys: Vec<Key> = STATUSES.iter().map(|&status| Key::Status(status)).collect();
    keys.push(Key::Cut);
    keys.push(Key::Failure);
    keys.extend(GLYPHS.iter().map(|&(kind, path)| Key::Glyph(kind, path)));
    keys
}

/// Each legend entry's (x, row), flowing left to right and wrapping at the width.
fn legend_layout(keys: &[Key]) -> (Vec<(f64, usize)>, usize) {
    let right = WIDTH_PX - MARGIN_RIGHT_PX;
    let (mut x, mut row) = (LABEL_WIDTH_PX, 0);
    let mut places = Vec::with_capacity(keys.len());
    for key in keys {
        if x + key.width() > right && x > LABEL_WIDTH_PX {
            x = LABEL_WIDTH_PX;
            row += 1;
        }
        places.push((x, row));
        x += key.width();
    }
    (places, row + 1)
}

fn write_svg(out: &mut String, timeline: &Timeline) -> fmt::Result {
    let geometry = Geometry {
        scale: timeline.ticks.max(1),
        plot_width: WIDTH_PX - LABEL_WIDTH_PX - MARGIN_RIGHT_PX,
    };
    let lanes_bottom = Geometry::lanes_bottom(timeline.lanes.len());
    let keys = legend();
    let (places, rows) = legend_layout(&keys);
    let legend_top = lanes_bottom + AXIS_HEIGHT_PX;
    let height = legend_top + rows as f64 * LEGEND_ROW_PX + MARGIN_BOTTOM_PX;

    writeln!(
        out,
        "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH_PX} {height:.2}\" \
         width=\"{WIDTH_PX}\" height=\"{height:.2}\" role=\"img\" aria-label=\"timeline of {} ticks\">",
        timeline.ticks
    )?;
    writeln!(out, "<style>{STYLE}</style>")?;
    write_axis(out, timeline, &geometry, lanes_bottom)?;
    for (index, lane) in timeline.lanes.iter().enumerate() {
        write_lane(out, &geometry, index, lane)?;
    }
    if let Some(failure) = &timeline.failure {
        write_failure(out, &geometry, failure, lanes_bottom)?;
    }
    writeln!(out, "<g class=\"legend\">")?;
    for (key, &(x, row)) in keys.iter().zip(&places) {
        write_key(
            out,
            key,
            x,
            legend_top + row as f64 * LEGEND_ROW_PX + LEGEND_ROW_PX / 2.0,
        )?;
    }
    writeln!(out, "</g>")?;
    writeln!(out, "</svg>")?;
    Ok(())
}

fn write_axis(out: &mut String, timeline: &Timeline, geometry: &Geometry, lanes_bottom: f64) -> fmt::Result {
    let axis_y = lanes_bottom + 6.0;
    // A round step of whole ticks (2.5 rounds up to 3; 25, 250, ... are whole already).
    let step = nice_step(timeline.ticks as f64).max(1.0).ceil() as u64;
    writeln!(out, "<g class=\"ticks\">")?;
    let mut tick = 0;
    while tick <= geometry.scale {
        let x = geometry.x(tick);
        writeln!(
            out,
            "<line class=\"grid\" x1=\"{x:.2}\" x2=\"{x:.2}\" y1=\"{MARGIN_TOP_PX:.2}\" y2=\"{axis_y:.2}\" />"
        )?;
        let label = thousands(tick);
        // A label centred on the last tick would stick out of the drawing: end it there.
        let anchor = if x + label.len() as f64 * CHAR_WIDTH_PX / 2.0 > WIDTH_PX {
            "end"
        } else {
            "middle"
        };
        writeln!(
            out,
            "<text class=\"tick\" x=\"{x:.2}\" y=\"{:.2}\" text-anchor=\"{anchor}\">{label}</text>",
            axis_y + 14.0
        )?;
        let Some(next) = tick.checked_add(step) else {
            break;
        };
        tick = next;
    }
    writeln!(
        out,
        "<line class=\"axis\" x1=\"{LABEL_WIDTH_PX:.2}\" x2=\"{:.2}\" y1=\"{axis_y:.2}\" y2=\"{axis_y:.2}\" />",
        geometry.x(geometry.scale)
    )?;
    writeln!(
        out,
        "<text class=\"axis-label\" x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"middle\">tick (10 ms of virtual time; the \
         run ends at tick {})</text>",
        LABEL_WIDTH_PX + geometry.plot_width / 2.0,
        axis_y + 29.0,
        thousands(timeline.ticks)
    )?;
    writeln!(out, "</g>")?;
    Ok(())
}

fn write_lane(out: &mut String, geometry: &Geometry, index: usize, lane: &TimelineLane) -> fmt::Result {
    let top = Geometry::lane_top(index);
    let middle = top + LANE_HEIGHT_PX / 2.0;
    writeln!(out, "<g class=\"lane\" data-lane=\"{}\">", escape(&lane.name))?;
    writeln!(
        out,
        "<rect class=\"lane-bg\" x=\"{LABEL_WIDTH_PX:.2}\" y=\"{top:.2}\" width=\"{:.2}\" height=\"{LANE_HEIGHT_PX:.2}\" />",
        geometry.plot_width
    )?;
    let truncated = lane.spans_dropped + lane.marks_dropped > 0;
    write!(
        out,
        "<text class=\"lane-label{}\" x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"end\">{}",
        if truncated { " truncated" } else { "" },
        LABEL_WIDTH_PX - 8.0,
        middle + 4.0,
        escape(&lane.name)
    )?;
    if truncated {
        write!(
            out,
            "<title>{}: {} spans and {} marks past the cap are not drawn</title>",
            escape(&lane.name),
            thousands(lane.spans_dropped),
            thousands(lane.marks_dropped)
        )?;
    }
    writeln!(out, "</text>")?;

    // Partitions, shaded from each to the next heal (or the end).
    let mut cut_from: Option<u64> = None;
    let mut cuts = Vec::new();
    for mark in &lane.marks {
        match (mark.kind.as_str(), cut_from) {
            ("partition", None) => cut_from = Some(mark.tick),
            ("heal", Some(from)) => {
                cuts.push((from, mark.tick));
                cut_from = None;
            }
            _ => {}
        }
    }
    if let Some(from) = cut_from {
        cuts.push((from, geometry.scale));
    }
    for (from, to) in cuts {
        let (x0, x1) = (geometry.x(from), geometry.x(to));
        writeln!(
            out,
            "<rect class=\"cut\" x=\"{x0:.2}\" y=\"{top:.2}\" width=\"{:.2}\" height=\"{LANE_HEIGHT_PX:.2}\"><title>\
             partitioned, ticks {} to {}</title></rect>",
            (x1 - x0).max(SPAN_MIN_WIDTH_PX),
            thousands(from),
            thousands(to)
        )?;
    }

    for span in &lane.spans {
        let (x0, x1) = (geometry.x(span.from), geometry.x(span.to));
        let width = (x1 - x0).max(SPAN_MIN_WIDTH_PX);
        writeln!(
            out,
            "<rect class=\"span s-{}\" x=\"{x0:.2}\" y=\"{:.2}\" width=\"{width:.2}\" height=\"{:.2}\"><title>{}, view \
             {}, ticks {} to {}</title></rect>",
            status_class(&span.status),
            top + 2.0,
            LANE_HEIGHT_PX - 4.0,
            escape(&span.status),
            span.view,
            thousands(span.from),
            thousands(span.to)
        )?;
        let label = format!("v{}", span.view);
        if width >= label.len() as f64 * CHAR_WIDTH_PX + 2.0 * VIEW_LABEL_PADDING_PX {
            writeln!(
                out,
                "<text class=\"view\" x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"middle\">{label}</text>",
                x0 + width / 2.0,
                middle + 3.5
            )?;
        }
    }

    for mark in &lane.marks {
        let (class, path) = glyph(&mark.kind);
        writeln!(
            out,
            "<g class=\"mark k-{class}\" transform=\"translate({:.2} {middle:.2})\"><title>{} at tick {}{}{}</title>\
             <path d=\"{path}\" /></g>",
            geometry.x(mark.tick),
            escape(&mark.kind),
            thousands(mark.tick),
            if mark.detail.is_empty() { "" } else { ": " },
            escape(&mark.detail)
        )?;
    }
    writeln!(out, "</g>")?;
    Ok(())
}

fn write_failure(out: &mut String, geometry: &Geometry, failure: &TimelineMark, lanes_bottom: f64) -> fmt::Result {
    let x = geometry.x(failure.tick);
    // The label runs away from the nearer edge.
    let (anchor, label_x) = if x < LABEL_WIDTH_PX + geometry.plot_width / 2.0 {
        ("start", x + 4.0)
    } else {
        ("end", x - 4.0)
    };
    writeln!(out, "<g class=\"failing\">")?;
    writeln!(
        out,
        "<line class=\"failure\" x1=\"{x:.2}\" x2=\"{x:.2}\" y1=\"{:.2}\" y2=\"{lanes_bottom:.2}\"><title>FAILED at tick \
         {}: {}: {}</title></line>",
        MARGIN_TOP_PX - 14.0,
        thousands(failure.tick),
        escape(&failure.kind),
        escape(&failure.detail)
    )?;
    writeln!(
        out,
        "<text class=\"failure-label\" x=\"{label_x:.2}\" y=\"{:.2}\" text-anchor=\"{anchor}\">FAILED: {}</text>",
        MARGIN_TOP_PX - 6.0,
        escape(&failure.kind)
    )?;
    writeln!(out, "</g>")?;
    Ok(())
}

fn write_key(out: &mut String, key: &Key, x: f64, middle: f64) -> fmt::Result {
    let centre = x + LEGEND_SWATCH_PX / 2.0 - 3.0;
    match key {
        Key::Status(status) => writeln!(
            out,
            "<rect class=\"span s-{status}\" x=\"{:.2}\" y=\"{:.2}\" width=\"12\" height=\"12\" />",
            centre - 6.0,
            middle - 6.0
        )?,
        Key::Cut => writeln!(
            out,
            "<rect class=\"cut\" x=\"{:.2}\" y=\"{:.2}\" width=\"12\" height=\"12\" />",
            centre - 6.0,
            middle - 6.0
        )?,
        Key::Glyph(kind, path) => writeln!(
            out,
            "<g class=\"key k-{kind}\" transform=\"translate({centre:.2} {middle:.2})\"><path d=\"{path}\" /></g>"
        )?,
        Key::Failure => writeln!(
            out,
            "<line class=\"failure\" x1=\"{centre:.2}\" x2=\"{centre:.2}\" y1=\"{:.2}\" y2=\"{:.2}\" />",
            middle - 7.0,
            middle + 7.0
        )?,
    }
    writeln!(
        out,
        "<text class=\"tick\" x=\"{:.2}\" y=\"{:.2}\">{}</text>",
        x + LEGEND_SWATCH_PX - 2.0,
        middle + 4.0,
        key.label()
    )
}

#[cfg(test)]
mod tests;
