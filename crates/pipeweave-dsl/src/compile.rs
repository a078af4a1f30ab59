//! The compiler: evaluates a resolved schedule for given parameters into a [`Plan`], keeping the
//! source span of every action so that problems found later point back at the line that made it.

use crate::budget::within_budget;
use crate::eval::{Fail, Failure, check, eval, fail};
use crate::ir::{MessagePart, Place, Resolved, SLOT_M, SLOT_P, TopStmt};
use crate::program::{Carried, Counters, Layout, Rank, STOPS, Tally};
use pipeweave_diagnostics::{Diagnostic, FileId, Span};
use pipeweave_param::{ParamType, Value};
use pipeweave_plan::memory;
use pipeweave_plan::{Action, Pipeline, Plan};
use std::ops::Range;

/// The parameters a schedule is compiled for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Args {
    /// P: the number of ranks.
    pub ranks: u32,
    /// M: micro-batches per training step, over all pipelines.
    pub microbatches: u32,
    /// Values for declared parameters (`--stages-per-rank` sets `v`, `--set NAME=VALUE` any), each
    /// of the parameter's type.
    pub values: Vec<(String, Value)>,
}

impl Args {
    /// P = `ranks` and M = `microbatches`, every declared parameter at its default.
    pub fn new(ranks: u32, microbatches: u32) -> Args {
        Args {
            ranks,
            microbatches,
            values: Vec::new(),
        }
    }

    /// Sets the declared parameter `name` to `value`.
    pub fn with(mut self, name: &str, value: impl Into<Value>) -> Args {
        self.values.push((name.to_owned(), value.into()));
        self
    }
}

/// A compiled plan and where each of its actions came from.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// The plan, not yet validated.
    pub plan: Plan,
    /// Where each of its actions was written.
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

    /// The origins of the actions `keep` keeps (by rank and position), in order: those of the
    /// plan made of those actions.
    pub fn only(self, keep: impl Fn(u32, usize) -> bool) -> Origins {
        let at = (0u32..)
            .zip(self.at)
            .map(|(rank, at)| {
                (0..)
                    .zip(at)
                    .filter(|&(i, _)| keep(rank, i))
                    .map(|(_, k)| k)
                    .collect()
            })
            .collect();
        Origins { at, ..self }
    }

    /// How many actions rank `rank`'s program has (0 for a rank the plan does not have).
    pub fn actions(&self, rank: u32) -> usize {
        self.at.get(rank as usize).map_or(0, Vec::len)
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
const MAX_STAGES: i64 = 1 << 16;
const MAX_MICROBATCHES: u32 = 1 << 24;

fn to_diag(file: FileId, f: Failure) -> Diagnostic {
    Diagnostic::error(f.message).with_span_label(Span::new(file, f.span), f.label)
}

/// The names and values of the parameters, for notes under errors: "with P = 4, M = 3, v = 2".
fn with_params(resolved: &Resolved, env: &[i64]) -> String {
    with_bound_params(resolved, env, &vec![true; resolved.params.len()])
}

/// P, M and the parameters with their values, but those in the slots `shown`; `None` when that
/// leaves none.
fn with_params_but(resolved: &Resolved, env: &[i64], shown: &[usize]) -> Option<String> {
    let mut parts: Vec<String> = [(SLOT_P, "P"), (SLOT_M, "M")]
        .into_iter()
        .filter(|(slot, _)| !shown.contains(slot))
        .map(|(slot, name)| format!("{name} = {}", env[slot]))
        .collect();
    for p in resolved.params.iter().filter(|p| !shown.contains(&p.slot)) {
        parts.push(format!(
            "{} = {}",
            p.name,
            crate::ir::shown(Some(&p.ty), env[p.slot])
        ));
    }
    (!parts.is_empty()).then(|| format!("with {}", parts.join(", ")))
}

/// P, M and the parameters `bound` marks, with their values.
fn with_bound_params(resolved: &Resolved, env: &[i64], bound: &[bool]) -> String {
    let mut parts = vec![
        format!("P = {}", env[SLOT_P]),
        format!("M = {}", env[SLOT_M]),
    ];
    let params = resolved.params.iter().zip(bound).filter(|(_, b)| **b);
    for (p, _) in params {
        parts.push(format!(
            "{} = {}",
            p.name,
            crate::ir::shown(Some(&p.ty), env[p.slot])
        ));
    }
    format!("with {}", parts.join(", "))
}

/// Compiles a resolved schedule for the given parameters.
pub(crate) fn compile(
    file: FileId,
    resolved: &Resolved,
    args: &Args,
) -> Result<Compiled, Vec<Diagnostic>> {
    let mut env = bind_params(file, resolved, args)?;
    run_top(file, resolved, &mut env)?;
    let note = |env: &[i64]| with_params(resolved, env);
    let (k, s) = structure(resolved, args, &env)
        .map_err(|f| vec![to_diag(file, *f).with_note(note(&env))])?;
    within_budget(resolved, args.microbatches, &env, s)
        .map_err(|f| vec![to_diag(file, *f).with_note(note(&env))])?;
    let pipelines = place(file, resolved, args, &mut env, k, s)?;
    let per = args.microbatches / k;
    let carried: Vec<Carried> = (0..k)
        .map(|j| Carried {
            base: j * per,
            count: per,
        })
        .collect();
    let mut chunks: Vec<Vec<u32>> = vec![Vec::new(); args.ranks as usize];
    for (j, p) in pipelines.iter().enumerate() {
        for (q, &r) in p.placement.iter().enumerate() {
            chunks[r as usize].push(j as u32 * s + q as u32);
        }
    }
    for c in &mut chunks {
        c.sort_unstable();
    }
    let layout = Layout {
        chunks: &chunks,
        stages: k * s,
        stages_per_pipeline: s,
        carried: &carried,
    };
    let (programs, at) = run_programs(file, resolved, &layout, &mut env)?;
    let place_span = resolved.place_span.clone().unwrap_or(0..0);
    let plan = Plan::new(args.ranks, pipelines, programs).map_err(|e| {
        vec![Diagnostic::error(e.to_string()).with_span(Span::new(file, place_span))]
    })?;
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

/// The environment with P, M and every parameter bound (given, or its default), or every problem
/// with the arguments: ranks or micro-batches out of range, unknown `--set` names, parameters
/// without a value.
pub(crate) fn bind_params(
    file: FileId,
    resolved: &Resolved,
    args: &Args,
) -> Result<Vec<i64>, Vec<Diagnostic>> {
    let mut diags = Vec::new();
    if args.ranks == 0 || args.ranks > pipeweave_plan::MAX_RANKS {
        diags.push(Diagnostic::error(format!(
            "the number of ranks must be between 1 and {}, got {}",
            pipeweave_plan::MAX_RANKS,
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
    // Which parameters have a value so far (for the notes under errors).
    let mut bound = vec![false; resolved.params.len()];
    for (i, p) in resolved.params.iter().enumerate() {
        let given = args.values.iter().rev().find(|(n, _)| *n == p.name);
        let value = match (given, &p.default) {
            (Some((_, v)), _) => {
                let n = number(&p.ty, v);
                if n.is_none() {
                    diags.push(Diagnostic::error(p.ty.error(&p.name, v).to_string()));
                }
                n
            }
            (None, Some(x)) => match eval(x, &env) {
                Ok(v) if admits(&p.ty, v) => Some(v),
                Ok(v) => {
                    let d = Diagnostic::error(p.ty.error(&p.name, v).to_string()).with_span_label(
                        Span::new(file, x.span.clone()),
                        format!("the default gives {v}"),
                    );
                    diags.push(d.with_note(with_bound_params(resolved, &env, &bound)));
                    None
                }
                Err(f) => {
                    diags.push(to_diag(file, *f));
                    None
                }
            },
            (None, None) => {
                diags.push(
                    Diagnostic::error(format!("parameter `{}` has no default", p.name))
                        .with_span_label(
                            Span::new(file, p.span.clone()),
                            "declared without a default",
                        )
                        .with_help(format!(
                            "give it a value: --set {}={}",
                            p.name,
                            match &p.ty {
                                ParamType::Bool => "true|false".to_owned(),
                                ParamType::Int(_) => "N".to_owned(),
                                ParamType::Choice(options) => options.join("|"),
                            }
                        )),
                );
                None
            }
        };
        env[p.slot] = value.unwrap_or(0);
        bound[i] = value.is_some();
    }
    if diags.is_empty() {
        Ok(env)
    } else {
        Err(diags)
    }
}

/// A value of type `ty` in the environment: a bool as 1 or 0, a choice as its option's index;
/// `None` when the type does not take it.
fn number(ty: &ParamType, v: &Value) -> Option<i64> {
    if !ty.admits(v) {
        return None;
    }
    match (ty, v) {
        (_, Value::Bool(b)) => Some(i64::from(*b)),
        (_, Value::Int(n)) => Some(*n),
        (ParamType::Choice(options), Value::Choice(o)) => {
            options.iter().position(|x| x == o).map(|i| i as i64)
        }
        _ => None,
    }
}

/// Whether an evaluated default is a value of `ty` (a bool's is 1 or 0; a choice's default is an
/// option by construction).
fn admits(ty: &ParamType, v: i64) -> bool {
    match ty {
        ParamType::Bool => v == 0 || v == 1,
        ParamType::Int(range) => range.contains(v),
        ParamType::Choice(options) => usize::try_from(v).is_ok_and(|i| i < options.len()),
    }
}

/// Whether the top-level requirements hold for `args`: `Ok(false)` when a top-level `require`
/// fails, errors when the parameters cannot be bound or a top-level `let` fails.
pub(crate) fn admits_args(
    file: FileId,
    resolved: &Resolved,
    args: &Args,
) -> Result<bool, Vec<Diagnostic>> {
    let mut env = bind_params(file, resolved, args)?;
    for t in &resolved.top {
        match t {
            TopStmt::Set(slot, x) => match eval(x, &env) {
                Ok(v) => env[*slot] = v,
                Err(f) => {
                    return Err(vec![
                        to_diag(file, *f).with_note(with_params(resolved, &env)),
                    ]);
                }
            },
            TopStmt::Require(req) => match eval(&req.cond, &env) {
                Ok(0) => return Ok(false),
                Ok(_) => {}
                Err(f) => {
                    return Err(vec![
                        to_diag(file, *f).with_note(with_params(resolved, &env)),
                    ]);
                }
            },
        }
    }
    Ok(true)
}

/// Runs the top-level `let`s and `require`s in file order: a failed `let` stops there, failed
/// requirements are all reported.
pub(crate) fn run_top(
    file: FileId,
    resolved: &Resolved,
    env: &mut [i64],
) -> Result<(), Vec<Diagnostic>> {
    let mut diags = Vec::new();
    for t in &resolved.top {
        match t {
            TopStmt::Set(slot, x) => match eval(x, env) {
                Ok(v) => env[*slot] = v,
                Err(f) => {
                    diags.push(to_diag(file, *f).with_note(with_params(resolved, env)));
                    return Err(diags);
                }
            },
            TopStmt::Require(req) => {
                // The values that fail it go with the message (those its holes do not show
                // already), so that a row or a sweep point that shows only the message still
                // shows them.
                if let Err(mut f) = check(req, env) {
                    let shown: Vec<usize> = req
                        .message
                        .iter()
                        .filter_map(|p| match p {
                            MessagePart::Slot(slot, _) => Some(*slot),
                            MessagePart::Text(_) => None,
                        })
                        .collect();
                    if let Some(with) = with_params_but(resolved, env, &shown) {
                        f.message = format!("{} ({with})", f.message);
                    }
                    diags.push(to_diag(file, *f));
                }
            }
        }
    }
    if diags.is_empty() { Ok(()) } else { Err(diags) }
}

/// The number of pipelines K and of stages per pipeline S.
fn structure(resolved: &Resolved, args: &Args, env: &[i64]) -> Result<(u32, u32), Fail> {
    let k = match &resolved.pipelines {
        Some(x) => {
            let k = eval(x, env)?;
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
    let s = eval(&resolved.stages, env)?;
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
}

/// The K pipelines: each stage's rank by the placement, and equal shares of the micro-batches.
fn place(
    file: FileId,
    resolved: &Resolved,
    args: &Args,
    env: &mut [i64],
    k: u32,
    s: u32,
) -> Result<Vec<Pipeline>, Vec<Diagnostic>> {
    let ranks = args.ranks;
    let place_span = resolved.place_span.clone().unwrap_or(0..0);
    let mut pipelines = Vec::with_capacity(k as usize);
    let per = args.microbatches / k;
    for j in 0..k {
        let mut placement = Vec::with_capacity(s as usize);
        for q in 0..s {
            let rank = match &resolved.place {
                Place::Loop => i64::from(q % ranks),
                Place::VShape => {
                    let (block, off) = (q / ranks, q % ranks);
                    i64::from(if block % 2 == 0 { off } else { ranks - 1 - off })
                }
                Place::Mirror => {
                    let off = q % ranks;
                    i64::from(if j % 2 == 0 { off } else { ranks - 1 - off })
                }
                Place::Expr(x) => {
                    env[resolved.slot_j] = i64::from(j);
                    env[resolved.slot_q] = i64::from(q);
                    eval(x, env).map_err(|f| {
                        vec![to_diag(file, *f).with_note(with_params(resolved, env))]
                    })?
                }
            };
            let Some(rank) = u32::try_from(rank).ok().filter(|&r| r < ranks) else {
                let d = Diagnostic::error(format!(
                    "stage {q} of pipeline {j} is placed on rank {rank}, which does not exist"
                ))
                .with_span_label(
                    Span::new(file, place_span),
                    format!("ranks are 0 to {}", ranks - 1),
                )
                .with_note(with_params(resolved, env));
                return Err(vec![d]);
            };
            placement.push(rank);
        }
        pipelines.push(Pipeline {
            placement,
            microbatches: (j * per..(j + 1) * per).collect(),
        });
    }
    Ok(pipelines)
}

/// Every rank's actions, and `at[r][i]`: the origin of rank r's i-th action.
type Programs = (Vec<Vec<Action>>, Vec<Vec<u32>>);

/// Runs every rank's program. A rank stops at its first error; errors from the same place are
/// merged into one diagnostic naming the ranks.
fn run_programs(
    file: FileId,
    resolved: &Resolved,
    layout: &Layout<'_>,
    env: &mut [i64],
) -> Result<Programs, Vec<Diagnostic>> {
    let ranks = layout.chunks.len() as u32;
    let mut programs = Vec::with_capacity(ranks as usize);
    let mut at = Vec::with_capacity(ranks as usize);
    let mut failures: Vec<(Fail, Vec<u32>, String)> = Vec::new();
    // The room for the least every program holds, asked for whole first so that an error names
    // all of it (each rank then reserves its own part).
    let least = (0..ranks).map(|r| layout.least_actions(r)).sum();
    if let Err(e) = memory::with_capacity::<Action>(least, "the programs being built") {
        return Err(vec![
            to_diag(
                file,
                *fail(&resolved.program_span, e.to_string(), "building this"),
            )
            .with_note(with_params(resolved, env)),
        ]);
    }
    let mut tally = Tally::default();
    let mut counters = Counters::new(layout.stages);
    for rank in 0..ranks {
        env[resolved.slot_r] = i64::from(rank);
        let mut state = Rank::new(rank, layout, &mut counters, &mut tally);
        let result = match state.reserve(layout.least_actions(rank)) {
            Ok(()) => state.run(&resolved.program, env),
            Err(e) => Err(fail(&resolved.program_span, e.to_string(), "building this")),
        };
        let (out, origin) = (state.out, state.origin);
        counters.clear();
        if let Err(f) = result {
            let stop = STOPS.iter().any(|s| f.message.starts_with(s));
            match failures.iter_mut().find(|(g, _, _)| g.span == f.span) {
                Some((_, ranks, _)) => ranks.push(rank),
                None => failures.push((f, vec![rank], with_params(resolved, env))),
            }
            if stop {
                break;
            }
        }
        programs.push(out);
        at.push(origin);
    }
    if failures.is_empty() {
        return Ok((programs, at));
    }
    Err(failures
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
            to_diag(file, *f).with_note(format!("{which}, {note}, r = {first}"))
        })
        .collect())
}
