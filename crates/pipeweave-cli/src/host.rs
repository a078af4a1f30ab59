//! The resolver's outside world for the command line: files through `std::fs`, plugins through
//! `pipeweave-plugin-host` on the search path of `--plugin-dir`, `PIPEWEAVE_PLUGIN_PATH` and the
//! executable's place. Each plugin library is loaded once per process.

use pipeweave_plan::Plan;
use pipeweave_plugin_host::{Plugin, PluginError, SearchPath, discover, find, load_found};
use pipeweave_source::{Failure, Host, PluginId, PluginInfo, PluginRequest, PluginTarget, STDIN};
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// The environment variable listing plugin directories (separated like `PATH`).
pub const ENV_PATH: &str = "PIPEWEAVE_PLUGIN_PATH";

/// Files and plugins for the resolver.
#[derive(Default)]
pub struct CliHost {
    /// Standard input, once read (every `-` of a command sees the same text).
    stdin: Option<String>,
    plugin_dirs: Vec<PathBuf>,
    search: Option<SearchPath>,
    /// Every plugin loaded so far, by the path it was loaded from; a [`PluginId`] is an index.
    loaded: Vec<(PathBuf, Plugin)>,
}

impl std::fmt::Debug for CliHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CliHost")
            .field("plugin_dirs", &self.plugin_dirs)
            .field("loaded", &self.loaded.len())
            .finish_non_exhaustive()
    }
}

/// A plugin failure: a bad `--set` is a usage error, anything else invalid input.
fn failure(e: PluginError) -> Failure {
    match e {
        PluginError::BadSetting { .. } => Failure::usage(e.to_string()),
        e => Failure::invalid(e.to_string()),
    }
}

/// The bytes of the regular file at `path`. Anything else (a FIFO, a device, a socket, a folder)
/// is refused before a byte is read: reading a FIFO waits for a writer, a device may never end.
/// The file is opened without blocking (so opening a FIFO returns at once) and its kind is asked
/// of the open file, so swapping the path in between changes nothing.
fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let mut file = options.open(path)?;
    let kind = file.metadata()?.file_type();
    if !kind.is_file() {
        return Err(std::io::Error::other(format!(
            "not a regular file but {}; give a file, or `-` with the text on standard input",
            kind_name(&kind)
        )));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// What a file that is not a regular file is, in words.
fn kind_name(kind: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if kind.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if kind.is_dir() {
        "a folder"
    } else {
        "something else"
    }
}

impl CliHost {
    /// Puts `dirs` (`--plugin-dir`) first on the search path.
    pub fn with_plugin_dirs(&mut self, dirs: &[PathBuf]) {
        self.plugin_dirs = dirs.to_vec();
        self.search = None;
    }

    /// The search path: `--plugin-dir`s, then `PIPEWEAVE_PLUGIN_PATH` (absolute entries), then
    /// next to the executable, then (debug builds) the workspace's build directories.
    fn search(&mut self) -> &SearchPath {
        self.search.get_or_insert_with(|| {
            let env = std::env::var_os(ENV_PATH);
            let exe = std::env::current_exe().ok();
            let search = SearchPath::standard(&self.plugin_dirs, env.as_deref(), exe.as_deref());
            // Relative entries of the variable are not searched: say so once per process.
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                search
                    .warnings()
                    .iter()
                    .for_each(|w| crate::output::warning(w))
            });
            search
        })
    }

    /// The plugin at `path`, loaded by `load` the first time.
    fn cached(
        &mut self,
        path: &Path,
        load: impl FnOnce() -> Result<Plugin, PluginError>,
    ) -> Result<PluginInfo, PluginError> {
        let index = match self.loaded.iter().position(|(p, _)| p == path) {
            Some(i) => i,
            None => {
                self.loaded.push((path.to_path_buf(), load()?));
                self.loaded.len() - 1
            }
        };
        let (path, plugin) = &self.loaded[index];
        Ok(PluginInfo {
            id: PluginId(index),
            metadata: plugin.metadata().clone(),
            location: path.display().to_string(),
        })
    }
}

impl Host for CliHost {
    fn is_file(&self, path: &str) -> bool {
        path == STDIN || std::fs::metadata(path).is_ok_and(|m| !m.is_dir())
    }

    fn read(&mut self, path: &str) -> Result<String, Failure> {
        if path == STDIN
            && let Some(text) = &self.stdin
        {
            return Ok(text.clone());
        }
        let name = pipeweave_source::shown_name(path);
        let cannot =
            |e: &dyn std::fmt::Display| Failure::invalid(format!("cannot read `{name}`: {e}"));
        let bytes = if path == STDIN {
            let mut bytes = Vec::new();
            std::io::stdin()
                .lock()
                .read_to_end(&mut bytes)
                .map_err(|e| cannot(&e))?;
            bytes
        } else {
            read_regular(Path::new(path)).map_err(|e| cannot(&e))?
        };
        let text = pipeweave_diagnostics::text_from_bytes(bytes, pipeweave_diagnostics::FileId(0))
            .map_err(|d| cannot(&d.message))?;
        if path == STDIN {
            self.stdin = Some(text.clone());
        }
        Ok(text)
    }

    fn has_plugin(&mut self, name: &str) -> bool {
        find(name, self.search()).is_ok()
    }

    fn plugin(&mut self, target: &PluginTarget) -> Result<PluginInfo, Failure> {
        match target {
            PluginTarget::Path(path) => {
                let path = Path::new(path);
                self.cached(path, || Plugin::load(path))
            }
            PluginTarget::Named(name) => {
                let search = self.search().clone();
                let path = find(name, &search).map_err(failure)?;
                self.cached(&path, || pipeweave_plugin_host::load_named(name, &search))
            }
        }
        .map_err(failure)
    }

    fn plugins(&mut self) -> Vec<Result<PluginInfo, String>> {
        let found = discover(self.search());
        found
            .iter()
            .map(|f| {
                self.cached(&f.path, || load_found(f))
                    .map_err(|e| e.to_string())
            })
            .collect()
    }

    fn generate(&mut self, plugin: PluginId, request: &PluginRequest) -> Result<Plan, Failure> {
        let Some((_, plugin)) = self.loaded.get(plugin.0) else {
            return Err(Failure::invalid("no such plugin handle"));
        };
        let request = plugin
            .request(request.ranks, request.microbatches, &request.settings)
            .map_err(failure)?;
        // The plugin host validates every plan a plugin returns.
        plugin.generate(&request).map_err(failure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Needs the plugins built next to the binaries (`cargo build --workspace`), as the CLI's
    /// integration tests do.
    #[test]
    fn each_plugin_library_is_loaded_once() {
        let mut host = CliHost::default();
        let named = host
            .plugin(&PluginTarget::Named("dualpipe".into()))
            .expect("the dualpipe plugin is built");
        let all = host.plugins();
        assert!(all.iter().flatten().any(|p| p.id == named.id));
        let by_path = host
            .plugin(&PluginTarget::Path(named.location.clone()))
            .expect("loads");
        assert_eq!(by_path.id, named.id);
        // One library per plugin file, however it was asked for.
        assert_eq!(host.loaded.len(), all.len());
        let plan = host.generate(
            named.id,
            &PluginRequest {
                ranks: 4,
                microbatches: 8,
                settings: vec![("overlap".into(), "maybe".into())],
            },
        );
        assert!(plan.expect_err("a bad setting").is_usage());
    }
}
