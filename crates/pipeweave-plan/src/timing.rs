//! When every action of a plan runs: the simulator's output, and what the exports carry.
//!
//! One type for both, here below the simulator and the exports, so neither keeps a mirror of the
//! other's and the crates still depend one way.

use crate::plan::Plan;
use std::fmt;

/// When one action runs, in the cost model's time unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// When the action starts.
    pub start: f64,
    /// When it ends (both halves of a pair end together).
    pub end: f64,
}

/// The start and end of every action of a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// `intervals[r][i]` is when rank r's i-th action runs (an overlapped pair is one interval).
    pub intervals: Vec<Vec<Interval>>,
    /// When the last action ends.
    pub makespan: f64,
}

/// Why a timing does not fit a plan.
#[derive(Debug, Clone, PartialEq)]
pub enum TimingError {
    /// The makespan is negative or not finite.
    Makespan(f64),
    /// The timing has another number of ranks than the plan.
    Ranks {
        /// How many ranks the timing has.
        found: usize,
        /// How many the plan has.
        expected: u32,
    },
    /// A rank has another number of intervals than actions.
    Intervals {
        /// The rank.
        rank: usize,
        /// How many intervals the timing gives it.
        found: usize,
        /// How many actions its program has.
        expected: usize,
    },
    /// An interval is not finite or ends before it starts.
    Interval {
        /// The rank.
        rank: usize,
        /// The action's position in the rank's program.
        action: usize,
        /// The interval.
        interval: Interval,
    },
}

impl fmt::Display for TimingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TimingError::Makespan(makespan) if makespan.is_finite() => write!(
                f,
                "the timeline's makespan {makespan} is negative; it is the time from the start of the step to its end, 0 or more"
            ),
            TimingError::Makespan(makespan) => {
                write!(f, "the timeline's makespan {makespan} is not a finite time")
            }
            TimingError::Ranks { found, expected } => write!(
                f,
                "the timeline has {found} ranks but the plan has {expected}"
            ),
            TimingError::Intervals {
                rank,
                found,
                expected,
            } => write!(
                f,
                "the timeline has {found} intervals for rank {rank} but the rank has {expected} actions"
            ),
            TimingError::Interval {
                rank,
                action,
                interval,
            } => write!(
                f,
                "rank {rank} action {action} runs from {} to {}, which is not a valid interval",
                interval.start, interval.end
            ),
        }
    }
}

impl std::error::Error for TimingError {}

impl Timing {
    /// Checks that the timing fits the plan: one interval per action, finite, ordered times.
    pub fn check(&self, plan: &Plan) -> Result<(), TimingError> {
        if !self.makespan.is_finite() || self.makespan < 0.0 {
            return Err(TimingError::Makespan(self.makespan));
        }
        if self.intervals.len() != plan.ranks() as usize {
            return Err(TimingError::Ranks {
                found: self.intervals.len(),
                expected: plan.ranks(),
            });
        }
        for (rank, (times, program)) in self.intervals.iter().zip(plan.programs()).enumerate() {
            if times.len() != program.len() {
                return Err(TimingError::Intervals {
                    rank,
                    found: times.len(),
                    expected: program.len(),
                });
            }
            for (action, &t) in times.iter().enumerate() {
                if !(t.start.is_finite() && t.end.is_finite() && t.start <= t.end) {
                    return Err(TimingError::Interval {
                        rank,
                        action,
                        interval: t,
                    });
                }
            }
        }
        Ok(())
    }
}
