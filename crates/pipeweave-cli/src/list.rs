//! `pipeweave list` (every schedule available by name, the library, the plugins, as one table
//! with their parameters and requirements) and `pipeweave check` (a schedule file's syntax and
//! names, then its plans on a small grid of P and M).

use crate::output::{emit, warning};
use crate::session::Session;
use pipeweave_source::{Entry, Failure, Origin, Param};
use std::fmt::Write as _;
use std::path::PathBuf;

/// How a parameter is set and what it takes, the same line for every schedule:
/// `--set NAME=<TYPE> (default D): help`, `-v <TYPE> ...` for `v`; TYPE as a `.weave` file
/// declares it.
fn param_line(p: &Param) -> String {
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

/// A row of the table: the name to type, where it comes from, and the lines under it.
struct Row {
    name: String,
    source: &'static str,
    description: String,
    details: Vec<String>,
}

/// The row of `e`; `twins` are the (library name, plugin name) pairs that build the same plans.
fn row(e: &Entry, twins: &[(String, String)]) -> Row {
    let mut details = Vec::new();
    let source = match &e.origin {
        Origin::Library => "library",
        Origin::Plugin(path) => {
            details.push(format!("file: {path}"));
            "plugin"
        }
    };
    for (library, plugin) in twins {
        match e.origin {
            Origin::Library if *library == e.name => {
                details.push(format!("same plans as plugin:{plugin}"));
            }
            Origin::Plugin(_) if *plugin == e.name => {
                details.push(format!("same plans as the library's {library}"));
            }
            _ => {}
        }
    }
    if !e.declared.requires.is_empty() {
        details.push(format!("requires: {}", e.declared.requires));
    }
    details.extend(e.declared.params.iter().map(param_line));
    Row {
        name: e.resolvable_name(),
        source,
        description: e.declared.description.clone(),
        details,
    }
}

/// The rows as one table: name, source and description aligned, details indented under the
/// description.
fn table(rows: &[Row]) -> String {
    const HEADER: (&str, &str) = ("schedule", "source");
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
        for d in &r.details {
            let _ = writeln!(out, "{indent}{d}");
        }
    }
    out
}

/// `pipeweave list`: the library, then the plugins, as one table (the plugins that fail to load
/// as warnings).
pub fn list(plugin_dirs: &[PathBuf], session: &mut Session) -> Result<(), Failure> {
    session.host.with_plugin_dirs(plugin_dirs);
    let library = pipeweave_source::library();
    let (plugins, errors) = pipeweave_source::plugins(&mut session.host);
    let twins = pipeweave_source::twins(&library, &plugins);
    let rows: Vec<Row> = library
        .iter()
        .chain(&plugins)
        .map(|e| row(e, &twins))
        .collect();
    let mut text = table(&rows);
    if plugins.is_empty() {
        text.push_str("(no plugins found)\n");
    }
    let _ = writeln!(text, "\n--set NAME=VALUE: {}", pipeweave_param::SPELLINGS);
    for e in errors {
        warning(&e);
    }
    emit(None, &text)
}

/// `pipeweave check FILE`: syntax and names, without compiling a plan.
pub fn check(arg: &str, session: &mut Session) -> Result<(), Failure> {
    let file = pipeweave_source::weave_file(arg, &mut session.host, &mut session.files)?;
    let text = session.files.text(file).unwrap_or_default();
    let diags = pipeweave_dsl::check(file, text);
    if diags.iter().any(|d| d.is_error()) {
        return Err(Failure::from_diagnostics(diags));
    }
    let name = session.files.name(file).unwrap_or(arg);
    emit(None, &format!("{name}: no problems found\n"))
}
