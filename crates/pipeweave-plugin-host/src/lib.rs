//! Finding and loading pipeweave schedule plugins, and turning their replies into validated plans.
//!
//! This crate holds the only `unsafe` code for loading (in `load.rs`). It reads no environment: the
//! CLI gives it the places to look ([`SearchPath::standard`]). Libraries are never unloaded (a
//! `dlclose` can run thread-local destructors of code that is gone), so a loaded plugin lives for
//! the rest of the process.
//!
//! Every plan a plugin returns is checked twice before it is handed out: its structure when it is
//! built ([`pipeweave_plan::Plan::new`]) and its programs by [`pipeweave_check::validate`].

#![warn(missing_docs)]

mod error;
mod load;
mod search;

pub use error::PluginError;
pub use load::Plugin;
pub use search::{Found, Origin, SearchPath, discover, file_name, find, is_plugin_name};

/// The file name prefix of a plugin (before the platform's `lib`/`.so` decoration): the plugin
/// `dualpipe` is the file `libpipeweave_plugin_dualpipe.so` on Linux.
pub const FILE_PREFIX: &str = "pipeweave_plugin_";

/// Finds the plugin called `name` on `search` and loads it, checking that it calls itself `name`.
pub fn load_named(name: &str, search: &SearchPath) -> Result<Plugin, PluginError> {
    load_as(name, &find(name, search)?)
}

/// Loads a plugin [`discover`] found, checking that it calls itself by its file's name.
pub fn load_found(found: &Found) -> Result<Plugin, PluginError> {
    load_as(&found.name, &found.path)
}

fn load_as(name: &str, path: &std::path::Path) -> Result<Plugin, PluginError> {
    let plugin = Plugin::load(path)?;
    // Cargo writes `-` as `_` in file names, so both spellings match.
    if plugin.metadata().name.replace('-', "_") != name.replace('-', "_") {
        return Err(PluginError::Malformed {
            path: path.to_path_buf(),
            detail: format!(
                "the file is named for `{name}` but the plugin calls itself `{}`",
                plugin.metadata().name
            ),
        });
    }
    Ok(plugin)
}
