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

use crate::actions::write_plan;
use pipeweave_check::ValidPlan;
use pipeweave_diagnostics::Diagnostic;
use pipeweave_plan::cell::push_step;
use pipeweave_plan::{Dir, Plan, Step, lower};

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
    check_expressible(plan)?;
    Ok(write_plan(plan))
}

/// A pipeline message: direction, sending stage, micro-batch.
type Message = (Dir, u32, u32);

/// The message a receive expects: as [`Message`], with no sending stage where none sends to the
/// receiving one (no send matches it; a lowered plan has no such receive).
type Expected = (Dir, Option<u32>, u32);

/// One rank's messages to each peer it talks to: (peer, messages in posting order).
type Peers<T> = Vec<(u32, Vec<T>)>;

/// The list of messages from `from` to `to`, made empty on first use.
fn messages_to<T>(by_rank: &mut Vec<Peers<T>>, from: u32, to: u32) -> &mut Vec<T> {
    let from = from as usize;
    if by_rank.len() <= from {
        by_rank.resize_with(from + 1, Vec::new);
    }
    let peers = &mut by_rank[from];
    let at = match peers.iter().position(|&(p, _)| p == to) {
        Some(at) => at,
        None => {
            peers.push((to, Vec::new()));
            peers.len() - 1
        }
    };
    &mut peers[at].1
}

/// Checks that every receive gets the message it expects under PyTorch's matching rule.
///
/// 2.15 sends all pipeline messages from one rank to another on one communicator without tags
/// (`P2POp(isend/irecv, tensor, peer, group)`), so messages between a pair of ranks are matched
/// in the order they are posted. pipeweave's lowering orders messages per stage and direction; when
/// two stages talk across the same pair of ranks (a V placement, several stages per rank) the
/// receiver may post its receives in another order than the sender posts the sends, and PyTorch
/// would then hand one micro-batch's tensor to another. Such plans are refused.
fn check_pair_order<P: IntoIterator<Item = Step>>(
    plan: &Plan,
    programs: impl IntoIterator<Item = P>,
) -> Result<(), Diagnostic> {
    // For each sending rank, per receiving rank: the messages in posting order (direction,
    // sending stage, micro-batch), and the receives for them. A rank talks to a few peers, so a
    // short list per rank found by a scan (rather than a map keyed by the pair, one lookup per
    // step of a big plan).
    let mut sent: Vec<Peers<Message>> = Vec::new();
    let mut received: Vec<Peers<(Expected, Step)>> = Vec::new();
    for (r, steps) in programs.into_iter().enumerate() {
        let r = r as u32;
        for step in steps {
            match step {
                Step::Send {
                    dir,
                    stage,
                    mb,
                    peer,
                } => {
                    messages_to(&mut sent, r, peer).push((dir, stage, mb));
                }
                Step::Recv {
                    dir,
                    stage,
                    mb,
                    peer,
                } => {
                    let sender = plan.sending_stage(dir, stage);
                    messages_to(&mut received, peer, r).push(((dir, sender, mb), step));
                }
                _ => {}
            }
        }
    }
    // Checked in (from, to) order, so the mismatch reported is always the same one.
    for peers in &mut received {
        peers.sort_unstable_by_key(|&(to, _)| to);
    }
    let received = received
        .iter()
        .enumerate()
        .flat_map(|(from, peers)| peers.iter().map(move |(to, m)| ((from as u32, *to), m)));
    for ((from, to), recvs) in received {
        let sends = sent
            .get(from as usize)
            .and_then(|peers| peers.iter().find(|&&(p, _)| p == to))
            .map(|(_, m)| m.as_slice())
            .unwrap_or_default();
        for (i, &((dir, stage, mb), step)) in recvs.iter().enumerate() {
            let Some(&(sdir, sstage, smb)) = sends.get(i) else {
                break;
            };
            if (sdir, Some(sstage), smb) != (dir, stage, mb) {
                let send = Step::Send {
                    dir: sdir,
                    stage: sstage,
                    mb: smb,
                    peer: to,
                };
                return Err(Diagnostic::error(format!(
                    "PyTorch's runtime would deliver the wrong tensor: message {} from rank {from} to rank {to} is `{send}`, but rank {to} posts `{step}` as its receive number {}",
                    i + 1,
                    i + 1
                ))
                .with_note("PyTorch 2.15 sends every pipeline message between two ranks on one channel without tags, so they are matched in posting order; pipeweave's lowering orders messages per stage and direction")
                .with_help("export to `pytorch` (the compute-only CSV, which PyTorch lowers itself) or to `json`"));
            }
        }
    }
    Ok(())
}

/// Writes the lowered CSV (`format="compute_comms"`) that 2.15's runtime executes as written.
///
/// Refused when the plan has several pipelines, micro-batches not numbered from 0, or messages
/// that PyTorch's per-rank-pair matching would mix up (see `check_pair_order`).
pub fn write_pytorch_comms(plan: &ValidPlan) -> Result<String, Diagnostic> {
    check_expressible(plan)?;
    let lowered = lower(plan);
    check_pair_order(plan, lowered.programs())?;
    // Cells written into one buffer (see `pipeweave_plan::cell`), not through `Display`.
    let mut out: Vec<u8> = Vec::with_capacity(lowered.num_steps() * 12 + lowered.ranks() as usize);
    for steps in lowered.programs() {
        for (i, step) in steps.enumerate() {
            if i > 0 {
                out.push(b',');
            }
            push_step(&mut out, &step);
        }
        out.push(b'\n');
    }
    String::from_utf8(out).map_err(|e| Diagnostic::error(format!("cannot write the CSV: {e}")))
}

#[cfg(test)]
mod tests;
