//! The report page's stylesheet, inlined into its `<head>`: the page loads nothing
//! from outside. One constant, kept apart from the markup that uses its classes.

/// The page's CSS (the timeline drawing carries its own, see `timeline.rs`).
pub(super) const STYLE: &str = "
.shrunk { border-left: 3px solid #1f883d; padding-left: 12px; margin: 12px 0; }
table.shrink td, table.shrink th { padding: 2px 10px; text-align: right; }
.timeline { overflow-x: auto; }
details.tree { margin: 6px 0; } details.tree ul { list-style: none; margin: 2px 0 2px 10px; padding-left: 12px;
  border-left: 1px solid #d0d7de; } details.tree li.fail { color: #cf222e; }
details.tree code.repro { display: block; white-space: pre; overflow-x: auto; color: #1f2328; }
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
