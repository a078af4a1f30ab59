//! Tables of text cells and their renderings: aligned text, Markdown pipe tables and CSV fields.

use crate::shown::cell;
use std::fmt::Write as _;

/// A table of text cells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// What the table shows.
    pub caption: String,
    /// The column names.
    pub header: Vec<String>,
    /// One row of cells per line.
    pub rows: Vec<Vec<String>>,
}

/// The cell of a figure there is none of.
pub(crate) const NONE: &str = "—";

fn is_numeric(cell: &str) -> bool {
    cell.trim_start_matches(['-', '−'])
        .starts_with(|ch: char| ch.is_ascii_digit())
}

/// Which columns to align right: those whose cells (dashes aside) are all numbers.
pub(crate) fn right_aligned(t: &Table) -> Vec<bool> {
    (0..t.header.len())
        .map(|i| {
            i > 0
                && t.rows
                    .iter()
                    .filter_map(|r| r.get(i))
                    .all(|c| c == NONE || is_numeric(c))
        })
        .collect()
}

/// An aligned text table (columns two spaces apart, `right[i]` aligns column i right), one line
/// per row after the header.
pub(crate) fn text_table(
    header: &[String],
    rows: &[Vec<String>],
    right: &[bool],
    out: &mut String,
) {
    let width = |i: usize| {
        std::iter::once(header)
            .chain(rows.iter().map(Vec::as_slice))
            .filter_map(|r| r.get(i))
            .map(|s| s.chars().count())
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..header.len()).map(width).collect();
    let line = |cells: &[String], out: &mut String| {
        let mut s = String::new();
        for (i, text) in cells.iter().enumerate() {
            let cell = cell(text);
            let w = widths.get(i).copied().unwrap_or(0);
            let pad = w.saturating_sub(cell.chars().count());
            if i > 0 {
                s.push_str("  ");
            }
            if right.get(i).copied().unwrap_or(false) {
                s.push_str(&" ".repeat(pad));
                s.push_str(&cell);
            } else {
                s.push_str(&cell);
                s.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(header, out);
    for r in rows {
        line(r, out);
    }
}

/// A Markdown cell: control characters drawn as pictures, pipes escaped.
pub(crate) fn markdown_cell(s: &str) -> String {
    cell(s).replace('|', "\\|")
}

/// A Markdown pipe table, numeric columns aligned right.
pub(crate) fn markdown_table(t: &Table, out: &mut String) {
    let row = |cells: &[String]| {
        let cells: Vec<String> = cells.iter().map(|c| markdown_cell(c)).collect();
        format!("| {} |\n", cells.join(" | "))
    };
    out.push_str(&row(&t.header));
    let rule: Vec<&str> = right_aligned(t)
        .into_iter()
        .map(|r| if r { "---:" } else { "---" })
        .collect();
    let _ = writeln!(out, "| {} |", rule.join(" | "));
    for r in &t.rows {
        out.push_str(&row(r));
    }
}

/// A CSV field, control characters drawn as pictures (so a line break never splits a record),
/// quoted when it holds a comma or a quote.
pub(crate) fn csv_field(s: &str) -> String {
    let s = cell(s);
    if s.contains([',', '"']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.into_owned()
    }
}
