//! Checks between values of different sections (GPU counts, head and expert splits, options that
//! need a table), once every value read well.

use crate::spec::Spec;
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
    checks.kv_heads();
    checks.tp_within_node();
    checks.experts();
    checks.measured();
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
}
