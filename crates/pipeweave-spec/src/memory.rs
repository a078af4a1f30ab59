//! The memory model: parameters, gradients, optimizer state and activations per pipeline rank.
//!
//! A rank holds, for **every stage it hosts**, that part's weights, gradients and optimizer state:
//! a plan with two pipelines (Chimera, DualPipe) therefore holds every part twice, and a rank of
//! DualPipe holds two parts where 1F1B holds one. Replicas of a part do not share optimizer state.
//!
//! Per weight on one GPU (dense weights after tp; routed experts after tp and ep):
//! - parameters: `param_dtype` bytes;
//! - gradients: `grad_dtype` bytes, divided by the sharding group with ZeRO stage 2;
//! - optimizer: a master copy in `master_dtype` (if any) and Adam's two moments in
//!   `optimizer_dtype`, divided by the sharding group with ZeRO stage 1 or 2.
//!
//! The sharding group of a dense weight is its dp replicas; a routed expert is replicated on
//! `dp / ep` GPUs only (its other data-parallel peers hold other experts), so its group is `dp / ep`
//! (DeepSeek-V3 §3.2: ZeRO-1 data parallelism with experts spread over ep).
//!
//! Activations: the simulator's peak live activations of the rank (stage-micro-batch units) times
//! the largest activation bytes of one micro-batch among the parts the rank hosts (an upper bound
//! when a rank hosts parts of different sizes). Temporary buffers, the allocator's fragmentation
//! and communication buffers are not counted.

use crate::cost::CostTable;
use crate::spec::Spec;
use pipeweave_plan::Plan;

/// Bytes on one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MemoryUse {
    pub params: f64,
    pub grads: f64,
    pub optimizer: f64,
    pub activations: f64,
}

impl MemoryUse {
    pub fn total(&self) -> f64 {
        self.params + self.grads + self.optimizer + self.activations
    }
}

/// (dense, expert) weights one GPU holds for pipeline rank `rank`: the sum over the stages it hosts.
pub fn rank_weights(costs: &CostTable, plan: &Plan, rank: u32) -> (f64, f64) {
    let s = plan.stages_per_pipeline().max(1);
    plan.stages_on_rank(rank)
        .into_iter()
        .filter_map(|st| costs.parts.get((st % s) as usize))
        .fold((0.0, 0.0), |(d, e), p| {
            (d + p.dense_params, e + p.expert_params)
        })
}

/// Parameters, gradients and optimizer state of the given weights on one GPU.
pub fn model_state(spec: &Spec, dense: f64, expert: f64) -> MemoryUse {
    let t = &spec.training;
    let dp = f64::from(spec.parallelism.dp);
    let ep = f64::from(spec.parallelism.ep);
    let (dense_group, expert_group) = (dp, (dp / ep).max(1.0));
    let shard = |stage_needed: u32, group: f64| {
        if t.zero_stage >= stage_needed {
            group
        } else {
            1.0
        }
    };
    let opt_bytes = t.master_dtype.map_or(0.0, |d| d.bytes()) + 2.0 * t.optimizer_dtype.bytes();
    MemoryUse {
        params: (dense + expert) * t.param_dtype.bytes(),
        grads: dense * t.grad_dtype.bytes() / shard(2, dense_group)
            + expert * t.grad_dtype.bytes() / shard(2, expert_group),
        optimizer: dense * opt_bytes / shard(1, dense_group)
            + expert * opt_bytes / shard(1, expert_group),
        activations: 0.0,
    }
}

/// The largest activation bytes of one micro-batch among the parts a rank hosts.
pub fn rank_activation_unit(costs: &CostTable, plan: &Plan, rank: u32) -> f64 {
    let s = plan.stages_per_pipeline().max(1);
    plan.stages_on_rank(rank)
        .into_iter()
        .filter_map(|st| costs.parts.get((st % s) as usize))
        .map(|p| p.activation_bytes)
        .fold(0.0, f64::max)
}

/// Memory of pipeline rank `rank` holding `peak_activations` live activations.
pub fn rank_memory(
    spec: &Spec,
    costs: &CostTable,
    plan: &Plan,
    rank: u32,
    peak_activations: u32,
) -> MemoryUse {
    let (dense, expert) = rank_weights(costs, plan, rank);
    let mut m = model_state(spec, dense, expert);
    m.activations = f64::from(peak_activations) * rank_activation_unit(costs, plan, rank);
    m
}
