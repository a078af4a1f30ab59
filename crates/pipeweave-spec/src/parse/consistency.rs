//! Checks between values of different sections (GPU counts, head and expert splits, options that
//! need a table), once every value read well.

use crate::hardware::Key;
use crate::spec::{Attention, Dtype, Recompute, Spec};
use pipeweave_diagnostics::{Diagnostic, Label};

/// Checks between values of different tables, once every value read well.
pub(super) fn consistency(spec: &Spec) -> Vec<Diagnostic> {
    let mut checks = Checks {
        spec,
        out: Vec::new(),
    };
    checks.gpu_count();
    checks.heads_over_tp();
    checks.recompute_options();
    checks.recompute_per_part();
    checks.kv_heads();
    checks.tp_within_node();
    checks.experts();
    checks.measured();
    checks.formats_on_the_gpu();
    checks.zero2_with_pipeline();
    checks.comm_sms();
    checks.selective_with_flash();
    checks.out
}

struct Checks<'s> {
    spec: &'s Spec,
    out: Vec<Diagnostic>,
}

impl Checks<'_> {
    /// An error at the value of the key `path` (or without a place when the key was not written).
    fn err(&self, path: &str, label: &str, message: String) -> Diagnostic {
        let d = Diagnostic::error(message);
        match self.spec.span_of(path) {
            Some(span) => d.with_span_label(span, label.to_string()),
            None => d,
        }
    }

    fn push(&mut self, path: &str, label: &str, message: String) {
        let d = self.err(path, label, message);
        self.out.push(d);
    }

    /// Every GPU runs one (pipeline, tensor, data) rank.
    fn gpu_count(&mut self) {
        let (c, p) = (&self.spec.cluster, &self.spec.parallelism);
        let product = u64::from(p.pp) * u64::from(p.tp) * u64::from(p.dp);
        if product == c.gpus() {
            return;
        }
        let mut d = self
            .err(
                "parallelism.dp",
                "data-parallel replicas",
                format!(
                    "pp × tp × dp = {} × {} × {} = {product} but the cluster has {} GPUs ({} nodes × {} GPUs per node)",
                    p.pp,
                    p.tp,
                    p.dp,
                    c.gpus(),
                    c.nodes,
                    c.gpus_per_node
                ),
            )
            .with_help("every GPU runs exactly one (pipeline, tensor, data) rank");
        if let Some(nodes) = self.spec.span_of("cluster.nodes") {
            d.labels.push(Label {
                span: nodes,
                message: "nodes of the cluster".to_string(),
            });
        }
        self.out.push(d);
    }

    fn heads_over_tp(&mut self) {
        let (m, p) = (&self.spec.model, &self.spec.parallelism);
        if !m.heads.is_multiple_of(u64::from(p.tp)) {
            let message = format!("{} attention heads do not split over tp {}", m.heads, p.tp);
            self.push("parallelism.tp", "tensor-parallel ranks", message);
        }
    }

    /// A list of recomputations has one per part of the model.
    fn recompute_per_part(&mut self) {
        let (t, p) = (&self.spec.training, &self.spec.parallelism);
        let parts = p.layers_per_stage.len();
        if !t.recompute_per_part.is_empty() && t.recompute_per_part.len() != parts {
            let message = format!(
                "`training.recompute` lists {} settings but the model is cut into {parts} parts (pp {} × stages_per_rank {})",
                t.recompute_per_part.len(),
                p.pp,
                p.stages_per_rank
            );
            let d = self
                .err("training.recompute", "one setting per part", message)
                .with_help("give one setting for every part, or one word for all of them");
            self.out.push(d);
        }
    }

    /// Recomputation options that need a table of the model.
    fn recompute_options(&mut self) {
        let (m, t) = (&self.spec.model, &self.spec.training);
        if t.recompute_mla_up_projection && m.mla.is_none() {
            let d = self
                .err(
                    "training.recompute_mla_up_projection",
                    "needs multi-head latent attention",
                    "`training.recompute_mla_up_projection` needs `[model.mla]`".to_string(),
                )
                .with_help("remove the key, or describe the attention in `[model.mla]`");
            self.out.push(d);
        }
        if t.recompute_moe_activation && m.moe.is_none() {
            let d = self
                .err(
                    "training.recompute_moe_activation",
                    "needs experts",
                    "`training.recompute_moe_activation` needs `[model.moe]`".to_string(),
                )
                .with_help("remove the key, or describe the experts in `[model.moe]`");
            self.out.push(d);
        }
    }

    /// Grouped-query attention: heads over key-value heads, key-value heads over tp (not for
    /// multi-head latent attention, which has no key-value heads).
    fn kv_heads(&mut self) {
        let (m, p) = (&self.spec.model, &self.spec.parallelism);
        if m.mla.is_some() {
            return;
        }
        if !m.heads.is_multiple_of(m.kv_heads) {
            let message = format!(
                "{} heads are not a multiple of {} key-value heads",
                m.heads, m.kv_heads
            );
            self.push("model.kv_heads", "key-value heads", message);
        }
        if !m.kv_heads.is_multiple_of(u64::from(p.tp))
            && !u64::from(p.tp).is_multiple_of(m.kv_heads)
        {
            let message = format!(
                "{} key-value heads do not split over tp {}",
                m.kv_heads, p.tp
            );
            self.push("model.kv_heads", "key-value heads", message);
        }
    }

    fn tp_within_node(&mut self) {
        let (c, p) = (&self.spec.cluster, &self.spec.parallelism);
        if p.tp > c.gpus_per_node {
            let message = format!(
                "tp {} is larger than a node ({} GPUs): tensor parallelism needs the intra-node network",
                p.tp, c.gpus_per_node
            );
            self.push("parallelism.tp", "tensor-parallel ranks", message);
        }
    }

    /// Expert parallelism against the experts and the data-parallel ranks.
    fn experts(&mut self) {
        let (m, p) = (&self.spec.model, &self.spec.parallelism);
        let Some(moe) = &m.moe else {
            if p.ep > 1 {
                let message = format!("ep is {} but the model has no `[model.moe]` table", p.ep);
                self.push("parallelism.ep", "expert-parallel ranks", message);
            }
            return;
        };
        if moe.routed_experts % u64::from(p.ep) != 0 {
            let message = format!(
                "{} routed experts do not split over ep {}",
                moe.routed_experts, p.ep
            );
            self.push("parallelism.ep", "expert-parallel ranks", message);
        }
        if u64::from(p.dp) % u64::from(p.ep) != 0 {
            let message = format!(
                "ep {} does not divide dp {}: experts are sharded over data-parallel ranks",
                p.ep, p.dp
            );
            self.push("parallelism.ep", "expert-parallel ranks", message);
        }
        if moe.experts_per_token > moe.routed_experts {
            let message = format!(
                "each token goes to {} experts but there are only {} routed experts",
                moe.experts_per_token, moe.routed_experts
            );
            self.push("model.moe.experts_per_token", "experts per token", message);
        }
        if moe.dense_layers > m.layers {
            let message = format!(
                "{} dense layers but the model has only {} layers",
                moe.dense_layers, m.layers
            );
            self.push("model.moe.dense_layers", "dense layers", message);
        }
    }

    /// Measured backward times come as I and W together.
    fn measured(&mut self) {
        let measured = &self.spec.measured;
        if measured.i.is_some() && measured.w.is_none() {
            let message = "`measured.i_ms` needs `measured.w_ms`: a full backward is I + W";
            self.push("measured.i_ms", "input backward", message.to_string());
        }
        if measured.w.is_some() && measured.i.is_none() {
            let message = "`measured.w_ms` needs `measured.i_ms`: a full backward is I + W";
            self.push("measured.w_ms", "weight backward", message.to_string());
        }
    }

    /// The path of the key that set a training format, or of `cluster.gpu` when it was left out.
    fn format_key(&self, key: &'static str) -> &'static str {
        if self.spec.span_of(key).is_some() {
            key
        } else if key == "training.gemm_dtype"
            && self.spec.span_of("training.param_dtype").is_some()
        {
            "training.param_dtype"
        } else {
            "cluster.gpu"
        }
    }

    /// The GPU computes in the run's formats: a peak and a GEMM efficiency for the linear layers'
    /// format, a 16-bit peak for FlashAttention, a GEMM efficiency for standard attention's
    /// batched GEMMs.
    fn formats_on_the_gpu(&mut self) {
        let (t, hw) = (&self.spec.training, &self.spec.cluster.hardware);
        let gpu = self.spec.cluster.gpu_name().to_owned();
        let gemm = t.gemm_dtype;
        let gemm_eff = Key::gemm(gemm, t.fp8_gemm_kernel);
        let path = self.format_key("training.gemm_dtype");
        if hw.get(Key::peak(gemm)).is_none() {
            let d = self
                .err(path, "the linear layers' format", format!("the {gpu} has no {} throughput in the GPU table", gemm.name()))
                .with_help("choose a format the GPU computes in (`training.gemm_dtype`), or give `peak_tflops_...` under `[cluster.override]` with its source");
            self.out.push(d);
        } else if hw.get(gemm_eff).is_none() {
            let d = self
                .err(
                    path,
                    "the linear layers' format",
                    format!(
                        "the GPU table has no GEMM efficiency for {} on the {gpu}",
                        gemm.name()
                    ),
                )
                .with_help(format!(
                    "give `{}` under `[cluster.override]` with its source",
                    gemm_eff.name()
                ));
            self.out.push(d);
        }
        let act = t.activation_dtype;
        let path = self.format_key("training.activation_dtype");
        if t.attention.is_flash() && !matches!(act, Dtype::Bf16 | Dtype::Fp16) {
            let message = format!(
                "`{}` attention computes in BF16 or FP16, the activations are {}",
                t.attention.name(),
                act.name()
            );
            self.push(path, "activation format", message);
        } else if hw.get(Key::peak(act)).is_none() {
            let message = format!(
                "the {gpu} has no {} throughput in the GPU table for the attention",
                act.name()
            );
            self.push(path, "activation format", message);
        } else if t.attention == Attention::Standard
            && hw.get(Key::gemm(act, t.fp8_gemm_kernel)).is_none()
        {
            let d = self
                .err(path, "activation format", format!("standard attention runs batched {} GEMMs, and the GPU table has no GEMM efficiency for them on the {gpu}", act.name()))
                .with_help(format!("give `{}` under `[cluster.override]` with its source", Key::gemm(act, t.fp8_gemm_kernel).name()));
            self.out.push(d);
        }
    }

    /// DeepSpeed refuses ZeRO-2 with a pipeline; the spec may ask to do the same.
    fn zero2_with_pipeline(&mut self) {
        if self.spec.zero2_refused() {
            let d = self
                .err(
                    "training.zero_stage",
                    "ZeRO stage",
                    format!(
                        "pipeline parallelism (pp {}) and ZeRO-2 do not go together",
                        self.spec.parallelism.pp
                    ),
                )
                .with_note("DeepSpeed asserts \"ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism\" (deepspeed/runtime/pipe/engine.py): gradients accumulate over the micro-batches of a step")
                .with_help("use `zero_stage = 1`, or `zero2_with_pipeline = \"accumulate\"` to keep full gradients until the last micro-batch as Megatron-LM does");
            self.out.push(d);
        }
    }

    /// Communication takes fewer SMs than the GPU has.
    fn comm_sms(&mut self) {
        let sms = self.spec.cluster.figure(Key::Sms);
        let c = self.spec.training.comm_sms;
        if c >= sms {
            let message = format!(
                "`training.comm_sms` is {c} but the {} has {sms} SMs",
                self.spec.cluster.gpu_name()
            );
            self.push("training.comm_sms", "SMs for communication", message);
        }
    }

    /// Selective recomputation changes nothing with FlashAttention outside Megatron-Core (which
    /// recomputes the kernel's forward): said, not refused.
    fn selective_with_flash(&mut self) {
        let t = &self.spec.training;
        if t.recompute == Recompute::Selective && !t.recomputes_attention_core() {
            let mut d = Diagnostic::warning(format!(
                "`recompute = \"selective\"` changes nothing with `{}` attention under `{}`",
                t.attention.name(),
                t.framework.name()
            ))
            .with_note("selective recomputation (Korthikanti et al. 2022) drops the attention's score matrix and recomputes it in the backward; FlashAttention never keeps it and always recomputes it (under `framework = \"megatron\"` Megatron-Core checkpoints the core attention whatever its kernel and runs its forward again in the backward)");
            if let Some(span) = self.spec.span_of("training.recompute") {
                d = d.with_span_label(span, "a no-op here");
            }
            self.out.push(d);
        }
    }
}
