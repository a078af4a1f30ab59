//! The one guard of every result's figures: a command's result leaves the application layer only
//! with every figure a finite number ([`pipeweave_eval::finite`]).

use pipeweave_source::Failure;
use serde::Serialize;

/// `value`, the result of `what`, once every figure in it is a finite number.
pub(crate) fn finished<T: Serialize>(what: &str, value: T) -> Result<T, Failure> {
    pipeweave_eval::finite(what, value).map_err(|d| Failure::from_diagnostics(vec![d]))
}

/// A result that is shown even when it holds nothing that ran, with the failure to report after
/// it then (a comparison or a sweep whose schedules all failed: the table says why, the exit code
/// says nothing ran).
#[derive(Debug)]
pub struct Partial<T> {
    /// The result.
    pub value: T,
    /// Why it counts as a failure, when nothing in it ran.
    pub failure: Option<Failure>,
}
