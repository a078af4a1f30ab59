//! Sanity laws of the cost model under the simulator, as property tests.

use crate::costs::moe_spec;
use crate::plans::one_f_one_b;
use crate::specs::load;
use pipeweave_check::ValidPlan;
use pipeweave_cost::CostTable;
use pipeweave_sim::{Timeline, simulate};
use pipeweave_spec::Spec;
use pipeweave_spec::hardware::Key;
use proptest::prelude::*;

/// The unit spec reshaped to `p` pipeline ranks of two layers each.
fn unit_with(p: u32) -> Spec {
    let mut spec = load("unit.toml");
    spec.parallelism.pp = p;
    spec.cluster.gpus_per_node = p;
    spec.model.layers = 2 * u64::from(p);
    spec.parallelism.layers_per_stage = vec![2; p as usize];
    spec
}

/// `plan` simulated on `spec`'s costs.
fn run(spec: &Spec, plan: &ValidPlan) -> Timeline {
    let costs = CostTable::new(spec, plan).expect("the plan fits the spec");
    simulate(plan, &costs).expect("simulates")
}

fn scale_network(spec: &Spec, k: f64) -> Spec {
    let mut s = spec.clone();
    s.cluster.hardware.scale(Key::IntraGbps, k);
    s.cluster.hardware.scale(Key::NetGbps, k);
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn more_microbatches_never_raise_the_1f1b_bubble(p in 2u32..9, extra in 0u32..24, gpn in 1u32..9) {
        let mut spec = unit_with(p);
        // Nodes of `gpn` GPUs: some boundaries cross the slower network.
        spec.cluster.gpus_per_node = gpn;
        let m = p + extra;
        let a = run(&spec, &one_f_one_b(p, m));
        let b = run(&spec, &one_f_one_b(p, m + 1));
        prop_assert!(b.bubble_fraction <= a.bubble_fraction + 1e-12,
            "p {p} m {m}: {} then {}", a.bubble_fraction, b.bubble_fraction);
    }

    #[test]
    fn doubling_bandwidth_never_slows_a_step(p in 2u32..9, m in 1u32..24, gpn in 1u32..9, moe in any::<bool>()) {
        let spec = if moe {
            moe_spec()
        } else {
            let mut s = unit_with(p);
            s.cluster.gpus_per_node = gpn;
            s
        };
        let p = spec.parallelism.pp;
        let plan = one_f_one_b(p, m.max(1));
        let slow = run(&spec, &plan);
        let fast = run(&scale_network(&spec, 2.0), &plan);
        prop_assert!(fast.timing.makespan <= slow.timing.makespan * (1.0 + 1e-12));
    }
}
