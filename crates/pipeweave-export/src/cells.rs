//! The cell text of ops, actions and lowered steps (`3F2`, `(0F3;7B5)OVERLAP_F_B`, `1SEND_B0`),
//! appended to a byte buffer from their parts.
//!
//! The same text as their `Display`, without the formatting machinery, which costs more than the
//! rest of an export per cell on big plans (the tests compare the two). Cells hold only digits,
//! letters and `();_`, so they can go inside JSON strings without escapes.

use crate::json_text::push_uint;
use pipeweave_plan::{Action, Dir, Kind, Op, Step};

fn kind_letter(kind: Kind) -> u8 {
    match kind {
        Kind::F => b'F',
        Kind::B => b'B',
        Kind::I => b'I',
        Kind::W => b'W',
    }
}

pub(crate) fn dir_letter(dir: Dir) -> u8 {
    match dir {
        Dir::Fwd => b'F',
        Dir::Bwd => b'B',
    }
}

/// `<stage><kind><mb>`.
pub(crate) fn push_op(out: &mut Vec<u8>, op: Op) {
    push_uint(out, op.stage.into());
    out.push(kind_letter(op.kind));
    push_uint(out, op.mb.into());
}

/// An op's cell, or `(<F op>;<B or I op>)OVERLAP_F_B` for a pair.
pub(crate) fn push_action(out: &mut Vec<u8>, action: &Action) {
    match *action {
        Action::One(op) => push_op(out, op),
        Action::Pair { f, b } => {
            out.push(b'(');
            push_op(out, f);
            out.push(b';');
            push_op(out, b);
            out.extend_from_slice(b")OVERLAP_F_B");
        }
    }
}

/// `<stage><name>_<F|B><mb>` for a transfer step.
fn push_transfer(out: &mut Vec<u8>, name: &[u8], dir: Dir, stage: u32, mb: u32) {
    push_uint(out, stage.into());
    out.extend_from_slice(name);
    out.push(dir_letter(dir));
    push_uint(out, mb.into());
}

/// A lowered step's cell, as PyTorch's `compute_comms` CSV writes it.
pub(crate) fn push_step(out: &mut Vec<u8>, step: &Step) {
    match *step {
        Step::Compute(ref a) => push_action(out, a),
        Step::Recv { dir, stage, mb, .. } => push_transfer(out, b"RECV_", dir, stage, mb),
        Step::Send { dir, stage, mb, .. } => push_transfer(out, b"SEND_", dir, stage, mb),
        Step::WaitSend { dir, stage, mb, .. } => {
            push_transfer(out, b"WAIT_SEND_", dir, stage, mb);
        }
        Step::ReduceGrad { stage } => {
            push_uint(out, stage.into());
            out.extend_from_slice(b"REDUCE_GRAD");
        }
        Step::WaitReduceGrad { stage } => {
            push_uint(out, stage.into());
            out.extend_from_slice(b"WAIT_REDUCE_GRAD");
        }
    }
}

#[cfg(test)]
mod tests;
