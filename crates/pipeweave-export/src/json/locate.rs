//! Where a value of a JSON document is: the byte range of the value at a path such as
//! `programs[3].steps[7]`, found for many paths in one pass over the text, so that a problem found
//! after parsing (a step that differs from the lowering, a rank out of order) points at its place.
//!
//! The text is one serde_json has already parsed: the scan only follows its structure (strings
//! with their escapes, containers, scalars), keeping the path and the open containers, without
//! recursion.

use pipeweave_diagnostics::{Diagnostic, FileId, Span};
use std::collections::BTreeMap;
use std::ops::Range;

/// Problems of a parsed document, each with the path of the value it is about.
pub(crate) type Found = Vec<(Diagnostic, Vec<Seg>)>;

/// Points every problem at its value, or at the nearest value around it that the document has.
pub(crate) fn place(source: &str, file: FileId, found: Found) -> Vec<Diagnostic> {
    let mut paths = Vec::new();
    for (_, p) in &found {
        paths.extend((0..=p.len()).rev().map(|n| p[..n].to_vec()));
    }
    let ranges = locate(source, &paths);
    let mut at = 0;
    found
        .into_iter()
        .map(|(d, p)| {
            let range = ranges[at..=at + p.len()].iter().flatten().next().cloned();
            at += p.len() + 1;
            match range {
                Some(r) => d.with_span(Span::new(file, r)),
                None => d,
            }
        })
        .collect()
}

/// One step of a path: a member of an object or an element of an array.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Seg {
    Key(&'static str),
    Index(usize),
}

/// A member of an object, as a step of a path.
pub(crate) fn key(name: &'static str) -> Seg {
    Seg::Key(name)
}

/// An element of an array, as a step of a path.
pub(crate) fn index(i: usize) -> Seg {
    Seg::Index(i)
}

/// A step as the scan meets it: keys are the document's text.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Step<'t> {
    Key(&'t str),
    Index(usize),
}

/// The range of the value at each of `paths` (`None` where the document has none). A value that
/// spans several lines is given by its first character, so that a message shows one line.
pub(crate) fn locate(source: &str, paths: &[Vec<Seg>]) -> Vec<Option<Range<usize>>> {
    let mut wanted: BTreeMap<Vec<Step<'_>>, Vec<usize>> = BTreeMap::new();
    for (k, p) in paths.iter().enumerate() {
        let steps = p
            .iter()
            .map(|s| match *s {
                Seg::Key(k) => Step::Key(k),
                Seg::Index(i) => Step::Index(i),
            })
            .collect();
        wanted.entry(steps).or_default().push(k);
    }
    let depth = paths.iter().map(Vec::len).max().unwrap_or(0);
    let mut found: Vec<Option<Range<usize>>> = vec![None; paths.len()];
    let b = source.as_bytes();
    let mut path: Vec<Step<'_>> = Vec::new();
    // For every open container: whether it is an array, and where it starts.
    let mut open: Vec<(bool, usize)> = Vec::new();
    let mut expect_value = true;
    let mut i = 0;
    let record = |path: &[Step<'_>], range: Range<usize>, found: &mut [Option<_>]| {
        if path.len() <= depth
            && let Some(ks) = wanted.get(path)
        {
            let range = if source[range.clone()].contains('\n') {
                range.start..range.start + 1
            } else {
                range
            };
            for &k in ks {
                found[k] = Some(range.clone());
            }
        }
    };
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            c @ (b'{' | b'[') => {
                let array = c == b'[';
                open.push((array, i));
                path.push(if array { Step::Index(0) } else { Step::Key("") });
                expect_value = array;
                i += 1;
            }
            b'}' | b']' => {
                path.pop();
                if let Some((_, start)) = open.pop() {
                    record(&path, start..i + 1, &mut found);
                }
                expect_value = false;
                i += 1;
            }
            b',' => {
                match (open.last(), path.last_mut()) {
                    (Some((true, _)), Some(Step::Index(n))) => {
                        *n += 1;
                        expect_value = true;
                    }
                    _ => expect_value = false,
                }
                i += 1;
            }
            b':' => {
                expect_value = true;
                i += 1;
            }
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i = (i + 1).min(b.len());
                if expect_value {
                    record(&path, start..i, &mut found);
                    expect_value = false;
                } else if let Some(last) = path.last_mut() {
                    *last = Step::Key(&source[start + 1..i.saturating_sub(1).max(start + 1)]);
                }
            }
            _ => {
                let start = i;
                while i < b.len()
                    && !matches!(b[i], b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n')
                {
                    i += 1;
                }
                record(&path, start..i, &mut found);
                expect_value = false;
            }
        }
    }
    found
}

#[cfg(test)]
mod tests;
