//! Rendering diagnostics for people: file:line:column, the source line with the span marked, and
//! plain words. Plain text (no colour codes), so output is the same in a terminal, a pipe and a
//! snapshot.

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label, Severity as CsSeverity};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, Config};
use pipeweave_diagnostics::{Diagnostic, FileId, Severity};

/// The source files the command read, for rendering spans.
#[derive(Default)]
pub struct Sources {
    files: SimpleFiles<String, String>,
}

impl std::fmt::Debug for Sources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sources")
    }
}

impl Sources {
    pub fn add(&mut self, name: impl Into<String>, source: impl Into<String>) -> FileId {
        FileId(self.files.add(name.into(), source.into()) as u32)
    }

    pub fn source(&self, file: FileId) -> Option<&str> {
        self.files
            .get(file.0 as usize)
            .ok()
            .map(|f| f.source().as_str())
    }

    /// Renders one diagnostic; a diagnostic without a span renders as `error: message` plus notes.
    pub fn render(&self, d: &Diagnostic) -> String {
        let severity = match d.severity {
            Severity::Error => CsSeverity::Error,
            Severity::Warning => CsSeverity::Warning,
            Severity::Note => CsSeverity::Note,
        };
        let mut labels = Vec::new();
        if let Some(span) = &d.span {
            let mut l = Label::primary(span.file.0 as usize, self.clamp(span.file, &span.range));
            if let Some(m) = &d.span_label {
                l = l.with_message(m.clone());
            }
            labels.push(l);
        }
        for l in &d.labels {
            labels.push(
                Label::secondary(
                    l.span.file.0 as usize,
                    self.clamp(l.span.file, &l.span.range),
                )
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
        term::emit_into_string(&Config::default(), &self.files, &cs)
            .unwrap_or_else(|e| format!("error: {}\n(could not show the source: {e})\n", d.message))
    }

    /// Keeps a range inside its file (a stale or foreign span must not make rendering fail).
    fn clamp(&self, file: FileId, range: &std::ops::Range<usize>) -> std::ops::Range<usize> {
        let len = self.source(file).map_or(0, str::len);
        let mut s = range.start.min(len);
        let mut e = range.end.clamp(s, len);
        if let Some(src) = self.source(file) {
            while s > 0 && !src.is_char_boundary(s) {
                s -= 1;
            }
            while e < len && !src.is_char_boundary(e) {
                e += 1;
            }
        }
        s..e
    }
}
