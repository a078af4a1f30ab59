//! Discrete-event simulation of step plans: a timeline of every action and the metrics that follow.
//!
//! Every rank runs its program in order. An action starts when its rank is free and its inputs have
//! arrived: a forward needs the previous stage's forward of the same micro-batch, a backward (B or
//! I) the next stage's backward (or, on the last stage, its own forward), a W its I; an input from
//! another rank arrives `transfer` after the producing action ends. An overlapped pair starts when
//! the inputs of both halves have arrived, runs as one block for `pair(f, b)`, and both halves end
//! together. Sends are asynchronous here (the validator checks that the blocking form still makes
//! progress), so the timeline is the one a launcher with enough buffering achieves. The run is
//! event-driven (a blocked rank waits on the op it misses), linear in the number of actions.
//!
//! No IO. Costs come from a [`CostModel`]; the default is [`UnitCosts`].

mod costs;
mod memory;

pub use costs::{CostModel, StageCosts, TableCosts, UniformCosts, UnitCosts};
pub use memory::live_activations;

use pipeweave_plan::{Action, Kind, Op, Plan};
use std::fmt;

/// Start and end of one action.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    pub start: f64,
    pub end: f64,
}

/// Per-rank results.
#[derive(Debug, Clone, PartialEq)]
pub struct RankMetrics {
    /// Time spent computing.
    pub busy: f64,
    /// `makespan − busy`.
    pub idle: f64,
    /// The longest stretch without work, counting the start and the end of the step.
    pub longest_idle: f64,
    /// Peak live activations in stage-micro-batch units (see [`live_activations`]).
    pub peak_activations: u32,
    /// Communication inside this rank's actions that no compute hides.
    pub exposed_comm: f64,
}

/// The simulated step.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// `intervals[r][i]`: when rank r's i-th action runs.
    pub intervals: Vec<Vec<Interval>>,
    pub makespan: f64,
    pub ranks: Vec<RankMetrics>,
    /// `1 − Σ busy / (ranks × makespan)`.
    pub bubble_fraction: f64,
    /// Total exposed communication over all ranks.
    pub exposed_comm: f64,
}

/// A plan the simulator cannot run to the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimError {
    /// No rank can move: `rank` waits at `position` for an input that never arrives.
    Stuck { rank: u32, position: usize },
    /// An action names a stage or micro-batch the plan does not have.
    Invalid { rank: u32, position: usize },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Stuck { rank, position } => write!(
                f,
                "the plan cannot make progress: rank {rank} waits forever at action {}",
                position + 1
            ),
            SimError::Invalid { rank, position } => write!(
                f,
                "rank {rank}, action {} names a stage or micro-batch the plan does not have",
                position + 1
            ),
        }
    }
}

impl std::error::Error for SimError {}

const UNKNOWN: f64 = f64::NAN;

struct Ends {
    mb_bound: usize,
    f: Vec<f64>,
    /// End of the input-gradient backward (B or I).
    b: Vec<f64>,
}

impl Ends {
    fn at(&self, stage: u32, mb: u32) -> usize {
        stage as usize * self.mb_bound + mb as usize
    }
}

/// When the input of `op` (on `rank`) is available, or `Err(key)` of the op that produces it when
/// that has not run yet.
#[inline]
fn ready_at<C: CostModel + ?Sized>(
    plan: &Plan,
    costs: &C,
    ends: &Ends,
    rank: u32,
    op: Op,
) -> Result<f64, usize> {
    let arrive = |from: u32, end: f64, key: usize| {
        if end.is_nan() {
            Err(key)
        } else if plan.stage_rank(from) == Some(rank) {
            Ok(end)
        } else {
            Ok(end + costs.transfer(from, op.stage))
        }
    };
    match op.kind {
        Kind::F => match plan.prev_stage(op.stage) {
            Some(p) => {
                let x = ends.at(p, op.mb);
                arrive(p, ends.f[x], 2 * x)
            }
            None => Ok(0.0),
        },
        Kind::B | Kind::I => {
            let x = ends.at(op.stage, op.mb);
            let own = ends.f[x];
            if own.is_nan() {
                return Err(2 * x);
            }
            match plan.next_stage(op.stage) {
                Some(n) => {
                    let y = ends.at(n, op.mb);
                    arrive(n, ends.b[y], 2 * y + 1).map(|t| t.max(own))
                }
                None => Ok(own),
            }
        }
        Kind::W => {
            let x = ends.at(op.stage, op.mb);
            let i = ends.b[x];
            if i.is_nan() { Err(2 * x + 1) } else { Ok(i) }
        }
    }
}

fn valid_op(plan: &Plan, op: Op) -> bool {
    plan.is_stage(op.stage) && op.mb < plan.mb_bound()
}

/// Simulates one step of `plan` under `costs`.
pub fn simulate<C: CostModel + ?Sized>(plan: &Plan, costs: &C) -> Result<Timeline, SimError> {
    let ranks = plan.ranks() as usize;
    let mb_bound = plan.mb_bound() as usize;
    let n = plan.num_stages() as usize * mb_bound;
    let mut ends = Ends {
        mb_bound,
        f: vec![UNKNOWN; n],
        b: vec![UNKNOWN; n],
    };
    let mut intervals: Vec<Vec<Interval>> = plan
        .programs()
        .iter()
        .map(|p| Vec::with_capacity(p.len()))
        .collect();
    let mut free = vec![0.0f64; ranks];
    let mut exposed = vec![0.0f64; ranks];
    for (rank, program) in plan.programs().iter().enumerate() {
        for (i, a) in program.iter().enumerate() {
            if !a.ops().all(|op| valid_op(plan, op)) {
                return Err(SimError::Invalid {
                    rank: rank as u32,
                    position: i,
                });
            }
        }
    }
    // Event-driven: a rank whose next action misses an input is parked on the op that produces it
    // and woken when that op ends; `parked[key]` heads an intrusive list linked through `next`.
    // Keys: 2·(stage, mb) for a forward, 2·(stage, mb) + 1 for an input-gradient backward. Times do
    // not depend on this order: each action's start is a function of its inputs and its rank.
    const NONE: u32 = u32::MAX;
    let mut parked = vec![NONE; 2 * n];
    let mut next = vec![NONE; ranks];
    let mut runnable: Vec<u32> = (0..ranks as u32).rev().collect();
    while let Some(r) = runnable.pop() {
        let rank = r as usize;
        let program = plan.program(r);
        while let Some(a) = program.get(intervals[rank].len()) {
            let mut start = free[rank];
            let mut missing = None;
            for op in a.ops() {
                match ready_at(plan, costs, &ends, r, op) {
                    Ok(t) => start = start.max(t),
                    Err(key) => {
                        missing = Some(key);
                        break;
                    }
                }
            }
            if let Some(key) = missing {
                next[rank] = parked[key];
                parked[key] = r;
                break;
            }
            let (duration, hidden_lost) = match *a {
                Action::One(op) => (costs.op(op), costs.exposed_op(op)),
                Action::Pair { f, b } => (costs.pair(f, b), costs.exposed_pair(f, b)),
            };
            let end = start + duration;
            for op in a.ops() {
                let x = ends.at(op.stage, op.mb);
                let key = match op.kind {
                    Kind::F => {
                        ends.f[x] = end;
                        2 * x
                    }
                    Kind::B | Kind::I => {
                        ends.b[x] = end;
                        2 * x + 1
                    }
                    Kind::W => continue,
                };
                let mut w = std::mem::replace(&mut parked[key], NONE);
                while w != NONE {
                    runnable.push(w);
                    w = std::mem::replace(&mut next[w as usize], NONE);
                }
            }
            intervals[rank].push(Interval { start, end });
            exposed[rank] += hidden_lost;
            free[rank] = end;
        }
    }
    if let Some(rank) = (0..ranks).find(|&r| intervals[r].len() < plan.programs()[r].len()) {
        return Err(SimError::Stuck {
            rank: rank as u32,
            position: intervals[rank].len(),
        });
    }
    let makespan = intervals
        .iter()
        .filter_map(|iv| iv.last())
        .map(|iv| iv.end)
        .fold(0.0f64, f64::max);
    let mut total_busy = 0.0;
    let metrics: Vec<RankMetrics> = intervals
        .iter()
        .enumerate()
        .map(|(rank, iv)| {
            let busy: f64 = iv.iter().map(|x| x.end - x.start).sum();
            total_busy += busy;
            let mut longest = 0.0f64;
            let mut t = 0.0f64;
            for x in iv {
                longest = longest.max(x.start - t);
                t = x.end;
            }
            longest = longest.max(makespan - t);
            RankMetrics {
                busy,
                idle: makespan - busy,
                longest_idle: longest,
                peak_activations: live_activations(plan.program(rank as u32)).peak,
                exposed_comm: exposed[rank],
            }
        })
        .collect();
    let bubble_fraction = if makespan > 0.0 {
        1.0 - total_busy / (ranks as f64 * makespan)
    } else {
        0.0
    };
    Ok(Timeline {
        intervals,
        makespan,
        bubble_fraction,
        exposed_comm: exposed.iter().sum(),
        ranks: metrics,
    })
}

#[cfg(test)]
mod tests;
