//! The Python binding, `pipeweave._native`: a thin layer over the core crates and nothing else.
//! Names and files resolve through `pipeweave-source` with `pipeweave-host`'s `FsHost` (the
//! command line's), plans are validated by `pipeweave-check`, simulated and compared by
//! `pipeweave-eval`, written by `pipeweave-export` and `pipeweave-report`, and failures are
//! rendered by `pipeweave-diagnostics`' renderer into the package's exceptions. The interpreter's
//! lock is released while anything is resolved, compiled, validated, simulated or written.
//!
//! Plugins run in worker processes, as on the command line: this interpreter started again to
//! serve one plugin library (`_serve_worker`), so a plugin that crashes or hangs is an exception,
//! never the end of the caller's process.

mod context;
mod errors;
mod plan;

use context::with_host;
use errors::{Kind, Raised};
use pipeweave_source::{Catalog, Origin, Params, Setting, Source};
use plan::Plan;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList};
use std::path::PathBuf;

/// The name a plan given as text goes by in messages.
const TEXT_NAME: &str = "<string>";

/// A schedule parameter given as a keyword argument, as `--set NAME=VALUE` would give it: a bool
/// is `true`/`false`, an int its digits, a str as it is (a choice's option).
fn setting(name: String, value: &Bound<'_, PyAny>) -> PyResult<Setting> {
    let value = if value.is_instance_of::<PyBool>() {
        value.extract::<bool>()?.to_string()
    } else if let Ok(n) = value.extract::<i64>() {
        n.to_string()
    } else if let Ok(s) = value.extract::<String>() {
        s
    } else {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "parameter `{name}`: expected a bool, an int or a str, not {}",
            value.get_type().name()?
        )));
    };
    Ok(Setting { name, value })
}

/// Resolves `arg` and builds its plan with `params`.
fn build(c: &mut context::Context, arg: &str, params: &Params) -> Result<Plan, Raised> {
    let source = c
        .resolve(arg)
        .map_err(|f| Raised::new(&f, &c.files, Kind::Plan))?;
    let built = c
        .build(&source, params)
        .map_err(|f| Raised::new(&f, &c.files, Kind::Plan))?;
    let requires = source.declared().map(|d| d.requires.clone());
    Ok(Plan {
        built,
        requires: requires.unwrap_or_default(),
    })
}

/// Compiles a schedule (a library schedule's or plugin's name, a `.weave` file, a schedule of
/// the user's folders) or reads a plan file, and validates the plan.
///
/// `ranks` (P), `microbatches` (M) and `stages_per_rank` (v) are `-p`, `-m` and `-v` of the command
/// line; the schedule's own parameters are keyword arguments, `weight_split=True`, `lag=1`, as
/// `--set` gives them. `plugin_dirs` and `schedule_dirs` are searched first, before
/// `PIPEWEAVE_PLUGIN_PATH` and `PIPEWEAVE_SCHEDULE_PATH`. Raises `UsageError` for parameters the schedule cannot take, `PlanError` when there is
/// no valid plan, with the command line's message.
#[pyfunction]
#[allow(
    clippy::too_many_arguments,
    reason = "the Python signature: every keyword is an argument"
)]
#[pyo3(signature = (schedule, *, ranks=None, microbatches=None, stages_per_rank=None, plugin_dirs=Vec::new(), schedule_dirs=Vec::new(), **params))]
fn compile(
    py: Python<'_>,
    schedule: PathBuf,
    ranks: Option<u32>,
    microbatches: Option<u32>,
    stages_per_rank: Option<u32>,
    plugin_dirs: Vec<PathBuf>,
    schedule_dirs: Vec<PathBuf>,
    params: Option<&Bound<'_, PyDict>>,
) -> PyResult<Plan> {
    let settings = match params {
        Some(d) => d
            .iter()
            .map(|(k, v)| setting(k.extract()?, &v))
            .collect::<PyResult<Vec<_>>>()?,
        None => Vec::new(),
    };
    let arg = schedule.to_string_lossy().into_owned();
    let params = Params {
        ranks,
        microbatches,
        stages_per_rank,
        settings,
        ..Params::default()
    };
    with_host(py, |c| {
        c.dirs(&plugin_dirs, &schedule_dirs);
        build(c, &arg, &params)
    })
}

/// Reads a plan file (a JSON plan, PyTorch's compute_comms CSV, or the actions text with
/// `pipelines` pipelines, by default as many as its micro-batches show) and validates it.
#[pyfunction]
#[pyo3(signature = (path, *, pipelines=None))]
fn load(py: Python<'_>, path: PathBuf, pipelines: Option<u32>) -> PyResult<Plan> {
    let arg = path.to_string_lossy().into_owned();
    with_host(py, |c| {
        let source = c
            .resolve(&arg)
            .map_err(|f| Raised::new(&f, &c.files, Kind::Plan))?;
        if !source.is_plan_file() {
            let what = "is a schedule, not a plan file: compile it with pipeweave.compile";
            return Err(Raised::message(format!("`{arg}` {what}"), Kind::Plan));
        }
        let params = Params {
            pipelines,
            ..Params::default()
        };
        let built = c
            .build(&source, &params)
            .map_err(|f| Raised::new(&f, &c.files, Kind::Plan))?;
        Ok(Plan {
            built,
            requires: String::new(),
        })
    })
}

/// Validates a plan given as text (the actions format, or a JSON plan when it starts with `{`)
/// or read from a path; returns it, or raises `PlanError` with every problem found.
///
/// An `os.PathLike`, or a `str` without a newline, comma or `{`, is a path; any other `str` is the
/// plan's text (messages call it `<string>`).
#[pyfunction]
#[pyo3(signature = (text_or_path, *, pipelines=None))]
fn validate(
    py: Python<'_>,
    text_or_path: &Bound<'_, PyAny>,
    pipelines: Option<u32>,
) -> PyResult<Plan> {
    let text = match text_or_path.extract::<String>() {
        Ok(s) if s.contains('\n') || s.contains(',') || s.trim_start().starts_with('{') => Some(s),
        _ => None,
    };
    let Some(text) = text else {
        return load(py, text_or_path.extract()?, pipelines);
    };
    with_host(py, |c| {
        c.host().with_text(TEXT_NAME, &text);
        let params = Params {
            pipelines,
            ..Params::default()
        };
        let built = c
            .build(&Source::plan_text(TEXT_NAME), &params)
            .map_err(|f| Raised::new(&f, &c.files, Kind::Plan))?;
        Ok(Plan {
            built,
            requires: String::new(),
        })
    })
}

/// Every schedule available by name, as `pipeweave list` shows them: the library, the user's
/// schedule folders, the plugins. Each is a dict: `name` (what to pass to `compile`), `source`
/// ("library", "folder" or "plugin"), `file` (a folder's or plugin's file, else None),
/// `description`, `requires` (in words) and `params` (dicts of `name`, `type`, `default`,
/// `help`). A plugin that cannot be loaded is a warning.
#[pyfunction]
#[pyo3(signature = (*, plugin_dirs=Vec::new(), schedule_dirs=Vec::new()))]
fn list_schedules<'py>(
    py: Python<'py>,
    plugin_dirs: Vec<PathBuf>,
    schedule_dirs: Vec<PathBuf>,
) -> PyResult<Bound<'py, PyList>> {
    let catalog = with_host(py, |c| {
        c.dirs(&plugin_dirs, &schedule_dirs);
        let catalog = Catalog::read(c.host());
        for e in &catalog.errors {
            context::defer_warning(e);
        }
        Ok(catalog)
    })?;
    let rows = catalog
        .entries
        .iter()
        .map(|e| {
            let row = PyDict::new(py);
            let (source, file) = match &e.origin {
                Origin::Library => ("library", None),
                Origin::Folder(path) => ("folder", Some(path.clone())),
                Origin::Plugin(path) => ("plugin", Some(path.clone())),
            };
            row.set_item("name", &e.resolves_as)?;
            row.set_item("source", source)?;
            row.set_item("file", file)?;
            row.set_item("description", &e.declared.description)?;
            row.set_item("requires", &e.declared.requires)?;
            let params = e
                .declared
                .params
                .iter()
                .map(|p| {
                    let d = PyDict::new(py);
                    d.set_item("name", &p.name)?;
                    d.set_item("type", p.ty.to_string())?;
                    d.set_item("default", &p.default)?;
                    d.set_item("help", &p.help)?;
                    Ok(d)
                })
                .collect::<PyResult<Vec<_>>>()?;
            row.set_item("params", params)?;
            Ok(row)
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, rows)
}

/// The plugin worker: serves the plugin library at `path` on standard input and output until the
/// parent closes them (what `pipeweave __plugin-worker` does); returns the exit status.
#[pyfunction]
fn _serve_worker(py: Python<'_>, path: PathBuf) -> i32 {
    py.detach(|| match pipeweave_plugin_host::serve_stdio(&path) {
        Ok(()) => 0,
        Err(_) => 1,
    })
}

#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<Plan>()?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(validate, m)?)?;
    m.add_function(wrap_pyfunction!(list_schedules, m)?)?;
    m.add_function(wrap_pyfunction!(_serve_worker, m)?)?;
    Ok(())
}
