//! The figures of one simulated step on a spec's cluster: time, throughput, efficiency, bubbles,
//! exposed communication, memory per rank, and GPU-hours.
//!
//! Definitions (G = GPUs of the cluster, T = step time, N = tokens per step over all data-parallel
//! replicas = micro-batches × micro-batch tokens × dp):
//! - tokens/s = N / T;
//! - achieved fraction of peak = model FLOPs per token × N / (G × T × peak): the model FLOPs
//!   utilisation, counting F + I + W of every layer and the head once (no recomputation);
//! - GPU-hours per million tokens = G × T / 3600 / (N / 10⁶);
//! - GPU-hours lost to bubbles = that × bubble fraction (every data- and tensor-parallel GPU of a
//!   pipeline rank idles with it), per million tokens and over `training.total_tokens`.

use pipeweave_check::ValidPlan;
use pipeweave_diagnostics::Diagnostic;
use pipeweave_plan::Plan;
use pipeweave_sim::{Timeline, simulate};
use pipeweave_spec::{CostTable, MemoryUse, Spec, flops_per_token, rank_memory};
use serde::Serialize;

/// One pipeline rank's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct RankReport {
    /// The rank, 0-based.
    pub rank: u32,
    /// Seconds of the step the rank computes or waits on exposed communication.
    pub busy_s: f64,
    /// Seconds of the step the rank idles.
    pub idle_s: f64,
    /// Seconds of communication the rank cannot hide under computation.
    pub exposed_comm_s: f64,
    /// The most live activations (stage-micro-batch units) at any time.
    pub peak_activations: u32,
    /// Bytes on one GPU of the rank.
    pub memory: MemoryUse,
    /// Total memory / GPU memory.
    pub memory_fraction: f64,
    /// Whether the rank needs more memory than its GPU has.
    pub out_of_memory: bool,
}

/// Everything a simulated step tells about a spec's run.
///
/// Serialized (the `spec` object of `simulate --format json`) without the figures the simulation
/// already carries beside it: the plan's shape, the bubble fraction and the ranks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepReport {
    /// The spec's name.
    #[serde(rename = "name")]
    pub spec: String,
    /// The GPU's name.
    pub gpu: String,
    /// GPUs of the cluster.
    pub gpus: u64,
    /// Pipeline ranks P of the plan.
    #[serde(skip)]
    pub pipeline_ranks: u32,
    /// Stages of every pipeline.
    #[serde(skip)]
    pub stages_per_pipeline: u32,
    /// Model copies (pipelines in opposite directions hold one each).
    #[serde(skip)]
    pub model_copies: u32,
    /// Micro-batches per step.
    #[serde(skip)]
    pub microbatches: u32,
    /// The step's makespan in seconds.
    pub step_time_s: f64,
    /// Tokens of one step over all data-parallel replicas.
    pub tokens_per_step: f64,
    /// Tokens per second of the whole cluster.
    pub tokens_per_s: f64,
    /// Model FLOPs per token (F + I + W of every layer and the head, no recomputation).
    pub model_flops_per_token: f64,
    /// Model FLOPs utilisation.
    pub achieved_fraction_of_peak: f64,
    /// Share of rank-time spent idle.
    #[serde(skip)]
    pub bubble_fraction: f64,
    /// Exposed communication summed over the pipeline ranks, in seconds per step.
    pub exposed_comm_s: f64,
    /// Exposed communication as a share of all rank-time of the step.
    pub exposed_comm_fraction: f64,
    /// Usable bytes of one GPU.
    pub gpu_memory_bytes: f64,
    /// True when any rank needs more memory than its GPU has.
    pub out_of_memory: bool,
    /// GPU-hours per million tokens.
    pub gpu_hours_per_million_tokens: f64,
    /// The part of them the bubbles cost.
    pub bubble_gpu_hours_per_million_tokens: f64,
    /// Tokens of the whole run (`training.total_tokens`).
    pub run_tokens: f64,
    /// Steps of the whole run.
    pub run_steps: f64,
    /// GPU-hours of the whole run.
    pub run_gpu_hours: f64,
    /// GPU-hours of the whole run lost to bubbles.
    pub bubble_gpu_hours_run: f64,
    /// Every pipeline rank's figures.
    #[serde(skip)]
    pub ranks: Vec<RankReport>,
}

impl StepReport {
    /// Computes the figures of `timeline`, a simulation of `plan` under `costs` (built from `spec`).
    pub fn new(spec: &Spec, plan: &Plan, costs: &CostTable, timeline: &Timeline) -> StepReport {
        let gpus = spec.cluster.gpus();
        let g = gpus as f64;
        let step = timeline.timing.makespan;
        let m = plan.num_microbatches();
        let tokens =
            f64::from(m) * spec.training.tokens_per_microbatch() * f64::from(spec.parallelism.dp);
        let per_token = flops_per_token(spec);
        let peak = spec.cluster.peak_flops();
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        let gpu_mem = spec.cluster.memory_bytes();
        let ranks: Vec<RankReport> = timeline
            .ranks
            .iter()
            .enumerate()
            .map(|(r, rm)| {
                let memory = rank_memory(spec, costs, plan, r as u32, rm.peak_activations);
                let fraction = memory.total() / gpu_mem;
                RankReport {
                    rank: r as u32,
                    busy_s: rm.busy,
                    idle_s: rm.idle,
                    exposed_comm_s: rm.exposed_comm,
                    peak_activations: rm.peak_activations,
                    memory,
                    memory_fraction: fraction,
                    out_of_memory: fraction > 1.0,
                }
            })
            .collect();
        let gpu_hours_per_mtok = ratio(g * step / 3600.0, tokens / 1e6);
        let run_tokens = spec.training.total_tokens;
        let run_steps = ratio(run_tokens, tokens);
        StepReport {
            spec: spec.name.clone(),
            gpu: spec.cluster.gpu.clone(),
            gpus,
            pipeline_ranks: plan.ranks(),
            stages_per_pipeline: plan.stages_per_pipeline(),
            model_copies: plan.model_copies(),
            microbatches: m,
            step_time_s: step,
            tokens_per_step: tokens,
            tokens_per_s: ratio(tokens, step),
            model_flops_per_token: per_token,
            achieved_fraction_of_peak: ratio(per_token * tokens, g * step * peak),
            bubble_fraction: timeline.bubble_fraction,
            exposed_comm_s: timeline.exposed_comm,
            exposed_comm_fraction: ratio(timeline.exposed_comm, f64::from(plan.ranks()) * step),
            gpu_memory_bytes: gpu_mem,
            out_of_memory: ranks.iter().any(|r| r.out_of_memory),
            ranks,
            gpu_hours_per_million_tokens: gpu_hours_per_mtok,
            bubble_gpu_hours_per_million_tokens: gpu_hours_per_mtok * timeline.bubble_fraction,
            run_tokens,
            run_steps,
            run_gpu_hours: gpu_hours_per_mtok * run_tokens / 1e6,
            bubble_gpu_hours_run: gpu_hours_per_mtok * timeline.bubble_fraction * run_tokens / 1e6,
        }
    }
}

/// A plan evaluated on a spec: its costs, its simulated timeline and the step's figures.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// The spec's costs for the plan's placement.
    pub costs: CostTable,
    /// The simulated step.
    pub timeline: Timeline,
    /// The step's figures.
    pub report: StepReport,
}

/// Builds the cost table, simulates the plan and reports: the whole pipeline from a spec and a plan.
pub fn evaluate(spec: &Spec, plan: &ValidPlan) -> Result<Evaluation, Vec<Diagnostic>> {
    let costs = CostTable::new(spec, plan)?;
    let timeline = simulate(plan, &costs).map_err(|e| vec![Diagnostic::error(e.to_string())])?;
    let report = StepReport::new(spec, plan, &costs, &timeline);
    Ok(Evaluation {
        costs,
        timeline,
        report,
    })
}

/// The plan `name` on `spec` as `simulate --spec` and `export --spec` take it: checked against
/// the spec (P, M, the model's parts; a mismatch points at the spec's key), evaluated, and every
/// figure of the report and the timeline finite ([`crate::finite`]).
pub fn evaluate_on_spec(
    name: &str,
    spec: &Spec,
    plan: &ValidPlan,
) -> Result<Evaluation, Vec<Diagnostic>> {
    let problems = spec.check_plan(plan);
    if !problems.is_empty() {
        return Err(problems);
    }
    let e = evaluate(spec, plan)?;
    let one = |m: String| vec![Diagnostic::error(m)];
    crate::finite(name, crate::non_finite(&e.report)).map_err(one)?;
    let sim = crate::Simulation::new(name, plan, &e.timeline, None);
    crate::finite(name, crate::non_finite(&sim)).map_err(one)?;
    Ok(e)
}

/// Every diagnostic's message, joined by `; `: a failure in one line.
pub(crate) fn messages(diags: &[Diagnostic]) -> String {
    diags
        .iter()
        .map(|d| d.message.clone())
        .collect::<Vec<_>>()
        .join("; ")
}
