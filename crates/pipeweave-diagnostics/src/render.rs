//! Rendering diagnostics for people: file:line:column, the source line with the span marked, and
//! plain words. Plain text (no colour codes), so output is the same in a terminal, a pipe and a
//! snapshot. The one renderer of the two front ends: the command line prints what it renders, the
//! Python binding puts it in its exceptions.
//!
//! Output stays bounded whatever the input: a long line is shown as an excerpt around the span
//! (`excerpt.rs`), a long message is cut in the middle, a diagnostic with many labels or notes
//! shows the first and last few and counts the rest, control characters (in messages, labels,
//! notes, file names and source lines) are shown as their pictures (`visible.rs`), and after
//! `--max-diagnostics` diagnostics the rest are counted, not shown.

mod excerpt;

use crate::{Diagnostic, FileId, Files, Severity};
use codespan_reporting::diagnostic::{Diagnostic as CsDiagnostic, Label, Severity as CsSeverity};
use codespan_reporting::term::{self, Config};
use excerpt::{Excerpt, Excerpts, SourceFile, visible};
use std::cell::OnceCell;
use std::ops::Range;

/// Diagnostics shown by default before the rest are only counted (`--max-diagnostics`).
pub const DEFAULT_MAX_DIAGNOSTICS: usize = 50;

/// A line of a message longer than this many characters is cut in the middle.
const MAX_MESSAGE_CHARS: usize = 400;

/// The most lines of one message, label or note shown: past it, the first ones, a line counting
/// the rest and the last [`TAIL`] (a plugin's message can hold any number of lines).
const MAX_MESSAGE_LINES: usize = 20;

/// The most secondary labels one diagnostic shows: past it, the first ones and the last [`TAIL`],
/// and a note counting the rest (a deadlock through 65,536 ranks has a label per rank).
const MAX_LABELS: usize = 10;

/// The most notes one diagnostic shows, kept as labels are.
const MAX_NOTES: usize = 10;

/// How many of the last lines, labels or notes stay when some are left out.
const TAIL: usize = 2;

/// Renders diagnostics whose spans point into `files`.
pub struct Renderer<'a> {
    files: &'a Files,
    /// Each file's line starts, found the first time a diagnostic points into it.
    sources: Vec<OnceCell<SourceFile<'a>>>,
    /// How many diagnostics to show (0: all).
    max: usize,
}

impl std::fmt::Debug for Renderer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Renderer")
    }
}

impl<'a> Renderer<'a> {
    /// A renderer over every file read so far, showing at most `max` diagnostics (0: all).
    pub fn new(files: &'a Files, max: usize) -> Renderer<'a> {
        let sources = files.iter().map(|_| OnceCell::new()).collect();
        Renderer {
            files,
            sources,
            max,
        }
    }

    fn source(&self, file: FileId) -> Option<&SourceFile<'a>> {
        let cell = self.sources.get(file.0 as usize)?;
        let name = self.files.name(file)?;
        let text = self.files.text(file)?;
        Some(cell.get_or_init(|| SourceFile::new(name, text)))
    }

    /// Renders one diagnostic. One with nothing but a message is one line, `error: message`.
    pub fn render(&self, d: &Diagnostic) -> String {
        let (severity, word) = match d.severity {
            Severity::Error => (CsSeverity::Error, "error"),
            Severity::Warning => (CsSeverity::Warning, "warning"),
            Severity::Note => (CsSeverity::Note, "note"),
        };
        let message = shorten(&d.message);
        if d.span.is_none() && d.labels.is_empty() && d.notes.is_empty() && d.help.is_none() {
            return format!("{word}: {message}\n");
        }
        // (file, range, primary, message) of every label, in codespan's order.
        let mut labels: Vec<(FileId, Range<usize>, bool, String)> = Vec::new();
        if let Some(span) = &d.span {
            let m = d.span_label.as_deref().map(shorten).unwrap_or_default();
            labels.push((span.file, self.clamp(span.file, &span.range), true, m));
        }
        let (shown_labels, hidden_labels) = ends(&d.labels, MAX_LABELS);
        for l in shown_labels {
            let range = self.clamp(l.span.file, &l.span.range);
            labels.push((l.span.file, range, false, shorten(&l.message)));
        }
        let mut notes: Vec<String> = Vec::new();
        if hidden_labels > 0 {
            notes.push(format!(
                "… and {} not shown",
                count(hidden_labels, "more label", "more labels")
            ));
        }
        let (shown_notes, hidden_notes) = ends(&d.notes, MAX_NOTES);
        for (k, n) in shown_notes.enumerate() {
            if hidden_notes > 0 && k == MAX_NOTES - TAIL {
                notes.push(format!(
                    "… {} not shown",
                    count(hidden_notes, "more note", "more notes")
                ));
            }
            notes.push(shorten(n));
        }
        if let Some(h) = &d.help {
            notes.push(format!("help: {}", shorten(h)));
        }
        let config = Config::default();
        // One excerpt per file the labels point into, in the order of their first label.
        let mut per_file: Vec<(FileId, Vec<usize>)> = Vec::new();
        for (i, l) in labels.iter().enumerate() {
            match per_file.iter_mut().find(|(f, _)| *f == l.0) {
                Some((_, mine)) => mine.push(i),
                None => per_file.push((l.0, vec![i])),
            }
        }
        let mut excerpts = Vec::with_capacity(per_file.len());
        let mut placed: Vec<Option<(usize, Range<usize>)>> = vec![None; labels.len()];
        for (file, mine) in &per_file {
            let Some(source) = self.source(*file) else {
                continue;
            };
            let ranges: Vec<Range<usize>> = mine.iter().map(|&i| labels[i].1.clone()).collect();
            let (excerpt, mapped) = Excerpt::new(
                source,
                &ranges,
                config.start_context_lines,
                config.end_context_lines,
            );
            for (&i, range) in mine.iter().zip(mapped) {
                placed[i] = Some((excerpts.len(), range));
            }
            excerpts.push(excerpt);
        }
        let ordered: Vec<Label<usize>> = labels
            .iter()
            .zip(placed)
            .filter_map(|(l, placed)| {
                let (id, range) = placed?;
                let label = if l.2 {
                    Label::primary(id, range)
                } else {
                    Label::secondary(id, range)
                };
                Some(label.with_message(l.3.clone()))
            })
            .collect();
        let cs = CsDiagnostic::new(severity)
            .with_message(message.clone())
            .with_labels(ordered)
            .with_notes(notes);
        term::emit_into_string(&config, &Excerpts(excerpts), &cs)
            .unwrap_or_else(|e| format!("{word}: {message}\n(could not show the source: {e})\n"))
    }

    /// Renders `diagnostics` in order, at most the renderer's maximum, then how many more there
    /// are of each severity.
    pub fn many(&self, diagnostics: &[Diagnostic]) -> String {
        let shown = if self.max == 0 {
            diagnostics.len()
        } else {
            self.max.min(diagnostics.len())
        };
        let mut out: String = diagnostics[..shown]
            .iter()
            .map(|d| self.render(d))
            .collect();
        let rest = &diagnostics[shown..];
        if !rest.is_empty() {
            let errors = rest.iter().filter(|d| d.is_error()).count();
            let others = rest.len() - errors;
            let mut parts = Vec::new();
            if errors > 0 {
                parts.push(count(errors, "more error", "more errors"));
            }
            if others > 0 {
                parts.push(count(
                    others,
                    "more warning or note",
                    "more warnings and notes",
                ));
            }
            out.push_str(&format!(
                "… and {} (`--max-diagnostics 0` shows all)\n",
                parts.join(" and ")
            ));
        }
        out
    }

    /// A failure's diagnostics, and how many errors there were when more than one.
    pub fn failure(&self, diagnostics: &[Diagnostic]) -> String {
        let mut out = self.many(diagnostics);
        let errors = diagnostics.iter().filter(|d| d.is_error()).count();
        if errors > 1 {
            out.push_str(&format!("error: {} problems found\n", thousands(errors)));
        }
        out
    }

    /// Keeps a range inside its file (a stale or foreign span must not make rendering fail).
    fn clamp(&self, file: FileId, range: &Range<usize>) -> Range<usize> {
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

/// `n` with thousands separators: 15950 → 15,950.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

/// The first `max - TAIL` and the last [`TAIL`] of `items` when there are more than `max` (all of
/// them otherwise), and how many are left out between.
fn ends<T>(items: &[T], max: usize) -> (impl Iterator<Item = &T>, usize) {
    let hidden = items.len().saturating_sub(max);
    let head = if hidden > 0 { max - TAIL } else { items.len() };
    let tail = &items[head + hidden..];
    (items[..head].iter().chain(tail), hidden)
}

/// A message as it may reach a terminal: control characters shown as pictures, every line
/// longer than [`MAX_MESSAGE_CHARS`] cut in the middle and at most [`MAX_MESSAGE_LINES`] lines (a
/// file or a plugin can put any text in a message: a key, a name, a cell).
fn shorten(message: &str) -> String {
    let mut out = String::with_capacity(message.len().min(4 * MAX_MESSAGE_CHARS));
    let lines: Vec<&str> = message.split('\n').collect();
    let (shown, hidden) = ends(&lines, MAX_MESSAGE_LINES);
    for (k, line) in shown.enumerate() {
        if k > 0 {
            out.push('\n');
        }
        if hidden > 0 && k == MAX_MESSAGE_LINES - TAIL {
            out.push_str(&format!(
                "… {} not shown\n",
                count(hidden, "more line", "more lines")
            ));
        }
        let head = MAX_MESSAGE_CHARS * 3 / 4;
        let tail = MAX_MESSAGE_CHARS - head;
        match line.char_indices().nth(MAX_MESSAGE_CHARS) {
            None => out.extend(line.chars().map(visible)),
            Some(_) => {
                out.extend(line.chars().take(head).map(visible));
                out.push('…');
                let start = line
                    .char_indices()
                    .rev()
                    .nth(tail - 1)
                    .map_or(0, |(i, _)| i);
                out.extend(line[start..].chars().map(visible));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
