//! The `pipeweave` command: the command table, over the library crates.
//!
//! Exit codes: 0 success, 1 invalid input or plan, 2 usage error.

mod args;
mod events;
mod host;
mod list;
mod live;
mod many;
mod output;
mod search;
mod single;

use args::{ArgError, ConvertTo, CostArgs, Format, ManyArgs, MetricArg, PlanArgs, TimeWindowArgs};
use clap::{Parser, Subcommand};
use pipeweave_app::{FrontEnd, OverArg, Session};
use pipeweave_source::Failure;
use std::path::PathBuf;
use std::process::ExitCode;

/// `--over`, read as the application layer reads it.
fn parse_over(text: &str) -> Result<OverArg, ArgError> {
    pipeweave_app::parse_over(text).map_err(|e| ArgError(e.0))
}

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
        window: single::WindowArgs,
    },
    /// List the schedules available by name, with their origin and parameters
    List {
        #[command(flatten)]
        dirs: args::Dirs,
        /// Output format
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
    /// Check a schedule file: syntax and names, then its plans compiled and validated for
    /// P = 2…8 and every M up to 2P its requirements allow
    Check {
        /// A `.weave` file (`-`: standard input), or a library or schedule folder schedule's name
        #[arg(value_name = "SCHEDULE")]
        file: String,
        /// A folder of `.weave` schedules, each named by its file name (repeatable; searched
        /// before PIPEWEAVE_SCHEDULE_PATH; a library schedule's name comes first)
        #[arg(long = "schedule-dir", value_name = "DIR")]
        schedule_dirs: Vec<PathBuf>,
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
        #[arg(long, value_enum, default_value_t = many::TableFormat::Text)]
        format: many::TableFormat,
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
    Compare(many::CompareArgs),
    /// Search pipeline degree, schedule, micro-batches and stages per rank on a spec and explain
    /// the best plan that fits in memory
    Recommend(search::RecommendArgs),
    /// Search for the best order for a placement, a memory limit and a spec's costs (or --costs,
    /// or unit costs): a heuristic, local search, an exact method at P ≤ 4, M ≤ 8
    Synthesize(Box<search::SynthArgs>),
    /// Measure a profiled run from its torch.profiler traces (one per rank): F, B, I, W per stage,
    /// overlapped pairs, transfers per link, step times and saved bytes, as a costs file for the
    /// commands that price plans
    Calibrate {
        /// The run's traces, one per rank (`.json`, or gzipped `.json.gz`), as `torch.profiler`'s
        /// `export_chrome_trace` writes them; of several runs, each run's traces in turn
        #[arg(value_name = "TRACE", required = true)]
        traces: Vec<String>,
        /// The plan the traces ran (a schedule with -p and -m, or a plan file; default: the
        /// one-pipeline plan the traces show). Given again, once per run, the traces are several
        /// runs' (as many per run as its plan has ranks, in the order of the plans), measured
        /// together: e.g. the schedule you run and one that splits its backward, for I and W
        #[arg(long, value_name = "PLAN")]
        plan: Vec<String>,
        /// Ranks P of the --plan schedule
        #[arg(short = 'p', long = "ranks", value_name = "P", value_parser = args::parse_ranks)]
        ranks: Option<u32>,
        /// Micro-batches M of the --plan schedule
        #[arg(short = 'm', long = "microbatches", value_name = "M", value_parser = args::parse_microbatches)]
        microbatches: Option<u32>,
        /// Write the costs file here (`-`: standard output)
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
    },
    /// Set a plan beside the torch.profiler traces of a run of it: predicted and measured step
    /// time per rank, each action's predicted and measured start, the waits the plan did not
    /// predict and on whom, the slowest rank and action
    Diff {
        /// The plan that ran: a schedule with -p and -m, or a plan file
        #[arg(value_name = "PLAN")]
        plan: String,
        /// The run's traces, one per rank (`.json` or `.json.gz`)
        #[arg(value_name = "TRACE", required = true)]
        traces: Vec<String>,
        /// Ranks P of the schedule
        #[arg(short = 'p', long = "ranks", value_name = "P", value_parser = args::parse_ranks)]
        ranks: Option<u32>,
        /// Micro-batches M of the schedule
        #[arg(short = 'm', long = "microbatches", value_name = "M", value_parser = args::parse_microbatches)]
        microbatches: Option<u32>,
        /// Predict with these measured costs (default: the costs measured in the traces
        /// themselves)
        #[arg(long, value_name = "FILE")]
        costs_from: Option<String>,
        /// Output format
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Also draw each rank's planned row above its measured row, on one time axis, in this SVG
        /// file
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
    },
    /// Export a validated plan for a launcher: PyTorch CSVs, the JSON plan, a Chrome trace
    Export {
        #[command(flatten)]
        plan: PlanArgs,
        /// Target format
        #[arg(long, value_enum)]
        to: single::ExportTo,
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
    /// Write schedules live: a local web app (an editor with the compiler's diagnostics, the
    /// timeline, comparisons, exports) on 127.0.0.1
    Serve {
        /// The port on 127.0.0.1 (0: any free port)
        #[arg(long, value_name = "N", default_value_t = 8700)]
        port: u16,
        /// The `.weave` file to edit: saving writes it back (without one, a scratch text)
        #[arg(value_name = "FILE.weave")]
        file: Option<PathBuf>,
    },
    /// The language server of `.weave` files over standard input and output, for editors
    Lsp,
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
        Command::Serve { port, file } => return live::serve(port, file, cli.max_diagnostics),
        Command::Lsp => return live::lsp(cli.max_diagnostics),
        command => command,
    };
    let (plugin_dirs, schedule_dirs) = command.folders();
    let mut host = host::host();
    if let Err(e) = host.with_folders(&plugin_dirs, &schedule_dirs) {
        let flag = if e.plugins {
            "--plugin-dir"
        } else {
            "--schedule-dir"
        };
        let usage = Err(Failure::usage(format!(
            "{flag} {}: {}",
            e.path.display(),
            e.why
        )));
        return output::finish(usage, &Default::default(), cli.max_diagnostics);
    }
    for path in command.outputs() {
        if !output::is_stdout(path)
            && let Some(why) = pipeweave_host::output_problem(path)
        {
            let refused = Err(Failure::invalid(format!(
                "cannot write `{}`: {why}",
                path.display()
            )));
            return output::finish(refused, &Default::default(), cli.max_diagnostics);
        }
    }
    let mut terminal = events::Terminal::new();
    let mut session = Session::new(
        &mut host,
        &mut terminal,
        FrontEnd::CommandLine,
        cli.max_diagnostics,
    );
    let result = run(command, &mut session);
    let files = std::mem::take(&mut session.files);
    output::finish(result, &files, cli.max_diagnostics)
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

impl Command {
    /// The files the command writes (`-o`, `--svg`), checked before it runs.
    fn outputs(&self) -> Vec<&std::path::Path> {
        match self {
            Command::Compile { output, .. }
            | Command::Convert { output, .. }
            | Command::Export { output, .. } => output.iter().map(PathBuf::as_path).collect(),
            Command::Render { svg, .. } => vec![svg.as_path()],
            Command::Sweep { svg, .. } | Command::Diff { svg, .. } => {
                svg.iter().map(PathBuf::as_path).collect()
            }
            Command::Report { output, .. } | Command::Calibrate { output, .. } => {
                vec![output.as_path()]
            }
            Command::Synthesize(args) => args.output.iter().map(PathBuf::as_path).collect(),
            _ => Vec::new(),
        }
    }

    /// The plugin and schedule folders the command looks in besides the environment's.
    fn folders(&self) -> (Vec<PathBuf>, Vec<PathBuf>) {
        match self {
            Command::Validate { plan }
            | Command::Simulate { plan, .. }
            | Command::Show { plan, .. }
            | Command::Compile { plan, .. }
            | Command::Convert { plan, .. }
            | Command::Export { plan, .. } => plan.params.folders(),
            Command::Render { many, .. }
            | Command::Sweep { many, .. }
            | Command::Report { many, .. } => many.params.folders(),
            Command::Compare(args) => args.params.folders(),
            Command::List { dirs, .. } => dirs.folders(),
            Command::Recommend(args) => args.dirs.folders(),
            Command::Synthesize(args) => args.dirs.folders(),
            Command::Check { schedule_dirs, .. } => (Vec::new(), schedule_dirs.clone()),
            Command::Calibrate { .. } | Command::Diff { .. } => (Vec::new(), Vec::new()),
            Command::PluginWorker { .. } | Command::Serve { .. } | Command::Lsp => {
                (Vec::new(), Vec::new())
            }
        }
    }
}

fn run(command: Command, session: &mut Session<'_>) -> Result<(), Failure> {
    match command {
        Command::Validate { plan } => single::validate(session, &plan),
        Command::Simulate {
            plan,
            costs,
            format,
        } => single::simulate(session, &plan, &costs, format),
        Command::Show {
            plan,
            costs,
            window,
        } => single::show(session, &plan, &costs, &window),
        Command::Check { file, .. } => list::check(session, &file),
        Command::List { format, .. } => list::list(session, format),
        Command::Render {
            many,
            svg,
            comms,
            window,
        } => many::render(session, &many, &svg, comms, &window),
        Command::Sweep {
            many,
            over,
            metric,
            svg,
            format,
        } => many::sweep(session, &many, &over, metric, svg.as_ref(), format),
        Command::Report {
            many,
            output,
            over,
            metric,
            comms,
            window,
        } => many::report(
            session,
            &many,
            &output,
            over.as_ref(),
            metric,
            comms,
            &window,
        ),
        Command::Compare(args) => many::compare(session, &args),
        Command::Diff {
            plan,
            traces,
            ranks,
            microbatches,
            costs_from,
            format,
            svg,
        } => single::diff(
            session,
            pipeweave_app::DiffRequest {
                plan,
                traces,
                params: pipeweave_source::Params {
                    ranks,
                    microbatches,
                    ..Default::default()
                },
                costs_from,
            },
            format,
            svg.as_deref(),
        ),
        Command::Calibrate {
            traces,
            plan,
            ranks,
            microbatches,
            output,
        } => single::calibrate(session, traces, plan, ranks, microbatches, &output),
        Command::Recommend(args) => search::recommend(session, &args),
        Command::Synthesize(args) => search::synthesize(session, &args),
        Command::Convert { plan, to, output } | Command::Compile { plan, to, output } => {
            single::convert(session, &plan, to, output.as_deref())
        }
        Command::Export {
            plan,
            to,
            costs,
            output,
        } => single::export(session, &plan, to, &costs, output.as_deref()),
        // Served before a session exists (see `main`).
        Command::PluginWorker { library } => {
            let _ = host::serve_worker(&library);
            Ok(())
        }
        Command::Serve { .. } | Command::Lsp => Ok(()),
    }
}
