//! `pipeweave.Plan`: a validated plan, read through the plan protocol `pipeweave.torch` runs
//! (`ranks`, `pipelines`, `placement`, `actions(rank)`, `steps(rank)`, ...), simulated, compared
//! and written in every format of `pipeweave export`.

use crate::context::{Context, with_host};
use crate::errors::{Kind, Raised};
use pipeweave_check::ValidPlan;
use pipeweave_eval::{Comparison, Simulation, SpecRule, evaluate_on_spec, finite, non_finite};
use pipeweave_plan::{Action, Dir, Op, Step, lower};
use pipeweave_sim::{Timeline, UniformCosts};
use pipeweave_source::{Built, Params};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// A plan that passed the validator, as `pipeweave.compile`, `pipeweave.load` and
/// `pipeweave.validate` return it.
#[pyclass(frozen, module = "pipeweave", name = "Plan")]
#[derive(Debug)]
pub struct Plan {
    pub built: Built,
    /// What the schedule requires of P and M, in its own words (empty for a plan file).
    pub requires: String,
}

/// `costs=`: `"F=1,B=2"` as `--costs` takes it, or a dict of the same keys.
#[derive(Debug, FromPyObject)]
pub enum CostsArg {
    Text(String),
    Map(Vec<(String, f64)>),
}

impl CostsArg {
    fn text(&self) -> String {
        match self {
            CostsArg::Text(t) => t.clone(),
            CostsArg::Map(pairs) => pairs
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(","),
        }
    }
}

/// Reads a dict of costs in its own order (a `dict` keeps insertion order).
fn costs_arg(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<CostsArg>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    if let Ok(dict) = value.cast::<PyDict>() {
        let pairs = dict
            .iter()
            .map(|(k, v)| Ok((k.extract::<String>()?, v.extract::<f64>()?)))
            .collect::<PyResult<Vec<_>>>()?;
        return Ok(Some(CostsArg::Map(pairs)));
    }
    Ok(Some(CostsArg::Text(value.extract()?)))
}

/// Parses JSON text the way the command line's readers of `--format json` do.
fn json_loads<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (text,))
}

fn kind_name(kind: pipeweave_plan::Kind) -> &'static str {
    match kind {
        pipeweave_plan::Kind::F => "F",
        pipeweave_plan::Kind::B => "B",
        pipeweave_plan::Kind::I => "I",
        pipeweave_plan::Kind::W => "W",
    }
}

fn dir_name(dir: Dir) -> &'static str {
    match dir {
        Dir::Fwd => "fwd",
        Dir::Bwd => "bwd",
    }
}

impl Plan {
    fn plan(&self) -> &ValidPlan {
        &self.built.plan
    }

    fn rank(&self, rank: i64) -> PyResult<u32> {
        u32::try_from(rank)
            .ok()
            .filter(|r| *r < self.plan().ranks())
            .ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "rank {rank} out of range: the plan has ranks 0..{}",
                    self.plan().ranks() - 1
                ))
            })
    }

    /// The simulation `pipeweave simulate` prints, on a spec (met by `rule`) or under uniform
    /// costs.
    fn simulation(
        &self,
        c: &mut Context,
        spec: Option<&str>,
        costs: Option<&CostsArg>,
        rule: SpecRule,
    ) -> Result<Simulation, Raised> {
        let (name, plan) = (&self.built.name, self.plan());
        if let (Some(_), Some(_)) = (spec, costs) {
            return Err(Raised::usage("give spec= or costs=, not both"));
        }
        if let Some(arg) = spec {
            let loaded = spec_of(c, arg)?;
            let (e, fitted) = evaluate_on_spec(name, &loaded.spec, plan, rule)
                .map_err(|d| Raised::diagnostics(d, &c.files, Kind::Spec))?;
            let mut sim = Simulation::new(name.as_str(), plan, &e.timeline, Some(&e.report));
            sim.fitted = Some(fitted.notes());
            finite(name, non_finite(&sim)).map_err(|m| Raised::message(m, Kind::Plan))?;
            return Ok(sim);
        }
        let timeline = self.uniform(costs)?;
        Ok(Simulation::new(name.as_str(), plan, &timeline, None))
    }

    /// The step simulated under uniform costs (unit costs by default), every figure finite.
    fn uniform(&self, costs: Option<&CostsArg>) -> Result<Timeline, Raised> {
        let (name, plan) = (&self.built.name, self.plan());
        let costs = match costs {
            Some(arg) => UniformCosts::parse(&arg.text(), "costs").map_err(Raised::usage)?,
            None => UniformCosts::default(),
        };
        let timeline = pipeweave_sim::simulate(plan, &costs)
            .map_err(|e| Raised::message(format!("{name}: {e}"), Kind::Plan))?;
        let sim = Simulation::new(name.as_str(), plan, &timeline, None);
        finite(name, non_finite(&sim)).map_err(|m| Raised::message(m, Kind::Plan))?;
        Ok(timeline)
    }
}

/// The rule by which a spec meets the plan (`--strict-spec`, `--keep-dp`, `--global-batch`); a
/// flag without a spec is refused in the command line's words.
fn spec_rule(
    spec: Option<&str>,
    strict: bool,
    keep_dp: bool,
    global_batch: bool,
) -> Result<SpecRule, Raised> {
    let flag = [
        (strict, "strict_spec"),
        (keep_dp, "keep_dp"),
        (global_batch, "global_batch"),
    ]
    .into_iter()
    .find_map(|(given, flag)| given.then_some(flag));
    match (flag, spec) {
        (Some(flag), None) => Err(Raised::usage(format!(
            "{flag} says how a spec meets the plan; give one with spec="
        ))),
        _ => Ok(SpecRule {
            strict,
            keep_dp,
            global_batch,
        }),
    }
}

/// The spec `arg` names (a TOML file, a shipped spec's name, `default`); its warnings become
/// Python warnings.
fn spec_of(c: &mut Context, arg: &str) -> Result<pipeweave_source::LoadedSpec, Raised> {
    let loaded = c
        .spec(arg)
        .map_err(|f| Raised::new(&f, &c.files, Kind::Spec))?;
    if !loaded.warnings.is_empty() {
        let text = pipeweave_diagnostics::Renderer::new(&c.files, 0).many(&loaded.warnings);
        crate::context::defer_warning(text.trim_end());
    }
    Ok(loaded)
}

#[pymethods]
impl Plan {
    /// What messages call the plan: a schedule's name (`plugin:NAME` for a plugin), a file's path.
    #[getter]
    fn name(&self) -> &str {
        &self.built.name
    }

    /// P, the number of ranks.
    #[getter]
    fn ranks(&self) -> u32 {
        self.plan().ranks()
    }

    /// K, the number of pipelines (each one copy of the model).
    #[getter]
    fn pipelines(&self) -> u32 {
        self.plan().model_copies()
    }

    /// The copies of the model the plan keeps: one per pipeline.
    #[getter]
    fn model_copies(&self) -> u32 {
        self.plan().model_copies()
    }

    /// S, the stages of every pipeline; stage (position) q of each computes model part q.
    #[getter]
    fn stages_per_pipeline(&self) -> u32 {
        self.plan().stages_per_pipeline()
    }

    /// M, the micro-batches of one step over all pipelines, numbered 0..M-1.
    #[getter]
    fn microbatches(&self) -> u32 {
        self.plan().num_microbatches()
    }

    /// Per pipeline, the rank of each stage: `placement[j][q]` hosts position q of pipeline j.
    #[getter]
    fn placement(&self) -> Vec<Vec<u32>> {
        self.plan()
            .pipelines()
            .iter()
            .map(|p| p.placement.clone())
            .collect()
    }

    /// Per pipeline, the global micro-batches it carries, ascending.
    #[getter]
    fn pipeline_microbatches(&self) -> Vec<Vec<u32>> {
        self.plan()
            .pipelines()
            .iter()
            .map(|p| p.microbatches.clone())
            .collect()
    }

    /// The rank's compute actions in order, as `pipeweave.Action`s (kind, stage, mb, pair).
    fn actions<'py>(&self, py: Python<'py>, rank: i64) -> PyResult<Bound<'py, PyList>> {
        let rank = self.rank(rank)?;
        let class = py.import("pipeweave._plan")?.getattr("Action")?;
        let op = |o: &Op| class.call1((kind_name(o.kind), o.stage, o.mb));
        let items = self
            .plan()
            .program(rank)
            .iter()
            .map(|a| match a {
                Action::One(o) => op(o),
                Action::Pair { f, b } => {
                    let pair = (op(f)?, op(b)?);
                    class.call1(("pair", py.None(), py.None(), pair))
                }
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// The rank's lowered program in order, as `pipeweave.Step`s: what a launcher executes (the
    /// JSON plan's `steps`).
    fn steps<'py>(&self, py: Python<'py>, rank: i64) -> PyResult<Bound<'py, PyList>> {
        let rank = self.rank(rank)?;
        let class = py.import("pipeweave._plan")?.getattr("Step")?;
        let lowered = lower(self.plan());
        let mut compute = 0usize;
        let none = || py.None();
        let mut items = Vec::new();
        for step in lowered.program(rank) {
            let transfer = |kind: &str, dir: Dir, stage: u32, mb: u32, peer: u32| {
                class.call1((kind, none(), dir_name(dir), stage, mb, peer))
            };
            items.push(match step {
                Step::Compute(_) => {
                    compute += 1;
                    class.call1(("compute", compute - 1))?
                }
                Step::Recv {
                    dir,
                    stage,
                    mb,
                    peer,
                } => transfer("recv", dir, stage, mb, peer)?,
                Step::Send {
                    dir,
                    stage,
                    mb,
                    peer,
                } => transfer("send", dir, stage, mb, peer)?,
                Step::WaitSend {
                    dir,
                    stage,
                    mb,
                    peer,
                } => transfer("wait_send", dir, stage, mb, peer)?,
                Step::ReduceGrad { stage } => {
                    class.call1(("reduce_grad", none(), none(), stage))?
                }
                Step::WaitReduceGrad { stage } => {
                    class.call1(("wait_reduce_grad", none(), none(), stage))?
                }
            });
        }
        PyList::new(py, items)
    }

    /// One simulated step, as `pipeweave simulate --format json` prints it: on a cluster spec
    /// (`spec`: a TOML file, a shipped spec's name or `"default"`), or under uniform costs
    /// (`costs`: `"F=1,B=2"` or `{"F": 1, "B": 2}`; unit costs by default). A spec of another
    /// shape is fitted to the plan, as the command line does (the result's `"fitted"` says how);
    /// `strict_spec`, `keep_dp` and `global_batch` are `--strict-spec`, `--keep-dp` and
    /// `--global-batch`.
    #[pyo3(signature = (spec=None, costs=None, *, strict_spec=false, keep_dp=false, global_batch=false))]
    fn simulate<'py>(
        &self,
        py: Python<'py>,
        spec: Option<String>,
        costs: Option<&Bound<'py, PyAny>>,
        strict_spec: bool,
        keep_dp: bool,
        global_batch: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let costs = costs_arg(costs)?;
        let rule = spec_rule(spec.as_deref(), strict_spec, keep_dp, global_batch)?;
        let text = with_host(py, |c| {
            let sim = self.simulation(c, spec.as_deref(), costs.as_ref(), rule)?;
            Ok(pipeweave_report::simulation_json(&sim))
        })?;
        json_loads(py, &text)
    }

    /// This plan and `schedules` (names, `.weave` files, plan files) built at its P and M and
    /// compared on a spec (the built-in default unless `spec` names one), as the rows of
    /// `pipeweave compare --format json`. A schedule that cannot be built keeps its row with the
    /// reason (`"error"`).
    #[pyo3(signature = (schedules, spec=None, units=false, plugin_dirs=Vec::new(), schedule_dirs=Vec::new()))]
    fn compare<'py>(
        &self,
        py: Python<'py>,
        schedules: Vec<String>,
        spec: Option<String>,
        units: bool,
        plugin_dirs: Vec<std::path::PathBuf>,
        schedule_dirs: Vec<std::path::PathBuf>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let text = with_host(py, |c| {
            c.dirs(&plugin_dirs, &schedule_dirs);
            let loaded = spec_of(c, spec.as_deref().unwrap_or("default"))?;
            let plan = self.plan();
            let (p, m) = (plan.ranks(), plan.num_microbatches());
            let mut cmp = Comparison::new(&loaded.spec, loaded.default, p, m, units);
            let requires = self.requires.as_str();
            cmp.push(&loaded.spec, self.built.name.as_str(), requires, Ok(plan));
            for name in &schedules {
                let source = c
                    .resolve(name)
                    .map_err(|f| Raised::new(&f, &c.files, Kind::Plan))?;
                let params = Params {
                    ranks: Some(p).filter(|_| !source.is_plan_file()),
                    microbatches: Some(m).filter(|_| !source.is_plan_file()),
                    ..Params::default()
                };
                let requires = source
                    .declared()
                    .map(|d| d.requires.clone())
                    .unwrap_or_default();
                let built = c.build(&source, &params);
                let plan = built
                    .as_ref()
                    .map(|b| &b.plan)
                    .map_err(|f| source.failure_reason(f, &c.files));
                cmp.push(&loaded.spec, name.as_str(), requires, plan);
            }
            finite("compare", non_finite(&cmp)).map_err(|m| Raised::message(m, Kind::Plan))?;
            Ok(pipeweave_report::compare_json(&cmp))
        })?;
        json_loads(py, &text)?.get_item("rows")
    }

    /// The plan as a PyTorch CSV, as `pipeweave export --to pytorch` (`format="pytorch"`, the
    /// compute-only CSV torchtitan loads) or `--to pytorch-comms` (the lowered CSV) writes it.
    #[pyo3(signature = (format="pytorch"))]
    fn to_csv(&self, py: Python<'_>, format: &str) -> PyResult<String> {
        let written = match format {
            "pytorch" => py.detach(|| pipeweave_export::write_pytorch(self.plan())),
            "pytorch-comms" => py.detach(|| pipeweave_export::write_pytorch_comms(self.plan())),
            other => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "format must be \"pytorch\" or \"pytorch-comms\", not {other:?}"
                )));
            }
        };
        written.map_err(|d| Raised::diagnostics(vec![d], &Default::default(), Kind::Plan).into())
    }

    /// The versioned JSON plan, as `pipeweave export --to json` writes it (with the simulated
    /// timeline when `spec` or `costs` is given, as `--spec` and `--costs` add it; the spec met
    /// by the rule `simulate` takes).
    #[pyo3(signature = (spec=None, costs=None, *, strict_spec=false, keep_dp=false, global_batch=false))]
    fn to_json(
        &self,
        py: Python<'_>,
        spec: Option<String>,
        costs: Option<&Bound<'_, PyAny>>,
        strict_spec: bool,
        keep_dp: bool,
        global_batch: bool,
    ) -> PyResult<String> {
        let costs = costs_arg(costs)?;
        let rule = spec_rule(spec.as_deref(), strict_spec, keep_dp, global_batch)?;
        with_host(py, |c| {
            let plan = self.plan();
            let timeline = match (&spec, &costs) {
                (Some(_), Some(_)) => return Err(Raised::usage("give spec= or costs=, not both")),
                (Some(arg), None) => {
                    let loaded = spec_of(c, arg)?;
                    let (e, _) = evaluate_on_spec(&self.built.name, &loaded.spec, plan, rule)
                        .map_err(|d| Raised::diagnostics(d, &c.files, Kind::Spec))?;
                    Some(e.timeline)
                }
                (None, Some(_)) => Some(self.uniform(costs.as_ref())?),
                (None, None) => None,
            };
            let timing = timeline.as_ref().map(|t| &t.timing);
            pipeweave_export::write_json(plan, timing)
                .map_err(|d| Raised::diagnostics(vec![d], &c.files, Kind::Plan))
        })
    }

    /// The plan in the actions text format (for one pipeline, PyTorch's compute-only CSV), as
    /// `pipeweave export --to actions` writes it.
    fn to_actions(&self, py: Python<'_>) -> String {
        py.detach(|| pipeweave_export::write_actions(self.plan()))
    }

    fn __repr__(&self) -> String {
        let p = self.plan();
        format!(
            "Plan({:?}, ranks={}, pipelines={}, stages_per_pipeline={}, microbatches={})",
            self.built.name,
            p.ranks(),
            p.model_copies(),
            p.stages_per_pipeline(),
            p.num_microbatches()
        )
    }

    /// Two plans are equal when they run the same actions on the same placement.
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Plan>()
            .is_ok_and(|o| **o.get().plan() == **self.plan())
    }
}
