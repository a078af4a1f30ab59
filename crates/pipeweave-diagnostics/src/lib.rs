//! Diagnostics as data: a severity, a message in plain words, spans into source files, labels and hints.
//!
//! Libraries return these values; only the front ends (the command line and the Python binding)
//! render them, through the one [`Renderer`].
//! A span is a byte range in one source file, named by a [`FileId`] the caller hands out; the
//! texts read for one run are a [`Files`] table.

#![warn(missing_docs)]

mod files;
mod render;
mod text;
mod visible;

pub use files::Files;
pub use render::{DEFAULT_MAX_DIAGNOSTICS, Renderer};
pub use text::{BOM, text_from_bytes};
pub use visible::{code_point, first_control, visible, visible_char};

use std::ops::Range;

/// Identifies one source file among those the caller loaded (an index the caller chooses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FileId(pub u32);

/// A byte range in one source file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Span {
    /// The file the range is in.
    pub file: FileId,
    /// Byte offsets into the file's text, start inclusive, end exclusive.
    pub range: Range<usize>,
}

impl Span {
    /// The bytes `range` of `file`.
    pub fn new(file: FileId, range: Range<usize>) -> Self {
        Span { file, range }
    }
}

/// How serious a diagnostic is: an error fails the command, a warning and a note do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// The input cannot be used: the command fails (exit code 1 or 2).
    Error,
    /// Something is likely wrong, but the command goes on.
    Warning,
    /// Information only.
    Note,
}

/// A secondary place in the source with a short message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    /// Where the label points.
    pub span: Span,
    /// What it says there, lowercase without a trailing period.
    pub message: String,
}

/// One problem found in an input.
///
/// `message` is lowercase and has no trailing period; `span` is the primary place (absent when the
/// problem is not tied to a place in a file, e.g. a command-line parameter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Whether this is an error, a warning or a note.
    pub severity: Severity,
    /// The problem in plain words: lowercase, no trailing period.
    pub message: String,
    /// The primary place of the problem, if it has one.
    pub span: Option<Span>,
    /// What to say under the primary span marker.
    pub span_label: Option<String>,
    /// Other places that explain the problem (e.g. where a name was first defined).
    pub labels: Vec<Label>,
    /// Lines of context shown after the source excerpt.
    pub notes: Vec<String>,
    /// A suggestion for how to fix the problem.
    pub help: Option<String>,
}

impl Diagnostic {
    /// An error with `message` and nothing else: no place, labels, notes or help.
    pub fn error(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            span: None,
            span_label: None,
            labels: Vec::new(),
            notes: Vec::new(),
            help: None,
        }
    }

    /// A warning with `message` and nothing else.
    pub fn warning(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(message)
        }
    }

    /// The diagnostic placed at `span`, with no label under it.
    pub fn with_span(mut self, span: Span) -> Self {
        self.span = Some(span);
        self
    }

    /// The diagnostic placed at `span`, with `label` under the marker.
    pub fn with_span_label(mut self, span: Span, label: impl Into<String>) -> Self {
        self.span = Some(span);
        self.span_label = Some(label.into());
        self
    }

    /// Adds a secondary place `span` with its `message`.
    pub fn with_label(mut self, span: Span, message: impl Into<String>) -> Self {
        self.labels.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    /// Adds a line of context.
    pub fn with_note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// Sets the suggestion for a fix (replacing any earlier one).
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Whether the severity is [`Severity::Error`].
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// Converts a byte offset into a 1-based (line, column) pair, columns counted in characters.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = &source[..floor_char_boundary(source, offset)];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let col = before[line_start..].chars().count() + 1;
    (line, col)
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one() {
        let s = "ab\ncd\n";
        assert_eq!(line_col(s, 0), (1, 1));
        assert_eq!(line_col(s, 1), (1, 2));
        assert_eq!(line_col(s, 3), (2, 1));
        assert_eq!(line_col(s, 5), (2, 3));
        assert_eq!(line_col(s, 99), (3, 1));
    }

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("é x", 3), (1, 3));
    }
}
