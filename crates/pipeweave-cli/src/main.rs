//! The `pipeweave` command: arguments, files, rendering and exit codes over the library crates.
//!
//! Exit codes: 0 success, 1 invalid input or plan, 2 usage error.

#![allow(clippy::print_stdout, clippy::print_stderr)]

mod compare;
mod draw;
mod export;
mod load;
mod params;
mod plugins;
mod recommend;
mod render;
mod report;
mod schedule;
mod specs;
mod sweep;

use clap::{Args, Parser, Subcommand, ValueEnum};
use params::ScheduleParams;
use pipeweave_diagnostics::Diagnostic;
use pipeweave_sim::{CostModel, UniformCosts};
use render::Sources;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// Compile, check, simulate and export pipeline-parallel training schedules.
#[derive(Debug, Parser)]
#[command(name = "pipeweave", version, about, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check a plan: counts, order, placement and deadlock freedom (exit 1 when invalid)
    Validate {
        #[command(flatten)]
        plan: PlanArgs,
    },
    /// Simulate one training step and report makespan, bubbles and memory
    Simulate {
        #[command(flatten)]
        plan: PlanArgs,
        #[command(flatten)]
        costs: CostArgs,
        /// Output format
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Draw the simulated timeline as text, one row per rank
    Show {
        #[command(flatten)]
        plan: PlanArgs,
        #[command(flatten)]
        costs: CostArgs,
    },
    /// List the schedules available by name, with their origin and parameters
    List {
        /// A directory to search for plugins first (repeatable)
        #[arg(long = "plugin-dir", value_name = "DIR")]
        plugin_dirs: Vec<PathBuf>,
    },
    /// Check a schedule file (syntax and names) without compiling a plan
    Check {
        /// A `.weave` file or a library schedule name
        #[arg(value_name = "SCHEDULE")]
        file: String,
    },
    /// Compile a schedule for given parameters, validate it and write the plan
    Compile {
        #[command(flatten)]
        plan: PlanArgs,
        /// Target format
        #[arg(long, value_enum, default_value_t = ConvertTo::Actions)]
        to: ConvertTo,
        /// Write to this file instead of standard output
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Draw simulated timelines as SVG, several schedules stacked on one time scale
    Render {
        #[command(flatten)]
        many: draw::ManyArgs,
        /// Write the SVG to this file (`-`: standard output)
        #[arg(long, value_name = "FILE")]
        svg: PathBuf,
        /// Add a lane under every rank with its point-to-point sends
        #[arg(long)]
        comms: bool,
    },
    /// Tabulate and chart the bubble fraction or step time of schedules against M or P
    Sweep {
        #[command(flatten)]
        many: draw::ManyArgs,
        /// What to vary: microbatches=8..128 or ranks=2..16, with a step (8..128:8) or a list
        /// (8,16,32)
        #[arg(long, value_name = "NAME=VALUES")]
        over: String,
        /// What to measure
        #[arg(long, value_enum, default_value_t = sweep::MetricArg::Bubble)]
        metric: sweep::MetricArg,
        /// Also draw the sweep as a line chart in this SVG file
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
        /// Format of the table on standard output
        #[arg(long, value_enum, default_value_t = sweep::TableFormat::Text)]
        format: sweep::TableFormat,
    },
    /// Write one self-contained HTML page about schedules: comparison, timelines and a sweep
    Report {
        #[command(flatten)]
        many: draw::ManyArgs,
        /// The HTML file to write
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// The sweep to chart (default: micro-batches from P to 16P)
        #[arg(long, value_name = "NAME=VALUES")]
        over: Option<String>,
        /// What the sweep measures
        #[arg(long, value_enum, default_value_t = sweep::MetricArg::Bubble)]
        metric: sweep::MetricArg,
        /// Add communication lanes to the timelines
        #[arg(long)]
        comms: bool,
    },
    /// Compare schedules on a cluster spec: step time, bubbles, idle, memory, communication,
    /// throughput and GPU-hours, and what each schedule is and requires
    Compare(compare::CompareArgs),
    /// Search pipeline degree, schedule, micro-batches and stages per rank on a spec and explain
    /// the best plan that fits in memory
    Recommend(recommend::RecommendArgs),
    /// Export a validated plan for a launcher: PyTorch CSVs, the JSON plan, a Chrome trace
    Export {
        #[command(flatten)]
        plan: PlanArgs,
        /// Target format
        #[arg(long, value_enum)]
        to: export::ExportFormat,
        #[command(flatten)]
        costs: CostArgs,
        /// Write to this file instead of standard output
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Write a plan in another format
    Convert {
        #[command(flatten)]
        plan: PlanArgs,
        /// Target format
        #[arg(long, value_enum)]
        to: ConvertTo,
        /// Write to this file instead of standard output
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

/// Which plan to work on.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// A plan file (actions text, PyTorch compute-only CSV, or JSON plan)
    #[arg(value_name = "PLAN")]
    pub plan: String,
    #[command(flatten)]
    pub params: ScheduleParams,
}

/// Durations used by the simulator.
#[derive(Debug, Args)]
pub struct CostArgs {
    /// Uniform costs as KEY=VALUE pairs: F, B, I, W, pair (an overlapped F&B), transfer; default
    /// F=1,I=1,W=1,B=I+W, pair=F+B, transfer=0
    #[arg(long, value_name = "F=..,B=..,I=..,W=..,pair=..,transfer=..")]
    pub costs: Option<String>,
    /// Costs from a cluster spec: a TOML file, a shipped spec's name, or `default`; its
    /// `parallelism.pp` and `training.microbatches` are the defaults of -p and -m
    #[arg(long, value_name = "FILE|NAME", conflicts_with = "costs")]
    pub spec: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ConvertTo {
    /// The actions text format (PyTorch's compute-only CSV for one pipeline)
    Actions,
    /// The versioned JSON plan
    Json,
}

/// Why a command did not succeed.
#[derive(Debug)]
pub enum Failure {
    /// Bad input or an invalid plan, already in words (exit 1).
    Invalid(String),
    /// Diagnostics to render (exit 1).
    Diagnostics(Vec<Diagnostic>),
    /// The command line itself is wrong (exit 2).
    Usage(String),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut sources = Sources::default();
    match run(cli, &mut sources) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Invalid(text)) => {
            eprint!("{text}");
            ExitCode::from(1)
        }
        Err(Failure::Diagnostics(diags)) => {
            let mut err = std::io::stderr().lock();
            for d in &diags {
                let _ = write!(err, "{}", sources.render(d));
            }
            let errors = diags.iter().filter(|d| d.is_error()).count();
            if errors > 1 {
                let _ = writeln!(err, "error: {errors} problems found");
            }
            ExitCode::from(1)
        }
        Err(Failure::Usage(text)) => {
            eprintln!("error: {text}");
            ExitCode::from(2)
        }
    }
}

pub fn parse_costs(args: &CostArgs) -> Result<UniformCosts, Failure> {
    let mut c = UniformCosts::default();
    let Some(spec) = &args.costs else {
        return Ok(c);
    };
    let (mut b, mut pair) = (None, None);
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((k, v)) = item.split_once('=') else {
            return Err(Failure::Usage(format!(
                "--costs expects KEY=VALUE pairs, found `{item}`"
            )));
        };
        let value: f64 = v
            .trim()
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| {
                Failure::Usage(format!(
                    "--costs: `{}` is not a duration (a number ≥ 0)",
                    v.trim()
                ))
            })?;
        match k.trim() {
            "F" | "f" => c.stage.f = value,
            "I" | "i" => c.stage.i = value,
            "W" | "w" => c.stage.w = value,
            "B" | "b" => b = Some(value),
            "pair" | "F&B" => pair = Some(value),
            "transfer" => c.transfer = value,
            other => {
                return Err(Failure::Usage(format!(
                    "--costs: unknown key `{other}`; expected F, B, I, W, pair or transfer"
                )));
            }
        }
    }
    c.stage.b = b.unwrap_or(c.stage.i + c.stage.w);
    c.pair = pair;
    Ok(c)
}

fn emit(output: Option<&PathBuf>, text: &str) -> Result<(), Failure> {
    match output {
        Some(path) => std::fs::write(path, text).map_err(|e| {
            Failure::Invalid(format!("error: cannot write `{}`: {e}\n", path.display()))
        }),
        None => {
            let mut out = std::io::stdout().lock();
            // A closed pipe (e.g. `| head`) is not an error of ours.
            let _ = out.write_all(text.as_bytes());
            Ok(())
        }
    }
}

/// Loads and validates: every plan goes through the validator before anything uses it.
pub fn load_valid(args: &PlanArgs, sources: &mut Sources) -> Result<load::Loaded, Failure> {
    let loaded = load::load(args, sources)?;
    let problems = pipeweave_check::validate(&loaded.plan);
    if problems.is_empty() {
        Ok(loaded)
    } else {
        Err(Failure::Diagnostics(load::problem_diagnostics(
            &loaded, &problems,
        )))
    }
}

fn describe(plan: &pipeweave_plan::Plan) -> String {
    let k = plan.pipelines().len();
    format!(
        "{} ranks, {} pipeline{} × {} stages, {} micro-batches, {} model cop{}",
        plan.ranks(),
        k,
        if k == 1 { "" } else { "s" },
        plan.stages_per_pipeline(),
        plan.num_microbatches(),
        plan.model_copies(),
        if plan.model_copies() == 1 { "y" } else { "ies" },
    )
}

pub fn simulate(
    loaded: &load::Loaded,
    costs: &dyn CostModel,
) -> Result<pipeweave_sim::Timeline, Failure> {
    pipeweave_sim::simulate(&loaded.plan, costs)
        .map_err(|e| Failure::Invalid(format!("error: {}: {e}\n", loaded.name)))
}

fn run(cli: Cli, sources: &mut Sources) -> Result<(), Failure> {
    match cli.command {
        Command::Validate { plan } => {
            let loaded = load_valid(&plan, sources)?;
            let ops = loaded.plan.num_ops();
            emit(
                None,
                &format!(
                    "{}: valid and deadlock free ({}, {ops} compute operations)\n",
                    loaded.name,
                    describe(&loaded.plan)
                ),
            )
        }
        Command::Simulate {
            mut plan,
            costs,
            format,
        } => {
            if let Some(spec) = &costs.spec {
                let spec = specs::load(spec, sources)?;
                let (loaded, t, report) = specs::evaluate(&mut plan, &spec, sources)?;
                return emit(
                    None,
                    &match format {
                        Format::Text => specs::simulate_text(&loaded, &t, &report),
                        Format::Json => specs::simulate_json(&loaded, &t, &report),
                    },
                );
            }
            let costs = parse_costs(&costs)?;
            let loaded = load_valid(&plan, sources)?;
            let t = simulate(&loaded, &costs)?;
            let text = match format {
                Format::Text => simulate_text(&loaded, &t),
                Format::Json => simulate_json(&loaded, &t),
            };
            emit(None, &text)
        }
        Command::Show { mut plan, costs } => {
            if let Some(spec) = &costs.spec {
                let spec = specs::load(spec, sources)?;
                let (loaded, t, report) = specs::evaluate(&mut plan, &spec, sources)?;
                let head = format!(
                    "spec {}: step time {}, times in seconds\n",
                    report.spec,
                    pipeweave_report::seconds(report.step_time_s)
                );
                return emit(
                    None,
                    &(head + &pipeweave_report::text_timeline(&loaded.plan, &t)),
                );
            }
            let costs = parse_costs(&costs)?;
            let loaded = load_valid(&plan, sources)?;
            let t = simulate(&loaded, &costs)?;
            emit(None, &pipeweave_report::text_timeline(&loaded.plan, &t))
        }
        Command::Check { file } => emit(None, &schedule::check(&file, sources)?),
        Command::List { plugin_dirs } => {
            let (text, warnings) = plugins::list_text(&plugin_dirs);
            let text = schedule::list_text() + &text;
            for w in warnings {
                eprintln!("warning: {w}");
            }
            emit(None, &text)
        }
        Command::Render { many, svg, comms } => {
            let summary = draw::render(&many, &svg, comms, sources)?;
            emit(None, &summary)
        }
        Command::Sweep {
            many,
            over,
            metric,
            svg,
            format,
        } => {
            let over = sweep::parse_over(&over)?;
            let costing = draw::Costing::from_arg(many.spec.as_deref(), sources)?;
            let result = sweep::sweep(&many, &over, metric.into(), &costing, sources)?;
            if let Some(path) = &svg {
                emit(Some(path), &pipeweave_report::sweep_svg(&result))?;
            }
            emit(None, &sweep::table(&result, format))
        }
        Command::Report {
            many,
            output,
            over,
            metric,
            comms,
        } => {
            let options = report::Options {
                over,
                metric: metric.into(),
                comms,
            };
            let html = report::report(&many, &options, sources)?;
            emit(Some(&output), &html)?;
            emit(None, &format!("wrote {}\n", output.display()))
        }
        Command::Compare(args) => {
            let (text, any) = compare::run(&args, sources)?;
            emit(None, &text)?;
            if any {
                Ok(())
            } else {
                Err(Failure::Invalid(
                    "error: none of the schedules could be simulated\n".into(),
                ))
            }
        }
        Command::Recommend(args) => {
            let (text, warnings) = recommend::run(&args, sources)?;
            for w in warnings {
                eprintln!("warning: {w}");
            }
            emit(None, &text)
        }
        Command::Convert { plan, to, output } | Command::Compile { plan, to, output } => {
            let loaded = load_valid(&plan, sources)?;
            let text = match to {
                ConvertTo::Actions => pipeweave_export::write_actions(&loaded.plan),
                ConvertTo::Json => pipeweave_export::write_json(&loaded.plan, None)
                    .map_err(|d| Failure::Diagnostics(vec![d]))?,
            };
            emit(output.as_ref(), &text)
        }
        Command::Export {
            plan,
            to,
            costs,
            output,
        } => {
            let text = export::run(plan, to, &costs, sources)?;
            emit(output.as_ref(), &text)
        }
    }
}

fn simulate_text(loaded: &load::Loaded, t: &pipeweave_sim::Timeline) -> String {
    use pipeweave_report::format_time as ft;
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(s, "plan             {}", loaded.name);
    let _ = writeln!(s, "shape            {}", describe(&loaded.plan));
    let _ = writeln!(s, "makespan         {}", ft(t.timing.makespan));
    let _ = writeln!(
        s,
        "bubble fraction  {:.4} ({:.2}%)",
        t.bubble_fraction,
        t.bubble_fraction * 100.0
    );
    if t.exposed_comm > 0.0 {
        let _ = writeln!(s, "exposed comm     {}", ft(t.exposed_comm));
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "rank  busy        idle        longest idle  peak activations"
    );
    for (r, m) in t.ranks.iter().enumerate() {
        let _ = writeln!(
            s,
            "{r:<4}  {:<10}  {:<10}  {:<12}  {}",
            ft(m.busy),
            ft(m.idle),
            ft(m.longest_idle),
            m.peak_activations
        );
    }
    s
}

fn simulate_json(loaded: &load::Loaded, t: &pipeweave_sim::Timeline) -> String {
    let ranks: Vec<serde_json::Value> = t
        .ranks
        .iter()
        .enumerate()
        .map(|(r, m)| {
            serde_json::json!({
                "rank": r,
                "busy": m.busy,
                "idle": m.idle,
                "longest_idle": m.longest_idle,
                "peak_activations": m.peak_activations,
                "exposed_comm": m.exposed_comm,
            })
        })
        .collect();
    let v = serde_json::json!({
        "plan": loaded.name,
        "num_ranks": loaded.plan.ranks(),
        "pipelines": loaded.plan.pipelines().len(),
        "stages_per_pipeline": loaded.plan.stages_per_pipeline(),
        "microbatches": loaded.plan.num_microbatches(),
        "model_copies": loaded.plan.model_copies(),
        "makespan": t.timing.makespan,
        "bubble_fraction": t.bubble_fraction,
        "exposed_comm": t.exposed_comm,
        "ranks": ranks,
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}
