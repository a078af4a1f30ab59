//! A plugin called in this process: fast, but a crash, an abort or a hang of the plugin is this
//! process's. The command line uses [`crate::Worker`] instead; this is what the worker runs, and
//! what the benchmarks hold the worker against.

use crate::library::Library;
use crate::{PluginError, reply};
use pipeweave_check::ValidPlan;
use pipeweave_plugin_api::protocol::{self, Metadata, Request};
use std::path::{Path, PathBuf};

/// A plugin loaded into this process. The library stays loaded for the life of the process.
#[derive(Debug, Clone)]
pub struct Plugin {
    path: PathBuf,
    library: Library,
    metadata: Metadata,
}

impl Plugin {
    /// Loads the library at `path` and reads its metadata.
    pub fn load(path: &Path) -> Result<Plugin, PluginError> {
        let library = Library::open(path).map_err(|f| f.into_error(path, "loading"))?;
        let metadata = library
            .metadata(|bytes| reply::metadata(path, bytes))
            .map_err(|f| f.into_error(path, "describing itself"))??;
        Ok(Plugin {
            path: path.to_path_buf(),
            library,
            metadata,
        })
    }

    /// The library file the plugin was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The plugin's metadata: its schedule name, description, parameters and requirements.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// A request with the user's `--set NAME=VALUE` settings checked against the declared
    /// parameters and every other parameter at its default.
    pub fn request(
        &self,
        ranks: u32,
        microbatches: u32,
        settings: &[(String, String)],
    ) -> Result<Request, PluginError> {
        reply::request(&self.path, &self.metadata, ranks, microbatches, settings)
    }

    /// Asks the plugin for a plan and returns it only once it has the shape asked for, is
    /// structurally sound and is valid.
    pub fn generate(&self, request: &Request) -> Result<ValidPlan, PluginError> {
        let bytes = protocol::encode_request(request);
        self.library
            .generate(&bytes, |reply| {
                reply::plan(&self.path, &self.metadata, request, reply)
            })
            .map_err(|f| f.into_error(&self.path, "building a plan"))?
    }

    /// Checks that the plugin calls itself `name` (the name its file was found by).
    pub(crate) fn check_name(self, name: &str) -> Result<Plugin, PluginError> {
        reply::check_name(&self.path, &self.metadata, name)?;
        Ok(self)
    }
}
