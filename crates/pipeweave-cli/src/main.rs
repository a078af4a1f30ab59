//! The `pipeweave` command: the command table, over the library crates.
//!
//! Exit codes: 0 success, 1 invalid input or plan, 2 usage error.

mod args;
mod compare;
mod draw;
mod export;
mod host;
mod list;
mod many;
mod output;
mod over;
mod planner;
mod progress;
mod recommend;
mod report;
mod session;
mod show;
mod single;
mod sweep;
mod synth;

use args::{ArgError, ConvertTo, CostArgs, Format, ManyArgs, MetricArg, PlanArgs, TimeWindowArgs};
use clap::{Parser, Subcommand};
use over::{OverArg, parse_over};
use pipeweave_source::Failure;
use session::Session;
use std::path::PathBuf;
use std::process::ExitCode;

/// Compile, check, simulate and export pipeline-parallel training schedules.
#[derive(Debug, Parser)]
#[command(name = "pipeweave", version, about, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Show at most N diagnostics, then count the rest (0: show all)
    #[arg(
        long,
        global = true,
        value_name = "N",
        default_value_t = pipeweave_diagnostics::DEFAULT_MAX_DIAGNOSTICS
    )]
    max_diagnostics: usize,
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
        #[command(flatten)]
        window: show::WindowArgs,
    },
    /// List the schedules available by name, with their origin and parameters
    List {
        #[command(flatten)]
        dirs: args::Dirs,
    },
    /// Check a schedule file: syntax and names, then its plans compiled and validated for
    /// P = 2…8 and every M up to 2P its requirements allow
    Check {
        /// A `.weave` file (`-`: standard input), or a library or schedule folder schedule's name
        #[arg(value_name = "SCHEDULE")]
        file: String,
        #[command(flatten)]
        dirs: args::Dirs,
    },
    /// Compile a schedule for given parameters, validate it and write the plan
    Compile {
        #[command(flatten)]
        plan: PlanArgs,
        /// Target format
        #[arg(long, value_enum, default_value_t = ConvertTo::Actions)]
        to: ConvertTo,
        /// Write to this file instead of standard output (`-`: standard output)
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Draw simulated timelines as SVG, several schedules stacked on one time scale
    Render {
        #[command(flatten)]
        many: ManyArgs,
        /// Write the SVG to this file (`-`: standard output)
        #[arg(long, value_name = "FILE")]
        svg: PathBuf,
        /// Add a lane under every rank with its point-to-point sends
        #[arg(long)]
        comms: bool,
        #[command(flatten)]
        window: TimeWindowArgs,
    },
    /// Tabulate and chart the bubble fraction or step time of schedules against M, P, v or any
    /// parameter they declare
    Sweep {
        #[command(flatten)]
        many: ManyArgs,
        /// What to vary: microbatches=8..128, ranks=2..16, stages_per_rank=1..4 (or v=), or any
        /// parameter the schedules declare (lag=0..3, weight_split=true,false); a range with a step
        /// (8..128:8), a list (8,16,32) or a mix
        #[arg(long, value_name = "NAME=VALUES", value_parser = parse_over)]
        over: OverArg,
        /// What to measure
        #[arg(long, value_enum, default_value_t = MetricArg::Bubble)]
        metric: MetricArg,
        /// Also draw the sweep as a line chart in this SVG file (the table goes to standard output)
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
        /// Format of the table on standard output
        #[arg(long, value_enum, default_value_t = sweep::TableFormat::Text)]
        format: sweep::TableFormat,
    },
    /// Write one self-contained HTML page about schedules: comparison, timelines and a sweep
    Report {
        #[command(flatten)]
        many: ManyArgs,
        /// The HTML file to write (`-`: standard output)
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// The sweep to chart, as `sweep --over` (default: micro-batches from P to 16P)
        #[arg(long, value_name = "NAME=VALUES", value_parser = parse_over)]
        over: Option<OverArg>,
        /// What the sweep measures
        #[arg(long, value_enum, default_value_t = MetricArg::Bubble)]
        metric: MetricArg,
        /// Add communication lanes to the timelines
        #[arg(long)]
        comms: bool,
        #[command(flatten)]
        window: TimeWindowArgs,
    },
    /// Compare schedules on a cluster spec: step time, bubbles, idle, memory, communication,
    /// throughput and GPU-hours, and what each schedule is and requires
    Compare(compare::CompareArgs),
    /// Search pipeline degree, schedule, micro-batches and stages per rank on a spec and explain
    /// the best plan that fits in memory
    Recommend(recommend::RecommendArgs),
    /// Search for the best order for a placement, a memory limit and a spec's costs (or --costs,
    /// or unit costs): a heuristic, local search, an exact method at P ≤ 4, M ≤ 8
    Synthesize(Box<synth::SynthArgs>),
    /// Export a validated plan for a launcher: PyTorch CSVs, the JSON plan, a Chrome trace
    Export {
        #[command(flatten)]
        plan: PlanArgs,
        /// Target format
        #[arg(long, value_enum)]
        to: export::ExportFormat,
        #[command(flatten)]
        costs: CostArgs,
        /// Write to this file instead of standard output (`-`: standard output)
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
        /// Write to this file instead of standard output (`-`: standard output)
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Serve one plugin library over standard input and output: the worker process pipeweave
    /// runs each plugin in (`host::WORKER_SUBCOMMAND`); not for people
    #[command(name = "__plugin-worker", hide = true)]
    PluginWorker {
        /// The plugin library
        library: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse_from(arguments()) {
        Ok(cli) => cli,
        Err(e) => {
            // Our value parsers' errors read like every other usage error of ours.
            let ours = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<ArgError>());
            match ours {
                Some(ours) => {
                    let usage = Err(Failure::usage(ours.to_string()));
                    let max = pipeweave_diagnostics::DEFAULT_MAX_DIAGNOSTICS;
                    return output::finish(usage, &Default::default(), max);
                }
                None => return clap_exit(&e),
            }
        }
    };
    // The worker process prints nothing of its own and has no session.
    let command = match cli.command {
        Command::PluginWorker { library } => return host::serve_worker(&library),
        command => command,
    };
    let mut session = Session::new(cli.max_diagnostics);
    let result = run(command, &mut session);
    output::finish(result, &session.files, cli.max_diagnostics)
}

/// The command line, with `help --help` read as `help` (clap's help subcommand takes the name of
/// a subcommand, and would refuse `--help` as one).
fn arguments() -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "help") {
        args.retain(|a| a != "--help" && a != "-h");
    }
    args
}

/// Prints clap's own message (help, version, or a usage error) and gives its exit code; help that
/// cannot be written to standard output is an error like any other lost output.
fn clap_exit(e: &clap::Error) -> ExitCode {
    let printed = e
        .print()
        .and_then(|()| std::io::Write::flush(&mut std::io::stdout()));
    match printed {
        Err(err) if !e.use_stderr() && err.kind() != std::io::ErrorKind::BrokenPipe => {
            output::warn(&format!("error: cannot write to standard output: {err}\n"));
            ExitCode::from(1)
        }
        _ => ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2)),
    }
}

fn run(command: Command, session: &mut Session) -> Result<(), Failure> {
    match command {
        Command::Validate { plan } => single::validate(&plan, session),
        Command::Simulate {
            plan,
            costs,
            format,
        } => single::run_simulate(&plan, &costs, format, session),
        Command::Show {
            plan,
            costs,
            window,
        } => show::run(&plan, &costs, &window, session),
        Command::Check { file, dirs } => list::check(&file, &dirs, session),
        Command::List { dirs } => list::list(&dirs, session),
        Command::Render {
            many,
            svg,
            comms,
            window,
        } => draw::render(&many, &svg, comms, &window, session),
        Command::Sweep {
            many,
            over,
            metric,
            svg,
            format,
        } => sweep::run(&many, &over, metric, svg.as_ref(), format, session),
        Command::Report {
            many,
            output,
            over,
            metric,
            comms,
            window,
        } => {
            let options = report::Options {
                over,
                metric: metric.into(),
                comms,
                window,
            };
            report::run(&many, &output, &options, session)
        }
        Command::Compare(args) => compare::run(&args, session),
        Command::Recommend(args) => recommend::run(&args, session),
        Command::Synthesize(args) => synth::run(&args, session),
        Command::Convert { plan, to, output } | Command::Compile { plan, to, output } => {
            single::convert(&plan, to, output.as_ref(), session)
        }
        Command::Export {
            plan,
            to,
            costs,
            output,
        } => export::run(&plan, to, &costs, output.as_deref(), session),
        // Served before a session exists (see `main`).
        Command::PluginWorker { library } => {
            let _ = host::serve_worker(&library);
            Ok(())
        }
    }
}
