//! Splitting a file into its top-level items before pest runs, so that a syntax error costs only
//! the item it is in; and finding where an item's code ends (for errors at its end).

use std::ops::Range;

/// Keywords that start a top-level item.
const TOP: &[&str] = &[
    "doc",
    "same",
    "param",
    "let",
    "require",
    "pipelines",
    "stages",
    "place",
    "program",
];
/// Top-level keywords that cannot appear inside a block: seeing one at the start of a line ends
/// whatever came before, even an unclosed block.
const TOP_ONLY: &[&str] = &[
    "doc",
    "same",
    "param",
    "pipelines",
    "stages",
    "place",
    "program",
];

/// Byte ranges of the top-level items (and the comments around them), in order.
///
/// A new item starts at a line that begins, in column 0, with a top-level keyword, when no block
/// is open (or, for keywords that are never valid in a block, even when one is).
pub(crate) fn split(source: &str) -> Vec<Range<usize>> {
    let mut starts = vec![0];
    let mut depth: i64 = 0;
    let mut in_string = false;
    let mut offset = 0;
    for line in source.split_inclusive('\n') {
        if !in_string && offset > 0 {
            let word: &str = {
                let end = line
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(line.len());
                &line[..end]
            };
            if TOP.contains(&word) && (depth <= 0 || TOP_ONLY.contains(&word)) {
                starts.push(offset);
                depth = 0;
            }
        }
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            if in_string {
                match c {
                    '\\' => {
                        chars.next();
                    }
                    '"' => in_string = false,
                    _ => {}
                }
                continue;
            }
            match c {
                '"' => in_string = true,
                '#' => break,
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
        }
        offset += line.len();
    }
    starts.push(source.len());
    starts.windows(2).map(|w| w[0]..w[1]).collect()
}

/// The end of the last token of a chunk, ignoring trailing spaces and comments.
pub(crate) fn code_end(text: &str) -> usize {
    let mut end = 0;
    let mut in_string = false;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if in_string {
            if c == '\\' {
                chars.next();
            } else if c == '"' {
                in_string = false;
            }
            end = i + c.len_utf8();
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                end = i + 1;
            }
            '#' => {
                while chars.peek().is_some_and(|&(_, c)| c != '\n') {
                    chars.next();
                }
            }
            c if c.is_whitespace() => {}
            c => end = i + c.len_utf8(),
        }
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_starts_items_at_column_zero_keywords() {
        let src = "doc \"a\"\nparam v = 2\n# c\nprogram {\n  let x = 1\nlet y = 2\n}\nstages P\n";
        let chunks: Vec<&str> = split(src).into_iter().map(|r| &src[r]).collect();
        assert_eq!(
            chunks,
            [
                "doc \"a\"\n",
                "param v = 2\n# c\n",
                "program {\n  let x = 1\nlet y = 2\n}\n",
                "stages P\n"
            ]
        );
    }

    #[test]
    fn an_unclosed_block_ends_at_the_next_top_only_keyword() {
        let src = "program {\n  F\nstages P\n";
        let chunks: Vec<&str> = split(src).into_iter().map(|r| &src[r]).collect();
        assert_eq!(chunks, ["program {\n  F\n", "stages P\n"]);
    }
}
