//! The package's exceptions, a small hierarchy under `pipeweave.Error`, and failures turned into
//! them with the command line's rendered text (`pipeweave_diagnostics::Renderer`).

use pipeweave_diagnostics::{DEFAULT_MAX_DIAGNOSTICS, Diagnostic, Files, Renderer};
use pipeweave_source::{Failure, Subject};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    pipeweave,
    Error,
    PyException,
    "Every error pipeweave raises; its text is what the command line prints."
);
create_exception!(
    pipeweave,
    UsageError,
    Error,
    "A call the schedule cannot take: a parameter it does not declare, a value its type does not \
     take, a schedule without ranks or micro-batches (the command line's exit code 2)."
);
create_exception!(
    pipeweave,
    PlanError,
    Error,
    "No valid plan: a name nothing answers to, a schedule or plan file with errors, requirements \
     the parameters do not meet, a plan the validator refuses, a plugin that failed, a format \
     that cannot carry the plan."
);
create_exception!(
    pipeweave,
    SpecError,
    Error,
    "A cluster spec that cannot be read, or that does not fit the plan."
);

/// Which exception a failure becomes, besides a usage failure (always `UsageError`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Plan,
    Spec,
}

/// A failure, rendered while the files it points into are at hand (without the interpreter).
#[derive(Debug)]
pub struct Raised {
    usage: bool,
    kind: Kind,
    text: String,
}

impl Raised {
    /// `failure` rendered over `files` as the command line renders it; a `SpecError` when it is
    /// about the spec.
    pub fn new(failure: &Failure, files: &Files) -> Raised {
        let text = Renderer::new(files, DEFAULT_MAX_DIAGNOSTICS).failure(&failure.diagnostics);
        // The exception's class says it is an error: its text starts with what went wrong.
        let text = text.strip_prefix("error: ").unwrap_or(&text);
        Raised {
            usage: failure.is_usage(),
            kind: match failure.subject {
                Subject::Plan => Kind::Plan,
                Subject::Spec => Kind::Spec,
            },
            text: text.trim_end().to_owned(),
        }
    }

    /// Diagnostics with no file to point into.
    pub fn diagnostics(diagnostics: Vec<Diagnostic>) -> Raised {
        Raised::new(&Failure::from_diagnostics(diagnostics), &Files::default())
    }
}

impl From<Raised> for PyErr {
    fn from(r: Raised) -> PyErr {
        match (r.usage, r.kind) {
            (true, _) => UsageError::new_err(r.text),
            (false, Kind::Plan) => PlanError::new_err(r.text),
            (false, Kind::Spec) => SpecError::new_err(r.text),
        }
    }
}

/// Adds the exceptions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("UsageError", py.get_type::<UsageError>())?;
    m.add("PlanError", py.get_type::<PlanError>())?;
    m.add("SpecError", py.get_type::<SpecError>())?;
    Ok(())
}
