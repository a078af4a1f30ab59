//! The step-plan model: pipelines, stage placement, replicas, the ordered actions of every rank, and
//! the lowering pass that adds communication.
//!
//! This crate does no IO and knows no file format, only the cell text of one action or step
//! ([`cell`]) that every format shares; files are read and written in `pipeweave-export`.
//! A [`Plan`] is structurally sound by construction (every pipeline has the same number of stages,
//! every stage sits on an existing rank, micro-batches belong to one pipeline each) but its programs
//! may still be wrong: deciding that is the job of `pipeweave-check`.

#![warn(missing_docs)]

mod action;
pub mod cell;
mod forward_only;
mod lower;
mod lowered;
pub mod memory;
mod plan;
mod slots;
mod timing;
mod transfers;

pub use action::{Action, Kind, Op, Ops};
pub use lower::{lower, try_lower};
pub use lowered::{LoweredPlan, Reduction, Sent, Step, Steps};
pub use plan::{Dir, MAX_MICROBATCH_ID, Pipeline, Plan, PlanError};
pub use slots::WorkSlots;
pub use timing::{Interval, Timing, TimingError};
pub use transfers::{Sends, reductions, sends};

#[cfg(any(test, feature = "testing"))]
pub mod testing;

/// The most ranks a plan may have: every reader, builder and command line refuses more.
pub const MAX_RANKS: u32 = 1 << 16;

/// The most compute operations a plan may have (a pair counts two), some 5 GB to simulate: the
/// schedule language refuses parameters that ask for more before it builds anything (every stage
/// runs a forward and a backward of every micro-batch of its pipeline, so a plan has at least
/// 2·S·M operations), and stops a schedule that makes more.
pub const MAX_OPS: usize = 1 << 26;

#[cfg(test)]
mod tests;
