//! Schedules from plugins: the search path (from `--plugin-dir`, `PIPEWEAVE_PLUGIN_PATH` and the
//! executable's place), `plugin:NAME` or `plugin:PATH`, and the plugin rows of `list`.
//!
//! Everything about loading lives in `pipeweave-plugin-host`; this module only reads the
//! environment and the arguments (which only the CLI may do) and turns errors into exit codes.

use crate::load::Loaded;
use crate::{Failure, PlanArgs};
use pipeweave_plugin_host::{Plugin, PluginError, SearchPath, discover, load_found, load_named};
use std::path::{Path, PathBuf};

/// The environment variable listing plugin directories (separated like `PATH`).
pub const ENV_PATH: &str = "PIPEWEAVE_PLUGIN_PATH";

/// The prefix that picks a plugin explicitly.
pub const PREFIX: &str = "plugin:";

/// The search path: `--plugin-dir`s, then `PIPEWEAVE_PLUGIN_PATH`, then next to the executable,
/// then (debug builds) the workspace's build directories. Relative entries of the variable are
/// not searched: a warning names them, once per process.
pub fn search_path(plugin_dirs: &[PathBuf]) -> SearchPath {
    let env = std::env::var_os(ENV_PATH);
    let exe = std::env::current_exe().ok();
    let search = SearchPath::standard(plugin_dirs, env.as_deref(), exe.as_deref());
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        search
            .warnings()
            .iter()
            .for_each(|w| eprintln!("warning: {w}"))
    });
    search
}

/// Whether a plugin called `name` is on the search path (for names that are no file).
pub fn exists(name: &str, plugin_dirs: &[PathBuf]) -> bool {
    pipeweave_plugin_host::find(name, &search_path(plugin_dirs)).is_ok()
}

fn failure(e: PluginError) -> Failure {
    match e {
        PluginError::BadSetting { .. } => Failure::Usage(e.to_string()),
        e => Failure::Invalid(format!("error: {e}\n")),
    }
}

/// A `plugin:` target names a library file when it looks like a path.
fn is_path(target: &str) -> bool {
    target.contains('/')
        || target.contains(std::path::MAIN_SEPARATOR)
        || target.ends_with(std::env::consts::DLL_SUFFIX)
}

/// Builds the plan of the plugin `target` (a name on the search path or a library path) with the
/// schedule arguments; the host validates it before it comes back.
pub fn load(target: &str, args: &PlanArgs) -> Result<Loaded, Failure> {
    let plugin = if is_path(target) {
        Plugin::load(Path::new(target))
    } else {
        load_named(target, &search_path(&args.params.plugin_dirs))
    }
    .map_err(failure)?;
    let name = plugin.metadata().name.clone();
    let usage = |what: &str| {
        Failure::Usage(format!(
            "the plugin schedule `{name}` needs {what} (requires: {})",
            plugin.metadata().requires
        ))
    };
    let ranks = args.params.ranks.ok_or_else(|| usage("--ranks P"))?;
    let microbatches = args
        .params
        .microbatches
        .ok_or_else(|| usage("--microbatches M"))?;
    if args.params.stages_per_rank.is_some() {
        return Err(Failure::Usage(format!(
            "the plugin schedule `{name}` fixes its own stages per rank; drop --stages-per-rank"
        )));
    }
    let mut settings = Vec::with_capacity(args.params.set.len());
    for item in &args.params.set {
        let Some((k, v)) = item.split_once('=') else {
            return Err(Failure::Usage(format!(
                "--set expects NAME=VALUE, found `{item}`"
            )));
        };
        settings.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    let request = plugin
        .request(ranks, microbatches, &settings)
        .map_err(failure)?;
    let plan = plugin.generate(&request).map_err(failure)?;
    Ok(Loaded {
        plan,
        origins: None,
        name: format!("{PREFIX}{name}"),
    })
}

/// One plugin schedule as `list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub description: String,
    /// `plugin (<path>)`.
    pub origin: String,
    /// `--set` parameters as `name=<type> (default ..., constraints)`.
    pub params: Vec<String>,
}

/// Every plugin on the search path, sorted by name, with the files that failed to load as
/// clean error messages (a broken plugin never hides the others).
pub fn list(plugin_dirs: &[PathBuf]) -> (Vec<Entry>, Vec<String>) {
    let mut entries = Vec::new();
    let mut errors = Vec::new();
    for found in discover(&search_path(plugin_dirs)) {
        match load_found(&found) {
            Ok(p) => {
                let m = p.metadata();
                let params = m
                    .params
                    .iter()
                    .map(|s| {
                        let c = s.constraint_text();
                        let c = if c.is_empty() {
                            String::new()
                        } else {
                            format!(", {c}")
                        };
                        format!(
                            "{}=<{}> (default {}{c}): {}",
                            s.name,
                            s.type_name(),
                            s.default_value(),
                            s.help
                        )
                    })
                    .collect();
                entries.push(Entry {
                    name: m.name.clone(),
                    description: m.description.clone(),
                    origin: format!("plugin ({})", found.path.display()),
                    params,
                });
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    (entries, errors)
}

/// The plugin section of `list`: one block per schedule, and the load failures as warnings.
pub fn list_text(plugin_dirs: &[PathBuf]) -> (String, Vec<String>) {
    use std::fmt::Write as _;
    let (entries, errors) = list(plugin_dirs);
    let width = entries.iter().map(|e| e.name.len()).max().unwrap_or(0);
    let mut s = String::new();
    for e in &entries {
        let _ = writeln!(s, "{:<width$}  {}  {}", e.name, e.origin, e.description);
        for p in &e.params {
            let _ = writeln!(s, "{:<width$}    --set {p}", "");
        }
    }
    if entries.is_empty() {
        s.push_str("no schedules found\n");
    }
    (s, errors)
}
