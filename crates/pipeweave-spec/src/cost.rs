//! The cost model: compute and communication times of every part, for a given plan's placement.
//!
//! Each part's forward is a chain of tasks on two resources, compute and communication. For every
//! layer in order: attention (compute), then for an MoE layer dispatch (communication), the experts
//! (compute) and combine (communication), for a dense layer the MLP (compute); the last part ends
//! with the output head. A backward (B, or I) walks the layers in reverse: for an MoE layer the
//! gradient goes back through combine (communication), the experts (compute) and dispatch
//! (communication), then attention (compute); the last part starts with the head. W is compute
//! only.
//!
//! Times: a compute task takes `FLOPs / (peak · achievable_fraction)`. A dispatch or combine takes
//! the latency of the slowest network it crosses plus its volume over the bandwidth: tokens × copies
//! × hidden × bytes. Over the inter-node network a token travels `experts_per_token` times, or,
//! with node-limited routing, once per destination node, `min(experts_per_token,
//! max_nodes_per_token, nodes of the group)` times (DeepSeek-V3 §3.2.2: at most 4 nodes, then NVLink
//! forwarding); over NVLink it reaches `experts_per_token` GPUs. The two networks run at once, so
//! the time is the larger of the two. Only the share of copies that leaves a node (or a GPU) is
//! charged: `(nodes − 1) / nodes` inter-node, `(g − 1) / g` over NVLink for g group members per
//! node. The
//! forward dispatch uses `moe.dispatch_dtype`; combine and both backward transfers use the
//! activation format.
//!
//! **The overlap rule.** An action's duration is the makespan of its chains scheduled on the two
//! resources by list scheduling: each resource runs one task at a time, a task starts once the
//! previous task of its chain has ended, and of the tasks that could start next the earliest wins
//! (the forward chain on a tie). A lone F or B is one chain, so it pays every transfer in full (its
//! duration is compute + communication). An overlapped F&B pair runs the forward chain and the
//! backward chain together, so the dispatch and combine of one hide under the compute of the other
//! (DeepSeek-V3 Figure 4, DualPipe's overlap). The exposed communication of an action is its
//! duration minus its compute time: the time the compute resource waits.
//!
//! Point-to-point transfers between stages on different ranks: latency plus the boundary
//! activation (`tokens × hidden × activation bytes / tp`: each tensor rank sends its slice) over
//! the intra-node or inter-node bandwidth, depending on whether the two pipeline ranks share a
//! node under `parallelism.placement`.
//!
//! Measured costs replace derived ones per part: `f_ms`, `i_ms`, `w_ms` set the lone action's
//! duration (the compute tasks are scaled so that compute + all-to-all equals it);
//! `all_to_all_ms` sets one forward chunk's dispatch + combine (the backward moves the same);
//! `pair_ms` sets the F&B pair's duration on the part.

use crate::model;
use crate::spec::{PlacementOrder, Recompute, Spec};
use pipeweave_diagnostics::Diagnostic;
use pipeweave_plan::{Kind, Op, Plan};
use pipeweave_sim::CostModel;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Res {
    Compute,
    Comm,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Task {
    res: Res,
    dur: f64,
}

/// Derived per-part figures, in seconds and bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct PartCosts {
    /// Layers `[start, end)` of the model in this part.
    pub layers: (u64, u64),
    /// Lone forward duration (compute and the all-to-all it does not hide), in seconds.
    pub f: f64,
    /// Input-gradient backward duration, in seconds.
    pub i: f64,
    /// Weight-gradient backward duration, in seconds.
    pub w: f64,
    /// Full backward duration (input and weight gradients together), in seconds.
    pub b: f64,
    /// Compute time inside F, in seconds (the rest of F is exposed all-to-all); likewise
    /// `i_compute` and `b_compute`.
    pub f_compute: f64,
    /// Compute time inside I, in seconds.
    pub i_compute: f64,
    /// Compute time inside B, in seconds.
    pub b_compute: f64,
    /// Dispatch + combine time of one forward chunk (zero without MoE layers).
    pub all_to_all: f64,
    /// A measured pair duration, when given.
    pub pair_measured: Option<f64>,
    /// Activation bytes one micro-batch keeps on this part between its forward and its backward.
    pub activation_bytes: f64,
    /// Bytes live once per rank on top of the kept ones while this part's backward runs: with
    /// full recomputation, the largest layer's recomputed activations (zero otherwise).
    pub activation_working_bytes: f64,
    /// Weights (a count of parameters) on one GPU that are not sharded over ep.
    pub dense_params: f64,
    /// Routed-expert weights (a count of parameters) on one GPU, sharded over ep.
    pub expert_params: f64,
    f_chain: Vec<Task>,
    i_chain: Vec<Task>,
    b_chain: Vec<Task>,
}

/// A spec's costs for one plan. Implements [`CostModel`] in seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct CostTable {
    /// The figures of each model part, by position in a pipeline.
    pub parts: Vec<PartCosts>,
    stages_per_pipeline: u32,
    /// `stage_rank[stage]`: the pipeline rank of a global stage.
    stage_rank: Vec<u32>,
    /// Node of each pipeline rank (for its first data- and tensor-parallel GPU).
    rank_node: Vec<u64>,
    p2p_bytes: f64,
    intra: (f64, f64),
    inter: (f64, f64),
}

/// List-schedules chains of tasks on the two resources; returns (makespan, compute time).
fn run_chains(chains: &[&[Task]]) -> (f64, f64) {
    let mut next = vec![0usize; chains.len()];
    let mut ready = vec![0.0f64; chains.len()];
    let mut free = [0.0f64; 2];
    let mut compute = 0.0;
    loop {
        let mut best: Option<(f64, usize)> = None;
        for (c, chain) in chains.iter().enumerate() {
            if let Some(task) = chain.get(next[c]) {
                let slot = usize::from(task.res == Res::Comm);
                let start = ready[c].max(free[slot]);
                if best.is_none_or(|(s, _)| start < s) {
                    best = Some((start, c));
                }
            }
        }
        let Some((start, c)) = best else { break };
        let task = chains[c][next[c]];
        let end = start + task.dur;
        free[usize::from(task.res == Res::Comm)] = end;
        ready[c] = end;
        next[c] += 1;
        if task.res == Res::Compute {
            compute += task.dur;
        }
    }
    let makespan = ready.iter().copied().fold(0.0, f64::max);
    (makespan, compute)
}

fn sum(chain: &[Task], res: Res) -> f64 {
    // fold from +0.0: `Sum` for floats starts at −0.0, which would print as "-0"
    chain
        .iter()
        .filter(|t| t.res == res)
        .fold(0.0, |acc, t| acc + t.dur)
}

/// Scales the compute tasks of a chain so that the chain's total becomes `target` (communication
/// kept); with no compute to scale, adds one compute task.
fn fit_compute(chain: &mut Vec<Task>, target: f64) {
    let comm = sum(chain, Res::Comm);
    let want = (target - comm).max(0.0);
    let have = sum(chain, Res::Compute);
    if have > 0.0 {
        let k = want / have;
        for t in chain.iter_mut().filter(|t| t.res == Res::Compute) {
            t.dur *= k;
        }
    } else if want > 0.0 {
        chain.push(Task {
            res: Res::Compute,
            dur: want,
        });
    }
}

/// Scales the communication tasks of a chain to total `target`; with none, puts half before and
/// half after the compute.
fn fit_comm(chain: &mut Vec<Task>, target: f64) {
    let have = sum(chain, Res::Comm);
    if have > 0.0 {
        let k = target / have;
        for t in chain.iter_mut().filter(|t| t.res == Res::Comm) {
            t.dur *= k;
        }
    } else if target > 0.0 {
        let half = Task {
            res: Res::Comm,
            dur: target / 2.0,
        };
        chain.insert(0, half);
        chain.push(half);
    }
}

/// The GPU index of (pipeline rank, data rank, tensor rank).
fn gpu_index(spec: &Spec, pp_rank: u64, dp_rank: u64, tp_rank: u64) -> u64 {
    let p = &spec.parallelism;
    let (pp, tp, dp) = (u64::from(p.pp), u64::from(p.tp), u64::from(p.dp));
    match p.placement {
        PlacementOrder::PpOutermost => pp_rank * dp * tp + dp_rank * tp + tp_rank,
        PlacementOrder::PpInnermost => (dp_rank * tp + tp_rank) * pp + pp_rank,
    }
}

/// (nodes an expert-parallel group spans, its GPUs per node).
fn ep_spread(spec: &Spec) -> (f64, f64) {
    let ep = u64::from(spec.parallelism.ep);
    let gpn = u64::from(spec.cluster.gpus_per_node);
    let mut nodes: Vec<u64> = (0..ep).map(|d| gpu_index(spec, 0, d, 0) / gpn).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let n = nodes.len().max(1) as f64;
    (n, ep as f64 / n)
}

/// Seconds of one dispatch or combine of a micro-batch's tokens on one GPU, moving `bytes` per
/// element.
fn all_to_all_time(spec: &Spec, bytes: f64) -> f64 {
    let Some(moe) = spec.model.moe else {
        return 0.0;
    };
    let ep = f64::from(spec.parallelism.ep);
    if ep <= 1.0 {
        return 0.0;
    }
    let c = &spec.cluster;
    let tokens = spec.training.tokens_per_microbatch() / f64::from(spec.parallelism.tp);
    let h = spec.model.hidden as f64;
    let k = moe.experts_per_token as f64;
    let (nodes, per_node) = ep_spread(spec);
    // Over NVLink: every copy whose expert sits on another GPU of the node it reaches.
    let nvlink_share = if nodes > 1.0 {
        (per_node - 1.0) / per_node
    } else {
        (ep - 1.0) / ep
    };
    let nvlink = tokens * k * h * bytes * nvlink_share / (c.intra_node_gbps * 1e9);
    let mut latency = c.intra_node_latency_us * 1e-6;
    let ib = if nodes > 1.0 {
        latency = latency.max(c.inter_node_latency_us * 1e-6);
        // Node-limited routing sends one copy per destination node and forwards it over NVLink;
        // a plain all-to-all sends every routed copy on its own.
        let copies = moe
            .max_nodes_per_token
            .map_or(k, |m| k.min(m as f64).min(nodes));
        tokens * copies * h * bytes * (nodes - 1.0) / nodes / (c.inter_node_gbps * 1e9)
    } else {
        0.0
    };
    latency + nvlink.max(ib)
}

/// Why a spec and a plan cannot be costed together.
fn mismatch(spec: &Spec, plan: &Plan) -> Vec<Diagnostic> {
    spec.check_plan(plan)
        .into_iter()
        .filter(|d| !d.message.contains("micro-batches"))
        .collect()
}

impl CostTable {
    /// Derives the costs of every part of `spec` for `plan`'s placement. Fails when the plan's
    /// ranks or stages per pipeline do not match the spec (the micro-batch count may differ: costs
    /// do not depend on it).
    pub fn new(spec: &Spec, plan: &Plan) -> Result<CostTable, Vec<Diagnostic>> {
        let errors = mismatch(spec, plan);
        if !errors.is_empty() {
            return Err(errors);
        }
        let speed = spec.cluster.peak_flops() * spec.achievable_fraction;
        let act = spec.training.activation_dtype.bytes();
        let dispatch_bytes = spec.model.moe.map_or(act, |m| m.dispatch_dtype.bytes());
        let dispatch_f = all_to_all_time(spec, dispatch_bytes);
        let combine = all_to_all_time(spec, act);
        let (head_flops, head_params, logits_bytes) = model::head(spec);
        let full = spec.training.recompute == Recompute::Full;
        let ranges = model::part_layers(spec);
        let last = ranges.len().saturating_sub(1);
        let compute = |flops: f64| Task {
            res: Res::Compute,
            dur: flops / speed,
        };
        let comm = |dur: f64| Task {
            res: Res::Comm,
            dur,
        };
        let mut parts = Vec::with_capacity(ranges.len());
        for (q, &(start, end)) in ranges.iter().enumerate() {
            let layers: Vec<model::Layer> = (start..end).map(|i| model::layer(spec, i)).collect();
            let mut f_chain = Vec::new();
            let mut i_chain = Vec::new();
            let mut b_chain = Vec::new();
            let mut w_flops = 0.0;
            let mut activation_bytes = 0.0;
            let mut activation_working_bytes: f64 = 0.0;
            let mut dense_params = 0.0;
            let mut expert_params = 0.0;
            for l in &layers {
                f_chain.push(compute(l.attn_f));
                if l.moe {
                    f_chain.push(comm(dispatch_f));
                    f_chain.push(compute(l.mlp_f));
                    f_chain.push(comm(combine));
                } else {
                    f_chain.push(compute(l.mlp_f));
                }
                w_flops += l.attn_w + l.mlp_w;
                if full {
                    activation_bytes += l.input_bytes;
                    activation_working_bytes = activation_working_bytes.max(l.activation_bytes);
                } else {
                    activation_bytes += l.activation_bytes;
                }
                dense_params += l.dense_params;
                expert_params += l.expert_params;
            }
            if q == last {
                f_chain.push(compute(head_flops));
                i_chain.push(compute(head_flops));
                b_chain.push(compute(2.0 * head_flops));
                w_flops += head_flops;
                activation_bytes += logits_bytes;
                dense_params += head_params;
            }
            if q == 0 {
                dense_params += model::embedding_params(spec);
            }
            for l in layers.iter().rev() {
                let (i_parts, b_parts) = (
                    (l.mlp_i, l.attn_i),
                    (l.mlp_i + l.mlp_w, l.attn_i + l.attn_w),
                );
                for (chain, (mlp, attn)) in [(&mut i_chain, i_parts), (&mut b_chain, b_parts)] {
                    // Full recomputation runs the layer's forward again, all-to-all included,
                    // before its backward; otherwise only the MLA up-projections, if asked, before
                    // the attention's gradient.
                    let attn = if full {
                        chain.push(compute(l.attn_f));
                        if l.moe {
                            chain.push(comm(dispatch_f));
                            chain.push(compute(l.mlp_f));
                            chain.push(comm(combine));
                        } else {
                            chain.push(compute(l.mlp_f));
                        }
                        attn
                    } else {
                        attn + l.attn_recompute
                    };
                    if l.moe {
                        chain.push(comm(combine));
                        chain.push(compute(mlp));
                        chain.push(comm(combine));
                    } else {
                        chain.push(compute(mlp));
                    }
                    chain.push(compute(attn));
                }
            }
            let mut w_chain = vec![compute(w_flops)];
            let m = &spec.measured;
            let at = |v: &Option<Vec<f64>>| v.as_ref().and_then(|v| v.get(q).copied());
            if let Some(a2a) = at(&m.all_to_all) {
                fit_comm(&mut f_chain, a2a);
                fit_comm(&mut i_chain, a2a);
                fit_comm(&mut b_chain, a2a);
            }
            if let Some(f) = at(&m.f) {
                fit_compute(&mut f_chain, f);
            }
            if let (Some(i), Some(w)) = (at(&m.i), at(&m.w)) {
                fit_compute(&mut i_chain, i);
                w_chain = vec![compute(0.0)];
                fit_compute(&mut w_chain, w);
                let b_target = i + w;
                fit_compute(&mut b_chain, b_target);
            }
            let (f, f_compute) = run_chains(&[&f_chain]);
            let (i, i_compute) = run_chains(&[&i_chain]);
            let (b, b_compute) = run_chains(&[&b_chain]);
            let (w, _) = run_chains(&[&w_chain]);
            parts.push(PartCosts {
                layers: (start, end),
                f,
                i,
                w,
                b,
                f_compute,
                i_compute,
                b_compute,
                all_to_all: sum(&f_chain, Res::Comm),
                pair_measured: at(&m.pair),
                activation_bytes,
                activation_working_bytes,
                dense_params,
                expert_params,
                f_chain,
                i_chain,
                b_chain,
            });
        }

        let s = plan.stages_per_pipeline();
        let stage_rank: Vec<u32> = (0..plan.num_stages())
            .map(|st| plan.stage_rank(st).unwrap_or(0))
            .collect();
        let gpn = u64::from(spec.cluster.gpus_per_node);
        let rank_node = (0..u64::from(spec.parallelism.pp))
            .map(|r| gpu_index(spec, r, 0, 0) / gpn)
            .collect();
        let c = &spec.cluster;
        Ok(CostTable {
            parts,
            stages_per_pipeline: s,
            stage_rank,
            rank_node,
            p2p_bytes: spec.training.tokens_per_microbatch() * spec.model.hidden as f64 * act
                / f64::from(spec.parallelism.tp),
            intra: (c.intra_node_latency_us * 1e-6, c.intra_node_gbps * 1e9),
            inter: (c.inter_node_latency_us * 1e-6, c.inter_node_gbps * 1e9),
        })
    }

    fn part(&self, stage: u32) -> Option<&PartCosts> {
        self.parts
            .get((stage % self.stages_per_pipeline.max(1)) as usize)
    }

    /// (duration, compute inside it) of an overlapped pair.
    fn pair_times(&self, f: Op, b: Op) -> (f64, f64) {
        let (Some(pf), Some(pb)) = (self.part(f.stage), self.part(b.stage)) else {
            return (0.0, 0.0);
        };
        let b_chain = if b.kind == Kind::I {
            &pb.i_chain
        } else {
            &pb.b_chain
        };
        let (mut dur, compute) = run_chains(&[&pf.f_chain, b_chain]);
        // A measured pair applies when both halves are the part's own F and full B.
        if let Some(p) = pf.pair_measured
            && f.stage % self.stages_per_pipeline == b.stage % self.stages_per_pipeline
            && b.kind == Kind::B
        {
            dur = p;
        }
        (dur, compute)
    }

    /// True when two pipeline ranks sit on the same node.
    pub fn same_node(&self, a: u32, b: u32) -> bool {
        match (
            self.rank_node.get(a as usize),
            self.rank_node.get(b as usize),
        ) {
            (Some(x), Some(y)) => x == y,
            _ => false,
        }
    }

    /// Seconds to move one boundary activation between two pipeline ranks.
    pub fn p2p(&self, from_rank: u32, to_rank: u32) -> f64 {
        if from_rank == to_rank {
            return 0.0;
        }
        let (lat, bw) = if self.same_node(from_rank, to_rank) {
            self.intra
        } else {
            self.inter
        };
        lat + self.p2p_bytes / bw
    }
}

impl CostModel for CostTable {
    fn op(&self, op: Op) -> f64 {
        self.part(op.stage).map_or(0.0, |p| match op.kind {
            Kind::F => p.f,
            Kind::B => p.b,
            Kind::I => p.i,
            Kind::W => p.w,
        })
    }

    fn pair(&self, f: Op, b: Op) -> f64 {
        self.pair_times(f, b).0
    }

    fn transfer(&self, from: u32, to: u32) -> f64 {
        match (
            self.stage_rank.get(from as usize),
            self.stage_rank.get(to as usize),
        ) {
            (Some(&a), Some(&b)) => self.p2p(a, b),
            _ => 0.0,
        }
    }

    fn exposed_op(&self, op: Op) -> f64 {
        self.part(op.stage).map_or(0.0, |p| match op.kind {
            Kind::F => p.f - p.f_compute,
            Kind::B => p.b - p.b_compute,
            Kind::I => p.i - p.i_compute,
            Kind::W => 0.0,
        })
    }

    fn exposed_pair(&self, f: Op, b: Op) -> f64 {
        let (dur, compute) = self.pair_times(f, b);
        (dur - compute).max(0.0)
    }
}
