//! What of a text may reach a terminal or a file: names, reasons and descriptions come from files,
//! plugins and the command line (a plan file's path can hold any character), and a control
//! character among them (`ESC [2J` clears the screen) is drawn as its picture, never written.
//! Cells lose every control character, line ends and tabs included (a cell is one line); a
//! whole view keeps its line ends and tabs.

use pipeweave_diagnostics::{visible, visible_char};
use std::borrow::Cow;

/// A cell or a name: every control character drawn as its picture.
pub(crate) fn cell(text: &str) -> Cow<'_, str> {
    visible(text)
}

/// A whole view: every control character but line ends and tabs drawn as its picture.
pub(crate) fn lines(text: String) -> String {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return text;
    }
    text.chars()
        .map(|c| if unsafe_char(c) { visible_char(c) } else { c })
        .collect()
}

/// JSON as serde writes it, which escapes the C0 control characters in strings but writes DEL
/// and the C1 ones (U+0080 to U+009F) as they are: those escaped too (they stand only inside
/// strings, the rest of the document being ASCII).
pub(crate) fn json(text: String) -> String {
    let raw = |c: char| c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c);
    if !text.chars().any(raw) {
        return text;
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if raw(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_drawn_or_escaped() {
        assert_eq!(cell("a\u{1b}[2J\tb\n"), "a␛[2J␉b␊");
        assert_eq!(lines("a\u{1b}[2J\tb\r\n".to_owned()), "a␛[2J\tb␍\n");
        let value = serde_json::json!({ "name": "a\u{1b}\u{7f}\u{9b}b" });
        let text = crate::json(&value);
        assert_eq!(text, "{\n  \"name\": \"a\\u001b\\u007f\\u009bb\"\n}\n");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).ok(),
            Some(value)
        );
    }
}
