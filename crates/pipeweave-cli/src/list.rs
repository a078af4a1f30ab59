//! `pipeweave list` (every schedule available by name: the library, then the plugins, with their
//! parameters) and `pipeweave check` (a schedule file's syntax and names).

use crate::output::{emit, warning};
use crate::session::Session;
use pipeweave_source::{Entry, Failure, Origin, Param};
use std::fmt::Write as _;
use std::path::PathBuf;

/// A library schedule's parameter: `-v` or `--set NAME=..`, its default and help.
fn library_param(p: &Param) -> String {
    let flag = if p.name == "v" {
        "-v".to_owned()
    } else {
        format!("--set {}=..", p.name)
    };
    let default = p
        .default
        .as_deref()
        .map(|d| format!(" (default {d})"))
        .unwrap_or_default();
    let help = p
        .help
        .as_deref()
        .map(|h| format!(": {h}"))
        .unwrap_or_default();
    format!("{flag}{default}{help}")
}

/// A plugin's parameter: `--set NAME=<type> (default D, constraints): help`.
fn plugin_param(p: &Param) -> String {
    let constraints = if p.constraints.is_empty() {
        String::new()
    } else {
        format!(", {}", p.constraints)
    };
    format!(
        "--set {}=<{}> (default {}{constraints}): {}",
        p.name,
        p.type_name.as_deref().unwrap_or_default(),
        p.default.as_deref().unwrap_or_default(),
        p.help.as_deref().unwrap_or_default()
    )
}

/// One block per schedule: name, origin and description, then one line per parameter.
fn section(entries: &[Entry], out: &mut String) {
    let width = entries.iter().map(|e| e.name.len()).max().unwrap_or(0);
    for e in entries {
        let (origin, param): (String, fn(&Param) -> String) = match &e.origin {
            Origin::Library => ("library".to_owned(), library_param),
            Origin::Plugin(path) => (format!("plugin ({path})"), plugin_param),
        };
        let _ = writeln!(
            out,
            "{:<width$}  {origin}  {}",
            e.name, e.declared.description
        );
        for p in &e.declared.params {
            let _ = writeln!(out, "{:<width$}    {}", "", param(p));
        }
    }
}

/// `pipeweave list`: the library, then the plugins (the ones that fail to load as warnings).
pub fn list(plugin_dirs: &[PathBuf], session: &mut Session) -> Result<(), Failure> {
    session.host.with_plugin_dirs(plugin_dirs);
    let mut text = String::new();
    section(&pipeweave_source::library(), &mut text);
    let (plugins, errors) = pipeweave_source::plugins(&mut session.host);
    section(&plugins, &mut text);
    if plugins.is_empty() {
        text.push_str("no schedules found\n");
    }
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
