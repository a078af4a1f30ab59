//! The commands on one plan: `validate`, `simulate`, `convert` and `compile`, and the steps
//! `show` and `export` share with them (the plan on a spec, the plan simulated).

use crate::args::{ConvertTo, CostArgs, Format, PlanArgs};
use crate::output::{self, emit};
use crate::session::Session;
use pipeweave_eval::{Evaluation, Shape, Simulation, evaluate_on_spec, non_finite};
use pipeweave_plan::Plan;
use pipeweave_sim::{CostModel, Timeline};
use pipeweave_source::{Built, Failure, LoadedSpec};
use std::path::PathBuf;

/// The plan on a spec: P and M from the spec where the command line leaves them out (a plan file
/// has its own), checked against the spec (a mismatch points at the spec's key) and evaluated.
pub fn on_spec(
    session: &mut Session,
    args: &PlanArgs,
    spec: &LoadedSpec,
) -> Result<(Built, Evaluation), Failure> {
    session.host.with_plugin_dirs(&args.params.plugin_dirs);
    session.host.with_schedule_dirs(&args.params.schedule_dirs);
    let source = session.resolve(&args.plan)?;
    let mut params = args.params.params();
    if !source.is_plan_file() {
        params.ranks = params.ranks.or(Some(spec.spec.parallelism.pp));
        params.microbatches = params
            .microbatches
            .or(Some(spec.spec.training.microbatches));
    }
    let built = session.build(&source, &params)?;
    let e = evaluate_on_spec(&built.name, &spec.spec, &built.plan)
        .map_err(Failure::from_diagnostics)?;
    Ok((built, e))
}

/// Simulates a built plan under `costs`; every figure of the timeline is finite.
pub fn simulate(built: &Built, costs: &dyn CostModel) -> Result<Timeline, Failure> {
    let t = pipeweave_sim::simulate(&built.plan, costs)
        .map_err(|e| Failure::invalid(format!("{}: {e}", built.name)))?;
    finite_timeline(&built.name, &built.plan, &t)?;
    Ok(t)
}

/// Refuses a timeline with a figure that is not finite (see [`output::finite`]).
pub fn finite_timeline(name: &str, plan: &Plan, timeline: &Timeline) -> Result<(), Failure> {
    let sim = Simulation::new(name, plan, timeline, None);
    output::finite(name, non_finite(&sim))
}

/// `pipeweave validate`.
pub fn validate(plan: &PlanArgs, session: &mut Session) -> Result<(), Failure> {
    let built = session.load(plan)?;
    let text = format!(
        "{}: valid and deadlock free ({}, {} compute operations)\n",
        built.name,
        pipeweave_report::shape_text(&Shape::of(&built.plan)),
        built.plan.num_ops()
    );
    emit(None, &text)
}

/// The simulation `simulate` and `show` print: on the spec, or under `--costs` (unit costs by
/// default).
fn simulation(
    plan: &PlanArgs,
    costs: &CostArgs,
    session: &mut Session,
) -> Result<Simulation, Failure> {
    if let Some(spec) = &costs.spec {
        let spec = session.spec(Some(spec))?;
        let (built, e) = on_spec(session, plan, &spec)?;
        let sim = Simulation::new(&built.name, &built.plan, &e.timeline, Some(&e.report));
        output::finite(&built.name, non_finite(&sim))?;
        return Ok(sim);
    }
    let built = session.load(plan)?;
    let t = simulate(&built, &costs.costs.unwrap_or_default())?;
    Ok(Simulation::new(&built.name, &built.plan, &t, None))
}

/// `pipeweave simulate`.
pub fn run_simulate(
    plan: &PlanArgs,
    costs: &CostArgs,
    format: Format,
    session: &mut Session,
) -> Result<(), Failure> {
    let sim = simulation(plan, costs, session)?;
    emit(
        None,
        &match format {
            Format::Text => pipeweave_report::simulation_text(&sim),
            Format::Json => pipeweave_report::simulation_json(&sim),
        },
    )
}

/// `pipeweave convert` and `pipeweave compile`.
pub fn convert(
    plan: &PlanArgs,
    to: ConvertTo,
    output: Option<&PathBuf>,
    session: &mut Session,
) -> Result<(), Failure> {
    let built = session.load(plan)?;
    let text = match to {
        ConvertTo::Actions => pipeweave_export::write_actions(&built.plan),
        ConvertTo::Json => pipeweave_export::write_json(&built.plan, None)
            .map_err(|d| Failure::from_diagnostics(vec![d]))?,
    };
    emit(output.map(PathBuf::as_path), &text)
}
