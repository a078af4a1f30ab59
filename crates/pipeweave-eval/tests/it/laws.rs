//! Laws of a step's figures on a spec, as property tests: more bandwidth never makes a step
//! slower, more memory never rejects a plan that fitted, and the terms of every rank's step add up
//! to the step time.

use crate::{dualpipe, library, load};
use pipeweave_check::ValidPlan;
use pipeweave_eval::evaluate;
use pipeweave_spec::Spec;
use pipeweave_spec::hardware::Key;
use proptest::prelude::*;

/// A small MoE model on four nodes of four unit GPUs: expert all-to-all across nodes, data
/// parallelism, ZeRO-1.
const MOE: &str = r#"
name = "moe"
[cluster]
gpu = "unit"
network = "unit"
gpus_per_node = 4
nodes = 4
[model]
layers = 8
hidden = 1024
heads = 8
kv_heads = 8
ffn = 4096
vocab = 1000
[model.moe]
routed_experts = 16
experts_per_token = 4
shared_experts = 1
expert_ffn = 512
dense_layers = 1
[training]
sequence_length = 1024
micro_batch_size = 1
microbatches = 8
total_tokens = 1e9
zero_stage = 1
[parallelism]
pp = 4
tp = 1
ep = 4
dp = 4
"#;

fn moe() -> Spec {
    let (spec, diags) = pipeweave_spec::parse(MOE, pipeweave_diagnostics::FileId(0));
    assert!(diags.is_empty(), "{diags:?}");
    spec.expect("parses")
}

/// The plan of one of three schedules at P = 4.
fn plan(which: u8, m: u32) -> ValidPlan {
    match which % 3 {
        0 => library("1f1b", 4, m),
        1 => library("zb-h1", 4, m),
        _ => dualpipe(4, m),
    }
    .expect("builds")
}

fn scaled(spec: &Spec, keys: &[Key], k: f64) -> Spec {
    let mut s = spec.clone();
    for key in keys {
        s.cluster.hardware.scale(*key, k);
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn more_bandwidth_never_makes_a_step_slower(
        which in 0u8..3,
        m in 4u32..7,
        unit in any::<bool>(),
        k in 1.0f64..4.0,
    ) {
        let m = 2 * m;
        let spec = if unit { load("unit") } else { moe() };
        let plan = plan(which, m);
        let mut base = spec.clone();
        base.training.microbatches = m;
        let faster = scaled(&base, &[Key::IntraGbps, Key::NetGbps], k);
        let a = evaluate(&base, &plan).expect("evaluates").report;
        let b = evaluate(&faster, &plan).expect("evaluates").report;
        prop_assert!(
            b.step_time_s <= a.step_time_s * (1.0 + 1e-12),
            "{} then {} with {k}× the bandwidth", a.step_time_s, b.step_time_s
        );
    }

    #[test]
    fn more_memory_never_rejects_a_plan_that_fitted(which in 0u8..3, m in 4u32..7, k in 1.0f64..2.0) {
        let m = 2 * m;
        let mut spec = moe();
        spec.training.microbatches = m;
        // A GPU just large enough for some plans and not for others.
        spec.cluster.hardware.set(Key::MemoryGib, 5.0, "a test".into());
        let plan = plan(which, m);
        let a = evaluate(&spec, &plan).expect("evaluates").report;
        let b = evaluate(&scaled(&spec, &[Key::MemoryGib], k), &plan).expect("evaluates").report;
        prop_assert!(a.out_of_memory || !b.out_of_memory);
        prop_assert_eq!(a.memory_per_gpu, b.memory_per_gpu);
    }

    #[test]
    fn every_ranks_terms_add_up_to_the_step(which in 0u8..3, m in 4u32..7) {
        let m = 2 * m;
        let mut spec = moe();
        spec.training.microbatches = m;
        let r = evaluate(&spec, &plan(which, m)).expect("evaluates").report;
        for rank in &r.ranks {
            let b = &rank.breakdown;
            let sum = b.compute_s + b.overlap_slowdown_s + b.exposed_tp_s + b.exposed_all_to_all_s
                + b.exposed_p2p_s + b.bubble_s + b.exposed_dp_s + b.optimizer_s;
            prop_assert!((sum - r.step_time_s).abs() <= 1e-9 * r.step_time_s, "{sum} vs {}", r.step_time_s);
        }
    }
}
