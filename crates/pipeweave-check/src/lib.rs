//! Plan validation and deadlock analysis.
//!
//! [`validate`] turns a plan into a [`ValidPlan`], the type the simulator and the exporters take,
//! or gives every problem it finds in it ([`problems`] gives the list alone), each naming the
//! rank, the position in that rank's program and the action: unknown stages or micro-batches,
//! actions on a rank that does not host their stage, malformed overlapped pairs, duplicated,
//! missing or misordered work. When the work itself is complete and well ordered it decides
//! deadlock freedom under blocking point-to-point semantics (see `deadlock.rs` for why the lowered
//! plan progresses exactly when its compute actions do) and reports the wait cycle if there is one.
//!
//! No IO; problems are values. Positions are 0-based in the data and shown 1-based in messages.

#![warn(missing_docs)]

mod deadlock;
mod problem;
mod valid;
mod work;

pub use problem::{Problem, ProblemKind, Wait, WaitReason, cycle_words};
pub use valid::ValidPlan;

use pipeweave_plan::Plan;

/// `plan` as a [`ValidPlan`] when it is valid and deadlock free, else every problem in it (as
/// [`problems`] lists them, never empty).
pub fn validate(plan: Plan) -> Result<ValidPlan, Vec<Problem>> {
    let problems = problems(&plan);
    if problems.is_empty() {
        Ok(ValidPlan::accepted(plan))
    } else {
        Err(problems)
    }
}

/// Every problem in `plan`; an empty list means the plan is valid and deadlock free.
///
/// Problems come sorted by rank and position. The deadlock analysis only runs when no other problem
/// was found (a plan with missing work cannot be judged for progress).
pub fn problems(plan: &Plan) -> Vec<Problem> {
    let mut problems = work::check_work(plan);
    if problems.is_empty()
        && let Some(p) = deadlock::find_deadlock(plan)
    {
        problems.push(p);
    }
    // The count of the missing work not reported one by one comes last, at no rank.
    problems.sort_by_key(|p| {
        let whole = matches!(p.kind, ProblemKind::MoreMissing { .. });
        (whole, p.rank, p.position.unwrap_or(usize::MAX))
    });
    problems
}

#[cfg(test)]
mod tests;
