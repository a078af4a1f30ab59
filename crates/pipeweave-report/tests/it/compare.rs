//! Comparison tables on the unit spec: the four renderings, rows that could not run, the traits,
//! and the spec adapted to a plan's shape.

use crate::{dualpipe, library};
use pipeweave_plan::Plan;
use pipeweave_report::{
    Comparison, compare_csv, compare_json, compare_markdown, compare_text, fit_spec, split_layers,
};
use pipeweave_spec::Spec;

fn spec(name: &str) -> Spec {
    let shipped = pipeweave_spec::shipped_spec(name).expect("shipped spec");
    let (spec, diags) = pipeweave_spec::parse(shipped.source, pipeweave_diagnostics::FileId(0));
    assert!(diags.is_empty(), "{diags:?}");
    spec.expect("parses")
}

/// 1F1B, ZB-H1, DualPipe and DualPipeV on the unit spec at P = 4, M = 8, and DualPipe at M = 6
/// (below its M ≥ 2P requirement).
fn small() -> Comparison {
    let spec = spec("unit");
    let mut c = Comparison::new(&spec, false, 4, 8, true);
    let plans: Vec<(&str, &str, Result<Plan, String>)> = vec![
        ("1f1b", "", Ok(library("1f1b", 4, 8))),
        ("zb-h1", "", Ok(library("zb-h1", 4, 8))),
        ("dualpipe", "M ≥ 2P", Ok(dualpipe(4, 8))),
        ("dualpipev", "M ≥ 2P", Ok(library("dualpipev", 4, 8))),
        (
            "dualpipe M=6",
            "M ≥ 2P",
            pipeweave_generators::dualpipe(4, 6, pipeweave_generators::DualOptions::default()),
        ),
    ];
    for (name, requires, plan) in &plans {
        c.push(&spec, *name, *requires, plan.as_ref().map_err(Clone::clone));
    }
    c
}

#[test]
fn text() {
    let c = small();
    assert_eq!(c.simulated(), 4);
    insta::assert_snapshot!(compare_text(&c));
}

#[test]
fn markdown() {
    insta::assert_snapshot!(compare_markdown(&small()));
}

#[test]
fn csv() {
    let out = compare_csv(&small());
    // Fields between quotes may hold commas; count the others.
    let fields = |line: &str| {
        let mut quoted = false;
        1 + line
            .chars()
            .filter(|&ch| {
                if ch == '"' {
                    quoted = !quoted;
                }
                ch == ',' && !quoted
            })
            .count()
    };
    let widths: Vec<usize> = out.lines().map(fields).collect();
    assert!(widths.iter().all(|w| *w == widths[0]), "{widths:?}");
    insta::assert_snapshot!(out);
}

#[test]
fn json() {
    let out = compare_json(&small());
    let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 5);
    assert!(
        rows[4]["error"]
            .as_str()
            .is_some_and(|e| e.contains("twice as many micro-batches"))
    );
    insta::assert_snapshot!(out);
}

#[test]
fn traits_and_figures_tell_the_schedules_apart() {
    let c = small();
    let row = |name: &str| c.rows.iter().find(|r| r.schedule == name).expect("row");
    let traits = |name: &str| row(name).traits.clone().expect("traits");
    assert_eq!(traits("1f1b").model_copies, 1);
    assert!(!traits("1f1b").weight_split && !traits("1f1b").overlap);
    assert!(traits("zb-h1").weight_split);
    assert_eq!(
        (
            traits("dualpipe").model_copies,
            traits("dualpipe").pipelines
        ),
        (2, 2)
    );
    assert!(traits("dualpipe").overlap);
    assert_eq!(traits("dualpipev").stages_per_rank, 2);
    // Each rank of DualPipe hosts one stage of each of its two pipelines.
    assert_eq!(traits("dualpipe").stages_per_rank, 2);
    assert_eq!(traits("1f1b").stages_per_rank, 1);
    let fig = |name: &str| row(name).outcome.clone().expect("figures");
    // DualPipe holds two copies of its parts: twice 1F1B's weights on every rank.
    let ratio = fig("dualpipe").weight_bytes / fig("1f1b").weight_bytes;
    assert!((1.5..=2.5).contains(&ratio), "{ratio}");
    // Zero-bubble splitting beats 1F1B's bubble.
    assert!(fig("zb-h1").bubble_fraction < fig("1f1b").bubble_fraction);
    // The unit-cost makespan of 1F1B at P = 4, M = 8: (M + P − 1)(F + B) = 11 × 3.
    assert_eq!(fig("1f1b").makespan_units, Some(33.0));
    // DualPipeV at P = 4 cuts the unit spec's 8 layers into 8 parts and says so.
    assert!(
        row("dualpipev")
            .notes
            .iter()
            .any(|n| n.contains("8 parts (2 per rank): 1 layer each")),
        "{:?}",
        row("dualpipev").notes
    );
}

#[test]
fn fit_spec_adapts_ranks_parts_and_microbatches() {
    let deepseek = spec("deepseek-v3-h800-pp16-ep64");
    // DualPipeV at P = 16: 32 parts of 61 layers, lighter at both ends.
    let plan = library("dualpipev", 16, 32);
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
    let (fitted, _) = fit_spec(&deepseek, &library("1f1b", 8, 120)).expect("fits");
    assert_eq!((fitted.parallelism.pp, fitted.parallelism.dp), (8, 256));
    // P = 3 does not divide 2,048 GPUs.
    let err = fit_spec(&deepseek, &library("1f1b", 3, 6)).expect_err("does not fit");
    assert!(err.contains("do not split"), "{err}");
    // The spec's own shape keeps its explicit split.
    let (fitted, notes) = fit_spec(&deepseek, &library("1f1b", 16, 120)).expect("fits");
    assert_eq!(fitted, deepseek);
    assert!(notes.is_empty());
}

#[test]
fn layers_split_evenly_with_light_ends() {
    assert_eq!(split_layers(8, 4), vec![2, 2, 2, 2]);
    assert_eq!(split_layers(10, 4), vec![2, 3, 3, 2]);
    assert_eq!(split_layers(61, 16).iter().sum::<u64>(), 61);
    assert_eq!(split_layers(5, 4), vec![1, 2, 1, 1]);
}
