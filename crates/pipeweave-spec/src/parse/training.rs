//! `[training]`: the run's sequence, batch and number formats, the kernels it uses, its ZeRO stage
//! and communication settings, the memory it keeps free, and what it recomputes.

use super::Cx;
use super::table::{Bound, TOKENS, Table};
use crate::spec::{Attention, Dtype, Fp8Kernel, Framework, Recompute, Training, Zero2Pipeline};
use pipeweave_diagnostics::{Diagnostic, visible};

/// The largest share of memory a spec may keep free.
const MAX_HEADROOM: f64 = 0.9;

/// The attention kernel as written, `None` when left to the GPU (the best it runs).
pub(super) type AttentionChoice = Option<Attention>;

pub(super) fn read_training(
    cx: &mut Cx,
    mut t: Table<'_, '_>,
) -> Option<(Training, AttentionChoice)> {
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
    let master = read_master(cx, &mut t);
    let opt = t.dtype(cx, "optimizer_dtype", Dtype::Fp32);
    let act = t.dtype(cx, "activation_dtype", Dtype::Bf16);
    let gemm = opt_dtype(cx, &mut t, "gemm_dtype");
    let fp8_kernel = t.choice(
        cx,
        "fp8_gemm_kernel",
        Fp8Kernel::Deepgemm,
        &[
            ("deepgemm", Fp8Kernel::Deepgemm),
            ("cutlass", Fp8Kernel::Cutlass),
        ],
    );
    let attention = match t.opt_string(cx, "attention") {
        Ok(None) => Some(None),
        Ok(Some(_)) => t
            .choice(
                cx,
                "attention",
                Attention::Standard,
                &[
                    ("flash3", Attention::Flash3),
                    ("flash2", Attention::Flash2),
                    ("standard", Attention::Standard),
                ],
            )
            .map(Some),
        Err(()) => None,
    };
    let dropout = t.opt_num(cx, "dropout", Bound::Within(0.0, 0.9));
    let zero = read_zero(cx, &mut t);
    let framework = t.choice(
        cx,
        "framework",
        Framework::Megatron,
        &[
            ("megatron", Framework::Megatron),
            ("deepspeed", Framework::Deepspeed),
            ("torchtitan", Framework::Torchtitan),
            ("pytorch", Framework::Pytorch),
            ("custom", Framework::Custom),
        ],
    );
    let fw = framework.unwrap_or(Framework::Megatron);
    let deepspeed = fw == Framework::Deepspeed;
    let zero2 = t.choice(
        cx,
        "zero2_with_pipeline",
        if deepspeed {
            Zero2Pipeline::Refuse
        } else {
            Zero2Pipeline::Accumulate
        },
        &[
            ("accumulate", Zero2Pipeline::Accumulate),
            ("refuse", Zero2Pipeline::Refuse),
        ],
    );
    let shared = t.opt_bool(cx, "optimizer_shared_across_copies", true);
    let reduce = opt_dtype(cx, &mut t, "grad_reduce_dtype");
    let overlap_grad = t.opt_bool(cx, "overlap_grad_reduce", !deepspeed);
    let overlap_param = t.opt_bool(cx, "overlap_param_gather", true);
    let bucket = t.opt_num(cx, "grad_bucket_params", Bound::Within(1.0, 1e15));
    let tp_overlap = t.opt_bool(cx, "tp_comm_overlap", false);
    let p2p_blocking = t.opt_bool(cx, "p2p_blocking", deepspeed);
    if fw == Framework::Custom {
        for key in ["p2p_blocking", "overlap_grad_reduce"] {
            if !cx.spans.contains_key(&format!("training.{key}")) {
                let span = cx.spans.get("training.framework").cloned().unwrap_or(0..0);
                cx.error(
                    &span,
                    format!("`training.framework = \"custom\"` needs `training.{key}`"),
                    "a custom framework spells out its behaviour",
                );
            }
        }
    }
    let comm_sms = t.opt_num(cx, "comm_sms", Bound::Within(0.0, 100_000.0));
    let headroom = t.opt_num(cx, "memory_headroom", Bound::Within(0.0, MAX_HEADROOM));
    let recompute = read_recompute(cx, &mut t);
    let options = read_recompute_options(cx, &mut t);
    let norms = t.opt_bool(cx, "recompute_norms", false);
    let mla_up = t.opt_bool(cx, "recompute_mla_up_projection", false);
    let moe_act = t.opt_bool(cx, "recompute_moe_activation", false);
    let fp8_cache = t.opt_bool(cx, "fp8_activation_cache", false);
    t.finish(cx);
    let param = param?;
    let grad = grad?;
    let training = Training {
        sequence_length: seq?,
        micro_batch_size: mbs?,
        microbatches: m?,
        total_tokens: total?,
        param_dtype: param,
        grad_dtype: grad,
        master_dtype: master?,
        optimizer_dtype: opt?,
        activation_dtype: act?,
        gemm_dtype: gemm?.unwrap_or(param),
        fp8_gemm_kernel: fp8_kernel?,
        // Settled against the GPU once the cluster is read.
        attention: attention?.unwrap_or(Attention::Standard),
        dropout: dropout.ok()?.unwrap_or(0.0),
        zero_stage: zero?,
        zero2_with_pipeline: zero2?,
        optimizer_shared_across_copies: shared?,
        grad_reduce_dtype: reduce?.unwrap_or(grad),
        overlap_grad_reduce: overlap_grad?,
        overlap_param_gather: overlap_param?,
        grad_bucket_params: bucket.ok()?,
        tp_comm_overlap: tp_overlap?,
        framework: framework?,
        p2p_blocking: p2p_blocking?,
        comm_sms: comm_sms.ok()?.unwrap_or(DEFAULT_COMM_SMS),
        memory_headroom: headroom.ok()?.unwrap_or(DEFAULT_HEADROOM),
        recompute: recompute.as_ref()?.0,
        recompute_per_part: recompute?.1,
        recompute_options: options?,
        recompute_norms: norms?,
        recompute_mla_up_projection: mla_up?,
        recompute_moe_activation: moe_act?,
        fp8_activation_cache: fp8_cache?,
    };
    Some((training, attention?))
}

/// SMs the communication kernels take by default: DeepSeek-V3's 20 (report §3.5.1: "we allocate
/// 20 out of the 132 SMs available in the H800 GPU" to communication).
pub const DEFAULT_COMM_SMS: f64 = 20.0;

/// Memory kept free by default, for the caching allocator's fragmentation and what the model
/// leaves out: an assumption (PyTorch's allocator rounds large blocks to 2 MiB and leaves
/// "reserved but unallocated" memory behind, Korthikanti et al. 2022 §7).
pub const DEFAULT_HEADROOM: f64 = 0.05;

fn opt_dtype(cx: &mut Cx, t: &mut Table<'_, '_>, key: &'static str) -> Option<Option<Dtype>> {
    match t.opt_string(cx, key) {
        Ok(None) => Some(None),
        Ok(Some(_)) => t.dtype(cx, key, Dtype::Bf16).map(Some),
        Err(()) => None,
    }
}

fn read_master(cx: &mut Cx, t: &mut Table<'_, '_>) -> Option<Option<Dtype>> {
    match t.opt_string(cx, "master_dtype") {
        Ok(None) => Some(Some(Dtype::Fp32)),
        Ok(Some((s, _))) if s == "none" => Some(None),
        Ok(Some((s, span))) => match Dtype::from_name(&s) {
            Some(d) => Some(Some(d)),
            None => {
                let d = Diagnostic::error(format!(
                    "`training.master_dtype` cannot be `{}`",
                    visible(&s)
                ))
                .with_span_label(cx.span(&span), "unknown value")
                .with_help("expected one of `fp32`, `bf16`, `fp16`, `fp8`, `none`");
                cx.diags.push(d);
                None
            }
        },
        Err(()) => None,
    }
}

fn read_zero(cx: &mut Cx, t: &mut Table<'_, '_>) -> Option<u32> {
    match t.opt_int(cx, "zero_stage", 0) {
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
    }
}

/// `training.recompute`: `"none"`, `"selective"` (Korthikanti et al. 2022: the attention core) or
/// `"full"` for every part, or a list of them, one per part (AdaPipe: recomputation per stage;
/// its length is checked against the parts with the rest of the spec). Returns the heaviest
/// setting and the list (empty for one setting).
fn read_recompute(cx: &mut Cx, t: &mut Table<'_, '_>) -> Option<(Recompute, Vec<Recompute>)> {
    if let Ok(Some(_)) = t.peek_array("recompute") {
        let list = read_recompute_list(cx, t, "recompute")?;
        let heaviest = list.iter().copied().max().unwrap_or(Recompute::None);
        let uniform = list.iter().all(|&r| r == heaviest);
        return Some((heaviest, if uniform { Vec::new() } else { list }));
    }
    let one = t.choice(
        cx,
        "recompute",
        Recompute::None,
        &[
            ("none", Recompute::None),
            ("selective", Recompute::Selective),
            ("full", Recompute::Full),
        ],
    )?;
    Some((one, Vec::new()))
}

/// `training.recompute_options`: the rungs a search may give each part (absent: every rung).
fn read_recompute_options(cx: &mut Cx, t: &mut Table<'_, '_>) -> Option<Vec<Recompute>> {
    let mut list = read_recompute_list(cx, t, "recompute_options")?;
    list.sort();
    list.dedup();
    Some(list)
}

/// An array of recomputation names at `key` (empty when absent).
fn read_recompute_list(
    cx: &mut Cx,
    t: &mut Table<'_, '_>,
    key: &'static str,
) -> Option<Vec<Recompute>> {
    let path = t.key_path(key);
    let (items, span) = match t.array(cx, key) {
        Ok(None) => return Some(Vec::new()),
        Ok(Some(x)) => x,
        Err(()) => return None,
    };
    if items.is_empty() {
        let d = Diagnostic::error(format!("`{path}` is an empty list"))
            .with_span_label(cx.span(&span), "no setting")
            .with_help("give `\"none\"`, `\"selective\"` or `\"full\"`, or a list of them");
        cx.diags.push(d);
        return None;
    }
    let mut out = Vec::with_capacity(items.len());
    let mut ok = true;
    for (i, item) in items.iter().enumerate() {
        let word = match item.get_ref() {
            toml::de::DeValue::String(s) => Recompute::from_name(s),
            _ => None,
        };
        match word {
            Some(r) => out.push(r),
            None => {
                ok = false;
                let d = Diagnostic::error(format!(
                    "`{path}[{i}]` must be `\"none\"`, `\"selective\"` or `\"full\"`"
                ))
                .with_span_label(cx.span(&item.span()), "unknown setting");
                cx.diags.push(d);
            }
        }
    }
    ok.then_some(out)
}
