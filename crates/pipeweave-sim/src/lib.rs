//! Discrete-event simulation of step plans: a timeline of every action and the metrics that follow.
//!
//! Every rank runs its program in order. An action starts when its rank is free and its inputs have
//! arrived: a forward needs the previous stage's forward of the same micro-batch, a backward (B or
//! I) the next stage's backward (or, on the last stage, its own forward), a W its I; an input from
//! another rank arrives `transfer` after the producing action ends. An overlapped pair starts when
//! the inputs of both halves have arrived, runs as one block for `pair(f, b)`, and both halves end
//! together. Between two actions a rank may spend host time of its own ([`CostModel::host_gap`]
//! before an action, [`CostModel::host_after`] after one: zero unless the costs measured them),
//! which a wait for an input hides. Sends are asynchronous
//! (the validator checks that the blocking form still makes
//! progress), so the timeline is the one a launcher with enough buffering achieves, unless the
//! cost model says a send blocks ([`CostModel::rendezvous`]): then the sender holds its rank at
//! the end of its action until the receiver has posted its receive, and for the send's own time
//! after that. A rank posts the receive of an action's input when the work of the action before
//! it has run (Megatron-LM's `send_forward_recv_backward` and its kin post a rank's send and its
//! next receive together; DeepSpeed's pipeline engine orders its blocking sends and receives so
//! that neighbours meet), or at the start for its first action. A forward whose output the cost
//! model says leaves with the next action's ([`CostModel::sends_after_next`], Megatron-LM's
//! interleaved exchange) reaches its consumer once that next action has ended; with blocking
//! sends it meets its receiver then, and the rank posts no receive after such a forward: the
//! receive of the input of the action after it was posted after the action before it (the
//! exchange after a backward posts the receives of the next forward and the next backward). The run is
//! event-driven (a
//! blocked rank waits on the op it misses, or on the peer it sends to), linear in the number of
//! actions.
//!
//! [`simulate`] takes a [`ValidPlan`]: the plan went through the validator first.
//! No IO. Costs come from a [`CostModel`]; the default is [`UnitCosts`].

#![warn(missing_docs)]

mod costs;
mod memory;

pub use costs::{CostModel, MAX_COST, StageCosts, UniformCosts, UnitCosts};
pub use memory::{computes_gradients, live_activations};

use pipeweave_check::ValidPlan;
use pipeweave_plan::memory::{OutOfMemory, filled, with_capacity};
use pipeweave_plan::{Action, Interval, Kind, Op, Plan, Timing};
use std::fmt;

/// Per-rank results, times in the cost model's unit (seconds on a spec, units otherwise).
#[derive(Debug, Clone, PartialEq)]
pub struct RankMetrics {
    /// Time spent computing.
    pub busy: f64,
    /// `makespan − busy`.
    pub idle: f64,
    /// The longest stretch without work, counting the start and the end of the step.
    pub longest_idle: f64,
    /// Peak live activations in stage-micro-batch units (see [`live_activations`]).
    pub peak_activations: u32,
    /// Communication inside this rank's actions that no compute hides.
    pub exposed_comm: f64,
}

/// The simulated step, times in the cost model's unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// When every action runs (`timing.intervals[r][i]`: rank r's i-th action) and the makespan.
    pub timing: Timing,
    /// Each rank's totals, indexed by rank.
    pub ranks: Vec<RankMetrics>,
    /// `1 − Σ busy / (ranks × makespan)`.
    pub bubble_fraction: f64,
    /// Total exposed communication over all ranks.
    pub exposed_comm: f64,
}

/// A step the simulator could not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimError {
    /// `rank` waits forever before its action at `position` (0-based).
    ///
    /// A valid plan always runs to the end (the validator proves progress with blocking sends,
    /// and the simulator's sends never block), so only a cost model that gives a time that is not
    /// a number does this: an op that ends at NaN reads as one that has not run yet.
    Stuck {
        /// The first rank (by index) left waiting.
        rank: u32,
        /// The position in its program of the action it waits to run.
        position: usize,
    },
    /// A table the run needs (sized by the plan before it starts) could not be allocated.
    OutOfMemory(OutOfMemory),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Stuck { rank, position } => write!(
                f,
                "the plan cannot make progress: rank {rank} waits forever at action {}",
                position + 1
            ),
            SimError::OutOfMemory(e) => write!(f, "{e}"),
        }
    }
}

impl From<OutOfMemory> for SimError {
    fn from(e: OutOfMemory) -> SimError {
        SimError::OutOfMemory(e)
    }
}

impl std::error::Error for SimError {}

const UNKNOWN: f64 = f64::NAN;
/// No such stage (before the first or after the last stage of a pipeline).
const NO_STAGE: u32 = u32::MAX;

/// End times by key, `2·x` for the forward of the piece of work at slot x and `2·x + 1` for its
/// input-gradient backward (B or I); `UNKNOWN` until the op has run. The same keys name what a
/// parked rank waits for. Slots are [`Plan::work_slot`]'s: one per piece of work the plan lists
/// (a valid plan runs each, so the table is no larger than the plan), micro-batch major, the
/// previous and next stage's work on a micro-batch at the slots beside.
struct Ends<'p> {
    /// Per micro-batch id, its pipeline plus 1 and index ([`Plan::carriers`]), and S.
    carriers: &'p [[u32; 2]],
    per_pipeline: usize,
    /// Per stage, where its inputs come from: a table, so the hot loop does no modulo.
    links: Vec<Link>,
    end: Vec<f64>,
}

/// A stage's inputs, in one record built from [`Plan::prev_stage`] and [`Plan::next_stage`]: its
/// pipeline and position, the previous stage (what its forward waits for) and the next (what its
/// backward waits for), `NO_STAGE` at a pipeline's ends, and the ranks hosting them.
#[derive(Clone, Copy)]
struct Link {
    pipeline: u32,
    position: u32,
    prev: u32,
    next: u32,
    prev_host: u32,
    next_host: u32,
}

impl Ends<'_> {
    /// The slot of an op's piece of work, if its stage exists and its pipeline carries its
    /// micro-batch.
    #[inline(always)]
    fn slot(&self, op: Op) -> Option<usize> {
        let link = self.links.get(op.stage as usize)?;
        let [carrier, index] = *self.carriers.get(op.mb as usize)?;
        (carrier == link.pipeline + 1)
            .then(|| index as usize * self.per_pipeline + link.position as usize)
    }
}

/// When the input of `op` (on `rank`, at slot `x`) is available, or `Err(key)` of the op that
/// produces it when that has not run yet.
#[inline(always)]
fn ready_at<C: CostModel + ?Sized>(
    costs: &C,
    ends: &Ends<'_>,
    rank: u32,
    op: Op,
    x: usize,
) -> Result<f64, usize> {
    let link = ends.links[op.stage as usize];
    // The producer on stage `from`, hosted by `host`, ends at `ends.end[key]`; its output crosses
    // to this rank if elsewhere.
    let arrive = |key: usize, from: u32, host: u32| {
        let end = ends.end[key];
        if end.is_nan() {
            Err(key)
        } else if host == rank {
            Ok(end)
        } else {
            Ok(end + costs.transfer(from, op.stage))
        }
    };
    match op.kind {
        Kind::F => match link.prev {
            NO_STAGE => Ok(0.0),
            prev => arrive(2 * (x - 1), prev, link.prev_host),
        },
        Kind::B | Kind::I => {
            let own = ends.end[2 * x];
            if own.is_nan() {
                return Err(2 * x);
            }
            match link.next {
                NO_STAGE => Ok(own),
                next => arrive(2 * (x + 1) + 1, next, link.next_host).map(|t| t.max(own)),
            }
        }
        Kind::W => {
            let i = ends.end[2 * x + 1];
            if i.is_nan() { Err(2 * x + 1) } else { Ok(i) }
        }
    }
}

/// `Err` key of an action naming a stage the plan does not have, or a micro-batch its pipeline
/// does not carry.
const INVALID: usize = usize::MAX;

/// When the input of `op` (on `rank`) is available and the slot of its work, or `Err` with
/// the key of the op that produces the input when that has not run yet (`INVALID` when `op`
/// names a stage the plan does not have, or a micro-batch its pipeline does not carry).
// Always inlined: as a call it cost a quarter of the simulation.
#[inline(always)]
fn input<C: CostModel + ?Sized>(
    costs: &C,
    ends: &Ends<'_>,
    rank: u32,
    op: Op,
) -> Result<(f64, usize), usize> {
    let x = ends.slot(op).ok_or(INVALID)?;
    ready_at(costs, ends, rank, op, x).map(|t| (t, x))
}

/// Per-rank running totals, kept as the actions run so no second pass is needed.
#[derive(Clone, Copy)]
struct Running {
    /// When the rank is free again (the end of its last action).
    free: f64,
    /// The host's time after its last action ([`CostModel::host_after`]), before its next.
    after: f64,
    busy: f64,
    longest_idle: f64,
    exposed: f64,
    live: i64,
    peak: i64,
}

impl Running {
    /// Before the rank's first action.
    fn start() -> Running {
        Running {
            free: 0.0,
            after: 0.0,
            // As `Iterator::sum` over no terms, so a rank without actions reports the same busy
            // time as summing its intervals would.
            busy: std::iter::empty::<f64>().sum(),
            longest_idle: 0.0,
            exposed: 0.0,
            live: 0,
            peak: 0,
        }
    }

    /// Counts an action that ran from `start` to `end` with `exposed` communication (after its
    /// ops changed `live`).
    #[inline(always)]
    fn record(&mut self, start: f64, end: f64, exposed: f64) {
        self.busy += end - start;
        self.longest_idle = self.longest_idle.max(start - self.free);
        self.peak = self.peak.max(self.live);
        self.exposed += exposed;
        self.free = end;
    }
}

/// No rank (the end of a list of parked ranks).
const NO_RANK: u32 = u32::MAX;

/// The ranks waiting for an input, by what they wait for: a rank whose next action misses an input
/// is parked on the key of the op that produces it and woken when that op ends. `parked[key]`
/// heads an intrusive list of ranks linked through `next`.
struct Waiting {
    parked: Vec<u32>,
    next: Vec<u32>,
}

impl Waiting {
    /// No rank parked on any of `keys` keys.
    // Always inlined: see `Ends::new`.
    #[inline(always)]
    fn new(keys: usize, ranks: usize) -> Result<Waiting, OutOfMemory> {
        Ok(Waiting {
            parked: filled(keys, NO_RANK, "the simulation's waiting ranks")?,
            next: vec![NO_RANK; ranks],
        })
    }

    #[inline(always)]
    fn park(&mut self, rank: u32, key: usize) {
        self.next[rank as usize] = self.parked[key];
        self.parked[key] = rank;
    }

    /// Moves the ranks parked on `key` to `runnable`.
    // `runnable` is not a field: a vector that may grow, kept apart, leaves the compiler sure that
    // growing it moves nothing here (as a field it made the hot loop reload these tables).
    #[inline(always)]
    fn wake(&mut self, key: usize, runnable: &mut Vec<u32>) {
        let mut w = std::mem::replace(&mut self.parked[key], NO_RANK);
        while w != NO_RANK {
            runnable.push(w);
            w = std::mem::replace(&mut self.next[w as usize], NO_RANK);
        }
    }
}

impl<'p> Ends<'p> {
    /// The number of keys of `plan`: two per slot.
    #[inline(always)]
    fn keys(plan: &Plan) -> usize {
        2 * plan.work_slots()
    }

    /// Empty tables for `plan`, its links from [`Plan::prev_stage`] and [`Plan::next_stage`].
    // Always inlined, as `Waiting::new` is: both tables by key then have one length the compiler
    // sees (`Ends::keys`), and the hot loop checks a key against it once (3% fewer instructions).
    #[inline(always)]
    fn new(plan: &'p Plan) -> Result<Ends<'p>, OutOfMemory> {
        let hosts = plan.hosts();
        let host = |t: Option<u32>| t.map_or(u32::MAX, |t| hosts[t as usize]);
        let links: Vec<Link> = (0..plan.num_stages())
            .map(|s| {
                let (prev, next) = (plan.prev_stage(s), plan.next_stage(s));
                let (pipeline, position) = plan.locate(s);
                Link {
                    pipeline,
                    position,
                    prev: prev.unwrap_or(NO_STAGE),
                    next: next.unwrap_or(NO_STAGE),
                    prev_host: host(prev),
                    next_host: host(next),
                }
            })
            .collect();
        Ok(Ends {
            carriers: plan.carriers(),
            per_pipeline: plan.stages_per_pipeline() as usize,
            links,
            end: filled(Ends::keys(plan), UNKNOWN, "the simulation's end times")?,
        })
    }

    /// Records that `op` (at slot `x`) ended at `end`; returns the key its waiters are parked on
    /// and how it changes its rank's live activations (a forward holds one until its B or I), or
    /// `None` for a W, which nothing waits for.
    // Always inlined: it runs for every op.
    #[inline(always)]
    fn finish(&mut self, op: Op, x: usize, end: f64) -> Option<(usize, i64)> {
        let (key, live) = match op.kind {
            Kind::F => (2 * x, 1),
            Kind::B | Kind::I => (2 * x + 1, -1),
            Kind::W => return None,
        };
        self.end[key] = end;
        Some((key, live))
    }
}

/// Simulates one step of `plan` under `costs`.
///
/// Fails only when the costs give times that are not numbers (see [`SimError`]).
pub fn simulate<C: CostModel + ?Sized>(plan: &ValidPlan, costs: &C) -> Result<Timeline, SimError> {
    simulate_plan(plan, costs)
}

/// Simulates one step of any plan, valid or not: what [`simulate`] runs, for the simulator's own
/// tests on plans the validator rejects. An action naming a stage the plan does not have, or a
/// micro-batch its stage's pipeline does not carry, stops its rank, as a missing input does.
fn simulate_plan<C: CostModel + ?Sized>(plan: &Plan, costs: &C) -> Result<Timeline, SimError> {
    let run = run(plan, costs)?;
    match unfinished(plan, &run.intervals) {
        Some(error) => Err(error),
        None => Ok(timeline(plan, run.intervals, &run.totals)),
    }
}

/// What a run leaves: when every action ran, every rank's totals.
struct Run {
    intervals: Vec<Vec<Interval>>,
    totals: Vec<Running>,
}

/// Where a blocked send stands: an action whose work has run and whose sends wait for their
/// receivers to post.
#[derive(Clone, Copy)]
struct Pending {
    start: f64,
    /// `start + duration`: the end without waiting.
    end: f64,
    /// The end of its work, before its sends' hold.
    work_end: f64,
    /// Seconds its sends hold the rank once the receivers have posted.
    hold: f64,
    slots: [usize; 2],
}

/// Blocking sends' state ([`CostModel::rendezvous`]): where each op's action sits, the work end
/// of every action run so far, and the ranks waiting for a peer to post a receive.
struct Meet {
    /// `at[key]`: the rank and program index of the action holding the op of that key.
    at: Vec<(u32, u32)>,
    /// Per rank, the end of each action's work, as far as the rank has run.
    work: Vec<Vec<f64>>,
    /// Per rank, its action waiting for receivers, if any.
    pending: Vec<Option<Pending>>,
    /// Per rank, the ranks waiting for it to run the work of an action: (rank, index).
    watch: Vec<Vec<(u32, usize)>>,
    /// Per rank: post what has been posted and go on (see [`run`]).
    forced: Vec<bool>,
    /// Per rank and program index: the action is a forward whose send leaves with the next
    /// action's ([`defers`]); the rank posts no receive after it, only after that next action.
    deferred: Vec<Vec<bool>>,
}

impl Meet {
    fn new<C: CostModel + ?Sized>(
        plan: &Plan,
        ends: &Ends<'_>,
        costs: &C,
    ) -> Result<Meet, OutOfMemory> {
        let mut at = filled(
            Ends::keys(plan),
            (NO_RANK, 0),
            "the simulation's send partners",
        )?;
        for (r, program) in plan.programs().iter().enumerate() {
            for (i, a) in program.iter().enumerate() {
                for op in a.ops() {
                    let key = match (op.kind, ends.slot(op)) {
                        (Kind::F, Some(x)) => 2 * x,
                        (Kind::B | Kind::I, Some(x)) => 2 * x + 1,
                        _ => continue,
                    };
                    at[key] = (r as u32, i as u32);
                }
            }
        }
        let ranks = plan.ranks() as usize;
        Ok(Meet {
            at,
            work: plan.programs().iter().map(|_| Vec::new()).collect(),
            pending: vec![None; ranks],
            watch: vec![Vec::new(); ranks],
            forced: vec![false; ranks],
            deferred: plan
                .programs()
                .iter()
                .enumerate()
                .map(|(r, program)| {
                    (0..program.len())
                        .map(|i| costs.defers_sends() && defers(costs, ends, r as u32, program, i))
                        .collect()
                })
                .collect(),
        })
    }

    /// The key of the op on another rank that consumes `op`'s output (at slot `x`, on `rank`).
    fn consumer(ends: &Ends<'_>, rank: u32, op: Op, x: usize) -> Option<usize> {
        let link = ends.links[op.stage as usize];
        match op.kind {
            Kind::F if link.next != NO_STAGE && link.next_host != rank => Some(2 * (x + 1)),
            Kind::B | Kind::I if link.prev != NO_STAGE && link.prev_host != rank && x > 0 => {
                Some(2 * (x - 1) + 1)
            }
            _ => None,
        }
    }

    /// When the consumer of key `key` has its receive posted, or `Err((rank, index))` of the
    /// action whose work must run first: the action before the consumer, or, when that one is
    /// a forward whose send leaves with the consumer's (Megatron-LM's interleaved steady state
    /// exchanges once after each forward and backward, posting the receives of the next two
    /// actions together), the action before that.
    fn posted(&self, key: usize) -> Result<f64, (u32, usize)> {
        let Some(&(q, pos)) = self.at.get(key) else {
            return Ok(0.0);
        };
        if q == NO_RANK || pos == 0 {
            return Ok(0.0);
        }
        let mut need = pos as usize - 1;
        if self.deferred[q as usize].get(need) == Some(&true) {
            if need == 0 {
                return Ok(0.0);
            }
            need -= 1;
        }
        match self.work[q as usize].get(need) {
            Some(&t) => Ok(t),
            None => Err((q, need)),
        }
    }

    /// Records the work end of `rank`'s next action and wakes the ranks waiting for it.
    fn worked(&mut self, rank: u32, end: f64, runnable: &mut Vec<u32>) {
        let w = &mut self.work[rank as usize];
        w.push(end);
        let done = w.len();
        self.watch[rank as usize].retain(|&(r, need)| {
            if need < done {
                runnable.push(r);
                false
            } else {
                true
            }
        });
    }
}

/// Whether the action at `i` in rank `r`'s program is a forward whose output leaves with the
/// next action's sends ([`CostModel::sends_after_next`]): only an output that leaves the rank
/// (its own backward needs it where it is).
fn defers<C: CostModel + ?Sized>(
    costs: &C,
    ends: &Ends<'_>,
    r: u32,
    program: &[Action],
    i: usize,
) -> bool {
    match (program.get(i), program.get(i + 1)) {
        (Some(Action::One(op)), Some(Action::One(next))) => {
            let link = ends.links.get(op.stage as usize);
            op.kind == Kind::F
                && link.is_some_and(|l| l.next != NO_STAGE && l.next_host != r)
                && costs.sends_after_next(*op, *next)
        }
        _ => false,
    }
}

/// Runs every rank as far as its inputs let it, event-driven (see [`Waiting`]).
///
/// Times do not depend on the order ranks run in: each action's start is a function of its inputs
/// and its rank (when every op is done once; an invalid plan that repeats one has no one
/// timeline). An action naming a stage the plan does not have, or a micro-batch its stage's
/// pipeline does not carry, stops its rank.
fn run<C: CostModel + ?Sized>(plan: &Plan, costs: &C) -> Result<Run, OutOfMemory> {
    let mut ends = Ends::new(plan)?;
    // The room for every action's times, asked for whole first so that an error names all of it.
    let actions = plan.programs().iter().map(Vec::len).sum();
    drop(with_capacity::<Interval>(
        actions,
        "the timing of every action",
    )?);
    let mut intervals: Vec<Vec<Interval>> = plan
        .programs()
        .iter()
        .map(|p| with_capacity(p.len(), "the timing of every action"))
        .collect::<Result<_, _>>()?;
    let mut totals = vec![Running::start(); plan.ranks() as usize];
    let mut waiting = Waiting::new(Ends::keys(plan), totals.len())?;
    // Blocking sends: only when the cost model has them.
    let mut meet = if costs.blocking_sends() {
        Some(Meet::new(plan, &ends, costs)?)
    } else {
        None
    };
    // Forwards whose output leaves with the next action's: per rank, the op, its slot and its
    // own end; only when the cost model defers sends.
    let mut held: Option<Vec<Option<(Op, usize, f64)>>> = costs
        .defers_sends()
        .then(|| vec![None; plan.ranks() as usize]);
    // The ranks to run, the next one last.
    let mut runnable: Vec<u32> = (0..plan.ranks()).rev().collect();
    loop {
        while let Some(r) = runnable.pop() {
            let program = plan.program(r);
            let (ran, rn) = (&mut intervals[r as usize], &mut totals[r as usize]);
            while let Some(a) = program.get(ran.len()) {
                let resumed = meet.as_mut().and_then(|m| m.pending[r as usize].take());
                let p = match resumed {
                    Some(p) => p,
                    None => {
                        let input = |op| input(costs, &ends, r, op);
                        // The host's time after the previous action and before this one,
                        // hidden by a wait for an input.
                        let free = if ran.is_empty() {
                            rn.free
                        } else {
                            rn.free + rn.after + costs.host_gap(*a)
                        };
                        let inputs = match *a {
                            Action::One(op) => input(op).map(|(t, x)| (free.max(t), [x, 0])),
                            Action::Pair { f, b } => input(f).and_then(|(tf, xf)| {
                                input(b).map(|(tb, xb)| (free.max(tf).max(tb), [xf, xb]))
                            }),
                        };
                        let (start, slots) = match inputs {
                            Ok(ready) => ready,
                            Err(INVALID) => break,
                            Err(key) => {
                                waiting.park(r, key);
                                break;
                            }
                        };
                        let end = start
                            + match *a {
                                Action::One(op) => costs.op(op),
                                Action::Pair { f, b } => costs.pair(f, b),
                            };
                        let mut p = Pending {
                            start,
                            end,
                            work_end: end,
                            hold: 0.0,
                            slots,
                        };
                        if let Some(m) = meet.as_mut() {
                            p.hold = a.ops().filter_map(|op| costs.rendezvous(op)).sum();
                            p.work_end = end - p.hold;
                            m.worked(r, p.work_end, &mut runnable);
                        }
                        p
                    }
                };
                // With blocking sends, the action ends once its receivers have posted and its
                // sends have run.
                let mut end = p.end;
                // This forward's output leaves with the next action's, if the costs say so.
                let defer = held.is_some() && defers(costs, &ends, r, program, ran.len());
                if let Some(m) = meet.as_mut() {
                    let mut posted = p.work_end;
                    let mut missing = None;
                    // A forward held back by the previous action meets its receiver now.
                    let earlier = held
                        .as_ref()
                        .and_then(|h| h[r as usize])
                        .map(|(f, x, _)| (f, x));
                    let own = a.ops().zip(p.slots).filter(|_| !defer);
                    for (op, x) in own.chain(earlier) {
                        if costs.rendezvous(op).is_none() {
                            continue;
                        }
                        let Some(key) = Meet::consumer(&ends, r, op, x) else {
                            continue;
                        };
                        match m.posted(key) {
                            Ok(t) => posted = posted.max(t),
                            Err(need) => missing = Some(need),
                        }
                    }
                    match missing {
                        Some((q, need)) if !m.forced[r as usize] => {
                            m.pending[r as usize] = Some(p);
                            m.watch[q as usize].push((r, need));
                            break;
                        }
                        _ => m.forced[r as usize] = false,
                    }
                    if posted > p.work_end {
                        end = posted + p.hold;
                    }
                }
                let [x0, x1] = p.slots;
                // A forward held back by the previous action leaves now, with this one's sends.
                let before = held.as_mut().and_then(|h| h[r as usize].take());
                let mut done = |op: Op, x: usize, end: f64, counted: bool| {
                    if let Some((key, live)) = ends.finish(op, x, end) {
                        if !counted {
                            rn.live += live;
                        }
                        waiting.wake(key, &mut runnable);
                    }
                };
                if let Some((f, x, _)) = before {
                    done(f, x, end, true);
                }
                let exposed = match *a {
                    Action::One(op) if defer => {
                        // its activation is live from now; its output is sent later
                        rn.live += 1;
                        if let Some(h) = held.as_mut() {
                            h[r as usize] = Some((op, x0, end));
                        }
                        costs.exposed_op(op)
                    }
                    Action::One(op) => {
                        done(op, x0, end, false);
                        costs.exposed_op(op)
                    }
                    Action::Pair { f, b } => {
                        done(f, x0, end, false);
                        done(b, x1, end, false);
                        costs.exposed_pair(f, b)
                    }
                };
                // the wait for a receiver counts as the send's exposed time
                let exposed = exposed + (end - p.end).max(0.0);
                ran.push(Interval {
                    start: p.start,
                    end,
                });
                rn.record(p.start, end, exposed);
                rn.after = costs.host_after(*a);
            }
        }
        // Every rank left waits. A forward held back for the next action's sends, when that
        // action waits for what the forward feeds (an order the framework's exchanges avoid),
        // sends at its own end: every such forward, then the run goes on.
        if let Some(h) = held.as_mut()
            && h.iter().any(Option::is_some)
        {
            for slot in h.iter_mut() {
                if let Some((f, x, end)) = slot.take()
                    && let Some((key, _)) = ends.finish(f, x, end)
                {
                    waiting.wake(key, &mut runnable);
                }
            }
            continue;
        }
        // A rank waiting for a receiver to post, when the receiver can
        // only post after the send completes (an order the framework's exchanges avoid), takes
        // what has been posted and goes on: the one whose work ended first, then the lowest.
        let Some(m) = meet.as_mut() else { break };
        let next = (0..m.pending.len())
            .filter_map(|r| m.pending[r].map(|p| (p.work_end, r)))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let Some((_, r)) = next else { break };
        for w in &mut m.watch {
            w.retain(|&(x, _)| x as usize != r);
        }
        m.forced[r] = true;
        runnable.push(r as u32);
    }
    Ok(Run { intervals, totals })
}

/// Where a run stopped before the end, if it did: the first rank left short of its program.
fn unfinished(plan: &Plan, intervals: &[Vec<Interval>]) -> Option<SimError> {
    let programs = plan.programs();
    let rank = (0..programs.len()).find(|&r| intervals[r].len() < programs[r].len())?;
    Some(SimError::Stuck {
        rank: rank as u32,
        position: intervals[rank].len(),
    })
}

/// The timeline of a finished run and its metrics.
fn timeline(plan: &Plan, intervals: Vec<Vec<Interval>>, totals: &[Running]) -> Timeline {
    let makespan = intervals
        .iter()
        .filter_map(|iv| iv.last())
        .map(|iv| iv.end)
        .fold(0.0f64, f64::max);
    let mut total_busy = 0.0;
    let metrics: Vec<RankMetrics> = totals
        .iter()
        .zip(plan.programs())
        .map(|(rn, program)| {
            total_busy += rn.busy;
            RankMetrics {
                busy: rn.busy,
                idle: makespan - rn.busy,
                // The end of the step counts as the end of an idle stretch.
                longest_idle: rn.longest_idle.max(makespan - rn.free),
                // As `live_activations` counts it.
                peak_activations: if memory::computes_gradients(program) {
                    rn.peak.max(0) as u32
                } else {
                    0
                },
                exposed_comm: rn.exposed,
            }
        })
        .collect();
    let bubble_fraction = if makespan > 0.0 {
        1.0 - total_busy / (totals.len() as f64 * makespan)
    } else {
        0.0
    };
    Timeline {
        timing: Timing {
            intervals,
            makespan,
        },
        bubble_fraction,
        exposed_comm: totals.iter().map(|rn| rn.exposed).sum(),
        ranks: metrics,
    }
}

#[cfg(test)]
mod tests;
