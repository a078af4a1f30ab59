//! `pipeweave serve` and `pipeweave lsp`: the playground's server and the language server, each
//! its own crate; this converts their arguments and says where the playground listens.

use crate::output;
use pipeweave_source::{Failure, Files};
use std::path::PathBuf;
use std::process::ExitCode;

/// `pipeweave serve [--port N] [FILE.weave]`: serves the playground until Ctrl-C, its address on
/// standard output once it listens.
pub fn serve(port: u16, file: Option<PathBuf>, max_diagnostics: usize) -> ExitCode {
    let options = pipeweave_serve::Options { port, file };
    let served = pipeweave_serve::serve(&options, |url| {
        let _ = output::emit(
            None,
            &format!(
                "pipeweave playground: {url} (listening on 127.0.0.1 only; Ctrl-C stops it)\n"
            ),
        );
    });
    let result = served.map_err(|e| Failure::invalid(e.to_string()));
    output::finish(result, &Files::default(), max_diagnostics)
}

/// `pipeweave lsp`: the language server over standard input and output, until the editor says
/// `exit`.
pub fn lsp(max_diagnostics: usize) -> ExitCode {
    let result = pipeweave_lsp::run_stdio().map_err(Failure::invalid);
    output::finish(result, &Files::default(), max_diagnostics)
}
