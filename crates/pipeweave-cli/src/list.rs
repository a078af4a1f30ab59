//! `pipeweave list` (every schedule available by name, the library, the user's schedule folders
//! and the plugins, as one table with their parameters and requirements) and `pipeweave check` (a schedule file's syntax and
//! names, then its plans on a small grid of P and M).

use crate::args::Dirs;
use crate::output::{emit, warning};
use crate::session::Session;
use pipeweave_source::{Catalog, Entry, Failure, Origin, PLUGIN_PREFIX, Param};
use std::fmt::Write as _;

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

/// The row of `e` in `catalog`.
fn row(e: &Entry, catalog: &Catalog) -> Row {
    let mut details = Vec::new();
    let source = match &e.origin {
        Origin::Library => "library",
        Origin::Folder(path) => {
            details.push(format!("file: {path}"));
            "folder"
        }
        Origin::Plugin(path) => {
            details.push(format!("file: {path}"));
            "plugin"
        }
    };
    match &e.origin {
        Origin::Plugin(_) => {
            if let Some((schedule, _)) = catalog.twins.iter().find(|(_, p)| *p == e.name) {
                details.push(format!("same plans as {schedule}"));
            }
        }
        _ => {
            if let Some(plugin) = catalog.twin_of(&e.name) {
                details.push(format!("same plans as {PLUGIN_PREFIX}{plugin}"));
            }
        }
    }
    if !e.declared.requires.is_empty() {
        details.push(format!("requires: {}", e.declared.requires));
    }
    details.extend(e.declared.params.iter().map(param_line));
    Row {
        name: e.resolves_as.clone(),
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

/// How a name is looked up, as `list` says it.
const NAMES: &str = "a name means the library's schedule, else the first schedule folder's file of that name (--schedule-dir, then PIPEWEAVE_SCHEDULE_PATH), else a plugin; plugin:NAME always means the plugin; synth:loop, synth:v and synth:bidirectional are schedules synthesized for that placement under unit costs (--set activations=K, evaluations=N, seed=S, weight_split=BOOL, pairs=BOOL with two pipelines; -v with the loop)";

/// `pipeweave list`: the library, the schedule folders and the plugins as one table (plugins
/// that fail to load and folder files that cannot be read as warnings), then the files of the
/// folders that a name does not reach.
pub fn list(dirs: &Dirs, session: &mut Session) -> Result<(), Failure> {
    session.host.with_plugin_dirs(&dirs.plugin_dirs);
    session.host.with_schedule_dirs(&dirs.schedule_dirs);
    let catalog = Catalog::read(&mut session.host);
    let rows: Vec<Row> = catalog.entries.iter().map(|e| row(e, &catalog)).collect();
    let mut text = table(&rows);
    if !catalog
        .entries
        .iter()
        .any(|e| matches!(e.origin, Origin::Plugin(_)))
    {
        text.push_str("(no plugins found)\n");
    }
    text.push('\n');
    for s in &catalog.shadowed {
        let _ = writeln!(
            text,
            "not reached by its name `{}`: {} ({} comes first; give the file's path)",
            s.name, s.path, s.by
        );
    }
    let _ = writeln!(text, "names: {NAMES}");
    let _ = writeln!(text, "--set NAME=VALUE: {}", pipeweave_param::SPELLINGS);
    for e in &catalog.errors {
        warning(e);
    }
    emit(None, &text)
}

/// `pipeweave check FILE`: syntax and names, then the plans on a small grid of P and M.
pub fn check(arg: &str, dirs: &Dirs, session: &mut Session) -> Result<(), Failure> {
    session.host.with_schedule_dirs(&dirs.schedule_dirs);
    let file = pipeweave_source::weave_file(arg, &mut session.host, &mut session.files)?;
    let checked = pipeweave_source::check_schedule(arg, file, &session.files)?;
    let name = session.files.name(file).unwrap_or(arg);
    let ranks = pipeweave_source::GRID_RANKS;
    let text = match checked.nothing_compiled {
        Some(why) => format!("{name}: no problems found in its text; {why}\n"),
        None => format!(
            "{name}: no problems found (compiled and validated at {} combinations of P = {}…{} and M ≤ 2P, parameters at their defaults)\n",
            checked.combinations,
            ranks.start(),
            ranks.end()
        ),
    };
    emit(None, &text)
}
