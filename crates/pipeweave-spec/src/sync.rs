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
use crate::hardware::Key;
use crate::spec::Spec;
use pipeweave_plan::Plan;

/// One part's data-parallel synchronisation and optimizer step on one GPU.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GradSync {
    /// Gradient buckets in the order they are complete: (share of the part's last
    /// gradient-producing action done by then, seconds of its collective).
    pub buckets: Vec<(f64, f64)>,
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

/// The collectives of one kind of weight (dense or expert): per bucket, and for the gather.
struct Plan1 {
    bucket: f64,
    gather: f64,
    bytes_per_bucket: f64,
    buckets: usize,
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
        buckets: buckets as usize,
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
    let mut buckets = Vec::new();
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
        for k in 0..n {
            buckets.push(((k + 1) as f64 / n as f64, p.bucket));
        }
        out.gather_first = if out.gather_first > 0.0 {
            out.gather_first
        } else {
            p.gather
        };
        out.gather_all += p.gather * n as f64;
        out.bytes += p.bytes_per_bucket * n as f64;
        *shard = p.shard;
        opt_bytes += params / p.shard * per_shard + params * per_weight;
    }
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    out.buckets = buckets;
    let hbm = spec.cluster.figure(Key::HbmGbps) * 1e9 * spec.cluster.figure(Key::HbmEfficiency);
    out.optimizer = if hbm > 0.0 { opt_bytes / hbm } else { 0.0 };
    out
}
