//! A failure group's shrunk repro on the report page: how much smaller it is than the
//! original (ticks, fault events, replicas, clients, requests side by side), the
//! steps that got there, the command, links to its schedule and trace files, and its
//! timeline drawn inline (`timeline_svg`).

use std::fmt::{self, Write};

use super::timeline_svg;
use crate::campaign::shrink::ShrunkRepro;
use crate::html::escape;

/// Write the "Shrunk" block of one failure group.
pub(super) fn write_shrunk(out: &mut String, repro: &ShrunkRepro) -> fmt::Result {
    writeln!(out, "<div class=\"shrunk\">")?;
    let (Some(shrunk), Some(command)) = (&repro.shrunk, &repro.command) else {
        writeln!(
            out,
            "<h4>Not shrunk</h4><p class=\"note\">seed {}: {}</p></div>",
            repro.seed,
            escape(repro.note.as_deref().unwrap_or("no smaller failing run was found"))
        )?;
        return Ok(());
    };
    writeln!(
        out,
        "<h4>Shrunk: seed {} in {:.1} s ({} candidate runs{})</h4>",
        repro.seed,
        repro.seconds,
        repro.runs,
        repro
            .stopped_early
            .as_deref()
            .map(|why| format!(", stopped early: {}", escape(why)))
            .unwrap_or_default()
    )?;
    writeln!(
        out,
        "<table class=\"shrink\"><thead><tr><th></th><th>ticks</th><th>fault events</th><th>replicas</th>\
         <th>clients</th><th>shards</th><th>requests</th></tr></thead><tbody>"
    )?;
    let original = &repro.original;
    for (label, size) in [("original", original), ("shrunk", shrunk)] {
        writeln!(
            out,
            "<tr><th>{label}</th><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            size.ticks, size.fault_events, size.replicas, size.clients, size.shards, size.requests
        )?;
    }
    writeln!(out, "</tbody></table>")?;
    if let Some(ratio) = repro.ratio() {
        writeln!(
            out,
            "<p>{ratio:.1}&#215; smaller (ticks or fault events, whichever shrank more)</p>"
        )?;
    }
    writeln!(out, "<pre class=\"repro\">{}</pre>", escape(command))?;
    let mut links = Vec::new();
    if let Some(file) = &repro.schedule_file {
        links.push(format!("<a href=\"{}\">fault schedule</a>", escape(file)));
    }
    if let Some(file) = &repro.trace_file {
        links.push(format!(
            "<a href=\"{}\">trace</a> (open in https://ui.perfetto.dev or chrome://tracing)",
            escape(file)
        ));
    }
    if !links.is_empty() {
        writeln!(out, "<p>{}</p>", links.join(" &#183; "))?;
    }
    if let Some(failure) = &repro.failure {
        writeln!(out, "<p class=\"note\">{}</p>", escape(failure))?;
    }
    if let Some(timeline) = &repro.timeline {
        writeln!(out, "<div class=\"timeline\">{}</div>", timeline_svg(timeline))?;
    }
    if !repro.steps.is_empty() {
        writeln!(
            out,
            "<details><summary>{} shrink steps</summary><pre>{}</pre></details>",
            repro.steps.len(),
            escape(&repro.steps.join("\n"))
        )?;
    }
    writeln!(out, "</div>")
}
