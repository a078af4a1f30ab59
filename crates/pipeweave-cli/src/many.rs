//! The commands on several schedules, as the command line writes them: `compare`, `render`,
//! `sweep` and `report`.

use crate::args::{ManyArgs, MetricArg, ScheduleParams, SpecArgs, TimeWindowArgs, parse_costs};
use crate::output::{emit, is_stdout, note};
use clap::{Args, ValueEnum};
use pipeweave_app::{
    CompareRequest, OverArg, Partial, RenderRequest, ReportRequest, Session, SweepRequest,
};
use pipeweave_report::{TimeFormat, percent};
use pipeweave_sim::UniformCosts;
use pipeweave_source::Failure;
use std::path::{Path, PathBuf};

/// Writes a partial result's text, then fails when nothing in it ran.
fn emit_partial<T>(partial: Partial<T>, view: impl Fn(&T) -> String) -> Result<(), Failure> {
    emit(None, &view(&partial.value))?;
    partial.failure.map_or(Ok(()), Err)
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Library schedules, `.weave` files, plugins (`NAME` or `plugin:NAME`), synthesized schedules
    /// (`synth:loop`, `synth:v`, `synth:bidirectional`) or plan files
    #[arg(value_name = "SCHEDULE", required = true)]
    pub schedules: Vec<String>,
    /// The cluster spec (without it, the built-in default) and how it meets each plan
    #[command(flatten)]
    pub spec: SpecArgs,
    #[command(flatten)]
    pub params: ScheduleParams,
    /// Also show the makespan with unit costs (F = I = W = 1)
    #[arg(long)]
    pub units: bool,
    /// Also show the makespan with these uniform costs (as `simulate --costs`: F, B, I, W, pair,
    /// transfer)
    #[arg(
        long,
        value_name = "F=..,B=..,I=..,W=..,pair=..,transfer=..",
        value_parser = parse_costs
    )]
    pub costs: Option<UniformCosts>,
    /// Also price every plan with the costs measured in a profiled run (a file `pipeweave
    /// calibrate` wrote): its makespan in seconds and its peak saved-activation bytes
    #[arg(long, value_name = "FILE", conflicts_with_all = ["units", "costs"])]
    pub costs_from: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value_t = CompareFormat::Text)]
    pub format: CompareFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    Text,
    Markdown,
    Csv,
    Json,
}

/// `pipeweave compare`: the rendered comparison; fails when no schedule ran.
pub fn compare(session: &mut Session<'_>, args: &CompareArgs) -> Result<(), Failure> {
    let request = CompareRequest {
        schedules: args.schedules.clone(),
        params: args.params.params(),
        spec: args.spec.name.clone(),
        rule: args.spec.rule(),
        units: args
            .costs
            .or_else(|| args.units.then(UniformCosts::default)),
        costs_from: args.costs_from.clone(),
    };
    let compared = pipeweave_app::compare(session, &request, None)?;
    emit_partial(compared, |c| match args.format {
        CompareFormat::Text => pipeweave_report::compare_text(c),
        CompareFormat::Markdown => pipeweave_report::compare_markdown(c),
        CompareFormat::Csv => pipeweave_report::compare_csv(c),
        CompareFormat::Json => pipeweave_report::compare_json(c),
    })
}

/// `pipeweave render`: writes the SVG (to standard output for `-`) and a summary line per
/// schedule.
pub fn render(
    session: &mut Session<'_>,
    many: &ManyArgs,
    svg: &Path,
    comms: bool,
    window: &TimeWindowArgs,
) -> Result<(), Failure> {
    let request = RenderRequest {
        schedules: many.schedules.clone(),
        params: many.params.params(),
        costs: many.costs.costs(),
        comms,
        window: window.window(),
    };
    let rendered = pipeweave_app::render(session, &request)?;
    emit(Some(svg), &rendered.svg)?;
    if is_stdout(svg) {
        // The SVG is standard output: how the spec was fitted goes to standard error.
        for d in rendered.drawn.iter().filter(|d| !d.run.fitted.is_empty()) {
            note(&format!(
                "{}: spec fitted: {}",
                d.name,
                d.run.fitted.join("; ")
            ));
        }
        return Ok(());
    }
    let mut summary = String::new();
    for d in &rendered.drawn {
        summary.push_str(&format!(
            "{}: makespan {}, bubble fraction {}\n",
            d.name,
            rendered.unit.format(d.run.timeline.timing.makespan),
            percent(d.run.timeline.bubble_fraction, 2)
        ));
        if !d.run.fitted.is_empty() {
            summary.push_str(&format!("  spec fitted: {}\n", d.run.fitted.join("; ")));
        }
    }
    summary.push_str(&format!("wrote {}\n", svg.display()));
    emit(None, &summary)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TableFormat {
    Text,
    Csv,
    Json,
}

/// `pipeweave sweep`: the table on standard output, the chart in `svg`.
pub fn sweep(
    session: &mut Session<'_>,
    args: &ManyArgs,
    over: &OverArg,
    metric: MetricArg,
    svg: Option<&PathBuf>,
    format: TableFormat,
) -> Result<(), Failure> {
    if svg.is_some_and(|p| is_stdout(p)) {
        return Err(Failure::usage(
            "--svg -: the table goes to standard output; write the chart to a file",
        ));
    }
    let request = SweepRequest {
        schedules: args.schedules.clone(),
        params: args.params.params(),
        costs: args.costs.costs(),
        over: over.clone(),
        metric: metric.into(),
    };
    let swept = pipeweave_app::sweep(session, &request)?;
    if let Some(path) = svg {
        emit(Some(path), &pipeweave_report::sweep_svg(&swept.value))?;
    }
    emit_partial(swept, |s| match format {
        TableFormat::Text => pipeweave_report::sweep_text(s),
        TableFormat::Csv => pipeweave_report::sweep_csv(s),
        TableFormat::Json => pipeweave_report::sweep_json(s),
    })
}

/// `pipeweave report`: writes the page to `output` (`-`: standard output).
pub fn report(
    session: &mut Session<'_>,
    args: &ManyArgs,
    output: &Path,
    over: Option<&OverArg>,
    metric: MetricArg,
    comms: bool,
    window: &TimeWindowArgs,
) -> Result<(), Failure> {
    let request = ReportRequest {
        schedules: args.schedules.clone(),
        params: args.params.params(),
        costs: args.costs.costs(),
        over: over.cloned(),
        metric: metric.into(),
        comms,
        window: window.window(),
    };
    let html = pipeweave_app::report(session, &request)?;
    emit(Some(output), &html)?;
    if is_stdout(output) {
        return Ok(());
    }
    emit(None, &format!("wrote {}\n", output.display()))
}
