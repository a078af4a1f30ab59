//! Synthesis of pipeline schedules: the best order of every rank's work for a placement, a memory
//! limit and a cost model, found rather than chosen.
//!
//! Three searches, each over plans the validator accepts and the simulator times:
//! - constructive heuristics: a list scheduler in the spirit of the Zero Bubble paper's, run
//!   with a handful of policies (`greedy.rs`), and periodic schedules built from one block at a
//!   range of periods (`periodic.rs`, after Qi et al.'s building blocks);
//! - local improvement (`local.rs`): small changes to one rank's program, each checked against
//!   the memory limit and timed (`timing.rs`), each new best validated and simulated, seeded and
//!   bounded by a number of tries;
//! - for small sizes, an exact branch and bound (`exact.rs`) that proves optimality against the
//!   lower bounds of `bound.rs`.
//!
//! A proof compares times exactly, as whole numbers of one tick (`ticks.rs`): the exact method's,
//! and the claim that a plan meets the lower bound, each up to a stated slack (none for costs of a
//! few binary digits). Where the costs span too wide a range for ticks, nothing is claimed proved,
//! and the synthesis says so.
//!
//! Pure: no IO, no clock. A caller's time limit reaches the local search through its progress
//! callback; everything else is decided by the problem, the costs, the seed and the budget, so the
//! same inputs give the same plan.

#![warn(missing_docs)]

mod assess;
mod bound;
mod durations;
mod exact;
mod footprint;
mod greedy;
mod local;
mod periodic;
mod problem;
mod proof;
mod ticks;
mod timing;

pub use assess::{Score, weighted_peak};
pub use exact::{ExactEnd, ExactOutcome};
pub use local::Progress;
pub use problem::{MAX_MICROBATCHES, MAX_NODES, MAX_RANKS, Placement, Problem, ProblemError};

use pipeweave_check::ValidPlan;
use pipeweave_plan::memory::OutOfMemory;
use pipeweave_plan::{Action, Kind, Plan};
use pipeweave_sim::CostModel;

/// How long the searches may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Seeds the local search.
    pub seed: u64,
    /// The most plans the local search tries.
    pub evaluations: u64,
    /// The most nodes the exact method visits (0: it does not run).
    pub exact_nodes: u64,
    /// The most constructions the heuristic runs once one has given a plan within the limits
    /// (list-scheduler policies first, then periodic blocks): a bound on its work where a time
    /// limit is not wanted.
    pub constructions: usize,
    /// The most bytes the synthesis may hold at once: one that would need more (its need follows
    /// from the problem's sizes, some 300 bytes an operation) is refused before any work, as one
    /// the process cannot be given is.
    pub memory: usize,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            seed: 0,
            evaluations: 20_000,
            exact_nodes: 0,
            constructions: usize::MAX,
            memory: usize::MAX,
        }
    }
}

/// What a synthesis found and what it cost to find.
#[derive(Debug, Clone)]
pub struct Synthesis {
    /// The best plan.
    pub plan: ValidPlan,
    /// Its score.
    pub score: Score,
    /// The constructive heuristic's best score, before local improvement (none when no policy
    /// met the limits and the search started from a caller's plan).
    pub heuristic: Option<Score>,
    /// How many constructions the heuristic ran, list-scheduler policies and periodic blocks (and
    /// how many gave a plan within the limits).
    pub policies: (usize, usize),
    /// Which of the caller's starting plans the local search started from, where one was better
    /// than the heuristic's.
    pub started_from: Option<usize>,
    /// A lower bound of every plan's makespan.
    pub lower_bound: f64,
    /// Whether times can be compared exactly, as whole numbers of one tick (false where the costs
    /// span too wide a range): nothing is proved without it.
    pub exact_arithmetic: bool,
    /// Whether the plan's makespan meets the lower bound, compared exactly (so it is optimal).
    pub meets_bound: bool,
    /// What the proofs leave out: a plan shorter than this one by this much or less, in the costs'
    /// unit. Zero (strict proofs) where the shortest duration is under a million ticks (unit
    /// costs, costs of a few binary digits); else a millionth of it, below which exact times
    /// differ only in the last bits of the cost model's numbers.
    pub proof_slack: f64,
    /// Plans the local search tried.
    pub evaluations: u64,
    /// Whether the caller stopped the heuristic's constructions or the local search before their
    /// budget (a time limit); a stop of the exact method is said by its outcome's `end`.
    pub stopped: bool,
    /// The exact method's outcome, where it was asked to run.
    pub exact: Option<ExactOutcome>,
}

impl Synthesis {
    /// Whether the plan is proved optimal: it meets the lower bound, or the exact method finished
    /// (both compared exactly).
    pub fn proved_optimal(&self) -> bool {
        self.meets_bound || self.exact.as_ref().is_some_and(|e| e.proved)
    }
}

/// Why no plan came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SynthError {
    /// The problem itself.
    Problem(ProblemError),
    /// No policy of the heuristic met the memory limits.
    NotFound(String),
    /// The synthesis's tables do not fit in the memory there is (or in [`Options::memory`]):
    /// said before the work, naming the size.
    OutOfMemory(OutOfMemory),
}

impl std::fmt::Display for SynthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SynthError::Problem(e) => e.fmt(f),
            SynthError::NotFound(s) => f.write_str(s),
            SynthError::OutOfMemory(e) => write!(
                f,
                "{e}; fewer ranks, micro-batches or stages per rank need less"
            ),
        }
    }
}

impl From<OutOfMemory> for SynthError {
    fn from(e: OutOfMemory) -> SynthError {
        SynthError::OutOfMemory(e)
    }
}

impl std::error::Error for SynthError {}

impl From<ProblemError> for SynthError {
    fn from(e: ProblemError) -> SynthError {
        SynthError::Problem(e)
    }
}

/// Whether the exact method is meant for this size (P ≤ 4, M ≤ 8).
pub fn exact_applies(problem: &Problem) -> bool {
    problem.ranks <= 4 && problem.microbatches <= 8
}

/// The lower bound of every plan's makespan for `problem` under `costs`.
pub fn lower_bound<C: CostModel + ?Sized>(problem: &Problem, costs: &C) -> Result<f64, SynthError> {
    let g = problem::Graph::new(problem, costs)?;
    Ok(float_bound(&g, costs)?)
}

/// The lower bound of `g` in the cost model's own numbers.
fn float_bound<C: CostModel + ?Sized>(g: &problem::Graph, costs: &C) -> Result<f64, OutOfMemory> {
    let floats = durations::Floats { g, costs };
    // Floating-point durations always have a value.
    Ok(bound::Bounds::new(g, &floats)?.map_or(0.0, |b| b.root(g)))
}

/// The work graph of `problem`, once the memory a whole synthesis of it holds has been asked for
/// (within `budget` bytes): the sizes are checked before any work, and too little memory is an
/// error naming the size.
fn graph<C: CostModel + ?Sized>(
    problem: &Problem,
    costs: &C,
    budget: usize,
) -> Result<problem::Graph, SynthError> {
    let operations = problem::operations(problem)?;
    footprint::reserve(operations, problem.ranks, budget)?;
    problem::Graph::new(problem, costs)
}

/// The constructive heuristic alone: its best plan over every construction, with its score.
pub fn heuristic<C: CostModel + ?Sized>(
    problem: &Problem,
    costs: &C,
) -> Result<(ValidPlan, Score), SynthError> {
    let g = graph(problem, costs, usize::MAX)?;
    let (best, _) = construct(&g, costs, usize::MAX, &mut || true)?;
    let (_, plan, score) = best.ok_or_else(not_found)?;
    Ok((plan, score))
}

/// A valid plan of `problem`'s placement: the heuristic's first policy under unit costs with the
/// memory limits lifted. What a caller prices a spec on before the search, since a spec's costs and
/// memory depend on the placement, not on the order.
pub fn placement_plan(problem: &Problem) -> Result<ValidPlan, SynthError> {
    let open = Problem {
        limits: vec![u32::MAX / 4; problem.ranks as usize],
        weights: Vec::new(),
        ..problem.clone()
    };
    // What the whole synthesis will hold is asked for here, where a caller starts (before it
    // builds anything else), as well as when the synthesis starts.
    let g = graph(&open, &pipeweave_sim::UnitCosts, usize::MAX)?;
    let policy = greedy::policies(&g)[0];
    let programs =
        greedy::schedule(&g, &policy, &pipeweave_sim::UnitCosts)?.ok_or_else(not_found)?;
    let plan = assess::plan(&g, &programs)?.ok_or_else(not_found)?;
    pipeweave_check::validate(plan).map_err(|problems| {
        match problems.iter().find_map(|p| match p.kind {
            pipeweave_check::ProblemKind::OutOfMemory(e) => Some(e),
            _ => None,
        }) {
            Some(e) => SynthError::OutOfMemory(e),
            None => not_found(),
        }
    })
}

type Programs = Vec<Vec<greedy::Act>>;

/// A candidate: its programs, its plan and its score.
type Candidate = (Programs, ValidPlan, Score);

/// The periods the periodic construction tries between the shortest and twice it.
const PERIOD_STEPS: u32 = 32;

/// The best candidate so far of the constructions, and how many met the limits.
struct Constructed {
    best: Option<Candidate>,
    found: usize,
}

impl Constructed {
    /// Keeps `programs` if they meet the limits, validate and beat the best so far.
    fn consider<C: CostModel + ?Sized>(
        &mut self,
        g: &problem::Graph,
        programs: Result<Option<Programs>, OutOfMemory>,
        costs: &C,
    ) -> Result<(), OutOfMemory> {
        let Some(programs) = programs? else {
            return Ok(());
        };
        let Some((plan, score)) = assess::assess(g, &programs, costs)? else {
            return Ok(());
        };
        self.found += 1;
        if self.best.as_ref().is_none_or(|(_, _, b)| score.beats(b)) {
            self.best = Some((programs, plan, score));
        }
        Ok(())
    }
}

/// The heuristic's best plan over every construction (none when none meets the limits): the list
/// scheduler's policies, then periodic blocks from the shortest period a block can have to twice
/// it, with backwards split and whole; and the number of constructions run and of those that met
/// the limits. A caller's stop ends them once one has given a plan.
fn construct<C: CostModel + ?Sized>(
    g: &problem::Graph,
    costs: &C,
    most: usize,
    go_on: &mut dyn FnMut() -> bool,
) -> Result<(Option<Candidate>, (usize, usize)), OutOfMemory> {
    let mut c = Constructed {
        best: None,
        found: 0,
    };
    let mut tried = 0;
    for policy in &greedy::policies(g) {
        if c.best.is_some() && (tried >= most || !go_on()) {
            return Ok((c.best, (tried, c.found)));
        }
        tried += 1;
        c.consider(g, greedy::schedule(g, policy, costs), costs)?;
    }
    let modes: &[bool] = if g.weight_split {
        &[false, true]
    } else {
        &[true]
    };
    for &whole in modes {
        let shortest = periodic::shortest_period(g, whole);
        for step in 0..=PERIOD_STEPS {
            if c.best.is_some() && (tried >= most || !go_on()) {
                return Ok((c.best, (tried, c.found)));
            }
            tried += 1;
            let period = shortest * (1.0 + f64::from(step) / f64::from(PERIOD_STEPS));
            c.consider(g, periodic::schedule(g, period, whole), costs)?;
        }
    }
    Ok((c.best, (tried, c.found)))
}

fn not_found() -> SynthError {
    SynthError::NotFound(
        "no order the heuristic tried stays within the memory limits, and no starting plan does; raise the limit"
            .into(),
    )
}

/// Synthesizes a plan for `problem` under `costs`: the heuristic, local improvement for
/// `options.evaluations` tries (`report` sees the progress every 64 tries and stops the search by
/// returning false), and the exact method where `options.exact_nodes` allows.
pub fn synthesize<C: CostModel + ?Sized>(
    problem: &Problem,
    costs: &C,
    options: &Options,
    report: &mut dyn FnMut(Progress) -> bool,
) -> Result<Synthesis, SynthError> {
    synthesize_from(problem, costs, options, &[], report)
}

/// The programs of `plan` as graph entries, if it is a plan of this graph's placement (its
/// micro-batches taken by their position in their pipeline).
fn programs_of(g: &problem::Graph, plan: &Plan) -> Option<Programs> {
    if plan.ranks() != g.ranks
        || plan.num_stages() != g.stages
        || plan.pipelines().len() != g.pipelines.len()
    {
        return None;
    }
    let mut position = vec![u32::MAX; plan.mb_bound() as usize];
    for p in plan.pipelines() {
        if p.microbatches.len() != g.per_pipeline as usize {
            return None;
        }
        for (k, &mb) in p.microbatches.iter().enumerate() {
            position[mb as usize] = k as u32;
        }
    }
    let node = |op: pipeweave_plan::Op| -> Option<(usize, bool)> {
        let k = *position.get(op.mb as usize)?;
        if k == u32::MAX || op.stage >= g.stages {
            return None;
        }
        Some(match op.kind {
            Kind::F => (g.node(op.stage, k, problem::F), false),
            Kind::I => (g.node(op.stage, k, problem::I), false),
            Kind::W => (g.node(op.stage, k, problem::W), false),
            Kind::B => (g.node(op.stage, k, problem::I), true),
        })
    };
    plan.programs()
        .iter()
        .map(|program| {
            program
                .iter()
                .map(|a| match *a {
                    Action::One(op) => {
                        let (n, whole) = node(op)?;
                        Some(greedy::Act::One { node: n, whole })
                    }
                    Action::Pair { f, b } => {
                        let (f, _) = node(f)?;
                        let (b, whole) = node(b)?;
                        Some(greedy::Act::Pair { f, b, whole })
                    }
                })
                .collect()
        })
        .collect()
}

/// [`synthesize`], with plans to start from besides the heuristic's (a library schedule's at the
/// same placement, say): the local search starts from the best of them all, so the result is
/// never worse than any start that meets the limits.
pub fn synthesize_from<C: CostModel + ?Sized>(
    problem: &Problem,
    costs: &C,
    options: &Options,
    starts: &[&Plan],
    report: &mut dyn FnMut(Progress) -> bool,
) -> Result<Synthesis, SynthError> {
    let g = graph(problem, costs, options.memory)?;
    let lower_bound = float_bound(&g, costs)?;
    let proof = proof::Proof::new(&g, costs, lower_bound);
    let mut stopped = false;
    let (constructed, policies) = {
        let mut go_on = || {
            let heuristic = Score {
                makespan: f64::INFINITY,
                spread: f64::INFINITY,
            };
            let go = report(Progress {
                evaluations: 0,
                best: heuristic,
            });
            stopped |= !go;
            go
        };
        construct(&g, costs, options.constructions, &mut go_on)?
    };
    let heuristic = constructed.as_ref().map(|c| c.2);
    let mut best = constructed;
    let mut started_from = None;
    for (i, start) in starts.iter().enumerate() {
        let Some(p) = programs_of(&g, start) else {
            continue;
        };
        if let Some((valid, score)) = assess::assess(&g, &p, costs)?
            && best.as_ref().is_none_or(|b| score.beats(&b.2))
        {
            best = Some((p, valid, score));
            started_from = Some(i);
        }
    }
    let (programs, plan, start_score) = best.ok_or_else(not_found)?;
    let mut wrapped = |p: Progress| {
        let go = report(p);
        stopped |= !go;
        go
    };
    let (mut programs, mut plan, mut score, evaluations) =
        if proof.meets_bound(&programs, start_score.makespan)? {
            (programs, plan, start_score, 0)
        } else {
            local::improve(
                &g,
                programs,
                (plan, start_score),
                costs,
                options.seed,
                options.evaluations,
                &mut wrapped,
            )?
        };
    let mut exact = None;
    if options.exact_nodes > 0 {
        let best = score;
        // Its stop is its own (`ExactOutcome::end`), not the search's before it.
        let mut go_on = |nodes: u64| {
            report(Progress {
                evaluations: evaluations + nodes,
                best,
            })
        };
        let (end, nodes, found) = proof.exact(&programs, options.exact_nodes, &mut go_on)?;
        // A plan shorter in exact arithmetic replaces the search's (the simulator's floating-point
        // makespans of the two can differ from their exact order only by its rounding).
        let mut proved = end == ExactEnd::Complete;
        if let Some(found) = found {
            match assess::assess(&g, &found, costs)? {
                Some((p, s)) => {
                    programs = found;
                    plan = p;
                    score = s;
                }
                None => {
                    debug_assert!(false, "a plan of the exact method does not validate");
                    proved = false;
                }
            }
        }
        exact = Some(ExactOutcome {
            makespan: score.makespan,
            proved,
            nodes,
            end,
        });
    }
    let meets_bound = proof.meets_bound(&programs, score.makespan)?;
    Ok(Synthesis {
        plan,
        score,
        heuristic,
        policies,
        started_from,
        lower_bound,
        exact_arithmetic: proof.exact_arithmetic(),
        meets_bound,
        proof_slack: proof.slack(),
        evaluations,
        stopped,
        exact,
    })
}
