//! A memory limit in bytes per GPU as a limit in activations per rank, for a placement: the most
//! stage-micro-batch activations each rank may hold with everything else the spec puts on its GPU
//! (weights, gradients, optimizer state, buffers, the reserve, a backward's working set) and stay
//! within the limit. What synthesis takes.
//!
//! Each activation is counted at the largest of the rank's stages (an embedding or head stage may
//! hold more than a middle one), so a plan within the count is within the bytes.

use pipeweave_plan::Plan;
use pipeweave_spec::{CostTable, Spec, rank_memory};

/// The most activations each rank of `plan`'s placement may hold within `limit_bytes` per GPU on
/// `spec` (fitted to the plan), or the rank whose GPU is full before any activation.
pub fn activation_limits(
    spec: &Spec,
    costs: &CostTable,
    plan: &Plan,
    limit_bytes: f64,
) -> Result<Vec<u32>, u32> {
    (0..plan.ranks())
        .map(|r| {
            let mut m = rank_memory(spec, costs, plan, r, 1);
            // Everything but the activations this plan's own order holds.
            m.activations = pipeweave_spec::rank_activation_working(costs, plan, r);
            let room = limit_bytes - m.total();
            let unit = pipeweave_spec::rank_activation_unit(costs, plan, r);
            if room < 0.0 {
                return Err(r);
            }
            if unit <= 0.0 {
                return Ok(1 << 24);
            }
            Ok((room / unit).floor().min(f64::from(1u32 << 24)) as u32)
        })
        .collect()
}
