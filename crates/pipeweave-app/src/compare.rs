//! `pipeweave compare` (and Python's `compare`): several schedules under the same P and M on one
//! spec. A schedule that cannot be built for the parameters (a failed requirement, an invalid
//! plan) keeps its row with the reason; a name that is no schedule, plugin or file at all is an
//! error.

use crate::finished::{Partial, finished};
use crate::many::{CompareOn, Many};
use crate::request::Loaded;
use crate::session::Session;
use pipeweave_eval::{Comparison, SpecRule};
use pipeweave_sim::UniformCosts;
use pipeweave_source::{Failure, Flag, Params};

/// What `compare` compares, and on what.
#[derive(Debug, Clone, Default)]
pub struct CompareRequest {
    /// Schedules and plan files, in the order of the rows.
    pub schedules: Vec<String>,
    /// P, M, `v` and `--set` for every schedule that takes them.
    pub params: Params,
    /// The spec (`None`: the built-in default).
    pub spec: Option<String>,
    /// How the spec meets each plan.
    pub rule: SpecRule,
    /// A makespan column under these costs (`--units`: unit costs, or `--costs`).
    pub units: Option<UniformCosts>,
    /// Measured costs (`--costs-from`, a file `calibrate` wrote) every plan is also priced with:
    /// its makespan and its peak saved-activation bytes under them.
    pub costs_from: Option<String>,
}

/// The comparison of `request`'s schedules, after `first` when a front end holds its plan already
/// (Python's `Plan.compare`: that plan's row first, the others at its P and M). Twins (a library
/// schedule and the plugin it says builds the same plans) share a row when their plans are equal.
pub fn compare(
    session: &mut Session<'_>,
    request: &CompareRequest,
    first: Option<Loaded>,
) -> Result<Partial<Comparison>, Failure> {
    let measured = match &request.costs_from {
        Some(file) => {
            if request.units.is_some() {
                return Err(Failure::usage(format!(
                    "give {} (a makespan under measured costs) or a makespan under uniform costs ({} or units), not both",
                    session.front.flag(Flag::CostsFrom),
                    session.front.flag(Flag::Costs)
                )));
            }
            match session.measured_costing(file)? {
                pipeweave_eval::Costing::Measured { costs, file } => Some((file, costs)),
                _ => None,
            }
        }
        None => None,
    };
    let costing = session.spec_costing(request.spec.as_deref(), request.rule.clone())?;
    // A synthesized schedule is searched on the spec the comparison is on.
    session.set_costing(&costing);
    let pipeweave_eval::Costing::Spec { spec, default, .. } = &costing else {
        return Err(Failure::invalid("a comparison is on a spec"));
    };
    let many = Many::resolve(session, &request.schedules, &request.params, first)?;
    let on = CompareOn {
        spec,
        default: *default,
        rule: request.rule.clone(),
        units: request.units,
        measured: measured.as_ref().map(|(f, c)| (f.as_str(), c.as_ref())),
    };
    let c = many.compare(&on, &many.given(), None, session)?;
    let c = finished("compare", c)?;
    let failure =
        (c.simulated() == 0).then(|| Failure::invalid("none of the schedules could be simulated"));
    Ok(Partial { value: c, failure })
}
