//! The optional simulated timeline an export may carry: start and end of every action.
//!
//! A plain mirror the caller fills (the command line copies it from `pipeweave_sim::Timeline`), so
//! this crate does not depend on the simulator and data flows one way.

use pipeweave_diagnostics::Diagnostic;
use pipeweave_plan::Plan;

/// When one action runs, in the cost model's time unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub start: f64,
    pub end: f64,
}

/// The simulated timeline of a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// `intervals[r][i]` is when rank r's i-th action runs (an overlapped pair is one interval).
    pub intervals: Vec<Vec<Interval>>,
    /// When the last action ends.
    pub makespan: f64,
}

impl Timing {
    /// Checks that the timeline fits the plan: one interval per action, finite, ordered times.
    pub fn check(&self, plan: &Plan) -> Result<(), Diagnostic> {
        if !self.makespan.is_finite() || self.makespan < 0.0 {
            return Err(Diagnostic::error(format!(
                "the timeline's makespan {} is not a finite time",
                self.makespan
            )));
        }
        if self.intervals.len() != plan.ranks() as usize {
            return Err(Diagnostic::error(format!(
                "the timeline has {} ranks but the plan has {}",
                self.intervals.len(),
                plan.ranks()
            )));
        }
        for (r, (times, program)) in self.intervals.iter().zip(plan.programs()).enumerate() {
            if times.len() != program.len() {
                return Err(Diagnostic::error(format!(
                    "the timeline has {} intervals for rank {r} but the rank has {} actions",
                    times.len(),
                    program.len()
                )));
            }
            for (i, t) in times.iter().enumerate() {
                if !(t.start.is_finite() && t.end.is_finite() && t.start <= t.end) {
                    return Err(Diagnostic::error(format!(
                        "rank {r} action {i} runs from {} to {}, which is not a valid interval",
                        t.start, t.end
                    )));
                }
            }
        }
        Ok(())
    }
}
