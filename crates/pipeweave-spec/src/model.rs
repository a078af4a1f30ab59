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
//!   sequence parallelism (everything divided by tp), generalised to gated, MLA and expert layers;
//!   see `layer_activation_elements`.

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
    /// Activation bytes kept from forward to backward.
    pub activation_bytes: f64,
}

fn mlp_weights(mlp: Mlp, hidden: f64, ffn: f64) -> f64 {
    match mlp {
        Mlp::Plain => 2.0 * hidden * ffn,
        Mlp::Gated => 3.0 * hidden * ffn,
    }
}

/// Activation elements per token an MLP keeps (input and intermediate outputs).
fn mlp_activation(mlp: Mlp, hidden: f64, ffn: f64) -> f64 {
    match mlp {
        // input, first linear's output, activation's output
        Mlp::Plain => hidden + 2.0 * ffn,
        // input, gate and up outputs, and their product (the down projection's input); the
        // activation's output is recomputed in the fused SwiGLU backward
        Mlp::Gated => hidden + 3.0 * ffn,
    }
}

/// (weights, per-token core FLOPs factor heads·(d_qk + d_v), activation elements per token)
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
            let q = if a.q_lora_rank > 0 {
                h * ql + ql * heads * qk
            } else {
                h * heads * qk
            };
            let kv = h * (kvl + rope) + kvl * heads * (nope + v);
            let o = heads * v * h;
            // norm input, projection input, latents, Q, K, V and the attention output
            let act = 2.0 * h + ql + kvl + rope + heads * qk * 2.0 + heads * v * 2.0;
            (q + kv + o, heads * (qk + v), act)
        }
        None => {
            let d = m.head_dim as f64;
            let kv = m.kv_heads as f64;
            let weights = h * heads * d * 2.0 + 2.0 * h * kv * d;
            // norm input, projection input, Q, K, V and the attention output
            let act = 2.0 * h + heads * d * 2.0 + 2.0 * kv * d;
            (weights, heads * 2.0 * d, act)
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
    let act_bytes = t.activation_dtype.bytes();

    let (attn_weights, core_factor, attn_act) = attention(spec);
    let core_f = tokens * s * core_factor;
    let attn_f = 2.0 * attn_weights * tokens + core_f;
    let attn_i = 2.0 * attn_weights * tokens + 2.0 * core_f;
    let attn_w = 2.0 * attn_weights * tokens;

    let moe = m.moe.filter(|moe| index >= moe.dense_layers);
    let (active_mlp, dense_mlp, expert_weights, mlp_act) = match moe {
        Some(moe) => {
            let e = mlp_weights(m.mlp, h, moe.expert_ffn as f64);
            let router = h * moe.routed_experts as f64;
            let shared = moe.shared_experts as f64 * e;
            let k = moe.experts_per_token as f64;
            let active = router + shared + k * e;
            let expert_total = moe.routed_experts as f64 * e / f64::from(p.ep);
            // norm input and router input, then each routed copy keeps its dispatched input and
            // its internals; shared experts keep their internals
            let per_expert = mlp_activation(m.mlp, h, moe.expert_ffn as f64);
            let act = 2.0 * h + k * per_expert + moe.shared_experts as f64 * (per_expert - h);
            (active, router + shared, expert_total, act)
        }
        None => {
            let w = mlp_weights(m.mlp, h, m.ffn as f64);
            (w, w, 0.0, h + mlp_activation(m.mlp, h, m.ffn as f64))
        }
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
        activation_bytes: (attn_act + mlp_act) * tokens / tp * act_bytes,
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
pub(crate) fn flops_per_token(spec: &Spec) -> f64 {
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
