//! One snapshot per bad spec under `tests/fixtures/bad/`: each file holds one mistake, and its
//! diagnostics are rendered as the command line shows them (codespan-reporting, no colour).

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label, Severity as CsSeverity};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, Config};
use pipeweave_diagnostics::{Diagnostic, Severity};
use pipeweave_spec::parse;
use std::path::Path;

fn render(files: &SimpleFiles<String, String>, d: &Diagnostic) -> String {
    let severity = match d.severity {
        Severity::Error => CsSeverity::Error,
        Severity::Warning => CsSeverity::Warning,
        Severity::Note => CsSeverity::Note,
    };
    let mut labels = Vec::new();
    if let Some(span) = &d.span {
        let mut l = Label::primary(span.file.0 as usize, span.range.clone());
        if let Some(m) = &d.span_label {
            l = l.with_message(m.clone());
        }
        labels.push(l);
    }
    for l in &d.labels {
        labels.push(
            Label::secondary(l.span.file.0 as usize, l.span.range.clone())
                .with_message(l.message.clone()),
        );
    }
    let mut notes = d.notes.clone();
    if let Some(h) = &d.help {
        notes.push(format!("help: {h}"));
    }
    let cs = CsDiagnostic::new(severity)
        .with_message(d.message.clone())
        .with_labels(labels)
        .with_notes(notes);
    term::emit_into_string(&Config::default(), files, &cs)
        .unwrap_or_else(|e| format!("could not render: {e}\n"))
}

fn bad_spec(path: &Path, source: String) -> datatest_stable::Result<()> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let mut files = SimpleFiles::new();
    let file = files.add(format!("bad/{name}"), source.clone());
    let (spec, diags) = parse(&source, pipeweave_diagnostics::FileId(file as u32));
    if spec.is_some() || !diags.iter().any(Diagnostic::is_error) {
        return Err(format!("{name} is a bad-spec fixture but it parses without error").into());
    }
    for d in &diags {
        if d.message.ends_with('.') || d.message.chars().next().is_some_and(char::is_uppercase) {
            return Err(format!("{name}: message not in house style: {}", d.message).into());
        }
    }
    let text: String = diags.iter().map(|d| render(&files, d)).collect();
    insta::with_settings!({
        input_file => path,
        snapshot_suffix => name.trim_end_matches(".toml"),
        prepend_module_to_snapshot => false,
    }, {
        insta::assert_snapshot!("bad_spec", text);
    });
    Ok(())
}

datatest_stable::harness! {
    { test = bad_spec, root = "tests/fixtures/bad", pattern = r"\.toml$" },
}
