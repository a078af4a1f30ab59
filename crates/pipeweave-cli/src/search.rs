//! The searches, as the command line writes them: `recommend` (pipeline degree, schedule,
//! micro-batches and stages per rank on a spec) and `synthesize` (the best order for a placement).

use crate::args::{CostArgs, Dirs, Format};
use crate::output::{self, emit, is_stdout, note};
use clap::{Args, ValueEnum};
use pipeweave_app::{PlacementArg, Session, SynthesizeRequest};
use pipeweave_eval::Split;
use pipeweave_source::Failure;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct RecommendArgs {
    /// The cluster spec: a TOML file, a shipped spec's name, or `default` (the default)
    #[arg(long, value_name = "FILE|NAME")]
    pub spec: Option<String>,
    /// Price every schedule with the costs measured in a profiled run (`pipeweave calibrate`),
    /// at that run's ranks and micro-batches, instead of searching the shape on a spec
    #[arg(long, value_name = "FILE", conflicts_with = "spec")]
    pub costs_from: Option<String>,
    #[command(flatten)]
    pub dirs: Dirs,
    /// How the layers are split over the parts: `auto` searches the split with every
    /// configuration (never worse than the even split, which it always tries), `even` keeps the
    /// even split
    #[arg(
        long,
        value_name = "auto|even",
        default_value = "auto",
        value_parser = parse_split,
        conflicts_with = "costs_from"
    )]
    pub split: Split,
    /// Output format
    #[arg(long, value_enum, default_value_t = RecommendFormat::Text)]
    pub format: RecommendFormat,
}

fn parse_split(text: &str) -> Result<Split, String> {
    match Split::parse(text)? {
        s @ (Split::Auto | Split::Even) => Ok(s),
        _ => Err("recommend searches every shape: give `auto` or `even`".to_owned()),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RecommendFormat {
    Text,
    Markdown,
    Json,
}

/// `pipeweave recommend`.
pub fn recommend(session: &mut Session<'_>, args: &RecommendArgs) -> Result<(), Failure> {
    if let Some(costs) = &args.costs_from {
        let r = pipeweave_app::recommend_measured(session, costs)?;
        let text = match args.format {
            RecommendFormat::Text => pipeweave_report::recommend_measured_text(&r),
            RecommendFormat::Markdown => pipeweave_report::recommend_measured_markdown(&r),
            RecommendFormat::Json => pipeweave_report::recommend_measured_json(&r),
        };
        return emit(None, &text);
    }
    let r = pipeweave_app::recommend(session, args.spec.as_deref(), &args.split)?;
    let text = match args.format {
        RecommendFormat::Text => pipeweave_report::recommend_text(&r),
        RecommendFormat::Markdown => pipeweave_report::recommend_markdown(&r),
        RecommendFormat::Json => pipeweave_report::recommend_json(&r),
    };
    emit(None, &text)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Placement {
    /// One pipeline, stage q on rank q mod P (with --stages-per-rank v: v·P stages, looped)
    Loop,
    /// One pipeline of 2P stages in a V (ZB-V's, DualPipeV's)
    V,
    /// Two pipelines in opposite directions, half the micro-batches each (Chimera's, DualPipe's)
    Bidirectional,
}

/// The arguments of `pipeweave synthesize`.
#[derive(Debug, Args)]
pub struct SynthArgs {
    /// Ranks P (default with a spec: its `parallelism.pp`)
    #[arg(short = 'p', long = "ranks", value_parser = clap::value_parser!(u32).range(1..=i64::from(pipeweave_synth::MAX_RANKS)))]
    pub ranks: Option<u32>,
    /// Micro-batches M (default with a spec: its `training.microbatches`)
    #[arg(short = 'm', long = "microbatches", value_parser = clap::value_parser!(u32).range(1..=i64::from(pipeweave_synth::MAX_MICROBATCHES)))]
    pub microbatches: Option<u32>,
    /// Stages per rank of the loop placement
    #[arg(long = "stages-per-rank", short = 'v', default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub stages_per_rank: u32,
    /// Where the stages sit
    #[arg(long, value_enum, default_value_t = Placement::Loop)]
    pub placement: Placement,
    /// The memory per GPU a plan may use, in GiB, above 0 and at most 1048576 (needs --spec;
    /// default: the spec's GPU memory less its headroom)
    #[arg(
        long = "memory-limit",
        value_name = "GiB",
        conflicts_with = "activations",
        requires = "spec"
    )]
    pub memory_limit: Option<f64>,
    /// The most activations (stage-micro-batch units) a rank may hold (default without a spec: P
    /// stages' worth, 1F1B's memory: P·v for a loop, 2P for a V, P + 1 for two pipelines)
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=1 << 24))]
    pub activations: Option<u32>,
    /// Limit each rank to what the fastest library schedule or plugin at this placement holds
    /// there (within the spec's memory, or the other limit given): a plan at the library's memory
    #[arg(long = "library-memory")]
    pub library_memory: bool,
    /// Output format of the report
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Backwards whole only (no split into I and W)
    #[arg(long)]
    pub no_weight_split: bool,
    /// No overlapped F&B pairs (they are tried with two pipelines)
    #[arg(long)]
    pub no_pairs: bool,
    /// Stop the search after this long (e.g. 500ms, 10s, 2m): the heuristic's policies after its
    /// first plan, the local search, the exact method; a search cut by it may differ between
    /// machines, one cut by --evaluations never does
    #[arg(long = "time-limit", value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub time_limit: Duration,
    /// The most plans the local search tries
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    pub evaluations: u64,
    /// The most nodes the exact method visits where it runs (P ≤ 4, M ≤ 8); 0 turns it off
    #[arg(long = "exact-nodes", value_name = "N", default_value_t = 2_000_000)]
    pub exact_nodes: u64,
    /// Seeds the local search
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Write the plan (JSON plan format) to this file (`-`: standard output, the report then
    /// goes to standard error)
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub costs: CostArgs,
    #[command(flatten)]
    pub dirs: Dirs,
}

/// `500ms`, `10s`, `2m` or a number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    let x: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (500ms, 10s, 2m)"))?;
    let secs = x * scale;
    if !secs.is_finite() || !(0.0..=86_400.0).contains(&secs) {
        return Err(format!("`{text}` is not a duration from 0 to 24 hours"));
    }
    Ok(Duration::from_secs_f64(secs))
}

impl SynthArgs {
    /// The request as the application layer takes it.
    fn request(&self) -> SynthesizeRequest {
        SynthesizeRequest {
            ranks: self.ranks,
            microbatches: self.microbatches,
            placement: match self.placement {
                Placement::Loop => PlacementArg::Loop,
                Placement::V => PlacementArg::V,
                Placement::Bidirectional => PlacementArg::Bidirectional,
            },
            stages_per_rank: self.stages_per_rank,
            memory_limit_gib: self.memory_limit,
            activations: self.activations,
            library_memory: self.library_memory,
            weight_split: !self.no_weight_split,
            pairs: !self.no_pairs,
            time_limit: self.time_limit,
            evaluations: self.evaluations,
            exact_nodes: self.exact_nodes,
            seed: self.seed,
            costs: self.costs.costs(),
        }
    }
}

/// `pipeweave synthesize`: the report on standard output (standard error when the plan goes to
/// standard output), the plan in `-o`.
pub fn synthesize(session: &mut Session<'_>, args: &SynthArgs) -> Result<(), Failure> {
    let found = pipeweave_app::synthesize(session, &args.request())?;
    let text = match args.format {
        Format::Text => pipeweave_report::synthesis_text(&found.report),
        Format::Json => pipeweave_report::synthesis_json(&found.report),
    };
    if args.output.as_deref().is_some_and(is_stdout) {
        output::warn(&text);
    } else {
        emit(None, &text)?;
    }
    note(&format!(
        "the search took {:.3} s ({} plans tried{})",
        found.elapsed.as_secs_f64(),
        found.report.evaluations,
        if found.report.stopped_by_time_limit {
            ", stopped by --time-limit"
        } else {
            ""
        }
    ));
    if let Some(path) = &args.output {
        let doc = pipeweave_export::json_text(&found.plan, None)
            .map_err(|d| Failure::from_diagnostics(vec![d]))?;
        output::emit_document(Some(path), &doc)?;
    }
    Ok(())
}
