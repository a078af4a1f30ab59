//! The commands on one plan, as the command line writes them: `validate`, `simulate`, `show`,
//! `convert` and `compile`, and `export`.

use crate::args::{ArgError, ConvertTo, CostArgs, Format, PlanArgs, parse_time};
use crate::output::{self, emit};
use clap::{Args, ValueEnum};
use pipeweave_app::{ExportFormat, Session, ShowWindow};
use pipeweave_eval::Shape;
use pipeweave_source::Failure;
use std::io::IsTerminal;
use std::ops::RangeInclusive;
use std::path::Path;

/// `pipeweave validate`.
pub fn validate(session: &mut Session<'_>, plan: &PlanArgs) -> Result<(), Failure> {
    let loaded = pipeweave_app::validate(session, &plan.plan, &plan.params.params())?;
    let p = &loaded.built.plan;
    let text = pipeweave_report::validated_text(
        &loaded.built.name,
        &Shape::of(p),
        p.num_ops(),
        p.is_forward_only(),
    );
    emit(None, &text)
}

/// `pipeweave simulate`.
pub fn simulate(
    session: &mut Session<'_>,
    plan: &PlanArgs,
    costs: &CostArgs,
    format: Format,
) -> Result<(), Failure> {
    let s = pipeweave_app::simulate(session, &plan.plan, &plan.params.params(), &costs.costs())?;
    emit(
        None,
        &match format {
            Format::Text => pipeweave_report::simulation_text(&s.simulation),
            Format::Json => pipeweave_report::simulation_json(&s.simulation),
        },
    )
}

/// `pipeweave convert` and `pipeweave compile`: the plan in another written form.
pub fn convert(
    session: &mut Session<'_>,
    plan: &PlanArgs,
    to: ConvertTo,
    output: Option<&Path>,
) -> Result<(), Failure> {
    let format = match to {
        ConvertTo::Actions => ExportFormat::Actions,
        ConvertTo::Json => ExportFormat::Json,
    };
    let exported = pipeweave_app::export(
        session,
        &plan.plan,
        &plan.params.params(),
        &Default::default(),
        format,
    )?;
    output::emit_document(output, exported.document()?.as_ref())
}

/// The targets of `pipeweave export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportTo {
    /// The actions text format (for one pipeline, PyTorch's compute-only CSV)
    Actions,
    /// The versioned JSON plan (schemas/pipeweave-plan.v1.schema.json)
    Json,
    /// PyTorch 2.15's compute-only CSV (`_load_csv(format="compute_only")`, torchtitan's
    /// pipeline_parallel_schedule_csv)
    Pytorch,
    /// PyTorch 2.15's lowered CSV (`_load_csv(format="compute_comms")`)
    PytorchComms,
    /// A Chrome / Perfetto trace of the simulated step
    ChromeTrace,
    /// torchtitan 0.3.0's ParallelismConfig (module_fqns_per_model_part) with the split on
    /// --spec, as Python for a config_registry function
    Torchtitan,
    /// Megatron-Core's pipeline_model_parallel_layout string with the split on --spec
    MegatronLayout,
}

impl From<ExportTo> for ExportFormat {
    fn from(to: ExportTo) -> ExportFormat {
        match to {
            ExportTo::Actions => ExportFormat::Actions,
            ExportTo::Json => ExportFormat::Json,
            ExportTo::Pytorch => ExportFormat::Pytorch,
            ExportTo::PytorchComms => ExportFormat::PytorchComms,
            ExportTo::ChromeTrace => ExportFormat::ChromeTrace,
            ExportTo::Torchtitan => ExportFormat::Torchtitan,
            ExportTo::MegatronLayout => ExportFormat::MegatronLayout,
        }
    }
}

/// `pipeweave export`: streamed into `output` (standard output for none or `-`) as it is made; a
/// refusal comes before any output.
pub fn export(
    session: &mut Session<'_>,
    plan: &PlanArgs,
    to: ExportTo,
    costs: &CostArgs,
    output: Option<&Path>,
) -> Result<(), Failure> {
    let exported = pipeweave_app::export(
        session,
        &plan.plan,
        &plan.params.params(),
        &costs.costs(),
        to.into(),
    )?;
    output::emit_document(output, exported.document()?.as_ref())
}

/// The width of a line when standard output is not a terminal.
pub const PIPE_WIDTH: usize = 1000;

/// The narrowest `--width`.
const MIN_WIDTH: usize = 40;

/// Which part of the timeline `show` draws, and how wide.
#[derive(Debug, Args)]
pub struct WindowArgs {
    /// Draw only ranks A to B (`A..B`, or one rank `A`); at most 512 at once
    #[arg(long = "rank-range", value_name = "A..B", value_parser = parse_rank_range)]
    pub rank_range: Option<RangeInclusive<u32>>,
    /// Start the drawing at this time (units, or seconds with --spec)
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub from: Option<f64>,
    /// End the drawing at this time (units, or seconds with --spec)
    #[arg(long, value_name = "TIME", value_parser = parse_time)]
    pub to: Option<f64>,
    /// The most characters per line (default: the terminal's width, or 1000 when standard output
    /// is not a terminal); the time axis is scaled down to fit
    #[arg(long, value_name = "N", value_parser = parse_width)]
    pub width: Option<usize>,
}

fn parse_rank_range(text: &str) -> Result<RangeInclusive<u32>, ArgError> {
    let bad = || {
        ArgError(format!(
            "--rank-range {text}: expected A..B (ranks A to B, from 0) or one rank A"
        ))
    };
    let number = |t: &str| t.trim().parse::<u32>().map_err(|_| bad());
    let (a, b) = match text.split_once("..") {
        Some((a, b)) => (number(a)?, number(b)?),
        None => {
            let a = number(text)?;
            (a, a)
        }
    };
    if a > b {
        return Err(ArgError(format!(
            "--rank-range {text}: the range runs backwards"
        )));
    }
    Ok(a..=b)
}

fn parse_width(text: &str) -> Result<usize, ArgError> {
    text.trim()
        .parse::<usize>()
        .ok()
        .filter(|w| *w >= MIN_WIDTH)
        .ok_or_else(|| {
            ArgError(format!(
                "--width {text}: the width is a whole number of characters, at least {MIN_WIDTH}"
            ))
        })
}

/// `pipeweave show`: the text timeline, as wide as the terminal (or `--width`; a fixed width when
/// standard output is not a terminal, so that output does not depend on where it goes).
pub fn show(
    session: &mut Session<'_>,
    plan: &PlanArgs,
    costs: &CostArgs,
    window: &WindowArgs,
) -> Result<(), Failure> {
    let width = window.width.unwrap_or_else(|| {
        let out = std::io::stdout();
        if out.is_terminal() {
            terminal_size::terminal_size_of(out)
                .map_or(PIPE_WIDTH, |(w, _)| usize::from(w.0).max(MIN_WIDTH))
        } else {
            PIPE_WIDTH
        }
    });
    let window = ShowWindow {
        ranks: window.rank_range.clone(),
        from: window.from,
        to: window.to,
        width,
    };
    let text = pipeweave_app::show(
        session,
        &plan.plan,
        &plan.params.params(),
        &costs.costs(),
        &window,
    )?;
    emit(None, &text)
}

/// `pipeweave calibrate`: the costs file, and what could not be measured as notes.
pub fn calibrate(
    session: &mut Session<'_>,
    traces: Vec<String>,
    plans: Vec<String>,
    ranks: Option<u32>,
    microbatches: Option<u32>,
    output: &Path,
) -> Result<(), Failure> {
    if plans.is_empty() && (ranks.is_some() || microbatches.is_some()) {
        return Err(Failure::usage(
            "-p and -m build the --plan schedule; give the schedule with --plan",
        ));
    }
    let request = pipeweave_app::CalibrateRequest {
        traces,
        plans,
        params: pipeweave_source::Params {
            ranks,
            microbatches,
            ..Default::default()
        },
    };
    let calibrated = pipeweave_app::calibrate(session, &request)?;
    for note in &calibrated.notes {
        output::note(note);
    }
    emit(Some(output), &calibrated.toml)
}

/// `pipeweave diff`: the text or JSON on standard output, and the SVG when asked for.
pub fn diff(
    session: &mut Session<'_>,
    request: pipeweave_app::DiffRequest,
    format: Format,
    svg: Option<&Path>,
) -> Result<(), Failure> {
    let d = pipeweave_app::diff(session, &request)?;
    if let Some(path) = svg {
        let plan = d.plan.plan();
        let planned = pipeweave_report::TimelineChart {
            title: "planned".to_owned(),
            plan,
            timeline: &d.predicted,
            transfers: None,
        };
        let measured = pipeweave_report::TimelineChart {
            title: "measured".to_owned(),
            plan,
            timeline: &d.measured,
            transfers: None,
        };
        let title = format!("{}: plan against actual", d.diff.plan);
        let drawing = pipeweave_report::plan_vs_actual_svg(
            &title,
            planned,
            measured,
            pipeweave_report::TimeUnit::Seconds,
            "diff",
        );
        emit(Some(path), &drawing)?;
    }
    emit(
        None,
        &match format {
            Format::Text => pipeweave_report::diff_text(&d.diff),
            Format::Json => pipeweave_report::json(&d.diff),
        },
    )
}
