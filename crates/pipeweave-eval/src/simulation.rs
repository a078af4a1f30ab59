//! One simulated step as plain data: the plan's shape, the timeline's figures per rank, and on a
//! spec the step's figures and memory per rank. `simulate` prints it as text or JSON.

use crate::breakdown::Breakdown;
use crate::costing::{Run, TimeUnit};
use crate::step::{RankReport, StepReport};
use pipeweave_plan::Plan;
use pipeweave_sim::Timeline;
use serde::{Serialize, Serializer};

/// What a plan is: ranks, pipelines, stages, micro-batches and model copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shape {
    /// Ranks P.
    #[serde(rename = "num_ranks")]
    pub ranks: u32,
    /// Pipelines K.
    pub pipelines: u32,
    /// Stages S of every pipeline.
    pub stages_per_pipeline: u32,
    /// Micro-batches M over all pipelines.
    pub microbatches: u32,
    /// Model copies.
    pub model_copies: u32,
}

impl Shape {
    /// The shape of `plan`.
    pub fn of(plan: &Plan) -> Shape {
        Shape {
            ranks: plan.ranks(),
            pipelines: plan.pipelines().len() as u32,
            stages_per_pipeline: plan.stages_per_pipeline(),
            microbatches: plan.num_microbatches(),
            model_copies: plan.model_copies(),
        }
    }
}

/// One GPU's memory on a spec.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RankMemory {
    /// Weights.
    pub params_bytes: f64,
    /// Gradients.
    pub grads_bytes: f64,
    /// Optimizer state.
    pub optimizer_bytes: f64,
    /// Activations at the peak.
    pub activations_bytes: f64,
    /// Temporary buffers.
    pub buffers_bytes: f64,
    /// The CUDA context and the communication buffers.
    pub reserve_bytes: f64,
    /// All of it.
    pub total_bytes: f64,
    /// The total as a share of the GPU's memory as the framework sees it.
    pub fraction_of_gpu: f64,
    /// Whether the total exceeds that memory less the headroom.
    pub out_of_memory: bool,
}

impl RankMemory {
    /// The memory figures of one rank's report.
    pub fn of(rank: &RankReport) -> RankMemory {
        RankMemory {
            params_bytes: rank.memory.params,
            grads_bytes: rank.memory.grads,
            optimizer_bytes: rank.memory.optimizer,
            activations_bytes: rank.memory.activations,
            buffers_bytes: rank.memory.buffers,
            reserve_bytes: rank.memory.reserve,
            total_bytes: rank.memory.total(),
            fraction_of_gpu: rank.memory_fraction,
            out_of_memory: rank.out_of_memory,
        }
    }
}

/// One rank's times in the step (units, or seconds on a spec).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RankTimes {
    /// The rank, 0-based.
    pub rank: u32,
    /// Time computing (and on exposed communication).
    pub busy: f64,
    /// Time idle.
    pub idle: f64,
    /// The longest idle stretch.
    pub longest_idle: f64,
    /// The most live activations (stage-micro-batch units).
    pub peak_activations: u32,
    /// Communication no compute hides, in the step (on a spec: tensor-parallel, all-to-all,
    /// point-to-point and data-parallel).
    pub exposed_comm: f64,
    /// On a spec, where the rank's step goes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breakdown_s: Option<Breakdown>,
    /// Memory on a spec.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<RankMemory>,
    /// Under measured costs that recorded saved bytes: the rank's predicted peak of
    /// saved-activation bytes in the step (from the bytes measured per stage and micro-batch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_saved_bytes: Option<u64>,
}

/// A simulated step of one plan, under unit or uniform costs or on a spec.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Simulation {
    /// What the plan is called (a file or schedule name).
    pub plan: String,
    /// The plan's shape.
    #[serde(flatten)]
    pub shape: Shape,
    /// Seconds on a spec; abstract units otherwise (then not serialized).
    #[serde(
        skip_serializing_if = "TimeUnit::is_units",
        serialize_with = "unit_symbol"
    )]
    pub time_unit: TimeUnit,
    /// The step's makespan (on a spec, the pipeline's: the step ends after its synchronisation,
    /// `spec.step_time_s`).
    pub makespan: f64,
    /// Under measured costs: the predicted step, seconds: the makespan and the profiled run's
    /// time before its first action and after its last (`overhead.head` and `overhead.tail` of
    /// the costs file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_time: Option<f64>,
    /// Share of rank-time spent idle.
    pub bubble_fraction: f64,
    /// Exposed communication of one rank: the mean and the worst over the ranks.
    pub exposed_comm_per_rank_mean: f64,
    /// The worst exposed communication of one rank.
    pub exposed_comm_per_rank_max: f64,
    /// Exposed communication summed over the ranks.
    pub exposed_comm_total: f64,
    /// The step's figures on a spec.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec: Option<StepReport>,
    /// On a spec, how it was fitted to the plan, one sentence per change (empty when the plan has
    /// the spec's shape).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fitted: Option<Vec<String>>,
    /// Every rank's times.
    pub ranks: Vec<RankTimes>,
}

fn unit_symbol<S: Serializer>(unit: &TimeUnit, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match unit {
        TimeUnit::Units => "units",
        TimeUnit::Seconds => "s",
    })
}

impl Simulation {
    /// The simulation of `plan` (called `name`) as `timeline`; with `report`, on a spec.
    pub fn new(
        name: impl Into<String>,
        plan: &Plan,
        timeline: &Timeline,
        report: Option<&StepReport>,
    ) -> Simulation {
        let ranks: Vec<RankTimes> = timeline
            .ranks
            .iter()
            .enumerate()
            .map(|(r, m)| {
                let spec_rank = report.and_then(|rep| rep.ranks.get(r));
                RankTimes {
                    rank: r as u32,
                    busy: m.busy,
                    idle: m.idle,
                    longest_idle: m.longest_idle,
                    peak_activations: m.peak_activations,
                    exposed_comm: spec_rank.map_or(m.exposed_comm, RankReport::exposed_comm_s),
                    breakdown_s: spec_rank.map(|x| x.breakdown),
                    memory: spec_rank.map(RankMemory::of),
                    peak_saved_bytes: None,
                }
            })
            .collect();
        let total = ranks.iter().fold(0.0, |a, r| a + r.exposed_comm);
        Simulation {
            plan: name.into(),
            shape: Shape::of(plan),
            time_unit: if report.is_some() {
                TimeUnit::Seconds
            } else {
                TimeUnit::Units
            },
            makespan: timeline.timing.makespan,
            step_time: None,
            bubble_fraction: timeline.bubble_fraction,
            exposed_comm_per_rank_mean: total / ranks.len().max(1) as f64,
            exposed_comm_per_rank_max: ranks.iter().map(|r| r.exposed_comm).fold(0.0, f64::max),
            exposed_comm_total: total,
            spec: report.cloned(),
            fitted: report.map(|_| Vec::new()),
            ranks,
        }
    }
}

impl Run {
    /// The simulated step of `plan` (called `name`) as plain data: on a spec with its figures and
    /// how the spec was fitted.
    pub fn simulation(&self, name: &str, plan: &Plan) -> Simulation {
        let mut sim = Simulation::new(name, plan, &self.timeline, self.report.as_ref());
        if self.report.is_some() {
            sim.fitted = Some(self.fitted.clone());
        }
        if self.measured {
            sim.step_time = Some(self.step_time);
        }
        if let Some(peaks) = &self.saved_peaks {
            for (rank, &peak) in sim.ranks.iter_mut().zip(peaks) {
                rank.peak_saved_bytes = Some(peak);
            }
        }
        sim
    }
}
