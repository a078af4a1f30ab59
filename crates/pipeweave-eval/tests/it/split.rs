//! The split search: never worse than the even split, a split that fits where the even one does
//! not, and the errors of a split given by hand.

use crate::library;
use pipeweave_eval::{SpecRule, Split, fit, search_split, search_split_from, split_layers};
use pipeweave_spec::{Recompute, Spec};

fn shipped(name: &str) -> Spec {
    let s = pipeweave_spec::shipped_spec(name).expect("a shipped spec");
    pipeweave_spec::parse(s.source, pipeweave_diagnostics::FileId(0))
        .0
        .expect("parses")
}

/// A library schedule with `v` stages per rank.
fn library_v(name: &str, p: u32, m: u32, v: u32) -> Result<pipeweave_check::ValidPlan, String> {
    let entry = pipeweave_dsl::library::get(name).ok_or("no such schedule")?;
    let args = pipeweave_dsl::Args::new(p, m).with("v", v as i64);
    let compiled = pipeweave_dsl::compile(pipeweave_diagnostics::FileId(0), entry.source, &args)
        .map_err(|d| d[0].message.clone())?;
    Ok(pipeweave_check::validate(compiled.plan).expect("library schedules are valid"))
}

fn rule(split: Split) -> SpecRule {
    SpecRule {
        split,
        ..SpecRule::default()
    }
}

#[test]
fn the_searched_split_is_never_worse_than_the_even_one() {
    for (spec, schedule, p, m) in [
        ("gpt2-1.3b-p100-32", "1f1b", 8, 16),
        ("gpt2-1.3b-p100-32", "zb-v", 4, 8),
        ("dense-70b-h100-pp8", "interleaved-1f1b", 4, 8),
        ("deepseek-v3-h800-pp16-ep64", "1f1b", 8, 16),
    ] {
        let spec = shipped(spec);
        let plan = library(schedule, p, m).expect("builds");
        let fitted = fit(&spec, &plan, SpecRule::default()).expect("fits");
        let found = search_split(&fitted.spec, &plan).expect("searches");
        let (t, e) = (found.step_time_s, found.even_step_time_s);
        assert!(
            e.is_none() || t.is_some_and(|t| t <= e.unwrap_or(f64::INFINITY)),
            "{schedule}: {t:?} against {e:?}"
        );
        assert!(found.priced >= 1);
        assert_eq!(found.layers.iter().sum::<u64>(), spec.model.layers);
    }
}

#[test]
fn a_searched_split_fits_where_the_even_one_does_not() {
    // Llama 3 405B under 1F1B at P 16, M 32: the even split needs 79.3 GiB on rank 1, over the
    // 75.2 GiB limit; fewer layers on the first ranks (which keep the most micro-batches) fit
    let spec = shipped("llama3.1-405b-h100-pp16");
    let plan = library("1f1b", 16, 32).expect("builds");
    let fitted = fit(&spec, &plan, rule(Split::Auto)).expect("fits");
    let found = search_split(&fitted.spec, &plan).expect("searches");
    assert!(found.even_step_time_s.is_none());
    assert!(found.step_time_s.is_some());
    assert!(found.memory_bytes <= spec.memory_limit_bytes());
    assert!(found.layers[1] < 8, "{:?}", found.layers);
    assert_eq!(fitted.spec.parallelism.layers_per_stage, found.layers);
    assert!(
        fitted.notes()[0].contains("searched"),
        "{:?}",
        fitted.notes()
    );
}

#[test]
fn a_split_given_by_hand_is_checked() {
    let spec = shipped("dense-70b-h100-pp8");
    let plan = library("1f1b", 4, 8).expect("builds");
    let given = fit(&spec, &plan, rule(Split::Layers(vec![19, 21, 21, 19]))).expect("fits");
    assert_eq!(
        given.spec.parallelism.layers_per_stage,
        vec![19, 21, 21, 19]
    );
    let even = fit(&spec, &plan, rule(Split::Even)).expect("fits");
    assert_eq!(even.spec.parallelism.layers_per_stage, split_layers(80, 4));
    for (split, says) in [
        (
            vec![20, 20, 40],
            "has 3 parts but the plan cuts the model into 4",
        ),
        (vec![20, 20, 20, 21], "holds 81 layers but the model has 80"),
        (
            vec![40, 0, 20, 20],
            "part 1 of the split 40,0,20,20 holds no layer",
        ),
    ] {
        let err = fit(&spec, &plan, rule(Split::Layers(split))).expect_err("refused");
        assert!(err[0].message.contains(says), "{}", err[0].message);
    }
    // the embedding-only and head-only parts are allowed
    assert!(fit(&spec, &plan, rule(Split::Layers(vec![0, 40, 40, 0]))).is_ok());
    assert_eq!(Split::parse("auto"), Ok(Split::Auto));
    assert_eq!(Split::parse(" 1, 2,3"), Ok(Split::Layers(vec![1, 2, 3])));
    assert!(Split::parse("1,x").unwrap_err().contains("`x` at entry 2"));
}

#[test]
fn a_plan_file_carries_its_split() {
    let spec = shipped("dense-70b-h100-pp8");
    let plan = library("1f1b", 4, 8)
        .expect("builds")
        .with_split(Some(vec![10, 30, 30, 10]));
    let fitted = fit(&spec, &plan, SpecRule::default()).expect("fits");
    assert_eq!(
        fitted.spec.parallelism.layers_per_stage,
        vec![10, 30, 30, 10]
    );
    // --split says otherwise
    let even = fit(&spec, &plan, rule(Split::Even)).expect("fits");
    assert_eq!(even.spec.parallelism.layers_per_stage, vec![20; 4]);
}

#[test]
fn a_part_is_priced_with_its_own_recomputation() {
    // full recomputation on part 0 alone: its backward runs its forward again and it keeps only
    // its layers' inputs; the other parts are priced as before
    let spec = shipped("dense-70b-h100-pp8");
    let plan = library("1f1b", 4, 8).expect("builds");
    let none = fit(&spec, &plan, SpecRule::default()).expect("fits").spec;
    let mut mixed = none.clone();
    mixed.training.set_recompute(&[
        Recompute::Full,
        Recompute::None,
        Recompute::None,
        Recompute::None,
    ]);
    assert_eq!(mixed.training.recompute, Recompute::Full);
    let (a, b) = (
        pipeweave_cost::CostTable::new(&none, &plan).expect("costs"),
        pipeweave_cost::CostTable::new(&mixed, &plan).expect("costs"),
    );
    let (p, q) = (&a.parts[0], &b.parts[0]);
    let extra = q.b.cost.duration - p.b.cost.duration;
    // the extra forward: about the part's forward (its compute, the communication aside)
    assert!(
        extra > 0.8 * p.f.cost.compute && extra < 1.2 * p.f.cost.duration,
        "{extra} against a forward of {}",
        p.f.cost.duration
    );
    assert!(q.activation_bytes < 0.5 * p.activation_bytes);
    assert!(q.activation_working_bytes > 0.0);
    for k in 1..4 {
        assert_eq!(a.parts[k].b.cost.duration, b.parts[k].b.cost.duration);
        assert_eq!(a.parts[k].activation_bytes, b.parts[k].activation_bytes);
    }
}

#[test]
fn the_search_recomputes_only_where_memory_is_tight() {
    // Llama 3 405B at the report's shape (PP 16, v 8, M 32): no split fits without
    // recomputation (126 layers in 128 parts leave no split but the spec's own), and with full
    // recomputation on every part the step is slower than it needs to be: the search recomputes
    // some parts only, on the ranks that keep the most micro-batches
    let spec = shipped("llama3.1-405b-h100-pp16");
    let plan = library_v("interleaved-1f1b", 16, 32, 8).expect("builds");
    let fitted = fit(&spec, &plan, SpecRule::default()).expect("fits");
    let found = search_split(&fitted.spec, &plan).expect("searches");
    assert!(found.even_step_time_s.is_none(), "{found:?}");
    let step = found.step_time_s.expect("a mixed recomputation fits");
    assert!(found.memory_bytes <= spec.memory_limit_bytes());
    let full = found
        .recompute
        .iter()
        .filter(|&&r| r == Recompute::Full)
        .count();
    assert!(
        full > 0 && full < found.recompute.len(),
        "{:?}",
        found.recompute
    );
    // every part recomputing: fits, and is slower
    let mut all = fitted.clone();
    all.spec.training.set_recompute(&[Recompute::Full]);
    let every = search_split_from(&all.spec, &plan, None, &[]).expect("searches");
    let t = every.step_time_s.expect("full recomputation fits");
    assert!(
        step < t,
        "{step} against {t} with full recomputation everywhere"
    );
    // the options a spec allows bound the search: none alone fits nowhere
    let mut only_none = fitted.spec.clone();
    only_none.training.recompute_options = vec![Recompute::None];
    let none = search_split(&only_none, &plan).expect("searches");
    assert!(none.step_time_s.is_none());
    assert!(none.recompute.iter().all(|&r| r == Recompute::None));
}

#[test]
fn a_recomputation_given_by_hand_is_applied_and_checked() {
    let spec = shipped("dense-70b-h100-pp8");
    let plan = library("1f1b", 4, 8).expect("builds");
    let given = |r: Vec<Recompute>| {
        fit(
            &spec,
            &plan,
            SpecRule {
                recompute: Some(r),
                ..SpecRule::default()
            },
        )
    };
    let one = given(vec![Recompute::Full]).expect("fits");
    assert_eq!(one.spec.training.recompute, Recompute::Full);
    assert!(one.spec.training.recompute_per_part.is_empty());
    let per = given(vec![
        Recompute::Full,
        Recompute::Selective,
        Recompute::None,
        Recompute::None,
    ])
    .expect("fits");
    assert_eq!(per.spec.training.recompute_of(1), Recompute::Selective);
    assert!(
        per.notes()
            .iter()
            .any(|n| n == "recomputation full, selective, none×2 (given)"),
        "{:?}",
        per.notes()
    );
    let wrong = given(vec![Recompute::Full, Recompute::None]).expect_err("refused");
    assert!(
        wrong[0]
            .message
            .contains("has 2 settings but the plan cuts the model into 4 parts"),
        "{}",
        wrong[0].message
    );
    assert_eq!(
        pipeweave_eval::parse_recompute("full, none").expect("reads"),
        vec![Recompute::Full, Recompute::None]
    );
    assert!(
        pipeweave_eval::parse_recompute("fulll")
            .expect_err("refused")
            .contains("found `fulll` at entry 1")
    );
}
