//! The binding's outside world: one `pipeweave_host::FsHost` for the interpreter's life (so a
//! plugin's worker process starts once, as it does once per command line run), whose plugins run
//! in worker processes of this interpreter (`python -c ... pipeweave._native._serve_worker`), and
//! whose warnings become Python warnings.

use crate::errors::Raised;
use pipeweave_app::{Events, FrontEnd, Session, Told};
use pipeweave_host::{FsHost, WorkerCommand};
use pipeweave_source::Failure;
use pyo3::prelude::*;
use std::ffi::CString;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

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

/// The shared host, made on first use.
fn host(guard: &mut Option<FsHost>) -> &mut FsHost {
    guard.get_or_insert_with(|| {
        let setup = SETUP
            .get()
            .expect("prepared before the interpreter is released");
        let host = FsHost::new(setup.worker.clone(), Box::new(defer_warning));
        match &setup.native {
            Some(native) => host.with_home(native.clone()),
            None => host,
        }
    })
}

/// What a call tells the user: warnings become Python warnings once the call returns; notes
/// are in the results already (how a spec was fitted, how long a search took).
struct Deferred;

impl Events for Deferred {
    fn tell(&mut self, told: Told<'_>) {
        match told {
            Told::Rendered(text) => defer_warning(text.trim_end()),
            Told::Warning(message) => defer_warning(message),
            Told::Note(_) => {}
        }
    }
}

/// The folders a call looks in first: `plugin_dirs` before `PIPEWEAVE_PLUGIN_PATH`,
/// `schedule_dirs` before `PIPEWEAVE_SCHEDULE_PATH` (both read again for every call).
#[derive(Debug, Default)]
pub struct Dirs<'d> {
    pub plugins: &'d [PathBuf],
    pub schedules: &'d [PathBuf],
    /// Plan texts given in memory, by the name messages call them.
    pub texts: &'d [(&'d str, &'d str)],
}

/// Runs `f` in an application-layer session over the shared host (with `dirs` first), without
/// the interpreter's lock; a failure is rendered over the files the call read, as the command line
/// renders it, into the package's exception. Then shows the host's warnings as Python warnings.
pub fn with_session<T: Send>(
    py: Python<'_>,
    dirs: &Dirs<'_>,
    f: impl FnOnce(&mut Session<'_>) -> Result<T, Failure> + Send,
) -> PyResult<T> {
    setup(py)?;
    let out = py.detach(|| {
        let mut guard = HOST.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let host = host(&mut guard);
        if let Err(e) = host.with_folders(dirs.plugins, dirs.schedules) {
            let name = if e.plugins {
                "plugin_dirs"
            } else {
                "schedule_dirs"
            };
            let failure = Failure::usage(format!("{name}: {}: {}", e.path.display(), e.why));
            return Err(Raised::new(&failure, &Default::default()));
        }
        for (name, text) in dirs.texts {
            host.with_text(name, text);
        }
        let mut events = Deferred;
        let mut session = Session::new(host, &mut events, FrontEnd::Python, 0);
        f(&mut session).map_err(|failure| Raised::new(&failure, &session.files))
    });
    warn(
        py,
        std::mem::take(&mut *WARNINGS.lock().unwrap_or_else(|p| p.into_inner())),
    )?;
    Ok(out?)
}

/// Keeps a warning to show once the call returns to the interpreter (a control character in it,
/// from a path or a plugin, drawn as its picture; line ends kept).
pub fn defer_warning(message: &str) {
    let shown: String = message
        .split('\n')
        .map(|line| pipeweave_diagnostics::visible(line).into_owned())
        .collect::<Vec<_>>()
        .join("\n");
    if let Ok(mut w) = WARNINGS.lock() {
        w.push(shown);
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
