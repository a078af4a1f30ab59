//! `pipeweave sweep` (and Python's `sweep`): one metric of several schedules against a swept
//! parameter (micro-batches, ranks, stages per rank or any parameter they declare).

use crate::finished::{Partial, finished};
use crate::many::Many;
use crate::over::OverArg;
use crate::request::CostsArg;
use crate::session::Session;
use pipeweave_eval::{Costing, Metric, Over, Sweep};
use pipeweave_source::{Failure, Params};

/// What a sweep varies and measures.
#[derive(Debug, Clone)]
pub struct SweepRequest {
    /// The schedules, one series each.
    pub schedules: Vec<String>,
    /// P, M, `v` and `--set` besides the swept parameter.
    pub params: Params,
    /// The costs (unit costs by default).
    pub costs: CostsArg,
    /// What to vary, as written (`m=8..64`).
    pub over: OverArg,
    /// What to measure.
    pub metric: Metric,
}

/// The sweep of `request`; a usage failure (a flag every value misses) stops it. Its failure says
/// when no schedule could be simulated at any value.
pub fn sweep(session: &mut Session<'_>, request: &SweepRequest) -> Result<Partial<Sweep>, Failure> {
    let costing = session.costing(&request.costs)?;
    let many = Many::resolve(session, &request.schedules, &request.params, None)?;
    let over = typed(&many, &request.over)?;
    many.read_files(session)?;
    let result = run(session, &many, &over, request.metric, &costing)?;
    let result = finished("sweep", result)?;
    let ran = result
        .series
        .iter()
        .any(|s| s.points.iter().any(|p| p.value.is_ok()));
    let failure = (!ran).then(|| Failure::invalid("no schedule could be simulated at any value"));
    Ok(Partial {
        value: result,
        failure,
    })
}

/// `over` typed by what `many`'s schedules declare.
pub(crate) fn typed(many: &Many, over: &OverArg) -> Result<Over, Failure> {
    let declared: Vec<_> = many
        .members
        .iter()
        .map(|m| (m.name(), m.declared()))
        .collect();
    over.typed(&declared)
}

/// Runs the sweep of `many`'s schedules over `over`, telling its progress.
pub(crate) fn run(
    session: &mut Session<'_>,
    many: &Many,
    over: &Over,
    metric: Metric,
    costing: &Costing,
) -> Result<Sweep, Failure> {
    let names = many.names();
    let base = many.given();
    pipeweave_eval::sweep(
        &names,
        over,
        &base,
        metric,
        costing,
        &mut many.planner(session),
    )
}
