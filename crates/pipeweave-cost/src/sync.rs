//! What a step costs after the pipeline for one part: the data-parallel gradient reduction in
//! buckets, the ZeRO parameter all-gather and the optimizer step (`pipeweave-eval` places them on
//! the simulated timeline).
//!
//! **Groups.** The replicas of a part are its data-parallel peers and, in a plan with several model
//! copies (Chimera, DualPipe), the ranks holding the same part of the other copies: their
//! gradients are summed, Chimera's and DualPipe's "gradient sum between the copies". Routed
//! experts are replicated on dp / ep GPUs only (DeepSeek-V3 §3.2). With ZeRO ≥ 1 and
//! `optimizer_shared_across_copies` one reduce-scatter over every replica leaves each GPU its shard
//! of one optimizer state; without it each copy keeps its own state: a reduce-scatter within the
//! copy and an all-reduce of the shard between the copies. Without ZeRO an all-reduce over every
//! replica.
//!
//! **Buckets** (Megatron-LM's `overlap_grad_reduce`, `DistributedDataParallelConfig.bucket_size`):
//! gradients fill buckets of `grad_bucket_params` parameters in backward order; a bucket's
//! collective launches once its gradients are complete, which happens during the part's last
//! backward of the step. The buckets are spread evenly over that action, dense and expert
//! buckets each in their own buffers.
//!
//! **Optimizer** (AdamW, fused multi-tensor; memory-bound, Loshchilov and Hutter): per weight of
//! the GPU's shard it reads and writes the master weight (or the weight itself without one) and
//! the two moments, reads the gradient and writes the 16-bit weight; the norm for gradient
//! clipping reads the shard's gradients once more, and every gradient of the GPU is zeroed for
//! the next step. Then ZeRO all-gathers the updated weights of every shard.

use crate::comm::{self, Links, spread_of};
use pipeweave_plan::Plan;
use pipeweave_spec::Spec;
use pipeweave_spec::hardware::Key;

/// One part's data-parallel synchronisation and optimizer step on one GPU.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GradSync {
    /// Gradient buckets, dense then expert: each kind's are alike and spread evenly over the
    /// part's last gradient-producing action, so they are kept as a count, never listed.
    pub buckets: Vec<Buckets>,
    /// Seconds of the parameter all-gather after the optimizer (ZeRO ≥ 1): its first bucket, and
    /// all of it.
    pub gather_first: f64,
    /// Seconds of the whole parameter all-gather.
    pub gather_all: f64,
    /// Seconds of the optimizer step for the part.
    pub optimizer: f64,
    /// Bytes one GPU sends per step for the part's gradients and parameters.
    pub bytes: f64,
    /// GPUs the dense optimizer state is sharded over (1 without ZeRO).
    pub shard_dense: f64,
    /// GPUs the expert optimizer state is sharded over (1 without ZeRO).
    pub shard_expert: f64,
}

/// The gradient buckets of one kind of weight: `count` buckets of `seconds` each, the k-th
/// (from 1) complete once k / `count` of the part's last gradient-producing action has run.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Buckets {
    /// How many (a whole number; a float, since a spec may ask for more than any integer holds).
    pub count: f64,
    /// Seconds of each one's collective.
    pub seconds: f64,
}

impl GradSync {
    /// Buckets of both kinds.
    pub fn bucket_count(&self) -> f64 {
        self.buckets.iter().map(|b| b.count).sum()
    }

    /// Seconds of every bucket's collective, one after another.
    pub fn bucket_seconds(&self) -> f64 {
        self.buckets.iter().map(|b| b.count * b.seconds).sum()
    }
}

/// The collectives of one kind of weight (dense or expert): per bucket, and for the gather.
struct Plan1 {
    bucket: f64,
    gather: f64,
    bytes_per_bucket: f64,
    buckets: f64,
    shard: f64,
}

#[allow(clippy::too_many_arguments)]
fn collectives(
    spec: &Spec,
    links: &Links,
    hosts: &[u32],
    dp_step: u64,
    dp_count: u64,
    params: f64,
    bucket_params: f64,
) -> Option<Plan1> {
    if params <= 0.0 {
        return None;
    }
    let t = &spec.training;
    let buckets = (params / bucket_params).ceil().max(1.0);
    let per = params / buckets;
    let grad = per * t.grad_reduce_dtype.bytes();
    let weights = per * t.param_dtype.bytes();
    let all = spread_of(spec, hosts, dp_step, dp_count);
    let own = spread_of(spec, &hosts[..1], dp_step, dp_count);
    let copies = spread_of(spec, hosts, dp_step, 1);
    let separate = hosts.len() > 1 && !t.optimizer_shared_across_copies;
    let (bucket, gather, bytes, shard) = if t.zero_stage == 0 {
        let m = all.members();
        (
            comm::all_reduce(links, grad, all),
            0.0,
            2.0 * comm::ring_bytes(grad, m),
            1.0,
        )
    } else if separate {
        let m = own.members();
        let shard_bytes = grad / m;
        (
            comm::reduce_scatter(links, grad, own) + comm::all_reduce(links, shard_bytes, copies),
            comm::reduce_scatter(links, weights, own),
            comm::ring_bytes(grad, m)
                + 2.0 * comm::ring_bytes(shard_bytes, copies.members())
                + comm::ring_bytes(weights, m),
            m,
        )
    } else {
        let m = all.members();
        (
            comm::reduce_scatter(links, grad, all),
            comm::reduce_scatter(links, weights, all),
            comm::ring_bytes(grad, m) + comm::ring_bytes(weights, m),
            m,
        )
    };
    Some(Plan1 {
        bucket,
        gather,
        bytes_per_bucket: bytes,
        buckets,
        shard,
    })
}

/// Bytes the optimizer moves per weight of the GPU's shard, and per weight of the GPU (zeroing
/// its gradients).
fn optimizer_bytes(spec: &Spec) -> (f64, f64) {
    let t = &spec.training;
    let g = t.grad_dtype.bytes();
    let moments = 4.0 * t.optimizer_dtype.bytes();
    let weights = match t.master_dtype {
        Some(m) => 2.0 * m.bytes() + t.param_dtype.bytes(),
        None => 2.0 * t.param_dtype.bytes(),
    };
    // the update reads the gradient, the norm for clipping reads it again
    (weights + moments + 2.0 * g, g)
}

/// The synchronisation of part `q` holding `dense` and `expert` weights on one GPU in `plan`.
pub(crate) fn grad_sync(
    spec: &Spec,
    plan: &Plan,
    q: usize,
    dense: f64,
    expert: f64,
    links: &Links,
) -> GradSync {
    let mut hosts: Vec<u32> = plan
        .pipelines()
        .iter()
        .filter_map(|p| p.placement.get(q).copied())
        .collect();
    if hosts.is_empty() {
        hosts.push(0);
    }
    let dp = u64::from(spec.parallelism.dp.max(1));
    let ep = u64::from(spec.parallelism.ep.max(1));
    let bucket = spec.grad_bucket_params();
    let d = collectives(spec, links, &hosts, 1, dp, dense, bucket);
    let e = collectives(spec, links, &hosts, ep, (dp / ep).max(1), expert, bucket);
    let mut out = GradSync {
        shard_dense: 1.0,
        shard_expert: 1.0,
        ..GradSync::default()
    };
    let (per_shard, per_weight) = optimizer_bytes(spec);
    let mut opt_bytes = 0.0;
    for (plan1, params, shard) in [
        (&d, dense, &mut out.shard_dense),
        (&e, expert, &mut out.shard_expert),
    ] {
        let Some(p) = plan1 else {
            continue;
        };
        let n = p.buckets;
        out.buckets.push(Buckets {
            count: n,
            seconds: p.bucket,
        });
        out.gather_first = if out.gather_first > 0.0 {
            out.gather_first
        } else {
            p.gather
        };
        out.gather_all += p.gather * n;
        out.bytes += p.bytes_per_bucket * n;
        *shard = p.shard;
        opt_bytes += params / p.shard * per_shard + params * per_weight;
    }
    let hbm = spec.cluster.figure(Key::HbmGbps) * 1e9 * spec.cluster.figure(Key::HbmEfficiency);
    out.optimizer = if hbm > 0.0 { opt_bytes / hbm } else { 0.0 };
    out
}

/// The most buckets a step's data-parallel channels fold one by one (see [`channel_end`]): every
/// shipped spec's steps hold fewer, a few thousand at most.
pub const BUCKETS_ONE_BY_ONE: f64 = 65_536.0;

/// One hosted stage's buckets on a rank's data-parallel channel: they complete evenly over
/// `[start, end]`, the window of the stage's last gradient-producing action (a point when they
/// wait for the rank's last action instead).
#[derive(Debug, Clone, Copy)]
pub struct StageBuckets<'a> {
    /// When the window starts, in seconds.
    pub start: f64,
    /// When it ends.
    pub end: f64,
    /// The stage's part's buckets.
    pub sync: &'a GradSync,
}

/// When a rank's data-parallel channel is done with the gradient buckets of the stages it hosts
/// (in the rank's order of stages): the channel reduces one bucket at a time, each once it is
/// complete and the channel is free, in the order they complete (a tie in the order listed).
///
/// With `one_by_one`, and at most [`BUCKETS_ONE_BY_ONE`] buckets, the buckets are listed and
/// folded in order, as the model states. Otherwise the end is counted in closed form, in time that
/// grows with the stages and not with their buckets: the channel ends at `max(Σ d, max_b (r_b +
/// Σ_{r_c ≥ r_b} d_c))` (each bucket b ready at `r_b`, busy `d_b`: the last time the channel waited,
/// then everything after), and along one kind of buckets of one stage that is linear in the
/// bucket, so only the kind's first and last buckets and those next to another kind's count.
/// That is the fold's value exactly (up to rounding) where one kind of buckets is in flight at a
/// time, as on a dense model, and within one bucket of each kind where a stage's dense and expert
/// buckets complete together.
pub fn channel_end(stages: &[StageBuckets], one_by_one: bool) -> f64 {
    let total: f64 = stages.iter().map(|s| s.sync.bucket_count()).sum();
    if one_by_one && total <= BUCKETS_ONE_BY_ONE {
        fold_every_bucket(stages)
    } else {
        closed_form(stages)
    }
}

/// The fold, bucket by bucket.
fn fold_every_bucket(stages: &[StageBuckets]) -> f64 {
    let mut all: Vec<(f64, f64)> = Vec::new();
    for s in stages {
        // each stage's buckets in the order they complete, dense before expert on a tie
        let mut own: Vec<(f64, f64)> = Vec::new();
        for b in &s.sync.buckets {
            let n = b.count as u64;
            for k in 0..n {
                own.push(((k + 1) as f64 / n as f64, b.seconds));
            }
        }
        own.sort_by(|a, b| a.0.total_cmp(&b.0));
        all.extend(
            own.into_iter()
                .map(|(share, d)| (s.start + share * (s.end - s.start), d)),
        );
    }
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    all.iter()
        .fold(0.0f64, |channel, &(ready, d)| channel.max(ready) + d)
}

/// One kind of buckets of one stage: `n` of `d` seconds, the k-th (from 0) ready at
/// `start + (k + 1)/n · width`.
#[derive(Clone, Copy)]
struct Run {
    start: f64,
    width: f64,
    n: f64,
    d: f64,
}

impl Run {
    fn ready(&self, k: f64) -> f64 {
        self.start + (k + 1.0) / self.n * self.width
    }

    fn first(&self) -> f64 {
        self.ready(0.0)
    }

    fn last(&self) -> f64 {
        self.ready(self.n - 1.0)
    }

    /// The bucket at or before `t` (clamped to the run).
    fn at_or_before(&self, t: f64) -> f64 {
        if self.width <= 0.0 {
            return 0.0;
        }
        ((t - self.start) / self.width * self.n - 1.0)
            .floor()
            .clamp(0.0, self.n - 1.0)
    }

    /// Buckets ready at `t` or later.
    fn from(&self, t: f64) -> f64 {
        if t <= self.first() {
            self.n
        } else if t > self.last() {
            0.0
        } else {
            // the first bucket with (k + 1)/n · width ≥ t − start
            let k = ((t - self.start) / self.width * self.n - 1.0)
                .ceil()
                .clamp(0.0, self.n - 1.0);
            self.n - k
        }
    }
}

/// The channel's end counted from the runs of buckets (see [`channel_end`]).
fn closed_form(stages: &[StageBuckets]) -> f64 {
    let mut runs: Vec<Run> = stages
        .iter()
        .flat_map(|s| {
            s.sync
                .buckets
                .iter()
                .filter(|b| b.count >= 1.0)
                .map(|b| Run {
                    start: s.start,
                    width: s.end - s.start,
                    n: b.count,
                    d: b.seconds,
                })
        })
        .collect();
    runs.sort_by(|a, b| a.first().total_cmp(&b.first()));
    // busy time of the runs from i on, and the latest last bucket up to i
    let mut after = vec![0.0; runs.len() + 1];
    for i in (0..runs.len()).rev() {
        after[i] = after[i + 1] + runs[i].n * runs[i].d;
    }
    let mut reach = Vec::with_capacity(runs.len());
    for r in &runs {
        let before = reach.last().copied().unwrap_or(f64::NEG_INFINITY);
        reach.push(r.last().max(before));
    }
    // t plus the busy time of every bucket ready at t or later
    let value = |t: f64| {
        let i = runs.partition_point(|r| r.first() < t);
        let mut busy = after[i];
        // runs that started before t and may still have buckets after it (one or two, since a
        // rank's windows are its own actions, one after another)
        for j in (0..i).rev() {
            if reach[j] < t {
                break;
            }
            busy += runs[j].from(t) * runs[j].d;
        }
        t + busy
    };
    let mut ends: Vec<f64> = runs.iter().flat_map(|r| [r.first(), r.last()]).collect();
    ends.sort_by(f64::total_cmp);
    let mut best = after[0];
    for r in &runs {
        best = best.max(value(r.first())).max(value(r.last()));
        // another run's end inside this one: this one's buckets on either side of it
        let lo = ends.partition_point(|&t| t <= r.first());
        let hi = ends.partition_point(|&t| t < r.last());
        for &t in ends.get(lo..hi).unwrap_or(&[]) {
            let k = r.at_or_before(t);
            best = best.max(value(r.ready(k)));
            best = best.max(value(r.ready((k + 1.0).min(r.n - 1.0))));
        }
    }
    best
}

#[cfg(test)]
mod tests;
