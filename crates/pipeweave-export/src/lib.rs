//! Plan formats in and out: actions, PyTorch CSV, JSON plan, Chrome trace.
//!
//! This is the only crate that knows output formats. It never reads files itself: readers take the
//! text and a `FileId`, and return a plan or diagnostics with spans.

pub mod actions;
pub mod json;
pub mod timing;

pub use actions::{ActionsFile, read_actions, write_actions};
pub use json::{PlanJson, read_json, write_json};
pub use timing::{Interval, Timing};
