//! What can go wrong with a plugin, each case naming the file.

use crate::path_list::Unsearched;
use pipeweave_check::Problem;
use std::path::PathBuf;
use std::time::Duration;

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
        /// The entries of `PIPEWEAVE_PLUGIN_PATH` that were not searched, with why.
        refused: Vec<Unsearched>,
    },

    #[error("no plugin file `{file}` in {}{}; give a path (`./{file}`) to load a file from elsewhere", searched_text(.searched), refused_text(.refused))]
    /// A bare `plugin:FILE.so` that is in none of the plugin folders.
    FileNotFound {
        /// The file name as given.
        file: String,
        /// The directories searched, in order, with why each was searched.
        searched: Vec<(PathBuf, String)>,
        /// The entries of `PIPEWEAVE_PLUGIN_PATH` that were not searched, with why.
        refused: Vec<Unsearched>,
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

    #[error("{} has no `{field}` function in its entry table (a null pointer); it is not a usable plugin", .path.display())]
    /// A function pointer of the plugin's entry table is null.
    NullFunction {
        /// The library.
        path: PathBuf,
        /// The entry-table field that is null (`metadata`, `generate`, `free_buffer`).
        field: String,
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

    #[error("the plugin {} returned a plan of the wrong shape: {detail}", .path.display())]
    /// The plan does not have the ranks, micro-batches or stages that were asked for.
    WrongShape {
        /// The library.
        path: PathBuf,
        /// What differs from the request.
        detail: String,
    },

    #[error("the plugin {} crashed while {during}: {how}", .path.display())]
    /// The worker process running the plugin died (a signal or an unexpected exit).
    Crashed {
        /// The library.
        path: PathBuf,
        /// What the host had asked for (`building a plan`).
        during: &'static str,
        /// The signal or exit status, in words.
        how: String,
    },

    #[error("the plugin {} did not finish {during} within the time limit of {}; it was stopped", .path.display(), seconds(*.limit))]
    /// The plugin did not answer within the time limit; its worker was stopped.
    TimedOut {
        /// The library.
        path: PathBuf,
        /// What the host had asked for (`building a plan`).
        during: &'static str,
        /// The time limit per request.
        limit: Duration,
    },

    #[error("the plugin {} is not asked again: it exceeded the time limit of {} earlier in this run", .path.display(), seconds(*.limit))]
    /// The plugin exceeded the time limit earlier in this run and is not asked again.
    TimedOutBefore {
        /// The library.
        path: PathBuf,
        /// The time limit per request.
        limit: Duration,
    },

    #[error("the plugin {} sent a reply of {} while {during}, more than the limit of {}; it was stopped", .path.display(), bytes(*.size), bytes(*.limit))]
    /// The plugin's reply is larger than the bound on replies; its worker was stopped.
    ReplyTooLarge {
        /// The library.
        path: PathBuf,
        /// What the host had asked for (`building a plan`).
        during: &'static str,
        /// The reply's announced size in bytes.
        size: u64,
        /// The bound on a reply in bytes.
        limit: u64,
    },

    #[error("the worker process for the plugin {} failed: {detail}", .path.display())]
    /// The worker process could not be started or spoke no valid frame.
    Worker {
        /// The library.
        path: PathBuf,
        /// What went wrong, in words.
        detail: String,
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

/// The entries not searched, as a few clauses: the first three, then how many more.
fn refused_text(refused: &[Unsearched]) -> String {
    const SHOWN: usize = 3;
    let mut text: String = refused
        .iter()
        .take(SHOWN)
        .map(|u| format!("; {u}"))
        .collect();
    if let Some(first) = refused.get(SHOWN) {
        let more = crate::path_list::more_unsearched(refused.len() - SHOWN, first.variable);
        text.push_str(&format!("; {more}"));
    }
    text
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
