//! `--spec FILE|NAME`: a cluster spec from a TOML file or one shipped in the binary.

use crate::failure::Failure;
use crate::host::{Host, shown_name};
use pipeweave_diagnostics::Diagnostic;
use pipeweave_diagnostics::Files;
use pipeweave_spec::{SHIPPED_SPECS, Spec, shipped_spec};

/// A spec and where it came from.
#[derive(Debug, Clone)]
pub struct LoadedSpec {
    /// The spec.
    pub spec: Spec,
    /// Whether it is the built-in default (`default`).
    pub default: bool,
    /// Warnings found while reading it (never errors).
    pub warnings: Vec<Diagnostic>,
}

/// Reads the spec `arg` names: an existing file (or `-`, standard input) first, then a shipped
/// spec's name (`default` is the built-in default). Every problem of the file is a diagnostic with its place.
pub fn load_spec(arg: &str, host: &mut dyn Host, files: &mut Files) -> Result<LoadedSpec, Failure> {
    let (name, text, default) = if host.is_file(arg) {
        (
            shown_name(arg).to_owned(),
            host.read(arg).map_err(Failure::about_spec)?,
            false,
        )
    } else if let Some(shipped) = shipped_spec(arg) {
        (
            shipped.file.to_owned(),
            shipped.source.to_owned(),
            shipped.name == "default",
        )
    } else {
        let names: Vec<&str> = SHIPPED_SPECS.iter().map(|s| s.name).collect();
        return Err(Failure::invalid(format!(
            "no spec file or shipped spec named `{arg}` (shipped: {}, or default)",
            names.join(", ")
        ))
        .about_spec());
    };
    let file = files.add(name, text);
    let (spec, diags) = pipeweave_spec::parse(files.text(file).unwrap_or_default(), file);
    match spec {
        Some(spec) if !diags.iter().any(|d| d.is_error()) => Ok(LoadedSpec {
            spec,
            default,
            warnings: diags,
        }),
        _ => Err(Failure::from_diagnostics(diags).about_spec()),
    }
}
