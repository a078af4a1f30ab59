//! The part of a source file one diagnostic shows: the lines its labels touch, each long line cut
//! to a few columns around the labels (with `…` where text is left out), as codespan-reporting's
//! `Files`, with the real line and column numbers. Its size follows the labels, never the file, so
//! a diagnostic on a 2 MB line prints about a hundred columns of it.
//!
//! codespan-reporting numbers lines by index; here the indexes are virtual: the shown lines keep
//! their real distance when it is 1 or 2 (so codespan shows the line between two shown lines, as it
//! would) and every longer gap becomes 3 (so it draws a break), and `line_number` gives the real
//! number back. Lines it never shows (inside a long multi-line label) are empty.

use crate::visible::{visible as visible_text, visible_char};
use codespan_reporting::files::{Error, Files};
use std::borrow::Cow;
use std::cell::Cell;
use std::ops::Range;

/// Lines of at most this many characters are shown whole.
pub const MAX_LINE_CHARS: usize = 120;
/// Characters shown before a label's edge on a cut line.
const BEFORE: usize = 40;
/// Characters shown from a label's edge on.
const AFTER: usize = 60;
/// What stands for left-out text.
const ELLIPSIS: char = '…';

/// A source file as the renderer keeps it: its text, the starts of its lines, and where the last
/// column count ended (diagnostics mostly come in file order, so counting resumes from there).
#[derive(Debug)]
pub(super) struct SourceFile<'a> {
    /// The file's name as shown: a name with control characters (a path from the command line can
    /// hold any) is drawn with their pictures.
    pub name: Cow<'a, str>,
    pub text: &'a str,
    pub line_starts: Vec<usize>,
    /// (line, byte offset, column at that offset) of the last count.
    column_cache: Cell<Option<(usize, usize, usize)>>,
}

impl<'a> SourceFile<'a> {
    pub fn new(name: &'a str, text: &'a str) -> SourceFile<'a> {
        let line_starts = std::iter::once(0)
            .chain(newlines(text).map(|i| i + 1))
            .collect();
        SourceFile {
            name: visible_text(name),
            text,
            line_starts,
            column_cache: Cell::new(None),
        }
    }

    /// The line holding byte `offset` (a newline belongs to the line it ends).
    fn line_of(&self, offset: usize) -> usize {
        match self.line_starts.binary_search(&offset) {
            Ok(line) => line,
            Err(next) => next - 1,
        }
    }

    /// Line `line`'s text without its line end.
    fn content(&self, line: usize) -> Range<usize> {
        let start = self.line_starts[line];
        let mut end = self
            .line_starts
            .get(line + 1)
            .map_or(self.text.len(), |next| next - 1);
        if self.text[start..end].ends_with('\r') {
            end -= 1;
        }
        start..end
    }

    /// The 1-based column of byte `offset` on line `line`, in characters.
    fn column(&self, line: usize, offset: usize) -> usize {
        let (from, column) = match self.column_cache.get() {
            Some((l, at, column)) if l == line && at <= offset => (at, column),
            _ => (self.line_starts[line], 1),
        };
        let column = column + self.text[from..offset].chars().count();
        self.column_cache.set(Some((line, offset, column)));
        column
    }
}

fn newlines(text: &str) -> impl Iterator<Item = usize> + '_ {
    text.bytes()
        .enumerate()
        .filter_map(|(i, b)| (b == b'\n').then_some(i))
}

/// One shown line: its real index, its virtual one, and its range in the excerpt's text (with
/// the newline).
#[derive(Debug)]
struct Shown {
    real: usize,
    virt: usize,
    range: Range<usize>,
}

/// What one diagnostic shows of one file.
#[derive(Debug)]
pub(super) struct Excerpt<'s, 'a> {
    source: &'s SourceFile<'a>,
    text: String,
    lines: Vec<Shown>,
    /// (offset in the excerpt, offset in the file) of every label edge, sorted by both.
    points: Vec<(usize, usize)>,
}

impl<'s, 'a> Excerpt<'s, 'a> {
    /// The excerpt of `source` for labels over `ranges` (valid, on character boundaries), shown as
    /// codespan does with `start_context` and `end_context` lines of a multi-line label; returns
    /// it and the ranges as offsets into it.
    pub fn new(
        source: &'s SourceFile<'a>,
        ranges: &[Range<usize>],
        start_context: usize,
        end_context: usize,
    ) -> (Excerpt<'s, 'a>, Vec<Range<usize>>) {
        // The lines codespan shows, and the label edges on each.
        let mut shown: Vec<usize> = Vec::new();
        let mut edges: Vec<(usize, usize)> = Vec::new();
        for r in ranges {
            let (first, last) = (source.line_of(r.start), source.line_of(r.end));
            edges.push((first, r.start));
            edges.push((last, r.end));
            if last - first <= start_context + end_context + 1 {
                shown.extend(first..=last);
            } else {
                shown.extend(first..=first + start_context);
                shown.extend(last - end_context..=last);
            }
        }
        shown.sort_unstable();
        shown.dedup();
        // codespan shows the one line between two shown lines: it must be there.
        let gaps: Vec<usize> = shown
            .windows(2)
            .filter(|w| w[1] - w[0] == 2)
            .map(|w| w[0] + 1)
            .collect();
        shown.extend(gaps);
        shown.sort_unstable();
        edges.sort_unstable();
        edges.dedup();

        let mut excerpt = Excerpt {
            source,
            text: String::new(),
            lines: Vec::with_capacity(shown.len()),
            points: Vec::with_capacity(edges.len()),
        };
        let mut virt = 0;
        let mut previous: Option<usize> = None;
        for line in shown {
            if let Some(p) = previous {
                virt += (line - p).min(3);
            }
            previous = Some(line);
            let from = edges.partition_point(|(l, _)| *l < line);
            let to = edges.partition_point(|(l, _)| *l <= line);
            let points: Vec<usize> = edges[from..to].iter().map(|(_, o)| *o).collect();
            let start = excerpt.text.len();
            excerpt.push_line(line, &points);
            excerpt.text.push('\n');
            excerpt.lines.push(Shown {
                real: line,
                virt,
                range: start..excerpt.text.len(),
            });
        }
        // Edges were placed line by line in file order: sorted by both offsets.
        let map = |o: usize| match excerpt.points.binary_search_by_key(&o, |(_, real)| *real) {
            Ok(i) => excerpt.points[i].0,
            Err(_) => 0,
        };
        let mapped = ranges.iter().map(|r| map(r.start)..map(r.end)).collect();
        (excerpt, mapped)
    }

    /// Appends line `line`, whole when it is short, else windows around `points` (ascending).
    fn push_line(&mut self, line: usize, points: &[usize]) {
        let text = self.source.text;
        let content = self.source.content(line);
        let long = text[content.clone()].chars().nth(MAX_LINE_CHARS).is_some();
        let windows: Vec<Range<usize>> = if !long {
            vec![content.clone()]
        } else if points.is_empty() {
            let end = forward(text, content.start, BEFORE + AFTER, content.end);
            std::iter::once(content.start..end).collect()
        } else {
            let mut windows: Vec<Range<usize>> = Vec::new();
            for &p in points {
                let p = p.clamp(content.start, content.end);
                let w = back(text, p, BEFORE, content.start)..forward(text, p, AFTER, content.end);
                match windows.last_mut() {
                    Some(last) if w.start <= last.end => last.end = last.end.max(w.end),
                    _ => windows.push(w),
                }
            }
            windows
        };
        // The next edge to place; an edge in a left-out part or past the line's text is placed
        // where the shown text reaches past it.
        let mut next = 0;
        for (k, w) in windows.iter().enumerate() {
            if k > 0 || w.start > content.start {
                self.text.push(ELLIPSIS);
            }
            for (i, c) in text[w.clone()].char_indices() {
                next = self.place(points, next, w.start + i);
                self.text.push(visible(c));
            }
            next = self.place(points, next, w.end);
        }
        if windows.last().is_some_and(|w| w.end < content.end) {
            self.text.push(ELLIPSIS);
        }
        self.place(points, next, usize::MAX);
    }

    /// Records every edge of `points[next..]` up to offset `at` at the end of the text so far;
    /// returns the next edge to place.
    fn place(&mut self, points: &[usize], mut next: usize, at: usize) -> usize {
        while let Some(&p) = points.get(next).filter(|p| **p <= at) {
            self.points.push((self.text.len(), p));
            next += 1;
        }
        next
    }

    fn shown(&self, virt: usize) -> Result<&Shown, usize> {
        self.lines
            .binary_search_by_key(&virt, |l| l.virt)
            .map(|i| &self.lines[i])
    }
}

/// The offset `n` characters before `at`, not before `floor`.
fn back(text: &str, at: usize, n: usize, floor: usize) -> usize {
    text[floor..at]
        .char_indices()
        .rev()
        .nth(n.saturating_sub(1))
        .map_or(floor, |(i, _)| floor + i)
}

/// The offset `n` characters after `at`, not after `ceiling`.
fn forward(text: &str, at: usize, n: usize, ceiling: usize) -> usize {
    text[at..ceiling]
        .char_indices()
        .nth(n)
        .map_or(ceiling, |(i, _)| at + i)
}

/// A character of a source line or a message as it may reach a terminal: a control character (an
/// escape sequence in a hostile file) becomes its picture, so the file cannot drive the terminal.
/// Tabs stay: they lay out a line, and codespan-reporting expands them.
pub(super) fn visible(c: char) -> char {
    match c {
        '\t' => c,
        c => visible_char(c),
    }
}

/// The excerpts of one diagnostic, one per file, by index: what codespan-reporting renders from.
#[derive(Debug)]
pub(super) struct Excerpts<'s, 'a>(pub Vec<Excerpt<'s, 'a>>);

impl Excerpts<'_, '_> {
    fn get(&self, id: usize) -> Result<&Excerpt<'_, '_>, Error> {
        self.0.get(id).ok_or(Error::FileMissing)
    }
}

impl<'f> Files<'f> for Excerpts<'_, '_> {
    type FileId = usize;
    type Name = &'f str;
    type Source = &'f str;

    fn name(&'f self, id: usize) -> Result<&'f str, Error> {
        Ok(&self.get(id)?.source.name)
    }

    fn source(&'f self, id: usize) -> Result<&'f str, Error> {
        Ok(&self.get(id)?.text)
    }

    fn line_index(&'f self, id: usize, byte_index: usize) -> Result<usize, Error> {
        let e = self.get(id)?;
        let i = e
            .lines
            .partition_point(|l| l.range.start <= byte_index)
            .saturating_sub(1);
        Ok(e.lines.get(i).map_or(0, |l| l.virt))
    }

    fn line_number(&'f self, id: usize, line_index: usize) -> Result<usize, Error> {
        let e = self.get(id)?;
        Ok(match e.shown(line_index) {
            Ok(l) => l.real + 1,
            // A line inside a gap: numbered on from the shown line before it.
            Err(i) => e
                .lines
                .get(i.wrapping_sub(1))
                .map_or(line_index + 1, |l| l.real + 1 + (line_index - l.virt)),
        })
    }

    fn column_number(
        &'f self,
        id: usize,
        line_index: usize,
        byte_index: usize,
    ) -> Result<usize, Error> {
        let e = self.get(id)?;
        let line = e.shown(line_index).map_err(|_| Error::LineTooLarge {
            given: line_index,
            max: e.lines.len(),
        })?;
        let real = match e.points.binary_search_by_key(&byte_index, |(at, _)| *at) {
            Ok(i) => e.points[i].1,
            Err(_) => e.source.line_starts[line.real],
        };
        Ok(e.source.column(line.real, real))
    }

    fn line_range(&'f self, id: usize, line_index: usize) -> Result<Range<usize>, Error> {
        Ok(self
            .get(id)?
            .shown(line_index)
            .map_or(0..0, |l| l.range.clone()))
    }
}

#[cfg(test)]
mod tests;
