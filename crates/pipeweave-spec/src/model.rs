//! Per-layer and per-part arithmetic: parameters, FLOPs, activation bytes and expert all-to-all
//! volume, all for one micro-batch on one GPU (after tensor and expert parallelism).
//!
//! Formulas (T = tokens of a micro-batch = sequence length × micro-batch size; every FLOP count is
//! divided by tp, activations are kept for T / tp tokens):
//! - a linear layer with `p` weights costs `2·p·T` FLOPs forward, `2·p·T` for the input gradient
//!   (I) and `2·p·T` for the weight gradient (W) (Narayanan et al. 2021, §5.1; Qi et al. 2023,
//!   Table 1 splits the backward this way);
//! - causal attention scores and weighted sum cost `T·s·heads·(d_qk + d_v)` FLOPs forward (half of
//!   the non-causal `2·T·s·heads·(d_qk + d_v)` that Qi et al. count as `4·s²·b·h`, since
//!   FlashAttention skips masked blocks) and twice that in
//!   the input backward; they have no weights, so nothing in W;
//! - an MoE layer's FLOPs count the router, the shared experts and `experts_per_token` routed
//!   experts per token (expert parallelism balances tokens, so each GPU does that much work);
//! - the output head (last part) is a linear layer of `vocab·hidden` weights; the embedding (first
//!   part) is a lookup with no FLOPs; normalisation and biases are ignored (under 0.1% here).
//! - activation bytes follow Korthikanti et al. 2022 (§4.1) with FlashAttention (no s² term) and
//!   sequence parallelism (everything divided by tp), generalised to gated, MLA and expert layers,
//!   with the spec's recomputation and FP8-caching options (DeepSeek-V3 §3.2.3, §3.3.3); see
//!   `attention_activation`, `mlp_block_activation` and specs/README.md.

use crate::spec::{Mlp, Spec};

/// What one layer costs, per micro-batch on one GPU.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Layer {
    /// Attention block (projections and the attention core); for a dense layer this also holds
    /// nothing of the MLP.
    pub attn_f: f64,
    pub attn_i: f64,
    pub attn_w: f64,
    /// MLP block: dense MLP, or router + shared + routed experts.
    pub mlp_f: f64,
    pub mlp_i: f64,
    pub mlp_w: f64,
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
    /// FLOPs the backward spends re-running the MLA up-projections before the attention's input
    /// gradient (`recompute_mla_up_projection`; zero otherwise).
    pub attn_recompute: f64,
}

fn mlp_weights(mlp: Mlp, hidden: f64, ffn: f64) -> f64 {
    match mlp {
        Mlp::Plain => 2.0 * hidden * ffn,
        Mlp::Gated => 3.0 * hidden * ffn,
    }
}

/// Bytes per element of an activation cached in FP8: one byte and one FP32 scale per 128 elements
/// (DeepSeek-V3 §3.3.1, tile- and block-wise quantisation with 1×128 tiles).
const FP8_CACHED: f64 = 1.0 + 4.0 / 128.0;
/// Bytes per element of DeepSeek-V3's 12-bit E5M6 format, used for the attention output
/// (§3.3.3: the input of the linear layer after attention).
const E5M6: f64 = 1.5;

/// The bytes per element of the activations a layer keeps, by kind, under the spec's options.
struct ActBytes {
    /// Activations kept in `activation_dtype` whatever the options: layer inputs, Q/K/V, the
    /// inputs of a dense layer's activation function.
    plain: f64,
    /// Inputs of linear layers and of the experts' SwiGLU: FP8 with `fp8_activation_cache`.
    linear_input: f64,
    /// The attention output (input of the output projection): E5M6 with `fp8_activation_cache`.
    attn_out: f64,
    /// 0 when RMSNorm outputs are recomputed (`recompute_norms`), else `linear_input`.
    norm_out: f64,
}

fn act_bytes(spec: &Spec) -> ActBytes {
    let t = &spec.training;
    let plain = t.activation_dtype.bytes();
    let (linear_input, attn_out) = if t.fp8_activation_cache {
        (FP8_CACHED.min(plain), E5M6.min(plain))
    } else {
        (plain, plain)
    };
    ActBytes {
        plain,
        linear_input,
        attn_out,
        norm_out: if t.recompute_norms { 0.0 } else { linear_input },
    }
}

/// Activation bytes per token an MLP of size `ffn` keeps, excluding its input (the caller counts
/// it: a norm output or a dispatched copy). `expert` selects the experts' rules: their SwiGLU inputs
/// may be cached in FP8 and their activation output recomputed.
fn mlp_activation(spec: &Spec, ffn: f64, expert: bool) -> f64 {
    let b = act_bytes(spec);
    let recompute_act = expert && spec.training.recompute_moe_activation;
    // The activation function's output is the down projection's input (a linear input); it is
    // not kept when recomputed.
    let act_out = if recompute_act {
        0.0
    } else {
        ffn * b.linear_input
    };
    match spec.model.mlp {
        // the first linear's output (GELU's input), then GELU's output
        Mlp::Plain => ffn * if expert { b.linear_input } else { b.plain } + act_out,
        // gate and up outputs (SwiGLU's inputs), then their product; SiLU's own output is
        // recomputed in the fused SwiGLU backward (§3.3.3 caches the experts' SwiGLU inputs in FP8)
        Mlp::Gated => 2.0 * ffn * if expert { b.linear_input } else { b.plain } + act_out,
    }
}

/// Activation bytes per token of an attention block: the layer input (the norm's input, kept in
/// full precision as the residual), the norm output (the projections' input), for MLA the
/// compressed latents, then Q, K, V and the attention output.
fn attention_activation(spec: &Spec) -> f64 {
    let m = &spec.model;
    let b = act_bytes(spec);
    let h = m.hidden as f64;
    let heads = m.heads as f64;
    let (latents, qkv, out) = match &m.mla {
        Some(a) => {
            let qk = (a.qk_nope_head_dim + a.qk_rope_head_dim) as f64;
            let v = a.v_head_dim as f64;
            // the query and key-value latents (the up-projections' inputs) and the decoupled
            // rotary key
            let latents = (a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim) as f64;
            let qkv = if spec.training.recompute_mla_up_projection {
                0.0
            } else {
                heads * qk * 2.0 + heads * v
            };
            (latents, qkv, heads * v)
        }
        None => {
            let d = m.head_dim as f64;
            let kv = m.kv_heads as f64;
            (0.0, heads * d + 2.0 * kv * d, heads * d)
        }
    };
    h * b.plain + h * b.norm_out + latents * b.linear_input + qkv * b.plain + out * b.attn_out
}

/// Activation bytes per token of an MLP block (dense or MoE): the block's input (the residual),
/// the norm output (router and shared-expert input), then each routed copy keeps its dispatched
/// input and its internals, and the shared experts their internals.
fn mlp_block_activation(spec: &Spec, moe: Option<crate::spec::Moe>) -> f64 {
    let m = &spec.model;
    let b = act_bytes(spec);
    let h = m.hidden as f64;
    match moe {
        Some(moe) => {
            let e = moe.expert_ffn as f64;
            let k = moe.experts_per_token as f64;
            let internals = mlp_activation(spec, e, true);
            h * b.plain
                + h * b.norm_out
                + k * (h * b.linear_input + internals)
                + moe.shared_experts as f64 * internals
        }
        None => h * b.plain + h * b.norm_out + mlp_activation(spec, m.ffn as f64, false),
    }
}

/// (weights, per-token core FLOPs factor heads·(d_qk + d_v), up-projection weights that
/// `recompute_mla_up_projection` runs again)
fn attention(spec: &Spec) -> (f64, f64, f64) {
    let m = &spec.model;
    let h = m.hidden as f64;
    let heads = m.heads as f64;
    match &m.mla {
        Some(a) => {
            let qk = (a.qk_nope_head_dim + a.qk_rope_head_dim) as f64;
            let v = a.v_head_dim as f64;
            let ql = a.q_lora_rank as f64;
            let kvl = a.kv_lora_rank as f64;
            let rope = a.qk_rope_head_dim as f64;
            let nope = a.qk_nope_head_dim as f64;
            let q_up = ql * heads * qk;
            let q = if a.q_lora_rank > 0 {
                h * ql + q_up
            } else {
                h * heads * qk
            };
            let kv_up = kvl * heads * (nope + v);
            let kv = h * (kvl + rope) + kv_up;
            let o = heads * v * h;
            let up = if a.q_lora_rank > 0 {
                q_up + kv_up
            } else {
                kv_up
            };
            (q + kv + o, heads * (qk + v), up)
        }
        None => {
            let d = m.head_dim as f64;
            let kv = m.kv_heads as f64;
            let weights = h * heads * d * 2.0 + 2.0 * h * kv * d;
            (weights, heads * 2.0 * d, 0.0)
        }
    }
}

/// The cost of layer `index` (0-based) for one micro-batch on one GPU.
pub(crate) fn layer(spec: &Spec, index: u64) -> Layer {
    let m = &spec.model;
    let t = &spec.training;
    let p = &spec.parallelism;
    let tp = f64::from(p.tp);
    let h = m.hidden as f64;
    let s = t.sequence_length as f64;
    // FLOPs use every token of the micro-batch and are split over tp once; activations are kept
    // for the GPU's slice of the sequence (sequence parallelism).
    let tokens = t.tokens_per_microbatch();

    let (attn_weights, core_factor, up_weights) = attention(spec);
    let core_f = tokens * s * core_factor;
    let attn_f = 2.0 * attn_weights * tokens + core_f;
    let attn_i = 2.0 * attn_weights * tokens + 2.0 * core_f;
    let attn_w = 2.0 * attn_weights * tokens;

    let moe = m.moe.filter(|moe| index >= moe.dense_layers);
    let (active_mlp, dense_mlp, expert_weights) = match moe {
        Some(moe) => {
            let e = mlp_weights(m.mlp, h, moe.expert_ffn as f64);
            let router = h * moe.routed_experts as f64;
            let shared = moe.shared_experts as f64 * e;
            let k = moe.experts_per_token as f64;
            let active = router + shared + k * e;
            let expert_total = moe.routed_experts as f64 * e / f64::from(p.ep);
            (active, router + shared, expert_total)
        }
        None => {
            let w = mlp_weights(m.mlp, h, m.ffn as f64);
            (w, w, 0.0)
        }
    };
    let per_token = attention_activation(spec) + mlp_block_activation(spec, moe);
    let attn_recompute = if t.recompute_mla_up_projection {
        2.0 * up_weights * tokens
    } else {
        0.0
    };
    Layer {
        attn_f: attn_f / tp,
        attn_i: attn_i / tp,
        attn_w: attn_w / tp,
        mlp_f: 2.0 * active_mlp * tokens / tp,
        mlp_i: 2.0 * active_mlp * tokens / tp,
        mlp_w: 2.0 * active_mlp * tokens / tp,
        moe: moe.is_some(),
        dense_params: (attn_weights + dense_mlp) / tp,
        expert_params: expert_weights / tp,
        activation_bytes: per_token * tokens / tp,
        input_bytes: h * tokens / tp * t.activation_dtype.bytes(),
        attn_recompute: attn_recompute / tp,
    }
}

/// The output head (on the last part): FLOPs per micro-batch on one GPU, weights, and the bytes of
/// the FP32 logits kept for the loss.
pub(crate) fn head(spec: &Spec) -> (f64, f64, f64) {
    let m = &spec.model;
    let tp = f64::from(spec.parallelism.tp);
    let tokens = spec.training.tokens_per_microbatch();
    let w = (m.vocab * m.hidden) as f64;
    (
        2.0 * w * tokens / tp,
        w / tp,
        tokens * m.vocab as f64 * 4.0 / tp,
    )
}

/// Embedding weights on one GPU (first part).
pub(crate) fn embedding_params(spec: &Spec) -> f64 {
    (spec.model.vocab * spec.model.hidden) as f64 / f64::from(spec.parallelism.tp)
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

/// Model FLOPs of one token through the whole model, forward and backward (for the achieved
/// fraction of peak): the sum of every part's F + I + W per micro-batch, times tp, divided by
/// the micro-batch's tokens.
pub fn flops_per_token(spec: &Spec) -> f64 {
    let tp = f64::from(spec.parallelism.tp);
    let mut per_mb = 0.0;
    for i in 0..spec.model.layers {
        let l = layer(spec, i);
        per_mb += l.attn_f + l.attn_i + l.attn_w + l.mlp_f + l.mlp_i + l.mlp_w;
    }
    per_mb += 3.0 * head(spec).0;
    per_mb * tp / spec.training.tokens_per_microbatch()
}

/// Total parameters of one model copy (for reports and tests).
pub fn total_parameters(spec: &Spec) -> f64 {
    let tp = f64::from(spec.parallelism.tp);
    let ep = f64::from(spec.parallelism.ep);
    let mut n = 0.0;
    for i in 0..spec.model.layers {
        let l = layer(spec, i);
        n += l.dense_params * tp + l.expert_params * tp * ep;
    }
    n + embedding_params(spec) * tp + head(spec).1 * tp
}

/// Parameters one token activates (forward), embedding lookup excluded.
pub fn active_parameters(spec: &Spec) -> f64 {
    let m = &spec.model;
    let h = m.hidden as f64;
    let (attn, _, _) = attention(spec);
    let mut n = 0.0;
    for i in 0..m.layers {
        n += attn;
        n += match m.moe.filter(|moe| i >= moe.dense_layers) {
            Some(moe) => {
                let e = mlp_weights(m.mlp, h, moe.expert_ffn as f64);
                h * moe.routed_experts as f64
                    + (moe.shared_experts + moe.experts_per_token) as f64 * e
            }
            None => mlp_weights(m.mlp, h, m.ffn as f64),
        };
    }
    n + (m.vocab * m.hidden) as f64
}
