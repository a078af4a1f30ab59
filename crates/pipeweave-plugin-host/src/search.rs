//! Where plugins live: the search path, in order, and finding a plugin file by name.

use crate::path_list::{PathList, Unsearched};
use crate::{FILE_PREFIX, PluginError};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

/// Why a directory is on the search path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Origin {
    /// Given with `--plugin-dir`.
    PluginDir,
    /// Listed in `PIPEWEAVE_PLUGIN_PATH`.
    EnvPath,
    /// The directory of the running executable.
    ExeDir,
    /// The workspace's own build directory (`target/debug`, `target/release`); searched by debug
    /// builds only.
    BuildDir,
}

impl Origin {
    /// How the origin is named in messages (`--plugin-dir`, `next to the executable`).
    pub fn describe(self) -> &'static str {
        match self {
            Origin::PluginDir => "--plugin-dir",
            Origin::EnvPath => "PIPEWEAVE_PLUGIN_PATH",
            Origin::ExeDir => "next to the executable",
            Origin::BuildDir => "the workspace build directory",
        }
    }
}

/// The directories searched for plugins, in order; the first match wins.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchPath {
    dirs: Vec<(PathBuf, Origin)>,
    /// `PIPEWEAVE_PLUGIN_PATH` as read, with the entries that are not searched.
    env: PathList,
}

/// The variable listing plugin folders.
const ENV_PATH: &str = "PIPEWEAVE_PLUGIN_PATH";

impl SearchPath {
    /// An empty search path.
    pub fn new() -> SearchPath {
        SearchPath::default()
    }

    /// Appends a directory (ignored when it is already on the path).
    pub fn push(&mut self, dir: PathBuf, origin: Origin) {
        if !self.dirs.iter().any(|(d, _)| *d == dir) {
            self.dirs.push((dir, origin));
        }
    }

    /// The standard order: every `--plugin-dir`, then every entry of `PIPEWEAVE_PLUGIN_PATH` (the
    /// variable's value, split like `PATH`) that is searched, then the executable's directory,
    /// then (debug builds only) the workspace's `target/debug` and `target/release`.
    ///
    /// An entry of the variable is searched only when it is an absolute path naming a folder
    /// (the rule of [`PathList`]; see [`SearchPath::unsearched`]). A relative entry would resolve
    /// against the current directory, and running pipeweave in a folder must not load (and so
    /// run) a library that happens to lie there. Release builds do not search the build
    /// machine's folders, whose path is compiled in.
    pub fn standard(
        plugin_dirs: &[PathBuf],
        env_path: Option<&OsStr>,
        exe: Option<&Path>,
    ) -> SearchPath {
        let mut s = SearchPath::new();
        for d in plugin_dirs {
            s.push(d.clone(), Origin::PluginDir);
        }
        if let Some(value) = env_path {
            s.env = PathList::read(ENV_PATH, value);
            for d in s.env.folders.clone() {
                s.push(d, Origin::EnvPath);
            }
        }
        if let Some(dir) = exe.and_then(Path::parent) {
            s.push(dir.to_path_buf(), Origin::ExeDir);
        }
        for d in workspace_build_dirs() {
            s.push(d, Origin::BuildDir);
        }
        s
    }

    /// The directories in search order, each with why it is searched.
    pub fn dirs(&self) -> impl Iterator<Item = (&Path, Origin)> {
        self.dirs.iter().map(|(d, o)| (d.as_path(), *o))
    }

    /// The entries of `PIPEWEAVE_PLUGIN_PATH` that are not searched, each with why.
    pub fn unsearched(&self) -> &[Unsearched] {
        &self.env.unsearched
    }

    /// The warnings about `PIPEWEAVE_PLUGIN_PATH` for the caller to show: one per entry not
    /// searched, naming it, at most a few.
    pub fn warnings(&self) -> Vec<String> {
        self.env.warnings()
    }
}

/// The build directories of the workspace this crate was compiled in: searched by debug builds
/// (`cargo build`, `cargo test`) so that the workspace's own plugins are found wherever its
/// binaries run from; a release binary searches no path of the machine that built it.
#[cfg(debug_assertions)]
fn workspace_build_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = root.canonicalize().unwrap_or(root);
    vec![root.join("target/debug"), root.join("target/release")]
}

#[cfg(not(debug_assertions))]
fn workspace_build_dirs() -> Vec<PathBuf> {
    Vec::new()
}

/// Whether `name` can name a plugin: ASCII letters, digits, `-` and `_`.
pub fn is_plugin_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The platform file name of the plugin `name` (`libpipeweave_plugin_dualpipe.so` on Linux).
/// Cargo turns `-` into `_` in library file names, so a `-` in the name reads as `_`.
pub fn file_name(name: &str) -> OsString {
    libloading::library_filename(format!("{FILE_PREFIX}{}", name.replace('-', "_")))
}

/// The path of the plugin `name`: the first directory on `search` that holds its file.
pub fn find(name: &str, search: &SearchPath) -> Result<PathBuf, PluginError> {
    if !is_plugin_name(name) {
        return Err(PluginError::BadName {
            name: name.to_owned(),
        });
    }
    let file = file_name(name);
    for (dir, _) in search.dirs() {
        let path = dir.join(&file);
        if path.is_file() {
            return Ok(path);
        }
    }
    Err(PluginError::NotFound {
        name: name.to_owned(),
        file: file.to_string_lossy().into_owned(),
        searched: search
            .dirs()
            .map(|(d, o)| (d.to_path_buf(), o.describe().to_owned()))
            .collect(),
        refused: search.env.unsearched.clone(),
    })
}

/// A plugin file named without a folder (`plugin:libmine.so`): looked for in the plugin folders
/// of `search` only, never where the dynamic loader would look (`LD_LIBRARY_PATH`, its cache,
/// the system's folders). A path with a folder is loaded as it is, never looked up.
pub fn find_file(file: &str, search: &SearchPath) -> Result<PathBuf, PluginError> {
    let plain = Path::new(file)
        .file_name()
        .is_some_and(|name| name == OsStr::new(file));
    if plain {
        for (dir, _) in search.dirs() {
            let path = dir.join(file);
            if path.is_file() {
                return Ok(path);
            }
        }
    }
    Err(PluginError::FileNotFound {
        file: file.to_owned(),
        searched: search
            .dirs()
            .map(|(d, o)| (d.to_path_buf(), o.describe().to_owned()))
            .collect(),
        refused: search.env.unsearched.clone(),
    })
}

/// A plugin file found on the search path (not loaded yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The name from the file name (`_` where the crate had `-`).
    pub name: String,
    /// The library file.
    pub path: PathBuf,
    /// Why its directory was searched.
    pub origin: Origin,
}

/// Every plugin file on the search path, one per name (the first in search order), sorted by
/// name. Unreadable directories are skipped: a missing `--plugin-dir` simply holds nothing.
pub fn discover(search: &SearchPath) -> Vec<Found> {
    let probe = file_name("X");
    let probe = probe.to_string_lossy();
    let Some((before, after)) = probe.split_once(&format!("{FILE_PREFIX}X")) else {
        return Vec::new();
    };
    let (before, after) = (format!("{before}{FILE_PREFIX}"), after.to_owned());
    let mut found: Vec<Found> = Vec::new();
    for (dir, origin) in search.dirs() {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut here: Vec<Found> = entries
            .filter_map(Result::ok)
            .filter_map(|e| {
                let file = e.file_name();
                let name = file.to_str()?.strip_prefix(&before)?.strip_suffix(&after)?;
                (is_plugin_name(name) && e.path().is_file()).then(|| Found {
                    name: name.to_owned(),
                    path: e.path(),
                    origin,
                })
            })
            .collect();
        here.sort_by(|a, b| a.name.cmp(&b.name));
        for f in here {
            if !found.iter().any(|g| g.name == f.name) {
                found.push(f);
            }
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}
