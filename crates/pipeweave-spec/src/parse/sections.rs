//! The sections of a spec: `[cluster]`, `[model]` (with `[model.mla]` and `[model.moe]`),
//! `[training]`, `[parallelism]`, `[efficiency]` and `[measured]`, each read into its type.

use super::Cx;
use super::consistency::consistency;
use super::table::{
    DURATION, FRACTION, MAX_DURATION, RATE, TOKENS, Table, type_name, within_limit,
};
use crate::spec::{
    Cluster, Dtype, Measured, Mla, Mlp, Model, Moe, Parallelism, PlacementOrder, Recompute, Spec,
    Training,
};
use pipeweave_diagnostics::Diagnostic;
use std::ops::Range;
use toml::de::DeValue;

pub(super) fn read_spec(cx: &mut Cx, mut root: Table<'_, '_>) -> Option<Spec> {
    let name = root.string(cx, "name", "a short name for the spec");
    let description = match root.opt_string(cx, "description") {
        Ok(d) => Some(d.map(|(s, _)| s).unwrap_or_default()),
        Err(()) => None,
    };
    let cluster = root
        .req_sub(cx, "cluster", "the GPUs and the network")
        .and_then(|t| read_cluster(cx, t));
    let model = root
        .req_sub(cx, "model", "the model's shape")
        .and_then(|t| read_model(cx, t));
    let training = root
        .req_sub(cx, "training", "sequence length, batch and dtypes")
        .and_then(|t| read_training(cx, t));
    let parallelism = root.req_sub(cx, "parallelism", "pp, tp, ep, dp");
    let parallelism = parallelism.and_then(|t| read_parallelism(cx, t, model.as_ref()));
    let achievable = match root.req_sub(cx, "efficiency", "the achievable fraction of peak") {
        Some(mut t) => {
            let f = t.num(
                cx,
                "achievable_fraction",
                FRACTION,
                "the fraction of peak compute an operation reaches, e.g. 0.4",
            );
            t.finish(cx);
            f
        }
        None => None,
    };
    let parts = parallelism.as_ref().map(Parallelism::parts);
    let measured = match root.sub(cx, "measured") {
        Ok(Some(t)) => read_measured(cx, t, parts),
        Ok(None) => Some(Measured::default()),
        Err(()) => None,
    };
    root.finish(cx);

    let spec = Spec {
        name: name?,
        description: description?,
        cluster: cluster?,
        model: model?,
        training: training?,
        parallelism: parallelism?,
        achievable_fraction: achievable?,
        measured: measured?,
        spans: std::mem::take(&mut cx.spans),
        file: cx.file,
    };
    let errors = consistency(&spec);
    let ok = errors.is_empty();
    cx.diags.extend(errors);
    ok.then_some(spec)
}

fn read_cluster(cx: &mut Cx, mut t: Table<'_, '_>) -> Option<Cluster> {
    let gpu = t.string(cx, "gpu", "the GPU's name");
    let peak = t.num(
        cx,
        "peak_tflops",
        RATE,
        "peak dense BF16 TFLOP/s of one GPU",
    );
    let mem = t.num(cx, "memory_gib", RATE, "memory of one GPU in GiB");
    let gpn = t.u32_int(cx, "gpus_per_node", 1, "GPUs in one node");
    let nodes = t.u32_int(cx, "nodes", 1, "number of nodes");
    let intra = t.num(
        cx,
        "intra_node_gbps",
        RATE,
        "GB/s per GPU inside a node, one direction",
    );
    let inter = t.num(
        cx,
        "inter_node_gbps",
        RATE,
        "GB/s per GPU between nodes, one direction",
    );
    let intra_lat = t.num(
        cx,
        "intra_node_latency_us",
        DURATION,
        "latency of a message inside a node, in microseconds",
    );
    let inter_lat = t.num(
        cx,
        "inter_node_latency_us",
        DURATION,
        "latency of a message between nodes, in microseconds",
    );
    t.finish(cx);
    Some(Cluster {
        gpu: gpu?,
        peak_tflops: peak?,
        memory_gib: mem?,
        gpus_per_node: gpn?,
        nodes: nodes?,
        intra_node_gbps: intra?,
        inter_node_gbps: inter?,
        intra_node_latency_us: intra_lat?,
        inter_node_latency_us: inter_lat?,
    })
}

fn read_model(cx: &mut Cx, mut t: Table<'_, '_>) -> Option<Model> {
    let layers = t
        .u32_int(cx, "layers", 1, "number of transformer layers")
        .map(u64::from);
    let hidden = t.int(cx, "hidden", 1, "hidden size");
    let heads = t.int(cx, "heads", 1, "attention heads");
    let kv_heads = t.int(cx, "kv_heads", 1, "key-value heads (= heads without GQA)");
    let head_dim = t.opt_int(cx, "head_dim", 1);
    let ffn = t.int(cx, "ffn", 1, "hidden size of a dense MLP");
    let vocab = t.int(cx, "vocab", 1, "vocabulary size");
    let mlp = t.choice(
        cx,
        "mlp",
        Mlp::Gated,
        &[("gated", Mlp::Gated), ("plain", Mlp::Plain)],
    );
    let mla = match t.sub(cx, "mla") {
        Ok(Some(mut m)) => {
            let q = m.opt_int(cx, "q_lora_rank", 1);
            let kv = m.int(cx, "kv_lora_rank", 1, "rank of the key-value compression");
            let nope = m.int(
                cx,
                "qk_nope_head_dim",
                1,
                "per-head query/key dimension without rotary embedding",
            );
            let rope = m.int(cx, "qk_rope_head_dim", 0, "per-head rotary dimension");
            let v = m.int(cx, "v_head_dim", 1, "per-head value dimension");
            m.finish(cx);
            match (q, kv, nope, rope, v) {
                (Ok(q), Some(kv), Some(nope), Some(rope), Some(v)) => Some(Some(Mla {
                    q_lora_rank: q.unwrap_or(0),
                    kv_lora_rank: kv,
                    qk_nope_head_dim: nope,
                    qk_rope_head_dim: rope,
                    v_head_dim: v,
                })),
                _ => None,
            }
        }
        Ok(None) => Some(None),
        Err(()) => None,
    };
    let moe = match t.sub(cx, "moe") {
        Ok(Some(mut m)) => {
            let routed = m.int(cx, "routed_experts", 1, "number of routed experts");
            let k = m.int(
                cx,
                "experts_per_token",
                1,
                "routed experts each token goes to",
            );
            let shared = m.int(cx, "shared_experts", 0, "experts every token goes to");
            let effn = m.int(cx, "expert_ffn", 1, "hidden size of one expert's MLP");
            let dense = m.int(cx, "dense_layers", 0, "dense layers before the MoE layers");
            let max_nodes = m.opt_int(cx, "max_nodes_per_token", 1);
            let dispatch = m.dtype(cx, "dispatch_dtype", Dtype::Bf16);
            m.finish(cx);
            match (routed, k, shared, effn, dense, max_nodes, dispatch) {
                (
                    Some(routed),
                    Some(k),
                    Some(shared),
                    Some(effn),
                    Some(dense),
                    Ok(max_nodes),
                    Some(dispatch),
                ) => Some(Some(Moe {
                    routed_experts: routed,
                    experts_per_token: k,
                    shared_experts: shared,
                    expert_ffn: effn,
                    dense_layers: dense,
                    max_nodes_per_token: max_nodes,
                    dispatch_dtype: dispatch,
                })),
                _ => None,
            }
        }
        Ok(None) => Some(None),
        Err(()) => None,
    };
    t.finish(cx);
    let (heads_v, hidden_v) = (heads?, hidden?);
    let head_dim = match head_dim {
        Ok(Some(d)) => d,
        Ok(None) => hidden_v / heads_v,
        Err(()) => return None,
    };
    Some(Model {
        layers: layers?,
        hidden: hidden_v,
        heads: heads_v,
        kv_heads: kv_heads?,
        head_dim,
        ffn: ffn?,
        vocab: vocab?,
        mlp: mlp?,
        mla: mla?,
        moe: moe?,
    })
}

fn read_training(cx: &mut Cx, mut t: Table<'_, '_>) -> Option<Training> {
    let seq = t.int(cx, "sequence_length", 1, "tokens per sequence");
    let mbs = t.int(cx, "micro_batch_size", 1, "sequences per micro-batch");
    let m = t.u32_int(cx, "microbatches", 1, "micro-batches per step");
    let total = t.num(
        cx,
        "total_tokens",
        TOKENS,
        "tokens over the whole run, e.g. 14.8e12",
    );
    let param = t.dtype(cx, "param_dtype", Dtype::Bf16);
    let grad = t.dtype(cx, "grad_dtype", Dtype::Fp32);
    let master = match t.opt_string(cx, "master_dtype") {
        Ok(None) => Some(Some(Dtype::Fp32)),
        Ok(Some((s, _))) if s == "none" => Some(None),
        Ok(Some((s, span))) => match Dtype::from_name(&s) {
            Some(d) => Some(Some(d)),
            None => {
                let d = Diagnostic::error(format!("`training.master_dtype` cannot be `{s}`"))
                    .with_span_label(cx.span(&span), "unknown value")
                    .with_help("expected one of `fp32`, `bf16`, `fp16`, `fp8`, `none`");
                cx.diags.push(d);
                None
            }
        },
        Err(()) => None,
    };
    let opt = t.dtype(cx, "optimizer_dtype", Dtype::Fp32);
    let act = t.dtype(cx, "activation_dtype", Dtype::Bf16);
    let zero = match t.opt_int(cx, "zero_stage", 0) {
        Ok(None) => Some(0),
        Ok(Some(z)) if z <= 2 => Some(z as u32),
        Ok(Some(z)) => {
            let span = cx.spans.get("training.zero_stage").cloned().unwrap_or(0..0);
            cx.error(
                &span,
                format!("`training.zero_stage` must be 0, 1 or 2, found {z}"),
                "unsupported stage",
            );
            None
        }
        Err(()) => None,
    };
    let recompute = read_recompute(cx, &mut t);
    let norms = t.opt_bool(cx, "recompute_norms", false);
    let mla_up = t.opt_bool(cx, "recompute_mla_up_projection", false);
    let moe_act = t.opt_bool(cx, "recompute_moe_activation", false);
    let fp8_cache = t.opt_bool(cx, "fp8_activation_cache", false);
    t.finish(cx);
    Some(Training {
        sequence_length: seq?,
        micro_batch_size: mbs?,
        microbatches: m?,
        total_tokens: total?,
        param_dtype: param?,
        grad_dtype: grad?,
        master_dtype: master?,
        optimizer_dtype: opt?,
        activation_dtype: act?,
        zero_stage: zero?,
        recompute: recompute?,
        recompute_norms: norms?,
        recompute_mla_up_projection: mla_up?,
        recompute_moe_activation: moe_act?,
        fp8_activation_cache: fp8_cache?,
    })
}

/// `training.recompute`: `"none"` or `"full"`. Korthikanti's selective recomputation (the
/// attention core) is refused with a reason: the cost model already assumes FlashAttention,
/// which keeps no score matrix and recomputes it in its backward, so it would change nothing.
fn read_recompute(cx: &mut Cx, t: &mut Table<'_, '_>) -> Option<Recompute> {
    let (s, span) = match t.opt_string(cx, "recompute") {
        Ok(None) => return Some(Recompute::None),
        Ok(Some(x)) => x,
        Err(()) => return None,
    };
    match s.as_str() {
        "none" => Some(Recompute::None),
        "full" => Some(Recompute::Full),
        "selective" => {
            let d = Diagnostic::error("`training.recompute` cannot be `selective`")
                .with_span_label(cx.span(&span), "already assumed")
                .with_note(
                    "selective recomputation (Korthikanti et al. 2022) recomputes the attention core; \
                     pipeweave already assumes FlashAttention, which keeps no attention scores and \
                     recomputes them in its backward",
                )
                .with_help("use `none` (the same memory) or `full`, and `recompute_norms`, `recompute_mla_up_projection`, `recompute_moe_activation` for finer choices");
            cx.diags.push(d);
            None
        }
        _ => {
            let d = Diagnostic::error(format!("`training.recompute` cannot be `{s}`"))
                .with_span_label(cx.span(&span), "unknown value")
                .with_help("expected one of `none`, `full`");
            cx.diags.push(d);
            None
        }
    }
}

fn read_parallelism(
    cx: &mut Cx,
    mut t: Table<'_, '_>,
    model: Option<&Model>,
) -> Option<Parallelism> {
    let pp = t.u32_int(cx, "pp", 1, "pipeline-parallel ranks");
    let pp = pp.and_then(|pp| {
        if pp <= pipeweave_plan::MAX_RANKS {
            return Some(pp);
        }
        let span = cx.spans.get("parallelism.pp").cloned().unwrap_or(0..0);
        cx.error(
            &span,
            format!(
                "`parallelism.pp` is {pp}; a plan has at most {} ranks",
                pipeweave_plan::MAX_RANKS
            ),
            "too many ranks",
        );
        None
    });
    let tp = t.u32_int(cx, "tp", 1, "tensor-parallel ranks");
    let ep = t.u32_int(cx, "ep", 1, "expert-parallel ranks (1 for a dense model)");
    let dp = t.u32_int(cx, "dp", 1, "data-parallel replicas");
    let v = match t.opt_int(cx, "stages_per_rank", 1) {
        Ok(v) => within_limit(cx, "parallelism.stages_per_rank", v.unwrap_or(1)),
        Err(()) => None,
    };
    let placement = t.choice(
        cx,
        "placement",
        PlacementOrder::PpOutermost,
        &[
            ("pp-outermost", PlacementOrder::PpOutermost),
            ("pp-innermost", PlacementOrder::PpInnermost),
        ],
    );
    let explicit = read_layers_per_stage(cx, &mut t);
    t.finish(cx);
    let (pp, v, explicit) = (pp?, v?, explicit?);
    let layers = model.map(|m| m.layers);
    let parts = u64::from(pp) * u64::from(v);
    if let Some(layers) = layers
        && parts > layers
    {
        let span = cx.spans.get("parallelism.pp").cloned().unwrap_or(0..0);
        cx.error(
            &span,
            format!(
                "{parts} parts (pp {pp} × stages_per_rank {v}) but the model has only {layers} layers: every part needs a layer"
            ),
            "the pipeline's ranks",
        );
        return None;
    }
    let parts = u32::try_from(parts).ok()?;
    let layers_per_stage = match (explicit, layers) {
        (explicit, Some(layers)) => split_layers(cx, explicit, layers, (pp, v, parts)),
        (_, None) => None,
    };
    Some(Parallelism {
        pp,
        tp: tp?,
        ep: ep?,
        dp: dp?,
        stages_per_rank: v,
        layers_per_stage: layers_per_stage?,
        placement: placement?,
    })
}

fn read_measured(cx: &mut Cx, mut t: Table<'_, '_>, parts: Option<u32>) -> Option<Measured> {
    let field = |t: &mut Table<'_, '_>,
                 cx: &mut Cx,
                 key: &'static str|
     -> Result<Option<Vec<f64>>, ()> {
        let Some((items, span)) = t.array(cx, key)? else {
            return Ok(None);
        };
        let path = t.key_path(key);
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            let x = match item.get_ref() {
                DeValue::Integer(n) => i64::from_str_radix(n.as_str(), n.radix())
                    .ok()
                    .map(|n| n as f64),
                DeValue::Float(f) => f.as_str().parse::<f64>().ok(),
                _ => None,
            };
            let max = MAX_DURATION;
            match x {
                Some(x) if x.is_finite() && (0.0..=max).contains(&x) => out.push(x / 1000.0),
                _ => {
                    ok = false;
                    cx.error(
                        &item.span(),
                        format!("`{path}[{i}]` must be a number of milliseconds, from 0 to {max}"),
                        "expected milliseconds",
                    );
                }
            }
        }
        if let Some(parts) = parts
            && out.len() != parts as usize
            && ok
        {
            ok = false;
            cx.error(
                &span,
                format!(
                    "`{path}` has {} entries but the model is cut into {parts} parts",
                    out.len()
                ),
                "one entry per part",
            );
        }
        if ok { Ok(Some(out)) } else { Err(()) }
    };
    let f = field(&mut t, cx, "f_ms");
    let i = field(&mut t, cx, "i_ms");
    let w = field(&mut t, cx, "w_ms");
    let pair = field(&mut t, cx, "pair_ms");
    let a2a = field(&mut t, cx, "all_to_all_ms");
    t.finish(cx);
    Some(Measured {
        f: f.ok()?,
        i: i.ok()?,
        w: w.ok()?,
        pair: pair.ok()?,
        all_to_all: a2a.ok()?,
    })
}

/// `parallelism.layers_per_stage` (its entries and span): `Some(None)` when absent, `None` when
/// it has a bad entry.
fn read_layers_per_stage(
    cx: &mut Cx,
    t: &mut Table<'_, '_>,
) -> Option<Option<(Vec<u64>, Range<usize>)>> {
    match t.array(cx, "layers_per_stage") {
        Ok(None) => Some(None),
        Ok(Some((items, span))) => {
            let mut out = Vec::with_capacity(items.len());
            let mut ok = true;
            for (i, item) in items.iter().enumerate() {
                match item.get_ref() {
                    DeValue::Integer(n) => match i64::from_str_radix(n.as_str(), n.radix()) {
                        Ok(n) if n >= 1 => out.push(n as u64),
                        _ => {
                            ok = false;
                            cx.error(
                                &item.span(),
                                format!("`parallelism.layers_per_stage[{i}]` must be at least 1"),
                                "a stage needs a layer",
                            );
                        }
                    },
                    other => {
                        ok = false;
                        cx.error(
                            &item.span(),
                            format!(
                                "`parallelism.layers_per_stage[{i}]` must be an integer, found {}",
                                type_name(other)
                            ),
                            "expected an integer",
                        );
                    }
                }
            }
            ok.then_some(Some((out, span)))
        }
        Err(()) => None,
    }
}

/// The layers of each of the `parts = pp × v` parts of the model: the explicit list, checked
/// against the parts and the model's layers, or an even split.
fn split_layers(
    cx: &mut Cx,
    explicit: Option<(Vec<u64>, Range<usize>)>,
    layers: u64,
    (pp, v, parts): (u32, u32, u32),
) -> Option<Vec<u64>> {
    match explicit {
        Some((list, span)) => {
            let sum: u64 = list.iter().sum();
            let mut ok = true;
            if list.len() != parts as usize {
                ok = false;
                cx.error(
                    &span,
                    format!(
                        "`parallelism.layers_per_stage` has {} entries but the model is cut into {parts} parts (pp {pp} × stages_per_rank {v})",
                        list.len()
                    ),
                    "one entry per part",
                );
            }
            if sum != layers {
                ok = false;
                cx.error(
                    &span,
                    format!("`parallelism.layers_per_stage` sums to {sum} but the model has {layers} layers"),
                    "must add up to `model.layers`",
                );
            }
            ok.then_some(list)
        }
        None if !layers.is_multiple_of(u64::from(parts)) => {
            let span = cx.spans.get("parallelism.pp").cloned().unwrap_or(0..0);
            let d = Diagnostic::error(format!(
                "{layers} layers do not split evenly into {parts} parts (pp {pp} × stages_per_rank {v})"
            ))
            .with_span_label(cx.span(&span), "the pipeline's ranks")
            .with_help("give `parallelism.layers_per_stage` explicitly, or change `pp`");
            cx.diags.push(d);
            None
        }
        None => Some(vec![layers / u64::from(parts); parts as usize]),
    }
}
