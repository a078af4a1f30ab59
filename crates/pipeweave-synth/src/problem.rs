//! What is searched: a placement of stages on ranks, the micro-batches, the memory limit per rank,
//! and the work graph every search shares (one node per forward, input backward and weight
//! backward of a stage and micro-batch, with its cost and its inputs).

use crate::SynthError;
use pipeweave_plan::memory;
use pipeweave_plan::{Kind, Op, Pipeline};
use pipeweave_sim::CostModel;
use std::fmt;

/// The most ranks and micro-batches a synthesis takes: the searches visit every rank at every
/// step, so they are meant for the sizes a pipeline has, not for the core's million-action plans.
pub const MAX_RANKS: u32 = 256;
/// See [`MAX_RANKS`].
pub const MAX_MICROBATCHES: u32 = 4096;
/// The most compute operations a synthesized plan may have.
pub const MAX_NODES: usize = 1 << 18;

/// Where the stages sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// One pipeline of `v·P` stages, stage q on rank q mod P (v = 1 is the plain placement of
    /// GPipe, 1F1B and ZB-H1/H2; v > 1 the looped placement of interleaved 1F1B).
    Loop {
        /// Stages per rank.
        v: u32,
    },
    /// One pipeline of 2P stages in a V: stage q on rank q, stage 2P − 1 − q on rank q too
    /// (ZB-V's and DualPipeV's placement).
    V,
    /// Two pipelines of P stages in opposite directions: pipeline 0's stage q on rank q,
    /// pipeline 1's on rank P − 1 − q, half the micro-batches each (Chimera's and DualPipe's
    /// placement; each rank keeps two model parts and every part has two copies).
    Bidirectional,
}

impl Placement {
    /// The placement's name as the command line spells it.
    pub fn name(self) -> String {
        match self {
            Placement::Loop { v: 1 } => "loop".to_owned(),
            Placement::Loop { v } => format!("loop (v {v})"),
            Placement::V => "v".to_owned(),
            Placement::Bidirectional => "bidirectional".to_owned(),
        }
    }

    /// 1F1B's memory in this placement, the default limit of a synthesis without a spec: P stages'
    /// worth of activations per rank (P·v in a loop, 2P in a V, P + 1 with two pipelines, as
    /// DualPipe holds).
    pub fn one_f_one_b_activations(self, ranks: u32) -> u32 {
        match self {
            Placement::Loop { v } => ranks.saturating_mul(v),
            Placement::V => ranks.saturating_mul(2),
            Placement::Bidirectional => ranks.saturating_add(1),
        }
    }

    /// The pipelines of this placement on `ranks` ranks with `microbatches` micro-batches.
    pub fn pipelines(self, ranks: u32, microbatches: u32) -> Vec<Pipeline> {
        match self {
            Placement::Loop { v } => vec![Pipeline {
                placement: (0..ranks * v).map(|q| q % ranks).collect(),
                microbatches: (0..microbatches).collect(),
            }],
            Placement::V => vec![Pipeline {
                placement: (0..2 * ranks)
                    .map(|q| if q < ranks { q } else { 2 * ranks - 1 - q })
                    .collect(),
                microbatches: (0..microbatches).collect(),
            }],
            Placement::Bidirectional => {
                let half = microbatches / 2;
                vec![
                    Pipeline {
                        placement: (0..ranks).collect(),
                        microbatches: (0..half).collect(),
                    },
                    Pipeline {
                        placement: (0..ranks).rev().collect(),
                        microbatches: (half..microbatches).collect(),
                    },
                ]
            }
        }
    }
}

/// A synthesis problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Ranks P.
    pub ranks: u32,
    /// Micro-batches M (even for the bidirectional placement).
    pub microbatches: u32,
    /// Where the stages sit.
    pub placement: Placement,
    /// Whether backwards may be split into I and W (zero-bubble schedules); a backward may still
    /// run whole (B) where that is better, as DualPipe's do.
    pub weight_split: bool,
    /// Whether a forward and a backward may run as one overlapped F&B pair.
    pub pairs: bool,
    /// The most activations each rank may hold at once, one entry per rank: in
    /// stage-micro-batch units (counted as `pipeweave_sim::live_activations` does), or in the
    /// units of `weights`.
    pub limits: Vec<u32>,
    /// What one activation of each stage weighs (global stage numbering), when stages differ (an
    /// embedding or head stage holds more than a middle one); empty: every activation weighs 1.
    pub weights: Vec<u32>,
}

/// Why a problem cannot be searched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProblemError {
    /// A size out of range, in words.
    Size(String),
    /// A cost the searches cannot take (negative or not finite), in words.
    Costs(String),
    /// A rank's memory limit is below what any order needs there.
    Memory {
        /// The rank.
        rank: u32,
        /// Its limit.
        limit: u32,
        /// The least any order of this placement needs on it.
        needed: u32,
    },
}

impl fmt::Display for ProblemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProblemError::Size(s) | ProblemError::Costs(s) => f.write_str(s),
            ProblemError::Memory {
                rank,
                limit,
                needed,
            } => write!(
                f,
                "rank {rank} may hold {limit} unit{} of activations but every order of this \
                 placement holds at least {needed} there (a micro-batch's forward passes every stage \
                 the rank hosts before its first backward)",
                if *limit == 1 { "" } else { "s" }
            ),
        }
    }
}

impl std::error::Error for ProblemError {}

/// The slot of a node among the three of a stage and micro-batch.
pub(crate) const F: usize = 0;
pub(crate) const I: usize = 1;
pub(crate) const W: usize = 2;

/// No node (in [`Graph::from`]).
pub(crate) const NO_NODE: u32 = u32::MAX;

/// One node of the work graph: a forward, an input backward (I, or B when run whole) or a
/// weight backward of a stage and micro-batch.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub op: Op,
    pub rank: u32,
    /// The node on another stage whose output it takes, with the transfer time.
    pub remote: Option<(usize, f64)>,
}

/// The work graph of a problem, its costs read once from the cost model.
#[derive(Debug, Clone)]
pub(crate) struct Graph {
    pub ranks: u32,
    pub stages: u32,
    pub pipelines: Vec<Pipeline>,
    /// Micro-batches per pipeline.
    pub per_pipeline: u32,
    pub nodes: Vec<Node>,
    /// Cost of each node as F, I and W; `whole[x]` the cost of the backward of slot x as one B.
    pub cost: Vec<f64>,
    pub whole: Vec<f64>,
    /// The stages each rank hosts, ascending.
    pub on_rank: Vec<Vec<u32>>,
    /// The stage of the same pipeline this stage's rank hosted last before it, if any (a V's or a
    /// loop's earlier chunk), and how many of that pipeline's stages the rank hosts after it.
    pub prev_here: Vec<Option<u32>>,
    pub later_here: Vec<u32>,
    /// What an activation of each stage weighs.
    pub weight: Vec<u32>,
    /// The nodes that take a node's output on another stage (at most one).
    pub remote_succ: Vec<Option<usize>>,
    /// `nodes[x].remote` as two compact tables, for the local search's timing: the producer
    /// (`NO_NODE` for none) and the transfer.
    pub from: Vec<u32>,
    pub transfer: Vec<f64>,
    pub weight_split: bool,
    pub pairs: bool,
    pub limits: Vec<u32>,
}

/// The operations of `problem`'s work graph (three per stage and micro-batch), once its sizes
/// are checked.
pub(crate) fn operations(problem: &Problem) -> Result<usize, ProblemError> {
    let p = problem.ranks;
    let m = problem.microbatches;
    if !(1..=MAX_RANKS).contains(&p) {
        return Err(ProblemError::Size(format!(
            "synthesis takes 1 to {MAX_RANKS} ranks, got {p}"
        )));
    }
    if !(1..=MAX_MICROBATCHES).contains(&m) {
        return Err(ProblemError::Size(format!(
            "synthesis takes 1 to {MAX_MICROBATCHES} micro-batches, got {m}"
        )));
    }
    let per_rank = match problem.placement {
        Placement::Loop { v } if !(1..=64).contains(&v) => {
            return Err(ProblemError::Size(format!(
                "synthesis takes 1 to 64 stages per rank, got {v}"
            )));
        }
        Placement::Loop { v } => v,
        Placement::V | Placement::Bidirectional => 2,
    };
    if problem.placement == Placement::Bidirectional && (m < 2 || !m.is_multiple_of(2)) {
        return Err(ProblemError::Size(format!(
            "the bidirectional placement splits the micro-batches over two pipelines, so M must be even, got {m}"
        )));
    }
    if problem.limits.len() != p as usize {
        return Err(ProblemError::Size(format!(
            "one memory limit per rank is needed, got {} for {p} ranks",
            problem.limits.len()
        )));
    }
    // Two pipelines of P stages take half the micro-batches each: P·v stages by M in every
    // placement.
    let micro = if problem.placement == Placement::Bidirectional {
        m / 2
    } else {
        m
    };
    let count = (p * per_rank) as usize * micro as usize * 3;
    if count > MAX_NODES {
        return Err(ProblemError::Size(format!(
            "synthesis takes at most {MAX_NODES} operations, this problem has {count}"
        )));
    }
    Ok(count)
}

impl Graph {
    /// The node of `slot` (F, I or W) for stage `s` and the `k`-th micro-batch of its pipeline.
    #[inline]
    pub fn node(&self, s: u32, k: u32, slot: usize) -> usize {
        ((s * self.per_pipeline + k) as usize) * 3 + slot
    }

    /// The stage and micro-batch index of node `x`, and its slot.
    #[inline]
    pub fn parts(&self, x: usize) -> (u32, u32, usize) {
        let unit = (x / 3) as u32;
        (unit / self.per_pipeline, unit % self.per_pipeline, x % 3)
    }

    /// When node `x`'s inputs are all there, given the end of every node placed so far (`NaN` for
    /// the others), or `None` while one is missing: the F before an I on its own stage, and the
    /// output from the neighbouring stage with its transfer.
    pub fn ready(&self, end: &[f64], x: usize) -> Option<f64> {
        let (s, k, slot) = self.parts(x);
        let mut t: f64 = 0.0;
        if slot == I {
            t = end[self.node(s, k, F)];
            if t.is_nan() {
                return None;
            }
        }
        if let Some((from, transfer)) = self.nodes[x].remote {
            let e = end[from];
            if e.is_nan() {
                return None;
            }
            t = t.max(e + transfer);
        }
        Some(t)
    }

    /// The cost of the pair of forward node `f` and backward node `b` (run whole or as I).
    pub fn pair_cost<C: CostModel + ?Sized>(
        &self,
        costs: &C,
        f: usize,
        b: usize,
        whole: bool,
    ) -> f64 {
        let bop = if whole {
            Op::new(self.nodes[b].op.stage, Kind::B, self.nodes[b].op.mb)
        } else {
            self.nodes[b].op
        };
        costs.pair(self.nodes[f].op, bop)
    }

    /// Builds the work graph of `problem` with the costs of `costs` (its tables allocated
    /// fallibly: too little memory is an error naming the size).
    pub fn new<C: CostModel + ?Sized>(problem: &Problem, costs: &C) -> Result<Graph, SynthError> {
        let count = operations(problem)?;
        let p = problem.ranks;
        let m = problem.microbatches;
        let pipelines = problem.placement.pipelines(p, m);
        let s_per = pipelines[0].placement.len() as u32;
        let stages = s_per * pipelines.len() as u32;
        let per_pipeline = pipelines[0].microbatches.len() as u32;
        let weight: Vec<u32> = if problem.weights.is_empty() {
            vec![1; stages as usize]
        } else if problem.weights.len() == stages as usize {
            problem.weights.clone()
        } else {
            return Err(ProblemError::Size(format!(
                "one activation weight per stage is needed, got {} for {stages} stages",
                problem.weights.len()
            ))
            .into());
        };
        let mut on_rank = vec![Vec::new(); p as usize];
        let host = |s: u32| pipelines[(s / s_per) as usize].placement[(s % s_per) as usize];
        for s in 0..stages {
            on_rank[host(s) as usize].push(s);
        }
        for (r, stages) in on_rank.iter().enumerate() {
            let limit = problem.limits[r];
            // A micro-batch's forward crosses each of the rank's stages of its pipeline before
            // any backward frees one.
            let needed = stages
                .iter()
                .filter(|&&s| s / s_per == stages[0] / s_per)
                .map(|&s| weight[s as usize])
                .sum::<u32>();
            if limit < needed {
                return Err(ProblemError::Memory {
                    rank: r as u32,
                    limit,
                    needed,
                }
                .into());
            }
        }
        let what = "the work graph";
        let mut nodes = memory::with_capacity(count, what)?;
        let mut cost = memory::with_capacity(count, what)?;
        let mut whole = memory::with_capacity(count, what)?;
        let mut remote_succ = memory::filled(count, None, what)?;
        let mut from = memory::with_capacity(count, what)?;
        let mut transfer = memory::with_capacity(count, what)?;
        let node = |s: u32, k: u32, slot: usize| ((s * per_pipeline + k) as usize) * 3 + slot;
        for s in 0..stages {
            let (j, q) = (s / s_per, s % s_per);
            let rank = host(s);
            for k in 0..per_pipeline {
                let mb = pipelines[j as usize].microbatches[k as usize];
                for (slot, kind) in [(F, Kind::F), (I, Kind::I), (W, Kind::W)] {
                    let op = Op::new(s, kind, mb);
                    let remote = match slot {
                        F if q > 0 => Some((node(s - 1, k, F), s - 1)),
                        I if q + 1 < s_per => Some((node(s + 1, k, I), s + 1)),
                        _ => None,
                    }
                    .map(|(x, from)| {
                        let t = if host(from) == rank {
                            0.0
                        } else {
                            costs.transfer(from, s)
                        };
                        (x, t)
                    });
                    if let Some((x, _)) = remote {
                        remote_succ[x] = Some(nodes.len());
                    }
                    nodes.push(Node { op, rank, remote });
                    cost.push(costs.op(op));
                    whole.push(if slot == I {
                        costs.op(Op::new(s, Kind::B, mb))
                    } else {
                        0.0
                    });
                }
            }
        }
        check_costs(&nodes, &cost, &whole, &on_rank, per_pipeline, costs)?;
        let mut prev_here = vec![None; stages as usize];
        let mut later_here = vec![0; stages as usize];
        for here in &on_rank {
            for (i, &st) in here.iter().enumerate() {
                let same = |o: &&u32| **o / s_per == st / s_per;
                prev_here[st as usize] = here[..i].iter().rfind(same).copied();
                later_here[st as usize] = here[i + 1..]
                    .iter()
                    .filter(same)
                    .map(|&o| weight[o as usize])
                    .sum();
            }
        }
        from.extend(
            nodes
                .iter()
                .map(|n: &Node| n.remote.map_or(NO_NODE, |(x, _)| x as u32)),
        );
        transfer.extend(nodes.iter().map(|n| n.remote.map_or(0.0, |(_, t)| t)));
        Ok(Graph {
            from,
            transfer,
            ranks: p,
            prev_here,
            later_here,
            weight,
            stages,
            pipelines,
            per_pipeline,
            nodes,
            cost,
            whole,
            on_rank,
            remote_succ,
            weight_split: problem.weight_split,
            pairs: problem.pairs,
            limits: problem.limits.clone(),
        })
    }
}

/// Every duration the searches may meet is finite and not negative: each operation's, and each
/// overlapped pair's a rank can form (the timing of a try relies on a rank's actions starting in
/// order of time).
fn check_costs<C: CostModel + ?Sized>(
    nodes: &[Node],
    cost: &[f64],
    whole: &[f64],
    on_rank: &[Vec<u32>],
    per_pipeline: u32,
    costs: &C,
) -> Result<(), ProblemError> {
    let bad = |d: f64| !d.is_finite() || d < 0.0;
    let node = |s: u32, slot: usize| ((s * per_pipeline) as usize) * 3 + slot;
    if let Some(x) = (0..nodes.len()).find(|&x| bad(cost[x]) || bad(whole[x])) {
        return Err(ProblemError::Costs(format!(
            "the costs give {} a duration of {}, which a schedule cannot have",
            nodes[x].op,
            if bad(cost[x]) { cost[x] } else { whole[x] }
        )));
    }
    for stages in on_rank {
        for &sf in stages {
            for &sb in stages {
                let f = nodes[node(sf, F)].op;
                let b = nodes[node(sb, I)].op;
                for b in [b, Op::new(b.stage, Kind::B, b.mb)] {
                    let d = costs.pair(f, b);
                    if bad(d) {
                        return Err(ProblemError::Costs(format!(
                            "the costs give the overlapped pair of {f} and {b} a duration of {d}, which a schedule cannot have"
                        )));
                    }
                }
            }
        }
    }
    Ok(())
}

/// What the unit tests of the searches build on.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::{Placement, Problem};

    /// Every placement.
    pub const PLACEMENTS: [Placement; 4] = [
        Placement::Loop { v: 1 },
        Placement::Loop { v: 2 },
        Placement::V,
        Placement::Bidirectional,
    ];

    /// `placement` at P = 4, M = 8, weight split and pairs allowed, every rank limited to `limit`.
    pub fn small(placement: Placement, limit: u32) -> Problem {
        Problem {
            ranks: 4,
            microbatches: 8,
            placement,
            weight_split: true,
            pairs: true,
            limits: vec![limit; 4],
            weights: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::small;
    use super::*;
    use pipeweave_sim::{StageCosts, UniformCosts};

    /// A cost model that gives an overlapped F&I pair less than nothing (a pair of 0.5 where B is
    /// 2 and I is 1: 0.5 − 2 + 1) is refused before any search, in words.
    #[test]
    fn durations_below_zero_are_refused() {
        let costs = UniformCosts {
            stage: StageCosts {
                f: 1.0,
                i: 1.0,
                w: 1.0,
                b: 2.0,
            },
            pair: Some(0.5),
            transfer: 0.0,
        };
        let err = Graph::new(&small(Placement::Bidirectional, 8), &costs).unwrap_err();
        assert!(
            matches!(err, SynthError::Problem(ProblemError::Costs(_))),
            "{err}"
        );
        assert!(err.to_string().contains("a duration of -0.5"), "{err}");
        let fine = UniformCosts {
            pair: Some(2.0),
            ..costs
        };
        assert!(Graph::new(&small(Placement::Bidirectional, 8), &fine).is_ok());
    }
}
