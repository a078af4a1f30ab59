//! `pipeweave sweep`: one metric of several schedules against a swept parameter (micro-batches,
//! ranks, stages per rank or any parameter they declare), as a table and an SVG line chart, with
//! a progress bar on a terminal's stderr when it takes a while.

use crate::args::{ManyArgs, MetricArg};
use crate::many::{Many, costing};
use crate::output::{emit, is_stdout};
use crate::over::OverArg;
use crate::progress::Progress;
use crate::session::Session;
use clap::ValueEnum;
use pipeweave_eval::{Costing, Metric, Over, Sweep};
use pipeweave_source::Failure;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TableFormat {
    Text,
    Csv,
    Json,
}

/// Runs the sweep of `many`'s schedules; a usage failure (a flag every value misses) stops it.
pub fn sweep(
    many: &Many,
    over: &Over,
    metric: Metric,
    costing: &Costing,
    session: &mut Session,
) -> Result<Sweep, Failure> {
    let names: Vec<String> = many.sources.iter().map(|s| s.name().to_owned()).collect();
    let base = many.given();
    let mut progress = Progress::new();
    let result = pipeweave_eval::sweep(
        &names,
        over,
        &base,
        metric,
        costing,
        &mut many.planner(session),
        &mut |t| progress.tick(t),
    );
    progress.finish();
    result
}

/// `pipeweave sweep`: the table on standard output, the chart in `svg`.
pub fn run(
    args: &ManyArgs,
    over: &OverArg,
    metric: MetricArg,
    svg: Option<&PathBuf>,
    format: TableFormat,
    session: &mut Session,
) -> Result<(), Failure> {
    if svg.is_some_and(|p| is_stdout(p)) {
        return Err(Failure::usage(
            "--svg -: the table goes to standard output; write the chart to a file",
        ));
    }
    let costing = costing(&args.costs, session)?;
    let many = Many::resolve(&args.schedules, &args.params, session)?;
    let over = over.typed(&many.sources)?;
    let result = sweep(&many, &over, metric.into(), &costing, session)?;
    crate::output::finite("sweep", pipeweave_eval::non_finite(&result.series))?;
    if let Some(path) = svg {
        emit(Some(path), &pipeweave_report::sweep_svg(&result))?;
    }
    let table = match format {
        TableFormat::Text => pipeweave_report::sweep_text(&result),
        TableFormat::Csv => pipeweave_report::sweep_csv(&result),
        TableFormat::Json => pipeweave_report::sweep_json(&result),
    };
    emit(None, &table)?;
    // As `compare`: the table shows why, and the exit code says nothing could run.
    let ran = result
        .series
        .iter()
        .any(|s| s.points.iter().any(|p| p.value.is_ok()));
    if ran {
        Ok(())
    } else {
        Err(Failure::invalid(
            "no schedule could be simulated at any value",
        ))
    }
}
