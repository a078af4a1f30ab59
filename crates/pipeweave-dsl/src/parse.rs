//! The parser: splits a file into top-level items, runs the pest grammar on each, and builds the
//! syntax tree. It never panics and never stops at the first error: a syntax error costs only the
//! item it is in, and every item's first error is reported.

use crate::grammar::{Rule, WeaveParser};
use crate::nesting::{self, MAX_DEPTH};
use crate::split::{code_end, split};
use crate::syntax::*;
use crate::words;
use pest::Parser as _;
use pest::iterators::Pair;
use pipeweave_diagnostics::{Diagnostic, FileId, Span};
use pipeweave_plan::Kind;
use std::ops::Range;

mod types;

/// Operators in one expression, its bracketed parts and conditionals included (prefix operators
/// too): each is a node of the syntax tree, and its walkers recurse once per node. With the
/// nesting limit ([`nesting::MAX_DEPTH`]) this bounds the depth of every tree; no real schedule
/// comes close.
const MAX_OPERATORS: usize = 128;

/// Parses a schedule file. Returns what could be built and every syntax error found.
///
/// A leading byte-order mark is skipped; spans stay byte offsets into `source` as given.
pub fn parse(file: FileId, source: &str) -> (Schedule, Vec<Diagnostic>) {
    let mut schedule = Schedule::default();
    let mut diags = Vec::new();
    let start = if source.starts_with(pipeweave_diagnostics::BOM) {
        pipeweave_diagnostics::BOM.len()
    } else {
        0
    };
    for chunk in split(&source[start..]) {
        let chunk = start + chunk.start..start + chunk.end;
        let text = &source[chunk.clone()];
        if let Some(deep) = nesting::too_deep(text) {
            let at = chunk.start + deep.at.start..chunk.start + deep.at.end;
            diags.push(
                Diagnostic::error(format!("nested more than {MAX_DEPTH} levels deep"))
                    .with_span_label(Span::new(file, at), format!("level {}", MAX_DEPTH + 1))
                    .with_note("each bracket, block and `if` is a level, and so is each `else if`"),
            );
            continue;
        }
        match WeaveParser::parse(Rule::unit, text) {
            Ok(mut pairs) => {
                let Some(unit) = pairs.next() else { continue };
                let mut b = Builder {
                    file,
                    source,
                    base: chunk.start,
                    diags: &mut diags,
                    nested: false,
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
    if let pest::error::ErrorVariant::CustomError { message } = &e.variant
        && message.ends_with("limit reached")
    {
        // pest's own guards ("stack limit reached", "call limit reached"). The nesting limit
        // keeps pest far from them; should one trip anyway, say what it means.
        return Diagnostic::error("this item is too deeply nested or too complex to read")
            .with_span_label(
                Span::new(file, at..at + words::token_len(source, at)),
                "reading stopped here",
            );
    }
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

/// An operator waiting for its right operand.
#[derive(Clone, Copy)]
enum Pending {
    /// `-` (true) or `not`, and where it starts.
    Prefix(bool, usize),
    Infix(BinOp),
}

fn binary_op(rule: Rule) -> Option<BinOp> {
    Some(match rule {
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
        Rule::or => BinOp::Or,
        _ => return None,
    })
}

/// Binding strength: `or` < `and` < comparisons < `+ -` < `* / %` (prefix operators bind
/// tighter than all).
fn precedence(op: BinOp) -> u8 {
    match op {
        BinOp::Or => 1,
        BinOp::And => 2,
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne => 3,
        BinOp::Add | BinOp::Sub => 4,
        BinOp::Mul | BinOp::Div | BinOp::Rem => 5,
    }
}

/// Replaces the last two operands by `lhs op rhs` (nothing when either failed to build).
fn reduce(operands: &mut Vec<Option<Expr>>, op: BinOp) {
    let rhs = operands.pop().flatten();
    let lhs = operands.pop().flatten();
    operands.push(lhs.zip(rhs).map(|(lhs, rhs)| {
        let span = lhs.span.start..rhs.span.end;
        Expr {
            kind: ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)),
            span,
        }
    }));
}

/// Builds syntax-tree nodes from the pest pairs of one chunk.
struct Builder<'d> {
    file: FileId,
    /// The whole file (the chunk starts at `base`).
    source: &'d str,
    base: usize,
    diags: &'d mut Vec<Diagnostic>,
    /// Building the parts of an expression whose operators were counted already.
    nested: bool,
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
            Rule::doc_item => ItemKind::Doc(self.string(inner.next()?)?),
            Rule::param_item => {
                let name = self.name(inner.next()?);
                let mut decl = ParamDecl {
                    name,
                    ty: None,
                    default: None,
                    help: None,
                };
                for q in inner {
                    match q.as_rule() {
                        Rule::type_bool | Rule::type_int | Rule::type_choice => {
                            decl.ty = Some(self.param_type(q)?);
                        }
                        Rule::expr => decl.default = Some(self.expr(q)?),
                        Rule::string => decl.help = self.string(q),
                        _ => {}
                    }
                }
                ItemKind::Param(decl)
            }
            Rule::same_item => {
                let plugin = inner.find(|q| q.as_rule() == Rule::plugin_name)?;
                ItemKind::SameAs(self.name(plugin))
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
            message: self.string(m)?,
            message_span,
        })
    }

    fn name(&self, p: Pair<'_, Rule>) -> Name {
        Name {
            text: p.as_str().to_owned(),
            span: self.span(&p),
        }
    }

    /// The contents of a string literal, with `\"`, `\\`, `\n` and `\t` unescaped; `None` (and an
    /// error pointing at it) when it holds a control character, written or escaped: a string is
    /// shown as it is written (a description in `list`, a requirement's message), on a terminal
    /// too, and one line.
    fn string(&mut self, p: Pair<'_, Rule>) -> Option<String> {
        let Some(inner) = p.into_inner().next() else {
            return Some(String::new());
        };
        let start = self.span(&inner).start;
        let raw = inner.as_str();
        let mut out = String::with_capacity(raw.len());
        let mut chars = raw.char_indices();
        while let Some((i, c)) = chars.next() {
            let (c, written) = match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => ('\n', i..i + 2),
                    Some((_, 't')) => ('\t', i..i + 2),
                    Some((j, other)) => (other, i..j + other.len_utf8()),
                    None => continue,
                },
                c => (c, i..i + c.len_utf8()),
            };
            if c.is_control() {
                let at = start + written.start..start + written.end;
                let (_, column) = pipeweave_diagnostics::line_col(self.source, at.start);
                let d = Diagnostic::error(format!(
                    "a string may not contain control characters ({} at column {column})",
                    pipeweave_diagnostics::code_point(c)
                ))
                .with_span_label(Span::new(self.file, at), "a control character")
                .with_help("write the text on one line without it: strings are shown as written");
                self.diags.push(d);
                return None;
            }
            out.push(c);
        }
        Some(out)
    }

    fn block(&mut self, p: Pair<'_, Rule>) -> Option<Block> {
        let span = self.span(&p);
        let mut stmts = Vec::new();
        for s in p.into_inner() {
            stmts.push(self.stmt(s)?);
        }
        Some(Block { stmts, span })
    }

    // `block`, `stmt`, `repeat`, `for_loop` and `if_stmt` recurse once per level of nesting too:
    // one small function per statement keeps each frame small (7 KiB a level in a debug build
    // when `stmt` built every statement itself).

    fn stmt(&mut self, p: Pair<'_, Rule>) -> Option<Stmt> {
        match p.as_rule() {
            Rule::let_stmt => self.let_stmt(p),
            Rule::require_stmt => Some(Stmt::Require(self.require(p.into_inner())?)),
            Rule::repeat_stmt => self.repeat(p),
            Rule::for_stmt => self.for_loop(p),
            Rule::if_stmt => self.if_stmt(p),
            Rule::steps => self.steps(p),
            _ => None,
        }
    }

    fn let_stmt(&mut self, p: Pair<'_, Rule>) -> Option<Stmt> {
        let mut inner = p.into_inner();
        let name = self.name(inner.next()?);
        let value = self.expr(inner.next()?)?;
        Some(Stmt::Let { name, value })
    }

    fn repeat(&mut self, p: Pair<'_, Rule>) -> Option<Stmt> {
        let span = self.span(&p);
        let mut inner = p.into_inner();
        let count = self.expr(inner.next()?)?;
        let body = self.block(inner.next()?)?;
        Some(Stmt::Repeat { count, body, span })
    }

    fn for_loop(&mut self, p: Pair<'_, Rule>) -> Option<Stmt> {
        let span = self.span(&p);
        let mut inner = p.into_inner();
        let var = self.name(inner.next()?);
        let from = self.expr(inner.next()?)?;
        let to = self.expr(inner.next()?)?;
        let body = self.block(inner.next()?)?;
        Some(Stmt::For {
            var,
            from,
            to,
            body,
            span,
        })
    }

    /// `if c { … }`, with `else { … }` or `else if …` (a block of that one statement).
    fn if_stmt(&mut self, p: Pair<'_, Rule>) -> Option<Stmt> {
        let mut inner = p.into_inner();
        let cond = self.expr(inner.next()?)?;
        let then = self.block(inner.next()?)?;
        let otherwise = match inner.next() {
            None => None,
            Some(q) if q.as_rule() == Rule::block => Some(self.block(q)?),
            Some(q) => {
                let span = self.span(&q);
                let chained = self.if_stmt(q)?;
                Some(Block {
                    stmts: vec![chained],
                    span,
                })
            }
        };
        Some(Stmt::If {
            cond,
            then,
            otherwise,
        })
    }

    fn steps(&mut self, p: Pair<'_, Rule>) -> Option<Stmt> {
        let mut steps = Vec::new();
        for q in p.into_inner() {
            steps.push(self.step(q)?);
        }
        Some(Stmt::Steps(steps))
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

    // `expr`, `part`, `primary` and `conditional` recurse once per level of nesting: they keep
    // their frames small (about 1.5 KiB a level in a debug build, from 5 KiB) by leaving
    // everything else to helpers.

    fn expr(&mut self, p: Pair<'_, Rule>) -> Option<Expr> {
        if !self.nested && self.too_many_operators(&p) {
            return None;
        }
        // Operator precedence with two stacks, in one loop: no recursion per operator (pest's
        // Pratt parser recursed once per prefix operator, 2.7 KiB of stack each in a debug
        // build). Prefix operators bind tightest; infix operators associate to the left.
        let mut errors = Vec::new();
        let mut operands: Vec<Option<Expr>> = Vec::new();
        let mut pending: Vec<Pending> = Vec::new();
        for q in p.into_inner() {
            let rule = q.as_rule();
            if let Some(op) = binary_op(rule) {
                push_infix(&mut operands, &mut pending, op);
            } else if matches!(rule, Rule::neg | Rule::not) {
                pending.push(Pending::Prefix(rule == Rule::neg, self.span(&q).start));
            } else {
                let operand = self.part(q, &mut errors);
                push_operand(&mut operands, &mut pending, operand);
            }
        }
        while let Some(Pending::Infix(op)) = pending.pop() {
            reduce(&mut operands, op);
        }
        self.errors_here(errors);
        operands.pop().flatten()
    }

    /// Reports an expression with more than [`MAX_OPERATORS`] operators, counted over all its
    /// parts (a flat walk of pest's token queue, no recursion).
    fn too_many_operators(&mut self, p: &Pair<'_, Rule>) -> bool {
        let operators = p
            .clone()
            .into_inner()
            .flatten()
            .filter(|q| {
                binary_op(q.as_rule()).is_some() || matches!(q.as_rule(), Rule::neg | Rule::not)
            })
            .count();
        if operators <= MAX_OPERATORS {
            return false;
        }
        let span = self.span(p);
        self.error(
            span,
            format!("expression has {operators} operators; at most {MAX_OPERATORS} are allowed"),
            "too long",
        );
        true
    }

    fn errors_here(&mut self, errors: Vec<Diagnostic>) {
        self.diags.extend(errors);
    }

    /// A primary of an expression, built by a builder of its own whose errors are collected (and
    /// reported by the caller once the expression is read).
    fn part(&mut self, q: Pair<'_, Rule>, errors: &mut Vec<Diagnostic>) -> Option<Expr> {
        let mut diags = Vec::new();
        let whole = self.span(&q);
        let e = Builder {
            file: self.file,
            source: self.source,
            base: self.base,
            diags: &mut diags,
            nested: true,
        }
        .primary(q);
        for mut d in diags {
            if d.span.is_none() {
                d.span = Some(Span::new(self.file, whole.clone()));
            }
            errors.push(d);
        }
        e
    }

    fn primary(&mut self, p: Pair<'_, Rule>) -> Option<Expr> {
        match p.as_rule() {
            Rule::expr => self.expr(p),
            Rule::conditional => self.conditional(p),
            Rule::call => self.call(p),
            Rule::unknown_call => self.unknown_call(p),
            _ => self.leaf(p),
        }
    }

    /// `if c then a else b`.
    fn conditional(&mut self, p: Pair<'_, Rule>) -> Option<Expr> {
        let span = self.span(&p);
        let mut inner = p.into_inner();
        let c = self.expr(inner.next()?)?;
        let a = self.expr(inner.next()?)?;
        let b = self.expr(inner.next()?)?;
        let kind = ExprKind::If(Box::new(c), Box::new(a), Box::new(b));
        Some(Expr { kind, span })
    }

    /// `min(…)` or `max(…)`.
    fn call(&mut self, p: Pair<'_, Rule>) -> Option<Expr> {
        let span = self.span(&p);
        let mut inner = p.into_inner();
        let func = inner.next()?;
        let mut args = Vec::new();
        for a in inner {
            args.push(self.expr(a)?);
        }
        let kind = if func.as_str() == "min" {
            ExprKind::Min(args)
        } else {
            ExprKind::Max(args)
        };
        Some(Expr { kind, span })
    }

    /// A number, `true`, `false`, a quoted string or a name.
    fn leaf(&mut self, p: Pair<'_, Rule>) -> Option<Expr> {
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
            Rule::boolean => ExprKind::Bool(p.as_str() == "true"),
            Rule::name => ExprKind::Name(p.as_str().to_owned()),
            Rule::string => ExprKind::Str(self.string(p)?),
            _ => return None,
        };
        Some(Expr { kind, span })
    }
}

/// Pushes an infix operator, first reducing the operators before it that bind at least as tight.
fn push_infix(operands: &mut Vec<Option<Expr>>, pending: &mut Vec<Pending>, op: BinOp) {
    while let Some(&Pending::Infix(top)) = pending.last()
        && precedence(top) >= precedence(op)
    {
        pending.pop();
        reduce(operands, top);
    }
    pending.push(Pending::Infix(op));
}

/// Pushes an operand, applying the prefix operators written right before it.
fn push_operand(
    operands: &mut Vec<Option<Expr>>,
    pending: &mut Vec<Pending>,
    mut operand: Option<Expr>,
) {
    while let Some(&Pending::Prefix(neg, start)) = pending.last() {
        pending.pop();
        operand = operand.map(|rhs| {
            let span = start..rhs.span.end;
            let rhs = Box::new(rhs);
            let kind = if neg {
                ExprKind::Neg(rhs)
            } else {
                ExprKind::Not(rhs)
            };
            Expr { kind, span }
        });
    }
    operands.push(operand);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A control character in a string, written or escaped, is refused where it stands: strings
    /// are shown as written, and `\x1b[2J` in a doc string cleared the screen of `list`.
    #[test]
    fn strings_with_control_characters_are_refused_where_they_stand() {
        let cases = [
            ("doc \"clear\u{1b}[2J\"\n", "\u{1b}", "U+001B at column 11"),
            ("doc \"ring \\\u{7}\"\n", "\\\u{7}", "U+0007 at column 11"),
            ("param x: int = 1 \"a\\nb\"\n", "\\n", "U+000A at column 20"),
            (
                "program {\n  require P > 1 else \"a\\tb\u{9b}\"\n  F B\n}\n",
                "\\t",
                "U+0009 at column 24",
            ),
            ("let x = \"\u{85}\" == 1\n", "\u{85}", "U+0085 at column 10"),
        ];
        for (src, written, column) in cases {
            let (schedule, diags) = parse(FileId(0), src);
            assert_eq!(diags.len(), 1, "{src:?}: {diags:?}");
            assert_eq!(
                diags[0].message,
                format!("a string may not contain control characters ({column})")
            );
            let at = src.find(written).unwrap_or(usize::MAX);
            assert_eq!(
                diags[0].span.as_ref().map(|s| s.range.clone()),
                Some(at..at + written.len()),
                "{src:?}"
            );
            assert!(schedule.doc().is_none(), "{src:?}");
        }
        let (schedule, diags) = parse(FileId(0), "doc \"tab \\\"quoted\\\" é\"\n");
        assert_eq!(diags, []);
        assert_eq!(schedule.doc().as_deref(), Some("tab \"quoted\" é"));
    }

    #[test]
    fn deep_nesting_is_refused_at_the_first_level_too_many() {
        let src = format!("let x = {}1{}", "(".repeat(200), ")".repeat(200));
        let (_, diags) = parse(FileId(0), &src);
        assert_eq!(diags.len(), 1);
        assert_eq!(diags[0].message, "nested more than 64 levels deep");
        let at = "let x = ".len() + MAX_DEPTH;
        assert_eq!(
            diags[0].span.as_ref().map(|s| s.range.clone()),
            Some(at..at + 1)
        );
    }

    #[test]
    fn a_byte_order_mark_is_skipped_and_spans_stay_offsets_into_the_source() {
        let src = "\u{feff}stages P * * 2\nprogram { F B }\n";
        let (schedule, diags) = parse(FileId(0), src);
        assert_eq!(schedule.items.len(), 1);
        assert_eq!(diags.len(), 1);
        let at = src.find("* 2").unwrap_or(0);
        assert_eq!(
            diags[0].span.as_ref().map(|s| s.range.clone()),
            Some(at..at + 1)
        );
        let (_, diags) = parse(FileId(0), "\u{feff}stages P\nprogram { F B }\n");
        assert_eq!(diags, []);
    }

    #[test]
    fn pest_limits_are_said_in_plain_words() {
        let src = "let x = 1 + 2\n";
        let e = pest::error::Error::new_from_pos(
            pest::error::ErrorVariant::<Rule>::CustomError {
                message: "stack limit reached".to_owned(),
            },
            pest::Position::new(src, 8).unwrap(),
        );
        let d = syntax_error(FileId(0), src, 0..src.len(), &e);
        assert_eq!(
            d.message,
            "this item is too deeply nested or too complex to read"
        );
        assert_eq!(d.span.map(|s| s.range), Some(8..9));
    }

    #[test]
    fn operators_count_over_the_whole_expression() {
        let part = format!("({})", vec!["1"; 40].join(" + "));
        let ok = format!("let x = {}", [part.as_str(); 3].join(" * "));
        assert_eq!(parse(FileId(0), &ok).1, []);
        let long = format!("let x = {}", [part.as_str(); 4].join(" * "));
        let (_, diags) = parse(FileId(0), &long);
        assert_eq!(diags.len(), 1);
        assert_eq!(
            diags[0].message,
            "expression has 159 operators; at most 128 are allowed"
        );
    }
}
