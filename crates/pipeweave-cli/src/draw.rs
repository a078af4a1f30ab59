//! `pipeweave render`: simulated timelines of several schedules as one SVG, and what `sweep` and
//! `report` share with it: several schedules under the same parameters, each loaded, validated and
//! simulated under unit costs or a spec.

use crate::render::Sources;
use crate::{Failure, PlanArgs};
use clap::Args;
use pipeweave_plan::Plan;
use pipeweave_report::{TimeUnit, TimelineChart, timelines_svg, transfers};
use pipeweave_sim::{CostModel, Timeline, UnitCosts};
use std::path::PathBuf;

/// Several schedules built with the same parameters.
#[derive(Debug, Args)]
pub struct ManyArgs {
    /// Plan files, library schedules, `.weave` files or plugins, drawn in this order
    #[arg(value_name = "SCHEDULE", required = true)]
    pub schedules: Vec<String>,
    /// Pipelines in an actions file
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub pipelines: u32,
    /// Ranks P (schedules only)
    #[arg(short = 'p', long = "ranks", value_name = "P")]
    pub ranks: Option<u32>,
    /// Micro-batches M (schedules only)
    #[arg(short = 'm', long = "microbatches", value_name = "M")]
    pub microbatches: Option<u32>,
    /// Stages per rank v (schedules that take it)
    #[arg(short = 'v', long = "stages-per-rank", value_name = "V")]
    pub stages_per_rank: Option<u32>,
    /// Any other schedule parameter, given to every schedule (repeatable)
    #[arg(long = "set", value_name = "NAME=VALUE")]
    pub set: Vec<String>,
    /// A directory to search for plugins first (repeatable)
    #[arg(long = "plugin-dir", value_name = "DIR")]
    pub plugin_dirs: Vec<PathBuf>,
}

impl ManyArgs {
    /// The arguments of one schedule, with P and M overridden where given.
    pub fn plan_args(&self, schedule: &str, ranks: Option<u32>, mbs: Option<u32>) -> PlanArgs {
        PlanArgs {
            plan: schedule.to_owned(),
            pipelines: self.pipelines,
            ranks: ranks.or(self.ranks),
            microbatches: mbs.or(self.microbatches),
            stages_per_rank: self.stages_per_rank,
            set: self.set.clone(),
            plugin_dirs: self.plugin_dirs.clone(),
        }
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
}

impl Costing {
    pub fn unit(&self) -> TimeUnit {
        match self {
            Costing::Unit => TimeUnit::Units,
        }
    }

    /// A sentence saying where the durations come from.
    pub fn describe(&self) -> String {
        match self {
            Costing::Unit => {
                "unit costs: F = I = W = 1, B = 2, F&B pair = F + B, no transfer time".to_owned()
            }
        }
    }
}

/// Turns a failure into one line of plain words, for a table cell or a list of rejected schedules.
pub fn reason(failure: &Failure) -> String {
    let text = match failure {
        Failure::Invalid(t) | Failure::Usage(t) => t.clone(),
        Failure::Diagnostics(diags) => {
            let errors: Vec<&str> = diags
                .iter()
                .filter(|d| d.is_error())
                .map(|d| d.message.as_str())
                .collect();
            match errors.as_slice() {
                [] => "invalid input".to_owned(),
                [one] => (*one).to_owned(),
                [first, rest @ ..] => format!("{first} (and {} more problems)", rest.len()),
            }
        }
    };
    let line = text.lines().next().unwrap_or_default().trim();
    line.strip_prefix("error: ").unwrap_or(line).to_owned()
}

/// Loads, validates and simulates one schedule.
pub fn run(args: &PlanArgs, costing: &Costing, sources: &mut Sources) -> Result<Run, Failure> {
    let loaded = crate::load_valid(args, sources)?;
    let costs: Box<dyn CostModel> = match costing {
        Costing::Unit => Box::new(UnitCosts),
    };
    let timeline = crate::simulate(&loaded, costs.as_ref())?;
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
    many.schedules
        .iter()
        .map(|s| run(&many.plan_args(s, None, None), costing, sources))
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
    costing: &Costing,
    svg: &PathBuf,
    comms: bool,
    sources: &mut Sources,
) -> Result<String, Failure> {
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
            costing.unit().format(r.timeline.makespan),
            r.timeline.bubble_fraction * 100.0
        ));
    }
    summary.push_str(&format!("wrote {}\n", svg.display()));
    Ok(summary)
}
