//! Specs with values inside their ranges but far from any real cluster: each is answered with
//! the model's figures, with work that grows with the plan and not with the value (counts and
//! sizes asserted, never times).

use crate::{library, load};
use pipeweave_eval::evaluate;
use pipeweave_spec::Spec;

/// A shipped spec's text with `from` replaced by `to` (which must be there), parsed.
fn shipped_with(name: &str, from: &str, to: &str) -> Spec {
    let shipped = pipeweave_spec::shipped_spec(name).expect("shipped spec");
    assert!(shipped.source.contains(from), "{name} has no `{from}`");
    let text = shipped.source.replacen(from, to, 1);
    let (spec, diags) = pipeweave_spec::parse(&text, pipeweave_diagnostics::FileId(0));
    assert!(diags.is_empty(), "{diags:?}");
    spec.expect("parses")
}

#[test]
fn a_gradient_bucket_of_one_parameter_is_counted_not_listed() {
    // Megatron's buckets of 4·10⁷ parameters against buckets of one: the 70B model's 1.1 billion
    // parameters on a GPU of each part are 1.1 billion buckets, a latency each
    let base = load("dense-70b-h100-pp8");
    let tiny = shipped_with(
        "dense-70b-h100-pp8",
        "zero_stage = 1",
        "zero_stage = 1\ngrad_bucket_params = 1",
    );
    let plan = library("1f1b", 8, 16).expect("builds");
    let normal = evaluate(&base, &plan).expect("evaluates");
    let e = evaluate(&tiny, &plan).expect("evaluates");
    for (part, usual) in e.costs.parts.iter().zip(&normal.costs.parts) {
        // one run of alike buckets per kind of weight, whatever their number
        assert_eq!(part.sync.buckets.len(), 1);
        assert_eq!(part.sync.buckets[0].count, part.dense_params.ceil());
        assert!(part.sync.buckets[0].count > 1e9);
        assert!(usual.sync.buckets[0].count < 40.0);
    }
    // a billion collectives of a few microseconds each: hours of exposed data-parallel time
    let r = &e.report;
    let per_bucket = e.costs.parts[1].sync.buckets[0].seconds;
    let count = e.costs.parts[1].sync.buckets[0].count;
    assert!(r.breakdown_per_rank_mean_s.exposed_dp_s > 0.9 * count * per_bucket);
    assert!(r.step_time_s > 1000.0 * normal.report.step_time_s);
    assert!(r.step_time_s.is_finite());
}

#[test]
fn a_million_layers_cost_what_four_thousand_do() {
    // the same layer 1,048,576 times: chunks of 256 alike layers, so the cost table's chains hold
    // as many tasks as at 4,096 layers, and a lone action lasts its layers' sum
    let at = |layers: u64| {
        let spec = shipped_with(
            "dense-70b-h100-pp8",
            "layers = 80",
            &format!("layers = {layers}"),
        );
        let plan = library("1f1b", 8, 16).expect("builds");
        evaluate(&spec, &plan).expect("evaluates")
    };
    let (small, deep, deepest) = (at(80), at(4096), at(1 << 20));
    let tasks = |e: &pipeweave_eval::Evaluation| -> usize {
        e.costs
            .parts
            .iter()
            .map(|p| p.f.chain.len() + p.b.chain.len() + p.i.chain.len())
            .sum()
    };
    assert!(tasks(&deepest) <= tasks(&deep) + 64, "{}", tasks(&deepest));
    assert!(tasks(&deep) > 40 * tasks(&small));
    // a middle part's forward: 131,072 layers against 10 of the 80-layer model's
    let ratio = deepest.costs.parts[3].f.cost.compute / small.costs.parts[3].f.cost.compute;
    assert!((ratio / 13_107.2 - 1.0).abs() < 1e-9, "{ratio}");
    let flops = deepest.report.model_flops_per_token / small.report.model_flops_per_token;
    assert!(flops > 10_000.0 && flops.is_finite(), "{flops}");
    assert!(deepest.report.step_time_s > 10_000.0 * small.report.step_time_s);
}

#[test]
fn a_million_experts_are_arithmetic_not_work() {
    // DeepSeek-V3 with 1,048,576 shared experts, routed experts and experts per token: the
    // experts' weights and tokens grow a million-fold, the cost tables do not
    let spec = shipped_with(
        "deepseek-v3-h800-pp16-ep64",
        "routed_experts = 256\nexperts_per_token = 8\nshared_experts = 1",
        "routed_experts = 1048576\nexperts_per_token = 1048576\nshared_experts = 1048576",
    );
    let base = load("deepseek-v3-h800-pp16-ep64");
    let plan = crate::dualpipe(16, 120).expect("builds");
    let e = evaluate(&spec, &plan).expect("evaluates");
    let usual = evaluate(&base, &plan).expect("evaluates");
    for (part, before) in e.costs.parts.iter().zip(&usual.costs.parts) {
        assert_eq!(part.f.chain.len(), before.f.chain.len());
        assert!(part.sync.buckets.len() <= 2);
    }
    // a middle part holds four MoE layers of a million shared experts: 1.8·10¹⁴ dense weights
    // in 1.4 million buckets, counted
    let middle = &e.costs.parts[8];
    assert!(middle.dense_params > 1e14);
    assert!(middle.sync.bucket_count() > 1e6);
    assert!(e.report.step_time_s.is_finite());
    assert!(e.report.step_time_s > 1000.0 * usual.report.step_time_s);
}
