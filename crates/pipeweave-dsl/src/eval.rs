//! Evaluating resolved expressions and requirements over an environment of integers.
//!
//! Arithmetic is checked (overflow and division by zero are errors at the expression's span),
//! division rounds toward negative infinity, and `and`/`or` do not evaluate their right side when
//! the left decides.

use crate::ir::{Expr, ExprKind, MessagePart, Requirement};
use crate::syntax::BinOp;
use std::ops::Range;

/// An evaluation error: where, what, and the label under the marker.
pub(crate) struct Fail {
    pub span: Range<usize>,
    pub message: String,
    pub label: String,
}

pub(crate) fn fail(
    span: &Range<usize>,
    message: impl Into<String>,
    label: impl Into<String>,
) -> Fail {
    Fail {
        span: span.clone(),
        message: message.into(),
        label: label.into(),
    }
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
pub(crate) fn eval(x: &Expr, env: &[i64]) -> Result<i64, Fail> {
    Ok(match &x.kind {
        ExprKind::Const(v) => *v,
        ExprKind::Slot(s) => env[*s],
        ExprKind::Neg(a) => eval(a, env)?
            .checked_neg()
            .ok_or_else(|| fail(&x.span, "integer overflow", "overflows"))?,
        ExprKind::Not(a) => i64::from(eval(a, env)? == 0),
        ExprKind::Binary(op, a, b) => {
            let a = eval(a, env)?;
            match op {
                BinOp::And if a == 0 => return Ok(0),
                BinOp::Or if a != 0 => return Ok(1),
                _ => {}
            }
            binary(*op, a, eval(b, env)?, &x.span)?
        }
        ExprKind::Min(args) => {
            let mut m = i64::MAX;
            for a in args {
                m = m.min(eval(a, env)?);
            }
            m
        }
        ExprKind::Max(args) => {
            let mut m = i64::MIN;
            for a in args {
                m = m.max(eval(a, env)?);
            }
            m
        }
        ExprKind::If(c, a, b) => {
            if eval(c, env)? != 0 {
                eval(a, env)?
            } else {
                eval(b, env)?
            }
        }
    })
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
            MessagePart::Slot(s) => env[*s].to_string(),
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
