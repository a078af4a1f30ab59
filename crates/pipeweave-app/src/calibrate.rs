//! `pipeweave calibrate` (and Python's `calibrate`): profiler traces of a run, one per rank,
//! matched against the plan they ran and measured into a costs file.

use crate::session::Session;
use pipeweave_calibrate::{Calibration, MeasureInput, measure, write_costs};
use pipeweave_source::{Failure, Params};
use pipeweave_trace::{RankTrace, infer_plan, match_plan, read_trace};

/// What `calibrate` measures.
#[derive(Debug, Clone, Default)]
pub struct CalibrateRequest {
    /// The trace files, one per rank (`.json` or `.json.gz`).
    pub traces: Vec<String>,
    /// The plan they ran (`None`: the one-pipeline plan the traces show).
    pub plan: Option<String>,
    /// P, M and the schedule's parameters, for a schedule.
    pub params: Params,
}

/// What `calibrate` measured.
#[derive(Debug, Clone)]
pub struct Calibrated {
    /// The figures.
    pub calibration: Calibration,
    /// The costs file's text.
    pub toml: String,
    /// What could not be measured, and what was assumed, in words.
    pub notes: Vec<String>,
}

/// Reads every trace (every problem of every file told), matches the run against the plan and
/// measures it.
pub fn calibrate(
    session: &mut Session<'_>,
    request: &CalibrateRequest,
) -> Result<Calibrated, Failure> {
    if request.traces.is_empty() {
        return Err(Failure::usage(
            "give the traces of the run, one file per rank",
        ));
    }
    let traces = read_traces(session, &request.traces)?;
    let (plan, plan_name, inferred) = match &request.plan {
        Some(arg) => {
            let built = session.load(arg, &request.params)?;
            (built.plan.into_plan(), built.name, false)
        }
        None => {
            let plan = infer_plan(&traces).map_err(|d| Failure::from_diagnostics(vec![d]))?;
            let valid = pipeweave_check::validate(plan).map_err(|problems| {
                let reasons: Vec<String> = problems.iter().map(ToString::to_string).collect();
                Failure::invalid(format!(
                    "the traces' actions make no valid plan ({}); give the plan with {}",
                    reasons.first().cloned().unwrap_or_default(),
                    session.front.flag(pipeweave_source::Flag::Plan)
                ))
            })?;
            (
                valid.into_plan(),
                "the plan the traces show".to_owned(),
                true,
            )
        }
    };
    let run = match_plan(&plan, traces).map_err(Failure::from_diagnostics)?;
    let mut notes = run.notes.clone();
    if inferred {
        notes.push(format!(
            "the plan was read from the traces: {} ranks, {} stages on one pipeline, {} micro-batches",
            plan.ranks(),
            plan.num_stages(),
            plan.num_microbatches()
        ));
    }
    let (calibration, measured) = measure(MeasureInput {
        plan: &plan,
        plan_name: &plan_name,
        traces: &request.traces,
        run: &run,
    })
    .map_err(Failure::invalid)?;
    notes.extend(measured);
    let toml = write_costs(&calibration).map_err(Failure::invalid)?;
    Ok(Calibrated {
        calibration,
        toml,
        notes,
    })
}

/// Every trace read, in the order given; every file's problems told together.
pub(crate) fn read_traces(
    session: &mut Session<'_>,
    paths: &[String],
) -> Result<Vec<RankTrace>, Failure> {
    let mut traces = Vec::with_capacity(paths.len());
    let mut problems = Vec::new();
    for path in paths {
        let text = session.host().read_trace(path)?;
        let file = session.files.add(path.clone(), text);
        let text = session.files.text(file).unwrap_or_default();
        match read_trace(text, file) {
            Ok(t) => traces.push(t),
            Err(d) => problems.extend(d),
        }
    }
    if problems.is_empty() {
        Ok(traces)
    } else {
        Err(Failure::from_diagnostics(problems))
    }
}
