//! Where the durations of a simulation come from: unit costs, or a cluster spec adapted to each
//! plan's shape.

use crate::fit::fit_spec;
use crate::step::evaluate;
use pipeweave_check::ValidPlan;
use pipeweave_sim::{CostModel, Timeline, UnitCosts};
use pipeweave_spec::Spec;

/// The unit of the times of a timeline: the simulator's abstract units or seconds (from a spec).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    /// Abstract units (F = I = W = 1 with unit costs).
    Units,
    /// Seconds.
    Seconds,
}

impl TimeUnit {
    /// Whether the times are abstract units.
    pub fn is_units(&self) -> bool {
        *self == TimeUnit::Units
    }
}

/// Where durations come from.
#[derive(Debug, Clone)]
pub enum Costing {
    /// F = I = W = 1, B = 2, F&B pair = F + B, no transfer time.
    Unit,
    /// A cluster spec, adapted to each plan's shape ([`fit_spec`]); times in seconds.
    Spec {
        /// The spec as given.
        spec: Box<Spec>,
        /// Whether it is the built-in default.
        default: bool,
    },
}

/// One plan simulated under a [`Costing`].
pub struct Run {
    /// The simulated step.
    pub timeline: Timeline,
    /// The step time: the makespan with unit costs; on a spec the pipeline, then the
    /// data-parallel synchronisation and the optimizer.
    pub step_time: f64,
    /// The costs the step was simulated with (for transfer times).
    pub costs: Box<dyn CostModel>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("timeline", &self.timeline)
            .finish_non_exhaustive()
    }
}

impl Costing {
    /// The unit of the times it gives.
    pub fn unit(&self) -> TimeUnit {
        match self {
            Costing::Unit => TimeUnit::Units,
            Costing::Spec { .. } => TimeUnit::Seconds,
        }
    }

    /// P and M when the command line leaves them out: the spec's.
    pub fn default_shape(&self) -> (Option<u32>, Option<u32>) {
        match self {
            Costing::Unit => (None, None),
            Costing::Spec { spec, .. } => {
                (Some(spec.parallelism.pp), Some(spec.training.microbatches))
            }
        }
    }

    /// Simulates `plan` (validated); on a spec, the spec adapted to the plan's shape. Fails, with
    /// the reason in words, when the spec cannot take the plan.
    pub fn run(&self, plan: &ValidPlan) -> Result<Run, String> {
        match self {
            Costing::Unit => {
                let timeline =
                    pipeweave_sim::simulate(plan, &UnitCosts).map_err(|e| e.to_string())?;
                Ok(Run {
                    step_time: timeline.timing.makespan,
                    timeline,
                    costs: Box::new(UnitCosts),
                })
            }
            Costing::Spec { spec, .. } => {
                let (fitted, _) = fit_spec(spec, plan)?;
                let e = evaluate(&fitted, plan).map_err(|d| crate::step::messages(&d))?;
                Ok(Run {
                    step_time: e.report.step_time_s,
                    timeline: e.timeline,
                    costs: Box::new(e.costs),
                })
            }
        }
    }
}
