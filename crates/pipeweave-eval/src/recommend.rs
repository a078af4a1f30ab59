//! `recommend`: search the shape of a run on a spec's cluster (pipeline, tensor and data
//! parallelism, schedule and its variants, stages per rank, micro-batch count, recomputation),
//! simulate every candidate that fits in memory, and keep what explains the choice and every
//! rejection.
//!
//! The search keeps the spec's GPUs, expert parallelism and global batch (sequences per step over
//! all data-parallel replicas) fixed. It tries every tensor-parallel degree TP that divides a node
//! and the attention heads, every pipeline degree P that divides the GPUs left and fits the layers
//! (data parallelism takes the rest: it must be divisible by expert parallelism and divide the
//! global batch), and for each every schedule family: a schedule, its `v` (2, 4 and 8 stages per
//! rank for schedules that take it) and its variants (a plugin's settings, e.g. Chimera's forward
//! doubling and four pipelines). Micro-batch counts M divide the sequences of one replica (the
//! micro-batch size is the rest), largest first: a larger M never raises a schedule's bubble and
//! shrinks each micro-batch's activations, so only the [`M_PER_CONFIG`] largest M that a schedule
//! accepts are tried. Each is costed with no recomputation first, then selective recomputation
//! (when it changes anything: standard attention), then full; the first that fits in memory
//! (under the spec's headroom) is simulated, since recomputation only adds time. A candidate that
//! fits in no way is kept with its memory, unsimulated.
//! Plans come from a [`Planner`] (the command line compiles library schedules and calls plugins).
//!
//! **Bounded work.** Every value of a spec is in range, yet a cluster of a million GPUs, a model
//! of sixteen thousand layers or a batch of 10¹⁸ sequences would make the search above take
//! minutes. So it prunes by size, never by a clock (its answer is the same on every machine):
//! - shapes: divisors are found from the factors of the node count and the GPUs per node, and
//!   micro-batch counts by trying each up to [`MAX_M`], so no count of a spec is ever factored by
//!   a scan up to its square root;
//! - configurations: a plan of more than [`MAX_CANDIDATE_OPS`] operations is not simulated: one
//!   that must have more (F and B of every stage and micro-batch) is not asked for, and the
//!   search goes on to the next smaller micro-batch count; each shows as not buildable, with the
//!   size;
//! - the whole search: each shape's work is estimated before anything is built (each request to
//!   the planner, the most operations of the plans it may simulate, the cost tables of the
//!   recomputation ladder), and shapes are admitted smallest first while the estimates add up to
//!   at most [`SEARCH_BUDGET`]; the others are listed with the shapes left out, and why.
//!
//! **The split.** With `split` (the front ends' default) each configuration also searches the
//! layers' split at each rung it climbs ([`crate::search_split`]), unless its perfectly balanced
//! bound cannot beat the fastest step found so far, the even split already fits within 0.5% of
//! that bound, the spec has measured costs per part, or the model has more than 4,096 layers. A
//! search prices at most four more plans than the configuration's own (the spec's split and three
//! others: [`crate::PRICED_PER_SEARCH`]) and its descents weigh at most 2²⁰ rank updates
//! each, so the work stays linear in the configurations, but it is not in the estimates below:
//! the budget bounds the configurations, and a configuration costs up to about five times more
//! with its split searched (the extreme specs' searches in `tests/it/extreme.rs` take three times
//! as long in a debug build; the shipped specs' stay under 2 s in a release build).
//!
//! The estimates run at 15 to 22 million a second in a release build on this project's 2-core
//! VM under load, whatever the spec; the largest shipped spec's search (Llama 3.1 405B) estimates
//! about 12.1 million (with Megatron-Core's two schedules in the library), 36% of the budget,
//! with configurations of at most 49,152 operations, so on the shipped specs nothing is left out
//! and the answer is the whole search's.

mod measured;
mod search;

use crate::compare::Figures;
use serde::Serialize;
use std::cmp::Ordering;

pub use measured::{MeasuredCandidate, MeasuredRecommendation, MeasuredUnmet, recommend_measured};
pub use search::recommend;

/// How many micro-batch counts per (shape, schedule family) are tried.
pub const M_PER_CONFIG: usize = 3;

/// Stages per rank tried for schedules that take `v`.
pub const V_VALUES: [u32; 3] = [2, 4, 8];

/// The largest micro-batch count tried.
pub const MAX_M: u64 = 1024;

/// The most operations (F, B, I, W) a configuration's plan may have to be simulated in the search.
pub const MAX_CANDIDATE_OPS: u64 = 1 << 18;

/// The work a search may take, in operations simulated (each request to the planner and each
/// cost table counted as operations too): about two seconds of a release build on this
/// project's 2-core VM.
pub const SEARCH_BUDGET: u64 = 1 << 25;

/// A schedule the search may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchSchedule {
    /// The name the planner knows it by.
    pub name: String,
    /// Whether it takes the number of stages per rank (`v`).
    pub takes_v: bool,
    /// Its variants: settings (`NAME`, `VALUE`) to build it with besides the defaults; the
    /// defaults themselves (no settings) are always tried.
    pub variants: Vec<Vec<(String, String)>>,
}

impl SearchSchedule {
    /// A schedule with its defaults only.
    pub fn plain(name: impl Into<String>, takes_v: bool) -> SearchSchedule {
        SearchSchedule {
            name: name.into(),
            takes_v,
            variants: Vec::new(),
        }
    }
}

/// One configuration, costed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// The schedule's name.
    pub schedule: String,
    /// Its settings besides the defaults, `NAME=VALUE`.
    pub settings: Vec<String>,
    /// Pipeline, tensor- and data-parallel degrees.
    pub pp: u32,
    /// The tensor-parallel degree.
    pub tp: u32,
    /// The data-parallel degree.
    pub dp: u32,
    /// Micro-batches M per step and replica.
    pub microbatches: u32,
    /// Sequences per micro-batch.
    pub micro_batch_size: u64,
    /// Stages per rank and model copy (from the plan).
    pub stages_per_rank: u32,
    /// `v` as given to the schedule, if it takes one.
    pub v: Option<u32>,
    /// Model copies.
    pub model_copies: u32,
    /// Activation recomputation: `none`, `selective` or `full` (the heaviest part's, where the
    /// parts differ).
    pub recompute: String,
    /// Each part's recomputation, as `layers_per_part` (they differ where the split search
    /// chose a lighter one for the parts with memory to spare).
    pub recompute_per_part: Vec<String>,
    /// Layers of each model part (the first also holds the embedding, the last the head).
    pub layers_per_part: Vec<u64>,
    /// Whether the split was searched (else it is the even split).
    pub split_searched: bool,
    /// The step's time in seconds (null when not simulated: it does not fit in memory).
    pub step_time_s: Option<f64>,
    /// The most loaded GPU's memory over the GPU's memory, and in bytes.
    pub memory_fraction: f64,
    /// The most loaded GPU's memory in bytes.
    pub memory_bytes: f64,
    /// What a plan may use of one GPU's memory, and whether this one needs more.
    pub memory_limit_bytes: f64,
    /// Whether the most loaded GPU needs more than the limit.
    pub out_of_memory: bool,
    /// The step's figures, when simulated.
    pub figures: Option<Figures>,
    /// GPU-hours of the whole run, when simulated.
    pub run_gpu_hours: Option<f64>,
}

impl Candidate {
    /// The step time, infinite when not simulated.
    pub fn time(&self) -> f64 {
        self.step_time_s.unwrap_or(f64::INFINITY)
    }
}

/// The term of the step a schedule loses most on against the choice.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LostOn {
    /// The term's name: `compute`, `overlap slowdown`, `exposed TP`, `exposed all-to-all`,
    /// `exposed p2p`, `bubble`, `exposed DP` or `optimizer`.
    pub term: String,
    /// Its seconds per rank (mean) more than the choice's.
    pub more_s: f64,
}

/// Why a schedule family (a schedule with its `v` and settings) is not the choice.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The schedule, with its `v` and settings.
    pub schedule: String,
    /// Its fastest candidate that fits in memory.
    pub best: Option<Candidate>,
    /// The term it loses most on against the choice (when it has a best and there is a choice).
    pub lost_on: Option<LostOn>,
    /// Its candidate that needs the least memory (said when none fits).
    pub least_memory: Option<Candidate>,
    /// Why it could not be built, when it never was (the reason at the spec's own shape if any).
    pub unmet: Option<String>,
}

/// A shape (pipeline and tensor-parallel degrees) left out before any schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RejectedShape {
    /// The pipeline degree; `None` when the tensor-parallel degree is left out for every one.
    pub pp: Option<u32>,
    /// The tensor-parallel degree.
    pub tp: u32,
    /// Why, in words.
    pub reason: String,
}

/// The outcome of a search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    /// The spec's name.
    pub spec: String,
    /// Whether the spec is the built-in default.
    pub default_spec: bool,
    /// GPUs of the cluster.
    pub gpus: u64,
    /// The GPU's name.
    pub gpu: String,
    /// Expert parallelism (kept).
    pub ep: u32,
    /// Sequences per step over all replicas (kept).
    pub global_sequences: u64,
    /// Tokens per sequence.
    pub sequence_length: u64,
    /// Tokens of the whole run.
    pub total_tokens: f64,
    /// The fraction of a GPU's memory kept free (`training.memory_headroom`).
    pub memory_headroom: f64,
    /// The fastest candidate that fits in memory.
    pub choice: Option<Candidate>,
    /// The fastest candidates after the choice, one per schedule family.
    pub runners_up: Vec<Candidate>,
    /// Why every schedule family is or is not the choice.
    pub verdicts: Vec<Verdict>,
    /// Shapes left out before any schedule, with the reason.
    pub rejected_shapes: Vec<RejectedShape>,
    /// 1F1B at the choice's shape.
    pub same_shape_1f1b: Option<Candidate>,
    /// 1F1B as the spec has it.
    pub spec_1f1b: Option<Candidate>,
    /// The spec's own pipeline and tensor-parallel degrees and micro-batches per step.
    pub spec_pp: u32,
    /// The spec's tensor-parallel degree.
    pub spec_tp: u32,
    /// The spec's micro-batches per step and replica.
    pub spec_microbatches: u32,
    /// Whether the layers' split was searched with each configuration (else every candidate
    /// splits its layers evenly).
    pub split_searched: bool,
    /// Candidates simulated.
    pub simulated: usize,
    /// Candidates that fit in memory in no way (not simulated).
    pub out_of_memory: usize,
    /// Configurations that could not be built or costed.
    pub unmet: usize,
}

/// Candidates fastest first; ties by memory, then by shape, so the order is total.
pub(crate) fn by_time(a: &Candidate, b: &Candidate) -> Ordering {
    a.time()
        .total_cmp(&b.time())
        .then(a.memory_bytes.total_cmp(&b.memory_bytes))
        .then(a.schedule.cmp(&b.schedule))
        .then(a.settings.cmp(&b.settings))
        .then(a.pp.cmp(&b.pp))
        .then(a.tp.cmp(&b.tp))
        .then(b.microbatches.cmp(&a.microbatches))
        .then(a.v.cmp(&b.v))
        .then(a.recompute.cmp(&b.recompute))
        .then(a.recompute_per_part.cmp(&b.recompute_per_part))
}

/// The schedule family's label: `chimera (joins=doubling)`, `interleaved-1f1b (v 4)`.
pub(crate) fn family_label(name: &str, v: Option<u32>, settings: &[String]) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(v) = v {
        parts.push(format!("v {v}"));
    }
    parts.extend(settings.iter().cloned());
    if parts.is_empty() {
        name.to_owned()
    } else {
        format!("{name} ({})", parts.join(", "))
    }
}

/// The term of `c`'s breakdown that exceeds the choice's most.
pub(crate) fn lost_on(c: &Candidate, choice: &Candidate) -> Option<LostOn> {
    let (a, b) = (c.figures.as_ref()?, choice.figures.as_ref()?);
    let (x, y) = (&a.breakdown_per_rank_mean_s, &b.breakdown_per_rank_mean_s);
    let terms = [
        ("compute", x.compute_s - y.compute_s),
        (
            "overlap slowdown",
            x.overlap_slowdown_s - y.overlap_slowdown_s,
        ),
        ("exposed TP", x.exposed_tp_s - y.exposed_tp_s),
        (
            "exposed all-to-all",
            x.exposed_all_to_all_s - y.exposed_all_to_all_s,
        ),
        ("exposed p2p", x.exposed_p2p_s - y.exposed_p2p_s),
        ("bubble", x.bubble_s - y.bubble_s),
        ("exposed DP", x.exposed_dp_s - y.exposed_dp_s),
        ("optimizer", x.optimizer_s - y.optimizer_s),
    ];
    // A term counts when it is more than a ten-thousandth of the choice's step.
    let floor = 1e-4 * choice.time();
    terms
        .into_iter()
        .filter(|(_, d)| *d > floor)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(term, more)| LostOn {
            term: term.to_owned(),
            more_s: more,
        })
}
