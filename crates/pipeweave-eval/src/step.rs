//! The figures of one simulated step on a spec's cluster: time and where it goes, throughput,
//! efficiency, exposed communication, bytes moved, memory per rank, and GPU-hours.
//!
//! Definitions (G = GPUs of the cluster, T = step time, N = tokens per step over all data-parallel
//! replicas = micro-batches × micro-batch tokens × dp):
//! - T: the simulated pipeline, then the data-parallel synchronisation and the optimizer
//!   ([`crate::breakdown`]);
//! - tokens/s = N / T;
//! - achieved fraction of peak = model FLOPs per token × N / (G × T × peak of the activation
//!   format): the model FLOPs utilisation, counting F + I + W of every layer (causal attention)
//!   and the head once, no recomputation;
//! - bubble fraction = the ranks' mean bubble / T;
//! - exposed communication of a rank: its exposed tensor-parallel, all-to-all, point-to-point and
//!   data-parallel time; mean and worst over the pipeline ranks, and their sum over the ranks;
//! - GPU-hours per million tokens = G × T / 3600 / (N / 10⁶);
//! - GPU-hours lost to bubbles = that × bubble fraction (every data- and tensor-parallel GPU of a
//!   pipeline rank idles with it), per million tokens and over `training.total_tokens`.

use crate::breakdown::{Breakdown, Volumes, mean_volumes, step, total_volumes};
use crate::fit::{Fitted, SpecRule, fit};
use pipeweave_check::ValidPlan;
use pipeweave_cost::{CostTable, MemoryUse, flops_per_token, rank_memory};
use pipeweave_diagnostics::Diagnostic;
use pipeweave_plan::Plan;
use pipeweave_sim::{Timeline, simulate};
use pipeweave_spec::Spec;
use serde::Serialize;

/// One pipeline rank's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct RankReport {
    /// The rank, 0-based.
    pub rank: u32,
    /// Where the rank's step goes.
    pub breakdown: Breakdown,
    /// Bytes one GPU of the rank sends per step.
    pub volumes: Volumes,
    /// The most live activations (stage-micro-batch units) at any time.
    pub peak_activations: u32,
    /// Bytes on one GPU of the rank.
    pub memory: MemoryUse,
    /// Total memory / the GPU's memory as the framework sees it.
    pub memory_fraction: f64,
    /// Whether the rank needs more than the GPU's memory less the headroom.
    pub out_of_memory: bool,
}

impl RankReport {
    /// Communication the rank cannot hide, in seconds per step.
    pub fn exposed_comm_s(&self) -> f64 {
        self.breakdown.exposed_comm()
    }
}

/// Bytes of the most loaded GPU, by what holds them.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct MemoryBreakdown {
    /// Weights.
    pub weights_bytes: f64,
    /// Gradients (accumulated, or their shard).
    pub gradients_bytes: f64,
    /// Optimizer state and master weights.
    pub optimizer_bytes: f64,
    /// Kept activations, with the working set of a recomputed layer.
    pub activations_bytes: f64,
    /// Temporary buffers: the tensor-parallel all-gather's output, boundary activations in flight.
    pub buffers_bytes: f64,
    /// The CUDA context and the communication buffers.
    pub reserve_bytes: f64,
    /// The sum of the terms.
    pub total_bytes: f64,
}

impl MemoryBreakdown {
    /// The bytes of `m`, by what holds them.
    pub fn of(m: &MemoryUse) -> MemoryBreakdown {
        MemoryBreakdown {
            weights_bytes: m.params,
            gradients_bytes: m.grads,
            optimizer_bytes: m.optimizer,
            activations_bytes: m.activations,
            buffers_bytes: m.buffers,
            reserve_bytes: m.reserve,
            total_bytes: m.total(),
        }
    }
}

/// Everything a simulated step tells about a spec's run.
///
/// Serialized (the `spec` object of `simulate --format json`) without the figures the simulation
/// already carries beside it: the plan's shape and the ranks.
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
    /// Layers of each model part (position in a pipeline): the split the step ran with. The
    /// first part also holds the embedding, the last the output head.
    pub layers_per_part: Vec<u64>,
    /// Each part's activation recomputation (`none`, `selective`, `full`), as its layers.
    pub recompute_per_part: Vec<&'static str>,
    /// Multi-token prediction modules after the last layer (in the last part).
    #[serde(skip)]
    pub mtp_depth: u64,
    /// The step in seconds: the pipeline, then synchronisation and optimizer.
    pub step_time_s: f64,
    /// The simulated pipeline's makespan in seconds (the step before its synchronisation).
    pub pipeline_makespan_s: f64,
    /// Where the step goes, the mean over the pipeline ranks (the terms add up to the step time).
    pub breakdown_per_rank_mean_s: Breakdown,
    /// Share of rank-time spent waiting for other ranks.
    pub bubble_fraction: f64,
    /// Exposed communication of one rank per step: the mean and the worst over the pipeline ranks.
    pub exposed_comm_per_rank_mean_s: f64,
    /// The worst exposed communication of one rank per step.
    pub exposed_comm_per_rank_max_s: f64,
    /// Exposed communication summed over the pipeline ranks, per step.
    pub exposed_comm_total_s: f64,
    /// Bytes one GPU sends per step, by kind (the mean over the GPUs).
    pub volume_per_gpu_bytes: Volumes,
    /// Bytes the whole cluster sends per step, by kind.
    pub volume_total_bytes: Volumes,
    /// Tokens of one step over all data-parallel replicas.
    pub tokens_per_step: f64,
    /// Tokens per second of the whole cluster.
    pub tokens_per_s: f64,
    /// Model FLOPs per token (F + I + W of every layer and the head, no recomputation).
    pub model_flops_per_token: f64,
    /// Model FLOPs utilisation against the peak of the activation format.
    pub achieved_fraction_of_peak: f64,
    /// Memory of one GPU as the framework sees it.
    pub gpu_memory_bytes: f64,
    /// What a plan may use of it: less the headroom (`training.memory_headroom`).
    pub memory_limit_bytes: f64,
    /// The most loaded GPU's memory.
    pub memory_per_gpu: MemoryBreakdown,
    /// Its total over the GPU's memory.
    pub memory_fraction: f64,
    /// True when any rank needs more than the limit.
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
        let s = step(spec, plan, costs, &timeline.timing);
        let time = s.time;
        let m = plan.num_microbatches();
        let tokens =
            f64::from(m) * spec.training.tokens_per_microbatch() * f64::from(spec.parallelism.dp);
        let per_token = flops_per_token(spec);
        let peak = spec
            .cluster
            .hardware
            .peak_flops(spec.training.activation_dtype)
            .unwrap_or(0.0);
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
        let capacity = spec.cluster.memory_bytes();
        let limit = spec.memory_limit_bytes();
        let ranks: Vec<RankReport> = timeline
            .ranks
            .iter()
            .zip(&s.ranks)
            .enumerate()
            .map(|(r, (rm, rs))| {
                let memory = rank_memory(spec, costs, plan, r as u32, rm.peak_activations);
                RankReport {
                    rank: r as u32,
                    breakdown: rs.breakdown,
                    volumes: rs.volumes,
                    peak_activations: rm.peak_activations,
                    memory_fraction: ratio(memory.total(), capacity),
                    out_of_memory: memory.total() > limit,
                    memory,
                }
            })
            .collect();
        let breakdowns: Vec<Breakdown> = ranks.iter().map(|r| r.breakdown).collect();
        let mean = Breakdown::mean(&breakdowns);
        let exposed: Vec<f64> = ranks.iter().map(RankReport::exposed_comm_s).collect();
        let total_exposed = exposed.iter().fold(0.0, |a, x| a + x);
        let worst = ranks
            .iter()
            .max_by(|a, b| a.memory.total().total_cmp(&b.memory.total()))
            .map(|r| r.memory)
            .unwrap_or_default();
        let bubble = ratio(mean.bubble_s, time);
        let gpu_hours_per_mtok = ratio(g * time / 3600.0, tokens / 1e6);
        let run_tokens = spec.training.total_tokens;
        StepReport {
            spec: spec.name.clone(),
            gpu: spec.cluster.gpu_name().to_owned(),
            gpus,
            layers_per_part: spec.parallelism.layers_per_stage.clone(),
            recompute_per_part: spec
                .training
                .recompute_parts(spec.parallelism.layers_per_stage.len())
                .iter()
                .map(|r| r.name())
                .collect(),
            mtp_depth: spec.model.mtp_depth,
            pipeline_ranks: plan.ranks(),
            stages_per_pipeline: plan.stages_per_pipeline(),
            model_copies: plan.model_copies(),
            microbatches: m,
            step_time_s: time,
            pipeline_makespan_s: timeline.timing.makespan,
            breakdown_per_rank_mean_s: mean,
            bubble_fraction: bubble,
            exposed_comm_per_rank_mean_s: ratio(total_exposed, exposed.len() as f64),
            exposed_comm_per_rank_max_s: exposed.iter().copied().fold(0.0, f64::max),
            exposed_comm_total_s: total_exposed,
            volume_per_gpu_bytes: mean_volumes(&s),
            volume_total_bytes: total_volumes(spec, &s),
            tokens_per_step: tokens,
            tokens_per_s: ratio(tokens, time),
            model_flops_per_token: per_token,
            achieved_fraction_of_peak: ratio(per_token * tokens, g * time * peak),
            gpu_memory_bytes: capacity,
            memory_limit_bytes: limit,
            memory_per_gpu: MemoryBreakdown::of(&worst),
            memory_fraction: ratio(worst.total(), capacity),
            out_of_memory: ranks.iter().any(|r| r.out_of_memory),
            ranks,
            gpu_hours_per_million_tokens: gpu_hours_per_mtok,
            bubble_gpu_hours_per_million_tokens: gpu_hours_per_mtok * bubble,
            run_tokens,
            run_steps: ratio(run_tokens, tokens),
            run_gpu_hours: gpu_hours_per_mtok * run_tokens / 1e6,
            bubble_gpu_hours_run: gpu_hours_per_mtok * bubble * run_tokens / 1e6,
        }
    }
}

/// A plan evaluated on a spec: its costs, its simulated timeline and the step's figures.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// The spec's costs for the plan's placement.
    pub costs: CostTable,
    /// The simulated pipeline.
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

/// The plan `name` on `spec` as every command with `--spec` takes it: the spec fitted to the
/// plan's shape by `rule` ([`crate::fit`]; under `rule.strict` a mismatch is refused at the
/// spec's keys), evaluated, and every figure of the
/// report finite ([`crate::finite`]). Returns the evaluation and how the spec was fitted.
pub fn evaluate_on_spec(
    name: &str,
    spec: &Spec,
    plan: &ValidPlan,
    rule: SpecRule,
) -> Result<(Evaluation, Fitted), Vec<Diagnostic>> {
    let strict = rule.strict;
    let fitted = fit(spec, plan, rule).map_err(|mut problems| {
        if !strict {
            for d in &mut problems {
                d.message = format!(
                    "spec {} cannot be fitted to {name}: {}",
                    spec.name, d.message
                );
            }
        }
        problems
    })?;
    let e = evaluate(&fitted.spec, plan)?;
    crate::finite(name, &e.report).map_err(|d| vec![d])?;
    Ok((e, fitted))
}

/// Every diagnostic's message, joined by `; `: a failure in one line.
pub(crate) fn messages(diags: &[Diagnostic]) -> String {
    diags
        .iter()
        .map(|d| d.message.clone())
        .collect::<Vec<_>>()
        .join("; ")
}
