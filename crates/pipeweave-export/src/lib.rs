//! Plan formats in and out: actions, PyTorch CSV, JSON plan, Chrome trace.
//!
//! This is the only crate that knows output formats. It never reads files itself: readers take the
//! text and a `FileId`, and return a plan or diagnostics with spans.

pub mod actions;

pub use actions::{ActionsFile, read_actions, write_actions};
