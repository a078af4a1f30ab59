//! Evaluating resolved expressions and requirements over an environment of integers.
//!
//! Arithmetic is checked (overflow and division by zero are errors at the expression's span),
//! division rounds toward negative infinity, and `and`/`or` do not evaluate their right side when
//! the left decides.

use crate::ir::{Expr, ExprKind, MessagePart, Requirement};
use crate::syntax::BinOp;
use std::ops::Range;

/// An evaluation error: where, what, and the label under the marker.
pub(crate) struct Failure {
    pub span: Range<usize>,
    pub message: String,
    pub label: String,
}

/// An evaluation error, boxed: results stay two words wide, which keeps the frames of the
/// recursive evaluator and interpreter small (every `?` copies the result in a debug build).
pub(crate) type Fail = Box<Failure>;

pub(crate) fn fail(
    span: &Range<usize>,
    message: impl Into<String>,
    label: impl Into<String>,
) -> Fail {
    Box::new(Failure {
        span: span.clone(),
        message: message.into(),
        label: label.into(),
    })
}

fn floor_div(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    Some(if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    })
}

/// The value of `x` in `env`.
///
/// This recursion is as deep as the expression (at most the nesting limit plus the operator limit
/// of the parser), so it keeps its frame small: everything that is not a recursive call lives in
/// the helpers below (a debug build gave each call 3.3 KiB of stack before, 1.6 KiB with the
/// helpers but an unboxed error).
pub(crate) fn eval(x: &Expr, env: &[i64]) -> Result<i64, Fail> {
    match &x.kind {
        ExprKind::Const(v) => Ok(*v),
        ExprKind::Slot(s) => Ok(env[*s]),
        ExprKind::Neg(a) => negate(eval(a, env)?, &x.span),
        ExprKind::Not(a) => Ok(i64::from(eval(a, env)? == 0)),
        ExprKind::Binary(op, a, b) => {
            let a = eval(a, env)?;
            match short_circuit(*op, a) {
                Some(v) => Ok(v),
                None => binary(*op, a, eval(b, env)?, &x.span),
            }
        }
        ExprKind::Min(args) => fold(args, env, i64::MAX, i64::min),
        ExprKind::Max(args) => fold(args, env, i64::MIN, i64::max),
        ExprKind::If(c, a, b) => eval(if eval(c, env)? != 0 { a } else { b }, env),
    }
}

fn negate(v: i64, span: &Range<usize>) -> Result<i64, Fail> {
    v.checked_neg()
        .ok_or_else(|| fail(span, "integer overflow", "overflows"))
}

/// `and` and `or` do not evaluate their right side when the left decides.
fn short_circuit(op: BinOp, a: i64) -> Option<i64> {
    match op {
        BinOp::And if a == 0 => Some(0),
        BinOp::Or if a != 0 => Some(1),
        _ => None,
    }
}

fn fold(args: &[Expr], env: &[i64], start: i64, f: fn(i64, i64) -> i64) -> Result<i64, Fail> {
    let mut m = start;
    for a in args {
        m = f(m, eval(a, env)?);
    }
    Ok(m)
}

/// `a op b` for evaluated operands (`and` and `or` only get here when the right side decides).
fn binary(op: BinOp, a: i64, b: i64, span: &Range<usize>) -> Result<i64, Fail> {
    let overflow = || fail(span, "integer overflow", "overflows");
    Ok(match op {
        BinOp::Add => a.checked_add(b).ok_or_else(overflow)?,
        BinOp::Sub => a.checked_sub(b).ok_or_else(overflow)?,
        BinOp::Mul => a.checked_mul(b).ok_or_else(overflow)?,
        BinOp::Div | BinOp::Rem if b == 0 => {
            return Err(fail(span, "division by zero", "divides by zero"));
        }
        BinOp::Div => floor_div(a, b).ok_or_else(overflow)?,
        BinOp::Rem => {
            let q = floor_div(a, b).ok_or_else(overflow)?;
            a - b * q
        }
        BinOp::Lt => i64::from(a < b),
        BinOp::Le => i64::from(a <= b),
        BinOp::Gt => i64::from(a > b),
        BinOp::Ge => i64::from(a >= b),
        BinOp::Eq => i64::from(a == b),
        BinOp::Ne => i64::from(a != b),
        BinOp::And | BinOp::Or => i64::from(b != 0),
    })
}

/// A requirement's message with its `{name}` holes filled in.
fn message(parts: &[MessagePart], env: &[i64]) -> String {
    parts
        .iter()
        .map(|p| match p {
            MessagePart::Text(t) => t.clone(),
            MessagePart::Slot(s, ty) => crate::ir::shown(ty.as_ref(), env[*s]),
        })
        .collect()
}

/// Checks a requirement: an error with its message when the condition is 0.
pub(crate) fn check(req: &Requirement, env: &[i64]) -> Result<(), Fail> {
    if eval(&req.cond, env)? != 0 {
        return Ok(());
    }
    Err(fail(
        &req.span,
        message(&req.message, env),
        "this requirement fails",
    ))
}
