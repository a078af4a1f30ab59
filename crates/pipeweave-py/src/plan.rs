//! `pipeweave.Plan`: a validated plan, read through the plan protocol `pipeweave.torch` runs
//! (`ranks`, `pipelines`, `placement`, `actions(rank)`, `steps(rank)`, ...), simulated, compared
//! and written in every format of `pipeweave export`.

use crate::args::{Costs, costs_text, rule, to_python};
use crate::context::{Dirs, with_session};
use pipeweave_app::{CompareRequest, ExportFormat, Loaded};
use pipeweave_check::ValidPlan;
use pipeweave_plan::{Action, Dir, Op, Step, lower};
use pipeweave_sim::UniformCosts;
use pipeweave_source::{Failure, Params};
use pyo3::prelude::*;
use pyo3::types::{PyAny, PyList};
use std::path::PathBuf;

/// A plan that passed the validator, as `pipeweave.compile`, `pipeweave.load` and
/// `pipeweave.validate` return it, with what its source declares (so that it compares as the
/// command line compares the schedule it came from).
#[pyclass(frozen, module = "pipeweave", name = "Plan")]
#[derive(Debug)]
pub struct Plan {
    pub loaded: Loaded,
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
        &self.loaded.built.plan
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

    /// The plan in `format`, as `pipeweave export` writes it, under `costs`.
    fn export(&self, py: Python<'_>, costs: &Costs, format: ExportFormat) -> PyResult<String> {
        let loaded = self.loaded.clone();
        with_session(py, &Dirs::default(), |s| {
            pipeweave_app::export_loaded(s, loaded, &costs.arg()?, format)?.text()
        })
    }
}

#[pymethods]
impl Plan {
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

    /// Whether the plan is an evaluation step (forwards only), as `--forward-only` or a JSON plan's
    /// `"step": "evaluation"` made it.
    #[getter]
    fn forward_only(&self) -> bool {
        self.plan().is_forward_only()
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
    #[pyo3(signature = (spec=None, costs=None, *, costs_from=None, strict_spec=false, keep_dp=false, global_batch=false, split=None, recompute=None))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments
    fn simulate<'py>(
        &self,
        py: Python<'py>,
        spec: Option<String>,
        costs: Option<&Bound<'py, PyAny>>,
        costs_from: Option<String>,
        strict_spec: bool,
        keep_dp: bool,
        global_batch: bool,
        split: Option<String>,
        recompute: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let costs = Costs::of(
            spec,
            costs,
            costs_from,
            (strict_spec, keep_dp, global_batch),
            (split.as_deref(), recompute.as_deref()),
        )?;
        let loaded = self.loaded.clone();
        let simulation = with_session(py, &Dirs::default(), |s| {
            Ok(pipeweave_app::simulate_loaded(s, loaded, &costs.arg()?)?.simulation)
        })?;
        to_python(py, &simulation)
    }

    /// This plan and `schedules` (names, `.weave` files, plan files) built at its P and M and
    /// compared on a spec (the built-in default unless `spec` names one), as the rows of
    /// `pipeweave compare --format json`. A schedule that cannot be built keeps its row with the
    /// reason (`"error"`); a schedule and its twin plugin share a row when their plans are equal.
    #[allow(
        clippy::too_many_arguments,
        reason = "the Python signature: every keyword is an argument"
    )]
    #[pyo3(signature = (schedules, spec=None, units=false, *, costs=None, strict_spec=false, keep_dp=false, global_batch=false, split=None, recompute=None, plugin_dirs=Vec::new(), schedule_dirs=Vec::new()))]
    fn compare<'py>(
        &self,
        py: Python<'py>,
        schedules: Vec<String>,
        spec: Option<String>,
        units: bool,
        costs: Option<&Bound<'py, PyAny>>,
        strict_spec: bool,
        keep_dp: bool,
        global_batch: bool,
        split: Option<String>,
        recompute: Option<String>,
        plugin_dirs: Vec<PathBuf>,
        schedule_dirs: Vec<PathBuf>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let costs = costs_text(costs)?;
        let plan = self.plan();
        let spec_rule = rule(
            strict_spec,
            keep_dp,
            global_batch,
            (split.as_deref(), recompute.as_deref()),
        )?;
        let request_of = |units: Option<UniformCosts>| CompareRequest {
            schedules: schedules.clone(),
            params: Params {
                ranks: Some(plan.ranks()),
                microbatches: Some(plan.num_microbatches()),
                ..Params::default()
            },
            spec: spec.clone(),
            rule: spec_rule.clone(),
            units,
            costs_from: None,
        };
        let dirs = Dirs {
            plugins: &plugin_dirs,
            schedules: &schedule_dirs,
            texts: &[],
        };
        let loaded = self.loaded.clone();
        let compared = with_session(py, &dirs, |s| {
            let units = match costs.as_deref() {
                Some(text) => Some(UniformCosts::parse(text, "costs").map_err(Failure::usage)?),
                None => units.then(UniformCosts::default),
            };
            pipeweave_app::compare(s, &request_of(units), Some(loaded))
        })?;
        to_python(py, &compared.value.rows)
    }

    /// The plan as a PyTorch CSV, as `pipeweave export --to pytorch` (`format="pytorch"`, the
    /// compute-only CSV torchtitan loads) or `--to pytorch-comms` (the lowered CSV) writes it.
    #[pyo3(signature = (format="pytorch"))]
    fn to_csv(&self, py: Python<'_>, format: &str) -> PyResult<String> {
        let format = match format {
            "pytorch" => ExportFormat::Pytorch,
            "pytorch-comms" => ExportFormat::PytorchComms,
            other => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "format must be \"pytorch\" or \"pytorch-comms\", not {other:?}"
                )));
            }
        };
        self.export(py, &Costs::default(), format)
    }

    /// The versioned JSON plan, as `pipeweave export --to json` writes it (with the simulated
    /// timeline when `spec` or `costs` is given, as `--spec` and `--costs` add it; the spec met
    /// by the rule `simulate` takes).
    #[pyo3(signature = (spec=None, costs=None, *, costs_from=None, strict_spec=false, keep_dp=false, global_batch=false, split=None, recompute=None))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments
    fn to_json(
        &self,
        py: Python<'_>,
        spec: Option<String>,
        costs: Option<&Bound<'_, PyAny>>,
        costs_from: Option<String>,
        strict_spec: bool,
        keep_dp: bool,
        global_batch: bool,
        split: Option<String>,
        recompute: Option<String>,
    ) -> PyResult<String> {
        let costs = Costs::of(
            spec,
            costs,
            costs_from,
            (strict_spec, keep_dp, global_batch),
            (split.as_deref(), recompute.as_deref()),
        )?;
        self.export(py, &costs, ExportFormat::Json)
    }

    /// A Chrome / Perfetto trace of the simulated step, as `pipeweave export --to chrome-trace`
    /// writes it (on `spec`, or under `costs`; unit costs by default, 1 unit = 1 ms).
    #[pyo3(signature = (spec=None, costs=None, *, costs_from=None, strict_spec=false, keep_dp=false, global_batch=false, split=None, recompute=None))]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments
    fn to_trace(
        &self,
        py: Python<'_>,
        spec: Option<String>,
        costs: Option<&Bound<'_, PyAny>>,
        costs_from: Option<String>,
        strict_spec: bool,
        keep_dp: bool,
        global_batch: bool,
        split: Option<String>,
        recompute: Option<String>,
    ) -> PyResult<String> {
        let costs = Costs::of(
            spec,
            costs,
            costs_from,
            (strict_spec, keep_dp, global_batch),
            (split.as_deref(), recompute.as_deref()),
        )?;
        self.export(py, &costs, ExportFormat::ChromeTrace)
    }

    /// The plan in the actions text format (for one pipeline, PyTorch's compute-only CSV), as
    /// `pipeweave export --to actions` writes it.
    fn to_actions(&self, py: Python<'_>) -> PyResult<String> {
        self.export(py, &Costs::default(), ExportFormat::Actions)
    }

    /// What messages call the plan: a schedule's name (`plugin:NAME` for a plugin), a file's path.
    #[getter]
    fn name(&self) -> &str {
        &self.loaded.built.name
    }

    /// What the schedule requires of P and M, in its own words (empty for a plan file).
    #[getter]
    fn requires(&self) -> &str {
        self.loaded.requires()
    }

    fn __repr__(&self) -> String {
        let p = self.plan();
        format!(
            "Plan({:?}, ranks={}, pipelines={}, stages_per_pipeline={}, microbatches={})",
            self.loaded.built.name,
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
