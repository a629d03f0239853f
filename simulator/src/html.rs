//! The pieces every report page section shares: text made safe ([`escape`]: every
//! string that comes from a report, a campaign id, a failure's detail, a command, a
//! fault's description, goes through it before it lands in HTML or inline SVG) and a
//! section's frame ([`open_section`] and its closings).
//!
//! Shared by the campaign page (`campaign::html`) and the sections other modules add
//! to it (`nemesis_format`), so neither reaches into the other for them. It knows
//! nothing of reports, layout or style.

use std::fmt::{self, Write};

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

/// Open a page section: `<section id="ID">` and its `<h2>` heading. `heading` is markup
/// written as is (an entity such as `&#215;` may stand in it), never text from a report.
pub fn open_section(out: &mut String, id: &str, heading: &str) -> fmt::Result {
    writeln!(out, "<section id=\"{id}\">")?;
    writeln!(out, "<h2>{heading}</h2>")
}

/// Close a section that has nothing to show, with a `note` (markup, like a heading)
/// saying so.
pub fn close_empty_section(out: &mut String, note: &str) -> fmt::Result {
    writeln!(out, "<p class=\"note\">{note}</p>")?;
    writeln!(out, "</section>")
}

/// Close a section that ends with a table: the table's body, the table, the section.
pub fn close_table_section(out: &mut String) -> fmt::Result {
    writeln!(out, "</tbody>")?;
    writeln!(out, "</table>")?;
    writeln!(out, "</section>")
}
