//! The JSON plan (`"format": "pipeweave-plan"`, version 1): structure, actions, lowered
//! communication and optionally a simulated timeline, documented in `docs/plan-format.md` and
//! described by `schemas/pipeweave-plan.v1.schema.json`.
//!
//! The wire types here are explicit mirrors of the core types, converted by hand: the core types
//! are not serializable by design. Everything derived (model parts, lowered steps) is written for
//! launchers and checked against the actions on reading, so a file cannot say two different things.

use crate::json_text::{push_f64, push_uint};
use crate::timing::{Interval, Timing};
use locate::{Found, index, key, place};
use pipeweave_diagnostics::{Diagnostic, FileId, Span};
use pipeweave_plan::{Action, Dir, Kind, LoweredPlan, Op, Pipeline, Plan, Step, lower};
use serde::{Deserialize, Serialize};
use std::io::Write as _;

/// The value of the `format` field.
pub const FORMAT_NAME: &str = "pipeweave-plan";
/// The version this crate writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// A plan read from JSON, with its timeline when the file has one.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanJson {
    pub plan: Plan,
    pub timing: Option<Timing>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct WirePlan {
    format: String,
    version: u32,
    ranks: u32,
    stages_per_pipeline: u32,
    pipelines: Vec<WirePipeline>,
    parts: Vec<WirePart>,
    programs: Vec<WireProgram>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timeline: Option<WireTimeline>,
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

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
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

/// Only the header, to say clearly when a file is not a plan or has another version.
#[derive(Debug, Deserialize)]
struct Header {
    format: Option<serde_json::Value>,
    version: Option<serde_json::Value>,
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

fn kind_from_wire(kind: WireKind) -> Kind {
    match kind {
        WireKind::F => Kind::F,
        WireKind::B => Kind::B,
        WireKind::I => Kind::I,
        WireKind::W => Kind::W,
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

fn op_from_wire(op: WireOp) -> Op {
    Op::new(op.stage, kind_from_wire(op.kind), op.mb)
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

fn action_from_wire(action: WireAction) -> Action {
    match action {
        WireAction::F { stage, mb } => Action::One(Op::new(stage, Kind::F, mb)),
        WireAction::B { stage, mb } => Action::One(Op::new(stage, Kind::B, mb)),
        WireAction::I { stage, mb } => Action::One(Op::new(stage, Kind::I, mb)),
        WireAction::W { stage, mb } => Action::One(Op::new(stage, Kind::W, mb)),
        WireAction::Pair { f, b } => Action::Pair {
            f: op_from_wire(f),
            b: op_from_wire(b),
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
pub fn write_json(plan: &Plan, timing: Option<&Timing>) -> Result<String, Diagnostic> {
    if let Some(t) = timing {
        t.check(plan)?;
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

fn kind_letter(kind: Kind) -> &'static [u8] {
    match kind {
        Kind::F => b"F",
        Kind::B => b"B",
        Kind::I => b"I",
        Kind::W => b"W",
    }
}

/// An op as `WireOp` (also the form of a single-op `WireAction`): `{"kind":"F","stage":0,"mb":1}`.
fn push_op(out: &mut Vec<u8>, op: Op) {
    out.extend_from_slice(b"{\"kind\":\"");
    out.extend_from_slice(kind_letter(op.kind));
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

// ---- reading ----

/// Reads a JSON plan, checking that its derived sections agree with its actions. Every problem
/// points at the value it is about.
pub fn read_json(source: &str, file: FileId) -> Result<PlanJson, Vec<Diagnostic>> {
    let header: Header =
        serde_json::from_str(source).map_err(|e| vec![syntax(source, file, &e)])?;
    let help = format!("a plan starts with `\"format\": \"{FORMAT_NAME}\"`");
    let problem = match header.format.as_ref().and_then(|f| f.as_str()) {
        Some(FORMAT_NAME) => None,
        Some(other) => Some((
            Diagnostic::error(format!(
                "this is not a pipeweave plan: its format is `{other}`"
            ))
            .with_help(help),
            vec![key("format")],
        )),
        None => Some((
            Diagnostic::error("this is not a pipeweave plan: it has no `format` field")
                .with_help(help),
            vec![],
        )),
    };
    let problem = problem.or_else(|| {
        match header.version.as_ref().and_then(serde_json::Value::as_u64) {
            Some(v) if v == u64::from(FORMAT_VERSION) => None,
            Some(v) => Some((
                Diagnostic::error(format!(
                    "unsupported plan version {v}: this pipeweave reads version {FORMAT_VERSION}"
                )),
                vec![key("version")],
            )),
            None => Some((
                Diagnostic::error("the plan has no `version` field holding a whole number"),
                vec![],
            )),
        }
    });
    if let Some(p) = problem {
        return Err(place(source, file, vec![p]));
    }
    let wire: WirePlan =
        serde_json::from_str(source).map_err(|e| vec![syntax(source, file, &e)])?;
    from_wire(wire).map_err(|found| place(source, file, found))
}

/// A serde_json error as a diagnostic pointing at its line and column.
fn syntax(source: &str, file: FileId, e: &serde_json::Error) -> Diagnostic {
    let offset = offset_of(source, e.line(), e.column());
    // serde_json appends " at line L column C"; the span says that already.
    let text = e.to_string();
    let message = match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    };
    let end = source[offset..]
        .chars()
        .next()
        .map_or(offset, |c| offset + c.len_utf8());
    Diagnostic::error(format!("invalid JSON plan: {message}"))
        .with_span(Span::new(file, offset..end))
}

/// The byte offset of serde_json's 1-based line and byte column (column 0 = start of the line).
fn offset_of(source: &str, line: usize, column: usize) -> usize {
    let mut start = 0;
    for _ in 1..line.max(1) {
        match source[start..].find('\n') {
            Some(i) => start += i + 1,
            None => return source.len(),
        }
    }
    let mut at = (start + column.saturating_sub(1)).min(source.len());
    while !source.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn from_wire(wire: WirePlan) -> Result<PlanJson, Found> {
    let mut diags: Found = Vec::new();
    let max = pipeweave_plan::MAX_RANKS;
    if wire.ranks > max {
        return Err(vec![(
            Diagnostic::error(format!(
                "the plan has {} ranks; a plan has at most {max} ranks",
                wire.ranks
            )),
            vec![key("ranks")],
        )]);
    }
    let pipelines: Vec<Pipeline> = wire
        .pipelines
        .into_iter()
        .map(|p| Pipeline {
            placement: p.placement,
            microbatches: p.microbatches,
        })
        .collect();
    for (j, p) in pipelines.iter().enumerate() {
        if p.placement.len() != wire.stages_per_pipeline as usize {
            diags.push((
                Diagnostic::error(format!(
                    "pipeline {j} places {} stages but `stages_per_pipeline` is {}",
                    p.placement.len(),
                    wire.stages_per_pipeline
                )),
                vec![key("pipelines"), index(j), key("placement")],
            ));
        }
        if p.microbatches.windows(2).any(|w| w[0] >= w[1]) {
            diags.push((
                Diagnostic::error(format!(
                    "the micro-batches of pipeline {j} are not strictly ascending"
                )),
                vec![key("pipelines"), index(j), key("microbatches")],
            ));
        }
    }
    if wire.programs.len() != wire.ranks as usize {
        diags.push((
            Diagnostic::error(format!(
                "the plan has {} ranks but {} programs",
                wire.ranks,
                wire.programs.len()
            )),
            vec![key("ranks")],
        ));
    }
    for (r, p) in wire.programs.iter().enumerate() {
        if p.rank as usize != r {
            diags.push((
                Diagnostic::error(format!(
                    "program {r} says it is rank {}; programs are listed in rank order",
                    p.rank
                )),
                vec![key("programs"), index(r), key("rank")],
            ));
        }
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    let mut programs = Vec::with_capacity(wire.programs.len());
    let mut steps = Vec::with_capacity(wire.programs.len());
    for p in wire.programs {
        programs.push(
            p.actions
                .into_iter()
                .map(action_from_wire)
                .collect::<Vec<_>>(),
        );
        steps.push(p.steps);
    }
    let plan = Plan::new(wire.ranks, pipelines, programs)
        .map_err(|e| vec![(Diagnostic::error(e.to_string()), vec![key("pipelines")])])?;

    for (r, program) in plan.programs().iter().enumerate() {
        for (i, a) in program.iter().enumerate() {
            if let Action::Pair { f, b } = a
                && (f.kind != Kind::F || !b.kind.is_input_backward())
            {
                diags.push((
                    Diagnostic::error(format!(
                        "rank {r} action {i} is an overlapped pair `{a}`; a pair is a forward and then a B or an I"
                    )),
                    vec![key("programs"), index(r), key("actions"), index(i)],
                ));
            }
        }
    }
    let parts = parts_of(&plan);
    if parts != wire.parts {
        diags.push((
            Diagnostic::error("the `parts` section does not match the pipelines")
                .with_note("part q is computed by stage j·S+q of every pipeline j, on the rank the placement says")
                .with_help("the section is derived; write it again with `pipeweave convert --to json`"),
            vec![key("parts")],
        ));
    }
    let lowered = lower(&plan);
    for (r, (expected, found)) in lowered.programs().zip(&steps).enumerate() {
        if let Some((d, i)) = compare_steps(&plan, r, &expected.collect::<Vec<_>>(), found) {
            diags.push((d, vec![key("programs"), index(r), key("steps"), index(i)]));
        }
    }
    let timing = match wire.timeline {
        None => None,
        Some(t) => {
            let timing = Timing {
                makespan: t.makespan,
                intervals: t
                    .ranks
                    .into_iter()
                    .map(|times| {
                        times
                            .into_iter()
                            .map(|[start, end]| Interval { start, end })
                            .collect()
                    })
                    .collect(),
            };
            if let Err(d) = timing.check(&plan) {
                diags.push((d, vec![key("timeline")]));
            }
            Some(timing)
        }
    };
    if diags.is_empty() {
        Ok(PlanJson { plan, timing })
    } else {
        Err(diags)
    }
}

/// Reports the first place where a rank's steps differ from what lowering its actions gives, and
/// the index of the step there.
fn compare_steps(
    plan: &Plan,
    r: usize,
    expected: &[Step],
    found: &[WireStep],
) -> Option<(Diagnostic, usize)> {
    let program = plan.program(r as u32);
    let mut compute = 0;
    for (i, e) in expected.iter().enumerate() {
        let want = step_to_wire(e, compute);
        if matches!(e, Step::Compute(_)) {
            compute += 1;
        }
        let Some(got) = found.get(i) else {
            return Some((
                steps_differ(format!(
                    "rank {r} has {} steps but lowering its actions gives {} (the first missing one is `{}`)",
                    found.len(),
                    expected.len(),
                    describe_step(&want, program)
                )),
                i,
            ));
        };
        if !same_step(&want, got) {
            return Some((
                steps_differ(format!(
                    "rank {r} step {i} is `{}` but lowering its actions gives `{}`",
                    describe_step(got, program),
                    describe_step(&want, program)
                )),
                i,
            ));
        }
    }
    (found.len() > expected.len()).then(|| {
        let d = steps_differ(format!(
            "rank {r} has {} steps but lowering its actions gives {}",
            found.len(),
            expected.len()
        ));
        (d, expected.len())
    })
}

fn steps_differ(message: String) -> Diagnostic {
    Diagnostic::error(message)
        .with_note(
            "the steps are the lowering of the actions (communication, waits, gradient reduction)",
        )
        .with_help("edit the actions and write the steps again with `pipeweave convert --to json`")
}

fn same_step(a: &WireStep, b: &WireStep) -> bool {
    use WireStep::*;
    match (*a, *b) {
        (Compute { action: x }, Compute { action: y }) => x == y,
        (ReduceGrad { stage: x }, ReduceGrad { stage: y }) => x == y,
        (WaitReduceGrad { stage: x }, WaitReduceGrad { stage: y }) => x == y,
        (
            Recv {
                dir,
                stage,
                mb,
                peer,
            },
            Recv {
                dir: d2,
                stage: s2,
                mb: m2,
                peer: p2,
            },
        )
        | (
            Send {
                dir,
                stage,
                mb,
                peer,
            },
            Send {
                dir: d2,
                stage: s2,
                mb: m2,
                peer: p2,
            },
        )
        | (
            WaitSend {
                dir,
                stage,
                mb,
                peer,
            },
            WaitSend {
                dir: d2,
                stage: s2,
                mb: m2,
                peer: p2,
            },
        ) => dir == d2 && stage == s2 && mb == m2 && peer == p2,
        _ => false,
    }
}

/// A wire step in the PyTorch-like words the messages use.
fn describe_step(step: &WireStep, program: &[Action]) -> String {
    let d = |dir: WireDir| match dir {
        WireDir::Fwd => 'F',
        WireDir::Bwd => 'B',
    };
    match *step {
        WireStep::Compute { action } => match program.get(action) {
            Some(a) => a.to_string(),
            None => format!("compute action {action} (there is no such action)"),
        },
        WireStep::Recv {
            dir,
            stage,
            mb,
            peer,
        } => format!("{stage}RECV_{}{mb} from rank {peer}", d(dir)),
        WireStep::Send {
            dir,
            stage,
            mb,
            peer,
        } => format!("{stage}SEND_{}{mb} to rank {peer}", d(dir)),
        WireStep::WaitSend {
            dir,
            stage,
            mb,
            peer,
        } => format!("{stage}WAIT_SEND_{}{mb} to rank {peer}", d(dir)),
        WireStep::ReduceGrad { stage } => format!("{stage}REDUCE_GRAD"),
        WireStep::WaitReduceGrad { stage } => format!("{stage}WAIT_REDUCE_GRAD"),
    }
}

mod locate;
#[cfg(test)]
mod tests;
