//! Reading a spec from TOML: every syntax error, unknown key, missing key, wrong type and
//! inconsistent value is collected as a diagnostic with the key path and a span.
//!
//! The document is parsed with `toml::de::DeTable`, which keeps the span of every key and value,
//! and walked by hand so that one run reports every problem (serde's derive stops at the first).

use crate::spec::{
    Cluster, Dtype, Measured, Mla, Mlp, Model, Moe, Parallelism, PlacementOrder, Recompute, Spec,
    Training,
};
use pipeweave_diagnostics::{Diagnostic, FileId, Span};
use std::collections::BTreeMap;
use std::ops::Range;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// Parses and checks a spec. Returns the spec when there are no errors, and every diagnostic found.
pub fn parse(source: &str, file: FileId) -> (Option<Spec>, Vec<Diagnostic>) {
    let mut cx = Cx {
        file,
        diags: Vec::new(),
        spans: BTreeMap::new(),
    };
    let (doc, errors) = DeTable::parse_recoverable(source);
    for e in &errors {
        let mut d = Diagnostic::error(plain_toml_message(e.message()));
        if let Some(r) = e.span() {
            d = d.with_span(Span::new(file, r));
        }
        cx.diags.push(d);
    }
    // A document with syntax errors is not checked further: its recovered tree would add
    // misleading missing-key errors.
    let spec = if errors.is_empty() {
        let span = doc.span();
        let root = Table::new(String::new(), doc.get_ref(), span);
        read_spec(&mut cx, root)
    } else {
        None
    };
    let mut diags = cx.diags;
    diags.sort_by_key(|d| {
        d.span
            .as_ref()
            .map_or((usize::MAX, 0), |s| (s.range.start, s.range.end))
    });
    let spec = if diags.iter().any(Diagnostic::is_error) {
        None
    } else {
        spec
    };
    (spec, diags)
}

/// toml's messages start with a capital letter and sometimes end with a newline or period.
fn plain_toml_message(m: &str) -> String {
    let m = m.trim().trim_end_matches('.');
    let mut chars = m.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => "invalid toml".to_string(),
    }
}

struct Cx {
    file: FileId,
    diags: Vec<Diagnostic>,
    spans: BTreeMap<String, Range<usize>>,
}

impl Cx {
    fn span(&self, r: &Range<usize>) -> Span {
        Span::new(self.file, r.clone())
    }

    fn error(&mut self, range: &Range<usize>, message: String, label: impl Into<String>) {
        let d = Diagnostic::error(message).with_span_label(self.span(range), label);
        self.diags.push(d);
    }
}

/// The items of an array and the array's span.
type SpannedItems<'t, 'i> = (&'t [Spanned<DeValue<'i>>], Range<usize>);

/// One table of the document, with the keys looked up so far (to find unknown ones at the end).
struct Table<'t, 'i> {
    path: String,
    table: &'t DeTable<'i>,
    span: Range<usize>,
    known: Vec<&'static str>,
}

impl<'t, 'i> Table<'t, 'i> {
    fn new(path: String, table: &'t DeTable<'i>, span: Range<usize>) -> Self {
        Table {
            path,
            table,
            span,
            known: Vec::new(),
        }
    }

    fn key_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn lookup(&mut self, cx: &mut Cx, key: &'static str) -> Option<&'t Spanned<DeValue<'i>>> {
        self.known.push(key);
        let v = self.table.get(key)?;
        cx.spans.insert(self.key_path(key), v.span());
        Some(v)
    }

    fn missing(&self, cx: &mut Cx, key: &str, what: &str) {
        let path = self.key_path(key);
        let (range, label) = if self.path.is_empty() {
            (0..0, "in this spec".to_string())
        } else {
            (self.span.clone(), format!("in `[{}]`", self.path))
        };
        let d = Diagnostic::error(format!("missing key `{path}`"))
            .with_span_label(cx.span(&range), label)
            .with_help(format!("add `{key} = ...` ({what})"));
        cx.diags.push(d);
    }

    fn wrong_type(&self, cx: &mut Cx, key: &str, v: &Spanned<DeValue<'_>>, expected: &str) {
        let path = self.key_path(key);
        cx.error(
            &v.span(),
            format!(
                "`{path}` must be {expected}, found {}",
                type_name(v.get_ref())
            ),
            format!("expected {expected}"),
        );
    }

    /// A positive integer (at least `min`).
    fn int(&mut self, cx: &mut Cx, key: &'static str, min: u64, what: &str) -> Option<u64> {
        let Some(v) = self.lookup(cx, key) else {
            self.missing(cx, key, what);
            return None;
        };
        self.int_value(cx, key, v, min)
    }

    fn opt_int(&mut self, cx: &mut Cx, key: &'static str, min: u64) -> Result<Option<u64>, ()> {
        match self.lookup(cx, key) {
            None => Ok(None),
            Some(v) => self.int_value(cx, key, v, min).map(Some).ok_or(()),
        }
    }

    fn int_value(&self, cx: &mut Cx, key: &str, v: &Spanned<DeValue<'_>>, min: u64) -> Option<u64> {
        let path = self.key_path(key);
        let DeValue::Integer(i) = v.get_ref() else {
            self.wrong_type(cx, key, v, "an integer");
            return None;
        };
        match i64::from_str_radix(i.as_str(), i.radix()) {
            Ok(n) if n >= 0 && n as u64 >= min => Some(n as u64),
            Ok(n) => {
                cx.error(
                    &v.span(),
                    format!("`{path}` must be at least {min}, found {n}"),
                    "too small",
                );
                None
            }
            Err(_) => {
                cx.error(&v.span(), format!("`{path}` is out of range"), "too large");
                None
            }
        }
    }

    /// A count at least `min` and at most [`LIMIT`] (larger values are typos, and would make the
    /// cost model allocate or loop without end).
    fn u32_int(&mut self, cx: &mut Cx, key: &'static str, min: u64, what: &str) -> Option<u32> {
        let n = self.int(cx, key, min, what)?;
        within_limit(cx, &self.key_path(key), n)
    }

    /// A finite number (integer or float) strictly above `above` (or at least, if `inclusive`).
    fn num(&mut self, cx: &mut Cx, key: &'static str, bound: Bound, what: &str) -> Option<f64> {
        let Some(v) = self.lookup(cx, key) else {
            self.missing(cx, key, what);
            return None;
        };
        self.num_value(cx, key, v, bound)
    }

    fn num_value(
        &self,
        cx: &mut Cx,
        key: &str,
        v: &Spanned<DeValue<'_>>,
        bound: Bound,
    ) -> Option<f64> {
        let path = self.key_path(key);
        let x = match v.get_ref() {
            DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
                .ok()
                .map(|n| n as f64),
            DeValue::Float(f) => f.as_str().parse::<f64>().ok(),
            _ => {
                self.wrong_type(cx, key, v, "a number");
                return None;
            }
        };
        let Some(x) = x.filter(|x| x.is_finite()) else {
            cx.error(
                &v.span(),
                format!("`{path}` must be a finite number"),
                "not finite",
            );
            return None;
        };
        if let Some(msg) = bound.violated(x) {
            cx.error(
                &v.span(),
                format!("`{path}` must be {msg}, found {x}"),
                "out of range",
            );
            return None;
        }
        Some(x)
    }

    fn string(&mut self, cx: &mut Cx, key: &'static str, what: &str) -> Option<String> {
        let Some(v) = self.lookup(cx, key) else {
            self.missing(cx, key, what);
            return None;
        };
        match v.get_ref() {
            DeValue::String(s) => Some(s.to_string()),
            _ => {
                self.wrong_type(cx, key, v, "a string");
                None
            }
        }
    }

    fn opt_string(
        &mut self,
        cx: &mut Cx,
        key: &'static str,
    ) -> Result<Option<(String, Range<usize>)>, ()> {
        match self.lookup(cx, key) {
            None => Ok(None),
            Some(v) => match v.get_ref() {
                DeValue::String(s) => Ok(Some((s.to_string(), v.span()))),
                _ => {
                    self.wrong_type(cx, key, v, "a string");
                    Err(())
                }
            },
        }
    }

    /// One of a fixed set of words.
    fn choice<T: Copy>(
        &mut self,
        cx: &mut Cx,
        key: &'static str,
        default: T,
        choices: &[(&str, T)],
    ) -> Option<T> {
        let (s, span) = match self.opt_string(cx, key) {
            Ok(None) => return Some(default),
            Ok(Some(x)) => x,
            Err(()) => return None,
        };
        if let Some((_, t)) = choices.iter().find(|(name, _)| *name == s) {
            return Some(*t);
        }
        let names: Vec<String> = choices.iter().map(|(n, _)| format!("`{n}`")).collect();
        let d = Diagnostic::error(format!("`{}` cannot be `{s}`", self.key_path(key)))
            .with_span_label(cx.span(&span), "unknown value")
            .with_help(format!("expected one of {}", names.join(", ")));
        cx.diags.push(d);
        None
    }

    /// `true` or `false`, `default` when absent.
    fn opt_bool(&mut self, cx: &mut Cx, key: &'static str, default: bool) -> Option<bool> {
        match self.lookup(cx, key) {
            None => Some(default),
            Some(v) => match v.get_ref() {
                DeValue::Boolean(b) => Some(*b),
                _ => {
                    self.wrong_type(cx, key, v, "a boolean");
                    None
                }
            },
        }
    }

    fn dtype(&mut self, cx: &mut Cx, key: &'static str, default: Dtype) -> Option<Dtype> {
        self.choice(
            cx,
            key,
            default,
            &[
                ("fp32", Dtype::Fp32),
                ("bf16", Dtype::Bf16),
                ("fp16", Dtype::Fp16),
                ("fp8", Dtype::Fp8),
            ],
        )
    }

    fn sub(&mut self, cx: &mut Cx, key: &'static str) -> Result<Option<Table<'t, 'i>>, ()> {
        match self.lookup(cx, key) {
            None => Ok(None),
            Some(v) => match v.get_ref() {
                DeValue::Table(t) => Ok(Some(Table::new(self.key_path(key), t, v.span()))),
                _ => {
                    self.wrong_type(cx, key, v, "a table");
                    Err(())
                }
            },
        }
    }

    fn req_sub(&mut self, cx: &mut Cx, key: &'static str, what: &str) -> Option<Table<'t, 'i>> {
        match self.sub(cx, key) {
            Ok(Some(t)) => Some(t),
            Ok(None) => {
                let path = self.key_path(key);
                let d = Diagnostic::error(format!("missing table `[{path}]`"))
                    .with_span_label(cx.span(&(0..0)), "in this spec")
                    .with_help(format!("add a `[{path}]` table ({what})"));
                cx.diags.push(d);
                None
            }
            Err(()) => None,
        }
    }

    /// An array of numbers (milliseconds), or of positive integers.
    fn array(
        &mut self,
        cx: &mut Cx,
        key: &'static str,
    ) -> Result<Option<SpannedItems<'t, 'i>>, ()> {
        match self.lookup(cx, key) {
            None => Ok(None),
            Some(v) => match v.get_ref() {
                DeValue::Array(a) => Ok(Some((&a[..], v.span()))),
                _ => {
                    self.wrong_type(cx, key, v, "an array");
                    Err(())
                }
            },
        }
    }

    /// Reports every key that no lookup asked for.
    fn finish(self, cx: &mut Cx) {
        let mut unknown: Vec<(&Spanned<std::borrow::Cow<'_, str>>, _)> = self
            .table
            .iter()
            .filter(|(k, _)| !self.known.contains(&k.get_ref().as_ref()))
            .collect();
        unknown.sort_by_key(|(k, _)| k.span().start);
        let mut known = self.known.clone();
        known.sort_unstable();
        known.dedup();
        for (k, _) in unknown {
            let path = self.key_path(k.get_ref());
            let mut d = Diagnostic::error(format!("unknown key `{path}`"))
                .with_span_label(cx.span(&k.span()), "not a spec key");
            if let Some(close) = closest(k.get_ref(), &known) {
                d = d.with_help(format!("did you mean `{close}`?"));
            } else {
                let list: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
                let place = if self.path.is_empty() {
                    "at the top level".to_string()
                } else {
                    format!("in `[{}]`", self.path)
                };
                d = d.with_help(format!("the keys {place} are {}", list.join(", ")));
            }
            cx.diags.push(d);
        }
    }
}

/// The known key nearest to a misspelt one (edit distance at most 2 or a third of its length).
fn closest<'a>(word: &str, known: &[&'a str]) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).clamp(1, 3);
    known
        .iter()
        .map(|k| (strsim::levenshtein(word, k), *k))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, k)| k)
}

fn type_name(v: &DeValue<'_>) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// The largest count a spec may give (layers, ranks, nodes, micro-batches, ...).
const LIMIT: u64 = 1 << 20;

fn within_limit(cx: &mut Cx, path: &str, n: u64) -> Option<u32> {
    if n <= LIMIT {
        return u32::try_from(n).ok();
    }
    let span = cx.spans.get(path).cloned().unwrap_or(0..0);
    cx.error(
        &span,
        format!("`{path}` is too large (at most {LIMIT})"),
        "too large",
    );
    None
}

#[derive(Debug, Clone, Copy)]
enum Bound {
    /// Strictly positive.
    Positive,
    /// Zero or more.
    NonNegative,
    /// In (0, 1].
    Fraction,
}

impl Bound {
    fn violated(self, x: f64) -> Option<&'static str> {
        match self {
            Bound::Positive if x <= 0.0 => Some("greater than 0"),
            Bound::NonNegative if x < 0.0 => Some("at least 0"),
            Bound::Fraction if x <= 0.0 || x > 1.0 => Some("greater than 0 and at most 1"),
            _ => None,
        }
    }
}

fn read_spec(cx: &mut Cx, mut root: Table<'_, '_>) -> Option<Spec> {
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
                Bound::Fraction,
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
        Bound::Positive,
        "peak dense BF16 TFLOP/s of one GPU",
    );
    let mem = t.num(
        cx,
        "memory_gib",
        Bound::Positive,
        "memory of one GPU in GiB",
    );
    let gpn = t.u32_int(cx, "gpus_per_node", 1, "GPUs in one node");
    let nodes = t.u32_int(cx, "nodes", 1, "number of nodes");
    let intra = t.num(
        cx,
        "intra_node_gbps",
        Bound::Positive,
        "GB/s per GPU inside a node, one direction",
    );
    let inter = t.num(
        cx,
        "inter_node_gbps",
        Bound::Positive,
        "GB/s per GPU between nodes, one direction",
    );
    let intra_lat = t.num(
        cx,
        "intra_node_latency_us",
        Bound::NonNegative,
        "latency of a message inside a node, in microseconds",
    );
    let inter_lat = t.num(
        cx,
        "inter_node_latency_us",
        Bound::NonNegative,
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
        Bound::Positive,
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
    let explicit = match t.array(cx, "layers_per_stage") {
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
    };
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
        (Some((list, span)), Some(layers)) => {
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
        (None, Some(layers)) => {
            if layers % u64::from(parts) != 0 {
                let span = cx.spans.get("parallelism.pp").cloned().unwrap_or(0..0);
                let d = Diagnostic::error(format!(
                    "{layers} layers do not split evenly into {parts} parts (pp {pp} × stages_per_rank {v})"
                ))
                .with_span_label(cx.span(&span), "the pipeline's ranks")
                .with_help("give `parallelism.layers_per_stage` explicitly, or change `pp`");
                cx.diags.push(d);
                None
            } else {
                Some(vec![layers / u64::from(parts); parts as usize])
            }
        }
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
    let field =
        |t: &mut Table<'_, '_>, cx: &mut Cx, key: &'static str| -> Result<Option<Vec<f64>>, ()> {
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
                match x {
                    Some(x) if x.is_finite() && x >= 0.0 => out.push(x / 1000.0),
                    _ => {
                        ok = false;
                        cx.error(
                            &item.span(),
                            format!("`{path}[{i}]` must be a number of milliseconds, at least 0"),
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

/// Checks between values of different tables, once every value read well.
fn consistency(spec: &Spec) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let err = |path: &str, label: &str, message: String| {
        let d = Diagnostic::error(message);
        match spec.span_of(path) {
            Some(span) => d.with_span_label(span, label.to_string()),
            None => d,
        }
    };
    let c = &spec.cluster;
    let m = &spec.model;
    let p = &spec.parallelism;
    let product = u64::from(p.pp) * u64::from(p.tp) * u64::from(p.dp);
    if product != c.gpus() {
        out.push(
            err(
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
            .with_help("every GPU runs exactly one (pipeline, tensor, data) rank"),
        );
        if let (Some(d), Some(nodes)) = (out.last_mut(), spec.span_of("cluster.nodes")) {
            d.labels.push(pipeweave_diagnostics::Label {
                span: nodes,
                message: "nodes of the cluster".to_string(),
            });
        }
    }
    if !m.heads.is_multiple_of(u64::from(p.tp)) {
        out.push(err(
            "parallelism.tp",
            "tensor-parallel ranks",
            format!("{} attention heads do not split over tp {}", m.heads, p.tp),
        ));
    }
    let t = &spec.training;
    if t.recompute_mla_up_projection && m.mla.is_none() {
        out.push(
            err(
                "training.recompute_mla_up_projection",
                "needs multi-head latent attention",
                "`training.recompute_mla_up_projection` needs `[model.mla]`".to_string(),
            )
            .with_help("remove the key, or describe the attention in `[model.mla]`"),
        );
    }
    if t.recompute_moe_activation && m.moe.is_none() {
        out.push(
            err(
                "training.recompute_moe_activation",
                "needs experts",
                "`training.recompute_moe_activation` needs `[model.moe]`".to_string(),
            )
            .with_help("remove the key, or describe the experts in `[model.moe]`"),
        );
    }
    if m.mla.is_none() {
        if !m.heads.is_multiple_of(m.kv_heads) {
            out.push(err(
                "model.kv_heads",
                "key-value heads",
                format!(
                    "{} heads are not a multiple of {} key-value heads",
                    m.heads, m.kv_heads
                ),
            ));
        }
        if !m.kv_heads.is_multiple_of(u64::from(p.tp))
            && !u64::from(p.tp).is_multiple_of(m.kv_heads)
        {
            out.push(err(
                "model.kv_heads",
                "key-value heads",
                format!(
                    "{} key-value heads do not split over tp {}",
                    m.kv_heads, p.tp
                ),
            ));
        }
    }
    if p.tp > c.gpus_per_node {
        out.push(err(
            "parallelism.tp",
            "tensor-parallel ranks",
            format!(
                "tp {} is larger than a node ({} GPUs): tensor parallelism needs the intra-node network",
                p.tp, c.gpus_per_node
            ),
        ));
    }
    match &m.moe {
        None if p.ep > 1 => out.push(err(
            "parallelism.ep",
            "expert-parallel ranks",
            format!("ep is {} but the model has no `[model.moe]` table", p.ep),
        )),
        None => {}
        Some(moe) => {
            if moe.routed_experts % u64::from(p.ep) != 0 {
                out.push(err(
                    "parallelism.ep",
                    "expert-parallel ranks",
                    format!(
                        "{} routed experts do not split over ep {}",
                        moe.routed_experts, p.ep
                    ),
                ));
            }
            if u64::from(p.dp) % u64::from(p.ep) != 0 {
                out.push(err(
                    "parallelism.ep",
                    "expert-parallel ranks",
                    format!(
                        "ep {} does not divide dp {}: experts are sharded over data-parallel ranks",
                        p.ep, p.dp
                    ),
                ));
            }
            if moe.experts_per_token > moe.routed_experts {
                out.push(err(
                    "model.moe.experts_per_token",
                    "experts per token",
                    format!(
                        "each token goes to {} experts but there are only {} routed experts",
                        moe.experts_per_token, moe.routed_experts
                    ),
                ));
            }
            if moe.dense_layers > m.layers {
                out.push(err(
                    "model.moe.dense_layers",
                    "dense layers",
                    format!(
                        "{} dense layers but the model has only {} layers",
                        moe.dense_layers, m.layers
                    ),
                ));
            }
        }
    }
    if spec.measured.i.is_some() && spec.measured.w.is_none() {
        out.push(err(
            "measured.i_ms",
            "input backward",
            "`measured.i_ms` needs `measured.w_ms`: a full backward is I + W".to_string(),
        ));
    }
    if spec.measured.w.is_some() && spec.measured.i.is_none() {
        out.push(err(
            "measured.w_ms",
            "weight backward",
            "`measured.w_ms` needs `measured.i_ms`: a full backward is I + W".to_string(),
        ));
    }
    out
}
