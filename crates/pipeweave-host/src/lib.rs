//! The resolver's outside world for the two front ends, the command line and the Python binding:
//! files through `std::fs` (regular files only; `-` is standard input), texts given in memory,
//! the user's schedule folders (`--schedule-dir`, then the absolute entries of
//! `PIPEWEAVE_SCHEDULE_PATH`), plugins through `pipeweave-plugin-host` on the search path of
//! `--plugin-dir`, `PIPEWEAVE_PLUGIN_PATH` and the front end's own folder. Each plugin runs in a
//! worker process of its own, started by the front end's [`WorkerCommand`] and kept for the
//! host's life; a crash, an abort or a hang of a plugin is an error naming it, under a time limit
//! per request (`PIPEWEAVE_PLUGIN_TIMEOUT`, seconds).
//!
//! It prints nothing: warnings go to the front end's [`Warn`].

use pipeweave_plan::Plan;
use pipeweave_plugin_host::{
    PluginError, SearchPath, Worker, WorkerOptions, discover, find, find_file,
};
use pipeweave_source::{
    Failure, FolderFile, Host, PluginId, PluginInfo, PluginRequest, PluginTarget, STDIN,
};
use std::ffi::OsString;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The environment variable listing plugin directories (separated like `PATH`).
pub const ENV_PATH: &str = "PIPEWEAVE_PLUGIN_PATH";

/// The environment variable listing schedule folders (separated like `PATH`).
pub const ENV_SCHEDULE_PATH: &str = "PIPEWEAVE_SCHEDULE_PATH";

/// The environment variable that sets the time limit of one plugin request, in seconds.
pub const ENV_TIMEOUT: &str = "PIPEWEAVE_PLUGIN_TIMEOUT";

/// Where the host's warnings go (one message each, without `warning: `).
pub type Warn = Box<dyn Fn(&str) + Send + Sync>;

/// How a front end starts a plugin's worker process: a program that calls
/// `pipeweave_plugin_host::serve_stdio` with the library path it is given after `args` (the
/// command line: itself with `__plugin-worker`; the Python binding: the interpreter running
/// `pipeweave._worker`).
#[derive(Debug, Clone, Default)]
pub struct WorkerCommand {
    /// The program; `None`: this process's own executable.
    pub program: Option<PathBuf>,
    /// The arguments before the library's path.
    pub args: Vec<OsString>,
}

/// Files and plugins for the resolver.
pub struct FsHost {
    /// Standard input, once read (every `-` of a command sees the same text).
    stdin: Option<String>,
    /// Texts given in memory, by the name the resolver reads them as.
    texts: Vec<(String, String)>,
    plugin_dirs: Vec<PathBuf>,
    search: Option<SearchPath>,
    /// Every plugin started so far (or why it could not be), by its file; a [`PluginId`] is an
    /// index.
    loaded: Vec<(PathBuf, Result<Worker, String>)>,
    options: Option<WorkerOptions>,
    /// What serves plugins.
    worker: WorkerCommand,
    /// The file whose folder is searched for plugins after `PIPEWEAVE_PLUGIN_PATH`; `None`: this
    /// process's executable.
    home: Option<PathBuf>,
    /// `--schedule-dir`, in order.
    schedule_dirs: Vec<PathBuf>,
    /// The `.weave` files of the schedule folders, read once.
    schedule_files: Option<Vec<FolderFile>>,
    warn: Warn,
}

impl std::fmt::Debug for FsHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FsHost")
            .field("plugin_dirs", &self.plugin_dirs)
            .field("schedule_dirs", &self.schedule_dirs)
            .field("worker", &self.worker)
            .field("home", &self.home)
            .finish_non_exhaustive()
    }
}

/// A plugin failure in words; a time limit says how to change it.
fn message(e: &PluginError) -> String {
    match e {
        PluginError::TimedOut { .. } | PluginError::TimedOutBefore { .. } => {
            format!("{e} (set {ENV_TIMEOUT} to a number of seconds to change the limit)")
        }
        e => e.to_string(),
    }
}

/// A plugin failure: a bad `--set` is a usage error, anything else invalid input.
fn failure(e: PluginError) -> Failure {
    match e {
        PluginError::BadSetting { .. } => Failure::usage(e.to_string()),
        e => Failure::invalid(message(&e)),
    }
}

/// The time limit `PIPEWEAVE_PLUGIN_TIMEOUT` gives: a positive number of seconds.
fn parse_timeout(text: &str) -> Option<Duration> {
    let seconds: f64 = text.trim().parse().ok()?;
    (seconds > 0.0)
        .then(|| Duration::try_from_secs_f64(seconds).ok())
        .flatten()
}

/// The schedule folders, in order: every `--schedule-dir`, then every absolute entry of
/// `PIPEWEAVE_SCHEDULE_PATH` (`env`); the relative entries of the variable, never searched (they
/// would depend on the folder pipeweave runs in), come second.
fn schedule_folders(
    dirs: &[PathBuf],
    env: Option<&std::ffi::OsStr>,
) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut folders: Vec<PathBuf> = Vec::new();
    let mut refused = Vec::new();
    let from_env = env
        .map(|v| std::env::split_paths(v).collect::<Vec<_>>())
        .unwrap_or_default();
    for d in dirs.iter().cloned() {
        if !folders.contains(&d) {
            folders.push(d);
        }
    }
    for d in from_env.into_iter().filter(|d| !d.as_os_str().is_empty()) {
        if !d.is_absolute() {
            refused.push(d);
        } else if !folders.contains(&d) {
            folders.push(d);
        }
    }
    (folders, refused)
}

/// The `.weave` files of one folder, by name; a folder that cannot be read is a warning.
fn weave_files(dir: &Path, warn: &Warn) -> Vec<FolderFile> {
    let read = match std::fs::read_dir(dir) {
        Ok(read) => read,
        Err(e) => {
            warn(&format!(
                "cannot read the schedule folder `{}`: {e}",
                dir.display()
            ));
            return Vec::new();
        }
    };
    let mut files: Vec<FolderFile> = read
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "weave") && path.is_file())
        .filter_map(|path| {
            let name = path.file_stem()?.to_str()?.to_owned();
            Some(FolderFile {
                name,
                path: path.to_str()?.to_owned(),
            })
        })
        .collect();
    files.sort_by(|a, b| a.name.cmp(&b.name));
    files
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

impl FsHost {
    /// A host whose plugins are served by `worker` and whose warnings go to `warn`.
    pub fn new(worker: WorkerCommand, warn: Warn) -> FsHost {
        FsHost {
            stdin: None,
            texts: Vec::new(),
            plugin_dirs: Vec::new(),
            search: None,
            loaded: Vec::new(),
            options: None,
            worker,
            home: None,
            schedule_dirs: Vec::new(),
            schedule_files: None,
            warn,
        }
    }

    /// Searches the folder of `file` for plugins where a command line searches its executable's
    /// (the Python binding: its native module's).
    pub fn with_home(mut self, file: PathBuf) -> FsHost {
        self.home = Some(file);
        self.search = None;
        self
    }

    /// Makes `text` readable as the file `name` (it shadows any file of that name).
    pub fn with_text(&mut self, name: &str, text: &str) {
        self.texts.retain(|(n, _)| n != name);
        self.texts.push((name.to_owned(), text.to_owned()));
    }

    /// Puts `dirs` (`--schedule-dir`) first among the schedule folders.
    pub fn with_schedule_dirs(&mut self, dirs: &[PathBuf]) {
        self.schedule_dirs = dirs.to_vec();
        self.schedule_files = None;
    }

    /// Puts `dirs` (`--plugin-dir`) first on the search path.
    pub fn with_plugin_dirs(&mut self, dirs: &[PathBuf]) {
        self.plugin_dirs = dirs.to_vec();
        self.search = None;
    }

    /// The search path: `--plugin-dir`s, then `PIPEWEAVE_PLUGIN_PATH` (absolute entries), then
    /// next to the executable, then (debug builds) the workspace's build directories.
    fn search(&mut self) -> &SearchPath {
        let warn = &self.warn;
        let home = &self.home;
        self.search.get_or_insert_with(|| {
            let env = std::env::var_os(ENV_PATH);
            let exe = home.clone().or_else(|| std::env::current_exe().ok());
            let search = SearchPath::standard(&self.plugin_dirs, env.as_deref(), exe.as_deref());
            // Relative entries of the variable are not searched: say so once per process.
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| search.warnings().iter().for_each(|w| warn(w)));
            search
        })
    }

    /// The time limit and reply bound of the workers; a bad `PIPEWEAVE_PLUGIN_TIMEOUT` is named
    /// in a warning and the default limit holds.
    fn options(&mut self) -> WorkerOptions {
        *self.options.get_or_insert_with(|| {
            let mut options = WorkerOptions::default();
            if let Some(text) = std::env::var_os(ENV_TIMEOUT) {
                let text = text.to_string_lossy();
                match parse_timeout(&text) {
                    Some(limit) => options.time_limit = limit,
                    None => (self.warn)(&format!(
                        "{ENV_TIMEOUT}=`{text}` is not a positive number of seconds; plugins get the default {} s",
                        WorkerOptions::DEFAULT_TIME_LIMIT.as_secs()
                    )),
                }
            }
            options
        })
    }

    /// The plugin at `path` in its worker, started the first time (checking that it calls itself
    /// `name` when it was found by name). A plugin that failed to start fails again, without a
    /// second try.
    fn cached(&mut self, path: &Path, name: Option<&str>) -> Result<PluginInfo, Failure> {
        let index = match self.loaded.iter().position(|(p, _)| p == path) {
            Some(i) => i,
            None => {
                let options = self.options();
                let started = self.worker_command().and_then(|command| {
                    Worker::spawn(command, path, options)
                        .and_then(|w| match name {
                            Some(name) => w.check_name(name),
                            None => Ok(w),
                        })
                        .map_err(|e| message(&e))
                });
                self.loaded.push((path.to_path_buf(), started));
                self.loaded.len() - 1
            }
        };
        match &self.loaded[index] {
            (path, Ok(worker)) => Ok(PluginInfo {
                id: PluginId(index),
                metadata: worker.metadata().clone(),
                location: path.display().to_string(),
            }),
            (_, Err(message)) => Err(Failure::invalid(message.clone())),
        }
    }

    /// The plugin file `plugin:PATH` names: a path with a folder as it is (made absolute), a bare
    /// file name in the plugin folders only (never where the dynamic loader would look).
    fn plugin_file(&mut self, file: &str) -> Result<PathBuf, PluginError> {
        let has_folder = file.contains('/') || file.contains(std::path::MAIN_SEPARATOR);
        if has_folder {
            return Ok(std::path::absolute(file).unwrap_or_else(|_| PathBuf::from(file)));
        }
        find_file(file, self.search())
    }

    /// The command that starts a worker, without the library's path.
    fn worker_command(&self) -> Result<Command, String> {
        let program = match &self.worker.program {
            Some(program) => program.clone(),
            None => std::env::current_exe()
                .map_err(|e| format!("cannot find the executable to run plugins in: {e}"))?,
        };
        let mut command = Command::new(program);
        command.args(&self.worker.args);
        Ok(command)
    }

    fn text(&self, name: &str) -> Option<&String> {
        self.texts.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }
}

impl Host for FsHost {
    fn is_file(&self, path: &str) -> bool {
        path == STDIN
            || self.text(path).is_some()
            || std::fs::metadata(path).is_ok_and(|m| !m.is_dir())
    }

    fn schedule_files(&mut self) -> Vec<FolderFile> {
        let dirs = &self.schedule_dirs;
        let warn = &self.warn;
        self.schedule_files
            .get_or_insert_with(|| {
                let env = std::env::var_os(ENV_SCHEDULE_PATH);
                let (folders, refused) = schedule_folders(dirs, env.as_deref());
                // Relative entries of the variable are not searched: say so once per process.
                static WARNED: std::sync::Once = std::sync::Once::new();
                WARNED.call_once(|| {
                    for d in &refused {
                        warn(&format!(
                            "the {ENV_SCHEDULE_PATH} entry `{}` is not searched: only absolute paths are",
                            d.display()
                        ));
                    }
                });
                folders.iter().flat_map(|d| weave_files(d, warn)).collect()
            })
            .clone()
    }

    fn read(&mut self, path: &str) -> Result<String, Failure> {
        if let Some(text) = self.text(path) {
            return Ok(text.clone());
        }
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
            PluginTarget::Path(file) => {
                let path = self.plugin_file(file).map_err(failure)?;
                self.cached(&path, None)
            }
            PluginTarget::Named(name) => {
                let path = find(name, self.search()).map_err(failure)?;
                self.cached(&path, Some(name))
            }
        }
    }

    fn plugins(&mut self) -> Vec<Result<PluginInfo, String>> {
        let found = discover(self.search());
        found
            .iter()
            .map(|f| {
                self.cached(&f.path, Some(&f.name))
                    .map_err(|failure| failure.reason())
            })
            .collect()
    }

    fn generate(&mut self, plugin: PluginId, request: &PluginRequest) -> Result<Plan, Failure> {
        let Some((_, Ok(worker))) = self.loaded.get_mut(plugin.0) else {
            return Err(Failure::invalid("no such plugin handle"));
        };
        let request = worker
            .request(request.ranks, request.microbatches, &request.settings)
            .map_err(failure)?;
        // The plugin host checks the shape of every plan a plugin returns and validates it.
        worker.generate(&request).map_err(failure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host whose workers are the `pipeweave` binary beside this test binary (which is no
    /// worker itself).
    fn host() -> FsHost {
        let exe = std::env::current_exe().expect("the test knows its path");
        let dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target/<profile>/deps");
        let worker = WorkerCommand {
            program: Some(dir.join(format!("pipeweave{}", std::env::consts::EXE_SUFFIX))),
            args: vec!["__plugin-worker".into()],
        };
        FsHost::new(worker, Box::new(|_| {}))
    }

    /// Needs the plugins built next to the binaries (`cargo build --workspace`), as the CLI's
    /// integration tests do.
    #[test]
    fn the_time_limit_is_a_positive_number_of_seconds() {
        assert_eq!(parse_timeout("10"), Some(Duration::from_secs(10)));
        assert_eq!(parse_timeout(" 0.25 "), Some(Duration::from_millis(250)));
        for bad in ["", "0", "-1", "ten", "NaN", "inf", "1e300"] {
            assert_eq!(parse_timeout(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_text_in_memory_is_read_by_its_name() {
        let mut host = host();
        assert!(!host.is_file("<string>"));
        host.with_text("<string>", "0F0,0B0");
        host.with_text("<string>", "0F0,0B0\n");
        assert!(host.is_file("<string>"));
        assert_eq!(host.read("<string>").expect("in memory"), "0F0,0B0\n");
        let missing = host.read("no/such/file").expect_err("not there");
        assert!(missing.reason().starts_with("cannot read `no/such/file`"));
    }

    #[test]
    fn each_plugin_is_started_once() {
        let mut host = host();
        let named = host
            .plugin(&PluginTarget::Named("dualpipe".into()))
            .expect("the dualpipe plugin is built");
        let all = host.plugins();
        assert!(all.iter().flatten().any(|p| p.id == named.id));
        let by_path = host
            .plugin(&PluginTarget::Path(named.location.clone()))
            .expect("loads");
        assert_eq!(by_path.id, named.id);
        // One worker per plugin file, however it was asked for.
        assert_eq!(host.loaded.len(), all.len());
        let request = PluginRequest {
            ranks: 4,
            microbatches: 8,
            settings: Vec::new(),
        };
        for _ in 0..2 {
            let plan = host.generate(named.id, &request).expect("a valid plan");
            assert_eq!((plan.ranks(), plan.num_microbatches()), (4, 8));
        }
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
