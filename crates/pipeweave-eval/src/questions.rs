//! The two questions a student of DualPipe works out by hand, answered from a spec.
//!
//! 1. How many GPU-hours per million tokens does DualPipe recover over 1F1B? The difference of the
//!    two reports' GPU-hours per million tokens (same spec, same micro-batches per step).
//! 2. What does DualPipe's second model copy cost? DualPipe places stage `r` of one direction and
//!    stage `P−1−r` of the other on rank `r` (DeepSeek-V3 §3.2.1), so rank `r` holds parts `r` and
//!    `P−1−r`; 1F1B holds part `r` only. The figures are for the rank that holds the most.

use crate::step::StepReport;
use pipeweave_cost::{CostTable, rank_state};
use pipeweave_diagnostics::Diagnostic;
use pipeweave_plan::{Pipeline, Plan};
use pipeweave_spec::Spec;

/// GPU-hours per million tokens that `improved` saves over `baseline` (negative when it costs more).
pub fn gpu_hours_recovered_per_million_tokens(baseline: &StepReport, improved: &StepReport) -> f64 {
    baseline.gpu_hours_per_million_tokens - improved.gpu_hours_per_million_tokens
}

/// Weight and model-state memory per GPU with one model copy (1F1B) and with DualPipe's two.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamCost {
    /// The spec's name.
    pub spec: String,
    /// Usable bytes of one GPU.
    pub gpu_memory_bytes: f64,
    /// Weight bytes (`param_dtype`) on the most loaded GPU with one copy.
    pub weights_one_copy: f64,
    /// The same with DualPipe's two copies.
    pub weights_two_copies: f64,
    /// Weights, gradients and optimizer state on the most loaded GPU, one copy.
    pub state_one_copy: f64,
    /// The same with two copies.
    pub state_two_copies: f64,
}

impl ParamCost {
    /// Extra weight bytes per GPU that the second copy costs.
    pub fn extra_weights(&self) -> f64 {
        self.weights_two_copies - self.weights_one_copy
    }

    /// Extra weights as a share of GPU memory.
    pub fn extra_weights_share(&self) -> f64 {
        self.extra_weights() / self.gpu_memory_bytes
    }

    /// Extra model state (weights, gradients, optimizer) as a share of GPU memory.
    pub fn extra_state_share(&self) -> f64 {
        (self.state_two_copies - self.state_one_copy) / self.gpu_memory_bytes
    }
}

/// A plan with the given pipelines and no actions: enough for placement-only questions.
fn placement_plan(ranks: u32, placements: Vec<Vec<u32>>) -> Result<Plan, Vec<Diagnostic>> {
    let pipelines = placements
        .into_iter()
        .enumerate()
        .map(|(j, placement)| Pipeline {
            placement,
            microbatches: vec![j as u32],
        })
        .collect();
    Plan::new(ranks, pipelines, vec![Vec::new(); ranks as usize])
        .map_err(|e| vec![Diagnostic::error(e.to_string())])
}

/// DualPipe's parameter cost for a spec whose pipeline holds one part per rank.
pub fn dualpipe_param_cost(spec: &Spec) -> Result<ParamCost, Vec<Diagnostic>> {
    let p = spec.parallelism.pp;
    if spec.parallelism.stages_per_rank != 1 {
        return Err(vec![Diagnostic::error(format!(
            "DualPipe needs one stage per rank and direction, the spec has stages_per_rank {}",
            spec.parallelism.stages_per_rank
        ))]);
    }
    let down: Vec<u32> = (0..p).collect();
    let up: Vec<u32> = (0..p).rev().collect();
    let one = placement_plan(p, vec![down.clone()])?;
    let two = placement_plan(p, vec![down, up])?;
    let costs_one = CostTable::new(spec, &one)?;
    let costs_two = CostTable::new(spec, &two)?;
    let most = |costs: &CostTable, plan: &Plan| {
        (0..p)
            .map(|r| {
                let state = rank_state(spec, costs, plan, r);
                (state.params, state.params + state.grads + state.optimizer)
            })
            .fold((0.0f64, 0.0f64), |(a, b), (x, y)| (a.max(x), b.max(y)))
    };
    let (w1, s1) = most(&costs_one, &one);
    let (w2, s2) = most(&costs_two, &two);
    Ok(ParamCost {
        spec: spec.name.clone(),
        gpu_memory_bytes: spec.cluster.memory_bytes(),
        weights_one_copy: w1,
        weights_two_copies: w2,
        state_one_copy: s1,
        state_two_copies: s2,
    })
}
