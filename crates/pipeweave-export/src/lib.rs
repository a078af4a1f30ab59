//! Plan formats in and out: actions, PyTorch CSVs, JSON plan, Chrome trace.
//!
//! This is the only crate that knows output formats. It never reads files itself: readers take the
//! text and a `FileId`, and return a plan or diagnostics with spans; writers take a
//! [`ValidPlan`](pipeweave_check::ValidPlan) (a plan is validated before it is exported) and return
//! the text or, when a format cannot express the plan, a diagnostic saying why and what to use
//! instead. [`unvalidated`] has the two plan formats' writers for plans not known to be valid.

#![warn(missing_docs)]

pub mod actions;
mod format;
pub mod json;
mod json_text;
pub mod pytorch;
pub mod trace;
pub mod unvalidated;

pub use actions::{ActionsFile, read_actions, write_actions};
pub use format::PlanFormat;
pub use json::{PlanJson, read_json, write_json};
pub use pytorch::{CommsFile, StepAt, read_pytorch_comms, write_pytorch, write_pytorch_comms};
pub use trace::write_chrome_trace;
