//! Reading the JSON plan: the header first (to say plainly what a file is when it is not a plan
//! of this version), then the wire form, converted to the core types and checked against them.

use super::locate::{Found, index, key, place};
use super::*;
use pipeweave_diagnostics::visible;
use pipeweave_plan::MAX_MICROBATCH_ID;
use pipeweave_plan::cell::push_step_with_peer;

/// Only the header, to say clearly when a file is not a plan or has another version.
#[derive(Debug, Deserialize)]
struct Header {
    format: Option<serde_json::Value>,
    version: Option<serde_json::Value>,
}

// ---- wire → core ----

fn kind_from_wire(kind: WireKind) -> Kind {
    match kind {
        WireKind::F => Kind::F,
        WireKind::B => Kind::B,
        WireKind::I => Kind::I,
        WireKind::W => Kind::W,
    }
}

fn op_from_wire(op: WireOp) -> Op {
    Op::new(op.stage, kind_from_wire(op.kind), op.mb)
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
                "this is not a pipeweave plan: its format is `{}`",
                visible(other)
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
    // serde_json appends " at line L column C"; the span says that already. What it quotes (an
    // unknown key, a string of the wrong type) is the file's text: shown without control characters.
    let text = e.to_string();
    let message = match text.rfind(" at line ") {
        Some(i) => &text[..i],
        None => &text,
    };
    let message = visible(message);
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
    diags.extend(ids_above_the_limit(&wire));
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
    let plan = if wire.step == Some(WirePlanStep::Evaluation) {
        plan.into_evaluation()
    } else {
        plan
    };
    // the split, when the parts carry it: every part or none, each starting where the last ended
    let mut split = Vec::new();
    let carried = wire.parts.iter().filter(|p| p.layers.is_some()).count();
    if carried > 0 && carried == wire.parts.len() {
        let mut at = 0u64;
        for (q, part) in wire.parts.iter().enumerate() {
            let [start, end] = part.layers.unwrap_or([at, at]);
            if start != at || end < start {
                diags.push((
                    Diagnostic::error(format!(
                        "part {q} holds layers [{start}, {end}), but the parts before it end at \
                         layer {at}: each part starts where the one before ends"
                    )),
                    vec![key("parts"), index(q), key("layers")],
                ));
                break;
            }
            split.push(end - start);
            at = end;
        }
    } else if carried > 0 {
        let q = wire
            .parts
            .iter()
            .position(|p| p.layers.is_none())
            .unwrap_or(0);
        diags.push((
            Diagnostic::error(format!(
                "part {q} has no `layers` while others have: a split gives every part its layers"
            )),
            vec![key("parts"), index(q)],
        ));
    }
    let plan = if split.len() == wire.parts.len() && carried > 0 {
        plan.with_split(Some(split))
    } else {
        plan
    };
    // each part's recomputation, when the parts carry it: every part or none
    let named = wire.parts.iter().filter(|p| p.recompute.is_some()).count();
    let mut recompute = Vec::new();
    for (q, part) in wire.parts.iter().enumerate() {
        match part.recompute.as_deref() {
            Some(r @ ("none" | "selective" | "full")) => recompute.push(r.to_owned()),
            Some(other) => diags.push((
                Diagnostic::error(format!(
                    "part {q}'s recompute is `{}`; expected `none`, `selective` or `full`",
                    other.chars().take(40).collect::<String>()
                )),
                vec![key("parts"), index(q), key("recompute")],
            )),
            None if named > 0 => diags.push((
                Diagnostic::error(format!(
                    "part {q} has no `recompute` while others have: give every part its own"
                )),
                vec![key("parts"), index(q)],
            )),
            None => {}
        }
    }
    let plan = if named > 0 && recompute.len() == wire.parts.len() {
        plan.with_recompute(Some(recompute))
    } else {
        plan
    };

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
    let parts: Vec<WirePart> = (0..plan.stages_per_pipeline())
        .map(|q| part_of(&plan, q))
        .collect();
    if parts != wire.parts {
        diags.push((
            Diagnostic::error("the `parts` section does not match the pipelines")
                .with_note("part q is computed by stage j·S+q of every pipeline j, on the rank the placement says")
                .with_help("the section is derived; write it again with `pipeweave convert --to json`"),
            vec![key("parts")],
        ));
    }
    // Linear in the actions whatever the plan lists (see `pipeweave_plan::WorkSlots`), and
    // fallible: a plan too large for the memory there is is an error naming the size.
    let lowered = try_lower(&plan).map_err(|e| {
        vec![(
            Diagnostic::error(format!("{e} (checking the plan's steps)")),
            vec![key("programs")],
        )]
    })?;
    for (r, (expected, found)) in lowered.programs().zip(&steps).enumerate() {
        if let Some((d, i)) = compare_steps(&plan, r, expected, found) {
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
            if let Err(e) = timing.check(&plan) {
                diags.push((Diagnostic::error(e.to_string()), vec![key("timeline")]));
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

/// The micro-batch ids above [`MAX_MICROBATCH_ID`], the limit of every plan format: one per
/// pipeline and one per program at most, so the answer stays short.
fn ids_above_the_limit(wire: &WirePlan) -> Found {
    let limit = |mb: u32| {
        format!("micro-batch {mb}, above the largest id a plan may use ({MAX_MICROBATCH_ID})")
    };
    let mut diags: Found = Vec::new();
    for (j, p) in wire.pipelines.iter().enumerate() {
        if let Some((i, &mb)) =
            (p.microbatches.iter().enumerate()).find(|(_, mb)| **mb > MAX_MICROBATCH_ID)
        {
            diags.push((
                Diagnostic::error(format!("pipeline {j} carries {}", limit(mb))),
                vec![key("pipelines"), index(j), key("microbatches"), index(i)],
            ));
        }
    }
    for (r, p) in wire.programs.iter().enumerate() {
        let above = p.actions.iter().enumerate().find_map(|(i, a)| {
            let (op, mb) = match *a {
                WireAction::F { mb, .. }
                | WireAction::B { mb, .. }
                | WireAction::I { mb, .. }
                | WireAction::W { mb, .. } => (None, mb),
                WireAction::Pair { f, .. } if f.mb > MAX_MICROBATCH_ID => (Some("f"), f.mb),
                WireAction::Pair { b, .. } => (Some("b"), b.mb),
            };
            (mb > MAX_MICROBATCH_ID).then_some((i, op, mb))
        });
        if let Some((i, op, mb)) = above {
            let mut at = vec![key("programs"), index(r), key("actions"), index(i)];
            at.extend(op.map(key));
            at.push(key("mb"));
            diags.push((
                Diagnostic::error(format!("rank {r} action {i} names {}", limit(mb))),
                at,
            ));
        }
    }
    diags
}

/// Reports the first place where a rank's steps differ from what lowering its actions gives, and
/// the index of the step there.
fn compare_steps(
    plan: &Plan,
    r: usize,
    expected: Steps<'_>,
    found: &[WireStep],
) -> Option<(Diagnostic, usize)> {
    let program = plan.program(r as u32);
    let expected_len = expected.len();
    let mut compute = 0;
    for (i, e) in expected.enumerate() {
        let want = step_to_wire(&e, compute);
        if matches!(e, Step::Compute(_)) {
            compute += 1;
        }
        let Some(got) = found.get(i) else {
            return Some((
                steps_differ(format!(
                    "rank {r} has {} steps but lowering its actions gives {} (the first missing one is `{}`)",
                    found.len(),
                    expected_len,
                    describe_step(&want, program)
                )),
                i,
            ));
        };
        if want != *got {
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
    (found.len() > expected_len).then(|| {
        let d = steps_differ(format!(
            "rank {r} has {} steps but lowering its actions gives {}",
            found.len(),
            expected_len
        ));
        (d, expected_len)
    })
}

fn steps_differ(message: String) -> Diagnostic {
    Diagnostic::error(message)
        .with_note(
            "the steps are the lowering of the actions (communication, waits, gradient reduction)",
        )
        .with_help("edit the actions and write the steps again with `pipeweave convert --to json`")
}

fn dir_from_wire(dir: WireDir) -> Dir {
    match dir {
        WireDir::Fwd => Dir::Fwd,
        WireDir::Bwd => Dir::Bwd,
    }
}

/// The step a wire step stands for, its compute action looked up in the rank's `program`; `Err`
/// with the action's index when the program has no such action.
fn step_from_wire(step: WireStep, program: &[Action]) -> Result<Step, usize> {
    Ok(match step {
        WireStep::Compute { action } => Step::Compute(*program.get(action).ok_or(action)?),
        WireStep::Recv {
            dir,
            stage,
            mb,
            peer,
        } => Step::Recv {
            dir: dir_from_wire(dir),
            stage,
            mb,
            peer,
        },
        WireStep::Send {
            dir,
            stage,
            mb,
            peer,
        } => Step::Send {
            dir: dir_from_wire(dir),
            stage,
            mb,
            peer,
        },
        WireStep::WaitSend {
            dir,
            stage,
            mb,
            peer,
        } => Step::WaitSend {
            dir: dir_from_wire(dir),
            stage,
            mb,
            peer,
        },
        WireStep::ReduceGrad { stage } => Step::ReduceGrad { stage },
        WireStep::WaitReduceGrad { stage } => Step::WaitReduceGrad { stage },
    })
}

/// A wire step in the words of the messages: its cell with the peer of a transfer.
fn describe_step(step: &WireStep, program: &[Action]) -> String {
    match step_from_wire(*step, program) {
        Err(action) => format!("compute action {action} (there is no such action)"),
        Ok(s) => {
            let mut out = Vec::new();
            push_step_with_peer(&mut out, &s);
            // Cells and these words are ASCII.
            String::from_utf8_lossy(&out).into_owned()
        }
    }
}
