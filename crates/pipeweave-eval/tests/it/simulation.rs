//! The simulation's data: the keys of its JSON under unit costs and on a spec.

use crate::{library, load};
use pipeweave_eval::{Simulation, evaluate};
use pipeweave_sim::{UnitCosts, simulate};

fn keys(v: &serde_json::Value) -> Vec<String> {
    v.as_object().expect("an object").keys().cloned().collect()
}

#[test]
fn unit_costs_carry_no_unit_no_spec_and_no_memory() {
    let plan = library("1f1b", 4, 8).expect("builds");
    let t = simulate(&plan, &UnitCosts).expect("simulates");
    let v = serde_json::to_value(Simulation::new("1f1b", &plan, &t, None)).expect("serializes");
    assert_eq!(
        keys(&v),
        [
            "plan",
            "num_ranks",
            "pipelines",
            "stages_per_pipeline",
            "microbatches",
            "model_copies",
            "makespan",
            "bubble_fraction",
            "exposed_comm",
            "ranks"
        ]
    );
    assert_eq!(v["makespan"], 33.0);
    assert_eq!(
        keys(&v["ranks"][0]),
        [
            "rank",
            "busy",
            "idle",
            "longest_idle",
            "peak_activations",
            "exposed_comm"
        ]
    );
}

#[test]
fn on_a_spec_times_are_seconds_with_the_spec_and_memory() {
    let spec = load("unit");
    let plan = library("1f1b", 4, 8).expect("builds");
    let e = evaluate(&spec, &plan).expect("evaluates");
    let sim = Simulation::new("1f1b", &plan, &e.timeline, Some(&e.report));
    let v = serde_json::to_value(&sim).expect("serializes");
    assert_eq!(v["time_unit"], "s");
    assert_eq!(v["spec"]["name"], "unit");
    assert_eq!(v["spec"]["step_time_s"], v["makespan"]);
    assert!(v["spec"].get("ranks").is_none());
    let memory = &v["ranks"][3]["memory"];
    assert_eq!(
        keys(memory),
        [
            "params_bytes",
            "grads_bytes",
            "optimizer_bytes",
            "activations_bytes",
            "total_bytes",
            "fraction_of_gpu",
            "out_of_memory"
        ]
    );
}
