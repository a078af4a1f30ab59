//! Activation bytes a layer keeps from its forward to its backward, per token on one GPU.
//!
//! Korthikanti et al. 2022 (§4.1, Table 2) count `s·b·h·(34 + 5·a·s/h)` bytes per layer in 16-bit
//! formats with 1-byte dropout masks: `34·s·b·h` for the tensors the backward reads and `5·a·s²·b`
//! for standard attention's softmax output (2), its dropout mask (1) and the dropout's output (2).
//! This generalises them to gated, MLA and expert layers, to any activation format, to dropout
//! or none, and to the spec's recomputation and FP8-caching options (DeepSeek-V3 §3.2.3,
//! §3.3.3): see specs/README.md. With tensor parallelism the tensors inside the parallel blocks
//! are split over tp; the layer inputs, norm outputs and dropout masks only with sequence
//! parallelism (Korthikanti's `10 + 24/t` without it, `34/t` with it). FlashAttention keeps no
//! score matrix; selective recomputation drops standard attention's (the s² term); full
//! recomputation keeps only each layer's input.

use pipeweave_spec::{Mlp, Moe, Recompute, Spec};

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
    /// A dropout mask: one byte per element with dropout, nothing without.
    mask: f64,
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
        mask: if t.dropout > 0.0 { 1.0 } else { 0.0 },
    }
}

/// Activation bytes per token an MLP of size `ffn` keeps, excluding its input (the caller counts
/// it: a norm output or a dispatched copy). `expert` selects the experts' rules: their SwiGLU
/// inputs may be cached in FP8 and their activation output recomputed.
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
    let input = if expert { b.linear_input } else { b.plain };
    match spec.model.mlp {
        // the first linear's output (GELU's or the squared ReLU's input), then its output
        Mlp::Plain | Mlp::SquaredRelu => ffn * input + act_out,
        // gate and up outputs (SwiGLU's inputs), then their product; SiLU's own output is
        // recomputed in the fused SwiGLU backward (§3.3.3 caches the experts' SwiGLU inputs in FP8)
        Mlp::Gated => 2.0 * ffn * input + act_out,
    }
}

/// (sequence-parallel, tensor-parallel) activation bytes per token of an attention block: the
/// layer input (the norm's input, kept as the residual), the norm output (the projections'
/// input) and the residual dropout's mask; then, inside the parallel block, MLA's compressed
/// latents, Q, K, V, the attention output and standard attention's score matrices.
fn attention_activation(spec: &Spec) -> (f64, f64) {
    let m = &spec.model;
    let t = &spec.training;
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
            let qkv = if t.recompute_mla_up_projection {
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
    let scores = if t.attention.is_flash() || t.recompute == Recompute::Selective {
        0.0
    } else {
        // the softmax output, and with dropout its mask and output (Korthikanti's 5·a·s²·b)
        let x = b.plain;
        let drop = if t.dropout > 0.0 { 1.0 + x } else { 0.0 };
        heads * t.sequence_length as f64 * (x + drop)
    };
    (
        h * b.plain + h * b.norm_out + h * b.mask,
        latents * b.linear_input + qkv * b.plain + out * b.attn_out + scores,
    )
}

/// (sequence-parallel, tensor-parallel) activation bytes per token of an MLP block (dense or
/// MoE): the block's input, the norm output (router and shared-expert input) and the residual
/// dropout's mask; then each routed copy's dispatched input and internals, and the shared
/// experts' internals (or the dense MLP's).
fn mlp_block_activation(spec: &Spec, moe: Option<Moe>) -> (f64, f64) {
    let m = &spec.model;
    let b = act_bytes(spec);
    let h = m.hidden as f64;
    // parallel blocks share the attention block's input and norm output: only the mask is the
    // MLP's own
    let around = if m.parallel_blocks {
        h * b.mask
    } else {
        h * b.plain + h * b.norm_out + h * b.mask
    };
    match moe {
        Some(moe) => {
            let e = moe.expert_ffn as f64;
            let k = moe.experts_per_token as f64;
            let internals = mlp_activation(spec, e, true);
            (
                around,
                k * (h * b.linear_input + internals) + moe.shared_experts as f64 * internals,
            )
        }
        None => (around, mlp_activation(spec, m.ffn as f64, false)),
    }
}

/// Bytes per token one layer keeps without full recomputation (with it, its working set while
/// its backward runs), and the bytes of its input (all that full recomputation keeps).
pub(crate) fn layer_bytes(spec: &Spec, moe: Option<Moe>) -> (f64, f64) {
    let tp = f64::from(spec.parallelism.tp);
    let sp = if spec.parallelism.sequence_parallel {
        tp
    } else {
        1.0
    };
    let (a_sp, a_tp) = attention_activation(spec);
    let (m_sp, m_tp) = mlp_block_activation(spec, moe);
    let kept = (a_sp + m_sp) / sp + (a_tp + m_tp) / tp;
    let input = spec.model.hidden as f64 * spec.training.activation_dtype.bytes() / sp;
    (kept, input)
}
