//! The arguments several commands share, parsed once into typed values: which plan or schedules,
//! their parameters (`--set NAME=VALUE` as settings), the costs (`--costs KEY=VALUE,...` as
//! uniform costs, or `--spec` with the flags of the one rule by which it meets a plan), and the
//! window of time a drawing shows (`--from`, `--to`). `--over` is read in `over.rs`.
//!
//! A value parser's error is an [`ArgError`]: `main` prints it as `error: ...` and exits with 2,
//! like every other usage error of ours.

use clap::{Args, ValueEnum};
use pipeweave_app::{CostsArg, TimeWindow};
use pipeweave_eval::{Metric, SpecRule, Split};
use pipeweave_export::PlanFormat;
use pipeweave_sim::UniformCosts;
use pipeweave_source::{Params, Setting};
use std::fmt;
use std::path::PathBuf;

/// A malformed argument value, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgError(pub String);

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ArgError {}

/// The help of `--set`: the one spelling rule of every schedule's values, in the words
/// `pipeweave list` says it.
fn set_help() -> String {
    format!(
        "Any other schedule parameter, repeatable (with several schedules, given to those that \
         declare it); VALUE: {} (`pipeweave list` shows each schedule's)",
        pipeweave_param::SPELLINGS
    )
}

/// Which plan to work on.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// A schedule (a library name, a `.weave` file, a plugin, `synth:loop|v|bidirectional`), or a
    /// plan file (actions text, PyTorch compute-only or compute_comms CSV, or JSON plan; `-`:
    /// standard input)
    #[arg(value_name = "PLAN")]
    pub plan: String,
    #[command(flatten)]
    pub params: ScheduleParams,
}

/// The parameters a schedule is built with, declared once for every command that builds one
/// (`validate`, `simulate`, `show`, `convert`, `export` on one PLAN; `compare`, `render`, `sweep`,
/// `report` on several).
#[derive(Debug, Clone, Args)]
pub struct ScheduleParams {
    /// Ranks P, for schedules, 1 to 65536 (default with a spec: its `parallelism.pp`)
    #[arg(short = 'p', long = "ranks", value_name = "P", value_parser = parse_ranks)]
    pub ranks: Option<u32>,
    /// Micro-batches M, for schedules (default with a spec: its `training.microbatches`)
    #[arg(short = 'm', long = "microbatches", value_name = "M", value_parser = parse_microbatches)]
    pub microbatches: Option<u32>,
    /// Stages per rank v, for the schedules that take it
    #[arg(short = 'v', long = "stages-per-rank", value_name = "V", value_parser = parse_stages_per_rank)]
    pub stages_per_rank: Option<u32>,
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = parse_setting, help = set_help())]
    pub set: Vec<Setting>,
    /// Pipelines in an actions file (of equal length; stage q of each computes the same model part;
    /// default: as many as the file's micro-batches show)
    #[arg(long, value_name = "K", value_parser = parse_pipelines)]
    pub pipelines: Option<u32>,
    /// How to read a plan file (default: a `.json` file is a JSON plan, other files are told apart
    /// by their text)
    #[arg(long = "plan-format", value_enum, value_name = "FORMAT")]
    pub plan_format: Option<PlanFormatArg>,
    /// The evaluation step: the plan's forwards only, in its order (backwards and weight gradients
    /// dropped, an overlapped F&B runs its forward), as DeepSeek's DualPipe steps under no grad
    #[arg(long = "forward-only")]
    pub forward_only: bool,
    /// A directory to search for plugins first (repeatable; then PIPEWEAVE_PLUGIN_PATH, then
    /// next to the executable)
    #[arg(long = "plugin-dir", value_name = "DIR")]
    pub plugin_dirs: Vec<PathBuf>,
    /// A folder of `.weave` schedules, each named by its file name (repeatable; searched before
    /// PIPEWEAVE_SCHEDULE_PATH; a library schedule's name comes first)
    #[arg(long = "schedule-dir", value_name = "DIR")]
    pub schedule_dirs: Vec<PathBuf>,
}

/// Where schedules are found besides the library, for the commands that look at all of them
/// (`list`, `check`, `recommend`).
#[derive(Debug, Clone, Default, Args)]
pub struct Dirs {
    /// A directory to search for plugins first (repeatable; then PIPEWEAVE_PLUGIN_PATH, then
    /// next to the executable)
    #[arg(long = "plugin-dir", value_name = "DIR")]
    pub plugin_dirs: Vec<PathBuf>,
    /// A folder of `.weave` schedules, each named by its file name (repeatable; searched before
    /// PIPEWEAVE_SCHEDULE_PATH; a library schedule's name comes first)
    #[arg(long = "schedule-dir", value_name = "DIR")]
    pub schedule_dirs: Vec<PathBuf>,
}

impl Dirs {
    /// The folders of `list`, `check` and `recommend`, as the host takes them.
    pub fn folders(&self) -> (Vec<PathBuf>, Vec<PathBuf>) {
        (self.plugin_dirs.clone(), self.schedule_dirs.clone())
    }
}

impl ScheduleParams {
    /// The folders the schedules are looked up in, as the host takes them.
    pub fn folders(&self) -> (Vec<PathBuf>, Vec<PathBuf>) {
        (self.plugin_dirs.clone(), self.schedule_dirs.clone())
    }

    /// The parameters as the resolver takes them.
    pub fn params(&self) -> Params {
        Params {
            ranks: self.ranks,
            microbatches: self.microbatches,
            stages_per_rank: self.stages_per_rank,
            settings: self.set.clone(),
            pipelines: self.pipelines,
            format: self.plan_format.map(PlanFormat::from),
            forward_only: self.forward_only,
        }
    }
}

/// The forms of a plan file `--plan-format` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormatArg {
    /// The actions text, with --pipelines pipelines
    Actions,
    /// PyTorch's compute-only CSV (one pipeline)
    Pytorch,
    /// PyTorch's compute_comms CSV: its compute cells are the plan, its communication is checked
    /// against the plan's lowering
    PytorchComms,
    /// The versioned JSON plan
    Json,
}

impl From<PlanFormatArg> for PlanFormat {
    fn from(f: PlanFormatArg) -> PlanFormat {
        match f {
            PlanFormatArg::Actions => PlanFormat::Actions,
            PlanFormatArg::Pytorch => PlanFormat::Pytorch,
            PlanFormatArg::PytorchComms => PlanFormat::PytorchComms,
            PlanFormatArg::Json => PlanFormat::Json,
        }
    }
}

/// How a cluster spec meets the plans, the one rule of every command that takes `--spec`.
#[derive(Debug, Clone, Args)]
pub struct SpecArgs {
    /// A cluster spec: a TOML file (`-`: standard input), a shipped spec's name, or `default` (what
    /// compare uses without it); its `parallelism.pp` and `training.microbatches` are the defaults
    /// of -p and -m, and it is fitted to each plan's shape (P, M, the layers cut into the plan's
    /// stages), as a note says
    #[arg(long = "spec", id = "spec", value_name = "FILE|NAME")]
    pub name: Option<String>,
    /// Refuse a plan whose shape is not the spec's (P, stages per rank, M), pointing at the spec's
    /// keys, instead of fitting the spec to it
    #[arg(long, conflicts_with_all = ["keep_dp", "global_batch"])]
    pub strict_spec: bool,
    /// Where P is not the spec's, keep its data parallelism and let the GPU count follow (by
    /// default the GPUs stay and the data parallelism follows P)
    #[arg(long)]
    pub keep_dp: bool,
    /// Keep the spec's global batch: the micro-batch size follows M, and M follows P where -m
    /// leaves it out (by default the micro-batch size stays and the global batch follows)
    #[arg(long)]
    pub global_batch: bool,
    /// How the layers are split over the plan's parts: `auto` searches the split (the fastest
    /// that fits in memory, never worse than the even one), `even`, or layers per part
    /// `A,B,C,…` (the first part also holds the embedding, the last the head); by default the
    /// plan file's own split, else the spec's `layers_per_stage`, else even
    #[arg(long, value_name = "auto|even|A,B,C,…", value_parser = parse_split)]
    pub split: Option<Split>,
    /// Each part's activation recomputation: `none`, `selective` or `full` for every part, or one
    /// per part `full,selective,none,…`; by default the spec's `training.recompute`, chosen per
    /// part with the split under `--split auto`
    #[arg(long, value_name = "none|selective|full|A,B,C,…", value_parser = parse_recompute)]
    pub recompute: Option<PerPart>,
}

/// `--recompute`'s settings (one, or one per part).
#[derive(Debug, Clone)]
pub struct PerPart(pub Vec<pipeweave_eval::Recompute>);

fn parse_recompute(text: &str) -> Result<PerPart, String> {
    pipeweave_eval::parse_recompute(text).map(PerPart)
}

fn parse_split(text: &str) -> Result<Split, String> {
    Split::parse(text)
}

impl SpecArgs {
    /// The rule the flags give.
    pub fn rule(&self) -> SpecRule {
        SpecRule {
            strict: self.strict_spec,
            keep_dp: self.keep_dp,
            global_batch: self.global_batch,
            split: self.split.clone().unwrap_or_default(),
            recompute: self.recompute.clone().map(|r| r.0),
        }
    }
}

/// Durations used by the simulator: uniform costs, or a cluster spec.
#[derive(Debug, Args)]
pub struct CostArgs {
    /// Uniform costs as KEY=VALUE pairs: F, B, I, W, pair (an overlapped F&B), transfer; default
    /// F=1,I=1,W=1,B=I+W, pair=F+B, transfer=0
    #[arg(
        long,
        value_name = "F=..,B=..,I=..,W=..,pair=..,transfer=..",
        value_parser = parse_costs,
        conflicts_with = "spec"
    )]
    pub costs: Option<UniformCosts>,
    /// Costs measured in a profiled run: the file `pipeweave calibrate` writes (times in seconds)
    #[arg(long, value_name = "FILE", conflicts_with_all = ["spec", "costs"])]
    pub costs_from: Option<String>,
    #[command(flatten)]
    pub spec: SpecArgs,
}

impl CostArgs {
    /// The costs as the application layer takes them.
    pub fn costs(&self) -> CostsArg {
        CostsArg {
            uniform: self.costs,
            spec: self.spec.name.clone(),
            rule: self.spec.rule(),
            costs_from: self.costs_from.clone(),
        }
    }
}

/// Several schedules built with the same parameters.
#[derive(Debug, Args)]
pub struct ManyArgs {
    /// Plan files, library schedules, `.weave` files or plugins, drawn in this order
    #[arg(value_name = "SCHEDULE", required = true)]
    pub schedules: Vec<String>,
    #[command(flatten)]
    pub costs: CostArgs,
    #[command(flatten)]
    pub params: ScheduleParams,
}

/// The window of time `render` and `report` draw.
#[derive(Debug, Clone, Copy, Args)]
pub struct TimeWindowArgs {
    /// Start the timelines at this time (units, or seconds with --spec); they are drawn larger
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub from: Option<f64>,
    /// End the timelines at this time (units, or seconds with --spec)
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub to: Option<f64>,
}

impl TimeWindowArgs {
    /// The window as the application layer takes it.
    pub fn window(&self) -> TimeWindow {
        TimeWindow {
            from: self.from,
            to: self.to,
        }
    }
}

/// A time for `--from` and `--to`: a finite number, at least 0.
pub fn parse_time(text: &str) -> Result<f64, ArgError> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|t| t.is_finite() && *t >= 0.0)
        .ok_or_else(|| ArgError(format!("`{text}` is not a time (a number ≥ 0)")))
}

/// What `simulate` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

/// A plan's written forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConvertTo {
    /// The actions text format (PyTorch's compute-only CSV for one pipeline)
    Actions,
    /// The versioned JSON plan
    Json,
}

/// What a sweep measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MetricArg {
    /// Share of rank-time spent idle
    Bubble,
    /// The step time (units; with --spec seconds, data-parallel sync and optimizer included)
    StepTime,
}

impl From<MetricArg> for Metric {
    fn from(m: MetricArg) -> Metric {
        match m {
            MetricArg::Bubble => Metric::Bubble,
            MetricArg::StepTime => Metric::StepTime,
        }
    }
}

/// A whole number from 1 to `max` for `flag`, or why not (`limit`: what the maximum is).
fn whole(text: &str, flag: &str, what: &str, max: u32, limit: &str) -> Result<u32, ArgError> {
    let n: u64 = text.trim().parse().map_err(|_| {
        ArgError(format!(
            "{flag} {text}: the number of {what} is a whole number of at least 1"
        ))
    })?;
    if n == 0 {
        return Err(ArgError(format!(
            "{flag} 0: the number of {what} is a whole number of at least 1"
        )));
    }
    u32::try_from(n)
        .ok()
        .filter(|n| *n <= max)
        .ok_or_else(|| ArgError(format!("{flag} {n}: {limit}")))
}

/// `-p`: 1 to [`pipeweave_plan::MAX_RANKS`].
pub fn parse_ranks(text: &str) -> Result<u32, ArgError> {
    let max = pipeweave_plan::MAX_RANKS;
    whole(
        text,
        "--ranks",
        "ranks",
        max,
        &format!("a plan has at most {max} ranks"),
    )
}

/// `-m`: at least 1.
pub fn parse_microbatches(text: &str) -> Result<u32, ArgError> {
    whole(
        text,
        "--microbatches",
        "micro-batches",
        u32::MAX,
        "too many micro-batches",
    )
}

/// `-v`: at least 1.
fn parse_stages_per_rank(text: &str) -> Result<u32, ArgError> {
    whole(
        text,
        "--stages-per-rank",
        "stages per rank",
        u32::MAX,
        "too many stages per rank",
    )
}

/// `--pipelines`: at least 1.
fn parse_pipelines(text: &str) -> Result<u32, ArgError> {
    whole(
        text,
        "--pipelines",
        "pipelines",
        u32::MAX,
        "too many pipelines",
    )
}

/// `--set NAME=VALUE`.
fn parse_setting(text: &str) -> Result<Setting, ArgError> {
    text.parse()
        .map_err(|e: pipeweave_source::SettingError| ArgError(e.to_string()))
}

/// `--costs F=1,B=2,...`: uniform costs (`pipeweave_sim::UniformCosts::parse`, the one reader
/// the command line and the Python binding share).
pub fn parse_costs(text: &str) -> Result<UniformCosts, ArgError> {
    UniformCosts::parse(text, "--costs").map_err(ArgError)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        assert_eq!(parse_ranks("65536"), Ok(65536));
        let e = |r: Result<u32, ArgError>| r.expect_err("refused").0;
        assert_eq!(
            e(parse_ranks("0")),
            "--ranks 0: the number of ranks is a whole number of at least 1"
        );
        assert_eq!(
            e(parse_ranks("65537")),
            "--ranks 65537: a plan has at most 65536 ranks"
        );
        assert_eq!(
            e(parse_ranks("4294967296")),
            "--ranks 4294967296: a plan has at most 65536 ranks"
        );
        assert_eq!(
            e(parse_ranks("-1")),
            "--ranks -1: the number of ranks is a whole number of at least 1"
        );
        assert_eq!(
            e(parse_microbatches("0")),
            "--microbatches 0: the number of micro-batches is a whole number of at least 1"
        );
        assert_eq!(parse_pipelines("2"), Ok(2));
        assert!(parse_stages_per_rank("0").is_err());
    }

    #[test]
    fn costs() {
        let c = parse_costs("F=1,I=1.5,W=0.5,transfer=0.25").expect("parses");
        assert_eq!((c.stage.b, c.transfer, c.pair), (2.0, 0.25, None));
        assert_eq!(
            parse_costs("F=x").expect_err("not a number").0,
            "--costs: `x` is not a duration (a number ≥ 0)"
        );
        assert!(parse_costs("Q=1").expect_err("unknown").0.contains("`Q`"));
        assert_eq!(
            parse_costs("F=1,f=2").expect_err("twice").0,
            "--costs: F is given twice"
        );
        // An overlapped pair runs both halves: never shorter than the longer one, so that no
        // pair (its backward whole, or as I: pair − B + I) lasts less than nothing.
        assert_eq!(
            parse_costs("pair=0.5").expect_err("too short").0,
            "--costs: pair=0.5 is shorter than the longer half of an overlapped pair (F=1, B=2): a pair runs both, so it takes at least 2"
        );
        assert_eq!(
            parse_costs("F=1,B=2.4,I=0.3,pair=2.4").unwrap().pair,
            Some(2.4)
        );
        assert!(parse_costs("F").expect_err("no =").0.contains("KEY=VALUE"));
        assert_eq!(
            parse_costs("F=1e308,B=1e308").expect_err("too large").0,
            "--costs: F=1e308 is too large (at most 1e12, so that every figure of a step stays \
             a finite number)"
        );
        assert!(
            parse_costs("B=1e13")
                .expect_err("too large")
                .0
                .contains("B=1e13")
        );
        assert!(
            parse_costs("F=0,B=1")
                .expect_err("no forward")
                .0
                .contains("F must be")
        );
        assert!(parse_costs("F=1e12,transfer=1e12").is_ok());
    }
}
