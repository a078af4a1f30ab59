//! Comparison rows on the unit spec: figures, traits, notes and rows that could not run.

use crate::{dualpipe, library, load};
use pipeweave_eval::Comparison;

/// 1F1B, ZB-H1, DualPipe and DualPipeV on the unit spec at P = 4, M = 8, and DualPipe at M = 6
/// (below its M ≥ 2P requirement).
fn small() -> Comparison {
    let spec = load("unit");
    let mut c = Comparison::new(&spec, false, 4, 8, true);
    let plans = [
        ("1f1b", library("1f1b", 4, 8)),
        ("zb-h1", library("zb-h1", 4, 8)),
        ("dualpipe", dualpipe(4, 8)),
        ("dualpipev", library("dualpipev", 4, 8)),
        ("dualpipe M=6", dualpipe(4, 6)),
    ];
    for (name, plan) in &plans {
        c.push(&spec, *name, "", plan.as_ref().map_err(Clone::clone));
    }
    c
}

#[test]
fn traits_and_figures_tell_the_schedules_apart() {
    let c = small();
    assert_eq!(c.simulated(), 4);
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
    // The row below the requirement keeps its reason and has neither figures nor traits.
    let below = row("dualpipe M=6");
    assert!(below.traits.is_none());
    assert!(
        below
            .outcome
            .as_ref()
            .is_err_and(|e| e.contains("twice as many micro-batches"))
    );
}

#[test]
fn rows_serialize_with_figures_or_an_error() {
    let v = serde_json::to_value(small()).expect("serializes");
    let keys = |v: &serde_json::Value| -> Vec<String> {
        v.as_object().expect("an object").keys().cloned().collect()
    };
    assert_eq!(
        keys(&v),
        [
            "spec",
            "default_spec",
            "gpus",
            "gpu",
            "ranks",
            "microbatches",
            "spec_microbatches",
            "rows"
        ]
    );
    assert_eq!(
        keys(&v["rows"][0]),
        ["schedule", "requires", "figures", "traits", "notes"]
    );
    assert_eq!(
        keys(&v["rows"][4]),
        ["schedule", "requires", "error", "notes"]
    );
}
