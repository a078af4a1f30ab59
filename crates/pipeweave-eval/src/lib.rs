//! Analysis of plans: what a simulated step costs on a cluster spec, comparisons of schedules,
//! sweeps of a parameter and the recommend search, as plain data for the views.
//!
//! [`evaluate`] runs a plan on a spec's costs and gives a [`StepReport`]; [`fit`] adapts a spec to
//! a plan's shape by the one rule of every command ([`SpecRule`]); [`Comparison`] rows, [`sweep`]
//! and [`recommend`] build on them, getting their plans from a [`Planner`] the caller implements. Output types derive `Serialize`, so the
//! views print them as JSON unchanged.
//! No IO: nothing here reads files, resolves schedule names or loads plugins.

#![warn(missing_docs)]

mod breakdown;
mod compare;
mod costing;
mod diff;
mod finite;
mod fit;
mod limits;
mod listing;
mod planner;
mod questions;
mod recommend;
mod simulation;
mod split;
mod step;
mod sweep;
mod synthesis;

pub use breakdown::{Breakdown, RankStep, Step, Volumes, step};
pub use compare::{Comparison, Figures, Row, Traits, evaluate_row};
pub use costing::{Costing, Run, TimeUnit};
pub use diff::{
    ActionDiff, MAX_WAITS, PlanDiff, RankDiff, SlowAction, WAIT_SHARE, Wait, WaitedOn, diff,
    measured_timeline, median_step,
};
pub use finite::{finite, non_finite};
pub use fit::{
    Change, Fitted, SpecRule, fit, fit_spec, global_batch, microbatches_at, plan_shape,
    recompute_text, split_layers,
};
pub use limits::{ActivationBudget, activation_budget};
pub use listing::{ListedParam, ListedSchedule, ScheduleListing, Unreached};
pub use pipeweave_param::Value;
/// A part's activation recomputation (the spec's type, for the front ends' `--recompute`).
pub use pipeweave_spec::Recompute;
pub use planner::{PlanRequest, Planner, Tick, Unbuilt};
pub use questions::{ParamCost, dualpipe_param_cost, gpu_hours_recovered_per_million_tokens};
pub use recommend::{
    Candidate, LostOn, M_PER_CONFIG, MAX_CANDIDATE_OPS, MAX_M, MeasuredCandidate,
    MeasuredRecommendation, MeasuredUnmet, Recommendation, RejectedShape, SEARCH_BUDGET,
    SearchSchedule, V_VALUES, Verdict, recommend, recommend_measured,
};
pub use simulation::{RankMemory, RankTimes, Shape, Simulation};
pub use split::{
    MAX_DESCENT_WORK, MAX_MOVES, PRICED_PER_SEARCH, Split, SplitFound, join as join_layers,
    parse_recompute, recompute_options, search_split, search_split_climbing, search_split_from,
    split_problem,
};
pub use step::{Evaluation, MemoryBreakdown, RankReport, StepReport, evaluate, evaluate_on_spec};
pub use sweep::{Metric, Over, Param, Sweep, SweepPoint, SweepSeries, sweep};
pub use synthesis::{
    CostSource, ExactEnded, ExactReport, LibraryPlan, SpecTerms, SynthesisReport, Terms,
    best_within, gib, library_at_placement, same_placement, spec_terms, synthesis_terms,
};
