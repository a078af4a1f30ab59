//! The compiler: evaluates a resolved schedule for given parameters into a [`Plan`], keeping the
//! source span of every action so that problems found later point back at the line that made it.

use crate::resolve::{A, AN, Part, Req, Resolved, ResolvedPlace, S, SLOT_M, SLOT_P, T, Top, X, XK};
use crate::syntax::BinOp;
use pipeweave_diagnostics::{Diagnostic, FileId, Span};
use pipeweave_plan::{Action, Kind, Op, Pipeline, Plan};
use std::collections::VecDeque;
use std::ops::Range;

/// The parameters a schedule is compiled for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Args {
    /// P: the number of ranks.
    pub ranks: u32,
    /// M: micro-batches per training step, over all pipelines.
    pub microbatches: u32,
    /// Values for declared parameters (`--stages-per-rank` sets `v`, `--set NAME=VALUE` any).
    pub values: Vec<(String, i64)>,
}

impl Args {
    pub fn new(ranks: u32, microbatches: u32) -> Args {
        Args {
            ranks,
            microbatches,
            values: Vec::new(),
        }
    }

    pub fn with(mut self, name: &str, value: i64) -> Args {
        self.values.push((name.to_owned(), value));
        self
    }
}

/// A compiled plan and where each of its actions came from.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub plan: Plan,
    pub origins: Origins,
}

/// The source span of every action of a plan, per rank and position.
#[derive(Debug, Clone)]
pub struct Origins {
    file: FileId,
    spans: Vec<Range<usize>>,
    /// `at[r][i]` indexes `spans` for rank r's i-th action.
    at: Vec<Vec<u32>>,
    program: Range<usize>,
}

impl Origins {
    /// Where rank `rank`'s action at `position` was written; `None` for a position past the end.
    pub fn span(&self, rank: u32, position: usize) -> Option<Span> {
        let i = *self.at.get(rank as usize)?.get(position)?;
        let range = self.spans.get(i as usize)?.clone();
        Some(Span::new(self.file, range))
    }

    /// The span of the `program` item (for problems at the end of a rank's program).
    pub fn program(&self) -> Span {
        Span::new(self.file, self.program.clone())
    }

    /// A diagnostic for a problem a later phase found at (rank, position), pointing at the source.
    ///
    /// `position` is `None` for problems about the end of a program (work that never happens).
    pub fn diagnostic(&self, rank: u32, position: Option<usize>, message: &str) -> Diagnostic {
        let d = Diagnostic::error(message.to_owned());
        match position.and_then(|p| self.span(rank, p).map(|s| (p, s))) {
            Some((p, span)) => d.with_span_label(
                span,
                format!("rank {rank}, action {} comes from here", p + 1),
            ),
            None => d.with_span_label(self.program(), format!("in the program of rank {rank}")),
        }
    }
}

/// Upper bounds that keep a runaway schedule from exhausting memory or time.
const MAX_STEPS: u64 = 1 << 26;
const MAX_STAGES: i64 = 1 << 16;
const MAX_RANKS: u32 = 1 << 16;
const MAX_MICROBATCHES: u32 = 1 << 24;

/// An evaluation error: where, what, and the label under the marker.
struct Fail {
    span: Range<usize>,
    message: String,
    label: String,
}

fn fail(span: &Range<usize>, message: impl Into<String>, label: impl Into<String>) -> Fail {
    Fail {
        span: span.clone(),
        message: message.into(),
        label: label.into(),
    }
}

fn floor_div(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    Some(if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    })
}

fn eval(x: &X, env: &[i64]) -> Result<i64, Fail> {
    Ok(match &x.k {
        XK::Const(v) => *v,
        XK::Slot(s) => env[*s],
        XK::Neg(a) => eval(a, env)?
            .checked_neg()
            .ok_or_else(|| fail(&x.span, "integer overflow", "overflows"))?,
        XK::Not(a) => i64::from(eval(a, env)? == 0),
        XK::Bin(op, a, b) => {
            let a = eval(a, env)?;
            // `and` and `or` do not evaluate their right side when the left decides.
            match op {
                BinOp::And if a == 0 => return Ok(0),
                BinOp::Or if a != 0 => return Ok(1),
                _ => {}
            }
            let b = eval(b, env)?;
            let overflow = || fail(&x.span, "integer overflow", "overflows");
            match op {
                BinOp::Add => a.checked_add(b).ok_or_else(overflow)?,
                BinOp::Sub => a.checked_sub(b).ok_or_else(overflow)?,
                BinOp::Mul => a.checked_mul(b).ok_or_else(overflow)?,
                BinOp::Div | BinOp::Rem if b == 0 => {
                    return Err(fail(&x.span, "division by zero", "divides by zero"));
                }
                BinOp::Div => floor_div(a, b).ok_or_else(overflow)?,
                BinOp::Rem => {
                    let q = floor_div(a, b).ok_or_else(overflow)?;
                    a - b * q
                }
                BinOp::Lt => i64::from(a < b),
                BinOp::Le => i64::from(a <= b),
                BinOp::Gt => i64::from(a > b),
                BinOp::Ge => i64::from(a >= b),
                BinOp::Eq => i64::from(a == b),
                BinOp::Ne => i64::from(a != b),
                BinOp::And | BinOp::Or => i64::from(b != 0),
            }
        }
        XK::Min(args) => {
            let mut m = i64::MAX;
            for a in args {
                m = m.min(eval(a, env)?);
            }
            m
        }
        XK::Max(args) => {
            let mut m = i64::MIN;
            for a in args {
                m = m.max(eval(a, env)?);
            }
            m
        }
        XK::If(c, a, b) => {
            if eval(c, env)? != 0 {
                eval(a, env)?
            } else {
                eval(b, env)?
            }
        }
    })
}

fn message(parts: &[Part], env: &[i64]) -> String {
    parts
        .iter()
        .map(|p| match p {
            Part::Text(t) => t.clone(),
            Part::Slot(s) => env[*s].to_string(),
        })
        .collect()
}

/// Where a stage's micro-batches come from: pipeline j carries `base..base + count`.
#[derive(Clone, Copy)]
struct Carried {
    base: u32,
    count: u32,
}

/// Per-rank state of the program interpreter.
struct Rank<'a> {
    rank: u32,
    chunks: &'a [u32],
    stages: u32,
    stages_per_pipeline: u32,
    carried: &'a [Carried],
    next_f: Vec<u32>,
    next_b: Vec<u32>,
    pending_w: VecDeque<(u32, u32)>,
    out: Vec<Action>,
    origin: Vec<u32>,
    steps: &'a mut u64,
}

impl Rank<'_> {
    fn stage(&self, a: &AN, env: &[i64]) -> Result<u32, Fail> {
        match &a.target {
            T::Only => match self.chunks {
                [only] => Ok(*only),
                [] => Err(fail(
                    &a.span,
                    "this rank hosts no stage",
                    format!("rank {} hosts no stage", self.rank),
                )),
                many => Err(fail(
                    &a.span,
                    format!(
                        "which chunk? rank {} hosts {} stages",
                        self.rank,
                        many.len()
                    ),
                    format!(
                        "name a chunk: {0}0 to {0}{1}",
                        a.kind.letter(),
                        many.len() - 1
                    ),
                )),
            },
            T::Chunk(x) => {
                let c = eval(x, env)?;
                usize::try_from(c)
                    .ok()
                    .and_then(|c| self.chunks.get(c).copied())
                    .ok_or_else(|| {
                        fail(
                            &x.span,
                            format!(
                                "chunk {c} does not exist: rank {} hosts {} stage{}",
                                self.rank,
                                self.chunks.len(),
                                if self.chunks.len() == 1 { "" } else { "s" }
                            ),
                            format!("chunks are 0 to {}", self.chunks.len() as i64 - 1),
                        )
                    })
            }
            T::Stage(x) => {
                let s = eval(x, env)?;
                u32::try_from(s)
                    .ok()
                    .filter(|&s| s < self.stages)
                    .ok_or_else(|| {
                        fail(
                            &x.span,
                            format!("stage {s} does not exist"),
                            format!("stages are 0 to {}", self.stages - 1),
                        )
                    })
            }
        }
    }

    /// The op an action node stands for, or `None` when it is optional and has nothing to do.
    fn op(&mut self, a: &AN, env: &[i64]) -> Result<Option<Op>, Fail> {
        // A bare W takes the rank's oldest pending weight gradient, whatever its stage.
        if a.kind == Kind::W && a.mb.is_none() && matches!(a.target, T::Only) {
            return match self.pending_w.pop_front() {
                Some((s, m)) => Ok(Some(Op::new(s, Kind::W, m))),
                None if a.optional => Ok(None),
                None => Err(fail(
                    &a.span,
                    "no weight gradient is pending here",
                    format!("rank {} has run no I whose W is still due", self.rank),
                )),
            };
        }
        let stage = self.stage(a, env)?;
        let pipeline = (stage / self.stages_per_pipeline) as usize;
        let Carried { base, count } = self.carried[pipeline];
        let word = match a.kind {
            Kind::F => "forward",
            Kind::B | Kind::I => "backward",
            Kind::W => "weight-gradient",
        };
        if let Some(x) = &a.mb {
            let m = eval(x, env)?;
            let Some(m) = u32::try_from(m).ok().filter(|&m| m < count) else {
                if a.optional {
                    return Ok(None);
                }
                return Err(fail(
                    &x.span,
                    format!("micro-batch {m} does not exist"),
                    format!(
                        "pipeline {pipeline} carries micro-batches 0 to {}",
                        count as i64 - 1
                    ),
                ));
            };
            if a.kind == Kind::I {
                self.pending_w.push_back((stage, base + m));
            }
            if a.kind == Kind::W
                && let Some(i) = self.pending_w.iter().position(|&p| p == (stage, base + m))
            {
                self.pending_w.remove(i);
            }
            return Ok(Some(Op::new(stage, a.kind, base + m)));
        }
        if a.kind == Kind::W {
            let found = self.pending_w.iter().position(|&(s, _)| s == stage);
            return match found.and_then(|i| self.pending_w.remove(i)) {
                Some((s, m)) => Ok(Some(Op::new(s, Kind::W, m))),
                None if a.optional => Ok(None),
                None => Err(fail(
                    &a.span,
                    "no weight gradient is pending here",
                    format!("stage {stage} has no I whose W is still due"),
                )),
            };
        }
        let counter = if a.kind == Kind::F {
            &mut self.next_f[stage as usize]
        } else {
            &mut self.next_b[stage as usize]
        };
        if *counter >= count {
            if a.optional {
                return Ok(None);
            }
            return Err(fail(
                &a.span,
                format!(
                    "no {word} left on stage {stage}: its counter runs past the {count} micro-batches of pipeline {pipeline}"
                ),
                format!("stage {stage} already ran all {count} {word}s"),
            ));
        }
        let m = base + *counter;
        *counter += 1;
        if a.kind == Kind::I {
            self.pending_w.push_back((stage, m));
        }
        Ok(Some(Op::new(stage, a.kind, m)))
    }

    fn push(&mut self, action: Action, origin: u32) {
        self.out.push(action);
        self.origin.push(origin);
    }

    fn tick(&mut self, span: &Range<usize>) -> Result<(), Fail> {
        *self.steps += 1;
        if *self.steps > MAX_STEPS {
            return Err(fail(
                span,
                format!("the schedule runs more than {MAX_STEPS} steps"),
                "stopped here",
            ));
        }
        Ok(())
    }

    fn count(x: &X, env: &[i64], what: &str) -> Result<i64, Fail> {
        let n = eval(x, env)?;
        if n < 0 {
            return Err(fail(
                &x.span,
                format!("{what} is negative ({n})"),
                "negative",
            ));
        }
        Ok(n)
    }

    fn run(&mut self, body: &[S], env: &mut [i64]) -> Result<(), Fail> {
        for s in body {
            match s {
                S::Set(slot, x) => env[*slot] = eval(x, env)?,
                S::Require(req) => check(req, env)?,
                S::Repeat { count, body, span } => {
                    let n = Self::count(count, env, "repeat count")?;
                    for _ in 0..n {
                        self.tick(span)?;
                        self.run(body, env)?;
                    }
                }
                S::For {
                    slot,
                    from,
                    to,
                    body,
                    span,
                } => {
                    let a = eval(from, env)?;
                    let b = eval(to, env)?;
                    if b < a {
                        return Err(fail(
                            &(from.span.start..to.span.end),
                            format!("the range {a}..{b} runs backwards"),
                            "end is before start",
                        ));
                    }
                    for i in a..b {
                        self.tick(span)?;
                        env[*slot] = i;
                        self.run(body, env)?;
                    }
                }
                S::If {
                    cond,
                    then,
                    otherwise,
                } => {
                    if eval(cond, env)? != 0 {
                        self.run(then, env)?;
                    } else {
                        self.run(otherwise, env)?;
                    }
                }
                S::Steps(steps) => {
                    for step in steps {
                        match step {
                            A::One(a, origin) => {
                                if let Some(op) = self.op(a, env)? {
                                    self.push(Action::One(op), *origin);
                                }
                            }
                            A::Pair(f, b, origin) => {
                                let f = self.op(f, env)?;
                                let b = self.op(b, env)?;
                                match (f, b) {
                                    (Some(f), Some(b)) => self.push(Action::Pair { f, b }, *origin),
                                    (Some(one), None) | (None, Some(one)) => {
                                        self.push(Action::One(one), *origin)
                                    }
                                    (None, None) => {}
                                }
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

fn check(req: &Req, env: &[i64]) -> Result<(), Fail> {
    if eval(&req.cond, env)? != 0 {
        return Ok(());
    }
    Err(fail(
        &req.span,
        message(&req.message, env),
        "this requirement fails",
    ))
}

/// The names and values of the parameters, for notes under errors: "with P = 4, M = 3, v = 2".
fn with_params(resolved: &Resolved, env: &[i64]) -> String {
    let mut parts = vec![
        format!("P = {}", env[SLOT_P]),
        format!("M = {}", env[SLOT_M]),
    ];
    for p in &resolved.params {
        parts.push(format!("{} = {}", p.name, env[p.slot]));
    }
    format!("with {}", parts.join(", "))
}

/// Compiles a resolved schedule for the given parameters.
pub(crate) fn compile(
    file: FileId,
    resolved: &Resolved,
    args: &Args,
) -> Result<Compiled, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    let sp = |range: &Range<usize>| Span::new(file, range.clone());
    let to_diag = |f: Fail| Diagnostic::error(f.message).with_span_label(sp(&f.span), f.label);

    if args.ranks == 0 || args.ranks > MAX_RANKS {
        diags.push(Diagnostic::error(format!(
            "the number of ranks must be between 1 and {MAX_RANKS}, got {}",
            args.ranks
        )));
    }
    if args.microbatches == 0 || args.microbatches > MAX_MICROBATCHES {
        diags.push(Diagnostic::error(format!(
            "the number of micro-batches must be between 1 and {MAX_MICROBATCHES}, got {}",
            args.microbatches
        )));
    }
    let mut env = vec![0i64; resolved.slots];
    env[SLOT_P] = i64::from(args.ranks);
    env[SLOT_M] = i64::from(args.microbatches);

    let mut names: Vec<&str> = resolved.params.iter().map(|p| p.name.as_str()).collect();
    names.sort_unstable();
    for (name, _) in &args.values {
        if !resolved.params.iter().any(|p| p.name == *name) {
            let d = Diagnostic::error(format!("the schedule has no parameter `{name}`"));
            diags.push(if names.is_empty() {
                d.with_note("it takes only P and M")
            } else {
                d.with_note(format!("its parameters are {}", names.join(", ")))
            });
        }
    }
    for p in &resolved.params {
        let given = args.values.iter().rev().find(|(n, _)| *n == p.name);
        env[p.slot] = match (given, &p.default) {
            (Some((_, v)), _) => *v,
            (None, Some(x)) => match eval(x, &env) {
                Ok(v) => v,
                Err(f) => {
                    diags.push(to_diag(f));
                    0
                }
            },
            (None, None) => {
                diags.push(
                    Diagnostic::error(format!("parameter `{}` has no default", p.name))
                        .with_span_label(sp(&p.span), "declared without a default")
                        .with_help(format!("give it a value: --set {}=N", p.name)),
                );
                0
            }
        };
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    let note = |env: &[i64]| with_params(resolved, env);

    for t in &resolved.top {
        match t {
            Top::Set(slot, x) => match eval(x, &env) {
                Ok(v) => env[*slot] = v,
                Err(f) => {
                    diags.push(to_diag(f).with_note(note(&env)));
                    return Err(diags);
                }
            },
            Top::Require(req) => {
                if let Err(f) = check(req, &env) {
                    diags.push(to_diag(f).with_note(note(&env)));
                }
            }
        }
    }
    if !diags.is_empty() {
        return Err(diags);
    }

    // Structure: pipelines, stages, placement, micro-batches per pipeline.
    let ranks = args.ranks;
    let structure = (|| -> Result<(u32, u32), Fail> {
        let k = match &resolved.pipelines {
            Some(x) => {
                let k = eval(x, &env)?;
                if !(1..=64).contains(&k) {
                    return Err(fail(
                        &x.span,
                        format!("the number of pipelines must be between 1 and 64, got {k}"),
                        "out of range",
                    ));
                }
                k
            }
            None => 1,
        };
        let s = eval(&resolved.stages, &env)?;
        if !(1..=MAX_STAGES).contains(&s) || s * k > MAX_STAGES {
            return Err(fail(
                &resolved.stages.span,
                format!("the number of stages must be between 1 and {MAX_STAGES}, got {s}"),
                "out of range",
            ));
        }
        if i64::from(args.microbatches) % k != 0 {
            let span = resolved.pipelines.as_ref().map_or(0..0, |x| x.span.clone());
            return Err(fail(
                &span,
                format!(
                    "{} micro-batches cannot be split evenly over {k} pipelines",
                    args.microbatches
                ),
                "pipelines carry equal shares of M",
            ));
        }
        Ok((k as u32, s as u32))
    })();
    let (k, s) = match structure {
        Ok(v) => v,
        Err(f) => return Err(vec![to_diag(f).with_note(note(&env))]),
    };
    let place_span = resolved.place_span.clone().unwrap_or(0..0);
    let mut pipelines = Vec::with_capacity(k as usize);
    let per = args.microbatches / k;
    for j in 0..k {
        let mut placement = Vec::with_capacity(s as usize);
        for q in 0..s {
            let rank = match &resolved.place {
                ResolvedPlace::Loop => i64::from(q % ranks),
                ResolvedPlace::VShape => {
                    let (block, off) = (q / ranks, q % ranks);
                    i64::from(if block % 2 == 0 { off } else { ranks - 1 - off })
                }
                ResolvedPlace::Mirror => {
                    let off = q % ranks;
                    i64::from(if j % 2 == 0 { off } else { ranks - 1 - off })
                }
                ResolvedPlace::Expr(x) => {
                    env[resolved.slot_j] = i64::from(j);
                    env[resolved.slot_q] = i64::from(q);
                    match eval(x, &env) {
                        Ok(v) => v,
                        Err(f) => return Err(vec![to_diag(f).with_note(note(&env))]),
                    }
                }
            };
            let Some(rank) = u32::try_from(rank).ok().filter(|&r| r < ranks) else {
                let d = Diagnostic::error(format!(
                    "stage {q} of pipeline {j} is placed on rank {rank}, which does not exist"
                ))
                .with_span_label(sp(&place_span), format!("ranks are 0 to {}", ranks - 1))
                .with_note(note(&env));
                return Err(vec![d]);
            };
            placement.push(rank);
        }
        pipelines.push(Pipeline {
            placement,
            microbatches: (j * per..(j + 1) * per).collect(),
        });
    }
    let carried: Vec<Carried> = (0..k)
        .map(|j| Carried {
            base: j * per,
            count: per,
        })
        .collect();
    let n_stages = k * s;
    let mut chunks: Vec<Vec<u32>> = vec![Vec::new(); ranks as usize];
    for (j, p) in pipelines.iter().enumerate() {
        for (q, &r) in p.placement.iter().enumerate() {
            chunks[r as usize].push(j as u32 * s + q as u32);
        }
    }
    for c in &mut chunks {
        c.sort_unstable();
    }

    // The programs. A rank stops at its first error; errors from the same place are merged.
    let mut programs = Vec::with_capacity(ranks as usize);
    let mut at = Vec::with_capacity(ranks as usize);
    let mut failures: Vec<(Fail, Vec<u32>, String)> = Vec::new();
    let mut steps = 0u64;
    for rank in 0..ranks {
        env[resolved.slot_r] = i64::from(rank);
        let mut state = Rank {
            rank,
            chunks: &chunks[rank as usize],
            stages: n_stages,
            stages_per_pipeline: s,
            carried: &carried,
            next_f: vec![0; n_stages as usize],
            next_b: vec![0; n_stages as usize],
            pending_w: VecDeque::new(),
            out: Vec::new(),
            origin: Vec::new(),
            steps: &mut steps,
        };
        let result = state.run(&resolved.program, &mut env);
        let (out, origin) = (state.out, state.origin);
        if let Err(f) = result {
            let stop = f.message.starts_with("the schedule runs more than");
            match failures.iter_mut().find(|(g, _, _)| g.span == f.span) {
                Some((_, ranks, _)) => ranks.push(rank),
                None => failures.push((f, vec![rank], note(&env))),
            }
            if stop {
                break;
            }
        }
        programs.push(out);
        at.push(origin);
    }
    if !failures.is_empty() {
        return Err(failures
            .into_iter()
            .map(|(f, ranks, note)| {
                let first = ranks[0];
                let which = match ranks.len() {
                    1 => format!("on rank {first}"),
                    n => format!(
                        "on rank {first} and {} other rank{}",
                        n - 1,
                        if n == 2 { "" } else { "s" }
                    ),
                };
                to_diag(f).with_note(format!("{which}, {note}, r = {first}"))
            })
            .collect());
    }
    let plan = Plan::new(ranks, pipelines, programs)
        .map_err(|e| vec![Diagnostic::error(e.to_string()).with_span(sp(&place_span))])?;
    Ok(Compiled {
        plan,
        origins: Origins {
            file,
            spans: resolved.origins.clone(),
            at,
            program: resolved.program_span.clone(),
        },
    })
}
