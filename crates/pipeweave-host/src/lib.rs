//! The resolver's outside world for the two front ends, the command line and the Python binding:
//! files through `std::fs` (regular files only; `-` is standard input), texts given in memory,
//! the user's schedule folders (`--schedule-dir`, then the absolute entries of
//! `PIPEWEAVE_SCHEDULE_PATH`), plugins through `pipeweave-plugin-host` on the search path of
//! `--plugin-dir`, `PIPEWEAVE_PLUGIN_PATH` and the front end's own folder. Each plugin runs in a
//! worker process of its own, started by the front end's [`WorkerCommand`]; at most
//! [`LIVE_WORKERS`] run at once (the least recently used is stopped, and started again when it is
//! next asked), so any number of plugins fits in a small descriptor limit. A crash, an abort or a
//! hang of a plugin is an error naming it, under a time limit per request
//! (`PIPEWEAVE_PLUGIN_TIMEOUT`, seconds, from [`MIN_TIMEOUT`] to [`MAX_TIMEOUT`]).
//!
//! Each variable is read by one rule and a value it cannot take is named in a warning, with what
//! it takes (the folder lists: `pipeweave_plugin_host::PathList`).
//!
//! It prints nothing: warnings go to the front end's [`Warn`] (a worker's own output is passed on
//! to standard error by `pipeweave-plugin-host`, bounded).

use pipeweave_check::ValidPlan;
use pipeweave_plugin_host::{
    PathList, PluginError, SearchPath, Worker, WorkerOptions, discover, find, find_file,
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

/// The shortest time limit `PIPEWEAVE_PLUGIN_TIMEOUT` may set: 0.1 s (a worker starts and loads a
/// plugin in a few milliseconds; less would fail plugins for the machine's load).
pub const MIN_TIMEOUT: Duration = Duration::from_millis(100);

/// The longest time limit `PIPEWEAVE_PLUGIN_TIMEOUT` may set: an hour.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

/// The most plugin workers running at once. Each holds three of this process's descriptors and
/// two threads; past this many, the least recently used is stopped, and started again (a few
/// milliseconds) when it is next asked for a plan. Under a descriptor limit below 64 fewer run
/// (see [`live_workers`]).
pub const LIVE_WORKERS: usize = 8;

/// How many workers may run at once under the descriptor limit `limit`: [`LIVE_WORKERS`], fewer
/// when four descriptors each after 32 for the rest of the process do not leave room, and at
/// least one.
fn live_workers(limit: Option<u64>) -> usize {
    let room = limit.map_or(u64::MAX, |limit| limit.saturating_sub(32) / 4);
    usize::try_from(room)
        .unwrap_or(usize::MAX)
        .clamp(1, LIVE_WORKERS)
}

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
    /// The plugins of `loaded` whose worker is running, least recently used first.
    live: Vec<usize>,
    /// How many workers may run at once.
    max_live: usize,
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

/// The time limit `PIPEWEAVE_PLUGIN_TIMEOUT` gives: a number of seconds from [`MIN_TIMEOUT`] to
/// [`MAX_TIMEOUT`].
fn parse_timeout(text: &str) -> Option<Duration> {
    let seconds: f64 = text.trim().parse().ok()?;
    let limit = Duration::try_from_secs_f64(seconds).ok()?;
    (MIN_TIMEOUT..=MAX_TIMEOUT)
        .contains(&limit)
        .then_some(limit)
}

/// The warning for a `PIPEWEAVE_PLUGIN_TIMEOUT` that [`parse_timeout`] refuses, showing at most
/// the value's first few characters.
fn timeout_warning(text: &str) -> String {
    const SHOWN: usize = 40;
    let shown = match text.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    };
    format!(
        "{ENV_TIMEOUT}=`{shown}` is not a number of seconds from {} to {}; plugins get the default {} s",
        MIN_TIMEOUT.as_secs_f64(),
        MAX_TIMEOUT.as_secs_f64(),
        WorkerOptions::DEFAULT_TIME_LIMIT.as_secs()
    )
}

/// The schedule folders, in order: every `--schedule-dir`, then every entry of
/// `PIPEWEAVE_SCHEDULE_PATH` (`env`) that is searched (absolute paths of folders, by the rule of
/// [`PathList`]); with the warnings about the variable's other entries.
fn schedule_folders(
    dirs: &[PathBuf],
    env: Option<&std::ffi::OsStr>,
) -> (Vec<PathBuf>, Vec<String>) {
    let mut folders: Vec<PathBuf> = Vec::new();
    let from_env = env
        .map(|v| PathList::read(ENV_SCHEDULE_PATH, v))
        .unwrap_or_default();
    for d in dirs.iter().chain(&from_env.folders) {
        if !folders.contains(d) {
            folders.push(d.clone());
        }
    }
    (folders, from_env.warnings())
}

/// A folder given to search (`--plugin-dir`, `--schedule-dir`) that is no folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FolderError {
    /// Whether it was a plugin folder (else a schedule folder).
    pub plugins: bool,
    /// The folder as given.
    pub path: PathBuf,
    /// Why it is not searched, in words.
    pub why: String,
}

/// Why `dir` is no folder to search, or `None` when it is one.
fn folder_problem(dir: &Path) -> Option<String> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => match std::fs::read_dir(dir) {
            Ok(_) => None,
            Err(e) => Some(format!("it cannot be read: {e}")),
        },
        Ok(_) => Some("it is not a folder".to_owned()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Some("there is no such folder".to_owned())
        }
        Err(e) => Some(format!("it cannot be read: {e}")),
    }
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

/// The first bytes of a gzip stream (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// The most bytes a gzipped trace may unzip to: 4 GiB, beyond any profiled step, so that a small
/// file that unzips without end is refused rather than filling memory.
pub const MAX_TRACE_BYTES: u64 = 4 << 30;

/// The bytes a gzip stream holds (every member, as `gzip -d` reads them), at most
/// [`MAX_TRACE_BYTES`]. Unzipped a piece at a time, each piece checked for the control characters
/// JSON never holds (anything below a space but tab, line feed and carriage return), so a small
/// file that unzips to gigabytes of zeros is refused at its first byte instead of after them.
fn gunzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut decoder = flate2::read::MultiGzDecoder::new(bytes);
    let mut out = Vec::new();
    let mut piece = vec![0u8; 1 << 16];
    loop {
        let n = match decoder.read(&mut piece) {
            Ok(0) => return Ok(out),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(std::io::Error::other(format!("not a whole gzip file: {e}"))),
        };
        let piece = &piece[..n];
        if let Some(at) = piece
            .iter()
            .position(|&b| b < b' ' && !matches!(b, b'\t' | b'\n' | b'\r'))
        {
            return Err(std::io::Error::other(format!(
                "it unzips to no JSON text: byte {} of the unzipped text is 0x{:02x}, a control \
                 character JSON never holds",
                out.len() + at,
                piece[at]
            )));
        }
        if (out.len() + n) as u64 > MAX_TRACE_BYTES {
            return Err(std::io::Error::other(format!(
                "it unzips to more than {} GiB, more than any profiled step",
                MAX_TRACE_BYTES >> 30
            )));
        }
        out.extend_from_slice(piece);
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

/// A plugin file given by its path (`plugin:PATH`) that is not a regular file (after links) is
/// refused before a worker starts, in the words [`read_regular`] uses (the loader would wait for
/// a FIFO's writer until the time limit). A path that names nothing is left to the loader's
/// words.
fn check_plugin_file(shown: &str, path: &Path) -> Result<(), Failure> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => Err(Failure::invalid(format!(
            "cannot read `{shown}`: not a regular file but {}; give a plugin library file",
            kind_name(&m.file_type())
        ))),
        _ => Ok(()),
    }
}

/// Why pipeweave will not write a file at `path` (`-o`, `--svg`), in the words it refuses to read
/// one: a FIFO would block until a reader comes (and a socket or a block device is no file to
/// replace); a folder; a folder that does not exist. `None` when it may: a regular file (replaced
/// whole), nothing yet in an existing folder, or a character device such as `/dev/null` (written
/// as a stream). Checked before any work, so that a command never works for nothing.
pub fn output_problem(path: &Path) -> Option<String> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => None,
        Ok(m) if m.is_dir() => Some("it is a folder; give a file in it".to_owned()),
        #[cfg(unix)]
        Ok(m) if std::os::unix::fs::FileTypeExt::is_char_device(&m.file_type()) => None,
        Ok(m) => Some(format!(
            "not a regular file but {}; give a file, or `-` for standard output",
            kind_name(&m.file_type())
        )),
        Err(_) => {
            let parent = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            if parent.is_dir() {
                None
            } else {
                Some(format!(
                    "there is no folder `{}` to write it in",
                    parent.display()
                ))
            }
        }
    }
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
            live: Vec::new(),
            max_live: live_workers(pipeweave_plugin_host::descriptor_limit()),
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

    /// Puts these folders first, each checked: the first that is no folder to search (missing,
    /// not a folder, unreadable) is refused with why, and nothing is set.
    pub fn with_folders(
        &mut self,
        plugin_dirs: &[PathBuf],
        schedule_dirs: &[PathBuf],
    ) -> Result<(), FolderError> {
        for (plugins, dirs) in [(true, plugin_dirs), (false, schedule_dirs)] {
            for dir in dirs {
                if let Some(why) = folder_problem(dir) {
                    return Err(FolderError {
                        plugins,
                        path: dir.clone(),
                        why,
                    });
                }
            }
        }
        self.with_plugin_dirs(plugin_dirs);
        self.with_schedule_dirs(schedule_dirs);
        Ok(())
    }

    /// The search path: `--plugin-dir`s, then `PIPEWEAVE_PLUGIN_PATH` (absolute folders), then
    /// next to the executable, then (debug builds) the workspace's build directories.
    fn search(&mut self) -> &SearchPath {
        let warn = &self.warn;
        let home = &self.home;
        self.search.get_or_insert_with(|| {
            let env = std::env::var_os(ENV_PATH);
            let exe = home.clone().or_else(|| std::env::current_exe().ok());
            let search = SearchPath::standard(&self.plugin_dirs, env.as_deref(), exe.as_deref());
            // Entries of the variable that are not searched: say so once per process.
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| search.warnings().iter().for_each(|w| warn(w)));
            search
        })
    }

    /// The time limit and reply bound of the workers; a `PIPEWEAVE_PLUGIN_TIMEOUT` that is no
    /// number of seconds in its range is named in a warning and the default limit holds.
    fn options(&mut self) -> WorkerOptions {
        *self.options.get_or_insert_with(|| {
            let mut options = WorkerOptions::default();
            if let Some(text) = std::env::var_os(ENV_TIMEOUT) {
                let text = text.to_string_lossy();
                match parse_timeout(&text) {
                    Some(limit) => options.time_limit = limit,
                    None => (self.warn)(&timeout_warning(&text)),
                }
            }
            options
        })
    }

    /// Notes that the plugin `index` was just used: it becomes the most recently used of the
    /// running workers, and the least recently used past [`LIVE_WORKERS`] is stopped.
    fn used(&mut self, index: usize) {
        self.live.retain(|&i| i != index);
        if let Some((_, Ok(worker))) = self.loaded.get(index)
            && worker.is_running()
        {
            self.live.push(index);
        }
        while self.live.len() > self.max_live {
            let oldest = self.live.remove(0);
            if let Some((_, Ok(worker))) = self.loaded.get_mut(oldest) {
                worker.stop();
            }
        }
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
                let index = self.loaded.len() - 1;
                self.used(index);
                index
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
                let (folders, warnings) = schedule_folders(dirs, env.as_deref());
                // Entries of the variable that are not searched: say so once per process.
                static WARNED: std::sync::Once = std::sync::Once::new();
                WARNED.call_once(|| warnings.iter().for_each(|w| warn(w)));
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

    fn read_trace(&mut self, path: &str) -> Result<String, Failure> {
        if path == STDIN || self.text(path).is_some() {
            return self.read(path);
        }
        let name = pipeweave_source::shown_name(path);
        let cannot =
            |e: &dyn std::fmt::Display| Failure::invalid(format!("cannot read `{name}`: {e}"));
        let bytes = read_regular(Path::new(path)).map_err(|e| cannot(&e))?;
        let bytes = if bytes.starts_with(&GZIP_MAGIC) {
            gunzip(&bytes).map_err(|e| cannot(&e))?
        } else {
            bytes
        };
        pipeweave_diagnostics::text_from_bytes(bytes, pipeweave_diagnostics::FileId(0))
            .map_err(|d| cannot(&d.message))
    }

    fn has_plugin(&mut self, name: &str) -> bool {
        find(name, self.search()).is_ok()
    }

    fn plugin(&mut self, target: &PluginTarget) -> Result<PluginInfo, Failure> {
        match target {
            PluginTarget::Path(file) => {
                let path = self.plugin_file(file).map_err(failure)?;
                check_plugin_file(file, &path)?;
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

    fn generate(
        &mut self,
        plugin: PluginId,
        request: &PluginRequest,
    ) -> Result<ValidPlan, Failure> {
        let Some((_, Ok(worker))) = self.loaded.get_mut(plugin.0) else {
            return Err(Failure::invalid("no such plugin handle"));
        };
        let request = worker
            .request(request.ranks, request.microbatches, &request.settings)
            .map_err(failure)?;
        // The plugin host checks the shape of every plan a plugin returns and validates it.
        let plan = worker.generate(&request).map_err(failure);
        self.used(plugin.0);
        plan
    }
}

#[cfg(test)]
mod tests;
