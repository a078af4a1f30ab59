//! The cost model: what every action of a plan costs on a spec's cluster, for the plan's placement.
//!
//! Each part's forward is a chain of tasks on two resources, compute and communication
//! ([`crate::schedule`]). For every layer in order: the attention block (compute) between its
//! tensor-parallel collectives, then the MLP block: for an MoE layer the dispatch
//! (communication), the experts (compute) and the combine (communication), for a dense layer
//! the MLP (compute), again between tensor-parallel collectives; the last part ends with the
//! output head and the multi-token-prediction modules. A backward (B, or I) walks the layers in
//! reverse: the head first, then for an MoE layer the combine's gradient (communication), the
//! experts (compute), the dispatch's gradient (communication), then the attention (compute). W is
//! compute only.
//!
//! **Compute from the operations** ([`crate::model`]): a compute task takes `GEMM FLOPs / (peak of
//! gemm_dtype × its GEMM efficiency × each GEMM's shape's share of it, [`crate::gemm`]) + attention FLOPs / (16-bit peak × the kernel's efficiency,
//! forward or backward) + element-wise bytes / (HBM bandwidth × its efficiency)`, every figure
//! from the GPU table. Standard attention's batched GEMMs run at the GEMM efficiency of the
//! activation format.
//!
//! **Many layers**: up to 4,096 layers (every shipped spec) each layer is its own tasks; a deeper
//! model is costed in chunks of `⌈layers / 4096⌉` consecutive alike layers, each one task of each
//! kind as long as its layers' together ([`model::layer_chunks`]), so that a part's chains, and
//! the time to cost and schedule them, stay the same from four thousand layers to a million. A
//! lone action's time is the same sum; an overlapped pair interleaves its two halves chunk by
//! chunk instead of layer by layer.
//!
//! **Communication** ([`crate::comm`]): a dispatch or combine moves a micro-batch's tokens to
//! their experts (forward: dispatch in `moe.dispatch_dtype`, combine in the activation format;
//! backward: the combine's gradient travels like a dispatch, in `dispatch_dtype`, the dispatch's
//! gradient like a combine, DeepSeek-V3 §3.3.3). With tensor parallelism every block all-gathers
//! its input and reduce-scatters its output (sequence parallelism) or all-reduces its output
//! (without), on the intra-node link, forward and backward (Korthikanti et al. 2022 §4.2.2); with
//! `tp_comm_overlap` they run beside the block's compute instead of between.
//!
//! **Overlap**: an action's duration is its chains scheduled on the two resources; a lone F or B
//! is one chain and pays its communication in full; an overlapped F&B pair runs the forward's and
//! the backward's chains at once, so one half's communication hides under the other's compute
//! (DeepSeek-V3 Figure 4), and compute slows while communication takes SMs (`training.comm_sms`).
//!
//! Point-to-point transfers between stages on different ranks: latency plus the boundary
//! activation (`tokens × hidden × activation bytes / tp`: each tensor rank sends its slice) over
//! the intra-node or inter-node link, depending on whether the two pipeline ranks share a node.
//!
//! Data-parallel gradient reduction, the parameter all-gather and the optimizer step are priced
//! per part here ([`GradSync`]) and placed on a simulated timeline by `pipeweave-eval`.
//!
//! Measured costs replace derived ones per part: `f_ms`, `i_ms`, `w_ms` set the lone action's
//! duration (the compute tasks are scaled so that compute + communication equals it);
//! `all_to_all_ms` sets one forward chunk's dispatch + combine (the backward moves the same);
//! `pair_ms` sets the F&B pair's duration on the part.

use crate::comm::{self, Links, Spread};
use crate::model::{self, Work};
use crate::schedule::{ActionCost, Share, Task, TaskKind, schedule};
use crate::sync::{GradSync, grad_sync};
use pipeweave_diagnostics::Diagnostic;
use pipeweave_plan::{Kind, Op, Plan};
use pipeweave_spec::hardware::Key;
use pipeweave_spec::{Recompute, Spec};
use std::cell::RefCell;
use std::collections::BTreeMap;

mod tensor_parallel;
mod transfers;

use tensor_parallel::Tp;

pub use transfers::RESYNC_S;

/// Bytes one GPU sends in one action, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Volume {
    /// Tensor- and sequence-parallel collectives.
    pub tp: f64,
    /// Expert dispatch and combine, over both links.
    pub all_to_all: f64,
}

/// One pass of a part: its tasks and what it costs alone.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Pass {
    /// The chain of compute and communication tasks.
    pub chain: Vec<Task>,
    /// Tensor-parallel collectives that run beside the chain (`tp_comm_overlap`), else empty.
    pub side: Vec<Task>,
    /// The pass run alone.
    pub cost: ActionCost,
    /// Bytes it sends.
    pub volume: Volume,
}

impl Pass {
    fn chains(&self) -> Vec<&[Task]> {
        if self.side.is_empty() {
            vec![&self.chain]
        } else {
            vec![&self.chain, &self.side]
        }
    }
}

/// Derived per-part figures, in seconds and bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct PartCosts {
    /// Layers `[start, end)` of the model in this part.
    pub layers: (u64, u64),
    /// A lone forward.
    pub f: Pass,
    /// An input-gradient backward.
    pub i: Pass,
    /// A weight-gradient backward.
    pub w: Pass,
    /// A full backward (input and weight gradients together).
    pub b: Pass,
    /// Dispatch + combine time of one forward chunk (zero without MoE layers).
    pub all_to_all: f64,
    /// A measured pair duration, when given.
    pub pair_measured: Option<f64>,
    /// Activation bytes one micro-batch keeps on this part between its forward and its backward.
    pub activation_bytes: f64,
    /// Bytes live once per rank on top of the kept ones while this part's backward runs: with
    /// full recomputation, the largest layer's activations.
    pub activation_working_bytes: f64,
    /// Weights (a count of parameters) on one GPU that are not sharded over ep.
    pub dense_params: f64,
    /// Routed-expert weights (a count of parameters) on one GPU, sharded over ep.
    pub expert_params: f64,
    /// Data-parallel gradient reduction, parameter all-gather and optimizer step of the part.
    pub sync: GradSync,
}

/// The costs of every part of a spec for one plan's placement: what the simulator asks.
#[derive(Debug, Clone, PartialEq)]
pub struct CostTable {
    /// The figures of each model part, by position in a pipeline.
    pub parts: Vec<PartCosts>,
    stages_per_pipeline: u32,
    /// `stage_rank[stage]`: the pipeline rank of a global stage.
    stage_rank: Vec<u32>,
    /// `neighbours[stage]`: the pipeline ranks of the next and the previous stage, if any.
    neighbours: Vec<(Option<u32>, Option<u32>)>,
    /// `training.p2p_blocking`: a sender holds its rank until its transfer has completed.
    blocking: bool,
    /// Blocking sends that wait for their receiver to post (one stage per rank; see
    /// [`CostModel::rendezvous`]).
    rendezvous: bool,
    /// Blocking sends with several stages per rank: a forward followed by a backward sends its
    /// output with the backward's, after it (see [`CostModel::sends_after_next`]).
    defer: bool,
    /// Node of each pipeline rank (for its first data- and tensor-parallel GPU).
    rank_node: Vec<u64>,
    /// Bytes of one boundary activation a GPU sends to the next stage.
    pub p2p_bytes: f64,
    /// With `model.tied_embeddings`: seconds of the all-reduce of the embedding's gradient
    /// between the pipeline ranks of the first and the last part, after the backward (Megatron-LM's
    /// `_allreduce_word_embedding_grads`, DeepSpeed's `ReduceTiedGrads`); zero when one rank holds
    /// both or the embeddings are not tied.
    pub tied_all_reduce: f64,
    /// Bytes one GPU sends for it.
    pub tied_bytes: f64,
    links: Links,
    /// The rate compute keeps while communication runs beside it.
    rate_shared: f64,
    /// Overlapped pairs already costed, by (forward part, backward part, backward is I): only
    /// the pairs a plan has (a table of every two parts would hold parts² entries, billions at
    /// tens of thousands of parts).
    pairs: RefCell<BTreeMap<(usize, usize, bool), ActionCost>>,
}

/// Compute throughputs of one GPU: FLOP/s of the linear layers and of the attention kernel
/// (forward, backward), element-wise bytes per second.
struct Rates {
    gemm: f64,
    attn_fwd: f64,
    attn_bwd: f64,
    hbm: f64,
}

impl Rates {
    fn of(spec: &Spec) -> Rates {
        let t = &spec.training;
        let hw = &spec.cluster.hardware;
        // Validated when the spec was read; a tiny rate keeps a missing figure from dividing by 0.
        let rate = |peak: Key, eff: Key| (hw.or(peak, 0.0) * 1e12 * hw.or(eff, 0.0)).max(1.0);
        let act_peak = Key::peak(t.activation_dtype);
        let (attn_fwd, attn_bwd) = match t.attention.keys() {
            Some((f, b)) => (rate(act_peak, f), rate(act_peak, b)),
            None => {
                let r = rate(act_peak, Key::gemm(t.activation_dtype, t.fp8_gemm_kernel));
                (r, r)
            }
        };
        Rates {
            gemm: rate(
                Key::peak(t.gemm_dtype),
                Key::gemm(t.gemm_dtype, t.fp8_gemm_kernel),
            ),
            attn_fwd,
            attn_bwd,
            hbm: (hw.or(Key::HbmGbps, 0.0) * 1e9 * hw.or(Key::HbmEfficiency, 0.0)).max(1.0),
        }
    }

    fn time(&self, w: &Work) -> f64 {
        w.gemm / self.gemm
            + w.attn_fwd / self.attn_fwd
            + w.attn_bwd / self.attn_bwd
            + w.bytes / self.hbm
            + w.kernels * model::LAUNCH_GAP_S
    }
}

fn sum(chain: &[Task], f: impl Fn(&Task) -> bool) -> f64 {
    // fold from +0.0: `Sum` for floats starts at −0.0, which would print as "-0"
    chain
        .iter()
        .filter(|t| f(t))
        .fold(0.0, |acc, t| acc + t.dur)
}

/// Scales the compute tasks of a chain so that the chain's total becomes `target`
/// (communication kept); with no compute to scale, adds one compute task.
fn fit_compute(chain: &mut Vec<Task>, target: f64) {
    let comm = sum(chain, |t| t.kind != TaskKind::Compute);
    let want = (target - comm).max(0.0);
    let have = sum(chain, |t| t.kind == TaskKind::Compute);
    if have > 0.0 {
        let k = want / have;
        for t in chain.iter_mut().filter(|t| t.kind == TaskKind::Compute) {
            t.dur *= k;
        }
    } else if want > 0.0 {
        chain.push(Task::compute(want));
    }
}

/// Scales the all-to-all tasks of a chain to total `target`; with none, puts half before and
/// half after the compute.
fn fit_all_to_all(chain: &mut Vec<Task>, target: f64) {
    let have = sum(chain, |t| t.kind == TaskKind::AllToAll);
    if have > 0.0 {
        let k = target / have;
        for t in chain.iter_mut().filter(|t| t.kind == TaskKind::AllToAll) {
            t.dur *= k;
        }
    } else if target > 0.0 {
        let half = Task {
            kind: TaskKind::AllToAll,
            dur: target / 2.0,
        };
        chain.insert(0, half);
        chain.push(half);
    }
}

/// True for a plan of lone F and B actions: the plans whose blocking exchanges the frameworks
/// document (Megatron-LM's 1F1B and interleaved 1F1B, DeepSpeed's `TrainSchedule`).
fn plain(plan: &Plan) -> bool {
    plan.programs().iter().flatten().all(|a| match a {
        pipeweave_plan::Action::One(op) => matches!(op.kind, Kind::F | Kind::B),
        pipeweave_plan::Action::Pair { .. } => false,
    })
}

/// Why a spec and a plan cannot be costed together.
pub(crate) fn mismatch(spec: &Spec, plan: &Plan) -> Vec<Diagnostic> {
    spec.check_plan(plan)
        .into_iter()
        .filter(|d| !d.message.contains("micro-batches"))
        .collect()
}

/// Builds passes from blocks: the chain, the tasks beside it and the bytes.
pub(crate) struct Builder<'a> {
    rates: Rates,
    /// The rate compute keeps while communication runs beside it.
    rate_shared: f64,
    tp: Tp,
    /// Forward dispatch, forward combine, backward combine-gradient, backward dispatch-gradient:
    /// (seconds, bytes).
    a2a: [(f64, f64); 4],
    overlap_tp: bool,
    full: bool,
    /// `model.parallel_blocks`: one tensor-parallel block per layer.
    parallel_blocks: bool,
    spec: &'a Spec,
}

impl<'a> Builder<'a> {
    pub(crate) fn of(spec: &'a Spec, links: &Links) -> Builder<'a> {
        let t = &spec.training;
        let act = t.activation_dtype.bytes();
        let dispatch = spec.model.moe.map_or(act, |m| m.dispatch_dtype.bytes());
        let a2a = |bytes: f64| {
            let (s, ib, nvl) = comm::all_to_all(spec, links, bytes);
            (s, ib + nvl)
        };
        let sms = spec.cluster.figure(Key::Sms).max(1.0);
        Builder {
            rates: Rates::of(spec),
            rate_shared: ((sms - t.comm_sms) / sms).clamp(0.01, 1.0),
            tp: Tp::of(spec, links),
            a2a: [a2a(dispatch), a2a(act), a2a(dispatch), a2a(act)],
            overlap_tp: t.tp_comm_overlap,
            full: t.recompute == Recompute::Full,
            parallel_blocks: spec.model.parallel_blocks,
            spec,
        }
    }
}

impl Builder<'_> {
    fn compute(&self, pass: &mut Pass, w: &Work) {
        pass.chain.push(Task::compute(self.rates.time(w)));
    }

    /// A block's collectives around `body`, for `times` layers alike.
    fn tp_block(&self, pass: &mut Pass, times: f64, body: impl FnOnce(&Self, &mut Pass)) {
        let (mut before, mut after) = self.tp.around();
        for t in before.iter_mut().chain(after.iter_mut()) {
            t.dur *= times;
        }
        pass.volume.tp += self.tp.bytes() * times;
        if self.overlap_tp {
            pass.side.extend(before);
            body(self, pass);
            pass.side.extend(after);
        } else {
            pass.chain.extend(before);
            body(self, pass);
            pass.chain.extend(after);
        }
    }

    fn a2a(&self, pass: &mut Pass, which: usize, times: f64) {
        let (dur, bytes) = self.a2a[which];
        if dur > 0.0 {
            pass.chain.push(Task {
                kind: TaskKind::AllToAll,
                dur: dur * times,
            });
            pass.volume.all_to_all += bytes * times;
        }
    }

    /// The forward of `times` layers alike `l` (a chunk of them, [`model::layer_chunks`]: one task
    /// of each kind where each layer has one, `times` as long).
    fn forward(&self, pass: &mut Pass, (l, times): (&model::Layer, f64)) {
        let mlp = |b: &Self, p: &mut Pass| {
            if l.moe {
                b.a2a(p, 0, times);
                b.compute(p, &l.mlp.f.times(times));
                b.a2a(p, 1, times);
            } else {
                b.compute(p, &l.mlp.f.times(times));
            }
        };
        if self.parallel_blocks {
            // one gather of the shared input, one reduction of the summed outputs
            self.tp_block(pass, times, |b, p| {
                b.compute(p, &l.attn.f.times(times));
                mlp(b, p);
            });
        } else {
            self.tp_block(pass, times, |b, p| b.compute(p, &l.attn.f.times(times)));
            self.tp_block(pass, times, mlp);
        }
    }

    /// The backward of `times` layers alike `l`: with `weights`, B (I and W together), else I.
    fn backward(&self, pass: &mut Pass, (l, times): (&model::Layer, f64), weights: bool) {
        if self.full {
            // Full recomputation runs the layer's forward again, all-to-all included, first.
            self.forward(pass, (l, times));
        }
        let work =
            |blk: &model::Block| if weights { blk.i.plus(blk.w) } else { blk.i }.times(times);
        let mlp = |b: &Self, p: &mut Pass| {
            if l.moe {
                b.a2a(p, 2, times);
                b.compute(p, &work(&l.mlp));
                b.a2a(p, 3, times);
            } else {
                b.compute(p, &work(&l.mlp));
            }
        };
        if self.parallel_blocks {
            self.tp_block(pass, times, |b, p| {
                mlp(b, p);
                b.compute(p, &work(&l.attn));
            });
        } else {
            self.tp_block(pass, times, mlp);
            self.tp_block(pass, times, |b, p| b.compute(p, &work(&l.attn)));
        }
    }

    fn finish(&self, mut pass: Pass) -> Pass {
        pass.cost = schedule(&pass.chains(), Share::WhileCommunicating(self.rate_shared));
        pass
    }
}

impl CostTable {
    /// The share of a GPU's compute that communication beside it takes: `comm_sms / SMs`.
    pub fn comm_share(&self) -> f64 {
        1.0 - self.rate_shared
    }

    /// Derives the costs of every part of `spec` for `plan`'s placement. Fails when the plan's
    /// ranks or stages per pipeline do not match the spec (the micro-batch count may differ: costs
    /// do not depend on it).
    pub fn new(spec: &Spec, plan: &Plan) -> Result<CostTable, Vec<Diagnostic>> {
        let errors = mismatch(spec, plan);
        if !errors.is_empty() {
            return Err(errors);
        }
        let links = Links::of(spec);
        let t = &spec.training;
        let b = Builder::of(spec, &links);
        let head = model::head(spec);
        let ranges = model::part_layers(spec);
        let last = ranges.len().saturating_sub(1);
        let mut parts = Vec::with_capacity(ranges.len());
        let chunk = model::chunk_size(spec);
        // each part priced with its own recomputation (`training.recompute_per_part`)
        let specs = crate::recompute::part_specs(spec);
        let builders: Vec<Builder<'_>> = specs.iter().map(|s| Builder::of(s, &links)).collect();
        for (q, &(start, end)) in ranges.iter().enumerate() {
            let (spec, b) = match crate::recompute::index_of(spec, &specs, q) {
                Some(i) => (&specs[i], &builders[i]),
                None => (spec, &b),
            };
            let layers = model::layer_chunks(spec, start, end, chunk);
            let mtp: Vec<model::Layer> = if q == last {
                (0..spec.model.mtp_depth)
                    .map(|k| model::layer(spec, spec.model.layers + k))
                    .collect()
            } else {
                Vec::new()
            };
            let part = b.part(q, (start, end), &layers, &mtp, &head, plan, &links);
            parts.push(part);
        }

        let s = plan.stages_per_pipeline();
        let stage_rank: Vec<u32> = (0..plan.num_stages())
            .map(|st| plan.stage_rank(st).unwrap_or(0))
            .collect();
        let neighbours = (0..plan.num_stages())
            .map(|st| {
                let rank = |s: Option<u32>| s.and_then(|s| stage_rank.get(s as usize).copied());
                (rank(plan.next_stage(st)), rank(plan.prev_stage(st)))
            })
            .collect();
        let gpn = u64::from(spec.cluster.gpus_per_node);
        let rank_node: Vec<u64> = (0..u64::from(spec.parallelism.pp))
            .map(|r| comm::gpu_index(spec, r, 0, 0) / gpn)
            .collect();
        // the tied embedding's gradient: one all-reduce of vocab·hidden/t gradients in the
        // reduction's format between the first part's rank and the last part's (a ring of two:
        // the whole gradient each way once, two latencies)
        let (first, last) = (
            stage_rank.first().copied(),
            stage_rank.get(s.saturating_sub(1) as usize).copied(),
        );
        let (tied_all_reduce, tied_bytes) = match (first, last) {
            (Some(a), Some(b)) if spec.model.tied_embeddings && a != b => {
                let bytes = model::embedding_params(spec) * t.grad_reduce_dtype.bytes();
                let same = rank_node.get(a as usize) == rank_node.get(b as usize);
                let spread = if same {
                    Spread {
                        nodes: 1.0,
                        per_node: 2.0,
                    }
                } else {
                    Spread {
                        nodes: 2.0,
                        per_node: 1.0,
                    }
                };
                (
                    comm::all_reduce(&links, bytes, spread),
                    2.0 * comm::ring_bytes(bytes, 2.0),
                )
            }
            _ => (0.0, 0.0),
        };
        Ok(CostTable {
            parts,
            stages_per_pipeline: s,
            stage_rank,
            neighbours,
            blocking: t.p2p_blocking,
            // The frameworks' blocking exchanges are known for plans of F and B: Megatron-LM's
            // 1F1B posts each rank's next receive with its own send (`send_forward_recv_backward`
            // after a forward, `send_backward_recv_forward` after a backward; DeepSpeed's
            // pipeline engine runs no other schedule), and its interleaved schedule
            // (`send_forward_recv_forward` in the warm-up, `send_backward_recv_backward` in the
            // cool-down, `send_forward_backward_recv_forward_backward` after each forward and
            // backward of the steady state) does the same, a forward's send and the next receives
            // leaving with the backward after it. No framework runs split or overlapped
            // backwards with blocking sends; for those a send holds its rank for its transfer
            // only.
            rendezvous: t.p2p_blocking && plain(plan),
            // Megatron-LM's interleaved schedule without overlapped communication
            // (`--no-overlap-p2p-communication`, which its zero-bubble runtime requires too):
            // in the steady state a forward and the backward after it exchange together,
            // `send_forward_backward_recv_forward_backward`, so the forward's output leaves
            // only once that backward has run.
            // Zero-bubble runtimes place their own sends (split backwards, V shapes): not this.
            defer: t.p2p_blocking && plan.num_stages() > plan.ranks() && plain(plan),
            rank_node,
            p2p_bytes: t.tokens_per_microbatch()
                * spec.model.hidden as f64
                * t.activation_dtype.bytes()
                / f64::from(spec.parallelism.tp),
            tied_all_reduce,
            tied_bytes,
            rate_shared: b.rate_shared,
            links,
            pairs: RefCell::new(BTreeMap::new()),
        })
    }

    fn part(&self, stage: u32) -> Option<&PartCosts> {
        self.parts
            .get((stage % self.stages_per_pipeline.max(1)) as usize)
    }

    /// What an overlapped pair costs.
    pub fn pair_cost(&self, f: Op, b: Op) -> ActionCost {
        let key = (
            self.part_of(f.stage),
            self.part_of(b.stage),
            b.kind == Kind::I,
        );
        let hold = self.send_hold(f) + self.send_hold(b);
        if let Some(c) = self.pairs.borrow().get(&key) {
            return c.holding(hold);
        }
        let cost = self.pair_cost_uncached(f, b);
        self.pairs.borrow_mut().insert(key, cost);
        cost.holding(hold)
    }

    fn pair_cost_uncached(&self, f: Op, b: Op) -> ActionCost {
        let (Some(pf), Some(pb)) = (self.part(f.stage), self.part(b.stage)) else {
            return ActionCost::default();
        };
        let back = if b.kind == Kind::I { &pb.i } else { &pb.b };
        let mut chains = pf.f.chains();
        chains.extend(back.chains());
        // Only a pair that communicates reserves SMs for it.
        let communicates = chains
            .iter()
            .any(|c| c.iter().any(|t| t.kind != TaskKind::Compute));
        let rate = if communicates { self.rate_shared } else { 1.0 };
        let mut cost = schedule(&chains, Share::Reserved(rate));
        // A measured pair applies when both halves are the part's own F and full B.
        if let Some(p) = pf.pair_measured
            && f.stage % self.stages_per_pipeline == b.stage % self.stages_per_pipeline
            && b.kind == Kind::B
        {
            cost = ActionCost {
                duration: p,
                compute: p.min(cost.compute),
                slowdown: 0.0,
                exposed_tp: 0.0,
                exposed_all_to_all: (p - cost.compute).max(0.0),
                p2p: 0.0,
            };
        }
        cost
    }

    /// What a lone action costs.
    pub fn op_cost(&self, op: Op) -> ActionCost {
        self.part(op.stage)
            .map_or(ActionCost::default(), |p| match op.kind {
                Kind::F => p.f.cost,
                Kind::B => p.b.cost,
                Kind::I => p.i.cost,
                Kind::W => p.w.cost,
            })
            .holding(self.send_hold(op))
    }

    /// Bytes one GPU sends inside an action (tensor-parallel collectives, all-to-all).
    pub fn op_volume(&self, op: Op) -> Volume {
        self.part(op.stage)
            .map_or(Volume::default(), |p| match op.kind {
                Kind::F => p.f.volume,
                Kind::B => p.b.volume,
                Kind::I => p.i.volume,
                Kind::W => p.w.volume,
            })
    }

    /// The part of a global stage.
    pub fn part_of(&self, stage: u32) -> usize {
        (stage % self.stages_per_pipeline.max(1)) as usize
    }
}

impl Builder<'_> {
    /// The costs of part `q` (its layers, and the last part's head and multi-token prediction).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn part(
        &self,
        q: usize,
        range: (u64, u64),
        layers: &[(model::Layer, f64)],
        mtp: &[model::Layer],
        head: &model::Head,
        plan: &Plan,
        links: &Links,
    ) -> PartCosts {
        let spec = self.spec;
        let t = &spec.training;
        let last = q + 1 == spec.parallelism.layers_per_stage.len();
        let proj = model::mtp_projection_params(spec);
        let tokens = t.tokens_per_microbatch();
        // the projection's GEMM (2h inputs, h/t outputs) at its shape's share of the rate; its
        // gradients taken at the forward's share
        let [proj_factor, _, _] =
            crate::gemm::Roof::of(spec).factors(&[crate::gemm::Gemm::linear(
                tokens,
                spec.model.hidden as f64 / f64::from(spec.parallelism.tp),
                2.0 * spec.model.hidden as f64,
            )]);
        let proj_work = Work {
            gemm: 2.0 * proj * tokens * proj_factor,
            kernels: 1.0,
            ..Work::default()
        };
        let (mut f, mut i, mut bb) = (Pass::default(), Pass::default(), Pass::default());
        let mut w_work = Work::default();
        let mut activation_bytes = 0.0;
        let mut working: f64 = 0.0;
        let mut dense = 0.0;
        let mut expert = 0.0;
        let full = t.recompute == Recompute::Full;
        let mut keep = |l: &model::Layer, n: f64| {
            if full {
                activation_bytes += l.input_bytes * n;
                working = working.max(l.activation_bytes);
            } else {
                activation_bytes += l.activation_bytes * n;
            }
        };
        let embedding_norm = if q == 0 {
            model::embedding_norm(spec)
        } else {
            None
        };
        if let Some((norm_f, _, _)) = embedding_norm {
            self.compute(&mut f, &norm_f);
        }
        for &(ref l, n) in layers {
            self.forward(&mut f, (l, n));
            w_work = w_work.plus(l.attn.w.times(n)).plus(l.mlp.w.times(n));
            keep(l, n);
            dense += l.dense_params * n;
            expert += l.expert_params * n;
        }
        if last {
            self.compute(&mut f, &head.f);
            w_work = w_work.plus(head.w);
            dense += head.params;
            for l in mtp {
                self.compute(&mut f, &proj_work);
                self.forward(&mut f, (l, 1.0));
                self.compute(&mut f, &head.f);
                w_work = w_work
                    .plus(l.attn.w)
                    .plus(l.mlp.w)
                    .plus(proj_work)
                    .plus(head.w);
                keep(l, 1.0);
                dense += l.dense_params + proj;
                expert += l.expert_params;
            }
            // the FP32 logits for the loss, of the head and of every prediction module
            activation_bytes += head.logits_bytes * (1 + mtp.len()) as f64;
        }
        if q == 0 {
            dense += model::embedding_params(spec) + model::first_part_extra_params(spec);
        }
        // the embedding norm's input, kept for its backward
        activation_bytes += embedding_norm.map_or(0.0, |(_, _, kept)| kept);
        for (pass, weights) in [(&mut i, false), (&mut bb, true)] {
            if last {
                for l in mtp.iter().rev() {
                    self.compute(pass, &if weights { head.i.plus(head.w) } else { head.i });
                    self.backward(pass, (l, 1.0), weights);
                    let pw = if weights { 2.0 } else { 1.0 };
                    self.compute(
                        pass,
                        &Work {
                            gemm: proj_work.gemm * pw,
                            kernels: pw,
                            ..Work::default()
                        },
                    );
                }
                self.compute(pass, &if weights { head.i.plus(head.w) } else { head.i });
            }
            for &(ref l, n) in layers.iter().rev() {
                self.backward(pass, (l, n), weights);
            }
            if let Some((_, norm_i, _)) = embedding_norm {
                self.compute(pass, &norm_i);
            }
        }
        let mut w = Pass::default();
        self.compute(&mut w, &w_work);
        let m = &spec.measured;
        let at = |v: &Option<Vec<f64>>| v.as_ref().and_then(|v| v.get(q).copied());
        if let Some(a2a) = at(&m.all_to_all) {
            for p in [&mut f, &mut i, &mut bb] {
                fit_all_to_all(&mut p.chain, a2a);
            }
        }
        if let Some(x) = at(&m.f) {
            fit_compute(&mut f.chain, x);
        }
        if let (Some(xi), Some(xw)) = (at(&m.i), at(&m.w)) {
            fit_compute(&mut i.chain, xi);
            w.chain = Vec::new();
            fit_compute(&mut w.chain, xw);
            fit_compute(&mut bb.chain, xi + xw);
        }
        let all_to_all = sum(&f.chain, |t| t.kind == TaskKind::AllToAll);
        let sync = grad_sync(spec, plan, q, dense, expert, links);
        PartCosts {
            layers: range,
            f: self.finish(f),
            i: self.finish(i),
            w: self.finish(w),
            b: self.finish(bb),
            all_to_all,
            pair_measured: at(&m.pair),
            activation_bytes,
            activation_working_bytes: working,
            dense_params: dense,
            expert_params: expert,
            sync,
        }
    }
}
