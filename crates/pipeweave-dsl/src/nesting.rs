//! The nesting limit: one linear pass over an item's text, before pest sees it, that finds the
//! first place where the item nests deeper than [`MAX_DEPTH`] levels.
//!
//! Every phase after it recurses once per level: pest's parser, the syntax-tree builder, the
//! resolver, the evaluator, the program interpreter and the drop of the trees. Refusing deep
//! items here keeps every one of them far from the end of the stack (of the main thread and of a
//! 2 MiB test thread, in debug builds too), answers a hostile file of any size in time linear in
//! its length, and names the place in plain words.
//!
//! A level is a bracket (`(`, `[`, `{`) or an `if`: a conditional `if … then … else …` nests in
//! its parts without brackets, and each `else if` of an `if` statement nests in the one before.
//! The pass tracks the grammar's nesting with a stack of open levels: a bracket closes at its
//! closing bracket; a conditional closes when the expression it ends in ends (a `then`, `else`,
//! `,`, `..`, `{`, closing bracket or statement keyword of an enclosing construct, or an `if`
//! right after a complete operand, which starts a new statement); an `if` statement closes after
//! its block unless `else` follows. Expression operators do not nest in pest (they repeat), and
//! the builder limits them per expression (see `parse.rs`).

use std::ops::Range;

/// The deepest nesting of brackets and `if`s an item may have. Real schedules stay under 10. At
/// this depth the phase that recurses deepest uses at most about 320 KiB of stack in a debug
/// build, measured over the ways to nest (the tree builder for nested blocks; pest needs 64 KiB
/// to spare besides), a sixth of a 2 MiB test thread; the tests run items at the limit on a
/// 512 KiB thread.
pub(crate) const MAX_DEPTH: usize = 64;

/// Where an item first nests deeper than [`MAX_DEPTH`]: the token that opens level
/// `MAX_DEPTH + 1`, as a byte range of the item's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TooDeep {
    pub at: Range<usize>,
}

/// An open level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Bracket,
    If(IfState),
}

/// How far an `if` has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IfState {
    /// After `if`: its condition.
    Cond,
    /// A conditional after `then`.
    Then,
    /// A conditional after `else`: open until the expression ends.
    Else,
    /// A statement whose block is open.
    Block,
    /// A statement after its block: `else` may follow.
    After,
    /// A statement after `else`: `if` or `{` follows.
    ElseKeyword,
    /// A statement whose `else` is the `if` above it.
    Chained,
    /// A statement whose `else` block is open.
    Final,
}

/// The tokens the pass tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    If,
    Then,
    Else,
    /// A keyword that starts a statement or an item.
    Statement,
    /// A number, a name, `true`, `false`, an action, `?`: the end of an operand.
    Operand,
    OpenBrace,
    OpenOther,
    Close,
    /// `,` or `..`: the end of an expression inside a construct.
    Separator,
    /// Operators, `=`, `&`, `@`, strings, other keywords.
    Other,
}

/// The first place where `text` (one item) nests deeper than [`MAX_DEPTH`], if any.
pub(crate) fn too_deep(text: &str) -> Option<TooDeep> {
    let mut scan = Scan {
        levels: Vec::new(),
        after_operand: false,
    };
    for (token, at) in tokens(text.as_bytes()) {
        if scan.token(token) > MAX_DEPTH {
            return Some(TooDeep { at });
        }
    }
    None
}

struct Scan {
    levels: Vec<Level>,
    /// The previous token ended an operand.
    after_operand: bool,
}

impl Scan {
    fn top(&self) -> Option<Level> {
        self.levels.last().copied()
    }

    fn set_top(&mut self, state: IfState) {
        if let Some(top) = self.levels.last_mut() {
            *top = Level::If(state);
        }
    }

    /// Closes the conditionals whose expression has ended.
    fn end_expressions(&mut self) {
        while self.top() == Some(Level::If(IfState::Else)) {
            self.levels.pop();
        }
    }

    /// Closes an `if` statement and the `if`s whose `else` it was.
    fn end_statement(&mut self) {
        self.levels.pop();
        while self.top() == Some(Level::If(IfState::Chained)) {
            self.levels.pop();
        }
    }

    /// Takes one token; returns the depth after it.
    fn token(&mut self, token: Token) -> usize {
        // `)` and `]` end an operand too; after `}` an `if` starts a statement as well.
        let ends_operand = matches!(token, Token::Operand | Token::Close);
        let after_operand = std::mem::replace(&mut self.after_operand, ends_operand);
        match (self.top(), token) {
            (Some(Level::If(IfState::After)), Token::Else) => {
                self.set_top(IfState::ElseKeyword);
                return self.levels.len();
            }
            (Some(Level::If(IfState::After)), _) => self.end_statement(),
            (Some(Level::If(IfState::ElseKeyword)), Token::If) => {
                self.set_top(IfState::Chained);
                self.levels.push(Level::If(IfState::Cond));
                return self.levels.len();
            }
            (Some(Level::If(IfState::ElseKeyword)), Token::OpenBrace) => {
                self.set_top(IfState::Final);
                self.levels.push(Level::Bracket);
                return self.levels.len();
            }
            (Some(Level::If(IfState::ElseKeyword)), _) => self.end_statement(),
            _ => {}
        }
        match token {
            Token::If => {
                if after_operand {
                    self.end_expressions();
                }
                self.levels.push(Level::If(IfState::Cond));
            }
            Token::Then => {
                self.end_expressions();
                if self.top() == Some(Level::If(IfState::Cond)) {
                    self.set_top(IfState::Then);
                }
            }
            Token::Else => {
                self.end_expressions();
                if self.top() == Some(Level::If(IfState::Then)) {
                    self.set_top(IfState::Else);
                }
            }
            Token::OpenBrace => {
                self.end_expressions();
                if self.top() == Some(Level::If(IfState::Cond)) {
                    self.set_top(IfState::Block);
                }
                self.levels.push(Level::Bracket);
            }
            Token::OpenOther => self.levels.push(Level::Bracket),
            Token::Close => {
                while let Some(level) = self.levels.pop() {
                    if level == Level::Bracket {
                        break;
                    }
                }
                match self.top() {
                    Some(Level::If(IfState::Block)) => self.set_top(IfState::After),
                    Some(Level::If(IfState::Final)) => self.end_statement(),
                    _ => {}
                }
            }
            Token::Separator | Token::Statement => self.end_expressions(),
            Token::Operand | Token::Other => {}
        }
        self.levels.len()
    }
}

/// The tokens of `text` with their byte ranges; spaces, comments and the insides of strings are
/// skipped.
fn tokens(text: &[u8]) -> impl Iterator<Item = (Token, Range<usize>)> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        loop {
            let start = i;
            let c = *text.get(i)?;
            i += 1;
            let token = match c {
                b' ' | b'\t' | b'\r' | b'\n' => continue,
                b'#' => {
                    while i < text.len() && text[i] != b'\n' {
                        i += 1;
                    }
                    continue;
                }
                b'"' => {
                    while i < text.len() && text[i] != b'"' {
                        i += if text[i] == b'\\' { 2 } else { 1 };
                    }
                    i = (i + 1).min(text.len());
                    Token::Other
                }
                b'{' => Token::OpenBrace,
                b'(' | b'[' => Token::OpenOther,
                b')' | b']' | b'}' => Token::Close,
                b',' => Token::Separator,
                b'.' if text.get(i) == Some(&b'.') => {
                    i += 1;
                    Token::Separator
                }
                b'?' => Token::Operand,
                c if c.is_ascii_alphanumeric() || c == b'_' => {
                    while i < text.len() && (text[i].is_ascii_alphanumeric() || text[i] == b'_') {
                        i += 1;
                    }
                    word(&text[start..i])
                }
                _ => Token::Other,
            };
            return Some((token, start..i));
        }
    })
}

fn word(w: &[u8]) -> Token {
    match w {
        b"if" => Token::If,
        b"then" => Token::Then,
        b"else" => Token::Else,
        b"let" | b"require" | b"repeat" | b"for" | b"doc" | b"param" | b"pipelines" | b"stages"
        | b"place" | b"program" => Token::Statement,
        b"and" | b"or" | b"not" | b"in" => Token::Other,
        _ => Token::Operand,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The deepest nesting the pass sees in `text`.
    fn depth(text: &str) -> usize {
        let mut scan = Scan {
            levels: Vec::new(),
            after_operand: false,
        };
        tokens(text.as_bytes())
            .map(|(t, _)| scan.token(t))
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn brackets_and_conditionals_are_levels() {
        assert_eq!(depth("let x = 1 + 2"), 0);
        assert_eq!(depth("let x = ((1))"), 2);
        assert_eq!(depth("let x = if a then b else c"), 1);
        assert_eq!(depth("let x = if a then b else if c then d else e"), 2);
        assert_eq!(depth("let x = if if a then b else c then d else e"), 2);
        assert_eq!(depth("let x = min(if a then b else c, 2)"), 2);
        assert_eq!(
            depth("let x = (if a then b else c) + (if a then b else c)"),
            2
        );
    }

    #[test]
    fn statements_close_their_levels() {
        // Sequential statements do not add up: each `if` closes after its block.
        let flat =
            "program { if a { F } if b { B } else { W } let x = if a then 1 else 2 F if c { F } }";
        assert_eq!(depth(flat), 3);
        // An `else if` chain nests: one level per link, plus the block.
        assert_eq!(
            depth("program { if a { F } else if b { F } else if c { F } }"),
            5
        );
        assert_eq!(
            depth("program { if a { F } else if b { F } else { B } F }"),
            4
        );
        let repeated = "program { repeat 2 { for i in if a then 0 else 1 .. 3 { F } } }";
        assert_eq!(depth(repeated), 3);
        let after_bracket = "program { let x = if a then b else (c) if d { F } }";
        assert_eq!(depth(after_bracket), 3);
    }

    #[test]
    fn strings_and_comments_do_not_count() {
        assert_eq!(depth("require 1 else \"((( if \\\" {{\" # (((\n"), 0);
    }

    #[test]
    fn the_first_level_past_the_limit_is_named() {
        let text = format!("let x = {}1", "if 1 then 1 else ".repeat(100_000));
        let found = too_deep(&text).map(|t| t.at);
        let start = "let x = ".len() + MAX_DEPTH * "if 1 then 1 else ".len();
        assert_eq!(found, Some(start..start + 2));
        assert_eq!(
            too_deep(&format!(
                "let x = {}1",
                "if 1 then 1 else ".repeat(MAX_DEPTH)
            )),
            None
        );
    }
}
