//! What can go wrong with a plugin, each case naming the file.

use pipeweave_check::Problem;
use std::path::PathBuf;
use std::time::Duration;

/// A plugin failure. Every variant names the plugin file (or the places searched for it).
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("`{name}` is not a plugin name (use letters, digits, `-` and `_`)")]
    BadName { name: String },

    #[error("no plugin named `{name}`: looked for {file} in {}{}", searched_text(.searched), refused_text(.refused))]
    NotFound {
        name: String,
        file: String,
        /// The directories searched, in order, with why each was searched.
        searched: Vec<(PathBuf, String)>,
        /// The entries of `PIPEWEAVE_PLUGIN_PATH` that were not searched (not absolute).
        refused: Vec<PathBuf>,
    },

    #[error("no plugin file `{file}` in {}{}; give a path (`./{file}`) to load a file from elsewhere", searched_text(.searched), refused_text(.refused))]
    FileNotFound {
        file: String,
        /// The directories searched, in order, with why each was searched.
        searched: Vec<(PathBuf, String)>,
        /// The entries of `PIPEWEAVE_PLUGIN_PATH` that were not searched (not absolute).
        refused: Vec<PathBuf>,
    },

    #[error("{} is not a loadable library: {reason}", .path.display())]
    NotLoadable { path: PathBuf, reason: String },

    #[error("{} has no entry point `{symbol}`; it is not a pipeweave plugin", .path.display())]
    MissingEntry { path: PathBuf, symbol: &'static str },

    #[error("{} speaks plugin ABI version {found}, but this pipeweave speaks version {expected}; rebuild the plugin against this pipeweave", .path.display())]
    AbiMismatch {
        path: PathBuf,
        found: u32,
        expected: u32,
    },

    #[error("{} has no `{field}` function in its entry table (a null pointer); it is not a usable plugin", .path.display())]
    NullFunction { path: PathBuf, field: String },

    #[error("the plugin {} panicked while {during}: {message}", .path.display())]
    Panicked {
        path: PathBuf,
        during: &'static str,
        message: String,
    },

    #[error("the plugin {} returned malformed output: {detail}", .path.display())]
    Malformed { path: PathBuf, detail: String },

    /// The plugin declined the request (an unmet requirement); its message names the schedule.
    #[error("{message}")]
    Refused {
        path: PathBuf,
        name: String,
        message: String,
    },

    #[error("{name}: {message}")]
    BadSetting {
        path: PathBuf,
        name: String,
        message: String,
    },

    #[error("the plugin {} returned a plan of the wrong shape: {detail}", .path.display())]
    WrongShape { path: PathBuf, detail: String },

    #[error("the plugin {} crashed while {during}: {how}", .path.display())]
    Crashed {
        path: PathBuf,
        during: &'static str,
        /// The signal or exit status, in words.
        how: String,
    },

    #[error("the plugin {} did not finish {during} within the time limit of {}; it was stopped", .path.display(), seconds(*.limit))]
    TimedOut {
        path: PathBuf,
        during: &'static str,
        limit: Duration,
    },

    #[error("the plugin {} is not asked again: it exceeded the time limit of {} earlier in this run", .path.display(), seconds(*.limit))]
    TimedOutBefore { path: PathBuf, limit: Duration },

    #[error("the plugin {} sent a reply of {} while {during}, more than the limit of {}; it was stopped", .path.display(), bytes(*.size), bytes(*.limit))]
    ReplyTooLarge {
        path: PathBuf,
        during: &'static str,
        size: u64,
        limit: u64,
    },

    #[error("the worker process for the plugin {} failed: {detail}", .path.display())]
    Worker { path: PathBuf, detail: String },

    #[error("the plugin {} returned an invalid plan: {}", .path.display(), problems_text(.problems))]
    InvalidPlan {
        path: PathBuf,
        problems: Vec<Problem>,
    },
}

impl PluginError {
    /// The plugin file concerned, when there is one.
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            PluginError::BadName { .. }
            | PluginError::NotFound { .. }
            | PluginError::FileNotFound { .. } => None,
            PluginError::NotLoadable { path, .. }
            | PluginError::MissingEntry { path, .. }
            | PluginError::AbiMismatch { path, .. }
            | PluginError::NullFunction { path, .. }
            | PluginError::Panicked { path, .. }
            | PluginError::Malformed { path, .. }
            | PluginError::Refused { path, .. }
            | PluginError::BadSetting { path, .. }
            | PluginError::WrongShape { path, .. }
            | PluginError::Crashed { path, .. }
            | PluginError::TimedOut { path, .. }
            | PluginError::TimedOutBefore { path, .. }
            | PluginError::ReplyTooLarge { path, .. }
            | PluginError::Worker { path, .. }
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

/// A duration in seconds as people write it: `10 s`, `0.5 s`.
fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// A size as people read it: whole MiB when it is one, else bytes.
fn bytes(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else {
        format!("{n} bytes")
    }
}
