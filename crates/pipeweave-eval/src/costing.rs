//! Where the durations of a simulation come from: unit costs, uniform costs of the command line,
//! a cluster spec fitted to each plan's shape by the one rule of [`crate::fit`], or the costs a
//! profiled run measured (`costs.toml`).

use crate::fit::{SpecRule, fit, plan_shape};
use crate::step::{StepReport, evaluate};
use pipeweave_calibrate::{Calibration, MeasuredCosts};
use pipeweave_check::ValidPlan;
use pipeweave_diagnostics::Diagnostic;
use pipeweave_sim::{CostModel, Timeline, UniformCosts, UnitCosts};
use pipeweave_spec::Spec;

/// The unit of the times of a timeline: the simulator's abstract units or seconds (from a spec).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
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
    /// The same durations for every stage, as `--costs` gives them; times in units.
    Uniform(UniformCosts),
    /// A cluster spec, fitted to each plan's shape ([`fit`]); times in seconds.
    Spec {
        /// The spec as given.
        spec: Box<Spec>,
        /// Whether it is the built-in default.
        default: bool,
        /// How it meets a plan of another shape.
        rule: SpecRule,
    },
    /// Costs measured in a profiled run (`--costs-from costs.toml`), laid onto each plan by
    /// [`MeasuredCosts::for_plan`]; times in seconds.
    Measured {
        /// The costs file read.
        costs: Box<Calibration>,
        /// Its path, as given.
        file: String,
    },
}

/// One plan simulated under a [`Costing`].
pub struct Run {
    /// The simulated step.
    pub timeline: Timeline,
    /// The step time: the makespan with unit costs; on a spec the pipeline, then the
    /// data-parallel synchronisation and the optimizer; on measured costs the latest end of a
    /// rank's actions and its all-reduce of the gradients of the parts it shares with other ranks
    /// (from the link probe), and the run's time before the first action and after the last
    /// (`overhead.head`, `overhead.tail`) ([`MeasuredCosts::step_time`]).
    pub step_time: f64,
    /// The costs the step was simulated with (for transfer times).
    pub costs: Box<dyn CostModel>,
    /// On a spec, how it was fitted to the plan, one sentence per change.
    pub fitted: Vec<String>,
    /// On measured costs, what the plan needs that the run did not measure and how it was
    /// derived, one sentence each.
    pub derived: Vec<String>,
    /// On a spec, the step's figures.
    pub report: Option<StepReport>,
    /// On measured costs that recorded saved bytes, each rank's predicted peak of
    /// saved-activation bytes.
    pub saved_peaks: Option<Vec<u64>>,
    /// Whether the costs were measured in a profiled run (`--costs-from`).
    pub measured: bool,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("timeline", &self.timeline)
            .finish_non_exhaustive()
    }
}

/// Each rank's predicted peak of saved-activation bytes, in words (the first 16 ranks).
fn peaks_note(peaks: &[u64]) -> String {
    let shown: Vec<String> = peaks
        .iter()
        .take(16)
        .map(|&b| format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64))
        .collect();
    let more = peaks.len().saturating_sub(16);
    format!(
        "predicted peak saved-activation bytes per rank, from the bytes measured per stage and micro-batch: {}{}",
        shown.join(", "),
        if more > 0 {
            format!(" and {more} more ranks")
        } else {
            String::new()
        }
    )
}

impl Costing {
    /// The unit of the times it gives.
    pub fn unit(&self) -> TimeUnit {
        match self {
            Costing::Unit | Costing::Uniform(_) => TimeUnit::Units,
            Costing::Spec { .. } | Costing::Measured { .. } => TimeUnit::Seconds,
        }
    }

    /// P and M for a plan: those given; on a spec, the others by its rule ([`plan_shape`]).
    /// Fails when no whole number of micro-batches keeps the spec's global batch.
    pub fn shape(
        &self,
        ranks: Option<u32>,
        microbatches: Option<u32>,
    ) -> Result<(Option<u32>, Option<u32>), Diagnostic> {
        let Costing::Spec { spec, rule, .. } = self else {
            return Ok((ranks, microbatches));
        };
        let (p, m) = plan_shape(spec, rule, ranks, microbatches)?;
        Ok((Some(p), Some(m)))
    }

    /// Simulates `plan` (validated); on a spec, the spec fitted to the plan's shape by its rule.
    /// Fails, with the reasons, when the spec cannot take the plan.
    pub fn run(&self, plan: &ValidPlan) -> Result<Run, Vec<Diagnostic>> {
        let simulated = |costs: Box<dyn CostModel>| {
            let timeline = pipeweave_sim::simulate(plan, costs.as_ref())
                .map_err(|e| vec![Diagnostic::error(e.to_string())])?;
            Ok(Run {
                step_time: timeline.timing.makespan,
                timeline,
                costs,
                fitted: Vec::new(),
                derived: Vec::new(),
                report: None,
                saved_peaks: None,
                measured: false,
            })
        };
        match self {
            Costing::Measured { costs, .. } => {
                let (model, notes) =
                    MeasuredCosts::for_plan(costs, plan).map_err(|e| vec![Diagnostic::error(e)])?;
                let priced = model.clone();
                let mut run = simulated(Box::new(model))?;
                // The step: the actions, each rank's gradient reduction after its last, and the
                // run's time before the first and after the last.
                run.step_time = priced.step_time(&run.timeline.timing);
                run.measured = true;
                run.derived = notes;
                if let Some((peaks, notes)) = pipeweave_calibrate::saved_peaks(costs, plan) {
                    run.derived.extend(notes);
                    run.derived.push(peaks_note(&peaks));
                    run.saved_peaks = Some(peaks);
                }
                Ok(run)
            }
            Costing::Unit => simulated(Box::new(UnitCosts)),
            Costing::Uniform(costs) => simulated(Box::new(*costs)),
            Costing::Spec { spec, rule, .. } => {
                let fitted = fit(spec, plan, rule.clone())?;
                let e = evaluate(&fitted.spec, plan)?;
                Ok(Run {
                    step_time: e.report.step_time_s,
                    timeline: e.timeline,
                    costs: Box::new(e.costs),
                    fitted: fitted.notes(),
                    derived: Vec::new(),
                    report: Some(e.report),
                    saved_peaks: None,
                    measured: false,
                })
            }
        }
    }
}
