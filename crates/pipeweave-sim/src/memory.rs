//! Live activations on one rank, in stage-micro-batch units.
//!
//! An activation is allocated by a forward and freed by the backward that computes the input
//! gradient of the same stage and micro-batch (B, or I when the backward is split). A deferred W
//! keeps only the inputs of its weight layers, which this unit count does not charge (the Zero
//! Bubble papers' convention; a spec's cost model can price it). An overlapped pair allocates and
//! frees together: its forward's activation grows while its backward's shrinks, so a pair adds no
//! transient unit. This is DualPipe's accounting: its peak of P+1 units is reached only on the
//! middle ranks, through the one F and B of step 4 that run apart.
//!
//! A program with no backward (an evaluation plan, `Plan::forward_only`) saves nothing for one:
//! as under DeepSeek's `torch.no_grad()` step, a forward's activation is gone when it ends, so
//! such a program holds no unit.

use pipeweave_plan::{Action, Kind};

/// Live-activation figures for one rank's program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Live {
    /// The most activations held at once.
    pub peak: u32,
    /// Activations still held after the last action (non-zero only for incomplete programs).
    pub end: u32,
}

/// Counts live activations through a rank's program in order.
pub fn live_activations(program: &[Action]) -> Live {
    if !computes_gradients(program) {
        return Live::default();
    }
    let mut live: i64 = 0;
    let mut peak: i64 = 0;
    for a in program {
        for op in a.ops() {
            match op.kind {
                Kind::F => live += 1,
                Kind::B | Kind::I => live -= 1,
                Kind::W => {}
            }
        }
        peak = peak.max(live);
    }
    Live {
        peak: peak.max(0) as u32,
        end: live.max(0) as u32,
    }
}

/// Whether a program runs any input backward (B or I), so that its forwards save activations.
pub fn computes_gradients(program: &[Action]) -> bool {
    program
        .iter()
        .any(|a| a.ops().any(|op| op.kind.is_input_backward()))
}
