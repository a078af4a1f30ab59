//! Synthesis against the known optima, the library's schedules and its own exact method.

mod laws;
mod optimality;
mod rediscover;

use pipeweave_check::ValidPlan;
use pipeweave_sim::{CostModel, UnitCosts, live_activations, simulate};
use pipeweave_synth::{Options, Placement, Problem, Synthesis, synthesize};

/// Costs that are not uniform (F = 1, I = 1.5, W = 0.5, B = 2, transfers of 0.25), so that the
/// heuristic does not meet the lower bound by itself.
pub const SKEWED: pipeweave_sim::UniformCosts = pipeweave_sim::UniformCosts {
    stage: pipeweave_sim::StageCosts {
        f: 1.0,
        i: 1.5,
        w: 0.5,
        b: 2.0,
    },
    pair: None,
    transfer: 0.25,
};

/// A library schedule compiled for P ranks and M micro-batches, validated.
pub fn library(name: &str, p: u32, m: u32) -> ValidPlan {
    let entry = pipeweave_dsl::library::get(name).expect("a library schedule");
    let args = pipeweave_dsl::Args::new(p, m);
    let compiled = pipeweave_dsl::compile(pipeweave_diagnostics::FileId(0), entry.source, &args)
        .expect("compiles");
    pipeweave_check::validate(compiled.plan).expect("valid")
}

/// A plan's unit-cost makespan and its peak activations per rank.
pub fn figures(plan: &ValidPlan) -> (f64, Vec<u32>) {
    let t = simulate(plan, &UnitCosts).expect("simulates");
    let peaks = (0..plan.ranks())
        .map(|r| live_activations(plan.program(r)).peak)
        .collect();
    (t.timing.makespan, peaks)
}

/// A problem with the given limits, weight split on, pairs where the placement has two
/// pipelines.
pub fn problem(p: u32, m: u32, placement: Placement, limits: Vec<u32>) -> Problem {
    Problem {
        ranks: p,
        microbatches: m,
        placement,
        weight_split: true,
        pairs: placement == Placement::Bidirectional,
        limits,
        weights: Vec::new(),
    }
}

/// Synthesizes with seed 7 and `evaluations` tries, the exact method off.
pub fn run<C: CostModel + ?Sized>(problem: &Problem, costs: &C, evaluations: u64) -> Synthesis {
    let options = Options {
        seed: 7,
        evaluations,
        ..Options::default()
    };
    synthesize(problem, costs, &options, &mut |_| true).expect("a plan")
}
