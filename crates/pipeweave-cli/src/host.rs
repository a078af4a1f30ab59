//! The command line's outside world: `pipeweave-host`'s `FsHost` with this binary as every
//! plugin's worker process (the hidden `__plugin-worker` subcommand) and its warnings on standard
//! error.

use pipeweave_host::{FsHost, WorkerCommand};
use std::path::Path;
use std::process::ExitCode;

/// The hidden subcommand that serves one plugin library (`main.rs` declares it by this name).
pub const WORKER_SUBCOMMAND: &str = "__plugin-worker";

/// The worker process: serves the plugin library at `path` on standard input and output until
/// the parent closes them. It prints nothing of its own: the parent reports every failure.
pub fn serve_worker(path: &Path) -> ExitCode {
    match pipeweave_plugin_host::serve_stdio(path) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

/// The host of one command: plugins served by this executable, warnings on standard error.
pub fn host() -> FsHost {
    let worker = WorkerCommand {
        program: None,
        args: vec![WORKER_SUBCOMMAND.into()],
    };
    FsHost::new(worker, Box::new(crate::output::warning))
}
