//! The parts of the syntax tree that are no statements: parameter types (`bool`,
//! `int in 0..=8 multiple of 2`, `choice(a, b)`) and calls of functions that do not exist.

use super::{Builder, Rule};
use crate::syntax::{Expr, ExprKind};
use crate::words;
use pest::iterators::Pair;
use pipeweave_diagnostics::{Diagnostic, Span};
use pipeweave_param::{IntRange, ParamType};
use std::ops::Range;

impl Builder<'_> {
    /// A parameter's type, checked (an empty range, a repeated option are errors here).
    pub(super) fn param_type(&mut self, p: Pair<'_, Rule>) -> Option<(ParamType, Range<usize>)> {
        let span = self.span(&p);
        let ty = match p.as_rule() {
            Rule::type_bool => ParamType::Bool,
            Rule::type_choice => ParamType::Choice(
                p.into_inner()
                    .filter(|q| q.as_rule() == Rule::option)
                    .map(|q| q.as_str().to_owned())
                    .collect(),
            ),
            _ => ParamType::Int(self.int_range(p)?),
        };
        if let Some(problem) = ty.problem() {
            self.error(span, problem, "this type");
            return None;
        }
        Some((ty, span))
    }

    /// `int`, `int in A..=B`, `int in A..B`, `int in A..`, `int in ..=B`, then `multiple of K`.
    fn int_range(&mut self, p: Pair<'_, Rule>) -> Option<IntRange> {
        let mut range = IntRange::default();
        for q in p.into_inner() {
            match q.as_rule() {
                Rule::int_range => {
                    let mut lower = true;
                    let mut exclusive = false;
                    for b in q.into_inner() {
                        match b.as_rule() {
                            Rule::range_incl => lower = false,
                            Rule::range_excl => {
                                lower = false;
                                exclusive = true;
                            }
                            _ => {
                                let n = self.bound(&b)?;
                                if lower {
                                    range.min = Some(n);
                                } else if exclusive {
                                    let span = self.span(&b);
                                    let Some(n) = n.checked_sub(1) else {
                                        self.error(span, "the bound is too small".into(), "here");
                                        return None;
                                    };
                                    range.max = Some(n);
                                } else {
                                    range.max = Some(n);
                                }
                            }
                        }
                    }
                }
                Rule::multiple => {
                    let k = q.into_inner().find(|b| b.as_rule() == Rule::bound)?;
                    range.multiple_of = Some(self.bound(&k)?);
                }
                _ => {}
            }
        }
        Some(range)
    }

    fn bound(&mut self, p: &Pair<'_, Rule>) -> Option<i64> {
        match p.as_str().parse::<i64>() {
            Ok(n) => Some(n),
            Err(_) => {
                let span = self.span(p);
                self.error(span, "number is too large".into(), "too large");
                None
            }
        }
    }

    /// A call of a function that does not exist: an error naming it and the functions there are.
    /// It stands for 0 afterwards, so that the rest of the file is still read and resolved.
    pub(super) fn unknown_call(&mut self, p: Pair<'_, Rule>) -> Option<Expr> {
        let span = self.span(&p);
        let func = p.into_inner().next()?;
        let at = self.span(&func);
        let name = func.as_str();
        let mut d = Diagnostic::error(format!(
            "unknown function `{name}`; the functions are {}",
            words::FUNCTIONS.join(" and ")
        ))
        .with_span_label(Span::new(self.file, at), "not a function");
        if let Some(close) = words::FUNCTIONS
            .iter()
            .find(|f| strsim::levenshtein(f, name) <= 1)
        {
            d = d.with_help(format!("did you mean `{close}`?"));
        }
        self.diags.push(d);
        Some(Expr {
            kind: ExprKind::Int(0),
            span,
        })
    }
}
