//! Where output goes: standard output or a file, warnings and failures on standard error, and the
//! exit code (0 success, 1 invalid input or plan, 2 usage error).

#![allow(clippy::print_stderr)]

use crate::diagnostics::Renderer;
use pipeweave_source::{Failure, Files};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// Writes `text` to `output`, or to standard output.
pub fn emit(output: Option<&Path>, text: &str) -> Result<(), Failure> {
    match output {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| Failure::invalid(format!("cannot write `{}`: {e}", path.display()))),
        None => {
            let mut out = std::io::stdout().lock();
            // A closed pipe (e.g. `| head`) is not an error of ours.
            let _ = out.write_all(text.as_bytes());
            Ok(())
        }
    }
}

/// Prints rendered text (a warning) on standard error.
pub fn warn(text: &str) {
    eprint!("{text}");
}

/// A warning in one line on standard error.
pub fn warning(message: &str) {
    eprintln!("warning: {message}");
}

/// The exit code of a command's result, its failure rendered on standard error.
pub fn finish(result: Result<(), Failure>, files: &Files, max_diagnostics: usize) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            let text = Renderer::new(files, max_diagnostics).failure(&f);
            let _ = std::io::stderr().lock().write_all(text.as_bytes());
            ExitCode::from(f.exit_code())
        }
    }
}
