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

#[test]
fn tied_embeddings_all_reduce_their_gradient_between_the_two_ends() {
    // the unit spec (one node of 4 GPUs, 100 GB/s and 1 µs between them) with the head tied to
    // the embedding: 32,000 × 1,024 FP32 gradients all-reduced between ranks 0 and 3, a ring of
    // two: the whole gradient once each way at 100 GB/s, and two latencies
    let plan = library("1f1b", 4, 8).expect("builds");
    let free = load("unit");
    let mut tied = free.clone();
    tied.model.tied_embeddings = true;
    let (a, b) = (
        evaluate(&free, &plan).expect("evaluates"),
        evaluate(&tied, &plan).expect("evaluates"),
    );
    let bytes = 32000.0 * 1024.0 * 4.0;
    let want = bytes / 100e9 + 2.0 * 1e-6;
    assert!((b.costs.tied_all_reduce - want).abs() < 1e-12 * want.max(1.0));
    assert_eq!(a.costs.tied_all_reduce, 0.0);
    // rank 0 ends the 1F1B step last: it waits for nobody, then all-reduces
    let dp = |e: &pipeweave_eval::Evaluation, r: usize| e.report.ranks[r].breakdown.exposed_dp_s;
    assert!((dp(&b, 0) - dp(&a, 0) - want).abs() < 1e-12);
    assert!(dp(&b, 3) >= want);
    assert_eq!(dp(&b, 1), dp(&a, 1));
    assert!(b.report.step_time_s >= a.report.step_time_s + want - 1e-12);
    // the model counts the shared weights once
    let shared = 32000.0 * 1024.0;
    let (na, nb) = (
        pipeweave_cost::total_parameters(&free),
        pipeweave_cost::total_parameters(&tied),
    );
    assert!((na - nb - shared).abs() < 1e-6);
}

#[test]
fn overlapped_data_parallel_collectives_slow_the_compute_beside_them() {
    // the unit model on two nodes: data parallelism 2 with ZeRO-1, its buckets reduced under the
    // last backward of each stage and its all-gather under the next forward; 20 of the unit GPU's
    // 100 SMs taken while they run, none in the baseline
    let mut spec = load("unit");
    spec.cluster.nodes = 2;
    spec.parallelism.dp = 2;
    spec.training.zero_stage = 1;
    spec.training.grad_bucket_params = Some(1e6);
    let plan = library("1f1b", 4, 8).expect("builds");
    let mut free = spec.clone();
    free.training.comm_sms = 0.0;
    spec.training.comm_sms = 20.0;
    let (a, b) = (
        evaluate(&free, &plan).expect("evaluates"),
        evaluate(&spec, &plan).expect("evaluates"),
    );
    let gather = a
        .costs
        .parts
        .iter()
        .map(|p| p.sync.gather_first)
        .fold(0.0f64, f64::max);
    assert!(gather > 0.0);
    for (r, (ra, rb)) in a.report.ranks.iter().zip(&b.report.ranks).enumerate() {
        assert_eq!(ra.breakdown.overlap_slowdown_s, 0.0, "rank {r}");
        let part = &a.costs.parts[r];
        let reduced = part.sync.bucket_seconds();
        assert!(part.sync.bucket_count() > 1.0);
        // what the baseline reduced before the rank's last action ended, and the all-gather
        // after its first bucket
        let hidden = reduced - (ra.breakdown.exposed_dp_s - gather);
        assert!(hidden > 0.0, "rank {r}");
        let beside = hidden + part.sync.gather_all - part.sync.gather_first;
        let want = 0.2 * beside;
        let got = rb.breakdown.overlap_slowdown_s;
        assert!(
            (got - want).abs() < 1e-9 * want,
            "rank {r}: {got} against {want}"
        );
    }
    assert!(b.report.step_time_s > a.report.step_time_s);
    // without overlap the collectives take no SMs from the compute: they run after it
    let mut apart = spec.clone();
    apart.training.overlap_grad_reduce = false;
    apart.training.overlap_param_gather = false;
    let c = evaluate(&apart, &plan).expect("evaluates");
    assert!(
        c.report
            .ranks
            .iter()
            .all(|r| r.breakdown.overlap_slowdown_s == 0.0)
    );
}
