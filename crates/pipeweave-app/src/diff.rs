//! `pipeweave diff` (and Python's `diff`): a plan set beside the traces of a run of it.

use crate::calibrate::read_traces;
use crate::session::Session;
use pipeweave_calibrate::{MeasureInput, measure};
use pipeweave_check::ValidPlan;
use pipeweave_eval::{Costing, PlanDiff};
use pipeweave_sim::Timeline;
use pipeweave_source::{Failure, Params};
use pipeweave_trace::match_plan;

/// What `diff` compares.
#[derive(Debug, Clone, Default)]
pub struct DiffRequest {
    /// The plan that ran.
    pub plan: String,
    /// P, M and the schedule's parameters.
    pub params: Params,
    /// The run's traces, one per rank.
    pub traces: Vec<String>,
    /// The costs to predict with (`None`: those measured in the traces themselves).
    pub costs_from: Option<String>,
}

/// A plan beside its run.
#[derive(Debug, Clone)]
pub struct Diffed {
    /// The figures.
    pub diff: PlanDiff,
    /// The plan.
    pub plan: ValidPlan,
    /// The plan simulated with the costs.
    pub predicted: Timeline,
    /// The measured step, seconds from its start.
    pub measured: Timeline,
}

/// Reads the traces, matches them against the plan, predicts the plan's step and sets the two
/// beside each other.
pub fn diff(session: &mut Session<'_>, request: &DiffRequest) -> Result<Diffed, Failure> {
    if request.traces.is_empty() {
        return Err(Failure::usage(
            "give the traces of the run, one file per rank",
        ));
    }
    let built = session.load(&request.plan, &request.params)?;
    let traces = read_traces(session, &request.traces)?;
    let run = match_plan(built.plan.plan(), traces).map_err(Failure::from_diagnostics)?;
    for note in &run.notes {
        session.note(note);
    }
    let (costing, costs) = match &request.costs_from {
        Some(file) => (
            session.measured_costing(file)?,
            format!("measured, from {file}"),
        ),
        None => {
            let (calibration, _) = measure(MeasureInput {
                plan: built.plan.plan(),
                plan_name: &built.name,
                traces: &request.traces,
                run: &run,
            })
            .map_err(Failure::invalid)?;
            session.note(
                "predicted with the costs measured in these traces (--costs-from predicts with others)",
            );
            (
                Costing::Measured {
                    costs: Box::new(calibration),
                    file: "these traces".to_owned(),
                },
                "measured in these traces".to_owned(),
            )
        }
    };
    let predicted = costing
        .run(&built.plan)
        .map_err(Failure::from_diagnostics)?;
    session.tell_derived(&costing, &built.name, &predicted.derived);
    let peaks = match &costing {
        Costing::Measured { costs, .. } => {
            pipeweave_calibrate::saved_peaks(costs, built.plan.plan()).map(|(p, _)| p)
        }
        _ => None,
    };
    let (d, measured) = pipeweave_eval::diff(
        &built.name,
        &costs,
        built.plan.plan(),
        &predicted.timeline,
        predicted.step_time,
        peaks.as_deref(),
        &run,
    );
    let d = crate::finished::finished("diff", d)?;
    Ok(Diffed {
        diff: d,
        plan: built.plan,
        predicted: predicted.timeline,
        measured,
    })
}
