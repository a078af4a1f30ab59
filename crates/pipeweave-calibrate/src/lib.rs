//! Measured costs: what a profiled run measured ([`measure`], from a matched [`Run`]), the costs
//! file that holds it ([`Calibration`], written by [`write_costs`] and read by [`read_costs`];
//! `docs/plan-vs-actual.md` documents it), and the simulator's costs for any plan from it
//! ([`MeasuredCosts`]).
//!
//! Times are seconds; bytes are bytes. Every figure is a median (with its quartiles and extremes)
//! of durations and byte counts the traces recorded, but for each link's latency and bandwidth,
//! a least-squares line through the link probe's points ([`fit`]); what a plan needs that the run
//! did not measure is derived by a rule its notes name.
//!
//! [`Run`]: pipeweave_trace::Run

#![warn(missing_docs)]

mod file;
mod measure;
mod memory;
mod model;
mod probe;
mod stats;

pub use file::{
    Calibration, Cut, FORMAT_NAME, FORMAT_VERSION, Gaps, Link, Measured, Overhead, PairCost, Part,
    RankMeasured, RunMeasured, SavedBytes, Sources, read_costs, write_costs,
};
pub use measure::{MeasureInput, measure, measure_runs};
pub use memory::{ZB_KEPT_BY_W, saved_peaks};
pub use model::MeasuredCosts;
pub use probe::{Fit, LinkFit, ProbeCosts, ReducePoint, TransferPoint, fit};
pub use stats::Stats;

#[cfg(test)]
mod tests;
