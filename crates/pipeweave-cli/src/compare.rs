//! `pipeweave compare`: several schedules under the same P and M on one spec, as tables of figures
//! and traits (text, Markdown, CSV or JSON).
//!
//! A schedule that cannot be built for the parameters (a failed requirement, an invalid plan)
//! keeps its row with the reason; a name that is no schedule, plugin or file at all is an error.

use crate::args::{ScheduleParams, SpecArgs, parse_costs};
use crate::many::{CompareOn, Many};
use crate::output::emit;
use crate::session::Session;
use clap::{Args, ValueEnum};
use pipeweave_sim::UniformCosts;
use pipeweave_source::Failure;

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
    let spec = session.spec(args.spec.name.as_deref())?;
    // A synthesized schedule is searched on the spec the comparison is on.
    session.costing = Some(pipeweave_eval::Costing::Spec {
        spec: Box::new(spec.spec.clone()),
        default: spec.default,
        rule: args.spec.rule(),
    });
    let many = Many::resolve(&args.schedules, &args.params, session)?;
    let on = CompareOn {
        spec: &spec.spec,
        default: spec.default,
        rule: args.spec.rule(),
        units: args
            .costs
            .or_else(|| args.units.then(UniformCosts::default)),
    };
    let c = many.compare(&on, &many.given(), None, session)?;
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
