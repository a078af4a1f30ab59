//! The Python binding, `pipeweave._native`: argument conversion and results, over the application
//! layer (`pipeweave-app`), which runs every command as the command line does. Names and files
//! resolve through the command line's host (`pipeweave-host`), failures are rendered by the one
//! renderer into the package's exceptions, and the interpreter's lock is released while anything
//! is resolved, compiled, validated, simulated, searched or written.
//!
//! Plugins run in worker processes, as on the command line: this interpreter started again to
//! serve one plugin library (`_serve_worker`), so a plugin that crashes or hangs is an exception,
//! never the end of the caller's process.

mod args;
mod commands;
mod context;
mod errors;
mod plan;

use args::{Whole, settings, to_python, whole_arg};
use context::{Dirs, with_session};
use pipeweave_source::Flag;
use pipeweave_source::Params;
use plan::Plan;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::path::PathBuf;

/// The name a plan given as text goes by in messages.
const TEXT_NAME: &str = "<string>";

/// Compiles a schedule (a library schedule's or plugin's name, a `.weave` file, a schedule of
/// the user's folders, `synth:PLACEMENT`) or reads a plan file, and validates the plan.
///
/// `ranks` (P), `microbatches` (M) and `stages_per_rank` (v) are `-p`, `-m` and `-v` of the command
/// line; the schedule's own parameters are keyword arguments, `weight_split=True`, `lag=1`, as
/// `--set` gives them; `forward_only=True` is the evaluation step (`--forward-only`: the plan's
/// forwards in its order). `plugin_dirs` and `schedule_dirs` are searched first, before
/// `PIPEWEAVE_PLUGIN_PATH` and `PIPEWEAVE_SCHEDULE_PATH`. Raises `UsageError` for parameters the
/// schedule cannot take, `PlanError` when there is no valid plan, with the command line's message.
#[pyfunction]
#[allow(
    clippy::too_many_arguments,
    reason = "the Python signature: every keyword is an argument"
)]
#[pyo3(signature = (schedule, *, ranks=None, microbatches=None, stages_per_rank=None, forward_only=false, plugin_dirs=Vec::new(), schedule_dirs=Vec::new(), **params))]
fn compile(
    py: Python<'_>,
    schedule: PathBuf,
    ranks: Option<Whole>,
    microbatches: Option<Whole>,
    stages_per_rank: Option<Whole>,
    forward_only: bool,
    plugin_dirs: Vec<PathBuf>,
    schedule_dirs: Vec<PathBuf>,
    params: Option<&Bound<'_, PyDict>>,
) -> PyResult<Plan> {
    let params = Params {
        forward_only,
        ranks: whole_arg(ranks, Flag::Ranks)?,
        microbatches: whole_arg(microbatches, Flag::Microbatches)?,
        stages_per_rank: whole_arg(stages_per_rank, Flag::StagesPerRank)?,
        settings: settings(params)?,
        ..Params::default()
    };
    let arg = schedule.to_string_lossy().into_owned();
    let dirs = Dirs {
        plugins: &plugin_dirs,
        schedules: &schedule_dirs,
        texts: &[],
    };
    let loaded = with_session(py, &dirs, |s| pipeweave_app::validate(s, &arg, &params))?;
    Ok(Plan { loaded })
}

/// Reads a plan file (a JSON plan, PyTorch's compute_comms CSV, or the actions text with
/// `pipelines` pipelines, by default as many as its micro-batches show) and validates it;
/// `forward_only=True` takes its evaluation form (an actions file of an evaluation plan, which
/// cannot say so itself, is read as one).
#[pyfunction]
#[pyo3(signature = (path, *, pipelines=None, forward_only=false))]
fn load(
    py: Python<'_>,
    path: PathBuf,
    pipelines: Option<Whole>,
    forward_only: bool,
) -> PyResult<Plan> {
    let arg = path.to_string_lossy().into_owned();
    let params = Params {
        pipelines: whole_arg(pipelines, Flag::Pipelines)?,
        forward_only,
        ..Params::default()
    };
    let missing = arg != pipeweave_source::STDIN && std::fs::symlink_metadata(&path).is_err();
    let loaded = with_session(py, &Dirs::default(), |s| {
        let source = s.resolve(&arg).map_err(|f| {
            // A path that names nothing is said as such (the resolver looked for a schedule).
            if missing {
                pipeweave_source::Failure::invalid(format!(
                    "cannot read `{}`: there is no such file",
                    pipeweave_diagnostics::visible(&arg)
                ))
            } else {
                f
            }
        })?;
        if !source.is_plan_file() {
            return Err(pipeweave_source::Failure::invalid(format!(
                "`{arg}` is a schedule, not a plan file: compile it with pipeweave.compile"
            )));
        }
        let built = s.build(&source, &params)?;
        Ok(pipeweave_app::Loaded::new(&source, built))
    })?;
    Ok(Plan { loaded })
}

/// Validates a plan given as text (the actions format, or a JSON plan when it starts with `{`)
/// or read from a path; returns it, or raises `PlanError` with every problem found.
///
/// An `os.PathLike`, or a `str` without a newline, comma or `{`, is a path; any other `str` is the
/// plan's text (messages call it `<string>`).
#[pyfunction]
#[pyo3(signature = (text_or_path, *, pipelines=None, forward_only=false))]
fn validate(
    py: Python<'_>,
    text_or_path: &Bound<'_, PyAny>,
    pipelines: Option<Whole>,
    forward_only: bool,
) -> PyResult<Plan> {
    let text = match text_or_path.extract::<String>() {
        Ok(s) if s.contains('\n') || s.contains(',') || s.trim_start().starts_with('{') => Some(s),
        _ => None,
    };
    let Some(text) = text else {
        return load(py, text_or_path.extract()?, pipelines, forward_only);
    };
    let params = Params {
        pipelines: whole_arg(pipelines, Flag::Pipelines)?,
        forward_only,
        ..Params::default()
    };
    let texts = [(TEXT_NAME, text.as_str())];
    let dirs = Dirs {
        texts: &texts,
        ..Dirs::default()
    };
    let loaded = with_session(py, &dirs, |s| {
        let source = pipeweave_source::Source::plan_text(TEXT_NAME);
        let built = s.build(&source, &params)?;
        Ok(pipeweave_app::Loaded::new(&source, built))
    })?;
    Ok(Plan { loaded })
}

/// Every schedule available by name, as `pipeweave list` shows them: the library, the user's
/// schedule folders, the plugins (a `ScheduleInfo` each: `name`, `source`, `file`,
/// `description`, `requires`, `same_plans_as`, `params`). A plugin that cannot be loaded is a
/// warning.
#[pyfunction]
#[pyo3(signature = (*, plugin_dirs=Vec::new(), schedule_dirs=Vec::new()))]
fn list_schedules<'py>(
    py: Python<'py>,
    plugin_dirs: Vec<PathBuf>,
    schedule_dirs: Vec<PathBuf>,
) -> PyResult<Bound<'py, PyList>> {
    let dirs = Dirs {
        plugins: &plugin_dirs,
        schedules: &schedule_dirs,
        texts: &[],
    };
    let listing = with_session(py, &dirs, |s| Ok(pipeweave_app::list(s)))?;
    let rows = to_python(py, &listing.schedules)?;
    Ok(rows.cast_into::<PyList>()?)
}

/// Checks a `.weave` schedule as `pipeweave check` does: its syntax and names, then its plans
/// compiled and validated for P = 2…8 and every M up to 2P its requirements allow. Returns a
/// dict (`name`, `combinations`, `nothing_compiled`); raises `PlanError` with the first problem.
#[pyfunction]
#[pyo3(signature = (schedule, *, schedule_dirs=Vec::new()))]
fn check<'py>(
    py: Python<'py>,
    schedule: PathBuf,
    schedule_dirs: Vec<PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let arg = schedule.to_string_lossy().into_owned();
    let dirs = Dirs {
        schedules: &schedule_dirs,
        ..Dirs::default()
    };
    let c = with_session(py, &dirs, |s| pipeweave_app::check(s, &arg))?;
    let out = PyDict::new(py);
    out.set_item("name", c.name)?;
    out.set_item("combinations", c.combinations)?;
    out.set_item("nothing_compiled", c.nothing_compiled)?;
    Ok(out)
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
    m.add_function(wrap_pyfunction!(check, m)?)?;
    commands::register(m)?;
    m.add_function(wrap_pyfunction!(_serve_worker, m)?)?;
    Ok(())
}
