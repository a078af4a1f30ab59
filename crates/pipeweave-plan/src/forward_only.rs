//! The forward-only (evaluation) form of a plan: the same programs with every backward dropped.
//!
//! This is DeepSeek's `DualPipe.step()` under `torch.no_grad()`: the schedule runs in its own
//! order, a backward (B, I) and a deferred weight gradient (W) do nothing, and an overlapped F&B
//! pair runs its forward alone. One rule for every plan, whatever its source. The plan says it is
//! an evaluation step; a plan that merely lacks backwards is a training step missing them.

use crate::{Action, Kind, Plan};

impl Plan {
    /// This plan with its forwards only, each rank's in the order it had, as an evaluation step:
    /// B, I and W are dropped and a pair keeps its forward. Pipelines, placement and micro-batches
    /// are unchanged.
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
        let mut plan = self.with_programs(programs);
        plan.evaluation = true;
        plan
    }

    /// This plan, programs unchanged, said to be an evaluation step: what a file that says so
    /// reads as. The validator then requires its forwards and refuses any backward in it.
    pub fn into_evaluation(mut self) -> Plan {
        self.evaluation = true;
        self
    }

    /// Whether this is an evaluation step (forwards only), as [`Plan::forward_only`] or
    /// [`Plan::into_evaluation`] made it; a plan read or built without saying so is a training
    /// step, whatever its programs hold.
    pub fn is_forward_only(&self) -> bool {
        self.evaluation
    }

    /// Whether any action computes a gradient (B, I, W, or a pair).
    pub fn has_backward(&self) -> bool {
        self.programs()
            .iter()
            .flatten()
            .any(|a| !matches!(*a, Action::One(op) if op.kind == Kind::F))
    }
}
