//! The JSON plan (`"format": "pipeweave-plan"`, version 1): structure, actions, lowered
//! communication and optionally a simulated timeline, documented in `docs/plan-format.md` and
//! described by `schemas/pipeweave-plan.v1.schema.json`.
//!
//! The wire types here are explicit mirrors of the core types, converted by hand: the core types
//! are not serializable by design. Everything derived (model parts, lowered steps) is written for
//! launchers and checked against the actions on reading, so a file cannot say two different things.

use crate::json_text::{push_f64, push_uint};
use pipeweave_check::ValidPlan;
use pipeweave_diagnostics::{Diagnostic, FileId, Span};
use pipeweave_plan::{
    Action, Dir, Interval, Kind, LoweredPlan, Op, Pipeline, Plan, Step, Timing, lower,
};
use serde::{Deserialize, Serialize};
use std::io::Write as _;

/// The value of the `format` field.
pub const FORMAT_NAME: &str = "pipeweave-plan";
/// The version this crate writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// A plan read from JSON, with its timeline when the file has one.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanJson {
    /// The plan, not yet validated.
    pub plan: Plan,
    /// The timeline the file carries, in its time unit, checked to fit the plan.
    pub timing: Option<Timing>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WirePlan {
    format: String,
    version: u32,
    ranks: u32,
    stages_per_pipeline: u32,
    /// `evaluation` for a forward-only step; absent (a training step) otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    step: Option<WirePlanStep>,
    pipelines: Vec<WirePipeline>,
    parts: Vec<WirePart>,
    programs: Vec<WireProgram>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timeline: Option<WireTimeline>,
}

/// What kind of step the plan is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum WirePlanStep {
    Training,
    Evaluation,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WirePipeline {
    placement: Vec<u32>,
    microbatches: Vec<u32>,
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct WirePart {
    part: u32,
    stages: Vec<u32>,
    ranks: Vec<u32>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireProgram {
    rank: u32,
    actions: Vec<WireAction>,
    steps: Vec<WireStep>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
enum WireKind {
    F,
    B,
    I,
    W,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireOp {
    kind: WireKind,
    stage: u32,
    mb: u32,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(tag = "kind", deny_unknown_fields)]
enum WireAction {
    F {
        stage: u32,
        mb: u32,
    },
    B {
        stage: u32,
        mb: u32,
    },
    I {
        stage: u32,
        mb: u32,
    },
    W {
        stage: u32,
        mb: u32,
    },
    #[serde(rename = "pair")]
    Pair {
        f: WireOp,
        b: WireOp,
    },
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
enum WireDir {
    Fwd,
    Bwd,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
enum WireStep {
    /// Runs `actions[action]` of the same rank.
    Compute {
        action: usize,
    },
    Recv {
        dir: WireDir,
        stage: u32,
        mb: u32,
        peer: u32,
    },
    Send {
        dir: WireDir,
        stage: u32,
        mb: u32,
        peer: u32,
    },
    WaitSend {
        dir: WireDir,
        stage: u32,
        mb: u32,
        peer: u32,
    },
    ReduceGrad {
        stage: u32,
    },
    WaitReduceGrad {
        stage: u32,
    },
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WireTimeline {
    makespan: f64,
    /// `ranks[r][i]` = `[start, end]` of rank r's i-th action.
    ranks: Vec<Vec<[f64; 2]>>,
}

// ---- core → wire ----

#[cfg(test)] // the writer writes the wire form by hand; the tests compare with this
fn kind_to_wire(kind: Kind) -> WireKind {
    match kind {
        Kind::F => WireKind::F,
        Kind::B => WireKind::B,
        Kind::I => WireKind::I,
        Kind::W => WireKind::W,
    }
}

#[cfg(test)] // the writer writes the wire form by hand; the tests compare with this
fn op_to_wire(op: Op) -> WireOp {
    WireOp {
        kind: kind_to_wire(op.kind),
        stage: op.stage,
        mb: op.mb,
    }
}

#[cfg(test)] // the writer writes the wire form by hand; the tests compare with this
fn action_to_wire(action: &Action) -> WireAction {
    match *action {
        Action::One(Op { stage, kind, mb }) => match kind {
            Kind::F => WireAction::F { stage, mb },
            Kind::B => WireAction::B { stage, mb },
            Kind::I => WireAction::I { stage, mb },
            Kind::W => WireAction::W { stage, mb },
        },
        Action::Pair { f, b } => WireAction::Pair {
            f: op_to_wire(f),
            b: op_to_wire(b),
        },
    }
}

fn dir_to_wire(dir: Dir) -> WireDir {
    match dir {
        Dir::Fwd => WireDir::Fwd,
        Dir::Bwd => WireDir::Bwd,
    }
}

/// `compute` is the index of the action a compute step runs (the caller counts them).
fn step_to_wire(step: &Step, compute: usize) -> WireStep {
    match *step {
        Step::Compute(_) => WireStep::Compute { action: compute },
        Step::Recv {
            dir,
            stage,
            mb,
            peer,
        } => WireStep::Recv {
            dir: dir_to_wire(dir),
            stage,
            mb,
            peer,
        },
        Step::Send {
            dir,
            stage,
            mb,
            peer,
        } => WireStep::Send {
            dir: dir_to_wire(dir),
            stage,
            mb,
            peer,
        },
        Step::WaitSend {
            dir,
            stage,
            mb,
            peer,
        } => WireStep::WaitSend {
            dir: dir_to_wire(dir),
            stage,
            mb,
            peer,
        },
        Step::ReduceGrad { stage } => WireStep::ReduceGrad { stage },
        Step::WaitReduceGrad { stage } => WireStep::WaitReduceGrad { stage },
    }
}

/// The replicas of every model part: part q is computed by stage j·S+q of every pipeline j.
fn parts_of(plan: &Plan) -> Vec<WirePart> {
    let s = plan.stages_per_pipeline();
    (0..s)
        .map(|q| {
            let stages: Vec<u32> = (0..plan.model_copies())
                .map(|j| plan.stage_id(j, q))
                .collect();
            let ranks = plan
                .pipelines()
                .iter()
                .map(|p| p.placement[q as usize])
                .collect();
            WirePart {
                part: q,
                stages,
                ranks,
            }
        })
        .collect()
}

/// Writes the JSON plan, with the timeline when one is given.
///
/// Refuses a timeline that does not fit the plan (a count of intervals that differs from the
/// actions, or times that are not finite).
pub fn write_json(plan: &ValidPlan, timing: Option<&Timing>) -> Result<String, Diagnostic> {
    write_plan_json(plan, timing)
}

/// [`write_json`] for any plan (see [`crate::unvalidated`]).
pub(crate) fn write_plan_json(plan: &Plan, timing: Option<&Timing>) -> Result<String, Diagnostic> {
    if let Some(t) = timing {
        t.check(plan)
            .map_err(|e| Diagnostic::error(e.to_string()))?;
    }
    let lowered = lower(plan);
    let mut out: Vec<u8> = Vec::with_capacity(plan.num_ops() * 40 + lowered.num_steps() * 48);
    write_document(&mut out, plan, &lowered, timing)
        .map_err(|e| Diagnostic::error(format!("cannot write the JSON plan: {e}")))?;
    String::from_utf8(out)
        .map_err(|e| Diagnostic::error(format!("cannot write the JSON plan: {e}")))
}

/// Lays the document out by hand: one action, step or rank of the timeline per line, so the file
/// stays readable and diffs well while every piece is serialized from a wire type.
fn write_document(
    out: &mut Vec<u8>,
    plan: &Plan,
    lowered: &LoweredPlan,
    timing: Option<&Timing>,
) -> serde_json::Result<()> {
    let io = serde_json::Error::io;
    writeln!(out, "{{").map_err(io)?;
    writeln!(out, "  \"format\": \"{FORMAT_NAME}\",").map_err(io)?;
    writeln!(out, "  \"version\": {FORMAT_VERSION},").map_err(io)?;
    writeln!(out, "  \"ranks\": {},", plan.ranks()).map_err(io)?;
    writeln!(
        out,
        "  \"stages_per_pipeline\": {},",
        plan.stages_per_pipeline()
    )
    .map_err(io)?;
    if plan.is_forward_only() {
        writeln!(out, "  \"step\": \"evaluation\",").map_err(io)?;
    }
    writeln!(out, "  \"pipelines\": [").map_err(io)?;
    let n = plan.pipelines().len();
    for (j, p) in plan.pipelines().iter().enumerate() {
        let wire = WirePipeline {
            placement: p.placement.clone(),
            microbatches: p.microbatches.clone(),
        };
        out.extend_from_slice(b"    ");
        piece(out, &wire)?;
        out.extend_from_slice(if j + 1 < n { b",\n" } else { b"\n" });
    }
    writeln!(out, "  ],").map_err(io)?;
    writeln!(out, "  \"parts\": [").map_err(io)?;
    let parts = parts_of(plan);
    for (q, part) in parts.iter().enumerate() {
        out.extend_from_slice(b"    ");
        piece(out, part)?;
        out.extend_from_slice(if q + 1 < parts.len() { b",\n" } else { b"\n" });
    }
    writeln!(out, "  ],").map_err(io)?;
    writeln!(out, "  \"programs\": [").map_err(io)?;
    for (r, (program, steps)) in plan.programs().iter().zip(lowered.programs()).enumerate() {
        writeln!(out, "    {{").map_err(io)?;
        writeln!(out, "      \"rank\": {r},").map_err(io)?;
        write!(out, "      \"actions\": [").map_err(io)?;
        for (i, a) in program.iter().enumerate() {
            out.extend_from_slice(if i == 0 {
                b"\n        "
            } else {
                b",\n        "
            });
            push_action(out, a);
        }
        if !program.is_empty() {
            out.extend_from_slice(b"\n      ");
        }
        writeln!(out, "],").map_err(io)?;
        write!(out, "      \"steps\": [").map_err(io)?;
        let mut compute = 0;
        let empty = steps.len() == 0;
        for (i, s) in steps.enumerate() {
            out.extend_from_slice(if i == 0 {
                b"\n        "
            } else {
                b",\n        "
            });
            push_step(out, &s, compute);
            if matches!(s, Step::Compute(_)) {
                compute += 1;
            }
        }
        if !empty {
            out.extend_from_slice(b"\n      ");
        }
        writeln!(out, "]").map_err(io)?;
        let last = r + 1 == plan.programs().len();
        writeln!(out, "    }}{}", if last { "" } else { "," }).map_err(io)?;
    }
    match timing {
        None => writeln!(out, "  ]").map_err(io)?,
        Some(t) => {
            writeln!(out, "  ],").map_err(io)?;
            writeln!(out, "  \"timeline\": {{").map_err(io)?;
            out.extend_from_slice(b"    \"makespan\": ");
            piece(out, &t.makespan)?;
            writeln!(out, ",").map_err(io)?;
            write!(out, "    \"ranks\": [").map_err(io)?;
            for (r, times) in t.intervals.iter().enumerate() {
                out.extend_from_slice(if r == 0 { b"\n      " } else { b",\n      " });
                push_intervals(out, times);
            }
            if !t.intervals.is_empty() {
                out.extend_from_slice(b"\n    ");
            }
            writeln!(out, "]").map_err(io)?;
            writeln!(out, "  }}").map_err(io)?;
        }
    }
    writeln!(out, "}}").map_err(io)?;
    Ok(())
}

fn piece<T: Serialize>(out: &mut Vec<u8>, value: &T) -> serde_json::Result<()> {
    serde_json::to_writer(out, value)
}

// The actions, steps and times are most of a big plan's document, so they are written by hand
// rather than through serde's generic serializers (thousands of instructions per small object).
// The text is exactly serde_json's for the wire types (`WireAction`, `WireStep`, `[f64; 2]`):
// the tests compare them.

/// An op as `WireOp` (also the form of a single-op `WireAction`): `{"kind":"F","stage":0,"mb":1}`.
fn push_op(out: &mut Vec<u8>, op: Op) {
    out.extend_from_slice(b"{\"kind\":\"");
    // Kind letters are ASCII.
    out.push(op.kind.letter() as u8);
    out.extend_from_slice(b"\",\"stage\":");
    push_uint(out, op.stage.into());
    out.extend_from_slice(b",\"mb\":");
    push_uint(out, op.mb.into());
    out.push(b'}');
}

/// An action as `WireAction`.
fn push_action(out: &mut Vec<u8>, action: &Action) {
    match *action {
        Action::One(op) => push_op(out, op),
        Action::Pair { f, b } => {
            out.extend_from_slice(b"{\"kind\":\"pair\",\"f\":");
            push_op(out, f);
            out.extend_from_slice(b",\"b\":");
            push_op(out, b);
            out.push(b'}');
        }
    }
}

/// A step as `WireStep`; `compute` is the index of the action a compute step runs.
fn push_step(out: &mut Vec<u8>, step: &Step, compute: usize) {
    let (kind, dir, stage, mb, peer): (&[u8], _, _, _, _) = match *step {
        Step::Compute(_) => {
            out.extend_from_slice(b"{\"kind\":\"compute\",\"action\":");
            push_uint(out, compute as u64);
            out.push(b'}');
            return;
        }
        Step::ReduceGrad { stage } | Step::WaitReduceGrad { stage } => {
            out.extend_from_slice(if matches!(step, Step::ReduceGrad { .. }) {
                b"{\"kind\":\"reduce_grad\",\"stage\":"
            } else {
                b"{\"kind\":\"wait_reduce_grad\",\"stage\":"
            });
            push_uint(out, stage.into());
            out.push(b'}');
            return;
        }
        Step::Recv {
            dir,
            stage,
            mb,
            peer,
        } => (b"recv", dir, stage, mb, peer),
        Step::Send {
            dir,
            stage,
            mb,
            peer,
        } => (b"send", dir, stage, mb, peer),
        Step::WaitSend {
            dir,
            stage,
            mb,
            peer,
        } => (b"wait_send", dir, stage, mb, peer),
    };
    out.extend_from_slice(b"{\"kind\":\"");
    out.extend_from_slice(kind);
    out.extend_from_slice(match dir {
        Dir::Fwd => b"\",\"dir\":\"fwd\",\"stage\":",
        Dir::Bwd => b"\",\"dir\":\"bwd\",\"stage\":",
    });
    push_uint(out, stage.into());
    out.extend_from_slice(b",\"mb\":");
    push_uint(out, mb.into());
    out.extend_from_slice(b",\"peer\":");
    push_uint(out, peer.into());
    out.push(b'}');
}

/// One rank's timeline as `[[start,end],…]`.
fn push_intervals(out: &mut Vec<u8>, times: &[Interval]) {
    out.push(b'[');
    for (i, t) in times.iter().enumerate() {
        out.extend_from_slice(if i == 0 { b"[" } else { b",[" });
        push_f64(out, t.start);
        out.push(b',');
        push_f64(out, t.end);
        out.push(b']');
    }
    out.push(b']');
}

mod locate;
mod read;
pub use read::read_json;

#[cfg(test)]
mod tests;
