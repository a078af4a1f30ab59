//! The memory model: what one GPU of a pipeline rank holds, as a framework would allocate it.
//!
//! A rank holds, for **every stage it hosts**, that part's weights, gradients and optimizer state:
//! a plan with two pipelines (Chimera, DualPipe) therefore holds every part twice, and a rank of
//! DualPipe holds two parts where 1F1B holds one.
//!
//! Per weight on one GPU (dense weights after tp; routed experts after tp and ep):
//! - parameters: `param_dtype` bytes;
//! - gradients: `grad_dtype` bytes; sharded over the part's replicas with ZeRO-2, except with a
//!   pipeline, where they accumulate in full over the micro-batches of a step until the last one's
//!   backward (Megatron-LM's gradient buffer, torchtitan's FSDP with pipelining;
//!   `zero2_with_pipeline = "refuse"` refuses the combination instead, as DeepSpeed does);
//! - optimizer: a master copy in `master_dtype` (if any) and Adam's two moments in
//!   `optimizer_dtype`, sharded with ZeRO ≥ 1 over the part's replicas: its data-parallel peers
//!   (dp / ep of them for a routed expert), and the other model copies' ranks with
//!   `optimizer_shared_across_copies` ([`crate::sync`]).
//!
//! Activations: the rank's program walked in order with the simulator's convention (a forward
//! allocates its part's activation bytes for one micro-batch, the B or I of the same stage and
//! micro-batch frees them, a pair allocates and frees together), the peak of the live bytes. A
//! rank hosting parts of different sizes (DualPipe's first rank holds the first part and the last
//! one with its logits) is charged each part's own size, not the largest. With full
//! recomputation the kept bytes are the layers' inputs, and one layer's recomputed activations
//! are live on top while its backward runs (`rank_activation_working`).
//!
//! Buffers: the tensor-parallel all-gather's output (the whole sequence of one block's input,
//! with sequence parallelism) and the boundary activations in flight (one received and one sent
//! per direction). Reserve: the CUDA context (GPU table) and the communication buffers
//! ([`Spec::comm_buffers_bytes`]). The allocator's fragmentation is what `memory_headroom` keeps
//! free.

use crate::cost::CostTable;
use pipeweave_plan::{Kind, Plan};
use pipeweave_spec::Spec;

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
    /// Temporary buffers: the tensor-parallel all-gather's output, boundary activations in flight.
    pub buffers: f64,
    /// The CUDA context and the communication buffers.
    pub reserve: f64,
}

impl MemoryUse {
    /// Everything together, in bytes.
    pub fn total(&self) -> f64 {
        self.params + self.grads + self.optimizer + self.activations + self.buffers + self.reserve
    }
}

/// The parts (indices) a rank hosts, one entry per hosted stage (replicas count).
fn hosted(costs: &CostTable, plan: &Plan, rank: u32) -> Vec<usize> {
    plan.stages_on_rank(rank)
        .iter()
        .map(|&st| costs.part_of(st))
        .filter(|&q| q < costs.parts.len())
        .collect()
}

/// (dense, expert) weights one GPU holds for pipeline rank `rank`: the sum over the stages it hosts.
pub fn rank_weights(costs: &CostTable, plan: &Plan, rank: u32) -> (f64, f64) {
    hosted(costs, plan, rank)
        .into_iter()
        .map(|q| &costs.parts[q])
        .fold((0.0, 0.0), |(d, e), p| {
            (d + p.dense_params, e + p.expert_params)
        })
}

/// Parameters, gradients and optimizer state of the stages `rank` hosts.
pub fn rank_state(spec: &Spec, costs: &CostTable, plan: &Plan, rank: u32) -> MemoryUse {
    let t = &spec.training;
    let opt_bytes = t.master_dtype.map_or(0.0, |d| d.bytes()) + 2.0 * t.optimizer_dtype.bytes();
    // ZeRO-2's sharded gradients only without a pipeline; with one they accumulate in full
    let shard_grads = t.zero_stage >= 2 && plan.ranks() <= 1;
    let mut m = MemoryUse::default();
    for q in hosted(costs, plan, rank) {
        let p = &costs.parts[q];
        let weights = p.dense_params + p.expert_params;
        m.params += weights * t.param_dtype.bytes();
        let (gd, ge) = if shard_grads {
            (p.sync.shard_dense, p.sync.shard_expert)
        } else {
            (1.0, 1.0)
        };
        m.grads += (p.dense_params / gd + p.expert_params / ge) * t.grad_dtype.bytes();
        m.optimizer += (p.dense_params / p.sync.shard_dense
            + p.expert_params / p.sync.shard_expert)
            * opt_bytes;
    }
    m
}

/// The largest activation bytes of one micro-batch among the parts a rank hosts.
pub fn rank_activation_unit(costs: &CostTable, plan: &Plan, rank: u32) -> f64 {
    hosted(costs, plan, rank)
        .into_iter()
        .map(|q| costs.parts[q].activation_bytes)
        .fold(0.0, f64::max)
}

/// The largest working set of one backward among the parts a rank hosts (full recomputation's
/// recomputed layer; zero without it).
pub fn rank_activation_working(costs: &CostTable, plan: &Plan, rank: u32) -> f64 {
    hosted(costs, plan, rank)
        .into_iter()
        .map(|q| costs.parts[q].activation_working_bytes)
        .fold(0.0, f64::max)
}

/// The most activation bytes rank `rank` holds at once (see the module's notes).
pub fn rank_activation_peak(costs: &CostTable, plan: &Plan, rank: u32) -> f64 {
    let bytes = |stage: u32| {
        costs
            .parts
            .get(costs.part_of(stage))
            .map_or(0.0, |p| p.activation_bytes)
    };
    let program = plan.program(rank);
    // An evaluation program (no backward) saves nothing for one: `live_activations`'s rule.
    if !pipeweave_sim::computes_gradients(program) {
        return 0.0;
    }
    let (mut live, mut peak) = (0.0f64, 0.0f64);
    for a in program {
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

/// Temporary buffers of one GPU: with tensor parallelism the gathered input of a block (the
/// whole sequence), and the boundary activations in flight: one received and one sent per
/// direction.
pub fn rank_buffers(spec: &Spec, costs: &CostTable) -> f64 {
    let tokens = spec.training.tokens_per_microbatch();
    let full = tokens * spec.model.hidden as f64 * spec.training.activation_dtype.bytes();
    let gathered = if spec.parallelism.tp > 1 { full } else { 0.0 };
    let in_flight = if spec.parallelism.pp > 1 {
        4.0 * costs.p2p_bytes
    } else {
        0.0
    };
    gathered + in_flight
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
    let mut m = rank_state(spec, costs, plan, rank);
    m.activations = rank_activation_peak(costs, plan, rank);
    if peak_activations > 0 {
        m.activations += rank_activation_working(costs, plan, rank);
    }
    m.buffers = rank_buffers(spec, costs);
    m.reserve = spec.reserve_bytes();
    m
}
