//! The commands on one plan: `validate`, `simulate`, `convert` and `compile`, and the steps
//! `show` and `export` share with them (the plan on a spec, the plan simulated).

use crate::args::{ConvertTo, CostArgs, Format, PlanArgs, SpecArgs};
use crate::output::{self, emit};
use crate::session::Session;
use pipeweave_eval::{
    Costing, Evaluation, Shape, Simulation, evaluate_on_spec, non_finite, plan_shape,
};
use pipeweave_plan::Plan;
use pipeweave_sim::{CostModel, Timeline};
use pipeweave_source::{Built, Failure};
use std::path::PathBuf;

/// A plan on a spec: what [`on_spec`] gives.
#[derive(Debug)]
pub struct OnSpec {
    /// The plan.
    pub built: Built,
    /// It evaluated on the spec fitted to it.
    pub evaluation: Evaluation,
    /// How the spec was fitted, one sentence per change.
    pub fitted: Vec<String>,
}

/// The plan on the spec `spec.name` names: P and M from the spec where the command line leaves
/// them out (a plan file has its own), the spec fitted to the plan's shape by the one rule of
/// every command ([`pipeweave_eval::fit`]; with `--strict-spec` a mismatch is refused, pointing at
/// the spec's keys), and evaluated.
pub fn on_spec(session: &mut Session, args: &PlanArgs, spec: &SpecArgs) -> Result<OnSpec, Failure> {
    let loaded = session.spec(spec.name.as_deref())?;
    let rule = spec.rule();
    session.costing = Some(Costing::Spec {
        spec: Box::new(loaded.spec.clone()),
        default: loaded.default,
        rule,
    });
    session.host.with_plugin_dirs(&args.params.plugin_dirs);
    session.host.with_schedule_dirs(&args.params.schedule_dirs);
    let source = session.resolve(&args.plan)?;
    let mut params = args.params.params();
    if !source.is_plan_file() {
        let (p, m) = plan_shape(&loaded.spec, rule, params.ranks, params.microbatches)
            .map_err(|reason| Failure::invalid(format!("spec {}: {reason}", loaded.spec.name)))?;
        params.ranks = Some(p);
        params.microbatches = Some(m);
    }
    let built = session.build(&source, &params)?;
    let (evaluation, fitted) = evaluate_on_spec(&built.name, &loaded.spec, &built.plan, rule)
        .map_err(Failure::from_diagnostics)?;
    Ok(OnSpec {
        fitted: fitted.notes(),
        built,
        evaluation,
    })
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
        "{}: valid and deadlock free ({}, {} compute operations{})\n",
        built.name,
        pipeweave_report::shape_text(&Shape::of(&built.plan)),
        built.plan.num_ops(),
        if built.plan.is_forward_only() {
            ", forwards only: an evaluation step"
        } else {
            ""
        }
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
    if costs.spec.name.is_some() {
        let on = on_spec(session, plan, &costs.spec)?;
        let e = &on.evaluation;
        let mut sim = Simulation::new(&on.built.name, &on.built.plan, &e.timeline, Some(&e.report));
        sim.fitted = Some(on.fitted);
        output::finite(&on.built.name, non_finite(&sim))?;
        return Ok(sim);
    }
    costs.spec.check_without_spec()?;
    session.costing = costs.costs.map(Costing::Uniform);
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
    let output = output.map(PathBuf::as_path);
    match to {
        ConvertTo::Actions => {
            output::emit_document(output, &pipeweave_export::actions_text(&built.plan))
        }
        ConvertTo::Json => {
            let doc = pipeweave_export::json_text(&built.plan, None)
                .map_err(|d| Failure::from_diagnostics(vec![d]))?;
            output::emit_document(output, &doc)
        }
    }
}
