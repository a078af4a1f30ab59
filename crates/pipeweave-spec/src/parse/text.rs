//! The spec's texts that are shown as written (its name and description, an override's source):
//! one holding a control character is refused, pointing at the character or at the escape that
//! wrote it (`\u001b`, `\e`, `\n`, ...), since a name printed on a terminal must not drive it.

use super::Cx;
use pipeweave_diagnostics::{Diagnostic, code_point, first_control, line_col};
use std::ops::Range;

/// Whether `value`, the text of the key `what` names whose literal is at `span`, is free of
/// control characters; if not, the error is added to `cx`.
pub(super) fn shown_text(cx: &mut Cx<'_>, what: &str, value: &str, span: &Range<usize>) -> bool {
    let Some((_, c)) = first_control(value) else {
        return true;
    };
    let literal = cx.source.get(span.clone()).unwrap_or_default();
    let at = match locate(literal) {
        Some(r) => span.start + r.start..span.start + r.end,
        None => span.clone(),
    };
    let (_, column) = line_col(cx.source, at.start);
    let d = Diagnostic::error(format!(
        "{what} may not contain control characters ({} at column {column})",
        code_point(c)
    ))
    .with_span_label(cx.span(&at), "a control character")
    .with_help("remove it: the text is shown as it is written, on a terminal too");
    cx.diags.push(d);
    false
}

/// Where in a TOML string literal (quotes included) the first control character is written: as
/// itself, or as the escape that stands for it. Literal strings (`'...'`) have no escapes.
fn locate(literal: &str) -> Option<Range<usize>> {
    let escapes = literal.starts_with('"');
    let mut chars = literal.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\n' && in_text(literal, i) {
            // The end of the line, not a character that spans two.
            return Some(i..i);
        }
        if c.is_control() && c != '\n' && c != '\r' {
            return Some(i..i + c.len_utf8());
        }
        if c != '\\' || !escapes {
            continue;
        }
        let (_, e) = chars.next()?;
        let hex = match e {
            'b' | 't' | 'n' | 'f' | 'r' | 'e' => return Some(i..i + 2),
            'x' => 2,
            'u' => 4,
            'U' => 8,
            // A line-ending backslash: the line end and the white space after it are dropped.
            ' ' | '\t' | '\r' | '\n' => {
                while chars.next_if(|(_, w)| w.is_whitespace()).is_some() {}
                continue;
            }
            // `\\` or `\"`.
            _ => continue,
        };
        let digits = literal.get(i + 2..i + 2 + hex)?;
        let decoded = u32::from_str_radix(digits, 16)
            .ok()
            .and_then(char::from_u32);
        if decoded.is_some_and(char::is_control) {
            return Some(i..i + 2 + hex);
        }
    }
    None
}

/// Whether the newline at `i` is part of a multi-line string's text rather than the one right
/// after its opening quotes, which TOML drops.
fn in_text(literal: &str, i: usize) -> bool {
    let opening = literal
        .strip_prefix("\"\"\"")
        .or_else(|| literal.strip_prefix("'''"))
        .map_or(1, |_| 3);
    let first = &literal[opening..];
    !(i == opening && first.starts_with('\n') || i == opening + 1 && first.starts_with("\r\n"))
}

#[cfg(test)]
mod tests {
    use super::locate;

    #[test]
    fn control_characters_are_found_written_or_escaped() {
        assert_eq!(locate(r#""ab\u001b[2J""#), Some(3..9));
        assert_eq!(locate(r#""ab\U0000009b""#), Some(3..13));
        assert_eq!(locate(r#""a\\u001b\e""#), Some(9..11));
        assert_eq!(locate(r#""a\"\tb""#), Some(4..6));
        assert_eq!(locate("\"a\u{85}b\""), Some(2..4));
        assert_eq!(locate("\"\"\"\nab\ncd\"\"\""), Some(6..6));
        assert_eq!(locate("\"\"\"a\\  \n\t b\tc\"\"\""), Some(11..12));
        assert_eq!(locate("'a\\e'"), None);
        assert_eq!(locate(r#""plain é \u00e9""#), None);
    }
}
