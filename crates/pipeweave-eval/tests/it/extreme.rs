//! Specs with values inside their ranges but far from any real cluster: each is answered with
//! the model's figures, with work that grows with the plan and not with the value (counts and
//! sizes asserted, never times).

use crate::{library, load};
use pipeweave_check::ValidPlan;
use pipeweave_diagnostics::FileId;
use pipeweave_eval::{
    MAX_CANDIDATE_OPS, PlanRequest, Planner, Recommendation, SEARCH_BUDGET, SearchSchedule,
    Unbuilt, evaluate, recommend,
};
use pipeweave_spec::Spec;
use std::convert::Infallible;

/// A shipped spec's text with each `from` replaced by its `to` (each must be there), parsed.
fn shipped_with(name: &str, changes: &[(&str, &str)]) -> Spec {
    let shipped = pipeweave_spec::shipped_spec(name).expect("shipped spec");
    let mut text = shipped.source.to_owned();
    for (from, to) in changes {
        assert!(text.contains(from), "{name} has no `{from}`");
        text = text.replacen(from, to, 1);
    }
    let (spec, diags) = pipeweave_spec::parse(&text, FileId(0));
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
        &[("zero_stage = 1", "zero_stage = 1\ngrad_bucket_params = 1")],
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
            &[("layers = 80", &format!("layers = {layers}"))],
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
        &[(
            "routed_experts = 256\nexperts_per_token = 8\nshared_experts = 1",
            "routed_experts = 1048576\nexperts_per_token = 1048576\nshared_experts = 1048576",
        )],
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

/// The library's schedules and DualPipe, built in memory, counting what the search asks for.
#[derive(Default)]
struct Counting {
    requests: u64,
    ops: u64,
    largest: u64,
}

impl Planner for Counting {
    type Stop = Infallible;

    fn plan(&mut self, schedule: &str, r: &PlanRequest) -> Result<ValidPlan, Unbuilt<Infallible>> {
        self.requests += 1;
        let (p, m) = (r.ranks.unwrap_or(1), r.microbatches.unwrap_or(1));
        let built = if schedule == "dualpipe" {
            crate::dualpipe(p, m)
        } else {
            let entry = pipeweave_dsl::library::get(schedule).ok_or("no such schedule");
            entry.map_err(str::to_owned).and_then(|entry| {
                let mut args = pipeweave_dsl::Args::new(p, m);
                if let Some(v) = r.stages_per_rank {
                    args = args.with("v", i64::from(v));
                }
                let compiled = pipeweave_dsl::compile(FileId(0), entry.source, &args)
                    .map_err(|d| d[0].message.clone())?;
                pipeweave_check::validate(compiled.plan).map_err(|_| "invalid".to_owned())
            })
        };
        let plan = built.map_err(Unbuilt::Refused)?;
        let ops = plan.num_ops() as u64;
        self.ops += ops;
        self.largest = self.largest.max(ops);
        Ok(plan)
    }
}

fn schedules() -> Vec<SearchSchedule> {
    let mut out: Vec<SearchSchedule> = pipeweave_dsl::library::all()
        .map(|e| {
            let takes_v = pipeweave_dsl::info(e.source)
                .params
                .iter()
                .any(|p| p.name == "v");
            SearchSchedule::plain(e.name, takes_v)
        })
        .collect();
    out.push(SearchSchedule::plain("dualpipe", false));
    out
}

fn search(spec: &Spec) -> (Recommendation, Counting) {
    let mut planner = Counting::default();
    let r = match recommend(spec, false, &schedules(), true, &mut planner) {
        Ok(r) => r,
        Err(never) => match never {},
    };
    (r, planner)
}

fn bounded(r: &Recommendation) -> usize {
    r.rejected_shapes
        .iter()
        .filter(|s| s.reason.contains("left out to keep the search bounded"))
        .count()
}

#[test]
fn recommend_on_a_model_of_sixteen_thousand_layers_stays_within_its_budget() {
    // 16,000 layers: pipeline degrees up to 1,024 fit, with plans of a million operations; the
    // whole search took over a minute
    let spec = shipped_with("dense-70b-h100-pp8", &[("layers = 80", "layers = 16000")]);
    let (r, planner) = search(&spec);
    assert!(planner.ops <= SEARCH_BUDGET, "{}", planner.ops);
    assert!(planner.largest <= MAX_CANDIDATE_OPS, "{}", planner.largest);
    assert!(bounded(&r) > 0, "{:?}", r.rejected_shapes);
    // a model of 11 trillion weights fits on 1,024 GPUs in no way
    assert!(r.choice.is_none());
    assert!(r.out_of_memory > 0);
}

#[test]
fn recommend_on_eight_hundred_layers_takes_the_smallest_shapes() {
    let spec = shipped_with("dense-70b-h100-pp8", &[("layers = 80", "layers = 800")]);
    let (r, planner) = search(&spec);
    assert!(planner.ops <= SEARCH_BUDGET);
    assert!(bounded(&r) > 0);
    let choice = r.choice.as_ref().expect("a 700B model fits at some shape");
    // what was left out are the largest pipelines of each tensor-parallel degree: every shape
    // searched (the choice, the runners-up, each family's best and least memory) with the same
    // tensor-parallel degree has a smaller pipeline
    let mut searched = vec![choice];
    searched.extend(&r.runners_up);
    for v in &r.verdicts {
        searched.extend(v.best.iter().chain(&v.least_memory));
    }
    let left_out: Vec<_> = r
        .rejected_shapes
        .iter()
        .filter(|s| s.reason.contains("bounded"))
        .collect();
    assert!(!left_out.is_empty());
    for left in left_out {
        let pp = left.pp.expect("a bounded shape has its pipeline degree");
        for c in searched.iter().filter(|c| c.tp == left.tp) {
            assert!(
                c.pp < pp,
                "{left:?} left out, but PP {} at TP {} searched",
                c.pp,
                c.tp
            );
        }
    }
}

#[test]
fn recommend_on_a_million_gpus_searches_every_shape() {
    // 131,072 nodes of 8: data-parallel groups of up to a million GPUs, counted, so nothing is
    // left out and the search is the one of 1,024 GPUs at a larger data parallelism
    let spec = shipped_with(
        "dense-70b-h100-pp8",
        &[("nodes = 128", "nodes = 131072"), ("dp = 16", "dp = 16384")],
    );
    let (r, planner) = search(&spec);
    assert_eq!(r.gpus, 1 << 20);
    assert_eq!(bounded(&r), 0);
    assert!(planner.ops <= SEARCH_BUDGET);
    assert!(r.choice.is_some());
    assert!(r.simulated > 100, "{}", r.simulated);
}

#[test]
fn recommend_with_a_batch_of_ten_to_the_eighteen_sequences_is_answered() {
    // 1,048,576 micro-batches of 1,048,576 sequences: micro-batch counts are tried up to 1,024
    // (never found by factoring 10¹⁸), and 1F1B at the spec's own shape (8 × 1,048,576, 16
    // million operations) is not simulated
    let spec = shipped_with(
        "dense-70b-h100-pp8",
        &[(
            "micro_batch_size = 1\nmicrobatches = 16 ",
            "micro_batch_size = 1048576\nmicrobatches = 1048576 ",
        )],
    );
    let (r, planner) = search(&spec);
    assert!(planner.largest <= MAX_CANDIDATE_OPS);
    assert!(r.spec_1f1b.is_none());
    assert_eq!(r.global_sequences, 16 << 40);
    assert!(planner.requests > 0 && planner.ops <= SEARCH_BUDGET);
}
