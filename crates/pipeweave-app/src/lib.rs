//! The application layer: every command of pipeweave as a function from a typed request to a
//! typed result, for the two front ends (the `pipeweave` command line and the Python binding),
//! which keep only the conversion of their arguments and the writing of the output.
//!
//! A command runs in a [`Session`]: a [`Host`](pipeweave_source::Host) that reaches files,
//! schedule folders and plugin workers (the front end's, its folders already set), the texts read
//! (what diagnostics point into), the command's costs (what a `synth:` schedule is searched
//! under), and the front end's [`Events`] (what the user is told on the way, and how far a search
//! is). Every result's figures are checked once, here, where it is made: a figure that is not a
//! finite number is an error, never `inf` in a table. Failures are diagnostics to the edge
//! ([`Failure`](pipeweave_source::Failure)).
//!
//! No printing and no files of its own: output is the front end's. The one outside fact it reads
//! is the clock, for `synthesize`'s time limit.

#![warn(missing_docs)]

mod calibrate;
mod catalog;
mod compare;
mod diff;
mod draw;
mod finished;
mod many;
mod over;
mod recommend;
mod report;
mod request;
mod session;
mod single;
mod sweep;
mod synthesize;

pub use calibrate::{CalibrateRequest, Calibrated, calibrate};
pub use catalog::{CheckedSchedule, NAMES_RULE, check, list};
pub use compare::{CompareRequest, compare};
pub use diff::{DiffRequest, Diffed, diff};
pub use draw::{Drawn, RenderRequest, Rendered, TimeWindow, render};
pub use finished::Partial;
pub use over::{ArgError, OverArg, parse_over};
pub use pipeweave_source::{Flag, FrontEnd};
pub use recommend::{recommend, recommend_measured};
pub use report::{ReportRequest, report};
pub use request::{CostsArg, Loaded};
pub use session::{Events, Quiet, Session, Told};
pub use single::{
    ExportFormat, Exported, MAX_ROWS, ShowWindow, Simulated, export, export_loaded, run, show,
    simulate, simulate_loaded, validate,
};
pub use sweep::{SweepRequest, sweep};
pub use synthesize::{MAX_MEMORY_GIB, PlacementArg, SynthesizeRequest, Synthesized, synthesize};
