//! What can go wrong with a plugin, each case naming the file.

use pipeweave_check::Problem;
use std::path::PathBuf;

/// A plugin failure. Every variant names the plugin file (or the places searched for it).
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// A name that cannot be a plugin's (it would not be a file name the search can build).
    #[error("`{name}` is not a plugin name (use letters, digits, `-` and `_`)")]
    BadName {
        /// The name as given.
        name: String,
    },

    #[error("no plugin named `{name}`: looked for {file} in {}{}", searched_text(.searched), refused_text(.refused))]
    /// No plugin of that name on the search path.
    NotFound {
        /// The name looked for.
        name: String,
        /// The library file name it stands for on this platform (`libpipeweave_plugin_dualpipe.so`).
        file: String,
        /// The directories searched, in order, with why each was searched.
        searched: Vec<(PathBuf, String)>,
        /// The entries of `PIPEWEAVE_PLUGIN_PATH` that were not searched (not absolute).
        refused: Vec<PathBuf>,
    },

    /// The file could not be loaded as a dynamic library.
    #[error("{} is not a loadable library: {reason}", .path.display())]
    NotLoadable {
        /// The file.
        path: PathBuf,
        /// The loader's reason.
        reason: String,
    },

    /// The library does not export the plugin entry point.
    #[error("{} has no entry point `{symbol}`; it is not a pipeweave plugin", .path.display())]
    MissingEntry {
        /// The library.
        path: PathBuf,
        /// The symbol looked for.
        symbol: &'static str,
    },

    #[error("{} speaks plugin ABI version {found}, but this pipeweave speaks version {expected}; rebuild the plugin against this pipeweave", .path.display())]
    /// The plugin was built for another ABI version.
    AbiMismatch {
        /// The library.
        path: PathBuf,
        /// The version the plugin speaks.
        found: u32,
        /// The version this host speaks.
        expected: u32,
    },

    #[error("the plugin {} panicked while {during}: {message}", .path.display())]
    /// The plugin panicked inside a call (caught at its boundary).
    Panicked {
        /// The library.
        path: PathBuf,
        /// What the host had asked for (`building a plan`).
        during: &'static str,
        /// The panic's message.
        message: String,
    },

    /// The plugin's reply breaks the protocol or describes an impossible plan.
    #[error("the plugin {} returned malformed output: {detail}", .path.display())]
    Malformed {
        /// The library.
        path: PathBuf,
        /// What is wrong with the reply.
        detail: String,
    },

    /// The plugin declined the request (an unmet requirement); its message names the schedule.
    #[error("{message}")]
    Refused {
        /// The library.
        path: PathBuf,
        /// The plugin's schedule name.
        name: String,
        /// The plugin's reason.
        message: String,
    },

    /// A `--set NAME=VALUE` the plugin does not declare, one set twice, or a value its parameter
    /// does not take.
    #[error("{name}: {message}")]
    BadSetting {
        /// The library.
        path: PathBuf,
        /// The plugin's schedule name.
        name: String,
        /// What is wrong with the setting.
        message: String,
    },

    #[error("the plugin {} returned an invalid plan: {}", .path.display(), problems_text(.problems))]
    /// The plugin returned a plan the validator rejects.
    InvalidPlan {
        /// The library.
        path: PathBuf,
        /// Every problem the validator found.
        problems: Vec<Problem>,
    },
}

impl PluginError {
    /// The plugin file concerned, when there is one.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            PluginError::BadName { .. } | PluginError::NotFound { .. } => None,
            PluginError::NotLoadable { path, .. }
            | PluginError::MissingEntry { path, .. }
            | PluginError::AbiMismatch { path, .. }
            | PluginError::Panicked { path, .. }
            | PluginError::Malformed { path, .. }
            | PluginError::Refused { path, .. }
            | PluginError::BadSetting { path, .. }
            | PluginError::InvalidPlan { path, .. } => Some(path),
        }
    }
}

fn searched_text(searched: &[(PathBuf, String)]) -> String {
    if searched.is_empty() {
        return "no directory (no place to look was given)".to_owned();
    }
    searched
        .iter()
        .map(|(dir, why)| format!("{} ({why})", dir.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn refused_text(refused: &[PathBuf]) -> String {
    refused
        .iter()
        .map(|d| format!("; {}", crate::search::refused_text(d)))
        .collect()
}

fn problems_text(problems: &[Problem]) -> String {
    let first = problems
        .first()
        .map_or_else(|| "no details".to_owned(), ToString::to_string);
    match problems.len() {
        0 | 1 => first,
        2 => format!("{first} (and 1 more problem)"),
        n => format!("{first} (and {} more problems)", n - 1),
    }
}
