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
//! Activations: the rank's program walked in order with the simulator's convention (a forward
//! allocates its part's activation bytes for one micro-batch, the B or I of the same stage and
//! micro-batch frees them, a pair allocates and frees together), the peak of the live bytes. A
//! rank hosting parts of different sizes (DualPipe's first rank holds the first part and the last
//! one with its logits) is charged each part's own size, not the largest. With full recomputation the kept bytes are the
//! layers' inputs, and one layer's recomputed activations are live on top while its backward runs
//! (`rank_activation_working`). Temporary buffers, the allocator's fragmentation
//! and communication buffers are not counted.

use crate::cost::CostTable;
use crate::spec::Spec;
use pipeweave_plan::{Kind, Plan};

/// Bytes on one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MemoryUse {
    /// Weights, in `param_dtype`, in bytes.
    pub params: f64,
    /// Gradients, in `grad_dtype`, in bytes (sharded over data parallelism with ZeRO stage 2).
    pub grads: f64,
    /// Master weights and Adam's two moments, in bytes (sharded over data parallelism from ZeRO
    /// stage 1).
    pub optimizer: f64,
    /// Peak live activations over the rank's program with full recomputation's working set, in
    /// bytes.
    pub activations: f64,
}

impl MemoryUse {
    /// Everything together, in bytes.
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

/// The largest working set of one backward among the parts a rank hosts (full recomputation's
/// recomputed layer; zero without it).
pub fn rank_activation_working(costs: &CostTable, plan: &Plan, rank: u32) -> f64 {
    let s = plan.stages_per_pipeline().max(1);
    plan.stages_on_rank(rank)
        .into_iter()
        .filter_map(|st| costs.parts.get((st % s) as usize))
        .map(|p| p.activation_working_bytes)
        .fold(0.0, f64::max)
}

/// The most activation bytes rank `rank` holds at once (see the module's notes).
pub fn rank_activation_peak(costs: &CostTable, plan: &Plan, rank: u32) -> f64 {
    let s = plan.stages_per_pipeline().max(1);
    let bytes = |stage: u32| {
        costs
            .parts
            .get((stage % s) as usize)
            .map_or(0.0, |p| p.activation_bytes)
    };
    let (mut live, mut peak) = (0.0f64, 0.0f64);
    for a in plan.program(rank) {
        for op in a.ops() {
            match op.kind {
                Kind::F => live += bytes(op.stage),
                Kind::B | Kind::I => live -= bytes(op.stage),
                Kind::W => {}
            }
        }
        peak = peak.max(live);
    }
    peak
}

/// Memory of pipeline rank `rank`. `peak_activations` is the simulator's count of live
/// stage-micro-batches; with none, no backward runs and no working set is charged.
pub fn rank_memory(
    spec: &Spec,
    costs: &CostTable,
    plan: &Plan,
    rank: u32,
    peak_activations: u32,
) -> MemoryUse {
    let (dense, expert) = rank_weights(costs, plan, rank);
    let mut m = model_state(spec, dense, expert);
    m.activations = rank_activation_peak(costs, plan, rank);
    if peak_activations > 0 {
        m.activations += rank_activation_working(costs, plan, rank);
    }
    m
}
