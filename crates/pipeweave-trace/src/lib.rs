//! Profiler traces of a run: each rank's Chrome/Kineto trace read as the pipeline actions it ran
//! ([`read_trace`]), and the traces of a run matched against the plan it ran ([`match_plan`]).
//!
//! This crate does no IO: it takes the text of each file (a front end reads and unzips it) and
//! returns values or located diagnostics. It computes no costs: measuring from a [`Run`] is the
//! calibration's job.

#![warn(missing_docs)]

pub mod infer;
pub mod matching;
pub mod read;

pub use infer::infer_plan;
pub use matching::{RankRun, RankStep, Run, Saved, Timed, TimedStep, match_plan};
pub use read::{
    Clock, Message, Naming, PartGradient, Probe, ProbePoint, RankTrace, SavedRecord, StepSpan,
    TraceMeta, TraceSpan, read_trace,
};

#[cfg(test)]
mod tests;
