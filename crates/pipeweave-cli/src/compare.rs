//! `pipeweave compare`: several schedules under the same P and M on one spec, as tables of figures
//! and traits (text, Markdown, CSV or JSON).
//!
//! A schedule that cannot be built for the parameters (a failed requirement, an invalid plan)
//! keeps its row with the reason; a name that is no schedule, plugin or file at all is an error.

use crate::args::ScheduleParams;
use crate::many::Many;
use crate::output::emit;
use crate::session::Session;
use clap::{Args, ValueEnum};
use pipeweave_eval::PlanRequest;
use pipeweave_source::Failure;

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Library schedules, `.weave` files, plugins (`NAME` or `plugin:NAME`) or plan files
    #[arg(value_name = "SCHEDULE", required = true)]
    pub schedules: Vec<String>,
    /// The cluster spec: a TOML file, a shipped spec's name, or `default` (the default)
    #[arg(long, value_name = "FILE|NAME")]
    pub spec: Option<String>,
    #[command(flatten)]
    pub params: ScheduleParams,
    /// Also show the makespan with unit costs (F = I = W = 1)
    #[arg(long)]
    pub units: bool,
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
pub fn run(args: &CompareArgs, session: &mut Session) -> Result<(), Failure> {
    let spec = session.spec(args.spec.as_deref())?;
    let many = Many::resolve(&args.schedules, &args.params, session)?;
    let request = PlanRequest {
        ranks: args.params.ranks,
        microbatches: args.params.microbatches,
        stages_per_rank: None,
    };
    let c = many.compare(
        &spec.spec,
        spec.default,
        &request,
        args.units,
        None,
        session,
    );
    crate::output::finite("compare", pipeweave_eval::non_finite(&c))?;
    let text = match args.format {
        CompareFormat::Text => pipeweave_report::compare_text(&c),
        CompareFormat::Markdown => pipeweave_report::compare_markdown(&c),
        CompareFormat::Csv => pipeweave_report::compare_csv(&c),
        CompareFormat::Json => pipeweave_report::compare_json(&c),
    };
    emit(None, &text)?;
    if c.simulated() > 0 {
        Ok(())
    } else {
        Err(Failure::invalid("none of the schedules could be simulated"))
    }
}
