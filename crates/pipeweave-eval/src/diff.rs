//! Plan against actual: a simulated step set beside a measured one, rank by rank and action by
//! action; the waits the plan did not predict and on whom each rank waited; the slowest rank and
//! action. The JSON of `pipeweave diff`, described by `schemas/pipeweave-diff.v1.schema.json`.

use pipeweave_plan::{Action, Interval, Plan, Timing};
use pipeweave_sim::{RankMetrics, Timeline, live_activations};
use pipeweave_trace::Run;
use serde::Serialize;

/// The most unpredicted waits a diff lists (the longest; the totals per rank count them all).
pub const MAX_WAITS: usize = 20;
/// A wait counts as unpredicted when the measured gap before an action exceeds the predicted one
/// by more than this share of the measured step.
pub const WAIT_SHARE: f64 = 0.02;

/// A plan set beside a measured step of it; times in seconds from the step's start.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanDiff {
    /// The plan, as given.
    pub plan: String,
    /// Where the predicted costs come from, in words.
    pub costs: String,
    /// The step compared (1-based): the run's median step by time.
    pub step: u32,
    /// The steps the traces hold.
    pub steps: u32,
    /// The predicted step: the simulated makespan.
    pub predicted: f64,
    /// The measured step: the first action's start on any rank to the last action's end.
    pub measured: f64,
    /// `(measured − predicted) / predicted`.
    pub error: f64,
    /// The predicted whole step: the makespan and the profiled run's time before its first action
    /// and after its last (`overhead.head` and `overhead.tail` of the costs), seconds.
    pub predicted_step: f64,
    /// The measured whole step: the earliest start of a profiler step span (`ProfilerStep#N`) on
    /// any rank to the latest end of one, seconds (`None`: the traces have no step spans).
    pub measured_step: Option<f64>,
    /// Each rank.
    pub ranks: Vec<RankDiff>,
    /// The longest waits the plan did not predict, longest first (at most [`MAX_WAITS`]).
    pub waits: Vec<Wait>,
    /// The rank whose last action ends last.
    pub slowest_rank: u32,
    /// The action that took longest beyond its prediction.
    pub slowest_action: SlowAction,
}

/// One rank, predicted and measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankDiff {
    /// The rank.
    pub rank: u32,
    /// When its last action ends, predicted.
    pub predicted: f64,
    /// When its last action ends, measured.
    pub measured: f64,
    /// Its waits the plan did not predict, in total.
    pub unpredicted_wait: f64,
    /// On whom those waits were: the rank that sends an action's input, seconds each (the rank
    /// itself for a wait with no input from another rank).
    pub waited_on: Vec<WaitedOn>,
    /// Its peak of saved-activation bytes, predicted from the bytes measured per stage and
    /// micro-batch (`None`: the costs recorded none).
    pub predicted_peak_saved_bytes: Option<u64>,
    /// Its peak of saved-activation bytes in the step, as its `pw saved` records give it (`None`:
    /// the trace has none).
    pub measured_peak_saved_bytes: Option<u64>,
    /// Each action of its program, in order.
    pub actions: Vec<ActionDiff>,
}

/// Seconds a rank waited on another.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WaitedOn {
    /// The rank waited on.
    pub rank: u32,
    /// Seconds.
    pub seconds: f64,
}

/// One action, predicted and measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ActionDiff {
    /// Its cell.
    pub action: String,
    /// Predicted start.
    pub predicted_start: f64,
    /// Measured start.
    pub measured_start: f64,
    /// Predicted duration.
    pub predicted: f64,
    /// Measured duration.
    pub measured: f64,
}

/// A wait before an action that the plan did not predict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Wait {
    /// The waiting rank.
    pub rank: u32,
    /// The action it waited to start.
    pub action: String,
    /// Seconds beyond the predicted gap.
    pub seconds: f64,
    /// The rank that sends the action's input (`None`: its inputs are the rank's own).
    pub on: Option<u32>,
}

/// The action furthest beyond its prediction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlowAction {
    /// Its rank.
    pub rank: u32,
    /// Its cell.
    pub action: String,
    /// Predicted duration.
    pub predicted: f64,
    /// Measured duration.
    pub measured: f64,
}

/// The measured step the diff compares, as a timeline (seconds from the step's start), to draw
/// beside the predicted one.
pub fn measured_timeline(plan: &Plan, run: &Run, step: usize) -> Timeline {
    let t0 = step_start(run, step);
    let intervals: Vec<Vec<Interval>> = run
        .ranks
        .iter()
        .map(|r| {
            r.steps[step]
                .actions
                .iter()
                .map(|t| Interval {
                    start: (t.start - t0) * 1e-6,
                    end: (t.end() - t0) * 1e-6,
                })
                .collect()
        })
        .collect();
    let makespan = intervals
        .iter()
        .flatten()
        .map(|i| i.end)
        .fold(0.0, f64::max);
    let ranks: Vec<RankMetrics> = intervals
        .iter()
        .zip(plan.programs())
        .map(|(ivs, program)| metrics(ivs, program, makespan))
        .collect();
    let busy: f64 = ranks.iter().map(|m| m.busy).sum();
    let bubble_fraction = if makespan > 0.0 && !ranks.is_empty() {
        1.0 - busy / (ranks.len() as f64 * makespan)
    } else {
        0.0
    };
    Timeline {
        timing: Timing {
            intervals,
            makespan,
        },
        ranks,
        bubble_fraction,
        exposed_comm: 0.0,
    }
}

fn metrics(ivs: &[Interval], program: &[Action], makespan: f64) -> RankMetrics {
    let busy: f64 = ivs.iter().map(|i| i.end - i.start).sum();
    let mut longest = 0.0f64;
    let mut at = 0.0;
    for i in ivs {
        longest = longest.max(i.start - at);
        at = f64::max(at, i.end);
    }
    longest = longest.max(makespan - at);
    RankMetrics {
        busy,
        idle: (makespan - busy).max(0.0),
        longest_idle: longest,
        peak_activations: live_activations(program).peak,
        exposed_comm: 0.0,
    }
}

/// The start of step `step` on the run's clock, microseconds: its earliest action on any rank.
fn step_start(run: &Run, step: usize) -> f64 {
    run.ranks
        .iter()
        .flat_map(|r| r.steps[step].actions.iter().map(|t| t.start))
        .fold(f64::INFINITY, f64::min)
}

/// The run's median step by time (the lower middle of an even count).
pub fn median_step(run: &Run) -> usize {
    let mut times: Vec<(f64, usize)> = (0..run.steps)
        .map(|k| {
            let end = run
                .ranks
                .iter()
                .flat_map(|r| r.steps[k].actions.iter().map(|t| t.end()))
                .fold(f64::NEG_INFINITY, f64::max);
            (end - step_start(run, k), k)
        })
        .collect();
    times.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    times
        .get(times.len().saturating_sub(1) / 2)
        .map_or(0, |t| t.1)
}

/// The rank that sends an action's input, when another rank does (when the trace names no receive
/// before the action).
fn sender(plan: &Plan, rank: u32, action: &Action) -> Option<u32> {
    let from = |op: pipeweave_plan::Op| {
        let stage = match op.kind {
            pipeweave_plan::Kind::F => plan.prev_stage(op.stage),
            pipeweave_plan::Kind::B | pipeweave_plan::Kind::I => plan.next_stage(op.stage),
            pipeweave_plan::Kind::W => None,
        }?;
        plan.stage_rank(stage).filter(|&r| r != rank)
    };
    action.ops().find_map(from)
}

/// The rank whose transfer the trace shows rank `r` receiving, in step `step`, between its actions
/// `i − 1` and `i` (the one that ended last): what the wait before action `i` was for.
fn received_before(run: &Run, r: usize, step: usize, i: usize) -> Option<u32> {
    let before = i.checked_sub(1);
    run.ranks[r].steps[step]
        .others
        .iter()
        .filter(|o| o.after == before && !o.post)
        .filter_map(|o| match o.step {
            pipeweave_plan::Step::Recv { peer, .. } => Some((o.timed.end(), peer)),
            _ => None,
        })
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, peer)| peer)
}

/// The diff of `predicted` (the plan simulated) against the run's median step.
pub fn diff(
    name: &str,
    costs: &str,
    plan: &Plan,
    predicted: &Timeline,
    predicted_step: f64,
    predicted_peaks: Option<&[u64]>,
    run: &Run,
) -> (PlanDiff, Timeline) {
    let step = median_step(run);
    let measured = measured_timeline(plan, run, step);
    let threshold = WAIT_SHARE * measured.timing.makespan;
    let mut ranks = Vec::with_capacity(plan.ranks() as usize);
    let mut waits = Vec::new();
    let mut slowest: Option<SlowAction> = None;
    for (r, program) in plan.programs().iter().enumerate() {
        let rank = r as u32;
        let p = &predicted.timing.intervals[r];
        let m = &measured.timing.intervals[r];
        let mut actions = Vec::with_capacity(program.len());
        let mut on: Vec<(u32, f64)> = Vec::new();
        let mut total = 0.0;
        for (i, action) in program.iter().enumerate() {
            let cell = action.to_string();
            let (pi, mi) = (p[i], m[i]);
            let p_gap = pi.start - if i == 0 { 0.0 } else { p[i - 1].end };
            let m_gap = mi.start - if i == 0 { 0.0 } else { m[i - 1].end };
            let extra = m_gap - p_gap;
            if extra > threshold {
                let peer = received_before(run, r, step, i).or_else(|| sender(plan, rank, action));
                total += extra;
                let who = peer.unwrap_or(rank);
                match on.iter_mut().find(|(w, _)| *w == who) {
                    Some(slot) => slot.1 += extra,
                    None => on.push((who, extra)),
                }
                waits.push(Wait {
                    rank,
                    action: cell.clone(),
                    seconds: extra,
                    on: peer,
                });
            }
            let (pd, md) = (pi.end - pi.start, mi.end - mi.start);
            if slowest
                .as_ref()
                .is_none_or(|s| md - pd > s.measured - s.predicted)
            {
                slowest = Some(SlowAction {
                    rank,
                    action: cell.clone(),
                    predicted: pd,
                    measured: md,
                });
            }
            actions.push(ActionDiff {
                action: cell,
                predicted_start: pi.start,
                measured_start: mi.start,
                predicted: pd,
                measured: md,
            });
        }
        on.sort_by_key(|&(w, _)| w);
        ranks.push(RankDiff {
            rank,
            predicted: p.last().map_or(0.0, |i| i.end),
            measured: m.last().map_or(0.0, |i| i.end),
            unpredicted_wait: total,
            predicted_peak_saved_bytes: predicted_peaks.and_then(|p| p.get(r).copied()),
            measured_peak_saved_bytes: run.ranks[r].steps[step]
                .saved
                .iter()
                .flatten()
                .map(|s| s.peak)
                .max(),
            waited_on: on
                .into_iter()
                .map(|(rank, seconds)| WaitedOn { rank, seconds })
                .collect(),
            actions,
        });
    }
    waits.sort_by(|a, b| {
        b.seconds
            .total_cmp(&a.seconds)
            .then(a.rank.cmp(&b.rank))
            .then(a.action.cmp(&b.action))
    });
    waits.truncate(MAX_WAITS);
    let slowest_rank = ranks
        .iter()
        .max_by(|a, b| a.measured.total_cmp(&b.measured).then(b.rank.cmp(&a.rank)))
        .map_or(0, |r| r.rank);
    let whole: Option<Vec<_>> = run.ranks.iter().map(|r| r.steps[step].bounds).collect();
    let measured_whole = whole.filter(|b| !b.is_empty()).map(|b| {
        let start = b.iter().map(|t| t.start).fold(f64::INFINITY, f64::min);
        let end = b.iter().map(|t| t.end()).fold(f64::NEG_INFINITY, f64::max);
        (end - start) * 1e-6
    });
    let whole_predicted = predicted_step;
    let predicted_step = predicted.timing.makespan;
    let measured_step = measured.timing.makespan;
    let diff = PlanDiff {
        plan: name.to_owned(),
        costs: costs.to_owned(),
        step: step as u32 + 1,
        steps: run.steps as u32,
        predicted: predicted_step,
        measured: measured_step,
        error: if predicted_step > 0.0 {
            (measured_step - predicted_step) / predicted_step
        } else {
            0.0
        },
        predicted_step: whole_predicted,
        measured_step: measured_whole,
        ranks,
        waits,
        slowest_rank,
        slowest_action: slowest.unwrap_or(SlowAction {
            rank: 0,
            action: String::new(),
            predicted: 0.0,
            measured: 0.0,
        }),
    };
    (diff, measured)
}
