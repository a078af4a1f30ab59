//! A candidate's worth: its programs made into a plan, checked against the memory limits, passed
//! through the validator and simulated. Every plan a search keeps went through here.

use crate::greedy::Act;
use crate::problem::Graph;
use pipeweave_check::{ProblemKind, ValidPlan, validate};
use pipeweave_plan::memory::{self, OutOfMemory};
use pipeweave_plan::{Action, Kind, Op, Plan};
use pipeweave_sim::{CostModel, SimError, live_activations, simulate};

/// What a search minimises: the makespan, then the sum of the ranks' end times (which gives a
/// local search a slope across plans of equal makespan).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Score {
    /// The simulated makespan.
    pub makespan: f64,
    /// The sum over ranks of when each rank's last action ends.
    pub spread: f64,
}

impl Score {
    /// Whether this score is better than `other`: a shorter makespan, or the same and a smaller
    /// spread, compared as they are. No tolerance: with one, "better" is not transitive (a chain
    /// of plans each within it of the last drifts past it), and a search that keeps only what beats
    /// its best could end worse than where it started (at a makespan of 10^10, a relative 10^-9 is
    /// ten units, more than a whole forward).
    pub fn beats(&self, other: &Score) -> bool {
        self.makespan < other.makespan
            || (self.makespan == other.makespan && self.spread < other.spread)
    }

    /// Whether this score is no worse than `other` within the rounding of sums of durations
    /// (2^-40 of each figure): how the local search's walk moves across plans that differ only in
    /// the order their times were added. Its best is kept by [`Score::beats`], never by this.
    pub fn ties_or_beats(&self, other: &Score) -> bool {
        let (m, s) = (
            other.makespan.abs() * ROUNDING,
            other.spread.abs() * ROUNDING,
        );
        self.makespan <= other.makespan + m
            && (self.makespan < other.makespan - m || self.spread <= other.spread + s)
    }
}

/// The relative rounding [`Score::ties_or_beats`] allows: far above what sums of a plan's
/// durations lose to rounding, far below any duration beside the makespan (unless the costs span
/// twelve orders of magnitude, where no comparison of floating-point times means much).
const ROUNDING: f64 = 1.0 / (1u64 << 40) as f64;

/// The plan action of an entry.
pub(crate) fn action(g: &Graph, act: Act) -> Action {
    let op = |x: usize, whole: bool| {
        let o = g.nodes[x].op;
        if whole {
            Op::new(o.stage, Kind::B, o.mb)
        } else {
            o
        }
    };
    match act {
        Act::One { node, whole } => Action::One(op(node, whole)),
        Act::Pair { f, b, whole } => Action::Pair {
            f: op(f, false),
            b: op(b, whole),
        },
    }
}

/// The plan of `programs` (unchecked; `None` where `Plan::new` refuses it), or an error where its
/// programs do not fit in memory.
pub(crate) fn plan(g: &Graph, programs: &[Vec<Act>]) -> Result<Option<Plan>, OutOfMemory> {
    let what = "the plan being checked";
    let mut out = memory::with_capacity(programs.len(), what)?;
    for p in programs {
        let mut actions: Vec<Action> = memory::with_capacity(p.len(), what)?;
        actions.extend(p.iter().map(|&a| action(g, a)));
        out.push(actions);
    }
    Ok(Plan::new(g.ranks, g.pipelines.clone(), out).ok())
}

/// The most activation units a program holds at once, each weighed by its stage's entry of
/// `weights` (1 where there is none, so that with no weights this is
/// `pipeweave_sim::live_activations`'s count).
pub fn weighted_peak(weights: &[u32], program: &[Action]) -> u64 {
    if live_activations(program).peak == 0 {
        return 0;
    }
    let (mut live, mut peak) = (0i64, 0i64);
    for a in program {
        for op in a.ops() {
            let w = i64::from(weights.get(op.stage as usize).copied().unwrap_or(1));
            match op.kind {
                Kind::F => live += w,
                Kind::B | Kind::I => live -= w,
                Kind::W => {}
            }
        }
        peak = peak.max(live);
    }
    peak.max(0) as u64
}

/// [`weighted_peak`] of a synthesized program, read from its entries directly (a synthesized
/// program always computes gradients, so its forwards hold activations).
pub(crate) fn program_peak(g: &Graph, program: &[Act]) -> u64 {
    let w = |x: usize| i64::from(g.weight[g.parts(x).0 as usize]);
    let (mut live, mut peak) = (0i64, 0i64);
    for &a in program {
        match a {
            Act::One { node, .. } => match node % 3 {
                crate::problem::F => live += w(node),
                crate::problem::I => live -= w(node),
                _ => {}
            },
            Act::Pair { f, b, .. } => live += w(f) - w(b),
        }
        peak = peak.max(live);
    }
    peak.max(0) as u64
}

/// Whether rank `r`'s synthesized program stays within its memory limit.
pub(crate) fn program_fits(g: &Graph, r: usize, program: &[Act]) -> bool {
    program_peak(g, program) <= u64::from(g.limits[r])
}

/// Whether rank `r`'s program stays within its memory limit.
pub(crate) fn fits(g: &Graph, r: usize, program: &[Action]) -> bool {
    weighted_peak(&g.weight, program) <= u64::from(g.limits[r])
}

/// The validated plan of `programs` and its score, or `None` when it breaks a memory limit, is
/// invalid (e.g. deadlocks) or cannot be simulated; an error where the plan, the validator's or the
/// simulator's tables do not fit in memory (not a plan to pass over: the next would not fit either).
pub(crate) fn assess<C: CostModel + ?Sized>(
    g: &Graph,
    programs: &[Vec<Act>],
    costs: &C,
) -> Result<Option<(ValidPlan, Score)>, OutOfMemory> {
    let Some(plan) = plan(g, programs)? else {
        return Ok(None);
    };
    if !(0..g.ranks).all(|r| fits(g, r as usize, plan.program(r))) {
        return Ok(None);
    }
    let valid = match validate(plan) {
        Ok(valid) => valid,
        Err(problems) => {
            return match problems.iter().find_map(|p| match p.kind {
                ProblemKind::OutOfMemory(e) => Some(e),
                _ => None,
            }) {
                Some(e) => Err(e),
                None => Ok(None),
            };
        }
    };
    let timeline = match simulate(&valid, costs) {
        Ok(t) => t,
        Err(SimError::OutOfMemory(e)) => return Err(e),
        Err(_) => return Ok(None),
    };
    let spread = timeline
        .timing
        .intervals
        .iter()
        .map(|iv| iv.last().map_or(0.0, |i| i.end))
        .sum();
    let score = Score {
        makespan: timeline.timing.makespan,
        spread,
    };
    Ok(Some((valid, score)))
}
