//! Why a name could not be resolved or a plan not built: diagnostics, and whether the command line
//! itself was wrong.

use pipeweave_diagnostics::Files;
use pipeweave_diagnostics::{Diagnostic, line_col};

/// What kind of failure: the exit code's reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// Bad input or an invalid plan (exit code 1).
    Invalid,
    /// The command line itself is wrong (exit code 2).
    Usage,
}

/// What a failure is about: the plan (a name, a schedule, a plan file, a plugin) or the cluster
/// spec it was to run on. The Python binding raises `PlanError` or `SpecError` by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Subject {
    /// A schedule, a plan file, a plugin, a plan the validator refuses.
    #[default]
    Plan,
    /// A spec that cannot be read or cannot take the plan.
    Spec,
}

/// A failure as data: what went wrong, as diagnostics with their places where known.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// Invalid input or a usage error.
    pub kind: FailureKind,
    /// At least one error, in the order found.
    pub diagnostics: Vec<Diagnostic>,
    /// What it is about.
    pub subject: Subject,
}

impl Failure {
    /// Bad input, said in one message.
    pub fn invalid(message: impl Into<String>) -> Failure {
        Failure::from_diagnostics(vec![Diagnostic::error(message)])
    }

    /// A usage error, said in one message.
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure {
            kind: FailureKind::Usage,
            diagnostics: vec![Diagnostic::error(message)],
            subject: Subject::Plan,
        }
    }

    /// Bad input, with every diagnostic found.
    pub fn from_diagnostics(diagnostics: Vec<Diagnostic>) -> Failure {
        Failure {
            kind: FailureKind::Invalid,
            diagnostics,
            subject: Subject::Plan,
        }
    }

    /// The same failure, about the spec.
    pub fn about_spec(mut self) -> Failure {
        self.subject = Subject::Spec;
        self
    }

    /// Whether the command line itself was wrong.
    pub fn is_usage(&self) -> bool {
        self.kind == FailureKind::Usage
    }

    /// The process exit code: 1 for invalid input, 2 for a usage error.
    pub fn exit_code(&self) -> u8 {
        match self.kind {
            FailureKind::Invalid => 1,
            FailureKind::Usage => 2,
        }
    }

    /// [`Failure::reason`], with the place of the first error in front when it has one in
    /// `files` (`my.weave:3:7: unknown name `r``): for a row of a file the user wrote.
    pub fn located_reason(&self, files: &Files) -> String {
        let reason = self.reason();
        let place = self
            .diagnostics
            .iter()
            .find(|d| d.is_error())
            .and_then(|d| d.span.as_ref())
            .and_then(|span| {
                let name = files.name(span.file)?;
                let (line, column) = line_col(files.text(span.file)?, span.range.start);
                Some(format!("{name}:{line}:{column}: "))
            });
        place.unwrap_or_default() + &reason
    }

    /// The failure in one line, for a row or a point that could not run: the first error's
    /// message (its first line), and how many more there are.
    pub fn reason(&self) -> String {
        let errors: Vec<&str> = self
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| d.message.lines().next().unwrap_or_default())
            .collect();
        match errors.as_slice() {
            [] => "invalid input".to_owned(),
            [one] => (*one).to_owned(),
            [first, rest @ ..] => format!("{first} (and {} more problems)", rest.len()),
        }
    }
}
