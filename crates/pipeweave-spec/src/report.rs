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

use crate::cost::CostTable;
use crate::memory::{MemoryUse, rank_memory};
use crate::model;
use crate::spec::Spec;
use pipeweave_diagnostics::Diagnostic;
use pipeweave_plan::Plan;
use pipeweave_sim::{Timeline, simulate};
use std::fmt;

/// One pipeline rank's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct RankReport {
    pub rank: u32,
    pub busy_s: f64,
    pub idle_s: f64,
    pub exposed_comm_s: f64,
    pub peak_activations: u32,
    pub memory: MemoryUse,
    /// Total memory / GPU memory.
    pub memory_fraction: f64,
    pub out_of_memory: bool,
}

/// Everything a simulated step tells about a spec's run.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub spec: String,
    pub gpu: String,
    pub gpus: u64,
    pub pipeline_ranks: u32,
    pub stages_per_pipeline: u32,
    pub model_copies: u32,
    pub microbatches: u32,
    pub step_time_s: f64,
    pub tokens_per_step: f64,
    pub tokens_per_s: f64,
    pub model_flops_per_token: f64,
    pub achieved_fraction_of_peak: f64,
    pub bubble_fraction: f64,
    /// Exposed communication summed over the pipeline ranks, in seconds per step.
    pub exposed_comm_s: f64,
    /// Exposed communication as a share of all rank-time of the step.
    pub exposed_comm_fraction: f64,
    pub gpu_memory_bytes: f64,
    pub ranks: Vec<RankReport>,
    /// True when any rank needs more memory than its GPU has.
    pub out_of_memory: bool,
    pub gpu_hours_per_million_tokens: f64,
    pub bubble_gpu_hours_per_million_tokens: f64,
    pub run_tokens: f64,
    pub run_steps: f64,
    pub run_gpu_hours: f64,
    pub bubble_gpu_hours_run: f64,
}

impl Report {
    /// Computes the figures of `timeline`, a simulation of `plan` under `costs` (built from `spec`).
    pub fn new(spec: &Spec, plan: &Plan, costs: &CostTable, timeline: &Timeline) -> Report {
        let gpus = spec.cluster.gpus();
        let g = gpus as f64;
        let step = timeline.timing.makespan;
        let m = plan.num_microbatches();
        let tokens =
            f64::from(m) * spec.training.tokens_per_microbatch() * f64::from(spec.parallelism.dp);
        let per_token = model::flops_per_token(spec);
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
        Report {
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

/// Builds the cost table, simulates the plan and reports: the whole pipeline from a spec and a plan.
pub fn evaluate(
    spec: &Spec,
    plan: &Plan,
) -> Result<(CostTable, Timeline, Report), Vec<Diagnostic>> {
    let costs = CostTable::new(spec, plan)?;
    let timeline = simulate(plan, &costs).map_err(|e| vec![Diagnostic::error(e.to_string())])?;
    let report = Report::new(spec, plan, &costs, &timeline);
    Ok((costs, timeline, report))
}

/// Bytes in GiB (2³⁰), for people.
pub fn gib(bytes: f64) -> f64 {
    bytes / (1024.0 * 1024.0 * 1024.0)
}

/// A number with three significant digits and an SI suffix (k, M, G, T).
fn si(x: f64) -> String {
    let (v, suffix) = if x.abs() >= 1e12 {
        (x / 1e12, "T")
    } else if x.abs() >= 1e9 {
        (x / 1e9, "G")
    } else if x.abs() >= 1e6 {
        (x / 1e6, "M")
    } else if x.abs() >= 1e3 {
        (x / 1e3, "k")
    } else {
        (x, "")
    };
    format!("{}{suffix}", sig3(v))
}

fn sig3(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.3} s")
    } else {
        format!("{:.2} ms", s * 1e3)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "spec {}: {} × {}, {} pipeline ranks, {} stages per pipeline, {} micro-batches, {}",
            self.spec,
            self.gpus,
            self.gpu,
            self.pipeline_ranks,
            self.stages_per_pipeline,
            self.microbatches,
            if self.model_copies == 1 {
                "one model copy".to_string()
            } else {
                format!("{} model copies", self.model_copies)
            }
        )?;
        writeln!(f, "step time            {}", seconds(self.step_time_s))?;
        writeln!(f, "tokens per step      {}", si(self.tokens_per_step))?;
        writeln!(f, "tokens/s             {}", si(self.tokens_per_s))?;
        writeln!(
            f,
            "achieved of peak     {:.1}% ({} FLOPs per token)",
            self.achieved_fraction_of_peak * 100.0,
            si(self.model_flops_per_token)
        )?;
        writeln!(
            f,
            "bubble fraction      {:.1}%",
            self.bubble_fraction * 100.0
        )?;
        writeln!(
            f,
            "exposed comm         {} per step over all ranks ({:.1}% of rank-time)",
            seconds(self.exposed_comm_s),
            self.exposed_comm_fraction * 100.0
        )?;
        writeln!(
            f,
            "GPU-hours / M tokens {:.4} (bubbles {:.4})",
            self.gpu_hours_per_million_tokens, self.bubble_gpu_hours_per_million_tokens
        )?;
        writeln!(
            f,
            "whole run            {} tokens, {} steps, {} GPU-hours ({} lost to bubbles)",
            si(self.run_tokens),
            si(self.run_steps),
            si(self.run_gpu_hours),
            si(self.bubble_gpu_hours_run)
        )?;
        writeln!(
            f,
            "memory per GPU in GiB, of {:.1} (activations: peak live micro-batch stages)",
            gib(self.gpu_memory_bytes)
        )?;
        writeln!(f, "  rank  params   grads   optim   activ  (peak)   total")?;
        for r in &self.ranks {
            writeln!(
                f,
                "{:>6} {:>7.1} {:>7.1} {:>7.1} {:>7.1} {:>7} {:>7.1}{}",
                r.rank,
                gib(r.memory.params),
                gib(r.memory.grads),
                gib(r.memory.optimizer),
                gib(r.memory.activations),
                format!("({})", r.peak_activations),
                gib(r.memory.total()),
                if r.out_of_memory {
                    "  out of memory"
                } else {
                    ""
                }
            )?;
        }
        if self.out_of_memory {
            writeln!(
                f,
                "OUT OF MEMORY: at least one rank needs more than its GPU has"
            )?;
        }
        Ok(())
    }
}
