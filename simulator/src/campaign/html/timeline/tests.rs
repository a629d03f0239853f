//! The timeline drawing, parsed back as XML: a lane per replica and the network, a
//! rectangle per span, a glyph per fault, the failure line at its tick, everything escaped.
use std::collections::BTreeMap;

use super::*;
use crate::trace::{Lane, METADATA_GROUP, TimelineSpan, TraceRecorder};

/// One parsed element: its name, attributes, text (unescaped, direct children only),
/// and children.
#[derive(Debug)]
struct Element {
    name: String,
    attributes: BTreeMap<String, String>,
    text: String,
    children: Vec<Element>,
}

impl Element {
    fn attribute(&self, name: &str) -> &str {
        self.attributes
            .get(name)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("<{}> has no {name}", self.name))
    }

    fn has_class(&self, class: &str) -> bool {
        self.attributes
            .get("class")
            .is_some_and(|classes| classes.split(' ').any(|c| c == class))
    }

    /// Every descendant (self excluded) that `keep` accepts, in document order.
    fn find(&self, keep: &dyn Fn(&Element) -> bool) -> Vec<&Element> {
        let mut found = Vec::new();
        for child in &self.children {
            if keep(child) {
                found.push(child);
            }
            found.extend(child.find(keep));
        }
        found
    }

    /// Descendants named `name` with class `class`.
    fn all(&self, name: &str, class: &str) -> Vec<&Element> {
        self.find(&|e| e.name == name && e.has_class(class))
    }

    /// The text of the `<title>` child.
    fn title(&self) -> &str {
        self.children
            .iter()
            .find(|child| child.name == "title")
            .map(|title| title.text.as_str())
            .unwrap_or_else(|| panic!("<{}> has no title", self.name))
    }
}

fn unescape(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let end = rest[amp..]
            .find(';')
            .unwrap_or_else(|| panic!("unterminated entity in {text:?}"));
        let entity = &rest[amp + 1..amp + end];
        let c = match entity {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            _ => entity
                .strip_prefix('#')
                .and_then(|digits| digits.parse::<u32>().ok())
                .and_then(char::from_u32)
                .unwrap_or_else(|| panic!("unknown entity &{entity}; in {text:?}")),
        };
        out.push(c);
        rest = &rest[amp + end + 1..];
    }
    out.push_str(rest);
    out
}

/// `name="value" ...`, double quotes only, no duplicates, no `<` in a value.
fn parse_attributes(mut rest: &str) -> BTreeMap<String, String> {
    let mut attributes = BTreeMap::new();
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return attributes;
        }
        let equals = rest
            .find("=\"")
            .unwrap_or_else(|| panic!("attribute without a value: {rest:?}"));
        let name = &rest[..equals];
        assert!(
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == ':'),
            "bad attribute name {name:?}"
        );
        let value_start = equals + 2;
        let value_len = rest[value_start..]
            .find('"')
            .unwrap_or_else(|| panic!("unterminated value: {rest:?}"));
        let value = &rest[value_start..value_start + value_len];
        assert!(!value.contains('<'), "'<' in the value of {name}");
        let previous = attributes.insert(name.to_owned(), unescape(value));
        assert!(previous.is_none(), "duplicate attribute {name}");
        rest = &rest[value_start + value_len + 1..];
    }
}

/// Parse well-formed XML (one root, tags closed in order, attributes quoted, entities
/// known, no `>` in text), or panic saying where it is not.
fn parse(xml: &str) -> Element {
    let empty = |name: &str, attributes| Element {
        name: name.to_owned(),
        attributes,
        text: String::new(),
        children: Vec::new(),
    };
    let mut stack = vec![empty("#document", BTreeMap::new())];
    let mut rest = xml;
    loop {
        let open = rest.find('<').unwrap_or(rest.len());
        let text = &rest[..open];
        assert!(!text.contains('>'), "stray '>' in text {text:?}");
        let top = stack.last_mut().expect("the document");
        top.text.push_str(&unescape(text));
        if open == rest.len() {
            break;
        }
        let close = rest[open..].find('>').expect("an unterminated tag") + open;
        let tag = &rest[open + 1..close];
        rest = &rest[close + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let element = stack.pop().expect("an open element");
            assert_eq!(element.name, name, "</{name}> closes <{}>", element.name);
            stack.last_mut().expect("a parent").children.push(element);
            continue;
        }
        let (tag, self_closed) = match tag.strip_suffix('/') {
            Some(tag) => (tag, true),
            None => (tag, false),
        };
        let name_len = tag.find(char::is_whitespace).unwrap_or(tag.len());
        let name = &tag[..name_len];
        assert!(
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric()),
            "bad tag <{tag}>"
        );
        let element = empty(name, parse_attributes(&tag[name_len..]));
        if self_closed {
            stack.last_mut().expect("a parent").children.push(element);
        } else {
            stack.push(element);
        }
    }
    assert_eq!(
        stack.len(),
        1,
        "unclosed: {:?}",
        stack.iter().map(|e| &e.name).collect::<Vec<_>>()
    );
    let mut document = stack.pop().expect("the document");
    assert!(document.text.trim().is_empty(), "text outside the root");
    assert_eq!(document.children.len(), 1, "one root element");
    document.children.remove(0)
}

const NASTY: &str = "<script>alert(1)</script> & \"quoted\" 'single' \u{1}";

fn span(from: u64, to: u64, status: &str, view: u64) -> TimelineSpan {
    TimelineSpan {
        from,
        to,
        status: status.to_owned(),
        view,
    }
}

fn mark(tick: u64, kind: &str, detail: &str) -> TimelineMark {
    TimelineMark {
        tick,
        kind: kind.to_owned(),
        detail: detail.to_owned(),
    }
}

fn lane(name: &str, spans: Vec<TimelineSpan>, marks: Vec<TimelineMark>) -> TimelineLane {
    TimelineLane {
        name: name.to_owned(),
        spans,
        marks,
        spans_dropped: 0,
        marks_dropped: 0,
    }
}

/// 1,000 ticks, so a tick is exactly one pixel of the 1,000-pixel plot from x = 84.
fn sample() -> Timeline {
    Timeline {
        ticks: 1000,
        lanes: vec![
            lane(
                "replica 0",
                vec![
                    span(0, 400, "normal", 0),
                    span(400, 410, "view-change", 1),
                    span(410, 1000, "normal", 1),
                ],
                vec![],
            ),
            lane(
                "replica 1",
                vec![span(0, 1000, "normal", 0)],
                vec![mark(100, "disk-errors-on", ""), mark(300, "disk-errors-off", "")],
            ),
            lane(
                "replica 2",
                vec![
                    span(0, 200, "normal", 0),
                    span(200, 500, "down", 0),
                    span(500, 520, "recovering", 1),
                    span(520, 1000, "normal", 1),
                ],
                vec![mark(200, "crash", NASTY), mark(500, "restart", "")],
            ),
            lane(
                "network",
                vec![],
                vec![
                    mark(600, "partition", "{0} | {1, 2}"),
                    mark(700, "heal", ""),
                    mark(800, "clog", "0 -> 1"),
                    mark(900, "meteor", "not a kind the drawing knows"),
                ],
            ),
        ],
        failure: Some(mark(250, "commit <regressed>", NASTY)),
    }
}

fn lanes(svg: &Element) -> Vec<&Element> {
    svg.all("g", "lane")
}

#[test]
fn the_drawing_is_one_well_formed_svg_without_script() {
    let text = timeline_svg(&sample());
    let svg = parse(&text);
    assert_eq!(svg.name, "svg");
    assert_eq!(svg.attribute("xmlns"), "http://www.w3.org/2000/svg");
    assert_eq!(svg.attribute("width"), "1100");
    assert!(svg.find(&|e| e.name == "script").is_empty());
    assert!(!text.contains("<script"), "the nasty detail is escaped");
    assert!(!text.contains("href"), "nothing external");
}

#[test]
fn a_lane_per_replica_then_the_network_each_labelled() {
    let svg = parse(&timeline_svg(&sample()));
    let names: Vec<&str> = lanes(&svg).iter().map(|lane| lane.attribute("data-lane")).collect();
    assert_eq!(names, ["replica 0", "replica 1", "replica 2", "network"]);
    for lane in lanes(&svg) {
        let labels = lane.all("text", "lane-label");
        assert_eq!(labels.len(), 1);
        assert_eq!(labels[0].text, lane.attribute("data-lane"));
    }
}

#[test]
fn a_rectangle_per_span_coloured_by_status_with_its_tooltip() {
    let timeline = sample();
    let svg = parse(&timeline_svg(&timeline));
    for (drawn, lane) in lanes(&svg).iter().zip(&timeline.lanes) {
        let rects = drawn.all("rect", "span");
        assert_eq!(rects.len(), lane.spans.len(), "lane {}", lane.name);
        for (rect, span) in rects.iter().zip(&lane.spans) {
            assert!(rect.has_class(&format!("s-{}", span.status)));
            assert_eq!(rect.attribute("x"), format!("{:.2}", 84.0 + span.from as f64));
            assert_eq!(rect.attribute("width"), format!("{:.2}", (span.to - span.from) as f64));
            assert_eq!(
                rect.title(),
                format!(
                    "{}, view {}, ticks {} to {}",
                    span.status,
                    span.view,
                    thousands(span.from),
                    thousands(span.to)
                )
            );
        }
    }
    let replica_0 = lanes(&svg)[0];
    let views: Vec<&str> = replica_0.all("text", "view").iter().map(|t| t.text.as_str()).collect();
    assert_eq!(
        views,
        ["v0", "v1"],
        "the ten-pixel view change is too narrow for its number"
    );
}

#[test]
fn a_glyph_per_fault_with_kind_tick_and_detail() {
    let timeline = sample();
    let svg = parse(&timeline_svg(&timeline));
    for (drawn, lane) in lanes(&svg).iter().zip(&timeline.lanes) {
        let marks = drawn.all("g", "mark");
        assert_eq!(marks.len(), lane.marks.len(), "lane {}", lane.name);
        for (glyph, mark) in marks.iter().zip(&lane.marks) {
            let at = format!("translate({:.2} {:.2})", 84.0 + mark.tick as f64, glyph_middle(drawn));
            assert_eq!(glyph.attribute("transform"), at);
            assert!(
                glyph
                    .title()
                    .starts_with(&format!("{} at tick {}", mark.kind, mark.tick))
            );
            assert_eq!(glyph.children.iter().filter(|c| c.name == "path").count(), 1);
        }
    }
    let crash = lanes(&svg)[2].all("g", "k-crash");
    assert_eq!(
        crash[0].title(),
        format!("crash at tick 200: {}", escape_round_trip(NASTY))
    );
    let network = lanes(&svg)[3];
    assert_eq!(
        network.all("g", "k-other").len(),
        1,
        "an unknown kind gets the plain glyph"
    );
    let cut = network.all("rect", "cut");
    assert_eq!(cut.len(), 1, "the partition until its heal");
    assert_eq!((cut[0].attribute("x"), cut[0].attribute("width")), ("684.00", "100.00"));
}

/// The vertical middle of a lane's glyphs: its background's top plus half a lane.
fn glyph_middle(lane: &Element) -> f64 {
    let background = lane.all("rect", "lane-bg");
    let top: f64 = background[0].attribute("y").parse().expect("a number");
    top + LANE_HEIGHT_PX / 2.0
}

/// What a string reads as after escaping and parsing: itself, control characters
/// replaced.
fn escape_round_trip(text: &str) -> String {
    text.replace('\u{1}', "\u{fffd}")
}

#[test]
fn the_failure_line_crosses_every_lane_at_the_failing_tick() {
    let svg = parse(&timeline_svg(&sample()));
    let lines = svg.all("line", "failure");
    // The legend's key is a failure line too; the one in the drawing has a tooltip.
    let drawn: Vec<&&Element> = lines.iter().filter(|line| !line.children.is_empty()).collect();
    assert_eq!(drawn.len(), 1);
    let line = drawn[0];
    assert_eq!((line.attribute("x1"), line.attribute("x2")), ("334.00", "334.00"));
    let last_lane = lanes(&svg)[3].all("rect", "lane-bg")[0];
    let lanes_bottom: f64 = last_lane.attribute("y").parse::<f64>().expect("a number") + LANE_HEIGHT_PX;
    assert!(line.attribute("y1").parse::<f64>().expect("a number") < MARGIN_TOP_PX);
    assert_eq!(line.attribute("y2"), format!("{lanes_bottom:.2}"));
    assert_eq!(
        line.title(),
        format!("FAILED at tick 250: commit <regressed>: {}", escape_round_trip(NASTY))
    );
    let label = svg.all("text", "failure-label");
    assert_eq!(label[0].text, "FAILED: commit <regressed>");
}

#[test]
fn the_axis_labels_a_handful_of_round_ticks() {
    let svg = parse(&timeline_svg(&sample()));
    let ticks = svg.find(&|e| e.name == "g" && e.has_class("ticks"));
    let labels: Vec<&str> = ticks[0].all("text", "tick").iter().map(|t| t.text.as_str()).collect();
    assert_eq!(labels, ["0", "250", "500", "750", "1,000"]);
}

#[test]
fn the_legend_shows_every_status_and_glyph() {
    let svg = parse(&timeline_svg(&sample()));
    let legend = svg.find(&|e| e.name == "g" && e.has_class("legend"));
    let labels: Vec<&str> = legend[0].all("text", "tick").iter().map(|t| t.text.as_str()).collect();
    for status in STATUSES {
        assert!(labels.contains(&status), "{status}");
    }
    for (kind, _) in GLYPHS {
        assert!(labels.contains(&kind), "{kind}");
        assert_eq!(legend[0].all("g", &format!("k-{kind}")).len(), 1);
    }
}

#[test]
fn the_same_timeline_draws_the_same_bytes() {
    assert_eq!(timeline_svg(&sample()), timeline_svg(&sample()));
}

#[test]
fn an_empty_timeline_still_draws_an_axis() {
    let empty = Timeline {
        ticks: 0,
        lanes: Vec::new(),
        failure: None,
    };
    let svg = parse(&timeline_svg(&empty));
    assert!(lanes(&svg).is_empty());
    assert!(svg.all("line", "failure").len() == 1, "only the legend's");
    let ticks = svg.find(&|e| e.name == "g" && e.has_class("ticks"));
    let labels: Vec<&str> = ticks[0].all("text", "tick").iter().map(|t| t.text.as_str()).collect();
    assert_eq!(labels, ["0", "1"]);
}

#[test]
fn a_truncated_lane_says_so_and_an_unknown_status_gets_the_plain_colour() {
    let mut timeline = sample();
    timeline.lanes[0].spans[1].status = "<weird>".to_owned();
    timeline.lanes[1].marks_dropped = 7;
    let svg = parse(&timeline_svg(&timeline));
    let weird = &lanes(&svg)[0].all("rect", "span")[1];
    assert!(weird.has_class("s-other"));
    assert!(weird.title().starts_with("<weird>, view 1"));
    let label = lanes(&svg)[1].all("text", "lane-label")[0];
    assert!(label.has_class("truncated"));
    assert_eq!(
        label.title(),
        "replica 1: 0 spans and 7 marks past the cap are not drawn"
    );
}

#[test]
fn a_recorded_run_draws_a_lane_per_replica_and_the_network() {
    let mut trace = TraceRecorder::new(3, 1);
    for replica in 0..3 {
        trace.replica_state(0, replica, METADATA_GROUP, "normal", 0);
    }
    trace.fault(40, Lane::Replica(1), "power-loss", "cut".to_owned());
    trace.fault(50, Lane::Network, "partition", String::new());
    trace.replica_state(60, 1, METADATA_GROUP, "recovering", 0);
    trace.failure(90, "linearizability", "a stale read");
    trace.finish(100);
    let svg = parse(&timeline_svg(&trace.timeline()));
    let drawn = lanes(&svg);
    assert_eq!(drawn.len(), 4);
    let statuses: Vec<&str> = drawn[1].all("rect", "span").iter().map(|r| r.title()).collect();
    assert_eq!(
        statuses,
        [
            "normal, view 0, ticks 0 to 40",
            "down, view 0, ticks 40 to 60",
            "recovering, view 0, ticks 60 to 100"
        ]
    );
    assert_eq!(drawn[1].all("g", "k-power-loss").len(), 1);
    assert_eq!(drawn[3].all("rect", "cut").len(), 1, "partitioned until the end");
    let failure = svg
        .all("line", "failure")
        .into_iter()
        .find(|line| !line.children.is_empty());
    assert_eq!(
        failure.map(|line| line.attribute("x1")),
        Some("984.00"),
        "tick 90 of 100"
    );
}
