//! The program interpreter: runs the resolved `program` for one rank, turning action nodes into
//! concrete ops (stage, kind, micro-batch) with per-stage counters and the queue of pending
//! weight gradients, and recording the origin of every action.

use crate::eval::{Fail, check, eval, fail};
use crate::ir::{ActionNode, Expr, Step, Stmt, Target};
use pipeweave_plan::memory::{self, OutOfMemory};
use pipeweave_plan::{Action, Kind, MAX_OPS, Op};
use std::collections::VecDeque;
use std::ops::Range;

/// At most this many loop iterations over all ranks: a runaway schedule stops with an error.
const MAX_STEPS: u64 = 1 << 26;

/// Where a stage's micro-batches come from: pipeline j carries `base..base + count`.
#[derive(Clone, Copy)]
pub(crate) struct Carried {
    pub base: u32,
    pub count: u32,
}

/// The shape every rank's program runs in.
pub(crate) struct Layout<'a> {
    /// `chunks[r]`: the stages rank r hosts, ascending.
    pub chunks: &'a [Vec<u32>],
    /// Stages over all pipelines.
    pub stages: u32,
    pub stages_per_pipeline: u32,
    /// Per pipeline.
    pub carried: &'a [Carried],
}

impl Layout<'_> {
    /// The fewest actions rank `rank`'s program can hold and be valid: a forward and a backward
    /// of every micro-batch of its pipeline on each of its stages.
    pub(crate) fn least_actions(&self, rank: u32) -> usize {
        self.chunks[rank as usize]
            .iter()
            .map(|&s| 2 * self.carried[(s / self.stages_per_pipeline) as usize].count as usize)
            .sum()
    }
}

/// Every stage's next counted forward and backward (F; B or I) on the rank being run: one table
/// for all the ranks, cleared after each of the few stages a rank touched (a table per rank made
/// compiling quadratic in the ranks: 65,536 ranks of one stage each cleared 34 GB).
pub(crate) struct Counters {
    next: Vec<[u32; 2]>,
    touched: Vec<u32>,
}

impl Counters {
    pub(crate) fn new(stages: u32) -> Counters {
        Counters {
            next: vec![[0, 0]; stages as usize],
            touched: Vec::new(),
        }
    }

    /// The counter of `stage`'s forwards (`side` 0) or backwards (1).
    fn get(&mut self, stage: u32, side: usize) -> &mut u32 {
        let counts = &mut self.next[stage as usize];
        if *counts == [0, 0] {
            // First touched (or touched again without counting: listed twice, cleared twice).
            self.touched.push(stage);
        }
        &mut counts[side]
    }

    /// Back to zero for the next rank.
    pub(crate) fn clear(&mut self) {
        for s in self.touched.drain(..) {
            self.next[s as usize] = [0, 0];
        }
    }
}

/// Per-rank state of the program interpreter.
pub(crate) struct Rank<'a> {
    rank: u32,
    chunks: &'a [u32],
    stages: u32,
    stages_per_pipeline: u32,
    carried: &'a [Carried],
    counters: &'a mut Counters,
    pending_w: VecDeque<(u32, u32)>,
    /// The actions so far, and the origin of each.
    pub out: Vec<Action>,
    pub origin: Vec<u32>,
    /// Loop iterations and operations so far, over all ranks.
    tally: &'a mut Tally,
}

/// What the ranks run so far, over all ranks: loop iterations (at most [`MAX_STEPS`]) and
/// operations (at most [`MAX_OPS`]).
#[derive(Debug, Default)]
pub(crate) struct Tally {
    steps: u64,
    ops: usize,
}

/// The messages of the limits that stop every rank, not only the one that reached them.
pub(crate) const STOPS: [&str; 3] = [
    "the schedule runs more than",
    "the schedule makes more than",
    "out of memory",
];

impl<'a> Rank<'a> {
    /// Rank `rank`'s interpreter; `counters` must be clear.
    pub(crate) fn new(
        rank: u32,
        layout: &Layout<'a>,
        counters: &'a mut Counters,
        tally: &'a mut Tally,
    ) -> Rank<'a> {
        Rank {
            rank,
            chunks: &layout.chunks[rank as usize],
            stages: layout.stages,
            stages_per_pipeline: layout.stages_per_pipeline,
            carried: layout.carried,
            counters,
            pending_w: VecDeque::new(),
            out: Vec::new(),
            origin: Vec::new(),
            tally,
        }
    }

    /// Room for `n` actions, the least the rank's program holds (a forward and a backward of
    /// every micro-batch on each of its stages), asked for at once: memory that is not there is
    /// an error now, naming its size.
    pub(crate) fn reserve(&mut self, n: usize) -> Result<(), OutOfMemory> {
        self.out = memory::with_capacity(n, "the programs being built")?;
        self.origin = memory::with_capacity(n, "the origins of the actions")?;
        Ok(())
    }

    fn stage(&self, a: &ActionNode, env: &[i64]) -> Result<u32, Fail> {
        match &a.target {
            Target::Only => match self.chunks {
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
            Target::Chunk(x) => {
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
            Target::Stage(x) => {
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
    fn op(&mut self, a: &ActionNode, env: &[i64]) -> Result<Option<Op>, Fail> {
        // A bare W takes the rank's oldest pending weight gradient, whatever its stage.
        if a.kind == Kind::W && a.mb.is_none() && matches!(a.target, Target::Only) {
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
        match &a.mb {
            Some(x) => self.explicit(a, stage, x, env),
            None if a.kind == Kind::W => {
                let found = self.pending_w.iter().position(|&(s, _)| s == stage);
                match found.and_then(|i| self.pending_w.remove(i)) {
                    Some((s, m)) => Ok(Some(Op::new(s, Kind::W, m))),
                    None if a.optional => Ok(None),
                    None => Err(fail(
                        &a.span,
                        "no weight gradient is pending here",
                        format!("stage {stage} has no I whose W is still due"),
                    )),
                }
            }
            None => self.counted(a, stage),
        }
    }

    /// An action with an explicit micro-batch `(m)` on `stage`.
    fn explicit(
        &mut self,
        a: &ActionNode,
        stage: u32,
        x: &Expr,
        env: &[i64],
    ) -> Result<Option<Op>, Fail> {
        let pipeline = (stage / self.stages_per_pipeline) as usize;
        let Carried { base, count } = self.carried[pipeline];
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
        Ok(Some(Op::new(stage, a.kind, base + m)))
    }

    /// An F, B or I without a micro-batch: the stage's next one in order.
    fn counted(&mut self, a: &ActionNode, stage: u32) -> Result<Option<Op>, Fail> {
        let pipeline = (stage / self.stages_per_pipeline) as usize;
        let Carried { base, count } = self.carried[pipeline];
        let word = if a.kind == Kind::F {
            "forward"
        } else {
            "backward"
        };
        let counter = self
            .counters
            .get(stage, if a.kind == Kind::F { 0 } else { 1 });
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

    /// Appends an action written at `span` (its origin's), counting its operations.
    fn push(&mut self, action: Action, origin: u32, span: &Range<usize>) -> Result<(), Fail> {
        self.tally.ops += if action.is_pair() { 2 } else { 1 };
        if self.tally.ops > MAX_OPS {
            return Err(fail(
                span,
                format!(
                    "the schedule makes more than {MAX_OPS} operations, the most a plan may have"
                ),
                "stopped here",
            ));
        }
        let out_of_memory = |e: OutOfMemory| fail(span, e.to_string(), "stopped here");
        memory::grow(&mut self.out, "the programs being built").map_err(out_of_memory)?;
        memory::grow(&mut self.origin, "the origins of the actions").map_err(out_of_memory)?;
        self.out.push(action);
        self.origin.push(origin);
        Ok(())
    }

    fn tick(&mut self, span: &Range<usize>) -> Result<(), Fail> {
        self.tally.steps += 1;
        if self.tally.steps > MAX_STEPS {
            return Err(fail(
                span,
                format!("the schedule runs more than {MAX_STEPS} steps"),
                "stopped here",
            ));
        }
        Ok(())
    }

    fn count(x: &Expr, env: &[i64], what: &str) -> Result<i64, Fail> {
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

    /// Runs a block of statements; the first error stops the rank.
    pub(crate) fn run(&mut self, body: &[Stmt], env: &mut [i64]) -> Result<(), Fail> {
        for s in body {
            match s {
                Stmt::Set(slot, x) => env[*slot] = eval(x, env)?,
                Stmt::Require(req) => check(req, env)?,
                Stmt::Repeat { count, body, span } => {
                    let n = Self::count(count, env, "repeat count")?;
                    for _ in 0..n {
                        self.tick(span)?;
                        self.run(body, env)?;
                    }
                }
                Stmt::For {
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
                Stmt::If {
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
                Stmt::Steps(steps) => self.steps(steps, env)?,
            }
        }
        Ok(())
    }

    /// Actions written one after another; an overlapped pair whose half has nothing to do
    /// becomes a single action.
    fn steps(&mut self, steps: &[Step], env: &[i64]) -> Result<(), Fail> {
        for step in steps {
            match step {
                Step::One(a, origin) => {
                    if let Some(op) = self.op(a, env)? {
                        self.push(Action::One(op), *origin, &a.span)?;
                    }
                }
                Step::Pair(f_node, b_node, origin) => {
                    let f = self.op(f_node, env)?;
                    let b = self.op(b_node, env)?;
                    let span = &f_node.span;
                    match (f, b) {
                        (Some(f), Some(b)) => self.push(Action::Pair { f, b }, *origin, span)?,
                        (Some(one), None) | (None, Some(one)) => {
                            self.push(Action::One(one), *origin, span)?
                        }
                        (None, None) => {}
                    }
                }
            }
        }
        Ok(())
    }
}
