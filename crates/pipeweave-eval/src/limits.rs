//! A memory limit in bytes per GPU as a budget of activations per rank, for a placement: what each
//! stage's activation weighs, and how much each rank may hold with everything else the spec puts
//! on its GPU (weights, gradients, optimizer state, buffers, the reserve, a backward's working set)
//! and stay within the limit. What synthesis takes.
//!
//! Weights are whole units of an eighth of the lightest stage's activation, each rounded up, so a
//! plan within the budget is within the bytes (and at most an eighth of a unit per activation
//! short of what the bytes would allow).

use pipeweave_cost::{CostTable, rank_memory};
use pipeweave_plan::Plan;
use pipeweave_spec::Spec;

/// A budget of activations: per stage what one weighs, per rank how much may be held, and the
/// bytes of a unit.
#[derive(Debug, Clone, PartialEq)]
pub struct ActivationBudget {
    /// Units per activation of each stage (global numbering).
    pub weights: Vec<u32>,
    /// Units each rank may hold.
    pub limits: Vec<u32>,
    /// Bytes per unit.
    pub unit_bytes: f64,
}

/// The budget of `plan`'s placement within `limit_bytes` per GPU on `spec` (fitted to the plan),
/// or the rank whose GPU is full before any activation.
pub fn activation_budget(
    spec: &Spec,
    costs: &CostTable,
    plan: &Plan,
    limit_bytes: f64,
) -> Result<ActivationBudget, u32> {
    let bytes: Vec<f64> = (0..plan.num_stages())
        .map(|s| {
            costs
                .parts
                .get(costs.part_of(s))
                .map_or(0.0, |p| p.activation_bytes)
        })
        .collect();
    let lightest = bytes
        .iter()
        .copied()
        .filter(|b| *b > 0.0)
        .fold(f64::INFINITY, f64::min);
    let unit_bytes = if lightest.is_finite() {
        lightest / 8.0
    } else {
        1.0
    };
    let weights = bytes
        .iter()
        .map(|b| (b / unit_bytes).ceil().clamp(1.0, f64::from(1u32 << 20)) as u32)
        .collect();
    let limits = (0..plan.ranks())
        .map(|r| {
            let mut m = rank_memory(spec, costs, plan, r, 1);
            // Everything but the activations the plan's own order holds.
            m.activations = pipeweave_cost::rank_activation_working(costs, plan, r);
            let room = limit_bytes - m.total();
            if room < 0.0 {
                return Err(r);
            }
            Ok((room / unit_bytes).floor().min(f64::from(u32::MAX / 2)) as u32)
        })
        .collect::<Result<Vec<u32>, u32>>()?;
    Ok(ActivationBudget {
        weights,
        limits,
        unit_bytes,
    })
}
