//! The spec adapted to a plan's shape: ranks, parts and micro-batches.

use crate::{library, load};
use pipeweave_eval::{SpecRule, Split, fit, fit_spec, global_batch, microbatches_at, split_layers};

#[test]
fn fit_spec_adapts_ranks_parts_and_microbatches() {
    let deepseek = load("deepseek-v3-h800-pp16-ep64");
    // DualPipeV at P = 16: 32 parts of 61 layers, lighter at both ends.
    let plan = library("dualpipev", 16, 32).expect("builds");
    let (fitted, notes) = fit_spec(&deepseek, &plan).expect("fits");
    assert_eq!(fitted.parallelism.stages_per_rank, 2);
    assert_eq!(fitted.parallelism.layers_per_stage.len(), 32);
    assert_eq!(fitted.parallelism.layers_per_stage.iter().sum::<u64>(), 61);
    assert_eq!(fitted.parallelism.layers_per_stage[0], 1);
    assert_eq!(fitted.parallelism.layers_per_stage[31], 1);
    assert_eq!(fitted.training.microbatches, 32);
    assert!(fitted.check_plan(&plan).is_empty());
    assert_eq!(notes.len(), 1, "{notes:?}");
    // 1F1B at P = 8: dp doubles to 256, which expert parallelism 64 divides.
    let (fitted, _) = fit_spec(&deepseek, &library("1f1b", 8, 120).expect("builds")).expect("fits");
    assert_eq!((fitted.parallelism.pp, fitted.parallelism.dp), (8, 256));
    // P = 3 does not divide 2,048 GPUs.
    let err = fit_spec(&deepseek, &library("1f1b", 3, 6).expect("builds")).expect_err("no fit");
    assert!(err.message.contains("do not split"), "{}", err.message);
    // The spec's own shape keeps its explicit split.
    let own = library("1f1b", 16, 120).expect("builds");
    let (fitted, notes) = fit_spec(&deepseek, &own).expect("fits");
    assert_eq!(fitted, deepseek);
    assert!(notes.is_empty());
}

#[test]
fn another_tp_at_the_specs_pp_recomputes_dp() {
    // recommend's candidates change tp at the spec's pp: 1,024 GPUs at pp 8 · tp 4 hold 32
    // replicas, not the spec's 16 (which would price 512 GPUs and half the global batch)
    let mut spec = load("dense-70b-h100-pp8");
    assert_eq!(
        (
            spec.parallelism.pp,
            spec.parallelism.tp,
            spec.parallelism.dp
        ),
        (8, 8, 16)
    );
    spec.parallelism.tp = 4;
    let (fitted, _) = fit_spec(&spec, &library("1f1b", 8, 16).expect("builds")).expect("fits");
    assert_eq!(fitted.parallelism.dp, 32);
}

#[test]
fn layers_split_evenly_with_light_ends() {
    assert_eq!(split_layers(8, 4), vec![2, 2, 2, 2]);
    assert_eq!(split_layers(10, 4), vec![2, 3, 3, 2]);
    assert_eq!(split_layers(61, 16).iter().sum::<u64>(), 61);
    assert_eq!(split_layers(5, 4), vec![1, 2, 1, 1]);
}

fn rule(strict: bool, keep_dp: bool, global_batch: bool) -> SpecRule {
    SpecRule {
        strict,
        keep_dp,
        global_batch,
        split: Split::Spec,
        recompute: None,
    }
}

/// The one rule in words: what each way of fitting DeepSeek-V3's spec to 1F1B at P = 8, M = 20
/// changes, and what the strict rule says instead.
#[test]
fn every_rule_says_what_it_fitted() {
    let deepseek = load("deepseek-v3-h800-pp16-ep64");
    let plan = library("1f1b", 8, 20).expect("builds");
    let mut text = String::new();
    for (name, r) in [
        ("the GPUs kept", rule(false, false, false)),
        ("dp kept", rule(false, true, false)),
        ("the global batch kept", rule(false, false, true)),
        ("dp and the global batch kept", rule(false, true, true)),
    ] {
        let fitted = fit(&deepseek, &plan, r).expect("fits");
        text.push_str(&format!("{name}:\n"));
        for n in fitted.notes() {
            text.push_str(&format!("  {n}\n"));
        }
        let p = &fitted.spec.parallelism;
        assert_eq!(
            u64::from(p.pp) * u64::from(p.tp) * u64::from(p.dp),
            fitted.spec.cluster.gpus(),
            "{name}"
        );
        assert!(fitted.spec.check_plan(&plan).is_empty(), "{name}");
    }
    let strict = fit(&deepseek, &plan, rule(true, false, false)).expect_err("refused");
    text.push_str("strict:\n");
    for d in &strict {
        text.push_str(&format!("  {}\n", d.message));
    }
    insta::assert_snapshot!(text);
    // The spec's own shape passes the strict rule unchanged.
    let own = library("1f1b", 16, 120).expect("builds");
    let fitted = fit(&deepseek, &own, rule(true, false, false)).expect("fits");
    assert_eq!((fitted.spec, fitted.changes), (deepseek, Vec::new()));
}

#[test]
fn a_rule_that_cannot_hold_says_why() {
    let deepseek = load("deepseek-v3-h800-pp16-ep64");
    // 15,360 sequences over dp 256 do not make 7 micro-batches of whole sequences.
    let plan = library("1f1b", 8, 7).expect("builds");
    let err = fit(&deepseek, &plan, rule(false, false, true)).expect_err("no whole size");
    assert_eq!(
        err[0].message,
        "the global batch of 15360 sequences does not split into dp 256 × 7 micro-batches"
    );
    // dp 128 kept at P = 3 is 384 GPUs, 48 nodes of 8: that fits; on the unit spec's node of 4,
    // P = 3 with dp 1 is 3 GPUs, not a whole node.
    let unit = load("unit");
    let err = fit(
        &unit,
        &library("1f1b", 3, 8).expect("builds"),
        rule(false, true, false),
    )
    .expect_err("not whole nodes");
    assert_eq!(
        err[0].message,
        "pp 3 × tp 1 × dp 1 (kept) is 3 GPUs, not whole nodes of 4"
    );
    assert_eq!(
        microbatches_at(&deepseek, 32, &SpecRule::default()),
        Ok(240)
    );
    assert_eq!(global_batch(&deepseek), 15360);
}

/// Keeping dp on a spec of one node without a network would need a second node and a network the
/// spec does not name (the cost model would price it as the intra-node link): refused, with the
/// reason.
#[test]
fn keeping_dp_beyond_a_node_needs_a_network() {
    let unit = load("unit");
    assert!(unit.cluster.hardware.network_id.is_none());
    let err = fit(
        &unit,
        &library("1f1b", 8, 8).expect("builds"),
        rule(false, true, false),
    )
    .expect_err("no network");
    assert_eq!(
        err[0].message,
        "pp 8 × tp 1 × dp 1 (kept) is 8 GPUs, more than the spec's one node of 4, and the spec \
         names no `cluster.network` between nodes"
    );
}
