//! PyTorch 2.15's schedule CSVs, as `_PipelineScheduleRuntime._load_csv` reads them: written here,
//! read back in `read.rs` (a compute-only CSV is the actions text) and checked in `check.rs`.
//!
//! - `compute_only`: one row per rank, one compute cell per action (`0F1`, `3I0`, `(0F3;7B5)OVERLAP_F_B`).
//!   torchtitan loads the same file (`--parallelism.pipeline_parallel_schedule_csv`).
//! - `compute_comms`: the lowered rows: `RECV_F`/`RECV_B` before the action that consumes them,
//!   `SEND_F`/`SEND_B` after the action that produced them, one `WAIT_SEND_F`/`WAIT_SEND_B` for every
//!   send, and `REDUCE_GRAD` followed at once by its `WAIT_REDUCE_GRAD` (2.15 allows at most one
//!   pending reduction per rank). No empty cells: the 2.15 loader refuses them in this format.
//!
//! The communication is `pipeweave_plan::lower`'s, not PyTorch's own lowering pass, so what runs is
//! exactly what pipeweave validated.
//!
//! PyTorch's runtime knows one pipeline whose stages each run on one rank, with micro-batches
//! `0..M`; plans outside that (Chimera, bidirectional DualPipe) are refused with the reason, and
//! so are evaluation plans (forwards only), which its loader refuses: PyTorch evaluates with the
//! training schedule's `eval()`.

mod check;
mod read;

pub use read::{CommsFile, StepAt, read_pytorch_comms};

use crate::actions::{ActionsText, actions_text};
use crate::document::{Chunks, Document};
use pipeweave_check::ValidPlan;
use pipeweave_diagnostics::Diagnostic;
use pipeweave_plan::cell::push_step;
use pipeweave_plan::{LoweredPlan, Plan, try_lower};
use std::io::{self, Write};

/// Checks that PyTorch's runtime can hold the plan.
fn check_expressible(plan: &Plan) -> Result<(), Diagnostic> {
    if plan.is_forward_only() {
        // Measured on 2.15: `_validate_schedule` refuses it ("expected M total backwards").
        return Err(Diagnostic::error(
            "PyTorch's schedule files hold training steps, and this is an evaluation plan (forwards only)",
        )
        .with_note(
            "PyTorch 2.15's loader requires every stage to run each micro-batch's backward",
        )
        .with_help(
            "export the training plan (without --forward-only) and run it with the schedule's `eval()`, which skips its backwards as this plan does, or export to `json`",
        ));
    }
    let k = plan.model_copies();
    if k != 1 {
        let s = plan.stages_per_pipeline();
        let mut placed_twice = Vec::new();
        for q in 0..s {
            let mut ranks: Vec<u32> = plan
                .pipelines()
                .iter()
                .map(|p| p.placement[q as usize])
                .collect();
            ranks.sort_unstable();
            ranks.dedup();
            if ranks.len() > 1 {
                placed_twice.push(format!(
                    "part {q} on ranks {}",
                    ranks
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join(" and ")
                ));
            }
        }
        let mut d = Diagnostic::error(format!(
            "PyTorch's pipeline runtime cannot run a plan of {k} pipelines"
        ))
        .with_note(
            "its schedules hold one pipeline: every model part is one stage on exactly one rank, and it has no gradient reduction across replicas",
        );
        if !placed_twice.is_empty() {
            d = d.with_note(format!(
                "this plan computes model parts on several ranks: {}",
                placed_twice.join(", ")
            ));
        }
        return Err(d.with_help(
            "export to `json`, which keeps the pipelines, the replicas and their gradient reduction, and run it with a launcher that reads pipeweave plans",
        ));
    }
    let mbs = &plan.pipelines()[0].microbatches;
    if mbs.iter().enumerate().any(|(i, &m)| m as usize != i) {
        return Err(Diagnostic::error(format!(
            "PyTorch numbers micro-batches from 0 to M−1, but this plan carries {}",
            describe_ids(mbs)
        ))
        .with_help("renumber the micro-batches from 0, or export to `json`"));
    }
    Ok(())
}

/// A short description of a sorted id list for messages.
fn describe_ids(ids: &[u32]) -> String {
    match ids {
        [] => "no micro-batches".to_string(),
        [one] => format!("micro-batch {one}"),
        [first, .., last] if ids.len() > 6 => {
            format!("{} micro-batches from {first} to {last}", ids.len())
        }
        _ => format!(
            "micro-batches {}",
            ids.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Writes the compute-only CSV (`format="compute_only"`): the actions format of a single pipeline.
pub fn write_pytorch(plan: &ValidPlan) -> Result<String, Diagnostic> {
    Ok(pytorch_csv(plan)?.to_text())
}

/// [`write_pytorch`] as a [`Document`], written as it is made.
pub fn pytorch_csv(plan: &ValidPlan) -> Result<ActionsText<'_>, Diagnostic> {
    check_expressible(plan)?;
    Ok(actions_text(plan))
}

/// Writes the lowered CSV (`format="compute_comms"`) that 2.15's runtime executes as written.
///
/// Refused when the plan has several pipelines or micro-batches not numbered from 0. PyTorch 2.15
/// sends every pipeline message between two ranks on one channel without tags, so it matches them
/// in posting order: the lowering posts each pair of ranks' receives in the order of the sends
/// (`pipeweave_plan::lower`, whose tests check it on any plan), so no tensor goes astray.
pub fn write_pytorch_comms(plan: &ValidPlan) -> Result<String, Diagnostic> {
    Ok(pytorch_comms_csv(plan)?.to_text())
}

/// [`write_pytorch_comms`] as a [`Document`]: the plan lowered, written as it is made.
pub fn pytorch_comms_csv(plan: &ValidPlan) -> Result<CommsCsv<'_>, Diagnostic> {
    check_expressible(plan)?;
    Ok(CommsCsv {
        lowered: try_lower(plan).map_err(|e| Diagnostic::error(e.to_string()))?,
    })
}

/// The lowered CSV of a plan (see [`write_pytorch_comms`]).
#[derive(Debug)]
pub struct CommsCsv<'p> {
    lowered: LoweredPlan<'p>,
}

impl Document for CommsCsv<'_> {
    fn write_to(&self, out: &mut dyn Write) -> io::Result<()> {
        // Cells written into the chunk buffer (see `pipeweave_plan::cell`), not through `Display`.
        let mut c = Chunks::new(out);
        for steps in self.lowered.programs() {
            for (i, step) in steps.enumerate() {
                if i > 0 {
                    c.buf().push(b',');
                }
                push_step(c.buf(), &step);
                c.spill()?;
            }
            c.buf().push(b'\n');
            c.spill()?;
        }
        c.finish()
    }
}

#[cfg(test)]
mod tests;
