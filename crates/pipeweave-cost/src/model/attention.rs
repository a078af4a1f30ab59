//! The attention block's shape: its weights, the per-token factor of its core, its rotary and
//! latent widths, and its projection GEMMs (Megatron-LM's fused QKV and output projections, or
//! MLA's five, DeepSeek-V2 §2.1), split over tensor parallelism.

use crate::gemm::Gemm;
use pipeweave_spec::{Mla, Positions, Spec};

/// The attention's shape: weights, per-token core factor heads·(d_qk + d_v), up-projection
/// weights that `recompute_mla_up_projection` runs again, rotary dimensions per token (queries and
/// keys), widths of the GEMM inputs (per token), and the latent widths MLA normalises.
pub(crate) struct AttnShape {
    pub weights: f64,
    pub core: f64,
    pub up: f64,
    pub rope: f64,
    pub gemm_inputs: f64,
    pub latents: f64,
}

/// MLA's dimensions as numbers: per head the query/key width with and without its rotary part
/// and the value width, and the two latent ranks (the query's 0 without query compression).
struct MlaDims {
    qk: f64,
    nope: f64,
    rope: f64,
    v: f64,
    q_lora: f64,
    kv_lora: f64,
    /// Queries are compressed (`q_lora_rank` > 0); else projected directly.
    q_latent: bool,
}

impl MlaDims {
    fn of(a: &Mla) -> MlaDims {
        MlaDims {
            qk: (a.qk_nope_head_dim + a.qk_rope_head_dim) as f64,
            nope: a.qk_nope_head_dim as f64,
            rope: a.qk_rope_head_dim as f64,
            v: a.v_head_dim as f64,
            q_lora: a.q_lora_rank as f64,
            kv_lora: a.kv_lora_rank as f64,
            q_latent: a.q_lora_rank > 0,
        }
    }
}

pub(crate) fn attention(spec: &Spec) -> AttnShape {
    let m = &spec.model;
    let h = m.hidden as f64;
    let heads = m.heads as f64;
    match &m.mla {
        Some(a) => {
            let d = MlaDims::of(a);
            let q_up = d.q_lora * heads * d.qk;
            let q = if d.q_latent {
                h * d.q_lora + q_up
            } else {
                h * heads * d.qk
            };
            let kv_up = d.kv_lora * heads * (d.nope + d.v);
            let kv = h * (d.kv_lora + d.rope) + kv_up;
            let o = heads * d.v * h;
            let up = if d.q_latent { q_up + kv_up } else { kv_up };
            AttnShape {
                weights: q + kv + o,
                core: heads * (d.qk + d.v),
                up,
                // the queries' rotary part per head and the one shared rotary key
                rope: heads * d.rope + d.rope,
                // the hidden state (query and key-value down-projections share it), the two
                // latents, the attention output
                gemm_inputs: h + d.q_lora + d.kv_lora + heads * d.v,
                latents: d.q_lora + d.kv_lora,
            }
        }
        None => {
            let d = m.head_dim as f64;
            let kv = m.kv_heads as f64;
            AttnShape {
                weights: h * heads * d * 2.0 + 2.0 * h * kv * d,
                core: heads * 2.0 * d,
                up: 0.0,
                // learned positions and ALiBi touch no query or key
                rope: if m.positions == Positions::Rotary {
                    (heads + kv) * d
                } else {
                    0.0
                },
                gemm_inputs: h + heads * d,
                latents: 0.0,
            }
        }
    }
}

/// The GEMMs of the attention block's forward over `m` tokens on one GPU (Megatron-LM's fused
/// QKV projection and the output projection; MLA's five projections), each `n` outputs by `k`
/// inputs, split over tensor parallelism as [`attention`]'s weights are.
pub(crate) fn attention_gemms(spec: &Spec, m: f64) -> Vec<Gemm> {
    let md = &spec.model;
    let t = f64::from(spec.parallelism.tp);
    let h = md.hidden as f64;
    let heads = md.heads as f64;
    match &md.mla {
        Some(a) => {
            let d = MlaDims::of(a);
            let mut g = Vec::with_capacity(5);
            if d.q_latent {
                g.push(Gemm::linear(m, d.q_lora / t, h));
            } else {
                g.push(Gemm::linear(m, heads * d.qk / t, h));
            }
            g.push(Gemm::linear(m, (d.kv_lora + d.rope) / t, h));
            g.extend(mla_up_gemms(spec, m));
            g.push(Gemm::linear(m, h, heads * d.v / t));
            g
        }
        None => {
            let d = md.head_dim as f64;
            let kv = md.kv_heads as f64;
            vec![
                Gemm::linear(m, (heads * d + 2.0 * kv * d) / t, h),
                Gemm::linear(m, h, heads * d / t),
            ]
        }
    }
}

/// MLA's up-projections over `m` tokens on one GPU (what `recompute_mla_up_projection` runs
/// again): the query's (with a query latent) and the key-value one.
pub(super) fn mla_up_gemms(spec: &Spec, m: f64) -> Vec<Gemm> {
    let Some(a) = &spec.model.mla else {
        return Vec::new();
    };
    let d = MlaDims::of(a);
    let t = f64::from(spec.parallelism.tp);
    let heads = spec.model.heads as f64;
    let mut g = Vec::with_capacity(2);
    if d.q_latent {
        g.push(Gemm::linear(m, heads * d.qk / t, d.q_lora));
    }
    g.push(Gemm::linear(m, heads * (d.nope + d.v) / t, d.kv_lora));
    g
}
