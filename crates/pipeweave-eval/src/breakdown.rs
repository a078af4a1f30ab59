//! A simulated step taken apart per rank: compute, the slowdown overlapped communication causes,
//! exposed communication of each kind, bubble and optimizer, and the bytes each kind moves; and
//! the step's end, after the data-parallel synchronisation and the optimizer.
//!
//! Per pipeline rank r (one GPU of it; its data- and tensor-parallel peers do the same):
//! - inside its actions ([`CostTable::op_cost`], [`CostTable::pair_cost`]): compute at full rate,
//!   the slowdown while communication takes SMs, exposed tensor-parallel collectives, exposed
//!   expert all-to-all;
//! - **exposed point-to-point**: for each action, the time it started after its inputs were
//!   computed and its rank was free, waiting for a transfer from another rank: `start − max(rank
//!   free, local inputs, remote inputs' end)`; with `training.p2p_blocking`, the time an action
//!   held its own rank for its sends instead, waiting for each receiver to post its receive
//!   and then sending (transfers then arrive as the sender ends);
//! - **exposed data-parallel communication**: the gradient buckets of every stage the rank hosts
//!   are complete along the stage's last gradient-producing action (its last W, or B, or pair
//!   with a B); they queue in order on the rank's data-parallel channel
//!   ([`pipeweave_cost::channel_end`]: bucket by bucket, or counted in closed form when a step
//!   holds too many to list); what runs after the rank's last action is exposed (all of it
//!   without `overlap_grad_reduce`); what ran before it took `training.comm_sms` of the GPU's
//!   SMs from the rank's compute, as did the all-gather under the next step's forward (all of it
//!   but its first bucket, with `overlap_param_gather`): `comm_sms / SMs` of those seconds (at
//!   most the rank's compute) are added to the rank's end as slowdown (to first order: the
//!   actions ran at full rate on the simulated timeline, and the buckets reduce while the rank
//!   runs the backwards that release them); then the parameter
//!   all-gather after the optimizer (its first bucket with `overlap_param_gather`, the slowest
//!   rank's for the whole step);
//!   with tied embeddings, the ranks of the first and the last part then all-reduce the
//!   embedding's gradient once both are done ([`tied_embedding_sync`]);
//! - the **optimizer** step of the rank's shards;
//! - **bubble**: the rest of the step, the time the rank waits for other ranks.
//!
//! The step ends when the slowest rank has synchronised and stepped its optimizer (gradient
//! clipping takes a global norm), plus the parameter all-gather: `T = max_r(end_r + exposed
//! DP_r + optimizer_r) + gather`. For every rank `compute + slowdown + exposed TP + exposed
//! all-to-all + exposed p2p + bubble + exposed DP + optimizer = T`.
//! Network contention between the data-parallel traffic and the pipeline's or the experts' is not
//! modelled.

use pipeweave_cost::{BUCKETS_ONE_BY_ONE, CostTable, StageBuckets, channel_end};
use pipeweave_plan::{Action, Kind, Op, Plan, Timing};
use pipeweave_sim::CostModel;
use pipeweave_spec::Spec;
use serde::Serialize;

/// Where a rank's step goes, in seconds; the terms add up to the step time.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Breakdown {
    /// Compute at full rate: GEMMs, attention, element-wise kernels.
    pub compute_s: f64,
    /// Extra compute time while communication took SMs: an overlapped F&B pair's, tensor-parallel
    /// collectives beside the GEMMs, and the data-parallel collectives beside the rank's actions.
    pub overlap_slowdown_s: f64,
    /// Tensor-parallel collectives no compute hides.
    pub exposed_tp_s: f64,
    /// Expert dispatch and combine no compute hides.
    pub exposed_all_to_all_s: f64,
    /// Waiting for point-to-point transfers between stages.
    pub exposed_p2p_s: f64,
    /// Waiting for other ranks.
    pub bubble_s: f64,
    /// Data-parallel gradient reduction and parameter all-gather after the rank's last action.
    pub exposed_dp_s: f64,
    /// The optimizer step.
    pub optimizer_s: f64,
}

impl Breakdown {
    /// Communication no compute hides: tensor-parallel, all-to-all, point-to-point, data-parallel.
    pub fn exposed_comm(&self) -> f64 {
        self.exposed_tp_s + self.exposed_all_to_all_s + self.exposed_p2p_s + self.exposed_dp_s
    }

    fn terms(&mut self) -> [&mut f64; 8] {
        [
            &mut self.compute_s,
            &mut self.overlap_slowdown_s,
            &mut self.exposed_tp_s,
            &mut self.exposed_all_to_all_s,
            &mut self.exposed_p2p_s,
            &mut self.bubble_s,
            &mut self.exposed_dp_s,
            &mut self.optimizer_s,
        ]
    }

    /// The mean of several breakdowns.
    pub fn mean(all: &[Breakdown]) -> Breakdown {
        let mut out = Breakdown::default();
        let n = all.len().max(1) as f64;
        for b in all {
            let mut b = *b;
            for (o, x) in out.terms().into_iter().zip(b.terms()) {
                *o += *x / n;
            }
        }
        out
    }
}

/// Bytes one GPU sends in one step, by kind.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Volumes {
    /// Boundary activations and gradients between pipeline stages.
    pub p2p: f64,
    /// Tensor- and sequence-parallel collectives.
    pub tp: f64,
    /// Expert dispatch and combine.
    pub all_to_all: f64,
    /// Data-parallel gradient reduction and parameter all-gather.
    pub dp: f64,
}

impl Volumes {
    fn add(&mut self, o: &Volumes, k: f64) {
        self.p2p += o.p2p * k;
        self.tp += o.tp * k;
        self.all_to_all += o.all_to_all * k;
        self.dp += o.dp * k;
    }
}

/// One rank's share of a step.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RankStep {
    /// The rank's step, term by term.
    pub breakdown: Breakdown,
    /// The bytes the rank sends.
    pub volumes: Volumes,
    /// When the rank's last action ends.
    pub end: f64,
}

/// The step of every rank and the step time.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Each pipeline rank's share.
    pub ranks: Vec<RankStep>,
    /// The step time in seconds: the last rank's end.
    pub time: f64,
}

/// End times of every op by piece of work (`Plan::work_slot`: a valid plan runs each piece its
/// pipelines list, so the tables are no larger than the plan, however many pipelines it has):
/// forwards and input-gradient backwards.
struct Ends<'p> {
    plan: &'p Plan,
    fwd: Vec<f64>,
    bwd: Vec<f64>,
}

impl<'p> Ends<'p> {
    fn of(plan: &'p Plan, timing: &Timing) -> Ends<'p> {
        let n = plan.work_slots();
        let mut e = Ends {
            plan,
            fwd: vec![0.0; n],
            bwd: vec![0.0; n],
        };
        for (r, program) in plan.programs().iter().enumerate() {
            for (a, iv) in program.iter().zip(&timing.intervals[r]) {
                for op in a.ops() {
                    let Some(x) = plan.work_slot(op.stage, op.mb) else {
                        continue;
                    };
                    match op.kind {
                        Kind::F => e.fwd[x] = iv.end,
                        Kind::B | Kind::I => e.bwd[x] = iv.end,
                        Kind::W => {}
                    }
                }
            }
        }
        e
    }

    fn at(&self, table: &[f64], stage: u32, mb: u32) -> f64 {
        self.plan
            .work_slot(stage, mb)
            .and_then(|x| table.get(x))
            .copied()
            .unwrap_or(0.0)
    }
}

/// When an op's inputs were computed on this rank and elsewhere, and when the remote ones
/// arrived: (local, remote computed, remote arrived); the bytes it sends onward.
fn inputs(plan: &Plan, costs: &CostTable, ends: &Ends<'_>, rank: u32, op: Op) -> (f64, f64, f64) {
    let hosts = plan.hosts();
    let remote = |from: u32, end: f64| -> (f64, f64, f64) {
        if hosts.get(from as usize).copied() == Some(rank) {
            (end, 0.0, 0.0)
        } else {
            (0.0, end, end + costs.transfer(from, op.stage))
        }
    };
    match op.kind {
        Kind::F => match plan.prev_stage(op.stage) {
            Some(p) => remote(p, ends.at(&ends.fwd, p, op.mb)),
            None => (0.0, 0.0, 0.0),
        },
        Kind::B | Kind::I => {
            let own = ends.at(&ends.fwd, op.stage, op.mb);
            match plan.next_stage(op.stage) {
                Some(n) => {
                    let (l, c, a) = remote(n, ends.at(&ends.bwd, n, op.mb));
                    (l.max(own), c, a)
                }
                None => (own, 0.0, 0.0),
            }
        }
        Kind::W => (ends.at(&ends.bwd, op.stage, op.mb), 0.0, 0.0),
    }
}

/// Whether an op sends its output to another rank (the bytes of a boundary activation).
fn sends(plan: &Plan, rank: u32, op: Op) -> bool {
    let to = match op.kind {
        Kind::F => plan.next_stage(op.stage),
        Kind::B | Kind::I => plan.prev_stage(op.stage),
        Kind::W => None,
    };
    to.and_then(|s| plan.hosts().get(s as usize).copied())
        .is_some_and(|h| h != rank)
}

/// With tied embeddings, the ranks of the first and the last part all-reduce the embedding's
/// gradient once both have reduced their data-parallel buckets (Megatron-LM's
/// `finalize_model_grads`: the embedding all-reduce after the data-parallel one): each of the two
/// ends that all-reduce after the later of them, counted as exposed DP.
fn tied_embedding_sync(plan: &Plan, costs: &CostTable, ranks: &mut [RankStep]) {
    if costs.tied_all_reduce <= 0.0 {
        return;
    }
    let last = plan.stages_per_pipeline().saturating_sub(1);
    let ends: Vec<usize> = [0, last]
        .iter()
        .filter_map(|&stage| plan.hosts().get(stage as usize).map(|&r| r as usize))
        .collect();
    let done = ends
        .iter()
        .filter_map(|&r| ranks.get(r))
        .map(|rs| rs.end + rs.breakdown.exposed_dp_s)
        .fold(0.0f64, f64::max);
    for &r in &ends {
        if let Some(rs) = ranks.get_mut(r) {
            rs.breakdown.exposed_dp_s = done + costs.tied_all_reduce - rs.end;
            rs.volumes.dp += costs.tied_bytes;
        }
    }
}

/// Takes the simulated step of `plan` (`timing`) apart on `spec`'s costs.
pub fn step(spec: &Spec, plan: &Plan, costs: &CostTable, timing: &Timing) -> Step {
    let ends = Ends::of(plan, timing);
    let t = &spec.training;
    let mut ranks = Vec::with_capacity(plan.ranks() as usize);
    let mut gather: f64 = 0.0;
    // every bucket of the step listed and folded, unless there are too many to list
    let buckets: f64 = (0..plan.ranks())
        .flat_map(|r| plan.stages_on_rank(r))
        .filter_map(|&stage| costs.parts.get(costs.part_of(stage)))
        .map(|part| part.sync.bucket_count())
        .sum();
    let one_by_one = buckets <= BUCKETS_ONE_BY_ONE;
    let dp_share = costs.comm_share();
    // per stage: the window of its last W and of its last B (a stage lives on one rank), found
    // by index, since a rank may host tens of thousands of stages
    let stages_n = plan.num_stages() as usize;
    let mut last_w: Vec<Option<(f64, f64)>> = vec![None; stages_n];
    let mut last_b: Vec<Option<(f64, f64)>> = vec![None; stages_n];
    for r in 0..plan.ranks() {
        let program = plan.program(r);
        let intervals = &timing.intervals[r as usize];
        let mut rs = RankStep::default();
        let mut free = 0.0f64;
        for (a, iv) in program.iter().zip(intervals) {
            let cost = match *a {
                Action::One(op) => costs.op_cost(op),
                Action::Pair { f, b } => costs.pair_cost(f, b),
            };
            let bd = &mut rs.breakdown;
            bd.compute_s += cost.compute;
            bd.overlap_slowdown_s += cost.slowdown;
            bd.exposed_tp_s += cost.exposed_tp;
            bd.exposed_all_to_all_s += cost.exposed_all_to_all;
            // a blocking send holds the sender: exposed point-to-point time of its own
            bd.exposed_p2p_s += cost.p2p;
            // and, with blocking sends, waits for its receivers to post their receives
            bd.exposed_p2p_s += (iv.end - iv.start - cost.duration).max(0.0);
            let (mut local, mut computed, mut arrived) = (0.0f64, 0.0f64, 0.0f64);
            for op in a.ops() {
                let (l, c, ar) = inputs(plan, costs, &ends, r, op);
                local = local.max(l);
                computed = computed.max(c);
                arrived = arrived.max(ar);
                let v = costs.op_volume(op);
                rs.volumes.tp += v.tp;
                rs.volumes.all_to_all += v.all_to_all;
                if sends(plan, r, op) {
                    rs.volumes.p2p += costs.p2p_bytes;
                }
                let table = match op.kind {
                    Kind::W => Some(&mut last_w),
                    Kind::B => Some(&mut last_b),
                    _ => None,
                };
                if let Some(x) = table.and_then(|list| list.get_mut(op.stage as usize)) {
                    *x = Some((iv.start, iv.end));
                }
            }
            let ready = free.max(local).max(computed);
            if arrived > ready {
                bd.exposed_p2p_s += (iv.start.min(arrived) - ready).max(0.0);
            }
            free = iv.end;
        }
        // the gradient buckets of every hosted stage, each stage's spread over its window
        let mut stages: Vec<StageBuckets> = Vec::new();
        let mut optimizer = 0.0;
        let mut dp_bytes = 0.0;
        let mut first_gather = None;
        let mut all_gather = 0.0;
        for &stage in plan.stages_on_rank(r) {
            let q = costs.part_of(stage);
            let Some(part) = costs.parts.get(q) else {
                continue;
            };
            // the window of its last gradient-producing action: its last W, else its last B
            let at = |list: &[Option<(f64, f64)>]| list.get(stage as usize).copied().flatten();
            let window = at(&last_w).or(at(&last_b)).unwrap_or((free, free));
            let (start, end) = if t.overlap_grad_reduce {
                window
            } else {
                (free, free)
            };
            stages.push(StageBuckets {
                start,
                end,
                sync: &part.sync,
            });
            optimizer += part.sync.optimizer;
            dp_bytes += part.sync.bytes;
            all_gather += part.sync.gather_all;
            if first_gather.is_none() && part.sync.gather_first > 0.0 {
                first_gather = Some(part.sync.gather_first);
            }
        }
        let channel = channel_end(&stages, one_by_one);
        // the collectives that ran beside the rank's compute took SMs from it: the buckets
        // reduced before its last action ended, and the all-gather under the next forward
        let reduced: f64 = stages.iter().map(|s| s.sync.bucket_seconds()).sum();
        let beside_reduce = if t.overlap_grad_reduce {
            (reduced - (channel - free).max(0.0)).max(0.0)
        } else {
            0.0
        };
        let beside_gather = if t.overlap_param_gather {
            (all_gather - first_gather.unwrap_or(0.0)).max(0.0)
        } else {
            0.0
        };
        // they slow no more compute than the rank has
        let beside = (beside_reduce + beside_gather).min(rs.breakdown.compute_s);
        let slow = beside * dp_share;
        rs.breakdown.overlap_slowdown_s += slow;
        rs.end = free + slow;
        rs.breakdown.exposed_dp_s = (channel - rs.end).max(0.0);
        rs.breakdown.optimizer_s = optimizer;
        rs.volumes.dp = dp_bytes;
        gather = gather.max(if t.overlap_param_gather {
            first_gather.unwrap_or(0.0)
        } else {
            all_gather
        });
        ranks.push(rs);
    }
    tied_embedding_sync(plan, costs, &mut ranks);
    let synced = ranks
        .iter()
        .map(|r| r.end + r.breakdown.exposed_dp_s + r.breakdown.optimizer_s)
        .fold(0.0f64, f64::max);
    let time = synced + gather;
    for rs in &mut ranks {
        let b = &mut rs.breakdown;
        b.exposed_dp_s += gather;
        let busy = b.compute_s + b.overlap_slowdown_s + b.exposed_tp_s + b.exposed_all_to_all_s;
        b.bubble_s = (time - busy - b.exposed_p2p_s - b.exposed_dp_s - b.optimizer_s).max(0.0);
    }
    Step { ranks, time }
}

/// Bytes the whole cluster sends in one step, by kind: every GPU of every pipeline rank.
pub fn total_volumes(spec: &Spec, step: &Step) -> Volumes {
    let per_rank = f64::from(spec.parallelism.dp) * f64::from(spec.parallelism.tp);
    let mut out = Volumes::default();
    for r in &step.ranks {
        out.add(&r.volumes, per_rank);
    }
    out
}

/// The mean over the GPUs of the bytes one sends per step.
pub fn mean_volumes(step: &Step) -> Volumes {
    let mut out = Volumes::default();
    let n = step.ranks.len().max(1) as f64;
    for r in &step.ranks {
        out.add(&r.volumes, 1.0 / n);
    }
    out
}
