//! Resolving what a user names: a PLAN or SCHEDULE argument (a library schedule, a schedule of the
//! user's folders by name, a `.weave` file, `synth:PLACEMENT` (a schedule synthesized by `pipeweave-synth`),
//! `plugin:NAME` or a plugin's name, a plugin library, an actions or JSON plan file) becomes a [`Source`] that says what it declares and builds validated
//! plans; a `--spec` argument becomes a [`LoadedSpec`]; every schedule there is by name is the
//! [`Catalog`]; [`check_schedule`] checks a `.weave` file on a grid of P and M.
//!
//! Pure: files and plugins are reached through a [`Host`] the caller implements (the command
//! line with `std::fs` and `pipeweave-plugin-host`). The texts read go into a [`Files`] table, which
//! the spans of every diagnostic point into. Failures are data: a [`Failure`] holds diagnostics and
//! whether the command line was wrong.

#![warn(missing_docs)]

mod build;
mod catalog;
mod check;
mod declared;
mod failure;
mod host;
mod params;
mod source;
mod spec;
mod synthesized;
mod words;

pub use build::{Built, Origins, problem_diagnostics};
pub use catalog::{Catalog, Entry, Origin, Shadowed, library, plugins, twins};
pub use check::{Checked, GRID_RANKS, check_schedule};
pub use declared::{Declared, Param};
pub use failure::{Failure, FailureKind, Subject};
pub use host::{
    FolderFile, Host, PLUGIN_PREFIX, PluginId, PluginInfo, PluginRequest, PluginTarget, STDIN,
    STDIN_NAME, SynthesisCosts, SynthesisTerms, UnitTerms, looks_like_path, shown_name,
};
pub use params::{Params, Setting, SettingError};
pub use pipeweave_diagnostics::Files;
pub use source::{Source, SourceKind, weave_file};
pub use spec::{LoadedSpec, load_spec};
pub use synthesized::{PLACEMENTS, SYNTH_PREFIX};
pub use words::{Flag, FrontEnd, number};
