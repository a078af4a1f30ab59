//! A plugin worker program: `plugin_worker PATH` serves the plugin library at PATH on its standard
//! input and output, as `pipeweave __plugin-worker PATH` does. What any program that runs
//! plugins for a [`pipeweave_plugin_host::Worker`] does; the crate's tests start this one.

use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1) else {
        return ExitCode::from(2);
    };
    match pipeweave_plugin_host::serve_stdio(std::path::Path::new(&path)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}
