//! The parser: splits a file into top-level items, runs the pest grammar on each, and builds the
//! syntax tree. It never panics and never stops at the first error: a syntax error costs only the
//! item it is in, and every item's first error is reported.

use crate::syntax::*;
use crate::words;
use pest::Parser as _;
use pest::iterators::Pair;
use pest::pratt_parser::{Assoc, Op, PrattParser};
use pest_derive::Parser;
use pipeweave_diagnostics::{Diagnostic, FileId, Span};
use pipeweave_plan::Kind;
use std::ops::Range;
use std::sync::OnceLock;

#[derive(Parser)]
#[grammar = "weave.pest"]
pub(crate) struct WeaveParser;

/// Brackets nested deeper than this are refused before pest sees them (pest and the tree walkers
/// recurse once per level; no real schedule comes close).
const MAX_NESTING: usize = 32;
/// Operators in one expression (prefix operators included) are limited for the same reason.
const MAX_OPERATORS: usize = 128;

/// Keywords that start a top-level item.
const TOP: &[&str] = &[
    "doc",
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
const TOP_ONLY: &[&str] = &["doc", "param", "pipelines", "stages", "place", "program"];

/// Parses a schedule file. Returns what could be built and every syntax error found.
pub fn parse(file: FileId, source: &str) -> (Schedule, Vec<Diagnostic>) {
    let mut schedule = Schedule::default();
    let mut diags = Vec::new();
    for chunk in split(source) {
        let text = &source[chunk.clone()];
        if let Some((at, depth)) = too_deep(text) {
            let at = chunk.start + at;
            diags.push(
                Diagnostic::error(format!(
                    "brackets nested {depth} deep; at most {MAX_NESTING} are allowed"
                ))
                .with_span_label(Span::new(file, at..at + 1), "nested too deeply"),
            );
            continue;
        }
        match WeaveParser::parse(Rule::unit, text) {
            Ok(mut pairs) => {
                let Some(unit) = pairs.next() else { continue };
                let mut b = Builder {
                    file,
                    base: chunk.start,
                    diags: &mut diags,
                };
                for p in unit.into_inner() {
                    if p.as_rule() == Rule::EOI {
                        continue;
                    }
                    if let Some(item) = b.item(p) {
                        schedule.items.push(item);
                    }
                }
            }
            Err(e) => diags.push(syntax_error(file, source, chunk.clone(), &e)),
        }
    }
    (schedule, diags)
}

/// Byte ranges of the top-level items (and the comments around them), in order.
///
/// A new item starts at a line that begins, in column 0, with a top-level keyword, when no block
/// is open (or, for keywords that are never valid in a block, even when one is).
fn split(source: &str) -> Vec<Range<usize>> {
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

/// The first place where brackets nest deeper than [`MAX_NESTING`], with that depth.
fn too_deep(text: &str) -> Option<(usize, usize)> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut in_comment = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_comment {
            in_comment = c != '\n';
            continue;
        }
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '#' => in_comment = true,
            '(' | '[' | '{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some((i, depth));
                }
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// The end of the last token of a chunk, ignoring trailing spaces and comments.
fn code_end(text: &str) -> usize {
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

fn is_primary(rule: Rule) -> bool {
    matches!(
        rule,
        Rule::conditional | Rule::call | Rule::boolean | Rule::int | Rule::name | Rule::expr
    )
}

/// Turns a pest error into a diagnostic in plain words.
fn syntax_error(
    file: FileId,
    source: &str,
    chunk: Range<usize>,
    e: &pest::error::Error<Rule>,
) -> Diagnostic {
    let pos = match e.location {
        pest::error::InputLocation::Pos(p) => p,
        pest::error::InputLocation::Span((a, _)) => a,
    };
    let at = chunk.start + pos;
    let text = &source[chunk.clone()];
    let body_end = chunk.start + code_end(text);
    if at >= body_end {
        // The item ended early: point right after its last token rather than at the next item.
        let expected = match &e.variant {
            pest::error::ErrorVariant::ParsingError { positives, .. } => words::expected(positives),
            pest::error::ErrorVariant::CustomError { message } => message.clone(),
        };
        let open = text.matches('{').count();
        let close = text.matches('}').count();
        let mut d = Diagnostic::error(format!("expected {expected}, found the end of the item"))
            .with_span_label(
                Span::new(file, body_end..body_end),
                format!("expected {expected} after this"),
            );
        if open > close {
            d = d.with_help(format!(
                "{} `{{` {} no matching `}}`",
                open - close,
                if open - close == 1 { "has" } else { "have" }
            ));
        }
        return d;
    }
    let (expected, unexpected) = match &e.variant {
        pest::error::ErrorVariant::ParsingError {
            positives,
            negatives,
        } => (words::expected(positives), words::expected(negatives)),
        pest::error::ErrorVariant::CustomError { message } => (message.clone(), String::new()),
    };
    let found = words::found(source, at);
    let message = if expected.is_empty() {
        format!("unexpected {found}")
    } else {
        format!("expected {expected}, found {found}")
    };
    let len = words::token_len(source, at);
    let label = if unexpected.is_empty() {
        format!("expected {expected}")
    } else {
        format!("{unexpected} is not allowed here")
    };
    let mut d = Diagnostic::error(message).with_span_label(Span::new(file, at..at + len), label);
    if let Some(help) = words::help(source, at, &e.variant) {
        d = d.with_help(help);
    }
    d
}

fn pratt() -> &'static PrattParser<Rule> {
    static PRATT: OnceLock<PrattParser<Rule>> = OnceLock::new();
    PRATT.get_or_init(|| {
        PrattParser::new()
            .op(Op::infix(Rule::or, Assoc::Left))
            .op(Op::infix(Rule::and, Assoc::Left))
            .op(Op::infix(Rule::eq, Assoc::Left)
                | Op::infix(Rule::ne, Assoc::Left)
                | Op::infix(Rule::lt, Assoc::Left)
                | Op::infix(Rule::le, Assoc::Left)
                | Op::infix(Rule::gt, Assoc::Left)
                | Op::infix(Rule::ge, Assoc::Left))
            .op(Op::infix(Rule::add, Assoc::Left) | Op::infix(Rule::sub, Assoc::Left))
            .op(Op::infix(Rule::mul, Assoc::Left)
                | Op::infix(Rule::div, Assoc::Left)
                | Op::infix(Rule::rem, Assoc::Left))
            .op(Op::prefix(Rule::neg) | Op::prefix(Rule::not))
    })
}

/// Builds syntax-tree nodes from the pest pairs of one chunk.
struct Builder<'d> {
    file: FileId,
    base: usize,
    diags: &'d mut Vec<Diagnostic>,
}

impl Builder<'_> {
    fn span(&self, p: &Pair<'_, Rule>) -> Range<usize> {
        let s = p.as_span();
        self.base + s.start()..self.base + s.end()
    }

    fn error(&mut self, range: Range<usize>, message: String, label: &str) {
        self.diags
            .push(Diagnostic::error(message).with_span_label(Span::new(self.file, range), label));
    }

    fn item(&mut self, p: Pair<'_, Rule>) -> Option<Item> {
        let span = self.span(&p);
        let rule = p.as_rule();
        let mut inner = p.into_inner();
        let kind = match rule {
            Rule::doc_item => ItemKind::Doc(self.string(inner.next()?)),
            Rule::param_item => {
                let name = self.name(inner.next()?);
                let mut default = None;
                let mut help = None;
                for q in inner {
                    match q.as_rule() {
                        Rule::expr => default = Some(self.expr(q)?),
                        Rule::string => help = Some(self.string(q)),
                        _ => {}
                    }
                }
                ItemKind::Param {
                    name,
                    default,
                    help,
                }
            }
            Rule::let_stmt => {
                let name = self.name(inner.next()?);
                let value = self.expr(inner.next()?)?;
                ItemKind::Let { name, value }
            }
            Rule::require_stmt => ItemKind::Require(self.require(inner)?),
            Rule::pipelines_item => ItemKind::Pipelines(self.expr(inner.next()?)?),
            Rule::stages_item => ItemKind::Stages(self.expr(inner.next()?)?),
            Rule::place_item => {
                let q = inner.next()?;
                ItemKind::Place(match q.as_rule() {
                    Rule::place_loop => Place::Loop,
                    Rule::place_vshape => Place::VShape,
                    Rule::place_mirror => Place::Mirror,
                    _ => Place::Expr(self.expr(q)?),
                })
            }
            Rule::program_item => ItemKind::Program(self.block(inner.next()?)?),
            _ => return None,
        };
        Some(Item { kind, span })
    }

    fn require(&mut self, mut inner: pest::iterators::Pairs<'_, Rule>) -> Option<Require> {
        let cond = self.expr(inner.next()?)?;
        let m = inner.next()?;
        let message_span = self.span(&m);
        Some(Require {
            cond,
            message: self.string(m),
            message_span,
        })
    }

    fn name(&self, p: Pair<'_, Rule>) -> Name {
        Name {
            text: p.as_str().to_owned(),
            span: self.span(&p),
        }
    }

    /// The contents of a string literal, with `\"`, `\\`, `\n` and `\t` unescaped.
    fn string(&self, p: Pair<'_, Rule>) -> String {
        let raw = p.into_inner().next().map_or("", |q| q.as_str());
        let mut out = String::with_capacity(raw.len());
        let mut chars = raw.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(other) => out.push(other),
                    None => {}
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    fn block(&mut self, p: Pair<'_, Rule>) -> Option<Block> {
        let span = self.span(&p);
        let mut stmts = Vec::new();
        for s in p.into_inner() {
            stmts.push(self.stmt(s)?);
        }
        Some(Block { stmts, span })
    }

    fn stmt(&mut self, p: Pair<'_, Rule>) -> Option<Stmt> {
        let span = self.span(&p);
        let rule = p.as_rule();
        let mut inner = p.into_inner();
        Some(match rule {
            Rule::let_stmt => {
                let name = self.name(inner.next()?);
                let value = self.expr(inner.next()?)?;
                Stmt::Let { name, value }
            }
            Rule::require_stmt => Stmt::Require(self.require(inner)?),
            Rule::repeat_stmt => {
                let count = self.expr(inner.next()?)?;
                let body = self.block(inner.next()?)?;
                Stmt::Repeat { count, body, span }
            }
            Rule::for_stmt => {
                let var = self.name(inner.next()?);
                let from = self.expr(inner.next()?)?;
                let to = self.expr(inner.next()?)?;
                let body = self.block(inner.next()?)?;
                Stmt::For {
                    var,
                    from,
                    to,
                    body,
                    span,
                }
            }
            Rule::if_stmt => {
                let cond = self.expr(inner.next()?)?;
                let then = self.block(inner.next()?)?;
                let otherwise = match inner.next() {
                    None => None,
                    Some(q) if q.as_rule() == Rule::block => Some(self.block(q)?),
                    Some(q) => {
                        let span = self.span(&q);
                        Some(Block {
                            stmts: vec![self.stmt(q)?],
                            span,
                        })
                    }
                };
                Stmt::If {
                    cond,
                    then,
                    otherwise,
                }
            }
            Rule::steps => {
                let mut steps = Vec::new();
                for q in inner {
                    steps.push(self.step(q)?);
                }
                Stmt::Steps(steps)
            }
            _ => return None,
        })
    }

    fn step(&mut self, p: Pair<'_, Rule>) -> Option<Step> {
        let span = self.span(&p);
        match p.as_rule() {
            Rule::pair => {
                let mut inner = p.into_inner();
                let f = self.action(inner.next()?)?;
                let b = self.action(inner.next()?)?;
                if f.kind != Kind::F || !matches!(b.kind, Kind::B | Kind::I) {
                    self.error(
                        span.clone(),
                        "an overlapped pair is a forward and a backward: F & B or F & I".into(),
                        "not a forward with a B or I",
                    );
                }
                Some(Step::Pair { f, b, span })
            }
            _ => Some(Step::One(self.action(p)?)),
        }
    }

    fn action(&mut self, p: Pair<'_, Rule>) -> Option<ActionNode> {
        let span = self.span(&p);
        let mut kind = Kind::F;
        let mut target = Target::Only;
        let mut mb = None;
        let mut optional = false;
        for q in p.into_inner() {
            match q.as_rule() {
                Rule::kind => {
                    kind = q.as_str().chars().next().and_then(Kind::from_letter)?;
                }
                Rule::chunk_lit => {
                    let s = self.span(&q);
                    let Ok(c) = q.as_str().parse::<i64>() else {
                        self.error(s, "chunk number is too large".into(), "too large");
                        return None;
                    };
                    target = Target::Chunk(Expr {
                        kind: ExprKind::Int(c),
                        span: s,
                    });
                }
                Rule::chunk_expr => target = Target::Chunk(self.expr(q.into_inner().next()?)?),
                Rule::stage_expr => target = Target::Stage(self.atom(q.into_inner().next()?)?),
                Rule::microbatch => mb = Some(self.expr(q.into_inner().next()?)?),
                Rule::optional => optional = true,
                _ => {}
            }
        }
        Some(ActionNode {
            kind,
            target,
            mb,
            optional,
            span,
        })
    }

    /// An `@` target: a number, a name or a parenthesised expression.
    fn atom(&mut self, p: Pair<'_, Rule>) -> Option<Expr> {
        if p.as_rule() == Rule::expr {
            self.expr(p)
        } else {
            self.primary(p)
        }
    }

    fn expr(&mut self, p: Pair<'_, Rule>) -> Option<Expr> {
        let operators = p
            .clone()
            .into_inner()
            .filter(|q| !is_primary(q.as_rule()))
            .count();
        if operators > MAX_OPERATORS {
            let span = self.span(&p);
            self.error(
                span,
                format!(
                    "expression has {operators} operators; at most {MAX_OPERATORS} are allowed"
                ),
                "too long",
            );
            return None;
        }
        // The Pratt parser's closures cannot report errors, so they collect them.
        let mut errors: Vec<(Range<usize>, String, &'static str)> = Vec::new();
        let file = self.file;
        let base = self.base;
        let span_of = |p: &Pair<'_, Rule>| {
            let s = p.as_span();
            base + s.start()..base + s.end()
        };
        let result = {
            let errors = std::cell::RefCell::new(&mut errors);
            pratt()
                .map_primary(|q| {
                    let mut b = Builder {
                        file,
                        base,
                        diags: &mut Vec::new(),
                    };
                    let e = b.primary(q.clone());
                    for d in b.diags.drain(..) {
                        let range = d.span.map(|s| s.range).unwrap_or(span_of(&q));
                        errors.borrow_mut().push((range, d.message, "here"));
                    }
                    e
                })
                .map_prefix(|op, rhs| {
                    let rhs = rhs?;
                    let span = span_of(&op).start..rhs.span.end;
                    let kind = if op.as_rule() == Rule::neg {
                        ExprKind::Neg(Box::new(rhs))
                    } else {
                        ExprKind::Not(Box::new(rhs))
                    };
                    Some(Expr { kind, span })
                })
                .map_infix(|lhs, op, rhs| {
                    let (lhs, rhs) = (lhs?, rhs?);
                    let op = match op.as_rule() {
                        Rule::add => BinOp::Add,
                        Rule::sub => BinOp::Sub,
                        Rule::mul => BinOp::Mul,
                        Rule::div => BinOp::Div,
                        Rule::rem => BinOp::Rem,
                        Rule::lt => BinOp::Lt,
                        Rule::le => BinOp::Le,
                        Rule::gt => BinOp::Gt,
                        Rule::ge => BinOp::Ge,
                        Rule::eq => BinOp::Eq,
                        Rule::ne => BinOp::Ne,
                        Rule::and => BinOp::And,
                        _ => BinOp::Or,
                    };
                    let span = lhs.span.start..rhs.span.end;
                    Some(Expr {
                        kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
                        span,
                    })
                })
                .parse(p.into_inner())
        };
        for (range, message, label) in errors {
            self.error(range, message, label);
        }
        result
    }

    fn primary(&mut self, p: Pair<'_, Rule>) -> Option<Expr> {
        let span = self.span(&p);
        let kind = match p.as_rule() {
            Rule::int => match p.as_str().parse::<i64>() {
                Ok(v) => ExprKind::Int(v),
                Err(_) => {
                    self.error(
                        span,
                        "number is too large (the largest is 9223372036854775807)".into(),
                        "too large",
                    );
                    return None;
                }
            },
            Rule::boolean => ExprKind::Int(i64::from(p.as_str() == "true")),
            Rule::name => ExprKind::Name(p.as_str().to_owned()),
            Rule::expr => return self.expr(p),
            Rule::conditional => {
                let mut inner = p.into_inner();
                let c = self.expr(inner.next()?)?;
                let a = self.expr(inner.next()?)?;
                let b = self.expr(inner.next()?)?;
                ExprKind::If(Box::new(c), Box::new(a), Box::new(b))
            }
            Rule::call => {
                let mut inner = p.into_inner();
                let func = inner.next()?;
                let mut args = Vec::new();
                for a in inner {
                    args.push(self.expr(a)?);
                }
                if func.as_str() == "min" {
                    ExprKind::Min(args)
                } else {
                    ExprKind::Max(args)
                }
            }
            _ => return None,
        };
        Some(Expr { kind, span })
    }
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

    #[test]
    fn deep_nesting_is_refused() {
        let src = format!("let x = {}1{}", "(".repeat(200), ")".repeat(200));
        let (_, diags) = parse(FileId(0), &src);
        assert_eq!(diags.len(), 1);
        assert!(diags[0].message.starts_with("brackets nested 33 deep"));
    }
}
