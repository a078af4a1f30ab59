//! The commands on several schedules and the searches, as module functions: `compare`, `sweep`,
//! `render`, `report`, `recommend` and `synthesize`, each the application layer's, with the
//! command line's defaults and results (the JSON the command line prints, as dicts; SVG and HTML
//! as text).

use crate::args::{Costs, Count, Whole, costs_text, rule, settings, to_python, whole, whole_arg};
use crate::context::{Dirs, with_session};
use crate::plan::Plan;
use pipeweave_app::{
    CalibrateRequest, CompareRequest, DiffRequest, Loaded, OverArg, PlacementArg, RenderRequest,
    ReportRequest, SweepRequest, SynthesizeRequest, TimeWindow,
};
use pipeweave_eval::Metric;
use pipeweave_sim::UniformCosts;
use pipeweave_source::Flag;
use pipeweave_source::{Failure, Params};
use pyo3::prelude::*;
use pyo3::types::{PyAny, PyDict};
use std::path::PathBuf;
use std::time::Duration;

/// `metric=`: `"bubble"` or `"step_time"`, as `--metric` takes them.
fn metric(text: &str) -> Result<Metric, Failure> {
    match text {
        "bubble" => Ok(Metric::Bubble),
        "step_time" | "step-time" => Ok(Metric::StepTime),
        other => Err(Failure::usage(format!(
            "metric must be \"bubble\" or \"step_time\", not {other:?}"
        ))),
    }
}

/// `over=`, read by the command line's one reader.
fn over(text: &str) -> Result<OverArg, Failure> {
    pipeweave_app::parse_over(text).map_err(|e| Failure::usage(e.0))
}

/// The parameters every schedule of a command takes, from the keyword arguments.
fn params(
    ranks: Option<Whole>,
    microbatches: Option<Whole>,
    stages_per_rank: Option<Whole>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Params> {
    Ok(Params {
        ranks: whole_arg(ranks, Flag::Ranks)?,
        microbatches: whole_arg(microbatches, Flag::Microbatches)?,
        stages_per_rank: whole_arg(stages_per_rank, Flag::StagesPerRank)?,
        settings: settings(kwargs)?,
        ..Params::default()
    })
}

/// `schedules` compared on a spec (the built-in default unless `spec` names one), as
/// `pipeweave compare --format json` prints it: P and M (the spec's where not given), `v` and
/// the schedules' own parameters as keyword arguments; `units=True` or `costs=` add the makespan
/// under those costs, `costs_from=` (a file `calibrate` wrote) the makespan and peak saved bytes
/// under measured costs. A schedule and its twin plugin share a row when their plans are equal; a
/// schedule that cannot be built keeps its row with the reason.
#[pyfunction]
#[allow(
    clippy::too_many_arguments,
    reason = "the Python signature: every keyword is an argument"
)]
#[pyo3(signature = (schedules, *, spec=None, ranks=None, microbatches=None, stages_per_rank=None, units=false, costs=None, costs_from=None, strict_spec=false, keep_dp=false, global_batch=false, split=None, recompute=None, plugin_dirs=Vec::new(), schedule_dirs=Vec::new(), **kwargs))]
fn compare<'py>(
    py: Python<'py>,
    schedules: Vec<String>,
    spec: Option<String>,
    ranks: Option<Whole>,
    microbatches: Option<Whole>,
    stages_per_rank: Option<Whole>,
    units: bool,
    costs: Option<&Bound<'py, PyAny>>,
    costs_from: Option<String>,
    strict_spec: bool,
    keep_dp: bool,
    global_batch: bool,
    split: Option<String>,
    recompute: Option<String>,
    plugin_dirs: Vec<PathBuf>,
    schedule_dirs: Vec<PathBuf>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let costs = costs_text(costs)?;
    let params = params(ranks, microbatches, stages_per_rank, kwargs)?;
    let spec_rule = rule(
        strict_spec,
        keep_dp,
        global_batch,
        (split.as_deref(), recompute.as_deref()),
    )?;
    let dirs = Dirs {
        plugins: &plugin_dirs,
        schedules: &schedule_dirs,
        texts: &[],
    };
    let compared = with_session(py, &dirs, |s| {
        let units = match costs.as_deref() {
            Some(text) => Some(UniformCosts::parse(text, "costs").map_err(Failure::usage)?),
            None => units.then(UniformCosts::default),
        };
        let request = CompareRequest {
            schedules,
            params,
            spec,
            rule: spec_rule,
            units,
            costs_from,
        };
        pipeweave_app::compare(s, &request, None::<Loaded>)
    })?;
    to_python(py, &compared.value)
}

/// One metric of `schedules` against a swept parameter, as `pipeweave sweep --format json`
/// prints it: `over` as `--over` takes it (`"m=8..64"`, `"ranks=2,4,8"`, `"lag=0..3"`),
/// `metric="bubble"` or `"step_time"`, under unit costs, `costs=` or on `spec`.
#[pyfunction]
#[allow(
    clippy::too_many_arguments,
    reason = "the Python signature: every keyword is an argument"
)]
#[pyo3(signature = (schedules, over, *, metric="bubble", spec=None, costs=None, costs_from=None, ranks=None, microbatches=None, stages_per_rank=None, strict_spec=false, keep_dp=false, global_batch=false, split=None, recompute=None, plugin_dirs=Vec::new(), schedule_dirs=Vec::new(), **kwargs))]
fn sweep<'py>(
    py: Python<'py>,
    schedules: Vec<String>,
    over: String,
    metric: &str,
    spec: Option<String>,
    costs: Option<&Bound<'py, PyAny>>,
    costs_from: Option<String>,
    ranks: Option<Whole>,
    microbatches: Option<Whole>,
    stages_per_rank: Option<Whole>,
    strict_spec: bool,
    keep_dp: bool,
    global_batch: bool,
    split: Option<String>,
    recompute: Option<String>,
    plugin_dirs: Vec<PathBuf>,
    schedule_dirs: Vec<PathBuf>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let costs = Costs::of(
        spec,
        costs,
        costs_from,
        (strict_spec, keep_dp, global_batch),
        (split.as_deref(), recompute.as_deref()),
    )?;
    let params = params(ranks, microbatches, stages_per_rank, kwargs)?;
    let metric = metric.to_owned();
    let dirs = Dirs {
        plugins: &plugin_dirs,
        schedules: &schedule_dirs,
        texts: &[],
    };
    let swept = with_session(py, &dirs, |s| {
        let request = SweepRequest {
            schedules,
            params,
            costs: costs.arg()?,
            over: self::over(&over)?,
            metric: self::metric(&metric)?,
        };
        pipeweave_app::sweep(s, &request)
    })?;
    to_python(py, &swept.value)
}

/// The simulated timelines of `schedules` as one SVG on one time scale, as `pipeweave render`
/// draws it (`comms=True` adds the transfer lanes; `start` and `end` a window of time).
#[pyfunction]
#[allow(
    clippy::too_many_arguments,
    reason = "the Python signature: every keyword is an argument"
)]
#[pyo3(signature = (schedules, *, spec=None, costs=None, costs_from=None, ranks=None, microbatches=None, stages_per_rank=None, comms=false, start=None, end=None, strict_spec=false, keep_dp=false, global_batch=false, split=None, recompute=None, plugin_dirs=Vec::new(), schedule_dirs=Vec::new(), **kwargs))]
fn render(
    py: Python<'_>,
    schedules: Vec<String>,
    spec: Option<String>,
    costs: Option<&Bound<'_, PyAny>>,
    costs_from: Option<String>,
    ranks: Option<Whole>,
    microbatches: Option<Whole>,
    stages_per_rank: Option<Whole>,
    comms: bool,
    start: Option<f64>,
    end: Option<f64>,
    strict_spec: bool,
    keep_dp: bool,
    global_batch: bool,
    split: Option<String>,
    recompute: Option<String>,
    plugin_dirs: Vec<PathBuf>,
    schedule_dirs: Vec<PathBuf>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    let costs = Costs::of(
        spec,
        costs,
        costs_from,
        (strict_spec, keep_dp, global_batch),
        (split.as_deref(), recompute.as_deref()),
    )?;
    let params = params(ranks, microbatches, stages_per_rank, kwargs)?;
    let dirs = Dirs {
        plugins: &plugin_dirs,
        schedules: &schedule_dirs,
        texts: &[],
    };
    let rendered = with_session(py, &dirs, |s| {
        let request = RenderRequest {
            schedules,
            params,
            costs: costs.arg()?,
            comms,
            window: window(start, end)?,
        };
        Ok(pipeweave_app::render(s, &request)?.svg)
    })?;
    Ok(rendered)
}

/// A window of time: each end a number of at least 0.
fn window(start: Option<f64>, end: Option<f64>) -> Result<TimeWindow, Failure> {
    for (name, t) in [("start", start), ("end", end)] {
        if let Some(t) = t.filter(|t| !(t.is_finite() && *t >= 0.0)) {
            return Err(Failure::usage(format!(
                "{name}={t} is not a time (a number ≥ 0)"
            )));
        }
    }
    Ok(TimeWindow {
        from: start,
        to: end,
    })
}

/// One self-contained HTML page about `schedules`, as `pipeweave report` writes it: the
/// comparison, the timelines and a sweep (`over`, by default micro-batches from P to 16P).
#[pyfunction]
#[allow(
    clippy::too_many_arguments,
    reason = "the Python signature: every keyword is an argument"
)]
#[pyo3(signature = (schedules, *, spec=None, costs=None, costs_from=None, ranks=None, microbatches=None, stages_per_rank=None, over=None, metric="bubble", comms=false, start=None, end=None, strict_spec=false, keep_dp=false, global_batch=false, split=None, recompute=None, plugin_dirs=Vec::new(), schedule_dirs=Vec::new(), **kwargs))]
fn report(
    py: Python<'_>,
    schedules: Vec<String>,
    spec: Option<String>,
    costs: Option<&Bound<'_, PyAny>>,
    costs_from: Option<String>,
    ranks: Option<Whole>,
    microbatches: Option<Whole>,
    stages_per_rank: Option<Whole>,
    over: Option<String>,
    metric: &str,
    comms: bool,
    start: Option<f64>,
    end: Option<f64>,
    strict_spec: bool,
    keep_dp: bool,
    global_batch: bool,
    split: Option<String>,
    recompute: Option<String>,
    plugin_dirs: Vec<PathBuf>,
    schedule_dirs: Vec<PathBuf>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    let costs = Costs::of(
        spec,
        costs,
        costs_from,
        (strict_spec, keep_dp, global_batch),
        (split.as_deref(), recompute.as_deref()),
    )?;
    let params = params(ranks, microbatches, stages_per_rank, kwargs)?;
    let metric = metric.to_owned();
    let dirs = Dirs {
        plugins: &plugin_dirs,
        schedules: &schedule_dirs,
        texts: &[],
    };
    with_session(py, &dirs, |s| {
        let request = ReportRequest {
            schedules,
            params,
            costs: costs.arg()?,
            over: over.as_deref().map(self::over).transpose()?,
            metric: self::metric(&metric)?,
            comms,
            window: window(start, end)?,
        };
        pipeweave_app::report(s, &request)
    })
}

/// `calibrate`'s `plan`: one plan, or one per run.
#[derive(FromPyObject)]
enum Plans {
    /// One run's plan.
    One(PathBuf),
    /// Several runs' plans, in the order of their traces.
    Many(Vec<PathBuf>),
}

/// The costs measured in the profiler traces of a run, one file per rank (`.json` or `.json.gz`),
/// as `pipeweave calibrate` measures them: the text of the costs file (`pipeweave-costs` v3, TOML,
/// what `costs_from=` reads once written to a file). `plan` is the plan that ran (a schedule with
/// `ranks=` and `microbatches=`, or a plan file; `None`: the one-pipeline plan the traces show),
/// or a list of plans, one per run, the traces then being each run's in turn (as many as its plan
/// has ranks), measured together.
#[pyfunction]
#[allow(
    clippy::too_many_arguments,
    reason = "the Python signature: every keyword is an argument"
)]
#[pyo3(signature = (traces, plan=None, *, ranks=None, microbatches=None, stages_per_rank=None, plugin_dirs=Vec::new(), schedule_dirs=Vec::new(), **kwargs))]
fn calibrate(
    py: Python<'_>,
    traces: Vec<PathBuf>,
    plan: Option<Plans>,
    ranks: Option<Whole>,
    microbatches: Option<Whole>,
    stages_per_rank: Option<Whole>,
    plugin_dirs: Vec<PathBuf>,
    schedule_dirs: Vec<PathBuf>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    let params = params(ranks, microbatches, stages_per_rank, kwargs)?;
    let dirs = Dirs {
        plugins: &plugin_dirs,
        schedules: &schedule_dirs,
        texts: &[],
    };
    let request = CalibrateRequest {
        traces: traces.iter().map(|t| t.display().to_string()).collect(),
        plans: match plan {
            None => Vec::new(),
            Some(Plans::One(p)) => vec![p.display().to_string()],
            Some(Plans::Many(v)) => v.iter().map(|p| p.display().to_string()).collect(),
        },
        params,
    };
    with_session(py, &dirs, |s| {
        pipeweave_app::calibrate(s, &request).map(|c| c.toml)
    })
}

/// A plan set beside the profiler traces of a run of it, as `pipeweave diff --format json` prints
/// it: predicted and measured step time per rank, each action's start and duration, the waits the
/// plan did not predict and on whom, the slowest rank and action. The prediction uses the costs
/// measured in the traces themselves, or those of `costs_from=` (a file `calibrate` wrote).
#[pyfunction]
#[allow(
    clippy::too_many_arguments,
    reason = "the Python signature: every keyword is an argument"
)]
#[pyo3(signature = (plan, traces, *, ranks=None, microbatches=None, stages_per_rank=None, costs_from=None, plugin_dirs=Vec::new(), schedule_dirs=Vec::new(), **kwargs))]
fn diff<'py>(
    py: Python<'py>,
    plan: PathBuf,
    traces: Vec<PathBuf>,
    ranks: Option<Whole>,
    microbatches: Option<Whole>,
    stages_per_rank: Option<Whole>,
    costs_from: Option<PathBuf>,
    plugin_dirs: Vec<PathBuf>,
    schedule_dirs: Vec<PathBuf>,
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let params = params(ranks, microbatches, stages_per_rank, kwargs)?;
    let dirs = Dirs {
        plugins: &plugin_dirs,
        schedules: &schedule_dirs,
        texts: &[],
    };
    let request = DiffRequest {
        plan: plan.display().to_string(),
        params,
        traces: traces.iter().map(|t| t.display().to_string()).collect(),
        costs_from: costs_from.map(|c| c.display().to_string()),
    };
    let d = with_session(py, &dirs, |s| pipeweave_app::diff(s, &request))?;
    to_python(py, &d.diff)
}

/// The recommend search on `spec` (the built-in default when `None`), as
/// `pipeweave recommend --format json` prints it; `split="auto"` (the default) searches the
/// layers' split with every configuration, `"even"` keeps the even split; with `costs_from`, every
/// schedule priced with the costs measured in a profiled run, as
/// `pipeweave recommend --costs-from FILE --format json` prints it (`spec` and `costs_from` exclude
/// each other, and measured costs keep the profiled run's split).
#[pyfunction]
#[pyo3(signature = (spec=None, *, split="auto", costs_from=None, plugin_dirs=Vec::new(), schedule_dirs=Vec::new()))]
fn recommend<'py>(
    py: Python<'py>,
    spec: Option<String>,
    split: &str,
    costs_from: Option<String>,
    plugin_dirs: Vec<PathBuf>,
    schedule_dirs: Vec<PathBuf>,
) -> PyResult<Bound<'py, PyAny>> {
    let dirs = Dirs {
        plugins: &plugin_dirs,
        schedules: &schedule_dirs,
        texts: &[],
    };
    if let Some(costs) = costs_from {
        if split != "auto" {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "recommend takes split or costs_from, not both: measured costs keep the profiled run's split",
            ));
        }
        if spec.is_some() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "recommend takes spec or costs_from, not both: measured costs fix the shape a spec would search",
            ));
        }
        let r = with_session(py, &dirs, |s| pipeweave_app::recommend_measured(s, &costs))?;
        return to_python(py, &r);
    }
    let split = match split {
        "auto" => pipeweave_eval::Split::Auto,
        "even" => pipeweave_eval::Split::Even,
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "split: recommend searches every shape, so give \"auto\" or \"even\", not {other:?}"
            )));
        }
    };
    let r = with_session(py, &dirs, |s| {
        pipeweave_app::recommend(s, spec.as_deref(), &split)
    })?;
    to_python(py, &r)
}

/// The best order found for a placement (`"loop"`, `"v"`, `"bidirectional"`), a memory limit and
/// the costs (`spec=`, `costs=` or unit costs), as `pipeweave synthesize` finds it: the plan, the
/// report (`pipeweave synthesize --format json`) and the seconds the search took.
#[pyfunction]
#[allow(
    clippy::too_many_arguments,
    reason = "the Python signature: every keyword is an argument"
)]
#[pyo3(signature = (*, ranks=None, microbatches=None, placement="loop", stages_per_rank=None, spec=None, costs=None, costs_from=None, memory_limit=None, activations=None, library_memory=false, weight_split=true, pairs=true, time_limit=10.0, evaluations=None, exact_nodes=None, seed=None, strict_spec=false, keep_dp=false, global_batch=false, split=None, recompute=None, plugin_dirs=Vec::new(), schedule_dirs=Vec::new()))]
fn synthesize<'py>(
    py: Python<'py>,
    ranks: Option<Whole>,
    microbatches: Option<Whole>,
    placement: &str,
    stages_per_rank: Option<Whole>,
    spec: Option<String>,
    costs: Option<&Bound<'py, PyAny>>,
    costs_from: Option<String>,
    memory_limit: Option<f64>,
    activations: Option<Whole>,
    library_memory: bool,
    weight_split: bool,
    pairs: bool,
    time_limit: f64,
    evaluations: Option<Count>,
    exact_nodes: Option<Count>,
    seed: Option<Count>,
    strict_spec: bool,
    keep_dp: bool,
    global_batch: bool,
    split: Option<String>,
    recompute: Option<String>,
    plugin_dirs: Vec<PathBuf>,
    schedule_dirs: Vec<PathBuf>,
) -> PyResult<Bound<'py, PyAny>> {
    let costs = Costs::of(
        spec,
        costs,
        costs_from,
        (strict_spec, keep_dp, global_batch),
        (split.as_deref(), recompute.as_deref()),
    )?;
    let placement = placement.to_owned();
    let dirs = Dirs {
        plugins: &plugin_dirs,
        schedules: &schedule_dirs,
        texts: &[],
    };
    let found = with_session(py, &dirs, |s| {
        let placement = match placement.as_str() {
            "loop" => PlacementArg::Loop,
            "v" => PlacementArg::V,
            "bidirectional" => PlacementArg::Bidirectional,
            other => {
                return Err(Failure::usage(format!(
                    "placement must be \"loop\", \"v\" or \"bidirectional\", not {other:?}"
                )));
            }
        };
        if !(time_limit.is_finite() && (0.0..=86_400.0).contains(&time_limit)) {
            return Err(Failure::usage(format!(
                "time_limit={time_limit} is not a number of seconds from 0 to 24 hours"
            )));
        }
        let defaults = SynthesizeRequest::default();
        let request = SynthesizeRequest {
            ranks: whole(ranks, Flag::Ranks)?,
            microbatches: whole(microbatches, Flag::Microbatches)?,
            placement,
            stages_per_rank: whole(stages_per_rank, Flag::StagesPerRank)?.unwrap_or(1),
            memory_limit_gib: memory_limit,
            activations: whole(activations, Flag::Activations)?,
            library_memory,
            weight_split,
            pairs,
            time_limit: Duration::from_secs_f64(time_limit),
            evaluations: evaluations.map_or(defaults.evaluations, |c| c.0),
            exact_nodes: exact_nodes.map_or(defaults.exact_nodes, |c| c.0),
            seed: seed.map_or(defaults.seed, |c| c.0),
            costs: costs.arg()?,
        };
        let found = pipeweave_app::synthesize(s, &request)?;
        let built = pipeweave_source::Built {
            plan: found.plan,
            origins: None,
            name: format!("synthesized {}", found.report.placement),
            notes: Vec::new(),
        };
        let loaded = Loaded {
            arg: built.name.clone(),
            built,
            declared: None,
            plugin: None,
            kind: pipeweave_source::SourceKind::Synthesized,
        };
        Ok((loaded, found.report, found.elapsed))
    })?;
    let (loaded, report, elapsed) = found;
    let class = py.import("pipeweave._records")?.getattr("Synthesis")?;
    let plan = Bound::new(py, Plan { loaded })?;
    class.call1((plan, to_python(py, &report)?, elapsed.as_secs_f64()))
}

/// Adds the commands to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(render, m)?)?;
    m.add_function(wrap_pyfunction!(report, m)?)?;
    m.add_function(wrap_pyfunction!(recommend, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate, m)?)?;
    m.add_function(wrap_pyfunction!(diff, m)?)?;
    m.add_function(wrap_pyfunction!(synthesize, m)?)?;
    Ok(())
}
