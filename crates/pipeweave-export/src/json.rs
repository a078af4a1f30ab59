//! The JSON plan (`"format": "pipeweave-plan"`, version 1): structure, actions, lowered
//! communication and optionally a simulated timeline, documented in `docs/plan-format.md` and
//! described by `schemas/pipeweave-plan.v1.schema.json`.
//!
//! The wire types here are explicit mirrors of the core types, converted by hand: the core types
//! are not serializable by design. Everything derived (model parts, lowered steps) is written for
//! launchers and checked against the actions on reading, so a file cannot say two different things.

use crate::document::{Chunks, Document};
use crate::json_text::{push_f64, push_uint};
use pipeweave_check::ValidPlan;
use pipeweave_diagnostics::{Diagnostic, FileId, Span};
use pipeweave_plan::{
    Action, Dir, Interval, Kind, LoweredPlan, Op, Pipeline, Plan, Step, Steps, Timing, try_lower,
};
use serde::{Deserialize, Serialize};
use std::io::{self, Write};

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
    /// Layers `[start, end)` of the model this part holds, when the plan carries its split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    layers: Option<[u64; 2]>,
    /// Its activation recomputation (`none`, `selective`, `full`), when the plan carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    recompute: Option<String>,
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

/// The replicas of model part `q`: it is computed by stage j·S+q of every pipeline j.
fn part_of(plan: &Plan, q: u32) -> WirePart {
    WirePart {
        part: q,
        stages: (0..plan.model_copies())
            .map(|j| plan.stage_id(j, q))
            .collect(),
        ranks: plan
            .pipelines()
            .iter()
            .map(|p| p.placement[q as usize])
            .collect(),
        layers: plan.split().and_then(|split| {
            let start: u64 = split.iter().take(q as usize).sum();
            split.get(q as usize).map(|n| [start, start + n])
        }),
        recompute: plan.recompute().and_then(|r| r.get(q as usize).cloned()),
    }
}

/// Writes the JSON plan, with the timeline when one is given.
///
/// Refuses a timeline that does not fit the plan (a count of intervals that differs from the
/// actions, or times that are not finite).
pub fn write_json(plan: &ValidPlan, timing: Option<&Timing>) -> Result<String, Diagnostic> {
    Ok(json_text(plan, timing)?.to_text())
}

/// [`write_json`] as a [`Document`]: the plan lowered, written as it is made.
pub fn json_text<'p>(
    plan: &'p ValidPlan,
    timing: Option<&'p Timing>,
) -> Result<JsonText<'p>, Diagnostic> {
    json_document(plan, timing)
}

/// [`json_text`] for any plan (see [`crate::unvalidated`]).
pub(crate) fn json_document<'p>(
    plan: &'p Plan,
    timing: Option<&'p Timing>,
) -> Result<JsonText<'p>, Diagnostic> {
    if let Some(t) = timing {
        t.check(plan)
            .map_err(|e| Diagnostic::error(e.to_string()))?;
    }
    Ok(JsonText {
        plan,
        lowered: try_lower(plan).map_err(|e| Diagnostic::error(e.to_string()))?,
        timing,
    })
}

/// [`write_json`] for any plan (see [`crate::unvalidated`]).
pub(crate) fn write_plan_json(plan: &Plan, timing: Option<&Timing>) -> Result<String, Diagnostic> {
    Ok(json_document(plan, timing)?.to_text())
}

/// The JSON plan of a plan with its lowering, and its timeline if any (see [`write_json`]).
#[derive(Debug)]
pub struct JsonText<'p> {
    plan: &'p Plan,
    lowered: LoweredPlan<'p>,
    timing: Option<&'p Timing>,
}

impl Document for JsonText<'_> {
    /// Lays the document out by hand: one action, step or rank of the timeline per line, so the
    /// file stays readable and diffs well, in serde_json's text for every wire type.
    fn write_to(&self, out: &mut dyn Write) -> io::Result<()> {
        let (plan, lowered) = (self.plan, &self.lowered);
        let mut c = Chunks::new(out);
        let out = c.buf();
        writeln!(out, "{{")?;
        writeln!(out, "  \"format\": \"{FORMAT_NAME}\",")?;
        writeln!(out, "  \"version\": {FORMAT_VERSION},")?;
        writeln!(out, "  \"ranks\": {},", plan.ranks())?;
        writeln!(
            out,
            "  \"stages_per_pipeline\": {},",
            plan.stages_per_pipeline()
        )?;
        if plan.is_forward_only() {
            writeln!(out, "  \"step\": \"evaluation\",")?;
        }
        writeln!(out, "  \"pipelines\": [")?;
        let n = plan.pipelines().len();
        for (j, p) in plan.pipelines().iter().enumerate() {
            c.raw("    {\"placement\":");
            push_ids(&mut c, &p.placement)?;
            c.raw(",\"microbatches\":");
            push_ids(&mut c, &p.microbatches)?;
            c.raw(if j + 1 < n { "},\n" } else { "}\n" });
        }
        c.raw("  ],\n  \"parts\": [\n");
        let parts = plan.stages_per_pipeline() as usize;
        for (q, part) in (0..parts).map(|q| (q, part_of(plan, q as u32))) {
            c.raw("    ");
            piece(c.buf(), &part)?;
            c.raw(if q + 1 < parts { ",\n" } else { "\n" });
            c.spill()?;
        }
        c.raw("  ],\n  \"programs\": [\n");
        for (r, (program, steps)) in plan.programs().iter().zip(lowered.programs()).enumerate() {
            writeln!(c.buf(), "    {{\n      \"rank\": {r},")?;
            c.raw("      \"actions\": [");
            for (i, a) in program.iter().enumerate() {
                c.raw(if i == 0 { "\n        " } else { ",\n        " });
                push_action(c.buf(), a);
                c.spill()?;
            }
            if !program.is_empty() {
                c.raw("\n      ");
            }
            c.raw("],\n      \"steps\": [");
            let mut compute = 0;
            let empty = steps.len() == 0;
            for (i, s) in steps.enumerate() {
                c.raw(if i == 0 { "\n        " } else { ",\n        " });
                push_step(c.buf(), &s, compute);
                if matches!(s, Step::Compute(_)) {
                    compute += 1;
                }
                c.spill()?;
            }
            if !empty {
                c.raw("\n      ");
            }
            let last = r + 1 == plan.programs().len();
            c.raw(if last { "]\n    }\n" } else { "]\n    },\n" });
        }
        match self.timing {
            None => c.raw("  ]\n"),
            Some(t) => {
                c.raw("  ],\n  \"timeline\": {\n    \"makespan\": ");
                piece(c.buf(), &t.makespan)?;
                c.raw(",\n    \"ranks\": [");
                for (r, times) in t.intervals.iter().enumerate() {
                    c.raw(if r == 0 { "\n      " } else { ",\n      " });
                    push_intervals(&mut c, times)?;
                }
                if !t.intervals.is_empty() {
                    c.raw("\n    ");
                }
                c.raw("]\n  }\n");
            }
        }
        c.raw("}\n");
        c.finish()
    }
}

fn piece<T: Serialize>(out: &mut Vec<u8>, value: &T) -> io::Result<()> {
    serde_json::to_writer(out, value).map_err(io::Error::other)
}

/// A list of ids as serde_json writes a `Vec<u32>`: `[0,1,2]`.
fn push_ids(c: &mut Chunks<'_>, ids: &[u32]) -> io::Result<()> {
    c.buf().push(b'[');
    for (i, &id) in ids.iter().enumerate() {
        if i > 0 {
            c.buf().push(b',');
        }
        push_uint(c.buf(), id.into());
        c.spill()?;
    }
    c.buf().push(b']');
    Ok(())
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
fn push_intervals(c: &mut Chunks<'_>, times: &[Interval]) -> io::Result<()> {
    c.buf().push(b'[');
    for (i, t) in times.iter().enumerate() {
        let out = c.buf();
        out.extend_from_slice(if i == 0 { b"[" } else { b",[" });
        push_f64(out, t.start);
        out.push(b',');
        push_f64(out, t.end);
        out.push(b']');
        c.spill()?;
    }
    c.buf().push(b']');
    Ok(())
}

mod locate;
mod read;
pub use read::read_json;

#[cfg(test)]
mod tests;
