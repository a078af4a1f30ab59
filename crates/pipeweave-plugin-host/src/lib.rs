//! Finding and loading pipeweave schedule plugins, running them in a worker process, and turning
//! their replies into validated plans.
//!
//! A plugin runs in a worker process ([`Worker`]): a program that calls [`serve_stdio`] loads the
//! library and answers requests over its standard input and output, and the host enforces a time
//! limit on every request and a bound on every reply, so that a crash, an abort or a hang of
//! the plugin is an error naming the plugin file, never the host's end. [`Plugin`] calls a plugin
//! in this process (what the worker does, and what the benchmarks compare the worker with).
//!
//! This crate holds the only `unsafe` code for loading (in `library`) and for the worker's pipes.
//! It reads no environment: the caller gives it the places to look ([`SearchPath::standard`]) and
//! the worker command. Libraries are never unloaded (a `dlclose` can run thread-local destructors
//! of code that is gone), so a loaded plugin lives for the rest of its process.
//!
//! Every plan a plugin returns is checked before it is handed out: its shape against the request
//! (ranks, micro-batches, stages spread over every rank), its structure
//! ([`pipeweave_plan::Plan::new`]) and its programs ([`pipeweave_check::validate`]).

#![warn(missing_docs)]

mod error;
mod library;
mod path_list;
mod plugin;
mod reply;
mod search;
mod worker;

pub use error::PluginError;
pub use path_list::{MAX_ENTRIES, MAX_ENTRY_BYTES, PathList, Unsearched, Why};
pub use plugin::Plugin;
pub use search::{Found, Origin, SearchPath, discover, file_name, find, find_file, is_plugin_name};
pub use worker::{Worker, WorkerOptions, descriptor_limit, serve, serve_stdio};

/// The file name prefix of a plugin (before the platform's `lib`/`.so` decoration): the plugin
/// `dualpipe` is the file `libpipeweave_plugin_dualpipe.so` on Linux.
pub const FILE_PREFIX: &str = "pipeweave_plugin_";

/// Finds the plugin called `name` on `search` and loads it into this process, checking that it
/// calls itself `name`.
pub fn load_named(name: &str, search: &SearchPath) -> Result<Plugin, PluginError> {
    Plugin::load(&find(name, search)?)?.check_name(name)
}

/// Loads a plugin [`discover`] found into this process, checking that it calls itself by its
/// file's name.
pub fn load_found(found: &Found) -> Result<Plugin, PluginError> {
    Plugin::load(&found.path)?.check_name(&found.name)
}
