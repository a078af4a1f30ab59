//! What of a text may reach a terminal. A control character (Unicode's `Cc`: U+0000 to U+001F,
//! U+007F and U+0080 to U+009F) in a name, a message or a line of a file could drive the terminal
//! that shows it (`ESC [2J` clears the screen, BEL rings, a carriage return overwrites the line),
//! so what pipeweave shows has none: a reader refuses one in a name with
//! [`first_control`] and [`code_point`] for its words, and every place that shows text from a
//! file, a plugin or the command line shows it through [`visible`], which draws each control
//! character as its picture (`␛`, U+241B).
//!
//! Not a quoting scheme: the picture stands for the character, it does not round-trip.

use std::borrow::Cow;

/// The picture of `c` when it is a control character (C0 ones and DEL as their Unicode pictures,
/// U+2400 and on; C1 ones, which have none, as U+FFFD), else `c` itself.
pub fn visible_char(c: char) -> char {
    match c {
        '\u{0}'..='\u{1f}' => char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'),
        '\u{7f}' => '\u{2421}',
        '\u{80}'..='\u{9f}' => '\u{fffd}',
        c => c,
    }
}

/// `text` with every control character, line ends and tabs included, drawn as its picture: for a
/// name, a cell or any one-line text that came from outside. Borrowed when there is none.
pub fn visible(text: &str) -> Cow<'_, str> {
    if text.chars().any(char::is_control) {
        Cow::Owned(text.chars().map(visible_char).collect())
    } else {
        Cow::Borrowed(text)
    }
}

/// The first control character of `text` and its byte offset.
pub fn first_control(text: &str) -> Option<(usize, char)> {
    text.char_indices().find(|(_, c)| c.is_control())
}

/// A character by its code point, as messages name one that cannot be shown: `U+001B`.
pub fn code_point(c: char) -> String {
    format!("U+{:04X}", c as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_control_character_has_a_picture_that_is_not_one() {
        for c in (0..0x100).filter_map(char::from_u32) {
            let shown = visible_char(c);
            assert!(!shown.is_control(), "{}", code_point(c));
            assert_eq!(shown == c, !c.is_control(), "{}", code_point(c));
        }
        assert_eq!(visible("a\u{1b}[2J\tb\n"), "a␛[2J␉b␊");
        assert!(matches!(visible("plain é"), Cow::Borrowed("plain é")));
        assert_eq!(first_control("ab\u{85}c"), Some((2, '\u{85}')));
        assert_eq!(first_control("abc"), None);
        assert_eq!(code_point('\u{1b}'), "U+001B");
        assert_eq!(code_point('\u{9b}'), "U+009B");
    }
}
