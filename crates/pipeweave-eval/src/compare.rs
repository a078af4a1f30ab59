//! Comparison of schedules on one spec: each schedule's figures (time, bubbles, idle, memory,
//! communication, throughput, GPU-hours) on the spec adapted to its plan, and its traits.
//!
//! Schedules that could not run stay in the comparison with the reason, so a reader sees why a
//! row has no figures. The caller builds the plans; this module only evaluates them.

use crate::breakdown::{Breakdown, Volumes};
use crate::fit::{Change, SpecRule, fit};
use crate::step::{MemoryBreakdown, RankReport, StepReport, evaluate};
use pipeweave_calibrate::MeasuredCosts;
use pipeweave_check::ValidPlan;
use pipeweave_plan::{Action, Kind, Plan};
use pipeweave_sim::UniformCosts;
use pipeweave_spec::Spec;
use serde::{Serialize, Serializer};

/// One schedule's figures on the spec's cluster (seconds, bytes).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figures {
    /// The step in seconds: the pipeline, then synchronisation and optimizer.
    pub step_time_s: f64,
    /// Layers of each model part: the split the step ran with.
    pub layers_per_part: Vec<u64>,
    /// Each part's activation recomputation, as its layers.
    pub recompute_per_part: Vec<&'static str>,
    /// The makespan with unit costs (F = I = W = 1), when asked for.
    pub makespan_units: Option<f64>,
    /// Share of rank-time spent waiting for other ranks.
    pub bubble_fraction: f64,
    /// The most and the least time a rank waits in one step (bubble and point-to-point).
    pub idle_worst_s: f64,
    /// The least time a rank waits in one step.
    pub idle_best_s: f64,
    /// The most live activations of any rank (stage-micro-batch units).
    pub peak_activations: u32,
    /// The largest activation bytes of any GPU.
    pub activation_bytes: f64,
    /// The largest weight bytes of any GPU (every stage it hosts: replicas count).
    pub weight_bytes: f64,
    /// The largest total of any GPU.
    pub memory_bytes: f64,
    /// That GPU's memory by what holds it.
    pub memory_per_gpu: MemoryBreakdown,
    /// Its total over the GPU's memory.
    pub memory_fraction: f64,
    /// Memory of one GPU as the framework sees it, and what a plan may use of it.
    pub gpu_memory_bytes: f64,
    /// What a plan may use of one GPU's memory.
    pub memory_limit_bytes: f64,
    /// Whether any GPU needs more than the limit.
    pub out_of_memory: bool,
    /// Exposed communication of one pipeline rank per step: mean and worst over the ranks.
    pub exposed_comm_per_rank_mean_s: f64,
    /// The worst exposed communication of one pipeline rank per step.
    pub exposed_comm_per_rank_max_s: f64,
    /// Exposed communication summed over the pipeline ranks.
    pub exposed_comm_total_s: f64,
    /// Where the step goes, the mean over the pipeline ranks.
    pub breakdown_per_rank_mean_s: Breakdown,
    /// Bytes one GPU sends per step, by kind (the mean over the GPUs).
    pub volume_per_gpu_bytes: Volumes,
    /// Tokens per second of the whole cluster.
    pub tokens_per_s: f64,
    /// GPU-hours per million tokens.
    pub gpu_hours_per_million_tokens: f64,
    /// The part of them the bubbles cost.
    pub bubble_gpu_hours_per_million_tokens: f64,
    /// Under measured costs (`--costs-from`), what they predict for this plan.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured: Option<MeasuredFigures>,
}

/// A plan's step under the costs measured in a profiled run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MeasuredFigures {
    /// The simulated makespan under those costs, in seconds.
    pub makespan_s: f64,
    /// The predicted step: the makespan and the profiled run's time before its first action and
    /// after its last (`overhead.head`, `overhead.tail` of the costs file), in seconds.
    pub step_time_s: f64,
    /// The largest predicted peak of saved-activation bytes of any rank, when the run recorded
    /// saved bytes.
    pub peak_saved_bytes: Option<u64>,
}

impl Figures {
    /// The figures of a step's report (and optionally the unit-cost makespan of the same plan).
    pub fn from_report(report: &StepReport, makespan_units: Option<f64>) -> Figures {
        let max = |f: &dyn Fn(&RankReport) -> f64| report.ranks.iter().map(f).fold(0.0, f64::max);
        let idle = |r: &RankReport| r.breakdown.bubble_s + r.breakdown.exposed_p2p_s;
        Figures {
            step_time_s: report.step_time_s,
            layers_per_part: report.layers_per_part.clone(),
            recompute_per_part: report.recompute_per_part.clone(),
            makespan_units,
            bubble_fraction: report.bubble_fraction,
            idle_worst_s: max(&idle),
            idle_best_s: report
                .ranks
                .iter()
                .map(idle)
                .fold(f64::INFINITY, f64::min)
                .min(report.step_time_s),
            peak_activations: report
                .ranks
                .iter()
                .map(|r| r.peak_activations)
                .max()
                .unwrap_or(0),
            activation_bytes: max(&|r| r.memory.activations),
            weight_bytes: max(&|r| r.memory.params),
            memory_bytes: max(&|r| r.memory.total()),
            memory_per_gpu: report.memory_per_gpu,
            memory_fraction: report.memory_fraction,
            gpu_memory_bytes: report.gpu_memory_bytes,
            memory_limit_bytes: report.memory_limit_bytes,
            out_of_memory: report.out_of_memory,
            exposed_comm_per_rank_mean_s: report.exposed_comm_per_rank_mean_s,
            exposed_comm_per_rank_max_s: report.exposed_comm_per_rank_max_s,
            exposed_comm_total_s: report.exposed_comm_total_s,
            breakdown_per_rank_mean_s: report.breakdown_per_rank_mean_s,
            volume_per_gpu_bytes: report.volume_per_gpu_bytes,
            tokens_per_s: report.tokens_per_s,
            gpu_hours_per_million_tokens: report.gpu_hours_per_million_tokens,
            bubble_gpu_hours_per_million_tokens: report.bubble_gpu_hours_per_million_tokens,
            measured: None,
        }
    }
}

/// What a schedule is, read from its plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Traits {
    /// Model copies (pipelines in opposite directions hold one each).
    pub model_copies: u32,
    /// Pipelines of the plan.
    pub pipelines: u32,
    /// Stages (model parts, replicas counted) the busiest rank hosts over all pipelines: 1 for
    /// 1F1B, v for interleaved, 2 for Chimera and DualPipe (one per pipeline) and DualPipeV.
    pub stages_per_rank: u32,
    /// The plan has weight-gradient (W) actions: backwards split into I and W.
    pub weight_split: bool,
    /// The plan has overlapped F&B pairs.
    pub overlap: bool,
}

impl Traits {
    /// The traits of `plan`.
    pub fn of(plan: &Plan) -> Traits {
        let actions = || plan.programs().iter().flatten();
        let stages_per_rank = (0..plan.ranks())
            .map(|r| plan.stages_on_rank(r).len() as u32)
            .max()
            .unwrap_or(0);
        Traits {
            model_copies: plan.model_copies(),
            pipelines: plan.pipelines().len() as u32,
            stages_per_rank,
            weight_split: actions().any(|a| match a {
                Action::One(op) => op.kind == Kind::W,
                Action::Pair { f, b } => f.kind == Kind::W || b.kind == Kind::W,
            }),
            overlap: actions().any(|a| matches!(a, Action::Pair { .. })),
        }
    }
}

/// One row: a schedule, what it requires, and its figures or why it has none.
///
/// Serialized with `figures` or `error` in place of the outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// As the user named it (`1f1b`, `plugin:dualpipe`, `my.weave`, a plan file).
    pub schedule: String,
    /// What the schedule requires of P and M, in words (empty when unknown).
    pub requires: String,
    /// The figures, or the reason the schedule did not run (its own error message).
    #[serde(flatten, serialize_with = "outcome")]
    pub outcome: Result<Figures, String>,
    /// From the plan, when one was built.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traits: Option<Traits>,
    /// How the spec was adapted to this plan (e.g. the model cut into more parts).
    pub notes: Vec<String>,
}

/// A row's outcome as one entry: `"figures": {...}` or `"error": "..."`.
fn outcome<S: Serializer>(outcome: &Result<Figures, String>, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(1))?;
    match outcome {
        Ok(figures) => map.serialize_entry("figures", figures)?,
        Err(reason) => map.serialize_entry("error", reason)?,
    }
    map.end()
}

/// A comparison of schedules on one spec.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The spec's name.
    pub spec: String,
    /// Whether the spec is the built-in default.
    pub default_spec: bool,
    /// GPUs of the cluster.
    pub gpus: u64,
    /// The GPU's name.
    pub gpu: String,
    /// P the schedules were built for.
    pub ranks: u32,
    /// M the schedules were built for.
    pub microbatches: u32,
    /// The spec's own micro-batches per step (M may differ).
    pub spec_microbatches: u32,
    /// Whether the unit-cost makespan is evaluated (and shown).
    #[serde(skip)]
    pub units: bool,
    /// The durations of that makespan when not unit costs (`--costs`).
    #[serde(skip)]
    pub costs: Option<UniformCosts>,
    /// How the spec meets each plan.
    #[serde(skip)]
    pub rule: SpecRule,
    /// The file of the measured costs every row is also priced with (`--costs-from`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub costs_from: Option<String>,
    /// Those costs.
    #[serde(skip)]
    pub measured: Option<Box<pipeweave_calibrate::Calibration>>,
    /// One row per schedule, in the order given.
    pub rows: Vec<Row>,
}

impl Comparison {
    /// An empty comparison on `spec` for schedules built with P = `ranks`, M = `microbatches`.
    pub fn new(
        spec: &Spec,
        default_spec: bool,
        ranks: u32,
        microbatches: u32,
        units: bool,
    ) -> Self {
        Comparison {
            spec: spec.name.clone(),
            default_spec,
            gpus: spec.cluster.gpus(),
            gpu: spec.cluster.gpu_name().to_owned(),
            ranks,
            microbatches,
            spec_microbatches: spec.training.microbatches,
            units,
            costs: None,
            rule: SpecRule::default(),
            costs_from: None,
            measured: None,
            rows: Vec::new(),
        }
    }

    /// How many rows have figures.
    pub fn simulated(&self) -> usize {
        self.rows.iter().filter(|r| r.outcome.is_ok()).count()
    }

    /// Adds a row for `schedule`: its plan (or the reason there is none) simulated on the spec
    /// fitted to the plan's shape by the comparison's rule ([`fit`]).
    pub fn push(
        &mut self,
        spec: &Spec,
        schedule: impl Into<String>,
        requires: impl Into<String>,
        plan: Result<&ValidPlan, String>,
    ) {
        let units = self.units.then_some(self.costs.unwrap_or_default());
        let valid = plan.as_ref().ok().copied();
        let mut row = row(
            spec,
            self.rule.clone(),
            schedule,
            requires,
            plan,
            units.as_ref(),
        );
        if let (Some(costs), Some(plan), Ok(figures)) = (&self.measured, valid, &mut row.outcome) {
            match MeasuredCosts::for_plan(costs, plan) {
                Ok((model, notes)) => {
                    if let Ok(t) = pipeweave_sim::simulate(plan, &model) {
                        figures.measured = Some(MeasuredFigures {
                            makespan_s: t.timing.makespan,
                            step_time_s: model.step_time(&t.timing),
                            peak_saved_bytes: pipeweave_calibrate::saved_peaks(costs, plan)
                                .and_then(|(peaks, _)| peaks.into_iter().max()),
                        });
                    }
                    row.notes
                        .extend(notes.into_iter().map(|n| format!("measured costs: {n}")));
                }
                Err(reason) => row.notes.push(format!(
                    "the measured costs cannot price this plan: {reason}"
                )),
            }
        }
        self.rows.push(row);
    }
}

/// One row of a comparison: `plan` simulated on `spec` adapted to it, with the unit-cost makespan
/// when `units` is set.
pub fn evaluate_row(
    spec: &Spec,
    schedule: impl Into<String>,
    requires: impl Into<String>,
    plan: Result<&ValidPlan, String>,
    units: bool,
) -> Row {
    let costs = units.then(UniformCosts::default);
    row(
        spec,
        SpecRule::default(),
        schedule,
        requires,
        plan,
        costs.as_ref(),
    )
}

/// One row: `plan` on `spec` fitted by `rule`, with the makespan under `units` when given. The
/// notes say how the spec was fitted, but not M, which the comparison's title gives once.
fn row(
    spec: &Spec,
    rule: SpecRule,
    schedule: impl Into<String>,
    requires: impl Into<String>,
    plan: Result<&ValidPlan, String>,
    units: Option<&UniformCosts>,
) -> Row {
    let mut row = Row {
        schedule: schedule.into(),
        requires: requires.into(),
        outcome: Err(String::new()),
        traits: None,
        notes: Vec::new(),
    };
    let plan = match plan {
        Ok(plan) => plan,
        Err(reason) => {
            row.outcome = Err(reason);
            return row;
        }
    };
    row.traits = Some(Traits::of(plan));
    let fitted = match fit(spec, plan, rule) {
        Ok(x) => x,
        Err(diags) => {
            row.outcome = Err(crate::step::messages(&diags));
            return row;
        }
    };
    row.notes = fitted
        .changes
        .iter()
        .filter(|c| !matches!(c, Change::Microbatches { .. }))
        .map(ToString::to_string)
        .collect();
    row.outcome = match evaluate(&fitted.spec, plan) {
        Ok(e) => {
            let makespan_units = units.and_then(|c| {
                pipeweave_sim::simulate(plan, c)
                    .ok()
                    .map(|t| t.timing.makespan)
            });
            Ok(Figures::from_report(&e.report, makespan_units))
        }
        Err(diags) => Err(crate::step::messages(&diags)),
    };
    row
}
