//! Rendering for snapshot tests: diagnostics exactly as the command line shows them
//! (codespan-reporting, default layout, no colour), and validator problems mapped to the source.

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label, Severity as CsSeverity};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, Config};
use pipeweave_diagnostics::{Diagnostic, FileId, Severity};
use pipeweave_dsl::Compiled;

pub fn render(name: &str, source: &str, diags: &[Diagnostic]) -> String {
    let mut files = SimpleFiles::new();
    let id = files.add(name.to_owned(), source.to_owned());
    let clamp = |r: &std::ops::Range<usize>| r.start.min(source.len())..r.end.min(source.len());
    let mut out = String::new();
    for d in diags {
        let severity = match d.severity {
            Severity::Error => CsSeverity::Error,
            Severity::Warning => CsSeverity::Warning,
            Severity::Note => CsSeverity::Note,
        };
        let mut labels = Vec::new();
        if let Some(span) = &d.span {
            let mut l = Label::primary(id, clamp(&span.range));
            if let Some(m) = &d.span_label {
                l = l.with_message(m.clone());
            }
            labels.push(l);
        }
        for l in &d.labels {
            labels.push(Label::secondary(id, clamp(&l.span.range)).with_message(l.message.clone()));
        }
        let mut notes = d.notes.clone();
        if let Some(h) = &d.help {
            notes.push(format!("help: {h}"));
        }
        let cs = CsDiagnostic::new(severity)
            .with_message(d.message.clone())
            .with_labels(labels)
            .with_notes(notes);
        out.push_str(&term::emit_into_string(&Config::default(), &files, &cs).expect("renders"));
    }
    out
}

/// The validator's problems as diagnostics pointing at the schedule lines that made the actions.
pub fn problems(compiled: &Compiled) -> Vec<Diagnostic> {
    pipeweave_check::problems(&compiled.plan)
        .iter()
        .map(|p| {
            compiled.origins.diagnostic(
                p.rank,
                p.position,
                &format!("{}: {}", p.location(), p.message()),
            )
        })
        .collect()
}

/// `# args: P=4 M=8 v=2 split=false order=a` on any line of a fixture sets its parameters
/// (default P=4 M=8): `true`/`false` are bools, numbers ints, other words options.
#[allow(dead_code)] // used by the bad-input tests only
pub fn args(source: &str) -> pipeweave_dsl::Args {
    let mut args = pipeweave_dsl::Args::new(4, 8);
    for line in source.lines() {
        let Some(rest) = line.trim().strip_prefix("# args:") else {
            continue;
        };
        for kv in rest.split_whitespace() {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            let value = match (v, v.parse::<i64>()) {
                ("true", _) => pipeweave_dsl::Value::Bool(true),
                ("false", _) => pipeweave_dsl::Value::Bool(false),
                (_, Ok(n)) => pipeweave_dsl::Value::Int(n),
                (word, Err(_)) => pipeweave_dsl::Value::Choice(word.to_owned()),
            };
            match (k, &value) {
                ("P", pipeweave_dsl::Value::Int(n)) => args.ranks = *n as u32,
                ("M", pipeweave_dsl::Value::Int(n)) => args.microbatches = *n as u32,
                _ => args = args.with(k, value),
            }
        }
    }
    args
}

#[allow(dead_code)]
pub const FILE: FileId = FileId(0);
