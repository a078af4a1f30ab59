//! `pipeweave calibrate` (and Python's `calibrate`): profiler traces of a run, one per rank,
//! matched against the plan they ran and measured into a costs file; or of several runs, each
//! against its plan, measured together.

use crate::session::Session;
use pipeweave_calibrate::{Calibration, MeasureInput, measure_runs, write_costs};
use pipeweave_diagnostics::visible;
use pipeweave_source::{Failure, Params};
use pipeweave_trace::{RankTrace, infer_plan, match_plan, read_trace};

/// What `calibrate` measures.
#[derive(Debug, Clone, Default)]
pub struct CalibrateRequest {
    /// The trace files, one per rank (`.json` or `.json.gz`); of several runs, each run's in turn,
    /// as many as its plan has ranks.
    pub traces: Vec<String>,
    /// The plans the runs ran, one per run, in the order of their traces (none: one run, of the
    /// one-pipeline plan the traces show).
    pub plans: Vec<String>,
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
    let mut notes = Vec::new();
    let mut inferred = None;
    // Each run: its plan, the plan's name, and its traces' indices.
    let mut runs: Vec<(pipeweave_plan::Plan, String, std::ops::Range<usize>)> = Vec::new();
    if request.plans.is_empty() {
        let plan = infer_plan(&traces).map_err(|d| Failure::from_diagnostics(vec![d]))?;
        let valid = pipeweave_check::validate(plan).map_err(|problems| {
            let reasons: Vec<String> = problems.iter().map(ToString::to_string).collect();
            Failure::invalid(format!(
                "the traces' actions make no valid plan ({}); give the plan with {}",
                reasons.first().cloned().unwrap_or_default(),
                session.front.flag(pipeweave_source::Flag::Plan)
            ))
        })?;
        let plan = valid.into_plan();
        inferred = Some(format!(
            "the plan was read from the traces: {} ranks, {} stages on one pipeline, {} micro-batches",
            plan.ranks(),
            plan.num_stages(),
            plan.num_microbatches()
        ));
        runs.push((plan, "the plan the traces show".to_owned(), 0..traces.len()));
    } else {
        let mut at = 0;
        for arg in &request.plans {
            let built = session.load(arg, &request.params)?;
            let plan = built.plan.into_plan();
            let n = plan.ranks() as usize;
            runs.push((plan, built.name, at..at + n));
            at += n;
        }
        if runs.len() > 1 && at != traces.len() {
            let counts: Vec<String> = runs
                .iter()
                .map(|(p, name, _)| format!("{} for {}", p.ranks(), visible(name)))
                .collect();
            return Err(Failure::usage(format!(
                "{} plans take {at} traces, one per rank of each run in turn ({}), and {} were given",
                runs.len(),
                counts.join(", "),
                traces.len()
            )));
        }
        if runs.len() == 1 {
            runs[0].2 = 0..traces.len();
        }
    }
    let mut traces = traces.into_iter();
    let mut matched = Vec::with_capacity(runs.len());
    let mut problems = Vec::new();
    let several = runs.len() > 1;
    for (k, (plan, name, range)) in runs.iter().enumerate() {
        let group: Vec<_> = traces.by_ref().take(range.len()).collect();
        match match_plan(plan, group) {
            Ok(run) => {
                notes.extend(run.notes.iter().cloned());
                matched.push(run);
            }
            // Of several runs, each problem says which run it is of.
            Err(d) if several => problems.extend(d.into_iter().map(|mut d| {
                d.message = format!("run {} ({}): {}", k + 1, visible(name), d.message);
                d
            })),
            Err(d) => problems.extend(d),
        }
    }
    if !problems.is_empty() {
        return Err(Failure::from_diagnostics(problems));
    }
    notes.extend(inferred);
    let inputs: Vec<MeasureInput<'_>> = runs
        .iter()
        .zip(&matched)
        .map(|((plan, name, range), run)| MeasureInput {
            plan,
            plan_name: name,
            traces: &request.traces[range.clone()],
            run,
        })
        .collect();
    let (calibration, measured) = measure_runs(&inputs).map_err(Failure::invalid)?;
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
