//! Matches the traces of a run against the plan it ran: which file is which rank, the plan's
//! actions found in each rank's spans in order, step after step, and the saved-bytes records
//! placed on the actions they follow. Anything that does not fit is an error naming the rank and
//! the first action that differs; nothing is guessed.
//!
//! A trace may hold several steps (a profiler's active steps): each is the rank's program again.
//! Transfers, waits and reductions are optional in a trace (a runner may not name them), but those
//! named must be steps of the rank's lowered program, in its order, except receives: a receive's
//! span may stand anywhere from its posting to the action that consumes its data. PyTorch's runtime
//! names the posting (`PP:1RECV_F1` at the program's position); pipeweave's PlanRunner names the
//! wait for the data, right before the consuming action (for a pair, F's receive first), and the
//! posting `pw post 1RECV_F1`, which stands at the program's position as a send does.

use crate::read::{Clock, Naming, RankTrace, TraceMeta, TraceSpan};
use pipeweave_diagnostics::{Diagnostic, FileId, Span};
use pipeweave_plan::cell::StepCell;
use pipeweave_plan::{Action, Plan, Step, try_lower};
use pipeweave_plan::{Dir, Kind};
use std::collections::{HashMap, HashSet};

/// A run: every rank's steps, matched against the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// Whose names the traces carry.
    pub naming: Naming,
    /// Which clock the spans come from.
    pub clock: Clock,
    /// Rank r's run at index r.
    pub ranks: Vec<RankRun>,
    /// How many steps every rank ran (the same on every rank).
    pub steps: usize,
    /// The epoch time, in nanoseconds, that the run's microseconds count from, when the traces
    /// give one (`baseTimeNanoseconds`): every rank's times are moved onto the earliest rank's.
    pub base_time_ns: Option<u64>,
    /// What the reader assumed or left out, in words (a rank taken from the files' order, spans of
    /// FSDP's unshard and reshard not timed).
    pub notes: Vec<String>,
}

/// One rank's run.
#[derive(Debug, Clone, PartialEq)]
pub struct RankRun {
    /// The file it was read from.
    pub file: FileId,
    /// Its steps, in time order.
    pub steps: Vec<RankStep>,
    /// Whether the trace has saved-bytes records.
    pub has_saved: bool,
    /// pipeweave's record of the run's transfers in the trace, when it has one.
    pub meta: Option<TraceMeta>,
}

/// One step of one rank.
#[derive(Debug, Clone, PartialEq)]
pub struct RankStep {
    /// The timing of the program's action i at index i, in the trace's microseconds.
    pub actions: Vec<Timed>,
    /// The transfers, waits and reductions the trace names, in the trace's order (the program's,
    /// but for receives, which stand between their posting and their consumer).
    pub others: Vec<TimedStep>,
    /// The saved-bytes record after action i at index i, when the trace has one.
    pub saved: Vec<Option<Saved>>,
    /// The profiler's step span (`ProfilerStep#N`) that holds every span of this step, when the
    /// trace has one: the step as the training loop ran it, with its time outside any action.
    pub bounds: Option<Timed>,
}

/// When something ran, in the trace's microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timed {
    /// Its start.
    pub start: f64,
    /// Its duration.
    pub dur: f64,
}

impl Timed {
    /// Its end.
    pub fn end(&self) -> f64 {
        self.start + self.dur
    }
}

/// A step of the lowered program that is no computation, as the trace timed it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimedStep {
    /// The step, with its peer.
    pub step: Step,
    /// The index in the program of the last compute action before it (`None`: none yet).
    pub after: Option<usize>,
    /// When it ran.
    pub timed: Timed,
    /// PlanRunner's posting of a receive (a `pw post` span) rather than its wait for the data.
    pub post: bool,
}

/// Saved-activation bytes after an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Saved {
    /// Alive after the action.
    pub bytes: u64,
    /// The most alive at once so far in the step.
    pub peak: u64,
}

/// Matches the traces against `plan`. `traces` are in the order they were given: a rank comes
/// from the file's `distributedInfo.rank`, or from that order when no file gives one (and a note
/// says so).
pub fn match_plan(plan: &Plan, traces: Vec<RankTrace>) -> Result<Run, Vec<Diagnostic>> {
    let ranks = plan.ranks() as usize;
    let mut notes = Vec::new();
    let by_rank = assign_ranks(plan, traces, &mut notes)?;
    let lowered = try_lower(plan).map_err(|e| vec![Diagnostic::error(e.to_string())])?;
    let first = &by_rank[0];
    let (naming, clock) = (first.naming, first.clock);
    let mut problems = Vec::new();
    for t in &by_rank[1..] {
        if t.clock != clock {
            problems.push(
                Diagnostic::error(format!(
                    "this trace times its actions on the {}, the first rank's on the {}",
                    clock_name(t.clock),
                    clock_name(clock)
                ))
                .with_span(Span::new(t.file, 0..0)),
            );
        }
    }
    let bases: Vec<Option<u64>> = by_rank.iter().map(|t| t.base_time_ns).collect();
    let base_time_ns = bases.iter().flatten().min().copied();
    if base_time_ns.is_some() {
        for t in by_rank.iter().filter(|t| t.base_time_ns.is_none()) {
            problems.push(
                Diagnostic::error(
                    "this trace has no `baseTimeNanoseconds` while others do, so its times cannot be set beside theirs",
                )
                .with_span(Span::new(t.file, 0..0)),
            );
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut runs = Vec::with_capacity(ranks);
    for (rank, trace) in by_rank.iter().enumerate() {
        let program = lowered.program(rank as u32).collect::<Vec<Step>>();
        // Microseconds from this trace's base to the run's.
        let shift = match (trace.base_time_ns, base_time_ns) {
            (Some(own), Some(run)) => (own - run) as f64 / 1000.0,
            _ => 0.0,
        };
        match match_rank(plan, rank as u32, &program, trace, shift) {
            Ok(run) => runs.push(run),
            Err(d) => problems.push(d),
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let steps = runs.iter().map(|r| r.steps.len()).max().unwrap_or(0);
    for (rank, run) in runs.iter().enumerate() {
        if run.steps.len() < steps {
            let (most, _) = runs
                .iter()
                .enumerate()
                .find(|(_, r)| r.steps.len() == steps)
                .unwrap_or((rank, run));
            problems.push(
                Diagnostic::error(format!(
                    "rank {rank}'s trace has {} of the plan's steps, rank {most}'s has {steps}",
                    run.steps.len()
                ))
                .with_span(Span::new(run.file, 0..0))
                .with_help("profile the same steps on every rank"),
            );
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let unsharding: usize = by_rank
        .iter()
        .map(|t| {
            t.spans
                .iter()
                .filter(|s| matches!(s.cell, StepCell::Unshard { .. } | StepCell::Reshard { .. }))
                .count()
        })
        .sum();
    if unsharding > 0 {
        let s = if unsharding == 1 { "" } else { "s" };
        notes.push(format!(
            "{unsharding} span{s} of FSDP's UNSHARD and RESHARD, not part of the plan, not timed"
        ));
    }
    Ok(Run {
        naming,
        clock,
        ranks: runs,
        steps,
        base_time_ns,
        notes,
    })
}

fn clock_name(clock: Clock) -> &'static str {
    match clock {
        Clock::Cpu => "host",
        Clock::Gpu => "GPU",
    }
}

/// Each rank's trace, by `distributedInfo.rank` or by the order given.
fn assign_ranks(
    plan: &Plan,
    traces: Vec<RankTrace>,
    notes: &mut Vec<String>,
) -> Result<Vec<RankTrace>, Vec<Diagnostic>> {
    let ranks = plan.ranks() as usize;
    let mut problems = Vec::new();
    let named = traces.iter().filter(|t| t.rank.is_some()).count();
    if named == 0 {
        if traces.len() != ranks {
            let message = if traces.len() < ranks {
                let missing = (traces.len()..ranks)
                    .map(|r| r.to_string())
                    .collect::<Vec<_>>();
                format!(
                    "the plan has {ranks} ranks but {} traces were given: no trace for rank {}",
                    traces.len(),
                    short_list(&missing)
                )
            } else {
                format!(
                    "the plan has {ranks} ranks but {} traces were given",
                    traces.len()
                )
            };
            return Err(vec![Diagnostic::error(message).with_note(
                "no trace names its rank (no `distributedInfo`), so the files are taken in the order given",
            )]);
        }
        if ranks > 1 {
            notes.push(
                "no trace names its rank (no `distributedInfo`): the files were taken as ranks 0, 1, … in the order given".to_owned(),
            );
        }
        return Ok(traces);
    }
    if named < traces.len() {
        for t in traces.iter().filter(|t| t.rank.is_none()) {
            problems.push(
                Diagnostic::error("this trace names no rank while others do")
                    .with_span(Span::new(t.file, 0..0))
                    .with_help("give every rank's trace as `torch.distributed` wrote it"),
            );
        }
        return Err(problems);
    }
    let mut slots: Vec<Option<RankTrace>> = (0..ranks).map(|_| None).collect();
    for t in traces {
        let Some(rank) = t.rank.clone() else { continue };
        if let Some(size) = &t.world_size
            && size.value as usize != ranks
        {
            problems.push(
                Diagnostic::error(format!(
                    "this trace comes from a world of {} ranks, the plan has {ranks}",
                    size.value
                ))
                .with_span(Span::new(t.file, size.at.clone())),
            );
            continue;
        }
        let r = rank.value as usize;
        if r >= ranks {
            problems.push(
                Diagnostic::error(format!(
                    "rank {r} is not a rank of the plan, which has {ranks}"
                ))
                .with_span(Span::new(t.file, rank.at.clone())),
            );
            continue;
        }
        match &slots[r] {
            Some(other) => {
                let other_at = other.rank.as_ref().map_or(0..0, |l| l.at.clone());
                problems.push(
                    Diagnostic::error(format!("two traces are rank {r}"))
                        .with_span_label(Span::new(t.file, rank.at.clone()), "this one")
                        .with_label(Span::new(other.file, other_at), "and this one"),
                );
            }
            None => slots[r] = Some(t),
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let missing: Vec<String> = slots
        .iter()
        .enumerate()
        .filter(|(_, s)| s.is_none())
        .map(|(r, _)| r.to_string())
        .collect();
    if !missing.is_empty() {
        let s = if missing.len() == 1 { "" } else { "s" };
        return Err(vec![Diagnostic::error(format!(
            "no trace for rank{s} {} of the plan's {ranks}",
            short_list(&missing)
        ))]);
    }
    Ok(slots.into_iter().flatten().collect())
}

/// At most ten items, then how many more.
fn short_list(items: &[String]) -> String {
    if items.len() <= 10 {
        items.join(", ")
    } else {
        format!("{} and {} more", items[..10].join(", "), items.len() - 10)
    }
}

/// Whether a trace's cell is the lowered step.
fn same(cell: &StepCell, step: &Step) -> bool {
    match (*cell, *step) {
        (StepCell::Compute(a), Step::Compute(b)) => a == b,
        (
            StepCell::Recv { dir, stage, mb },
            Step::Recv {
                dir: d,
                stage: s,
                mb: m,
                ..
            },
        )
        | (
            StepCell::Send { dir, stage, mb },
            Step::Send {
                dir: d,
                stage: s,
                mb: m,
                ..
            },
        )
        | (
            StepCell::WaitSend { dir, stage, mb },
            Step::WaitSend {
                dir: d,
                stage: s,
                mb: m,
                ..
            },
        ) => dir == d && stage == s && mb == m,
        (StepCell::ReduceGrad { stage }, Step::ReduceGrad { stage: s })
        | (StepCell::WaitReduceGrad { stage }, Step::WaitReduceGrad { stage: s }) => stage == s,
        _ => false,
    }
}

/// One rank's spans against its lowered program.
fn match_rank(
    plan: &Plan,
    rank: u32,
    program: &[Step],
    trace: &RankTrace,
    shift: f64,
) -> Result<RankRun, Diagnostic> {
    let n = plan.program(rank).len();
    // Where each compute step sits in the lowered program, and the action index of each step.
    let mut action_at: Vec<Option<usize>> = Vec::with_capacity(program.len());
    let mut count = 0;
    for step in program {
        if matches!(step, Step::Compute(_)) {
            action_at.push(Some(count));
            count += 1;
        } else {
            action_at.push(None);
        }
    }
    let next_compute = |from: usize| (from..program.len()).find(|&q| action_at[q].is_some());
    let receives = Receives::of(program);
    let new_step = || RankStep {
        actions: vec![
            Timed {
                start: f64::NAN,
                dur: f64::NAN,
            };
            n
        ],
        others: Vec::new(),
        saved: vec![None; n],
        bounds: None,
    };
    let mut steps: Vec<RankStep> = Vec::new();
    let mut p = 0;
    let mut last: Option<&TraceSpan> = None;
    let mut last_action: Option<usize> = None;
    // The receives of the current step whose spans were seen, by their index in the program.
    let mut received: HashSet<usize> = HashSet::new();
    for span in &trace.spans {
        if matches!(
            span.cell,
            StepCell::Unshard { .. } | StepCell::Reshard { .. }
        ) {
            continue;
        }
        let timed = Timed {
            start: span.start + shift,
            dur: span.dur,
        };
        if steps.is_empty() {
            steps.push(new_step());
        }
        let is_compute = matches!(span.cell, StepCell::Compute(_));
        // Where the next compute step is, in this step or (when none is left) the next one.
        let (wrap, q) = match next_compute(p) {
            Some(q) => (false, Some(q)),
            None => (true, next_compute(0)),
        };
        if let StepCell::Recv { dir, stage, mb } = span.cell
            && !span.post
        {
            // A receive's span may stand anywhere between its posting and the action that
            // consumes its data (PlanRunner times the wait for the data right before that action).
            let next = q.unwrap_or(program.len());
            if wrap {
                steps.push(new_step());
                received.clear();
                last_action = None;
            }
            let i = place_recv(
                &receives,
                (plan, rank, trace, span),
                program,
                &action_at,
                next,
                (dir, stage, mb),
                &received,
                steps.len(),
            )?;
            received.insert(i);
            if let Some(step) = steps.last_mut() {
                step.others.push(TimedStep {
                    step: program[i],
                    after: last_action,
                    timed,
                    post: false,
                });
            }
            if wrap {
                p = 0;
            }
            last = Some(span);
            continue;
        }
        let found = if is_compute {
            q.filter(|&q| same(&span.cell, &program[q]))
                .map(|q| (wrap, q))
        } else {
            // This step's steps before its next compute action (all that is left of it when no
            // compute action is), then, when none is left, the next step's before its first.
            let end = if wrap {
                program.len()
            } else {
                q.unwrap_or(program.len())
            };
            (p..end)
                .find(|&i| same(&span.cell, &program[i]))
                .map(|i| (false, i))
                .or_else(|| {
                    wrap.then(|| {
                        (0..q.unwrap_or(program.len())).find(|&i| same(&span.cell, &program[i]))
                    })
                    .flatten()
                    .map(|i| (true, i))
                })
        };
        let Some((wrapped, i)) = found else {
            return Err(differs(
                plan,
                rank,
                trace,
                span,
                program,
                q,
                steps.len(),
                wrap,
                &action_at,
            ));
        };
        if wrapped {
            steps.push(new_step());
            received.clear();
            last_action = None;
        }
        let Some(step) = steps.last_mut() else {
            continue;
        };
        match (program[i], action_at[i]) {
            (_, Some(a)) => {
                step.actions[a] = timed;
                last_action = Some(a);
            }
            (other, None) => step.others.push(TimedStep {
                step: other,
                after: last_action,
                timed,
                post: span.post,
            }),
        }
        p = i + 1;
        last = Some(span);
    }
    if let (Some(q), Some(span)) = (next_compute(p), last) {
        let done = action_at[..q].iter().flatten().count();
        let expected = step_text(&program[q]);
        return Err(Diagnostic::error(format!(
            "rank {rank}'s trace stops in the middle of step {}: it ran {done} of the plan's {n} actions, the next is `{expected}`",
            steps.len()
        ))
        .with_span_label(Span::new(trace.file, span.at.clone()), "the last action of the trace")
        .with_note("a truncated trace, or a step the profiler cut short"));
    }
    if steps.is_empty() && n > 0 {
        return Err(Diagnostic::error(format!(
            "rank {rank}'s trace has none of the plan's actions"
        ))
        .with_span(Span::new(trace.file, 0..0)));
    }
    let has_saved = !trace.saved.is_empty();
    place_bounds(trace, shift, &mut steps);
    place_saved(plan, rank, trace, &mut steps)?;
    Ok(RankRun {
        file: trace.file,
        steps,
        has_saved,
        meta: trace.meta.clone(),
    })
}

/// How far a step's spans may stand outside its profiler step span, in microseconds: both are
/// the host's record_function spans, nested, written to the nanosecond.
const BOUNDS_SLACK_US: f64 = 0.002;

/// Gives each step the profiler step span that holds all of its spans, when one does.
fn place_bounds(trace: &RankTrace, shift: f64, steps: &mut [RankStep]) {
    let mut from = 0;
    for step in steps {
        let (first, last) = step
            .actions
            .iter()
            .copied()
            .chain(step.others.iter().map(|o| o.timed))
            .filter(|t| t.start.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), t| {
                (a.min(t.start), b.max(t.end()))
            });
        // A step with no timed span (none is: every step has its actions) has no bounds.
        if first.partial_cmp(&last).is_none_or(|o| o.is_gt()) {
            continue;
        }
        // Spans are sorted by start, and so are the steps: the candidate is the last span that
        // starts before the step's first span (one pass over the spans for all the steps).
        let spans = &trace.step_spans;
        while from + 1 < spans.len() && spans[from + 1].start + shift <= first + BOUNDS_SLACK_US {
            from += 1;
        }
        if let Some(s) = spans.get(from)
            && s.start + shift <= first + BOUNDS_SLACK_US
            && s.end() + shift + BOUNDS_SLACK_US >= last
        {
            step.bounds = Some(Timed {
                start: s.start + shift,
                dur: s.dur,
            });
        }
    }
}

/// Each receive of a program: where it is posted and where the action that consumes its data is.
struct Receives {
    /// By (direction, receiving stage, micro-batch): the receive's index in the program and the
    /// index of its consumer, when one follows it.
    at: HashMap<(Dir, u32, u32), (usize, Option<usize>)>,
}

impl Receives {
    fn of(program: &[Step]) -> Receives {
        // The first compute step that consumes each (direction, stage, micro-batch).
        let mut consumers: HashMap<(Dir, u32, u32), Vec<usize>> = HashMap::new();
        for (q, step) in program.iter().enumerate() {
            if let Step::Compute(action) = step {
                for op in action.ops() {
                    let dir = match op.kind {
                        Kind::F => Dir::Fwd,
                        Kind::B | Kind::I => Dir::Bwd,
                        Kind::W => continue,
                    };
                    consumers.entry((dir, op.stage, op.mb)).or_default().push(q);
                }
            }
        }
        let mut at = HashMap::new();
        for (i, step) in program.iter().enumerate() {
            if let Step::Recv { dir, stage, mb, .. } = *step {
                let consumer = consumers
                    .get(&(dir, stage, mb))
                    .and_then(|v| v.iter().copied().find(|&q| q > i));
                at.entry((dir, stage, mb)).or_insert((i, consumer));
            }
        }
        Receives { at }
    }
}

/// Where a receive's span goes in the program: its receive, when that is posted before the next
/// compute action (`next`, an index in the program) and consumed by it or a later one, and not
/// yet received in this step.
#[allow(clippy::too_many_arguments)]
fn place_recv(
    receives: &Receives,
    (plan, rank, trace, span): (&Plan, u32, &RankTrace, &TraceSpan),
    program: &[Step],
    action_at: &[Option<usize>],
    next: usize,
    key: (Dir, u32, u32),
    received: &HashSet<usize>,
    step: usize,
) -> Result<usize, Diagnostic> {
    let at = Span::new(trace.file, span.at.clone());
    let cell = span.cell;
    let number = |q: usize| action_at.get(q).copied().flatten().map_or(0, |a| a + 1);
    let Some(&(i, consumer)) = receives.at.get(&key) else {
        let mut d = Diagnostic::error(format!(
            "rank {rank}'s trace receives `{cell}` in step {step}, which rank {rank}'s lowered program never receives"
        ))
        .with_span_label(at, "this receive")
        .with_note(format!(
            "`pipeweave export --to pytorch-comms` writes rank {rank}'s lowered program"
        ));
        if plan.stage_rank(key.1).is_some_and(|r| r != rank) {
            d = d.with_help(
                "is this file another rank's trace? (`distributedInfo.rank` gives a file's rank)",
            );
        }
        return Err(d);
    };
    let Some(c) = consumer else {
        return Err(Diagnostic::error(format!(
            "rank {rank}'s trace receives `{cell}` in step {step}, data no later action of the plan consumes"
        ))
        .with_span_label(at, "this receive"));
    };
    if received.contains(&i) {
        return Err(Diagnostic::error(format!(
            "rank {rank}'s trace receives `{cell}` twice in step {step}"
        ))
        .with_span_label(at, "the second time"));
    }
    if c < next {
        return Err(Diagnostic::error(format!(
            "rank {rank}'s trace receives `{cell}` in step {step} after action {} `{}`, which consumes that data, has run",
            number(c),
            program[c]
        ))
        .with_span_label(at, "this receive")
        .with_note(
            "a receive's span stands between its posting and the action that consumes its data",
        ));
    }
    if let Some(posted) = (0..i).rev().find(|&q| action_at[q].is_some())
        && i > next
    {
        return Err(Diagnostic::error(format!(
            "rank {rank}'s trace receives `{cell}` in step {step} before action {} `{}`, but the plan posts that receive only after action {} `{}`",
            number(next),
            program.get(next).map_or_else(String::new, ToString::to_string),
            number(posted),
            program[posted],
        ))
        .with_span_label(at, "this receive")
        .with_note(
            "a receive's span stands between its posting and the action that consumes its data",
        ));
    }
    Ok(i)
}

/// The error for the first span that differs from the program.
#[allow(clippy::too_many_arguments)]
fn differs(
    plan: &Plan,
    rank: u32,
    trace: &RankTrace,
    span: &TraceSpan,
    program: &[Step],
    next: Option<usize>,
    steps: usize,
    wrap: bool,
    action_at: &[Option<usize>],
) -> Diagnostic {
    let step = if wrap { steps + 1 } else { steps.max(1) };
    let at = Span::new(trace.file, span.at.clone());
    let Some(q) = next else {
        return Diagnostic::error(format!(
            "rank {rank}'s trace runs `{}`, but the plan gives rank {rank} no actions",
            span.cell
        ))
        .with_span(at);
    };
    let index = action_at[q].unwrap_or(0);
    let expected = step_text(&program[q]);
    let what = match span.cell {
        StepCell::Compute(_) => "action",
        _ => "step",
    };
    let mut d = Diagnostic::error(format!(
        "rank {rank}'s trace differs from the plan at action {} of step {step}: it {} `{}` where the plan has `{expected}`",
        index + 1,
        if span.post { "posts" } else { "runs" },
        span.cell
    ))
    .with_span_label(at, format!("this {what}"));
    if !matches!(span.cell, StepCell::Compute(_)) {
        d = d.with_note(format!(
            "transfers, postings and waits must follow rank {rank}'s lowered program (`pipeweave export --to pytorch-comms` writes it)"
        ));
    }
    if plan.programs().iter().enumerate().any(|(r, p)| {
        r as u32 != rank && matches!(span.cell, StepCell::Compute(a) if p.contains(&a))
    }) {
        d = d.with_help(
            "is this file another rank's trace? (`distributedInfo.rank` gives a file's rank)",
        );
    }
    d
}

/// A lowered step's cell as traces name it (no peer).
fn step_text(step: &Step) -> String {
    step.to_string()
}

/// Puts each saved-bytes record on its action: the k-th record of an action is in step k.
fn place_saved(
    plan: &Plan,
    rank: u32,
    trace: &RankTrace,
    steps: &mut [RankStep],
) -> Result<(), Diagnostic> {
    if trace.saved.is_empty() {
        return Ok(());
    }
    let index: HashMap<Action, usize> = plan
        .program(rank)
        .iter()
        .enumerate()
        .map(|(i, a)| (*a, i))
        .collect();
    let mut seen = vec![0usize; index.len()];
    for record in &trace.saved {
        let StepCell::Compute(action) = record.cell else {
            continue;
        };
        let Some(&i) = index.get(&action) else {
            return Err(Diagnostic::error(format!(
                "rank {rank}'s trace records saved bytes after `{action}`, which the plan does not give rank {rank}"
            ))
            .with_span(Span::new(trace.file, record.at.clone())));
        };
        let k = seen[i];
        let Some(step) = steps.get_mut(k) else {
            return Err(Diagnostic::error(format!(
                "rank {rank}'s trace records saved bytes after `{action}` {} times, in {} steps",
                k + 1,
                steps.len()
            ))
            .with_span(Span::new(trace.file, record.at.clone())));
        };
        seen[i] += 1;
        step.saved[i] = Some(Saved {
            bytes: record.bytes,
            peak: record.peak,
        });
    }
    Ok(())
}
