//! The report page's exploration section (`campaign --explore`): what the exploration
//! did, the points first reached by branching, and per root run the tree of its
//! timelines: where each child branched, the point whose reach made it branch, what it
//! reached first in the exploration, and its verdict, failures with their repro
//! commands (which name the branch points, so they replay the timeline).
//!
//! Bounded: the largest [`EXPLORE_TREES_LISTED_MAX`] trees are drawn, each with at most
//! [`EXPLORE_TREE_NODES_MAX`] timelines; the counts of what was left out are printed.

use std::collections::BTreeMap;
use std::fmt::{self, Write};

use crate::campaign::report::{CampaignReport, RunRecord, RunVerdict};
use crate::html::escape;

/// Trees drawn at most: a night's exploration may branch thousands of roots, and the
/// page stays readable (and small) with the largest few.
pub const EXPLORE_TREES_LISTED_MAX: usize = 40;

/// Timelines drawn per tree at most: a productive splitpoint keeps earning children.
pub const EXPLORE_TREE_NODES_MAX: usize = 120;

/// Which root a run descends from: sub-campaign, profile, plane, seed.
type RootKey<'a> = (&'a str, &'a str, &'a str, u64);

/// Write the exploration section (nothing for a plain campaign).
pub(super) fn write_exploration(out: &mut String, report: &CampaignReport) -> fmt::Result {
    let Some(summary) = &report.explore else {
        return Ok(());
    };
    crate::html::open_section(out, "exploration", "Exploration")?;
    writeln!(
        out,
        "<p>{} runs: {} roots, {} branched from {} splitpoints (a coverage mark or watermark level new to the \
         exploration, or still rare, at the tick a run reached it; its children replay the run to there and go on \
         with fresh randomness).</p>",
        summary.roots + summary.children,
        summary.roots,
        summary.children,
        summary.splitpoints
    )?;
    let list = |names: &[String]| {
        if names.is_empty() {
            "none".to_owned()
        } else {
            names
                .iter()
                .map(|name| format!("<code>{}</code>", escape(name)))
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    writeln!(
        out,
        "<p>Marks first reached by branching: {}.</p>",
        list(&summary.marks_first_reached_by_branching)
    )?;
    writeln!(
        out,
        "<p>Watermark levels first reached by branching: {}.</p>",
        list(&summary.levels_first_reached_by_branching)
    )?;
    if let Some(line) = summary.targets_line() {
        writeln!(out, "<p>{}</p>", escape(&line))?;
    }

    // Every explored run, by root, and each root's children by their parent's branches.
    let mut trees: BTreeMap<RootKey<'_>, Vec<&RunRecord>> = BTreeMap::new();
    for run in &report.runs {
        if run.explore.is_some() {
            trees
                .entry((&run.campaign, &run.profile, &run.plane, run.seed))
                .or_default()
                .push(run);
        }
    }
    let mut branched: Vec<(RootKey<'_>, Vec<&RunRecord>)> =
        trees.into_iter().filter(|(_, runs)| runs.len() > 1).collect();
    // Largest first; among equals, the report's order.
    branched.sort_by_key(|(key, runs)| (std::cmp::Reverse(runs.len()), *key));
    writeln!(
        out,
        "<p>{} roots were branched; the {} largest trees follow (each timeline: its branch points, the point that \
         made it branch, what it reached first).</p>",
        branched.len(),
        branched.len().min(EXPLORE_TREES_LISTED_MAX)
    )?;
    for ((campaign, profile, plane, seed), runs) in branched.iter().take(EXPLORE_TREES_LISTED_MAX) {
        let failed = runs.iter().filter(|run| run.verdict == RunVerdict::Fail).count();
        writeln!(
            out,
            "<details class=\"tree\"{}><summary>{}{} {} seed {seed}: {} timelines{}</summary>",
            if failed > 0 { " open=\"open\"" } else { "" },
            if campaign.is_empty() {
                String::new()
            } else {
                format!("{} &#183; ", escape(campaign))
            },
            escape(profile),
            escape(plane),
            runs.len(),
            if failed > 0 {
                format!(", <strong>{failed} failed</strong>")
            } else {
                String::new()
            }
        )?;
        let mut children: BTreeMap<&str, Vec<&RunRecord>> = BTreeMap::new();
        let mut root = None;
        for run in runs {
            let explore = run.explore.as_ref().expect("filtered on explore records");
            match &explore.parent {
                Some(parent) => children.entry(parent.as_str()).or_default().push(run),
                None => root = Some(*run),
            }
        }
        let mut drawn = 0;
        if let Some(root) = root {
            writeln!(out, "<ul>")?;
            write_timeline(out, root, &children, &mut drawn)?;
            writeln!(out, "</ul>")?;
        }
        if drawn < runs.len() {
            writeln!(
                out,
                "<p class=\"note\">{} more timelines of this root are in report.json.</p>",
                runs.len() - drawn
            )?;
        }
        writeln!(out, "</details>")?;
    }
    writeln!(out, "</section>")
}

/// Write `run`'s timeline as a list item, its children nested under it, depth first,
/// up to [`EXPLORE_TREE_NODES_MAX`] timelines in all (`drawn` counts them).
fn write_timeline(
    out: &mut String,
    run: &RunRecord,
    children: &BTreeMap<&str, Vec<&RunRecord>>,
    drawn: &mut usize,
) -> fmt::Result {
    if *drawn >= EXPLORE_TREE_NODES_MAX {
        return Ok(());
    }
    *drawn += 1;
    let explore = run.explore.as_ref().expect("an explored run");
    let class = match run.verdict {
        RunVerdict::Pass => "pass",
        RunVerdict::Fail | RunVerdict::Invalid => "fail",
        RunVerdict::Vacuous => "vacuous",
    };
    write!(out, "<li class=\"{class}\">")?;
    if explore.branches.is_empty() {
        write!(out, "root")?;
    } else {
        write!(out, "<code>--branch {}</code>", escape(&explore.branches))?;
    }
    if let Some(trigger) = &explore.trigger {
        let branch_tick = crate::timeline::Branches::parse(&explore.branches)
            .ok()
            .and_then(|branches| branches.points().last().map(|point| point.tick));
        let lead_up = matches!((branch_tick, explore.trigger_tick), (Some(branch), Some(reached)) if branch <= reached);
        let place = if lead_up { "in the lead-up to" } else { "after" };
        write!(out, " {place} <code>{}</code>", escape(trigger))?;
        if let Some(reached) = explore.trigger_tick {
            write!(out, " (reached at tick {reached})")?;
        }
    }
    if !explore.first_in_exploration.is_empty() {
        let firsts: Vec<String> = explore
            .first_in_exploration
            .iter()
            .map(|name| format!("<code>{}</code>", escape(name)))
            .collect();
        write!(out, "; reached first: {}", firsts.join(", "))?;
    }
    if run.verdict != RunVerdict::Pass {
        write!(
            out,
            "; <strong>{}</strong>: {} <code class=\"repro\">{}</code>",
            escape(&format!("{:?}", run.verdict).to_lowercase()),
            escape(run.signature.as_deref().unwrap_or_default()),
            escape(&run.command)
        )?;
    }
    let mine = children.get(explore.branches.as_str());
    match mine {
        Some(mine) if *drawn < EXPLORE_TREE_NODES_MAX => {
            writeln!(out, "<ul>")?;
            for child in mine {
                write_timeline(out, child, children, drawn)?;
            }
            writeln!(out, "</ul></li>")
        }
        _ => writeln!(out, "</li>"),
    }
}
