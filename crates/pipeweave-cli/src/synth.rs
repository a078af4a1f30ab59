//! `pipeweave synthesize`: the best order found for a placement, a memory limit and the costs of a
//! spec (or `--costs`, or unit costs), against the best library schedule and plugin at the same
//! placement and limit.

use crate::args::CostArgs;
use crate::output::{self, emit, note};
use crate::planner::{Schedules, named_schedules};
use crate::session::Session;
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use pipeweave_check::ValidPlan;
use pipeweave_eval::{
    LibraryPlan, SpecRule, SynthesisReport, TimeUnit, activation_budget, best_within, fit_spec,
    library_at_placement, plan_shape,
};
use pipeweave_sim::{CostModel, UnitCosts};
use pipeweave_source::{Catalog, Failure, LoadedSpec};
use pipeweave_spec::CostTable;
use pipeweave_synth::{Options, Placement, Problem, exact_applies};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlacementArg {
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
    #[arg(long, value_enum, default_value_t = PlacementArg::Loop)]
    pub placement: PlacementArg,
    /// The memory per GPU a plan may use, in GiB (needs --spec; default: the spec's GPU memory
    /// less its headroom)
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
    #[arg(long, value_enum, default_value_t = crate::args::Format::Text)]
    pub format: crate::args::Format,
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
    pub dirs: crate::args::Dirs,
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

/// The costs a search runs on, and what they are called in the report.
enum Costs {
    Unit,
    Uniform(pipeweave_sim::UniformCosts),
    Spec(Box<pipeweave_spec::Spec>, CostTable),
}

impl Costs {
    fn model(&self) -> &dyn CostModel {
        match self {
            Costs::Unit => &UnitCosts,
            Costs::Uniform(c) => c,
            Costs::Spec(_, t) => t,
        }
    }

    /// What the report calls them, and the unit of their times.
    fn named(&self) -> (String, TimeUnit) {
        match self {
            Costs::Unit => ("unit".to_owned(), TimeUnit::Units),
            Costs::Uniform(_) => ("uniform".to_owned(), TimeUnit::Units),
            Costs::Spec(spec, _) => (spec.name.clone(), TimeUnit::Seconds),
        }
    }
}

fn placement(args: &SynthArgs) -> Result<Placement, Failure> {
    match (args.placement, args.stages_per_rank) {
        (PlacementArg::Loop, v) => Ok(Placement::Loop { v }),
        (PlacementArg::V, 1) => Ok(Placement::V),
        (PlacementArg::Bidirectional, 1) => Ok(Placement::Bidirectional),
        (_, v) => Err(Failure::usage(format!(
            "--stages-per-rank {v} is for the loop placement; the V has two stages per rank and the bidirectional placement one per pipeline"
        ))),
    }
}

/// The default limit without a spec: 1F1B's memory in this placement's units.
fn default_activations(placement: Placement, p: u32) -> u32 {
    match placement {
        Placement::Loop { v } => p * v,
        Placement::V => 2 * p,
        Placement::Bidirectional => p + 1,
    }
}

/// What a search runs on: its costs and its memory budget.
struct Budget {
    costs: Costs,
    /// Activation units per rank.
    limits: Vec<u32>,
    /// Units per activation of each stage (empty: 1 each).
    weights: Vec<u32>,
    /// Bytes per unit, on a spec.
    unit_bytes: Option<f64>,
    /// Where the limits come from, in words.
    words: String,
}

/// The costs and memory budget of `placement` on `spec` (fitted to the placement's plan
/// `skeleton`, as a note says), or without one: `--activations`, `--memory-limit`, the spec's
/// memory, or 1F1B's memory.
fn budget(
    args: &SynthArgs,
    placement: Placement,
    p: u32,
    spec: Option<LoadedSpec>,
    skeleton: &ValidPlan,
) -> Result<Budget, Failure> {
    let Some(loaded) = spec else {
        let k = args
            .activations
            .unwrap_or_else(|| default_activations(placement, p));
        let costs = match args.costs.costs {
            Some(c) => Costs::Uniform(c),
            None => Costs::Unit,
        };
        let words = if args.activations.is_some() {
            "--activations"
        } else {
            "1F1B's memory, the default without a spec"
        };
        return Ok(Budget {
            costs,
            limits: vec![k; p as usize],
            weights: Vec::new(),
            unit_bytes: None,
            words: words.to_owned(),
        });
    };
    let (fitted, changes) = fit_spec(&loaded.spec, skeleton)
        .map_err(|reason| Failure::invalid(format!("spec {}: {reason}", loaded.spec.name)))?;
    if !changes.is_empty() {
        note(&format!(
            "spec {} fitted to the {} placement: {}",
            loaded.spec.name,
            placement.name(),
            changes.join("; ")
        ));
    }
    let table = CostTable::new(&fitted, skeleton).map_err(Failure::from_diagnostics)?;
    if let Some(k) = args.activations {
        return Ok(Budget {
            costs: Costs::Spec(Box::new(fitted), table),
            limits: vec![k; p as usize],
            weights: Vec::new(),
            unit_bytes: None,
            words: "--activations".to_owned(),
        });
    }
    let bytes = match args.memory_limit {
        Some(g) if g.is_finite() && g > 0.0 => g * f64::from(1u32 << 30),
        Some(g) => {
            return Err(Failure::usage(format!(
                "--memory-limit {g} is not a size in GiB above 0"
            )));
        }
        None => fitted.memory_limit_bytes(),
    };
    let gib = bytes / f64::from(1u32 << 30);
    let budget = activation_budget(&fitted, &table, skeleton, bytes).map_err(|r| {
        Failure::invalid(format!(
            "rank {r} has no room for any activation within {gib:.1} GiB on spec {}: its weights, gradients, optimizer state and buffers take it all",
            fitted.name
        ))
    })?;
    Ok(Budget {
        costs: Costs::Spec(Box::new(fitted), table),
        limits: budget.limits,
        weights: budget.weights,
        unit_bytes: Some(budget.unit_bytes),
        words: format!("{gib:.1} GiB per GPU with everything else the spec keeps there"),
    })
}

/// Every library schedule and plugin that places its stages as `skeleton` does, built through the
/// catalog at its P, M and `v` and timed on `costs` (the catalog's errors are warnings).
fn library(
    session: &mut Session,
    skeleton: &ValidPlan,
    v: u32,
    weights: &[u32],
    costs: &Costs,
) -> Vec<(LibraryPlan, ValidPlan)> {
    let catalog = Catalog::read(&mut session.host);
    for e in &catalog.errors {
        output::warning(e);
    }
    let named = named_schedules(&catalog);
    let names: Vec<(String, bool)> = named
        .iter()
        .map(|n| (n.shown.clone(), n.declared.takes("v")))
        .collect();
    let mut planner = Schedules::new(session, &named);
    match library_at_placement(&names, &mut planner, skeleton, v, weights, costs.model()) {
        Ok(l) => l,
        Err(never) => match never {},
    }
}

/// A bar of the plans tried and the best so far, on a terminal only.
fn progress_bar(evaluations: u64) -> Option<ProgressBar> {
    std::io::stderr().is_terminal().then(|| {
        let bar = ProgressBar::new(evaluations);
        if let Ok(style) = ProgressStyle::with_template("{bar:30} {pos}/{len} plans  {msg}") {
            bar.set_style(style);
        }
        bar
    })
}

/// `pipeweave synthesize`.
pub fn run(args: &SynthArgs, session: &mut Session) -> Result<(), Failure> {
    let placement = placement(args)?;
    session.host.with_plugin_dirs(&args.dirs.plugin_dirs);
    session.host.with_schedule_dirs(&args.dirs.schedule_dirs);
    let spec = match &args.costs.spec.name {
        Some(name) => Some(session.spec(Some(name))?),
        None => None,
    };
    let (p, m) = match (&spec, args.ranks, args.microbatches) {
        (Some(s), ranks, mbs) => plan_shape(&s.spec, SpecRule::default(), ranks, mbs)
            .map_err(|reason| Failure::invalid(format!("spec {}: {reason}", s.spec.name)))?,
        (None, Some(p), Some(m)) => (p, m),
        (None, _, _) => {
            return Err(Failure::usage(
                "synthesize needs -p and -m, or a --spec that gives them",
            ));
        }
    };
    let split = !args.no_weight_split;
    let pairs = !args.no_pairs && placement == Placement::Bidirectional;
    let problem = |limits: Vec<u32>, weights: Vec<u32>| Problem {
        ranks: p,
        microbatches: m,
        placement,
        weight_split: split,
        pairs,
        limits,
        weights,
    };
    let started = Instant::now();
    // A plan of the placement: what the spec is fitted to and priced on (its costs and memory
    // depend on the placement, not on the order).
    let skeleton = pipeweave_synth::placement_plan(&problem(Vec::new(), Vec::new()))
        .map_err(|e| Failure::invalid(e.to_string()))?;
    let Budget {
        costs,
        limits,
        weights,
        unit_bytes,
        words: limit_words,
    } = budget(args, placement, p, spec, &skeleton)?;
    let library = library(session, &skeleton, args.stages_per_rank, &weights, &costs);
    let (limits, limit_words) = if args.library_memory {
        let best = best_within(&library, &limits).ok_or_else(|| {
            Failure::invalid(format!(
                "--library-memory: no library schedule or plugin places its stages as the {} placement does within the limit ({limit_words})",
                placement.name()
            ))
        })?;
        (
            best.0.peaks.clone(),
            format!("what {} holds, within {limit_words}", best.0.schedule),
        )
    } else {
        (limits, limit_words)
    };
    let problem = problem(limits.clone(), weights);
    let options = Options {
        seed: args.seed,
        evaluations: args.evaluations,
        exact_nodes: if exact_applies(&problem) {
            args.exact_nodes
        } else {
            0
        },
        ..Options::default()
    };
    let bar = progress_bar(args.evaluations);
    let mut report = |progress: pipeweave_synth::Progress| {
        if let Some(bar) = &bar {
            bar.set_position(progress.evaluations);
            bar.set_message(format!("best {:.6}", progress.best.makespan));
        }
        started.elapsed() < args.time_limit
    };
    // The local search may start from the fastest library plan within the limits.
    let best_library = best_within(&library, &limits);
    let starts: Vec<&pipeweave_plan::Plan> =
        best_library.map(|(_, plan)| &**plan).into_iter().collect();
    let result =
        pipeweave_synth::synthesize_from(&problem, costs.model(), &options, &starts, &mut report);
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let found = result.map_err(|e| Failure::invalid(e.to_string()))?;
    let elapsed = started.elapsed();
    let (costs_name, unit) = costs.named();
    let report = SynthesisReport::new(
        &problem,
        &found,
        costs_name,
        unit,
        limit_words,
        unit_bytes,
        best_library.map(|(l, _)| l.clone()),
    );
    crate::output::finite("synthesize", pipeweave_eval::non_finite(&report))?;
    let text = match args.format {
        crate::args::Format::Text => pipeweave_report::synthesis_text(&report),
        crate::args::Format::Json => pipeweave_report::synthesis_json(&report),
    };
    let to_stdout = args.output.as_deref().is_some_and(output::is_stdout);
    if to_stdout {
        output::warn(&text);
    } else {
        emit(None, &text)?;
    }
    note(&format!(
        "the search took {:.3} s ({} plans tried{})",
        elapsed.as_secs_f64(),
        found.evaluations,
        if found.stopped {
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
