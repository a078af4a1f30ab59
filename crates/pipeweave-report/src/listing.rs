//! `list` as one table (name, source and description aligned, details indented under the
//! description), and the one-line answers of `check` and `validate`.

use crate::shown::lines;
use crate::simulate::shape_text;
use pipeweave_eval::{ListedParam, ScheduleListing, Shape};
use std::fmt::Write as _;

/// How a parameter is set and what it takes, the same line for every schedule:
/// `--set NAME=<TYPE> (default D): help`, `-v <TYPE> ...` for `v`.
fn param_line(p: &ListedParam) -> String {
    let flag = if p.name == "v" {
        format!("-v <{}>", p.ty)
    } else {
        format!("--set {}=<{}>", p.name, p.ty)
    };
    let default = match &p.default {
        Some(d) => format!("default {d}"),
        None => "no default: give it".to_owned(),
    };
    let help = p
        .help
        .as_deref()
        .map(|h| format!(": {h}"))
        .unwrap_or_default();
    format!("{flag} ({default}){help}")
}

/// The listing as `pipeweave list` prints it; `spellings`: how a value is written.
pub fn listing_text(listing: &ScheduleListing, spellings: &str) -> String {
    const HEADER: (&str, &str) = ("schedule", "source");
    let rows = &listing.schedules;
    let name_width = rows
        .iter()
        .map(|r| r.name.chars().count())
        .chain([HEADER.0.len()])
        .max()
        .unwrap_or(0);
    let source_width = rows
        .iter()
        .map(|r| r.source.len())
        .chain([HEADER.1.len()])
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<name_width$}  {:<source_width$}  description",
        HEADER.0, HEADER.1
    );
    let indent = " ".repeat(name_width + source_width + 4 + 2);
    for r in rows {
        let line = format!(
            "{:<name_width$}  {:<source_width$}  {}",
            r.name, r.source, r.description
        );
        let _ = writeln!(out, "{}", line.trim_end());
        let mut details = Vec::new();
        if let Some(file) = &r.file {
            details.push(format!("file: {file}"));
        }
        if let Some(twin) = &r.same_plans_as {
            details.push(format!("same plans as {twin}"));
        }
        if !r.requires.is_empty() {
            details.push(format!("requires: {}", r.requires));
        }
        details.extend(r.params.iter().map(param_line));
        for d in &details {
            let _ = writeln!(out, "{indent}{d}");
        }
    }
    if !rows.iter().any(|r| r.source == "plugin") {
        out.push_str("(no plugins found)\n");
    }
    out.push('\n');
    for s in &listing.unreached {
        let _ = writeln!(
            out,
            "not reached by its name `{}`: {} ({} comes first; give the file's path)",
            s.name, s.path, s.by
        );
    }
    let _ = writeln!(out, "names: {}", listing.names_rule);
    let _ = writeln!(out, "--set NAME=VALUE: {spellings}");
    // Paths and descriptions come from the user's folders and plugins.
    lines(out)
}

/// `check`'s answer for a schedule without problems: how many plans of the grid of P (`ranks`)
/// and M ≤ 2P it compiled and validated, or why it compiled none.
pub fn check_text(
    name: &str,
    combinations: usize,
    nothing_compiled: Option<&str>,
    ranks: std::ops::RangeInclusive<u32>,
) -> String {
    lines(match nothing_compiled {
        Some(why) => format!("{name}: no problems found in its text; {why}\n"),
        None => format!(
            "{name}: no problems found (compiled and validated at {combinations} combinations of P = {}…{} and M ≤ 2P, parameters at their defaults)\n",
            ranks.start(),
            ranks.end()
        ),
    })
}

/// `validate`'s answer for a valid plan.
pub fn validated_text(name: &str, shape: &Shape, ops: usize, forward_only: bool) -> String {
    lines(format!(
        "{name}: valid and deadlock free ({}, {ops} compute operations{})\n",
        shape_text(shape),
        if forward_only {
            ", forwards only: an evaluation step"
        } else {
            ""
        }
    ))
}
