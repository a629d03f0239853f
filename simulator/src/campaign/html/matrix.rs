//! The report page's matrix: pass/fail/vacuous/invalid per fault profile (rows) x
//! plane (columns), each cell coloured by its worst verdict.

use std::collections::BTreeSet;
use std::fmt::{self, Write};

use super::text::thousands;
use crate::campaign::report::{CampaignReport, Totals};
use crate::html::{close_empty_section, close_table_section, escape, open_section};

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

/// Write the matrix section.
pub(super) fn write_matrix(out: &mut String, report: &CampaignReport) -> fmt::Result {
    let cells = report.totals_by_cell();
    let profiles: BTreeSet<&str> = cells.keys().map(|(profile, _)| profile.as_str()).collect();
    let planes: BTreeSet<&str> = cells.keys().map(|(_, plane)| plane.as_str()).collect();

    open_section(out, "matrix", "Profiles &#215; planes")?;
    if cells.is_empty() {
        return close_empty_section(out, "No runs.");
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
    close_table_section(out)
}
