//! Helpers shared by the integration tests.

use pipeweave_diagnostics::FileId;
use pipeweave_dsl::{Args, Compiled, library};

/// Compiles a library schedule, panicking with the rendered diagnostics when it fails.
pub fn compile_library(name: &str, args: &Args) -> Result<Compiled, String> {
    let entry = library::get(name).ok_or_else(|| format!("no library schedule {name}"))?;
    pipeweave_dsl::compile(FileId(0), entry.source, args).map_err(|diags| {
        diags
            .iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; ")
    })
}
