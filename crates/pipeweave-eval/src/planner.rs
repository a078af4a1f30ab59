//! How the searches (sweep, recommend) get plans: through a [`Planner`] the caller implements, so
//! this crate never resolves names, reads files or loads plugins. The planner is the caller's side
//! of a search: it also hears how far the search is.

use pipeweave_check::ValidPlan;
use pipeweave_param::Value;

/// The parameters a schedule is asked to be built with; `None` leaves one to the planner (the
/// command line's value, a default, or an error of its own).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlanRequest {
    /// Ranks P.
    pub ranks: Option<u32>,
    /// Micro-batches M.
    pub microbatches: Option<u32>,
    /// Stages per rank `v`, for schedules that take it.
    pub stages_per_rank: Option<u32>,
}

/// Why a planner built no plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unbuilt<S> {
    /// The schedule cannot be built for this request (an unmet requirement, an invalid plan): the
    /// search goes on and shows the reason, in plain words.
    Refused(String),
    /// The search cannot go on (e.g. a usage error every request would meet); handed back to the
    /// caller as it is.
    Stop(S),
}

/// Builds validated plans of schedules by name.
pub trait Planner {
    /// What stops a whole search ([`Unbuilt::Stop`]).
    type Stop;

    /// The validated plan of `schedule` for `request`, or why there is none.
    fn plan(
        &mut self,
        schedule: &str,
        request: &PlanRequest,
    ) -> Result<ValidPlan, Unbuilt<Self::Stop>>;

    /// The validated plan of `schedule` for `request` built with `settings` (`NAME`, `VALUE`)
    /// besides its defaults, as `--set NAME=VALUE` gives them (a plugin's variants). A planner
    /// that takes no settings refuses any.
    fn plan_with(
        &mut self,
        schedule: &str,
        request: &PlanRequest,
        settings: &[(String, String)],
    ) -> Result<ValidPlan, Unbuilt<Self::Stop>> {
        if settings.is_empty() {
            self.plan(schedule, request)
        } else {
            Err(Unbuilt::Refused(format!(
                "this planner takes no settings for `{schedule}`"
            )))
        }
    }

    /// Whether `schedule` has a fixed shape (a plan file): a sweep gives it no value.
    fn fixed_shape(&self, schedule: &str) -> bool {
        let _ = schedule;
        false
    }

    /// How far a sweep is, after each of its points (nothing by default).
    fn progress(&mut self, tick: Tick<'_>) {
        let _ = tick;
    }
}

/// How far a sweep has come, after each simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick<'a> {
    /// Points done.
    pub done: u64,
    /// Points in all.
    pub total: u64,
    /// The schedule of the point just done.
    pub schedule: &'a str,
    /// The swept parameter's name.
    pub param: &'a str,
    /// Its value at the point just done.
    pub x: &'a Value,
}
