//! The validated spec: cluster (with its GPU and network figures), model, training run,
//! parallelism and measured costs.
//!
//! Values here passed the checks of `parse`; a `Spec` also remembers where each key stood in its
//! source so later checks (against a plan or a schedule) can point at the right place.

use crate::hardware::{Hardware, Key};
pub use crate::precision::{Dtype, Fp8Kernel};
use pipeweave_diagnostics::{Diagnostic, FileId, Span};
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

/// The machines: one kind of GPU, nodes of equal size, a network between them. Every figure of
/// the GPU and the network comes from the tables of [`crate::hardware`], with the spec's overrides.
#[derive(Debug, Clone, PartialEq)]
pub struct Cluster {
    /// The GPU's and the network's figures.
    pub hardware: Hardware,
    /// GPUs sharing the intra-node link.
    pub gpus_per_node: u32,
    /// Number of nodes.
    pub nodes: u32,
    /// Memory of NCCL's and the expert all-to-all's buffers per GPU, GiB; `None`: the default
    /// ([`Spec::comm_buffers_bytes`]).
    pub comm_buffers_gib: Option<f64>,
}

impl Cluster {
    /// GPUs in the cluster: `gpus_per_node × nodes`.
    pub fn gpus(&self) -> u64 {
        u64::from(self.gpus_per_node) * u64::from(self.nodes)
    }

    /// The GPU's name, for reports.
    pub fn gpu_name(&self) -> &str {
        &self.hardware.gpu_name
    }

    /// Memory of one GPU as the framework sees it, in bytes.
    pub fn memory_bytes(&self) -> f64 {
        self.hardware.memory_bytes()
    }

    /// A figure of the GPU or the network (0 when the tables have none).
    pub fn figure(&self, key: Key) -> f64 {
        self.hardware.or(key, 0.0)
    }
}

/// How the MLP of a dense layer (and of an expert) is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mlp {
    /// Two matrices with an activation between (GPT-2): `2·hidden·ffn` parameters.
    Plain,
    /// Gated (SwiGLU, Llama and DeepSeek): `3·hidden·ffn` parameters.
    Gated,
    /// Two matrices with a squared ReLU between (Primer, So et al. 2021; Nemotron-4): costed as
    /// `Plain`, an element-wise activation that reads its input and writes its output.
    SquaredRelu,
}

/// How the model encodes positions (`model.positions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Positions {
    /// Rotary embeddings of queries and keys (Llama, DeepSeek): an element-wise kernel per layer.
    Rotary,
    /// A learned table of positions added to the token embedding (GPT-2, GPT-3, Megatron-LM's
    /// GPT): `sequence_length × hidden` weights on the first part, nothing per layer.
    Learned,
    /// ALiBi (BLOOM): a bias per head added to the attention scores, inside the attention kernel
    /// (FlashAttention's `alibi_slopes`) or the score GEMM (`baddbmm`), nothing per layer beyond.
    Alibi,
}

/// The framework that ran the step (`training.framework`): each value sets the defaults of the
/// keys its documented behaviour decides (specs/README.md lists them with their sources).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framework {
    /// Megatron-LM / Megatron-Core (the default): gradient buckets reduced under the backward,
    /// sends beside the next action.
    Megatron,
    /// DeepSpeed's pipeline engine: blocking sends, gradients reduced after the last backward
    /// (`ReduceGrads` before `OptimizerStep`), ZeRO-2 with a pipeline refused.
    Deepspeed,
    /// torchtitan (PyTorch's `torch.distributed.pipelining` with FSDP2): sends beside the next
    /// action, reduce-scatters under the backward.
    Torchtitan,
    /// Plain PyTorch pipelining with DDP: as torchtitan.
    Pytorch,
    /// Another framework: the spec spells out `p2p_blocking` and `overlap_grad_reduce`.
    Custom,
}

impl Framework {
    /// The name a spec writes.
    pub fn name(self) -> &'static str {
        match self {
            Framework::Megatron => "megatron",
            Framework::Deepspeed => "deepspeed",
            Framework::Torchtitan => "torchtitan",
            Framework::Pytorch => "pytorch",
            Framework::Custom => "custom",
        }
    }
}

/// Multi-head latent attention (DeepSeek-V2/V3): low-rank query and key-value projections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mla {
    /// 0 means queries are projected directly from the hidden state.
    pub q_lora_rank: u64,
    /// Rank of the key-value compression (the latent's size per token).
    pub kv_lora_rank: u64,
    /// Per-head query and key dimension without rotary embedding.
    pub qk_nope_head_dim: u64,
    /// Per-head rotary dimension (one decoupled key shared by the heads).
    pub qk_rope_head_dim: u64,
    /// Per-head value dimension.
    pub v_head_dim: u64,
}

/// Mixture of experts in the layers after the first `dense_layers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moe {
    /// Routed experts per MoE layer.
    pub routed_experts: u64,
    /// Routed experts each token goes to (top-k).
    pub experts_per_token: u64,
    /// Experts every token goes to.
    pub shared_experts: u64,
    /// Hidden size of one expert's MLP.
    pub expert_ffn: u64,
    /// The first `dense_layers` layers have a dense MLP of size `model.ffn`.
    pub dense_layers: u64,
    /// Node-limited routing (DeepSeek-V3: 4): a token crosses the inter-node network to at most
    /// this many nodes. `None`: one copy per routed expert.
    pub max_nodes_per_token: Option<u64>,
    /// Number format of the dispatched tokens in the forward pass (DeepSeek-V3: FP8); combine and
    /// every backward transfer use the activation format.
    pub dispatch_dtype: Dtype,
}

/// The transformer: its shape and how its attention and MLP are built.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// Transformer layers.
    pub layers: u64,
    /// Hidden size (the width of the residual stream).
    pub hidden: u64,
    /// Attention heads.
    pub heads: u64,
    /// Key-value heads (`heads` without grouped-query attention).
    pub kv_heads: u64,
    /// Per-head dimension of queries, keys and values (default hidden / heads); ignored with MLA.
    pub head_dim: u64,
    /// Hidden size of a dense MLP.
    pub ffn: u64,
    /// Vocabulary size.
    pub vocab: u64,
    /// How each MLP is built.
    pub mlp: Mlp,
    /// Multi-head latent attention, when the model uses it instead of plain attention.
    pub mla: Option<Mla>,
    /// Mixture of experts, when the model has MoE layers.
    pub moe: Option<Moe>,
    /// Multi-token prediction modules after the last layer (DeepSeek-V3: 1), each one more layer
    /// (like the last) and a pass through the shared output head, on the last part.
    pub mtp_depth: u64,
    /// The output head shares the input embedding's weights (GPT-2, BLOOM; Megatron-LM's
    /// `share_embeddings_and_output_weights`): one copy of the weights in the model's count, a
    /// copy on each rank that holds either end, and their gradients all-reduced between the
    /// first and the last pipeline rank after the backward.
    pub tied_embeddings: bool,
    /// How positions are encoded.
    pub positions: Positions,
    /// A LayerNorm right after the embedding (BLOOM's `word_embeddings_layernorm`), on the first
    /// part.
    pub embedding_norm: bool,
    /// Attention and MLP side by side on one normalised input, their outputs added to the
    /// residual once (GPT-J; PaLM §2 "Parallel Layers"): one norm and one residual add per layer,
    /// and with tensor parallelism one gather of the input and one reduction of the summed
    /// outputs per layer instead of two.
    pub parallel_blocks: bool,
}

/// The training run: batch shape, length, number formats and what is recomputed.
#[derive(Debug, Clone, PartialEq)]
pub struct Training {
    /// Tokens per sequence.
    pub sequence_length: u64,
    /// Sequences per micro-batch.
    pub micro_batch_size: u64,
    /// Micro-batches per step, per data-parallel replica.
    pub microbatches: u32,
    /// Tokens over the whole run.
    pub total_tokens: f64,
    /// Format of the weights.
    pub param_dtype: Dtype,
    /// Format of the gradients.
    pub grad_dtype: Dtype,
    /// Master copy of the weights kept by the optimizer; `None` when there is none.
    pub master_dtype: Option<Dtype>,
    /// Format of Adam's two moments.
    pub optimizer_dtype: Dtype,
    /// Format of activations and of point-to-point transfers.
    pub activation_dtype: Dtype,
    /// Format the linear layers compute in (DeepSeek-V3: FP8).
    pub gemm_dtype: Dtype,
    /// The FP8 GEMM kernels, when `gemm_dtype` is FP8.
    pub fp8_gemm_kernel: Fp8Kernel,
    /// The attention kernel.
    pub attention: Attention,
    /// Dropout probability after attention and MLP and on the attention probabilities (0: none).
    pub dropout: f64,
    /// ZeRO stage: 0 none, 1 optimizer state and master weights sharded over data parallelism,
    /// 2 gradients too.
    pub zero_stage: u32,
    /// What ZeRO-2 does with pipeline parallelism.
    pub zero2_with_pipeline: Zero2Pipeline,
    /// With several model copies (Chimera, DualPipe) and ZeRO, one optimizer state sharded over
    /// the ranks of every copy (`true`) or one per copy.
    pub optimizer_shared_across_copies: bool,
    /// Format of the data-parallel gradient reduction (Llama 3: FP32).
    pub grad_reduce_dtype: Dtype,
    /// Megatron-LM's `overlap_grad_reduce`: gradient buckets are reduced as the last backward of
    /// each stage produces them.
    pub overlap_grad_reduce: bool,
    /// Megatron-LM's `overlap_param_gather`: the ZeRO parameter all-gather runs under the next
    /// step's forward, only its first bucket exposed.
    pub overlap_param_gather: bool,
    /// Parameters per gradient bucket; `None`: Megatron-LM's default max(4·10⁷, 10⁶·dp).
    pub grad_bucket_params: Option<f64>,
    /// Tensor-parallel collectives overlapped with the GEMMs (Megatron-LM's `tp_comm_overlap`).
    pub tp_comm_overlap: bool,
    /// The framework that ran the step; it set the defaults of the keys below it decides.
    pub framework: Framework,
    /// A rank waits for its boundary sends to complete before its next action, then synchronises
    /// with the GPU (Megatron-LM's `_communicate` before the overlapped schedules: `req.wait()` on
    /// every send and receive, then `torch.cuda.synchronize()`; DeepSpeed's pipeline engine sends
    /// with blocking calls in instruction order). `false`: sends run beside the next action.
    pub p2p_blocking: bool,
    /// SMs communication kernels take while they overlap compute: an F&B pair's, tensor-parallel
    /// collectives beside the GEMMs, overlapped data-parallel collectives (DeepSeek-V3: 20 of 132).
    pub comm_sms: f64,
    /// Share of the GPU's memory kept free: a plan fits when it needs at most (1 − headroom) of it.
    pub memory_headroom: f64,
    /// What the backward recomputes instead of keeping from the forward: every part's setting,
    /// or, with [`Training::recompute_per_part`], the heaviest of theirs.
    pub recompute: Recompute,
    /// Each part's recomputation where the parts differ (AdaPipe, Sun et al., ASPLOS 2024),
    /// indexed like `parallelism.layers_per_stage`; empty when every part runs `recompute`.
    pub recompute_per_part: Vec<Recompute>,
    /// The rungs a search (`--split auto`, `recommend`) may give each part; empty: every rung
    /// that changes anything (none, selective with standard attention, full).
    pub recompute_options: Vec<Recompute>,
    /// RMSNorm (LayerNorm) outputs are recomputed in the backward, not kept (DeepSeek-V3 §3.2.3).
    pub recompute_norms: bool,
    /// MLA's up-projected queries, keys and values are recomputed from the latents in the
    /// backward, not kept (DeepSeek-V3 §3.2.3). Only with `[model.mla]`.
    pub recompute_mla_up_projection: bool,
    /// Experts keep their SwiGLU inputs and recompute its output (the down projection's input)
    /// in the backward (DeepSeek-V3 §3.3.3). Only with `[model.moe]`.
    pub recompute_moe_activation: bool,
    /// Inputs of linear layers and of the experts' SwiGLU are kept in FP8 with one FP32 scale per
    /// 128 elements, the attention output in 12-bit E5M6 (DeepSeek-V3 §3.3.1, §3.3.3).
    pub fp8_activation_cache: bool,
}

/// Layer-level activation recomputation (Korthikanti et al. 2022, §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Recompute {
    /// Keep every activation the backward needs.
    None,
    /// Recompute the attention core (scores, softmax, dropout) in the backward: drops the s²
    /// activations of standard attention; FlashAttention already does it.
    Selective,
    /// Keep only each layer's input; the backward runs the layer's forward again first.
    Full,
}

impl Recompute {
    /// The name specs write.
    pub fn name(self) -> &'static str {
        match self {
            Recompute::None => "none",
            Recompute::Selective => "selective",
            Recompute::Full => "full",
        }
    }

    /// The setting a spec or a command line names (`none`, `selective`, `full`).
    pub fn from_name(name: &str) -> Option<Recompute> {
        match name {
            "none" => Some(Recompute::None),
            "selective" => Some(Recompute::Selective),
            "full" => Some(Recompute::Full),
            _ => None,
        }
    }
}

impl Training {
    /// Whether the backward runs the attention core's forward again under `recompute`:
    /// selective recomputation of standard attention (Korthikanti et al. 2022: the score
    /// matrices are dropped and recomputed), and of FlashAttention under Megatron-Core, whose
    /// selective recomputation checkpoints the core attention whatever its kernel
    /// (`Attention.checkpoint_core_attention`, `_checkpointed_attention_forward`), so the kernel's
    /// forward runs again in the backward and no memory is saved.
    pub fn recomputes_attention_core(&self) -> bool {
        self.recompute == Recompute::Selective
            && (!self.attention.is_flash() || self.framework == Framework::Megatron)
    }

    /// The recomputation part `q` runs.
    pub fn recompute_of(&self, q: usize) -> Recompute {
        self.recompute_per_part
            .get(q)
            .copied()
            .unwrap_or(self.recompute)
    }

    /// Sets each part's recomputation: one setting for every part when they agree (or `per_part`
    /// is empty), else the list, with `recompute` the heaviest of it.
    pub fn set_recompute(&mut self, per_part: &[Recompute]) {
        match per_part.first() {
            Some(&first) if per_part.iter().all(|&r| r == first) => {
                self.recompute = first;
                self.recompute_per_part = Vec::new();
            }
            Some(_) => {
                self.recompute = per_part.iter().copied().max().unwrap_or(Recompute::None);
                self.recompute_per_part = per_part.to_vec();
            }
            None => self.recompute_per_part = Vec::new(),
        }
    }

    /// Each of `parts` parts' recomputation.
    pub fn recompute_parts(&self, parts: usize) -> Vec<Recompute> {
        (0..parts).map(|q| self.recompute_of(q)).collect()
    }
}

/// The attention kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attention {
    /// FlashAttention-3 (Hopper).
    Flash3,
    /// FlashAttention-2 (Ampere and newer).
    Flash2,
    /// Batched GEMMs with the score matrix in memory, softmax and dropout between them.
    Standard,
}

impl Attention {
    /// The name specs write.
    pub fn name(self) -> &'static str {
        match self {
            Attention::Flash3 => "flash3",
            Attention::Flash2 => "flash2",
            Attention::Standard => "standard",
        }
    }

    /// Whether the kernel keeps no score matrix (FlashAttention).
    pub fn is_flash(self) -> bool {
        self != Attention::Standard
    }

    /// The table's (forward, backward) efficiency keys of a FlashAttention kernel.
    pub fn keys(self) -> Option<(Key, Key)> {
        match self {
            Attention::Flash3 => Some((Key::Flash3Fwd, Key::Flash3Bwd)),
            Attention::Flash2 => Some((Key::Flash2Fwd, Key::Flash2Bwd)),
            Attention::Standard => None,
        }
    }
}

/// ZeRO-2 with pipeline parallelism: gradients accumulate over the micro-batches of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zero2Pipeline {
    /// Keep full gradients until the last micro-batch, then reduce-scatter (Megatron-LM,
    /// torchtitan): the memory of ZeRO-1.
    Accumulate,
    /// Refuse the combination, as DeepSpeed does.
    Refuse,
}

impl Training {
    /// Tokens in one micro-batch.
    pub fn tokens_per_microbatch(&self) -> f64 {
        (self.sequence_length * self.micro_batch_size) as f64
    }
}

/// Where pipeline ranks sit among the GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlacementOrder {
    /// Megatron's default order: tensor parallelism innermost, then data, pipeline outermost; GPU
    /// `pp_rank·dp·tp + dp_rank·tp + tp_rank`.
    PpOutermost,
    /// Pipeline innermost: GPU `(dp_rank·tp + tp_rank)·pp + pp_rank`, consecutive stages share a
    /// node where it is large enough.
    PpInnermost,
}

/// How the model and the batch are split over the GPUs.
#[derive(Debug, Clone, PartialEq)]
pub struct Parallelism {
    /// Pipeline ranks (a plan must have as many ranks).
    pub pp: u32,
    /// Tensor-parallel ranks (with sequence parallelism).
    pub tp: u32,
    /// Expert-parallel ranks, taken from the data-parallel ranks; 1 for a dense model.
    pub ep: u32,
    /// Data-parallel replicas.
    pub dp: u32,
    /// Stages (model parts) each rank holds per model copy: the model is cut into `pp ·
    /// stages_per_rank` parts.
    pub stages_per_rank: u32,
    /// Layers of each part, `pp · stages_per_rank` entries summing to `model.layers`.
    pub layers_per_stage: Vec<u64>,
    /// Where pipeline ranks sit among the GPUs (decides which boundaries cross nodes).
    pub placement: PlacementOrder,
    /// Sequence parallelism with tensor parallelism (Korthikanti et al. 2022): the parts outside
    /// the tensor-parallel blocks run on 1/tp of the tokens.
    pub sequence_parallel: bool,
}

impl Parallelism {
    /// The parts the model is cut into: `pp × stages_per_rank`.
    pub fn parts(&self) -> u32 {
        self.pp * self.stages_per_rank
    }
}

/// Measured durations (seconds) per model part that replace derived ones.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Measured {
    /// A lone forward of each part.
    pub f: Option<Vec<f64>>,
    /// The input-gradient backward of each part.
    pub i: Option<Vec<f64>>,
    /// The weight-gradient backward of each part.
    pub w: Option<Vec<f64>>,
    /// An overlapped F&B pair (forward and full backward) on the part.
    pub pair: Option<Vec<f64>>,
    /// Expert all-to-all (dispatch and combine) of one forward chunk on the part; a backward
    /// chunk moves the same volume.
    pub all_to_all: Option<Vec<f64>>,
}

/// A validated spec.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// Short name, shown in reports.
    pub name: String,
    /// One line about the spec (empty when it has none).
    pub description: String,
    /// The machines.
    pub cluster: Cluster,
    /// The model.
    pub model: Model,
    /// The training run.
    pub training: Training,
    /// How the work is split.
    pub parallelism: Parallelism,
    /// Measured durations that replace derived ones.
    pub measured: Measured,
    /// Where each key stood: dotted key path → its value's byte range (shared: searches clone
    /// specs by the thousand).
    pub(crate) spans: Arc<BTreeMap<String, Range<usize>>>,
    pub(crate) file: FileId,
}

/// What a schedule requires of the number of micro-batches per step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MicrobatchRule {
    /// The schedule's name, for the message.
    pub schedule: String,
    /// The least M it runs with.
    pub min: u32,
    /// M must be a multiple of this (1: any).
    pub multiple_of: u32,
}

/// NCCL's buffers per GPU when the spec gives none: an assumption (NCCL keeps `NCCL_BUFFSIZE`,
/// 4 MiB by default, per channel and peer of each communicator).
pub const NCCL_BUFFERS_GIB: f64 = 0.5;

/// DeepEP's buffers for the expert all-to-all across nodes: its internode test allocates 2·10⁹
/// bytes for NVLink and 10⁹ for RDMA at DeepSeek-V3's training shape (deepseek-ai/DeepEP,
/// `tests/legacy/test_internode.py`: `deep_ep.Buffer(group, int(2e9), int(1e9), ...)` with 4,096
/// tokens of hidden 7,168).
pub const EXPERT_BUFFERS_BYTES: f64 = 3e9;

impl Spec {
    /// Bytes of communication buffers per GPU: `cluster.comm_buffers_gib`, or NCCL's and, with
    /// expert parallelism, DeepEP's.
    pub fn comm_buffers_bytes(&self) -> f64 {
        match self.cluster.comm_buffers_gib {
            Some(g) => g * crate::hardware::GIB,
            None => {
                let experts = if self.parallelism.ep > 1 && self.model.moe.is_some() {
                    EXPERT_BUFFERS_BYTES
                } else {
                    0.0
                };
                NCCL_BUFFERS_GIB * crate::hardware::GIB + experts
            }
        }
    }

    /// Bytes a GPU cannot give to tensors: the CUDA context and the communication buffers.
    pub fn reserve_bytes(&self) -> f64 {
        self.cluster.figure(Key::ContextGib) * crate::hardware::GIB + self.comm_buffers_bytes()
    }

    /// The most bytes a plan may need on one GPU: the memory the framework sees, less the headroom.
    pub fn memory_limit_bytes(&self) -> f64 {
        self.cluster.memory_bytes() * (1.0 - self.training.memory_headroom)
    }

    /// Parameters per gradient bucket: `training.grad_bucket_params` or Megatron-LM's default
    /// max(4·10⁷, 10⁶·dp) ("larger DP sizes need larger buckets to ensure collectives do not
    /// become latency-bound", `DistributedDataParallelConfig.bucket_size`).
    pub fn grad_bucket_params(&self) -> f64 {
        self.training
            .grad_bucket_params
            .unwrap_or_else(|| (1e6 * f64::from(self.parallelism.dp)).max(4e7))
    }

    /// Whether the spec's ZeRO stage and pipeline cannot go together (ZeRO-2 with a pipeline and
    /// `zero2_with_pipeline = "refuse"`, as DeepSpeed asserts).
    pub fn zero2_refused(&self) -> bool {
        self.zero2_refused_at(self.parallelism.pp)
    }

    /// [`Spec::zero2_refused`] at pipeline degree `pp`.
    pub fn zero2_refused_at(&self, pp: u32) -> bool {
        self.training.zero_stage >= 2
            && pp > 1
            && self.training.zero2_with_pipeline == Zero2Pipeline::Refuse
    }

    /// The defaults the spec relies on that move its figures, each in words with why it was
    /// taken: today the attention kernel, when the spec names none (the best the GPU runs, which
    /// is wrong for a run older than the kernel). Empty when the spec names them all.
    pub fn assumed(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.span_of("training.attention").is_none() {
            let a = self.training.attention;
            let why = match a {
                Attention::Standard => "no FlashAttention kernel runs on it".to_owned(),
                _ => format!(
                    "the newest kernel it runs; a run from before {} names its own",
                    if a == Attention::Flash3 {
                        "FlashAttention-3 (2024)"
                    } else {
                        "FlashAttention (2022)"
                    }
                ),
            };
            out.push(format!(
                "`training.attention` not given: `{}` assumed on the {} ({why})",
                a.name(),
                self.cluster.gpu_name()
            ));
        }
        out
    }

    /// The span of a key's value in the source, if the key was there.
    pub fn span_of(&self, path: &str) -> Option<Span> {
        self.spans
            .get(path)
            .map(|r| Span::new(self.file, r.clone()))
    }

    /// The file the spec was read from.
    pub fn file(&self) -> FileId {
        self.file
    }

    pub(crate) fn error_at(&self, path: &str, message: String) -> Diagnostic {
        let d = Diagnostic::error(message);
        match self.span_of(path) {
            Some(span) => d.with_span_label(span, format!("`{path}`")),
            None => d.with_note(format!("from the spec's `{path}`")),
        }
    }

    /// Checks a schedule's requirement on the micro-batches per step against `training.microbatches`.
    pub fn check_microbatches(&self, rule: &MicrobatchRule) -> Vec<Diagnostic> {
        let m = self.training.microbatches;
        let mut out = Vec::new();
        if m < rule.min {
            out.push(self.error_at(
                "training.microbatches",
                format!(
                    "{} needs at least {} micro-batches per step, the spec has {m}",
                    rule.schedule, rule.min
                ),
            ));
        }
        if rule.multiple_of > 1 && !m.is_multiple_of(rule.multiple_of) {
            out.push(self.error_at(
                "training.microbatches",
                format!(
                    "{} needs a multiple of {} micro-batches per step, the spec has {m}",
                    rule.schedule, rule.multiple_of
                ),
            ));
        }
        out
    }

    /// Checks that a plan fits this spec: one pipeline rank per `parallelism.pp`, as many stages
    /// per rank as `parallelism.stages_per_rank` (so the model is cut into as many parts as the
    /// plan has stages per pipeline), and as many micro-batches.
    pub fn check_plan(&self, plan: &pipeweave_plan::Plan) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        let p = &self.parallelism;
        if plan.ranks() != p.pp {
            out.push(self.error_at(
                "parallelism.pp",
                format!(
                    "the plan has {} ranks but the spec has a pipeline of {} ranks",
                    plan.ranks(),
                    p.pp
                ),
            ));
        }
        // The spec cuts the model into pp × stages_per_rank parts, so only the stages per rank
        // are a problem of their own; a hint never names the value already there.
        let stages = plan.stages_per_pipeline();
        let ranks = plan.ranks();
        let at = "parallelism.stages_per_rank";
        match (ranks > 0 && stages.is_multiple_of(ranks)).then(|| stages / ranks) {
            Some(v) if v == p.stages_per_rank => {}
            Some(v) => out.push(
                self.error_at(
                    at,
                    format!(
                        "the plan has {v} stages per rank ({stages} per pipeline over {ranks} ranks) but the spec has {}",
                        p.stages_per_rank
                    ),
                )
                .with_help(format!("set `{at}` to {v}")),
            ),
            None => out.push(self.error_at(
                at,
                format!(
                    "the plan's {stages} stages per pipeline do not spread evenly over its {ranks} ranks"
                ),
            )),
        }
        let m = plan.num_microbatches();
        if m != self.training.microbatches {
            out.push(self.error_at(
                "training.microbatches",
                format!(
                    "the plan carries {m} micro-batches per step but the spec has {}",
                    self.training.microbatches
                ),
            ));
        }
        out
    }
}
