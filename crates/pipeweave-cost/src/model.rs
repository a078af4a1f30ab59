//! Per-layer and per-part work: parameters, GEMM FLOPs, attention-kernel FLOPs and element-wise
//! bytes, for one micro-batch on one GPU (after tensor and expert parallelism).
//!
//! T = tokens of a micro-batch = sequence length s × micro-batch size; t = tp.
//! - A linear layer with `p` weights costs `2·p·T` FLOPs forward, `2·p·T` for the input gradient
//!   (I) and `2·p·T` for the weight gradient (W) (Narayanan et al. 2021, §5.1; Qi et al. 2023,
//!   Table 1), divided by t; they run in `training.gemm_dtype`.
//! - The attention core (`QKᵀ` and the weighted sum) computes `2·T·s·heads·(d_qk + d_v)` FLOPs with
//!   standard attention (the whole score matrix, masked afterwards) and twice that in the backward
//!   (four GEMMs); FlashAttention skips the masked half of a causal matrix, `T·s·heads·(d_qk +
//!   d_v)` forward, and recomputes the scores in its backward, 2.5× the forward (FlashAttention-3
//!   §4.1: five GEMMs against two). No weights, so nothing in W.
//! - Model FLOPs (the utilisation's numerator) count the causal attention core, `T·s·heads·(d_qk +
//!   d_v)` forward and twice that backward, and no recomputation, whatever the kernel.
//! - An MoE layer computes the router, the shared experts and `experts_per_token` routed experts
//!   per token (expert parallelism balances tokens, so each GPU does that much work).
//! - The output head (last part, and once more per multi-token-prediction module) is a linear layer
//!   of `vocab·hidden` weights; the embedding (first part) is a lookup without FLOPs.
//! - Element-wise kernels (normalisation, residual adds, dropout, rotary embedding, the MLP's
//!   activation, standard attention's softmax, FP8 quantisation of GEMM inputs, the experts'
//!   permutation, the loss) move the bytes of [`elementwise`]; a backward moves twice its
//!   forward's (each gradient reads and writes one more tensor); each weight gradient is
//!   accumulated into the gradient buffer once per micro-batch (read and write in `grad_dtype`).
//!
//! - A GEMM's FLOPs count at the large-GEMM rate divided by its shape's share of it
//!   ([`crate::gemm`]: tiles and waves over the SMs, and the memory bound of a small GEMM); the
//!   input and weight gradients have shapes of their own (M × K by N, K × N by M).
//!
//! - Every kernel launched costs [`LAUNCH_GAP_S`] on top of its work: the gap between two
//!   kernels queued back to back on a stream. The kernels of each block are counted from its
//!   operations ([`kernel_counts`]).
//!
//! Activation bytes are in [`crate::activation`].

use crate::activation;
use crate::gemm::{Gemm, Roof};
use pipeweave_spec::{Attention, Dtype, Mlp, Moe, Positions, Spec};

mod attention;

use attention::mla_up_gemms;
pub(crate) use attention::{AttnShape, attention, attention_gemms};

/// Work of one pass of a block on one GPU: what its compute time is made of.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Work {
    /// FLOPs of linear layers, in `gemm_dtype`, at the large-GEMM rate: each GEMM's FLOPs over
    /// the share of that rate its shape gets ([`crate::gemm`]).
    pub gemm: f64,
    /// FLOPs the attention kernel executes in a forward pass.
    pub attn_fwd: f64,
    /// FLOPs the attention kernel executes in a backward pass (recomputation included).
    pub attn_bwd: f64,
    /// Bytes element-wise kernels read and write.
    pub bytes: f64,
    /// Kernels launched, each paying [`LAUNCH_GAP_S`] on top of its work.
    pub kernels: f64,
}

impl Work {
    /// The work of `k` passes alike (`k = 1` gives the work itself, to the bit).
    pub fn times(self, k: f64) -> Work {
        Work {
            gemm: self.gemm * k,
            attn_fwd: self.attn_fwd * k,
            attn_bwd: self.attn_bwd * k,
            bytes: self.bytes * k,
            kernels: self.kernels * k,
        }
    }

    pub fn plus(self, o: Work) -> Work {
        Work {
            gemm: self.gemm + o.gemm,
            attn_fwd: self.attn_fwd + o.attn_fwd,
            attn_bwd: self.attn_bwd + o.attn_bwd,
            bytes: self.bytes + o.bytes,
            kernels: self.kernels + o.kernels,
        }
    }
}

/// Rows of queries (forward) or keys (backward) one FlashAttention thread block takes:
/// FlashAttention-2 (Dao 2023) §3.3 tunes block sizes of 64 or 128 by head dimension, 128 at
/// the head dimensions of the calibration runs; FlashAttention-3 uses 128-row blocks too.
const FLASH_BLOCK_ROWS: f64 = 128.0;

/// Seconds each kernel adds to its work when kernels are queued back to back on one stream:
/// NVIDIA's "Getting Started with CUDA Graphs" (A. Gray, NVIDIA Technical Blog, 2019) times a
/// 2.9 µs kernel at 3.8 µs per launch in a stream without host synchronisation (V100, CUDA 10.1),
/// so 0.9 µs per kernel; the one measurement of the gap we found, taken for every GPU.
pub const LAUNCH_GAP_S: f64 = 0.9e-6;

/// Kernels one pass of a layer's two blocks launches, counted from the operations (Megatron-LM's
/// fused kernels: LayerNorm or RMSNorm one kernel, bias with dropout and the residual add one,
/// gate and up projections one GEMM, the scaled masked softmax one; FP8 quantisation fused into
/// the kernel before it). Forward: attention block = norm, the projection GEMMs (MLA: query
/// down and up, key-value down and up, output; else QKV and output), rotary embedding (MLA, or
/// rotary positions), MLA's two
/// latent norms, the attention core (FlashAttention one kernel; standard attention two batched
/// GEMMs, the softmax and dropout), the residual add; dense MLP = norm, two GEMMs, activation,
/// residual add; MoE = norm, router GEMM, top-k, permute, two grouped expert GEMMs, activation,
/// unpermute, residual add, and the shared experts' two GEMMs and activation. The input gradient
/// launches one kernel per forward kernel (FlashAttention's backward three: preprocessing,
/// main, the query gradient's conversion; standard attention's core five); the weight gradient
/// one per GEMM.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct KernelCounts {
    pub attn_f: f64,
    pub attn_i: f64,
    pub attn_w: f64,
    pub mlp_f: f64,
    pub mlp_i: f64,
    pub mlp_w: f64,
}

pub(crate) fn kernel_counts(spec: &Spec, moe: Option<Moe>) -> KernelCounts {
    let t = &spec.training;
    let (proj_gemms, latent_norms) = if spec.model.mla.is_some() {
        (5.0, 2.0)
    } else {
        (2.0, 0.0)
    };
    let dropout = if t.dropout > 0.0 { 1.0 } else { 0.0 };
    let (core_f, core_b) = if t.attention.is_flash() {
        (1.0, 3.0)
    } else {
        (3.0 + dropout, 5.0 + dropout)
    };
    let selective = t.recomputes_attention_core();
    // norm, rotary (MLA always; else with rotary positions), residual add
    let rotary = if spec.model.mla.is_some() || spec.model.positions == Positions::Rotary {
        1.0
    } else {
        0.0
    };
    let attn_ew = 2.0 + rotary + latent_norms;
    let (mlp_gemms, mlp_ew) = match moe {
        Some(m) => {
            let shared = if m.shared_experts > 0 { 1.0 } else { 0.0 };
            // router + two grouped GEMMs (+ the shared experts' two); norm, top-k, permute,
            // activation, unpermute, residual add (+ the shared experts' activation)
            (3.0 + 2.0 * shared, 6.0 + shared)
        }
        None => (2.0, 3.0),
    };
    // parallel blocks: the MLP launches no norm and no residual add of its own
    let mlp_ew = if spec.model.parallel_blocks {
        mlp_ew - 2.0
    } else {
        mlp_ew
    };
    KernelCounts {
        attn_f: proj_gemms + attn_ew + core_f,
        attn_i: proj_gemms + attn_ew + core_b + if selective { core_f } else { 0.0 },
        attn_w: proj_gemms,
        mlp_f: mlp_gemms + mlp_ew,
        mlp_i: mlp_gemms + mlp_ew,
        mlp_w: mlp_gemms,
    }
}

/// A block's three passes.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Block {
    pub f: Work,
    pub i: Work,
    pub w: Work,
}

/// What one layer costs, per micro-batch on one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Layer {
    /// Attention block: norm, projections, attention core, residual.
    pub attn: Block,
    /// MLP block: dense MLP, or router + shared + routed experts.
    pub mlp: Block,
    /// True for an MoE layer (it dispatches and combines tokens over expert parallelism).
    pub moe: bool,
    /// Weights held by one GPU, not sharded over expert parallelism (attention, dense MLP, router,
    /// shared experts), after tp.
    pub dense_params: f64,
    /// Routed-expert weights held by one GPU (after ep and tp).
    pub expert_params: f64,
    /// Activation bytes kept from forward to backward without full recomputation (with it, the
    /// working set of the layer while its backward runs).
    pub activation_bytes: f64,
    /// Bytes of the layer's input, all that full recomputation keeps.
    pub input_bytes: f64,
    /// Model FLOPs of the layer (forward, input and weight gradients) on this GPU.
    pub model_flops: f64,
}

fn mlp_weights(mlp: Mlp, hidden: f64, ffn: f64) -> f64 {
    match mlp {
        Mlp::Plain | Mlp::SquaredRelu => 2.0 * hidden * ffn,
        Mlp::Gated => 3.0 * hidden * ffn,
    }
}

/// The GEMMs of an MLP of `ffn` over `m` tokens on one GPU, `count` alike (a grouped GEMM of
/// experts): the first (gate and up fused when gated) and the second.
fn mlp_gemms(mlp: Mlp, h: f64, ffn: f64, t: f64, m: f64, count: f64) -> [Gemm; 2] {
    let first = match mlp {
        Mlp::Gated => 2.0 * ffn / t,
        Mlp::Plain | Mlp::SquaredRelu => ffn / t,
    };
    [
        Gemm {
            m,
            n: first,
            k: h,
            count,
        },
        Gemm {
            m,
            n: h,
            k: ffn / t,
            count,
        },
    ]
}

/// The GEMMs of the MLP block's forward on one GPU: a dense MLP; or the router, the shared
/// experts and the routed experts as one grouped GEMM of the GPU's experts, each receiving an
/// equal share of the `k` copies of the tokens (expert parallelism balances them).
fn mlp_block_gemms(spec: &Spec, moe: Option<Moe>, m: f64) -> Vec<Gemm> {
    let md = &spec.model;
    let t = f64::from(spec.parallelism.tp);
    let h = md.hidden as f64;
    match moe {
        Some(moe) => {
            let e = moe.expert_ffn as f64;
            let local = (moe.routed_experts as f64 / f64::from(spec.parallelism.ep)).max(1.0);
            let rows = m * moe.experts_per_token as f64 / local;
            let mut g = vec![Gemm::linear(m, moe.routed_experts as f64 / t, h)];
            g.extend(mlp_gemms(md.mlp, h, e, t, rows, local));
            if moe.shared_experts > 0 {
                g.extend(mlp_gemms(
                    md.mlp,
                    h,
                    e * moe.shared_experts as f64,
                    t,
                    m,
                    1.0,
                ));
            }
            g
        }
        None => mlp_gemms(md.mlp, h, md.ffn as f64, t, m, 1.0).to_vec(),
    }
}

/// FP8 quantisation of one GEMM input element: read it in the activation format, write one byte
/// and one FP32 scale per 128 elements (DeepSeek-V3 §3.3.1).
fn quantise(spec: &Spec) -> f64 {
    if spec.training.gemm_dtype == Dtype::Fp8 {
        spec.training.activation_dtype.bytes() + 1.0 + 4.0 / 128.0
    } else {
        0.0
    }
}

/// Element-wise bytes per token of one forward pass of a layer's two blocks on one GPU, as
/// (attention block, MLP block); `sp` divides what runs on the sequence-parallel shard.
fn elementwise(spec: &Spec, moe: Option<Moe>, shape: &AttnShape) -> (f64, f64) {
    let m = &spec.model;
    let t = &spec.training;
    let tp = f64::from(spec.parallelism.tp);
    let sp = if spec.parallelism.sequence_parallel {
        tp
    } else {
        1.0
    };
    let a = t.activation_dtype.bytes();
    let h = m.hidden as f64;
    let q = quantise(spec);
    // norm (read, write), residual add (two reads, a write), dropout (read, write, a mask byte)
    let dropout = if t.dropout > 0.0 {
        2.0 * h * a + h
    } else {
        0.0
    };
    let around = (2.0 * h * a + 3.0 * h * a + dropout) / sp;
    // parallel blocks: the MLP reads the attention's norm output, and one add of three reads
    // (the input, both outputs) writes the residual: the MLP's norm and add become one more read
    let mlp_around = if m.parallel_blocks {
        (h * a + dropout) / sp
    } else {
        around
    };
    // rotary embedding of queries and keys (read, write); MLA's latent norms
    let mut attn = around + (2.0 * shape.rope * a + 2.0 * shape.latents * a) / tp;
    if t.attention == Attention::Standard {
        // the score matrix: written by QKᵀ, read and written by the softmax, read and written by
        // dropout with its mask, read by the weighted sum
        let s = t.sequence_length as f64;
        let x = a;
        let drop = if t.dropout > 0.0 { 2.0 * x + 1.0 } else { 0.0 };
        attn += m.heads as f64 / tp * s * (4.0 * x + drop);
    }
    attn += q * shape.gemm_inputs / tp;
    let act = |ffn: f64| match m.mlp {
        Mlp::Gated => 3.0 * ffn * a,
        Mlp::Plain | Mlp::SquaredRelu => 2.0 * ffn * a,
    };
    let mlp = match moe {
        Some(moe) => {
            let e = moe.expert_ffn as f64;
            let k = moe.experts_per_token as f64;
            let copies = k + moe.shared_experts as f64;
            let dispatch = moe.dispatch_dtype.bytes();
            // permute into the dispatch layout (read, write), unpermute and weigh the combined
            // copies (read k, write one)
            let permute = 2.0 * k * h * dispatch + k * h * a + h * a;
            mlp_around + (permute + copies * act(e) + q * (h + copies * e)) / tp
        }
        None => {
            let f = m.ffn as f64;
            mlp_around + (act(f) + q * (h + f)) / tp
        }
    };
    (attn, mlp)
}

/// The cost of layer `index` (0-based; `model.layers` and above are multi-token-prediction
/// layers, shaped like the last) for one micro-batch on one GPU.
pub(crate) fn layer(spec: &Spec, index: u64) -> Layer {
    let m = &spec.model;
    let t = &spec.training;
    let tp = f64::from(spec.parallelism.tp);
    let h = m.hidden as f64;
    let s = t.sequence_length as f64;
    let tokens = t.tokens_per_microbatch();
    let grad = t.grad_dtype.bytes();

    let shape = attention(spec);
    // causal core FLOPs (what FlashAttention executes forward, and the model-FLOPs convention)
    let causal = tokens * s * shape.core;
    // the attention kernel's grid against the SMs: FlashAttention's blocks of 128 query (or
    // key) rows per head and sequence; standard attention's batched score GEMMs (s × s over
    // the head dimension, one per head and sequence)
    let roof = Roof::of(spec);
    let heads_here = (m.heads as f64 / tp).max(1.0);
    let sequences = t.micro_batch_size as f64;
    let grid = if t.attention.is_flash() {
        roof.waves((s / FLASH_BLOCK_ROWS).ceil() * heads_here * sequences)
    } else {
        roof.quantization(&Gemm {
            m: s,
            n: s,
            k: shape.core / m.heads.max(1) as f64 / 2.0,
            count: heads_here * sequences,
        })
    };
    let (core_f, core_b) = if t.attention.is_flash() {
        (causal / grid, 2.5 * causal / grid)
    } else {
        (2.0 * causal / grid, 4.0 * causal / grid)
    };
    let proj = 2.0 * shape.weights * tokens;
    let up = if t.recompute_mla_up_projection {
        2.0 * shape.up * tokens
    } else {
        0.0
    };
    let selective = t.recomputes_attention_core();

    let moe = m
        .moe
        .filter(|moe| index.min(m.layers.saturating_sub(1)) >= moe.dense_layers);
    let (active_mlp, dense_mlp, expert_weights) = match moe {
        Some(moe) => {
            let e = mlp_weights(m.mlp, h, moe.expert_ffn as f64);
            let router = h * moe.routed_experts as f64;
            let shared = moe.shared_experts as f64 * e;
            let k = moe.experts_per_token as f64;
            let active = router + shared + k * e;
            let expert_total = moe.routed_experts as f64 * e / f64::from(spec.parallelism.ep);
            (active, router + shared, expert_total)
        }
        None => {
            let w = mlp_weights(m.mlp, h, m.ffn as f64);
            (w, w, 0.0)
        }
    };
    let (ew_attn, ew_mlp) = elementwise(spec, moe, &shape);
    let k = kernel_counts(spec, moe);
    let [af, ai, aw] = roof.factors(&attention_gemms(spec, tokens));
    let [mf, mi, mw] = roof.factors(&mlp_block_gemms(spec, moe, tokens));
    let [upf, _, _] = roof.factors(&mla_up_gemms(spec, tokens));
    let dense_params = (shape.weights + dense_mlp) / tp;
    let expert_params = expert_weights / tp;
    // the weight gradients accumulated into the gradient buffer (read, write) per micro-batch
    let accumulate = |params: f64| 2.0 * params * grad;
    let attn = Block {
        f: Work {
            gemm: proj / tp * af,
            attn_fwd: core_f / tp,
            attn_bwd: 0.0,
            bytes: ew_attn * tokens,
            kernels: k.attn_f,
        },
        i: Work {
            gemm: proj / tp * ai + up / tp * upf,
            attn_fwd: if selective { core_f / tp } else { 0.0 },
            attn_bwd: core_b / tp,
            bytes: 2.0 * ew_attn * tokens,
            kernels: k.attn_i,
        },
        w: Work {
            gemm: proj / tp * aw,
            bytes: accumulate(shape.weights / tp),
            kernels: k.attn_w,
            ..Work::default()
        },
    };
    let mlp_flops = 2.0 * active_mlp * tokens / tp;
    let mlp = Block {
        f: Work {
            gemm: mlp_flops * mf,
            bytes: ew_mlp * tokens,
            kernels: k.mlp_f,
            ..Work::default()
        },
        i: Work {
            gemm: mlp_flops * mi,
            bytes: 2.0 * ew_mlp * tokens,
            kernels: k.mlp_i,
            ..Work::default()
        },
        w: Work {
            gemm: mlp_flops * mw,
            // every weight of the GPU's experts gets a gradient from its share of the tokens
            bytes: accumulate(dense_mlp / tp + expert_params),
            kernels: k.mlp_w,
            ..Work::default()
        },
    };
    let (kept, input) = activation::layer_bytes(spec, moe);
    Layer {
        attn,
        mlp,
        moe: moe.is_some(),
        dense_params,
        expert_params,
        activation_bytes: kept * tokens,
        input_bytes: input * tokens,
        model_flops: (3.0 * proj + 3.0 * causal) / tp + 3.0 * mlp_flops,
    }
}

/// The output head on one GPU for one micro-batch: its forward work (the loss's element-wise
/// bytes included; the backward's and the weight gradient's follow from it), its weights, and
/// the bytes of the FP32 logits kept for the loss.
pub(crate) struct Head {
    pub f: Work,
    pub i: Work,
    pub w: Work,
    pub params: f64,
    pub logits_bytes: f64,
}

pub(crate) fn head(spec: &Spec) -> Head {
    let m = &spec.model;
    let t = &spec.training;
    let tp = f64::from(spec.parallelism.tp);
    let tokens = t.tokens_per_microbatch();
    let w = (m.vocab * m.hidden) as f64;
    let gemm = 2.0 * w * tokens / tp;
    let vocab = m.vocab as f64 / tp;
    // final norm on the shard, the FP32 logits read and written by the softmax and the loss
    let sp = if spec.parallelism.sequence_parallel {
        tp
    } else {
        1.0
    };
    let bytes = (2.0 * m.hidden as f64 * t.activation_dtype.bytes() / sp + 2.0 * vocab * 4.0)
        * tokens
        + quantise(spec) * m.hidden as f64 * tokens;
    // final norm, the GEMM, the vocabulary-parallel cross-entropy (Megatron-LM: the logits'
    // maximum, the softmax's sum, the loss, each one kernel); the backward one kernel each
    let kernels = 5.0;
    let [hf, hi, hw] = Roof::of(spec).factors(&[Gemm::linear(tokens, vocab, m.hidden as f64)]);
    Head {
        f: Work {
            gemm: gemm * hf,
            bytes,
            kernels,
            ..Work::default()
        },
        i: Work {
            gemm: gemm * hi,
            bytes: 2.0 * bytes,
            kernels,
            ..Work::default()
        },
        w: Work {
            gemm: gemm * hw,
            bytes: 2.0 * w / tp * t.grad_dtype.bytes(),
            kernels: 1.0,
            ..Work::default()
        },
        params: w / tp,
        logits_bytes: tokens * vocab * 4.0,
    }
}

/// Embedding weights on one GPU (first part).
pub(crate) fn embedding_params(spec: &Spec) -> f64 {
    (spec.model.vocab * spec.model.hidden) as f64 / f64::from(spec.parallelism.tp)
}

/// Weights of the first part besides the word embedding, on one GPU: a learned position table
/// (`sequence_length × hidden`, Megatron-LM's `max_position_embeddings` at the run's length,
/// whole on every tensor rank) and the embedding norm's scale and bias (`2·hidden`).
pub(crate) fn first_part_extra_params(spec: &Spec) -> f64 {
    let m = &spec.model;
    let h = m.hidden as f64;
    let positions = if m.positions == Positions::Learned {
        spec.training.sequence_length as f64 * h
    } else {
        0.0
    };
    let norm = if m.embedding_norm { 2.0 * h } else { 0.0 };
    positions + norm
}

/// The embedding norm on one GPU for one micro-batch (first part, `model.embedding_norm`): its
/// forward reads and writes the activation (on the sequence-parallel shard), one kernel; the
/// input gradient twice that; the input kept for the backward, in bytes. `None` without it.
pub(crate) fn embedding_norm(spec: &Spec) -> Option<(Work, Work, f64)> {
    if !spec.model.embedding_norm {
        return None;
    }
    let t = &spec.training;
    let sp = if spec.parallelism.sequence_parallel {
        f64::from(spec.parallelism.tp)
    } else {
        1.0
    };
    let per_token = spec.model.hidden as f64 * t.activation_dtype.bytes() / sp;
    let tokens = t.tokens_per_microbatch();
    let f = Work {
        bytes: 2.0 * per_token * tokens,
        kernels: 1.0,
        ..Work::default()
    };
    let i = Work {
        bytes: 4.0 * per_token * tokens,
        kernels: 1.0,
        ..Work::default()
    };
    Some((f, i, per_token * tokens))
}

/// The layer range `[start, end)` of each part.
pub(crate) fn part_layers(spec: &Spec) -> Vec<(u64, u64)> {
    let mut start = 0;
    spec.parallelism
        .layers_per_stage
        .iter()
        .map(|&n| {
            let r = (start, start + n);
            start += n;
            r
        })
        .collect()
}

/// A model cut into more layers than this is costed in chunks of consecutive alike layers, at
/// most about this many in all ([`layer_chunks`]).
pub(crate) const MAX_LAYER_CHUNKS: u64 = 4096;

/// Consecutive layers costed together: up to [`MAX_LAYER_CHUNKS`] layers one by one (every
/// shipped spec: its figures are those of a loop over the layers, to the bit), beyond that
/// `⌈layers / MAX_LAYER_CHUNKS⌉` at a time, so that costing a model takes the same time at a
/// million layers as at four thousand.
pub(crate) fn chunk_size(spec: &Spec) -> u64 {
    spec.model.layers.div_ceil(MAX_LAYER_CHUNKS).max(1)
}

/// Layers `[start, end)` as chunks of alike layers, in order: one layer's cost and how many
/// layers the chunk holds (at most `chunk`). Layers differ only in being dense or MoE, so a
/// chunk never mixes the two.
pub(crate) fn layer_chunks(spec: &Spec, start: u64, end: u64, chunk: u64) -> Vec<(Layer, f64)> {
    let dense_end = spec
        .model
        .moe
        .map_or(end, |moe| moe.dense_layers.clamp(start, end));
    let mut out = Vec::new();
    for (a, b) in [(start, dense_end), (dense_end, end)] {
        if a >= b {
            continue;
        }
        let l = layer(spec, a);
        let mut at = a;
        while at < b {
            let n = chunk.max(1).min(b - at);
            out.push((l, n as f64));
            at += n;
        }
    }
    out
}

/// How many layers, or chunks of them, a cost table of `spec` costs one by one (for the searches'
/// estimates of their own work): at most about [`MAX_LAYER_CHUNKS`] whatever the model's depth.
pub fn costed_layers(spec: &Spec) -> u64 {
    let m = &spec.model;
    let dense = m.moe.map_or(0, |moe| moe.dense_layers.min(m.layers));
    let chunk = chunk_size(spec);
    dense.div_ceil(chunk) + (m.layers - dense).div_ceil(chunk) + m.mtp_depth
}

/// Model FLOPs of one token through the whole model, forward and backward: every layer's and the
/// head's F + I + W, causal attention, no recomputation, multi-token prediction left out (as
/// DeepSeek counts it).
pub fn flops_per_token(spec: &Spec) -> f64 {
    let tp = f64::from(spec.parallelism.tp);
    let mut per_mb = 0.0;
    for (l, n) in layer_chunks(spec, 0, spec.model.layers, chunk_size(spec)) {
        per_mb += l.model_flops * n;
    }
    // the head's model FLOPs: 2·vocab·hidden per token and pass, whatever its GEMMs' shapes
    let t = &spec.training;
    per_mb +=
        3.0 * 2.0 * (spec.model.vocab * spec.model.hidden) as f64 * t.tokens_per_microbatch() / tp;
    per_mb * tp / spec.training.tokens_per_microbatch()
}

/// Total parameters of one model copy (for reports and tests), multi-token prediction included.
pub fn total_parameters(spec: &Spec) -> f64 {
    let tp = f64::from(spec.parallelism.tp);
    let ep = f64::from(spec.parallelism.ep);
    let m = &spec.model;
    let mut n = 0.0;
    for (l, k) in layer_chunks(spec, 0, m.layers, chunk_size(spec)) {
        n += (l.dense_params * tp + l.expert_params * tp * ep) * k;
    }
    for i in m.layers..m.layers + m.mtp_depth {
        let l = layer(spec, i);
        n += l.dense_params * tp + l.expert_params * tp * ep;
    }
    let h = m.hidden as f64;
    n += m.mtp_depth as f64 * 2.0 * h * h;
    // tied embeddings: the head is the embedding, counted once
    let head = if m.tied_embeddings {
        0.0
    } else {
        head(spec).params * tp
    };
    n + embedding_params(spec) * tp + first_part_extra_params(spec) + head
}

/// Parameters one token activates (forward), embedding lookup and multi-token prediction excluded.
pub fn active_parameters(spec: &Spec) -> f64 {
    let m = &spec.model;
    let h = m.hidden as f64;
    let attn = attention(spec).weights;
    let mut n = 0.0;
    for (l, k) in layer_chunks(spec, 0, m.layers, chunk_size(spec)) {
        let mlp = match m.moe.filter(|_| l.moe) {
            Some(moe) => {
                let e = mlp_weights(m.mlp, h, moe.expert_ffn as f64);
                h * moe.routed_experts as f64
                    + (moe.shared_experts + moe.experts_per_token) as f64 * e
            }
            None => mlp_weights(m.mlp, h, m.ffn as f64),
        };
        n += attn * k;
        n += mlp * k;
    }
    n + (m.vocab * m.hidden) as f64
}

/// The projection of a multi-token-prediction module (two normalised hidden states concatenated,
/// `2h → h`, DeepSeek-V3 §2.2) on one GPU: its weights.
pub(crate) fn mtp_projection_params(spec: &Spec) -> f64 {
    let h = spec.model.hidden as f64;
    2.0 * h * h / f64::from(spec.parallelism.tp)
}
