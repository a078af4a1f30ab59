//! Rendering diagnostics for people: file:line:column, the source line with the span marked, and
//! plain words. Plain text (no colour codes), so output is the same in a terminal, a pipe and a
//! snapshot.

use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label, Severity as CsSeverity};
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term::{self, Config};
use pipeweave_diagnostics::{Diagnostic, FileId, Severity};
use pipeweave_source::{Failure, Files};

/// Renders diagnostics whose spans point into `files`.
pub struct Renderer<'a> {
    files: &'a Files,
    simple: SimpleFiles<&'a str, &'a str>,
}

impl std::fmt::Debug for Renderer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Renderer")
    }
}

impl<'a> Renderer<'a> {
    /// A renderer over every file read so far (ids in the same order).
    pub fn new(files: &'a Files) -> Renderer<'a> {
        let mut simple = SimpleFiles::new();
        for (_, name, text) in files.iter() {
            simple.add(name, text);
        }
        Renderer { files, simple }
    }

    /// Renders one diagnostic. One with nothing but a message is one line, `error: message`.
    pub fn render(&self, d: &Diagnostic) -> String {
        let (severity, word) = match d.severity {
            Severity::Error => (CsSeverity::Error, "error"),
            Severity::Warning => (CsSeverity::Warning, "warning"),
            Severity::Note => (CsSeverity::Note, "note"),
        };
        if d.span.is_none() && d.labels.is_empty() && d.notes.is_empty() && d.help.is_none() {
            return format!("{word}: {}\n", d.message);
        }
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
        term::emit_into_string(&Config::default(), &self.simple, &cs)
            .unwrap_or_else(|e| format!("error: {}\n(could not show the source: {e})\n", d.message))
    }

    /// A failure: every diagnostic, and how many errors there were when more than one.
    pub fn failure(&self, f: &Failure) -> String {
        let mut out: String = f.diagnostics.iter().map(|d| self.render(d)).collect();
        let errors = f.diagnostics.iter().filter(|d| d.is_error()).count();
        if errors > 1 {
            out.push_str(&format!("error: {errors} problems found\n"));
        }
        out
    }

    /// Keeps a range inside its file (a stale or foreign span must not make rendering fail).
    fn clamp(&self, file: FileId, range: &std::ops::Range<usize>) -> std::ops::Range<usize> {
        let text = self.files.text(file);
        let len = text.map_or(0, str::len);
        let mut s = range.start.min(len);
        let mut e = range.end.clamp(s, len);
        if let Some(src) = text {
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
