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
