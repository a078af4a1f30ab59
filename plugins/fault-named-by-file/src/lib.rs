//! Test fixture: a DualPipeV plugin that calls itself by the name of the file its worker loads
//! (the worker's last argument, `libpipeweave_plugin_NAME.so`), so that one library under many
//! names (links) is many plugins for `list`, without building each.

use pipeweave_generators::DualPipeV;
use pipeweave_plugin_api::{Generator, Metadata, Request};

struct NamedByFile;

/// `NAME` from the worker's last argument, `.../libpipeweave_plugin_NAME.so`.
fn name_of_file() -> Option<String> {
    let path = std::path::PathBuf::from(std::env::args_os().last()?);
    let file = path.file_name()?.to_str()?;
    let name = file
        .strip_prefix(std::env::consts::DLL_PREFIX)?
        .strip_prefix("pipeweave_plugin_")?
        .strip_suffix(std::env::consts::DLL_SUFFIX)?;
    Some(name.to_owned())
}

impl Generator for NamedByFile {
    fn metadata() -> Metadata {
        Metadata {
            name: name_of_file().unwrap_or_else(|| "fault-named-by-file".into()),
            description: "test fixture: named by its file".into(),
            ..DualPipeV::metadata()
        }
    }

    fn generate(request: &Request) -> Result<pipeweave_plan::Plan, String> {
        DualPipeV::generate(request)
    }
}

pipeweave_plugin_api::export_plugin!(NamedByFile);
