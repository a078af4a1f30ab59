//! The split search: never worse than the even split, a split that fits where the even one does
//! not, and the errors of a split given by hand.

use crate::library;
use pipeweave_eval::{SpecRule, Split, fit, search_split, split_layers};
use pipeweave_spec::Spec;

fn shipped(name: &str) -> Spec {
    let s = pipeweave_spec::shipped_spec(name).expect("a shipped spec");
    pipeweave_spec::parse(s.source, pipeweave_diagnostics::FileId(0))
        .0
        .expect("parses")
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
