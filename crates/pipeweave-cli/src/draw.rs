//! `pipeweave render`: simulated timelines of several schedules as one SVG, and what `sweep` and
//! `report` share with it: several schedules under the same parameters, each loaded, validated and
//! simulated under unit costs or on a spec (adapted to each plan's shape, as `compare` does).

use crate::compare::{Declared, declared};
use crate::render::Sources;
use crate::specs::{self, LoadedSpec};
use crate::{Failure, PlanArgs, ScheduleParams};
use clap::Args;
use pipeweave_plan::Plan;
use pipeweave_report::{TimeUnit, TimelineChart, fit_spec, timelines_svg, transfers};
use pipeweave_sim::{CostModel, Timeline, UnitCosts};
use std::path::{Path, PathBuf};

/// Several schedules built with the same parameters.
#[derive(Debug, Args)]
pub struct ManyArgs {
    /// Plan files, library schedules, `.weave` files or plugins, drawn in this order
    #[arg(value_name = "SCHEDULE", required = true)]
    pub schedules: Vec<String>,
    /// Durations from a cluster spec (a TOML file, a shipped spec's name, or `default`), times in
    /// seconds; without it, unit costs
    #[arg(long, value_name = "FILE|NAME")]
    pub spec: Option<String>,
    #[command(flatten)]
    pub params: ScheduleParams,
}

/// One SCHEDULE argument with what it declares (`None` for a plan file).
#[derive(Debug, Clone)]
pub struct Schedule {
    pub name: String,
    declared: Option<Declared>,
}

impl Schedule {
    /// Whether this is a plan file, whose ranks and micro-batches are fixed.
    pub fn is_file(&self) -> bool {
        self.declared.is_none() && Path::new(&self.name).exists()
    }
}

impl ManyArgs {
    /// The schedules with their declared parameters; `--set` must name a parameter of at least
    /// one of them (as in `compare`).
    pub fn schedules(&self) -> Result<Vec<Schedule>, Failure> {
        let out: Vec<Schedule> = self
            .schedules
            .iter()
            .map(|s| Schedule {
                name: s.clone(),
                declared: declared(s, &self.params.plugin_dirs),
            })
            .collect();
        self.params
            .check_set(out.iter().filter_map(|s| s.declared.as_ref()))?;
        Ok(out)
    }

    /// The arguments of one schedule: P and M from `ranks`/`mbs` (a sweep's value), else the
    /// command line, else the costing's defaults; `-v` and `--set` only where declared.
    pub fn plan_args(
        &self,
        schedule: &Schedule,
        costing: &Costing,
        ranks: Option<u32>,
        mbs: Option<u32>,
    ) -> PlanArgs {
        let (default_p, default_m) = costing.defaults();
        self.params.for_schedule(
            &schedule.name,
            schedule.declared.as_ref(),
            ranks.or(self.params.ranks).or(default_p),
            mbs.or(self.params.microbatches).or(default_m),
        )
    }
}

/// One schedule, simulated.
pub struct Run {
    pub name: String,
    pub plan: Plan,
    pub timeline: Timeline,
    costs: Box<dyn CostModel>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Run {
    pub fn costs(&self) -> &dyn CostModel {
        self.costs.as_ref()
    }
}

/// Where durations come from.
#[derive(Debug)]
pub enum Costing {
    /// F = I = W = 1, B = 2, no transfer time.
    Unit,
    /// A cluster spec, adapted to each plan's shape ([`fit_spec`]); times in seconds.
    Spec(Box<LoadedSpec>),
}

impl Costing {
    /// Unit costs, or the spec `--spec` names.
    pub fn from_arg(spec: Option<&str>, sources: &mut Sources) -> Result<Costing, Failure> {
        Ok(match spec {
            None => Costing::Unit,
            Some(arg) => Costing::Spec(Box::new(specs::load(arg, sources)?)),
        })
    }

    pub fn unit(&self) -> TimeUnit {
        match self {
            Costing::Unit => TimeUnit::Units,
            Costing::Spec(_) => TimeUnit::Seconds,
        }
    }

    /// P and M when the command line leaves them out: the spec's.
    fn defaults(&self) -> (Option<u32>, Option<u32>) {
        match self {
            Costing::Unit => (None, None),
            Costing::Spec(s) => (
                Some(s.spec.parallelism.pp),
                Some(s.spec.training.microbatches),
            ),
        }
    }

    /// A sentence saying where the durations come from.
    pub fn describe(&self) -> String {
        match self {
            Costing::Unit => {
                "unit costs: F = I = W = 1, B = 2, F&B pair = F + B, no transfer time".to_owned()
            }
            Costing::Spec(s) => format!(
                "spec {}{}: {} × {}; times in seconds, the spec adapted to each schedule's shape",
                s.spec.name,
                if s.default { " (built-in default)" } else { "" },
                s.spec.cluster.gpus(),
                s.spec.cluster.gpu
            ),
        }
    }
}

/// Loads, validates and simulates one schedule.
pub fn run(args: &PlanArgs, costing: &Costing, sources: &mut Sources) -> Result<Run, Failure> {
    let loaded = crate::load_valid(args, sources)?;
    let (costs, timeline): (Box<dyn CostModel>, Timeline) = match costing {
        Costing::Unit => (Box::new(UnitCosts), crate::simulate(&loaded, &UnitCosts)?),
        Costing::Spec(spec) => {
            let (fitted, _) = fit_spec(&spec.spec, &loaded.plan)
                .map_err(|r| Failure::Invalid(format!("error: {}: {r}\n", args.plan)))?;
            let (costs, timeline, _) =
                pipeweave_spec::evaluate(&fitted, &loaded.plan).map_err(Failure::Diagnostics)?;
            (Box::new(costs), timeline)
        }
    };
    // Named as the user wrote it (`dualpipe`, not the loader's `plugin:dualpipe`), so figures and
    // tables match the command line.
    Ok(Run {
        name: args.plan.clone(),
        plan: loaded.plan,
        timeline,
        costs,
    })
}

/// Runs every schedule of `many`; the first failure stops (its diagnostics name the schedule).
pub fn run_all(
    many: &ManyArgs,
    costing: &Costing,
    sources: &mut Sources,
) -> Result<Vec<Run>, Failure> {
    many.schedules()?
        .iter()
        .map(|s| run(&many.plan_args(s, costing, None, None), costing, sources))
        .collect()
}

/// The SVG of the runs' timelines, stacked on one time scale.
pub fn timelines(runs: &[Run], unit: TimeUnit, comms: bool, id: &str) -> String {
    let charts: Vec<TimelineChart> = runs
        .iter()
        .map(|r| TimelineChart {
            title: format!("{} ({})", r.name, crate::describe(&r.plan)),
            plan: &r.plan,
            timeline: &r.timeline,
            transfers: comms.then(|| transfers(&r.plan, &r.timeline, r.costs())),
        })
        .collect();
    timelines_svg(&charts, unit, id)
}

/// `pipeweave render`: writes the SVG (to standard output for `-`) and returns a summary line per
/// schedule.
pub fn render(
    many: &ManyArgs,
    svg: &PathBuf,
    comms: bool,
    sources: &mut Sources,
) -> Result<String, Failure> {
    let costing = &Costing::from_arg(many.spec.as_deref(), sources)?;
    let runs = run_all(many, costing, sources)?;
    let text = timelines(&runs, costing.unit(), comms, "timelines");
    if svg.as_os_str() == "-" {
        crate::emit(None, &text)?;
        return Ok(String::new());
    }
    crate::emit(Some(svg), &text)?;
    let mut summary = String::new();
    for r in &runs {
        summary.push_str(&format!(
            "{}: makespan {}, bubble fraction {:.2}%\n",
            r.name,
            costing.unit().format(r.timeline.timing.makespan),
            r.timeline.bubble_fraction * 100.0
        ));
    }
    summary.push_str(&format!("wrote {}\n", svg.display()));
    Ok(summary)
}
