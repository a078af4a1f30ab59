//! The nesting limit of a spec: one linear pass over the text, before the TOML parser runs, that
//! refuses arrays and inline tables nested deeper than [`MAX_DEPTH`] and keys of more than
//! [`MAX_KEY_PARTS`] dotted parts, at the place where the limit is crossed.
//!
//! The `toml` crate bounds both at 80 on its own, but says so without a place for keys ("recursion
//! limit"), takes time quadratic in the number of unclosed brackets (a 1 MB line of `[` took
//! minutes), and multiplies its limits (a dotted key inside each level of inline tables nests
//! 80 × 80 tables, which its recursive drop walks). A spec nests three levels at most
//! (`[model.moe]` and its keys, an array of numbers), so a small limit costs nothing.

use pipeweave_diagnostics::{Diagnostic, FileId, Span};

/// Arrays and inline tables open at once, at most.
pub(super) const MAX_DEPTH: usize = 16;
/// Parts of one dotted key or table header, at most.
pub(super) const MAX_KEY_PARTS: usize = 16;

/// What the pass is inside of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    /// `[table]` or `[[array of tables]]`: a key.
    Header,
    /// An array: values.
    Array,
    /// An inline table: keys and values.
    Inline,
}

/// The first place where `source` nests or dots too deeply, as a diagnostic.
pub(super) fn too_deep(source: &str, file: FileId) -> Option<Diagnostic> {
    let text = source.as_bytes();
    let mut open: Vec<Open> = Vec::new();
    // Whether the next bare word is a key (and its dots separate parts).
    let mut in_key = true;
    let mut parts = 1;
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        let at = i;
        i += 1;
        match c {
            b'#' => i = skip_line(text, i),
            b'"' | b'\'' => i = skip_string(text, at),
            b'\n' => {
                if open.is_empty() || open.last() == Some(&Open::Header) {
                    open.clear();
                    in_key = true;
                }
                parts = 1;
            }
            b'[' | b'{' => {
                let kind = match c {
                    b'{' => Open::Inline,
                    _ if in_key && (open.is_empty() || open.last() == Some(&Open::Header)) => {
                        Open::Header
                    }
                    _ => Open::Array,
                };
                open.push(kind);
                in_key = kind != Open::Array;
                parts = 1;
                if open.len() > MAX_DEPTH {
                    let d = Diagnostic::error(format!(
                        "arrays and tables nested more than {MAX_DEPTH} levels deep"
                    ))
                    .with_span_label(Span::new(file, at..at + 1), format!("level {}", MAX_DEPTH + 1))
                    .with_note("a spec nests three levels at most: `[model.moe]` and its keys, or an array of numbers");
                    return Some(d);
                }
            }
            b']' | b'}' => {
                open.pop();
                in_key = false;
                parts = 1;
            }
            b'=' => {
                in_key = false;
                parts = 1;
            }
            b',' => {
                in_key = open.last() == Some(&Open::Inline);
                parts = 1;
            }
            b'.' if in_key => {
                parts += 1;
                if parts > MAX_KEY_PARTS {
                    let d = Diagnostic::error(format!(
                        "a key has more than {MAX_KEY_PARTS} dotted parts"
                    ))
                    .with_span_label(
                        Span::new(file, at..at + 1),
                        format!("part {}", MAX_KEY_PARTS + 1),
                    )
                    .with_note(
                        "spec keys have three parts at most, e.g. `model.moe.routed_experts`",
                    );
                    return Some(d);
                }
            }
            _ => {}
        }
    }
    None
}

/// The end of a comment: its newline (which the caller still reads).
fn skip_line(text: &[u8], mut i: usize) -> usize {
    while i < text.len() && text[i] != b'\n' {
        i += 1;
    }
    i
}

/// The byte after the string that starts at `start` (a basic `"…"` with escapes, a literal `'…'`,
/// or their multi-line forms with three quotes). A single-line string ends at its line's end at
/// the latest, so that an unclosed one does not hide the rest of the file.
fn skip_string(text: &[u8], start: usize) -> usize {
    let quote = text[start];
    let basic = quote == b'"';
    let triple = text.get(start..start + 3) == Some(&[quote; 3][..]);
    let mut i = start + if triple { 3 } else { 1 };
    while i < text.len() {
        let c = text[i];
        if basic && c == b'\\' {
            i += 2;
            continue;
        }
        if c == b'\n' && !triple {
            return i;
        }
        if c == quote {
            if !triple {
                return i + 1;
            }
            if text.get(i..i + 3) == Some(&[quote; 3][..]) {
                // Up to two more quotes belong to the content: `"""a"""""` ends after all five.
                let mut end = i + 3;
                while end < text.len() && end < i + 5 && text[end] == quote {
                    end += 1;
                }
                return end;
            }
        }
        i += 1;
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(source: &str) -> Option<(String, std::ops::Range<usize>)> {
        too_deep(source, FileId(0)).map(|d| (d.message, d.span.map(|s| s.range).unwrap_or(0..0)))
    }

    #[test]
    fn specs_pass() {
        for spec in crate::SHIPPED_SPECS {
            assert_eq!(check(spec.source), None, "{}", spec.name);
        }
        let s = "a = [[1, 2], [3]]\nb = { c.d = 1, e = [1.5, 2.5] }\n[x.y.z]\nw = 1979-05-27T07:32:00.999\n";
        assert_eq!(check(s), None);
    }

    #[test]
    fn deep_arrays_and_tables_are_refused_at_the_first_level_too_many() {
        let s = format!("x = {}", "[".repeat(1_000_000));
        let at = 4 + MAX_DEPTH;
        assert_eq!(
            check(&s),
            Some((
                "arrays and tables nested more than 16 levels deep".to_owned(),
                at..at + 1
            ))
        );
        let s = format!("x = {}1{}", "{a = ".repeat(17), "}".repeat(17));
        assert_eq!(check(&s).map(|(_, r)| r.start), Some(4 + 16 * 5));
        let ok = format!("x = {}1{}", "[".repeat(16), "]".repeat(16));
        assert_eq!(check(&ok), None);
    }

    #[test]
    fn long_keys_are_refused_at_the_first_part_too_many() {
        let key = vec!["a"; 17].join(".");
        let at = 2 * 16 - 1;
        for s in [
            format!("{key} = 1\n"),
            format!("[{key}]\n"),
            format!("x = {{ {key} = 1 }}\n"),
        ] {
            let offset = s.find('a').unwrap_or(0);
            assert_eq!(
                check(&s),
                Some((
                    "a key has more than 16 dotted parts".to_owned(),
                    offset + at..offset + at + 1
                )),
                "{s}"
            );
        }
        // Quoted dots are not parts; values are not keys.
        let s = format!(
            "\"{}\" = 1\nv = 1.5\nw = '{}'\n",
            "a.".repeat(40),
            "[{".repeat(40)
        );
        assert_eq!(check(&s), None);
    }

    #[test]
    fn strings_and_comments_hide_brackets() {
        let s = format!(
            "a = \"\"\"\n{0}\n\"\"\"\"\"\nb = '''{0}'''\nc = \"\\\"{0}\" # {0}\nd = [1]\n",
            "[".repeat(40)
        );
        assert_eq!(check(&s), None);
    }
}
