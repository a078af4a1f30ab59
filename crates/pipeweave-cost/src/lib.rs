//! The cost model: what a plan's actions cost on a cluster spec.
//!
//! [`CostTable`] turns a spec (`pipeweave-spec`) and a plan's placement into the simulator's
//! costs: compute from the operations (the model's work per layer and micro-batch as GEMM FLOPs,
//! attention-kernel FLOPs and element-wise bytes, `model.rs`), tensor-parallel collectives and the
//! expert all-to-all with DualPipe's F&B overlap and its SM share (`comm.rs`, `schedule.rs`),
//! point-to-point transfers; it prices each part's data-parallel synchronisation and optimizer step
//! (`sync.rs`); the memory model gives the bytes a rank holds (`memory.rs`, with activations by
//! recomputation in `activation.rs`). The figures of a simulated step are `pipeweave-eval`'s.
//! Pure: no IO.

#![warn(missing_docs)]

mod activation;
pub mod comm;
mod cost;
mod gemm;
mod memory;
mod model;
mod recompute;
mod schedule;
mod split_weights;
mod sync;

pub use cost::{CostTable, PartCosts, Pass, RESYNC_S, Volume};
pub use memory::{
    MemoryUse, rank_activation_unit, rank_activation_working, rank_buffers, rank_memory,
    rank_state, rank_weights,
};
pub use model::{
    LAUNCH_GAP_S, active_parameters, costed_layers, flops_per_token, total_parameters,
};
pub use schedule::{ActionCost, Task, TaskKind};
pub use split_weights::{SplitWeights, Weight};
pub use sync::{BUCKETS_ONE_BY_ONE, Buckets, GradSync, StageBuckets, channel_end};
