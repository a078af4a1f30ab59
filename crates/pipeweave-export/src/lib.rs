//! Plan formats in and out: actions, PyTorch CSVs, JSON plan, Chrome trace.
//!
//! This is the only crate that knows output formats. It never reads files itself: readers take the
//! text and a `FileId`, and return a plan or diagnostics with spans; writers take a
//! [`ValidPlan`](pipeweave_check::ValidPlan) (a plan is validated before it is exported) and make a
//! [`Document`], written to any `io::Write` in chunks as it is made (the `write_*` functions give
//! its whole text), or, when a format cannot express the plan, a diagnostic saying why and what to
//! use instead. [`unvalidated`] has the two plan formats' writers for plans not known to be valid.

#![warn(missing_docs)]

pub mod actions;
mod document;
mod format;
pub mod json;
mod json_text;
pub mod pytorch;
pub mod split;
pub mod trace;
pub mod unvalidated;

pub use actions::{ActionsFile, ActionsText, actions_text, read_actions, write_actions};
pub use document::{CHUNK, Document};
pub use format::PlanFormat;
pub use json::{JsonText, PlanJson, json_text, read_json, write_json};
pub use pytorch::{
    CommsCsv, CommsFile, StepAt, pytorch_comms_csv, pytorch_csv, read_pytorch_comms, write_pytorch,
    write_pytorch_comms,
};
pub use split::{SplitText, megatron_layout, recompute_flags, torchtitan_fragment};
pub use trace::{ChromeTrace, chrome_trace, write_chrome_trace};
