//! The forward-only (evaluation) form of a plan: the same programs with every backward dropped.
//!
//! This is DeepSeek's `DualPipe.step()` under `torch.no_grad()`: the schedule runs in its own
//! order, a backward (B, I) and a deferred weight gradient (W) do nothing, and an overlapped F&B
//! pair runs its forward alone. One rule for every plan, whatever its source.

use crate::{Action, Kind, Plan};

impl Plan {
    /// This plan with its forwards only, each rank's in the order it had: B, I and W are dropped
    /// and a pair keeps its forward. Pipelines, placement and micro-batches are unchanged.
    pub fn forward_only(&self) -> Plan {
        let programs = self
            .programs()
            .iter()
            .map(|program| {
                program
                    .iter()
                    .filter_map(|action| match *action {
                        Action::One(op) if op.kind == Kind::F => Some(*action),
                        Action::One(_) => None,
                        Action::Pair { f, .. } => Some(Action::One(f)),
                    })
                    .collect()
            })
            .collect();
        self.with_programs(programs)
    }

    /// Whether no action of the plan computes a gradient: an evaluation plan, which runs every
    /// forward once and nothing else.
    pub fn is_forward_only(&self) -> bool {
        self.programs()
            .iter()
            .flatten()
            .all(|a| matches!(*a, Action::One(op) if op.kind == Kind::F))
    }
}
