//! The binding's outside world: one `pipeweave_host::FsHost` for the interpreter's life (so a
//! plugin's worker process starts once, as it does once per command line run), whose plugins run
//! in worker processes of this interpreter (`python -c ... pipeweave._native._serve_worker`), and
//! whose warnings become Python warnings.

use crate::errors::Raised;
use pipeweave_diagnostics::Files;
use pipeweave_host::{FsHost, WorkerCommand};
use pipeweave_source::{Built, Failure, LoadedSpec, Params, Source, load_spec};
use pyo3::prelude::*;
use std::ffi::CString;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// The worker's program: puts the package's folder first on the path (whatever folder the worker
/// starts in), then serves the plugin library named by its last argument.
const WORKER_SCRIPT: &str = "import sys; sys.path.insert(0, sys.argv.pop(1)); \
from pipeweave._native import _serve_worker; sys.exit(_serve_worker(sys.argv[1]))";

/// How to start workers and where the package is, read from the interpreter once.
#[derive(Debug)]
struct Setup {
    worker: WorkerCommand,
    /// The native module's file: plugins are searched in its folder.
    native: Option<PathBuf>,
}

static SETUP: OnceLock<Setup> = OnceLock::new();
static HOST: Mutex<Option<FsHost>> = Mutex::new(None);
static WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn setup(py: Python<'_>) -> PyResult<&'static Setup> {
    if let Some(s) = SETUP.get() {
        return Ok(s);
    }
    let executable: Option<PathBuf> = py.import("sys")?.getattr("executable")?.extract().ok();
    let native: Option<PathBuf> = py
        .import("pipeweave._native")?
        .getattr("__file__")
        .and_then(|f| f.extract())
        .ok();
    // The folder that holds the `pipeweave` package.
    let root = native
        .as_deref()
        .and_then(|f| f.parent())
        .and_then(|p| p.parent())
        .map(|p| p.as_os_str().to_owned())
        .unwrap_or_default();
    let worker = WorkerCommand {
        program: executable.filter(|e| !e.as_os_str().is_empty()),
        args: vec!["-c".into(), WORKER_SCRIPT.into(), root],
    };
    Ok(SETUP.get_or_init(|| Setup { worker, native }))
}

/// One call's view of the world: the shared host and the files this call reads.
pub struct Context {
    host: MutexGuard<'static, Option<FsHost>>,
    /// The texts read by this call: what its errors point into.
    pub files: Files,
}

impl Context {
    /// The host, locked for this call (a call from another thread waits for it).
    pub fn host(&mut self) -> &mut FsHost {
        self.host.get_or_insert_with(|| {
            let setup = SETUP
                .get()
                .expect("prepared before the interpreter is released");
            let warn = Box::new(defer_warning);
            let host = FsHost::new(setup.worker.clone(), warn);
            match &setup.native {
                Some(native) => host.with_home(native.clone()),
                None => host,
            }
        })
    }

    /// The host and the files, both at once.
    fn split(&mut self) -> (&mut FsHost, &mut Files) {
        self.host();
        let host = self.host.as_mut().expect("made by `host`");
        (host, &mut self.files)
    }

    /// Resolves a PLAN or SCHEDULE argument.
    pub fn resolve(&mut self, arg: &str) -> Result<Source, Failure> {
        let (host, files) = self.split();
        Source::resolve(arg, host, files)
    }

    /// Builds and validates `source`'s plan for `params`.
    pub fn build(&mut self, source: &Source, params: &Params) -> Result<Built, Failure> {
        let (host, files) = self.split();
        source.build(params, host, files)
    }

    /// Reads the spec `arg` names.
    pub fn spec(&mut self, arg: &str) -> Result<LoadedSpec, Failure> {
        let (host, files) = self.split();
        load_spec(arg, host, files)
    }

    /// Puts these folders first: `plugin_dirs` before `PIPEWEAVE_PLUGIN_PATH`, `schedule_dirs`
    /// before `PIPEWEAVE_SCHEDULE_PATH` (both read again for every call).
    pub fn dirs(&mut self, plugin_dirs: &[PathBuf], schedule_dirs: &[PathBuf]) {
        let host = self.host();
        host.with_plugin_dirs(plugin_dirs);
        host.with_schedule_dirs(schedule_dirs);
    }
}

/// Runs `f` without the interpreter's lock, with the shared host; then shows the host's warnings
/// as Python warnings.
pub fn with_host<T: Send>(
    py: Python<'_>,
    f: impl FnOnce(&mut Context) -> Result<T, Raised> + Send,
) -> PyResult<T> {
    setup(py)?;
    let out = py.detach(|| {
        let host = HOST.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut context = Context {
            host,
            files: Files::default(),
        };
        f(&mut context)
    });
    warn(
        py,
        std::mem::take(&mut *WARNINGS.lock().unwrap_or_else(|p| p.into_inner())),
    )?;
    Ok(out?)
}

/// Keeps a warning to show once the call returns to the interpreter.
pub fn defer_warning(message: &str) {
    if let Ok(mut w) = WARNINGS.lock() {
        w.push(message.to_owned());
    }
}

/// Shows `messages` as Python `UserWarning`s.
pub fn warn(py: Python<'_>, messages: Vec<String>) -> PyResult<()> {
    let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
    for m in messages {
        let text = CString::new(m.replace('\0', "␀")).unwrap_or_default();
        PyErr::warn(py, &category, &text, 1)?;
    }
    Ok(())
}
