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
            "exposed_comm_per_rank_mean",
            "exposed_comm_per_rank_max",
            "exposed_comm_total",
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
    // The pipeline's makespan, then the optimizer (one GPU per rank: no data parallelism).
    assert_eq!(v["spec"]["pipeline_makespan_s"], v["makespan"]);
    let step = v["spec"]["step_time_s"].as_f64().expect("a number");
    let optimizer = (0..4)
        .map(|r| {
            v["ranks"][r]["breakdown_s"]["optimizer_s"]
                .as_f64()
                .expect("a number")
        })
        .fold(0.0, f64::max);
    assert!(step > sim.makespan && optimizer > 0.0);
    assert!(step <= sim.makespan + optimizer + 1e-12);
    assert!(v["spec"].get("ranks").is_none());
    assert_eq!(
        keys(&v["ranks"][3]),
        [
            "rank",
            "busy",
            "idle",
            "longest_idle",
            "peak_activations",
            "exposed_comm",
            "breakdown_s",
            "memory"
        ]
    );
    let memory = &v["ranks"][3]["memory"];
    assert_eq!(
        keys(memory),
        [
            "params_bytes",
            "grads_bytes",
            "optimizer_bytes",
            "activations_bytes",
            "buffers_bytes",
            "reserve_bytes",
            "total_bytes",
            "fraction_of_gpu",
            "out_of_memory"
        ]
    );
}
