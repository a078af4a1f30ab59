//! Places in a document as the protocol counts them (line, and UTF-16 code units in the line: the
//! encoding every client supports) to and from byte offsets, which the compiler's spans are.

use lsp_types::Position;

/// Where each line of a text starts.
#[derive(Debug, Clone)]
pub struct LineIndex<'t> {
    text: &'t str,
    starts: Vec<usize>,
}

impl<'t> LineIndex<'t> {
    /// The lines of `text`.
    pub fn new(text: &'t str) -> LineIndex<'t> {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { text, starts }
    }

    /// The position of byte `offset` (past the end: the end; inside a character: its start).
    pub fn position(&self, offset: usize) -> Position {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= offset) - 1;
        let start = self.starts[line];
        let character = self.text[start..offset].encode_utf16().count();
        Position::new(line as u32, character as u32)
    }

    /// The byte offset of `position` (a line past the end: the end; a column past the line's
    /// end: the line's end).
    pub fn offset(&self, position: Position) -> usize {
        let Some(&start) = self.starts.get(position.line as usize) else {
            return self.text.len();
        };
        let end = self
            .starts
            .get(position.line as usize + 1)
            .map_or(self.text.len(), |next| next - 1);
        let mut units = 0;
        for (i, ch) in self.text[start..end].char_indices() {
            if units >= position.character as usize {
                return start + i;
            }
            units += ch.len_utf16();
        }
        end
    }

    /// The range of bytes `span` as the protocol's range.
    pub fn range(&self, span: &std::ops::Range<usize>) -> lsp_types::Range {
        lsp_types::Range::new(self.position(span.start), self.position(span.end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_utf16_units_and_round_trip() {
        let text = "ab\né😀x\n\nlast";
        let lines = LineIndex::new(text);
        let x = text.find('x').expect("x");
        assert_eq!(lines.position(x), Position::new(1, 3));
        assert_eq!(lines.offset(Position::new(1, 3)), x);
        assert_eq!(lines.position(0), Position::new(0, 0));
        assert_eq!(lines.position(text.len()), Position::new(3, 4));
        assert_eq!(lines.position(text.len() + 10), Position::new(3, 4));
        // Inside the emoji: its start.
        let emoji = text.find('😀').expect("emoji");
        assert_eq!(lines.position(emoji + 1), lines.position(emoji));
        // Past a line's end, past the last line.
        assert_eq!(lines.offset(Position::new(0, 99)), 2);
        assert_eq!(lines.offset(Position::new(99, 0)), text.len());
        for offset in text.char_indices().map(|(i, _)| i) {
            assert_eq!(lines.offset(lines.position(offset)), offset);
        }
    }
}
