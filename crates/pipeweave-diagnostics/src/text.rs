//! Turning the bytes of a file into text: UTF-8 without a leading byte-order mark, or a located
//! diagnostic for the first byte that is not UTF-8.

use crate::{Diagnostic, FileId, Span};

/// The UTF-8 byte-order mark. Editors on Windows write it at the start of text files; it is not
/// part of the text.
pub const BOM: &str = "\u{feff}";

/// The text of a file read as bytes: the bytes themselves when they are UTF-8, without a leading
/// [`BOM`] (so that every reader sees the same text, and spans are offsets into it).
///
/// When they are not UTF-8, a diagnostic names the first byte that is not, by its offset in
/// `bytes` (counted from 0, the mark included), its line and its column (both from 1, columns
/// in characters, the mark not counted). Its span covers the bad bytes as offsets into `bytes`:
/// to show it, render it over `String::from_utf8_lossy(&bytes)`, which is identical up to there.
pub fn text_from_bytes(bytes: Vec<u8>, file: FileId) -> Result<String, Diagnostic> {
    match String::from_utf8(bytes) {
        Ok(mut text) => {
            if text.starts_with(BOM) {
                text.drain(..BOM.len());
            }
            Ok(text)
        }
        Err(e) => Err(not_utf8(e.as_bytes(), e.utf8_error(), file)),
    }
}

fn not_utf8(bytes: &[u8], e: std::str::Utf8Error, file: FileId) -> Diagnostic {
    let offset = e.valid_up_to();
    let bad = e.error_len().unwrap_or(bytes.len() - offset);
    // The bytes before the first bad one are UTF-8.
    let before = std::str::from_utf8(&bytes[..offset]).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let mut column_text = &before[line_start..];
    if line_start == 0 {
        column_text = column_text.strip_prefix(BOM).unwrap_or(column_text);
    }
    let column = column_text.chars().count() + 1;
    let shown: Vec<String> = bytes[offset..offset + bad]
        .iter()
        .map(|b| format!("0x{b:02x}"))
        .collect();
    let what = if e.error_len().is_none() {
        "the file ends in the middle of a character"
    } else {
        "not UTF-8"
    };
    Diagnostic::error(format!(
        "the file is not UTF-8 text: byte {offset} (line {line}, column {column}) is {}",
        shown.join(" ")
    ))
    .with_span_label(Span::new(file, offset..offset + bad), what)
    .with_help("save the file as UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> Result<String, Diagnostic> {
        text_from_bytes(bytes.to_vec(), FileId(3))
    }

    #[test]
    fn utf8_passes_and_a_leading_mark_is_dropped() {
        assert_eq!(decode(b"a\xc3\xa9\n").as_deref(), Ok("a\u{e9}\n"));
        assert_eq!(decode(b"\xef\xbb\xbfstages P").as_deref(), Ok("stages P"));
        // Only a leading mark: one inside the text is text.
        assert_eq!(decode(b"a\xef\xbb\xbf").as_deref(), Ok("a\u{feff}"));
        assert_eq!(decode(b"").as_deref(), Ok(""));
    }

    #[test]
    fn the_first_bad_byte_is_named_with_its_place() {
        let d = decode(b"ok\nab\xc3\xa9c\xff\xfed\n").unwrap_err();
        assert_eq!(
            d.message,
            "the file is not UTF-8 text: byte 8 (line 2, column 5) is 0xff"
        );
        assert_eq!(d.span, Some(Span::new(FileId(3), 8..9)));
        assert_eq!(d.span_label.as_deref(), Some("not UTF-8"));
        assert_eq!(d.help.as_deref(), Some("save the file as UTF-8"));
    }

    #[test]
    fn the_mark_counts_in_offsets_not_in_columns() {
        let d = decode(b"\xef\xbb\xbfab\x80").unwrap_err();
        assert_eq!(
            d.message,
            "the file is not UTF-8 text: byte 5 (line 1, column 3) is 0x80"
        );
    }

    #[test]
    fn a_character_cut_at_the_end_is_named() {
        let d = decode(b"x = \xe2\x82").unwrap_err();
        assert_eq!(
            d.message,
            "the file is not UTF-8 text: byte 4 (line 1, column 5) is 0xe2 0x82"
        );
        assert_eq!(d.span, Some(Span::new(FileId(3), 4..6)));
        assert_eq!(
            d.span_label.as_deref(),
            Some("the file ends in the middle of a character")
        );
    }
}
