//! The sections of a spec: `[model]` (with `[model.mla]` and `[model.moe]`), `[parallelism]` and
//! `[measured]`, each read into its type, and the spec as a whole (`[cluster]` and `[training]`
//! have modules of their own).

use super::Cx;
use super::cluster::read_cluster;
use super::consistency::consistency;
use super::table::{MAX_DURATION, Table, type_name, within_limit};
use super::text::shown_text;
use super::training::read_training;
use crate::spec::{
    Attention, Cluster, Dtype, Measured, Mla, Mlp, Model, Moe, Parallelism, PlacementOrder,
    Positions, Spec,
};
use pipeweave_diagnostics::Diagnostic;
use std::ops::Range;
use toml::de::DeValue;

pub(super) fn read_spec(cx: &mut Cx, mut root: Table<'_, '_>) -> Option<Spec> {
    let name = root
        .string(cx, "name", "a short name for the spec")
        .filter(|n| {
            let span = cx.spans.get("name").cloned().unwrap_or(0..0);
            shown_text(cx, "a spec's name", n, &span)
        });
    let description = match root.opt_string(cx, "description") {
        Ok(Some((d, span))) => shown_text(cx, "a spec's description", &d, &span).then_some(d),
        Ok(None) => Some(String::new()),
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
    let efficiency_removed = removed_efficiency(cx, &mut root);
    let parts = parallelism.as_ref().map(Parallelism::parts);
    let measured = match root.sub(cx, "measured") {
        Ok(Some(t)) => read_measured(cx, t, parts),
        Ok(None) => Some(Measured::default()),
        Err(()) => None,
    };
    root.finish(cx);
    if efficiency_removed {
        return None;
    }

    let cluster = cluster?;
    let (mut training, attention) = training?;
    training.attention = settle_attention(cx, &cluster, attention)?;
    let spec = Spec {
        name: name?,
        description: description?,
        cluster,
        model: model?,
        training,
        parallelism: parallelism?,
        measured: measured?,
        spans: std::sync::Arc::new(std::mem::take(&mut cx.spans)),
        file: cx.file,
    };
    let errors = consistency(&spec);
    let ok = !errors.iter().any(Diagnostic::is_error);
    cx.diags.extend(errors);
    ok.then_some(spec)
}

/// `[efficiency]` was removed with its fitted `achievable_fraction`: true when the spec has it
/// (and the error is reported).
fn removed_efficiency(cx: &mut Cx, root: &mut Table<'_, '_>) -> bool {
    let Some(v) = root.retired("efficiency") else {
        return false;
    };
    let d = Diagnostic::error(
        "`[efficiency]` was removed: efficiencies come from the GPU table, not from a fraction fitted to a run"
            .to_string(),
    )
    .with_span_label(cx.span(&v.span()), "no longer a spec table")
    .with_help(
        "delete the table; to replace a documented efficiency, give it under `[cluster.override]` with its source, e.g. `gemm_efficiency_bf16 = { value = 0.65, source = \"my measurement\" }`",
    );
    cx.diags.push(d);
    true
}

/// The attention kernel: as written (it must run on the GPU: the table has its efficiency), or
/// the best the GPU runs (FlashAttention-3, then -2, then standard attention).
fn settle_attention(
    cx: &mut Cx,
    cluster: &Cluster,
    written: Option<Attention>,
) -> Option<Attention> {
    let runs = |a: Attention| {
        a.keys().is_none_or(|(f, b)| {
            cluster.hardware.get(f).is_some() && cluster.hardware.get(b).is_some()
        })
    };
    match written {
        Some(a) if runs(a) => Some(a),
        Some(a) => {
            let span = cx.spans.get("training.attention").cloned().unwrap_or(0..0);
            let d = Diagnostic::error(format!(
                "`{}` attention does not run on the {}",
                a.name(),
                cluster.gpu_name()
            ))
            .with_span_label(cx.span(&span), "not in the GPU table")
            .with_note("FlashAttention-2 needs an Ampere GPU or newer, FlashAttention-3 a Hopper (Dao-AILab/flash-attention README)")
            .with_help("use `standard`, or give the kernel's efficiencies under `[cluster.override]` with their source");
            cx.diags.push(d);
            None
        }
        None => [Attention::Flash3, Attention::Flash2]
            .into_iter()
            .find(|a| runs(*a))
            .or(Some(Attention::Standard)),
    }
}

/// The most multi-token-prediction modules a spec may give (DeepSeek-V3 has one).
const MAX_MTP_DEPTH: u64 = 64;

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
        &[
            ("gated", Mlp::Gated),
            ("plain", Mlp::Plain),
            ("squared_relu", Mlp::SquaredRelu),
        ],
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
    let mtp = t.opt_int(cx, "mtp_depth", 0);
    let tied = t.opt_bool(cx, "tied_embeddings", false);
    let positions = t.choice(
        cx,
        "positions",
        Positions::Rotary,
        &[
            ("rotary", Positions::Rotary),
            ("learned", Positions::Learned),
            ("alibi", Positions::Alibi),
        ],
    );
    let embedding_norm = t.opt_bool(cx, "embedding_norm", false);
    let parallel_blocks = t.opt_bool(cx, "parallel_blocks", false);
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
        mtp_depth: match mtp {
            Ok(Some(d)) if d > MAX_MTP_DEPTH => {
                let span = cx.spans.get("model.mtp_depth").cloned().unwrap_or(0..0);
                cx.error(
                    &span,
                    format!("`model.mtp_depth` must be at most {MAX_MTP_DEPTH}, found {d}"),
                    "too deep",
                );
                return None;
            }
            Ok(d) => d.unwrap_or(0),
            Err(()) => return None,
        },
        tied_embeddings: tied?,
        positions: positions?,
        embedding_norm: embedding_norm?,
        parallel_blocks: parallel_blocks?,
    })
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
    let sp = t.opt_bool(cx, "sequence_parallel", true);
    t.finish(cx);
    let (pp, v, explicit) = (pp?, v?, explicit?);
    let layers = model.map(|m| m.layers);
    let parts = u64::from(pp) * u64::from(v);
    // An explicit split may leave the first and last parts without a layer.
    let spare = if explicit.is_some() { 2 } else { 0 };
    if let Some(layers) = layers
        && parts > layers + spare
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
        sequence_parallel: sp?,
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
            let last = items.len().saturating_sub(1);
            for (i, item) in items.iter().enumerate() {
                // The first and last parts may hold no layer: the embedding alone and the output
                // head alone (Llama 3 §3.3.2 balances its pipeline so).
                let min = if i == 0 || i == last { 0 } else { 1 };
                match item.get_ref() {
                    DeValue::Integer(n) => match i64::from_str_radix(n.as_str(), n.radix()) {
                        Ok(n) if n >= min => out.push(n as u64),
                        _ => {
                            ok = false;
                            let (msg, label) = if min == 0 {
                                ("at least 0", "a negative count")
                            } else {
                                (
                                    "at least 1 (only the first and last part may hold no layer)",
                                    "a stage needs a layer",
                                )
                            };
                            cx.error(
                                &item.span(),
                                format!("`parallelism.layers_per_stage[{i}]` must be {msg}"),
                                label,
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
