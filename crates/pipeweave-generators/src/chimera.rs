//! Chimera (Li & Hoefler, SC'21): bidirectional pipelines over D workers, in the order of the
//! authors' generator (Shigangli/Chimera `chimera_pipeline_rank.py`).
//!
//! The authors schedule in unit slots (F = B). With K pipelines (K/2 down, K/2 up) a *basic unit*
//! carries D micro-batches, D/K per pipeline. Pipeline `c` of the unit injects its micro-batch `x`
//! at slot `2x`; it runs forward position `q` at slot `2x + q` and, after turning around on the
//! last stage, backward position `q` at slot `2x + 2D − 1 − q`. More micro-batches concatenate
//! basic units: unit `u` is the basic unit shifted by `2Du` slots, so its head forwards fill the
//! tail of unit `u − 1` (this is when the authors' generator spawns the next unit: as the first
//! micro-batch of a pipeline leaves it).
//!
//! Pipelines in canonical order: down pipelines `i = 0..K/2` start at worker `i·2D/K` and climb
//! (position q on worker `(start + q) mod D`); up pipelines start at the same workers and descend
//! (position q on worker `(start + D − 1 − q) mod D`). Micro-batches are numbered unit by unit,
//! pipeline by pipeline in that order; pipelines of the plan are therefore numbered by the smallest
//! micro-batch they carry, as in the reference vectors. A worker runs its actions by slot; actions
//! that share a slot (never in a basic unit) run in (unit, pipeline) order, the generator's order.
//!
//! The paper's three ways to join units when M > D ([`Joins`]):
//! - *direct concatenation*: units back to back as above, one micro-batch per slot;
//! - *forward doubling*: every slot carries two micro-batches instead of one, forwards back to back
//!   and backwards back to back, so a unit holds 2D micro-batches, the joints between units close,
//!   and a slot holds twice the activations, which the paper pays for with recomputation;
//! - *backward halving*: the same slots filled with micro-batches of half the size, so that two of
//!   them hold what one of direct concatenation holds and no recomputation is needed. In a plan a
//!   micro-batch's size is the batch divided by M, so halving builds forward doubling's order and
//!   is run at twice direct concatenation's M; the two differ in what they are priced with
//!   (`recommend` tries doubling with recomputation and halving without).
//!
//! Where the authors' script departs from the paper we follow the paper: with D/K = 1 it stops
//! after one unit, and with D/K ≥ 3 and more than two units it starts a third unit two slots after
//! the second; both match it on every configuration it concatenates cleanly.

use crate::dual::MAX_WORK;
use pipeweave_plan::{Action, Kind, Op, Pipeline, Plan};

/// Chimera's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChimeraOptions {
    /// K: the number of pipelines (even; K/2 down and K/2 up).
    pub pipelines: u32,
    /// How units join when M > D.
    pub joins: Joins,
}

/// How Chimera joins its basic units when M > D (the paper's three ways).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Joins {
    /// Units back to back, one micro-batch per slot.
    #[default]
    Direct,
    /// Two micro-batches per slot (twice the activations; recomputation pays for them).
    Doubling,
    /// Forward doubling's slots with micro-batches of half the size (no recomputation).
    Halving,
}

impl Joins {
    /// Every way, in the order `list` shows them.
    pub const ALL: [Joins; 3] = [Joins::Direct, Joins::Doubling, Joins::Halving];

    /// The option's name as `--set joins=NAME` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Joins::Direct => "direct",
            Joins::Doubling => "doubling",
            Joins::Halving => "halving",
        }
    }

    /// The way named `name`, if there is one.
    pub fn from_name(name: &str) -> Option<Joins> {
        Joins::ALL.into_iter().find(|j| j.name() == name)
    }

    /// Micro-batches per slot.
    fn width(self) -> u32 {
        match self {
            Joins::Direct => 1,
            Joins::Doubling | Joins::Halving => 2,
        }
    }
}

impl Default for ChimeraOptions {
    fn default() -> ChimeraOptions {
        ChimeraOptions {
            pipelines: 2,
            joins: Joins::Direct,
        }
    }
}

/// One action in the slot model, with what orders it on its worker.
struct Timed {
    slot: u64,
    unit: u32,
    pipeline: u32,
    sub: u32,
    op: Op,
}

/// Chimera on `ranks` workers (D stages per pipeline) with `microbatches` micro-batches.
pub fn chimera(ranks: u32, microbatches: u32, opts: ChimeraOptions) -> Result<Plan, String> {
    let (d, m, k) = (ranks, microbatches, opts.pipelines);
    if d == 0 || d % 2 != 0 {
        return Err(format!(
            "chimera needs an even number of stages (ranks), got {d}"
        ));
    }
    if k < 2 || k % 2 != 0 {
        return Err(format!(
            "chimera needs an even number of pipelines (at least 2), got {k}"
        ));
    }
    if d % k != 0 {
        return Err(format!(
            "chimera with {k} pipelines needs a number of stages that {k} divides, got {d}"
        ));
    }
    if u64::from(d) * u64::from(m) > MAX_WORK {
        return Err(format!(
            "chimera supports at most {MAX_WORK} ranks × micro-batches, got {d} × {m}"
        ));
    }
    let width = opts.joins.width();
    let share = d / k * width;
    let unit = d * width;
    if m < unit || m % share != 0 {
        let doubling = match opts.joins {
            Joins::Direct => "",
            Joins::Doubling => " with forward doubling",
            Joins::Halving => " with backward halving",
        };
        return Err(format!(
            "chimera with {d} stages and {k} pipelines{doubling} needs at least {unit} micro-batches \
             (one basic unit) and a multiple of {share} (the micro-batches of one pipeline in a unit), got {m}"
        ));
    }
    let half = k / 2;
    let starts: Vec<u32> = (0..half).map(|i| i * (d / half)).collect();
    let mut pipelines: Vec<Pipeline> = (0..k)
        .map(|c| {
            let start = starts[(c % half) as usize];
            let placement = (0..d)
                .map(|q| {
                    if c < half {
                        (start + q) % d
                    } else {
                        (start + d - 1 - q) % d
                    }
                })
                .collect();
            Pipeline {
                placement,
                microbatches: Vec::new(),
            }
        })
        .collect();

    let mut timed: Vec<Vec<Timed>> = (0..d).map(|_| Vec::new()).collect();
    let slots_per_pipeline = d / k;
    let mut next_mb = 0u32;
    let mut u = 0u32;
    while next_mb < m {
        for c in 0..k {
            for x in 0..slots_per_pipeline {
                if next_mb >= m {
                    break;
                }
                let base = u64::from(u) * 2 * u64::from(d) + 2 * u64::from(x);
                for sub in 0..width {
                    let mb = next_mb;
                    next_mb += 1;
                    pipelines[c as usize].microbatches.push(mb);
                    for q in 0..d {
                        let worker = pipelines[c as usize].placement[q as usize];
                        let stage = c * d + q;
                        let fwd = base + u64::from(q);
                        let bwd = base + 2 * u64::from(d) - 1 - u64::from(q);
                        for (slot, kind) in [(fwd, Kind::F), (bwd, Kind::B)] {
                            timed[worker as usize].push(Timed {
                                slot,
                                unit: u,
                                pipeline: c,
                                sub,
                                op: Op::new(stage, kind, mb),
                            });
                        }
                    }
                }
            }
        }
        u += 1;
    }
    let programs = timed
        .into_iter()
        .map(|mut actions| {
            actions.sort_by_key(|t| (t.slot, t.unit, t.pipeline, t.sub));
            actions.into_iter().map(|t| Action::One(t.op)).collect()
        })
        .collect();
    Plan::new(d, pipelines, programs).map_err(|e| format!("chimera built a broken plan: {e}"))
}
