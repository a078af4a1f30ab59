//! The operations a schedule's plan will hold, bounded before anything is built, so that
//! parameters asking for more than a plan may have are refused at once rather than after building
//! up to [`MAX_OPS`] operations (ZB-V at M = 16,777,215 built for 3 s and 1.9 GB before saying so).
//!
//! A valid plan runs, on each of its S stages, a forward and a backward of each micro-batch of the
//! stage's pipeline: B, or I and then W where the schedule splits the backward. An overlapped pair
//! holds a forward and a backward and counts two. So the K pipelines of M/K micro-batches each hold
//! 2·S·M operations, or 3·S·M when every backward is split, and in between when some are. Whether a
//! program can write an I or a W is read from it: an `if` whose condition the parameters decide
//! (it names no rank, loop variable or `let` of the program) takes its one branch, any other both.
//! The bound is exact for schedules that split all their backwards or none, an upper bound for
//! those that split some.

use crate::eval::{Fail, eval, fail};
use crate::ir::{Expr, ExprKind, Resolved, Step, Stmt};
use crate::syntax::BinOp;
use pipeweave_plan::{Kind, MAX_OPS};

/// Refuses parameters whose plan would have more operations than a plan may have (see the
/// module's doc) at `microbatches` micro-batches over `s` stages per pipeline; `env` holds the
/// parameters and the top-level `let`s.
pub(crate) fn within_budget(
    resolved: &Resolved,
    microbatches: u32,
    env: &[i64],
    s: u32,
) -> Result<(), Fail> {
    let pieces = u64::from(s) * u64::from(microbatches);
    let (ops, what) = if may_split(resolved, env) {
        (
            3 * pieces,
            "as many as {n} operations (a forward and a backward split into an input-gradient and a weight-gradient half, of every micro-batch on every stage)",
        )
    } else {
        (
            2 * pieces,
            "at least {n} operations (a forward and a backward of every micro-batch on every stage)",
        )
    };
    if ops <= MAX_OPS as u64 {
        return Ok(());
    }
    Err(fail(
        &resolved.stages.span,
        format!(
            "{s} stages and {microbatches} micro-batches make {}, more than the {MAX_OPS} a plan may have",
            what.replace("{n}", &ops.to_string())
        ),
        format!("{s} stages per pipeline"),
    ))
}

/// Whether the program can write an I or a W for the parameters in `env` (see the module's doc).
pub(crate) fn may_split(resolved: &Resolved, env: &[i64]) -> bool {
    Known::new(resolved).splits(&resolved.program, env)
}

/// Which environment slots hold a value before the program runs: the parameters and top-level
/// `let`s, not the rank, the placement's variables or anything the program assigns.
struct Known {
    unknown: Vec<bool>,
}

impl Known {
    fn new(resolved: &Resolved) -> Known {
        let mut unknown = vec![false; resolved.slots];
        for slot in [resolved.slot_r, resolved.slot_j, resolved.slot_q] {
            if let Some(u) = unknown.get_mut(slot) {
                *u = true;
            }
        }
        let mut known = Known { unknown };
        known.mark_assigned(&resolved.program);
        known
    }

    fn mark_assigned(&mut self, stmts: &[Stmt]) {
        for stmt in stmts {
            match stmt {
                Stmt::Set(slot, _) => self.set_unknown(*slot),
                Stmt::For { slot, body, .. } => {
                    self.set_unknown(*slot);
                    self.mark_assigned(body);
                }
                Stmt::Repeat { body, .. } => self.mark_assigned(body),
                Stmt::If {
                    then, otherwise, ..
                } => {
                    self.mark_assigned(then);
                    self.mark_assigned(otherwise);
                }
                Stmt::Require(_) | Stmt::Steps(_) => {}
            }
        }
    }

    fn set_unknown(&mut self, slot: usize) {
        if let Some(u) = self.unknown.get_mut(slot) {
            *u = true;
        }
    }

    /// Whether `x` reads a slot that is not known.
    fn reads_unknown(&self, x: &Expr) -> bool {
        match &x.kind {
            ExprKind::Const(_) => false,
            ExprKind::Slot(s) => self.unknown.get(*s).copied().unwrap_or(true),
            ExprKind::Neg(a) | ExprKind::Not(a) => self.reads_unknown(a),
            ExprKind::Binary(_, a, b) => self.reads_unknown(a) || self.reads_unknown(b),
            ExprKind::Min(args) | ExprKind::Max(args) => args.iter().any(|a| self.reads_unknown(a)),
            ExprKind::If(c, a, b) => {
                self.reads_unknown(c) || self.reads_unknown(a) || self.reads_unknown(b)
            }
        }
    }

    /// The value of `x` when the known slots decide it: `false and …` and `true or …` are decided
    /// by their left side, a conditional by its condition.
    fn value(&self, x: &Expr, env: &[i64]) -> Option<i64> {
        if !self.reads_unknown(x) {
            return eval(x, env).ok();
        }
        match &x.kind {
            ExprKind::Not(a) => self.value(a, env).map(|v| i64::from(v == 0)),
            ExprKind::Binary(op @ (BinOp::And | BinOp::Or), a, b) => {
                let (a, b) = (self.value(a, env), self.value(b, env));
                let and = *op == BinOp::And;
                match (a, b) {
                    (Some(0), _) | (_, Some(0)) if and => Some(0),
                    (Some(v), _) | (_, Some(v)) if !and && v != 0 => Some(1),
                    _ => None,
                }
            }
            ExprKind::If(c, a, b) => {
                let c = self.value(c, env)?;
                self.value(if c != 0 { a } else { b }, env)
            }
            _ => None,
        }
    }

    /// Whether the program can write an I or a W under the known values.
    fn splits(&self, stmts: &[Stmt], env: &[i64]) -> bool {
        stmts.iter().any(|stmt| match stmt {
            Stmt::Steps(steps) => steps.iter().any(|step| match step {
                Step::One(a, _) => splitting(a.kind),
                Step::Pair(f, b, _) => splitting(f.kind) || splitting(b.kind),
            }),
            Stmt::Repeat { count, body, .. } => {
                self.value(count, env).is_none_or(|n| n > 0) && self.splits(body, env)
            }
            Stmt::For { body, .. } => self.splits(body, env),
            Stmt::If {
                cond,
                then,
                otherwise,
            } => match self.value(cond, env) {
                Some(0) => self.splits(otherwise, env),
                Some(_) => self.splits(then, env),
                None => self.splits(then, env) || self.splits(otherwise, env),
            },
            Stmt::Set(..) | Stmt::Require(_) => false,
        })
    }
}

fn splitting(kind: Kind) -> bool {
    matches!(kind, Kind::I | Kind::W)
}

#[cfg(test)]
mod tests;
