//! Comparison tables on the unit spec: the four renderings and rows that could not run.

use crate::{dualpipe, library};
use pipeweave_check::ValidPlan;
use pipeweave_eval::Comparison;
use pipeweave_report::{compare_csv, compare_json, compare_markdown, compare_text};
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
    let plans: Vec<(&str, &str, Result<ValidPlan, String>)> = vec![
        ("1f1b", "", Ok(library("1f1b", 4, 8))),
        ("zb-h1", "", Ok(library("zb-h1", 4, 8))),
        ("dualpipe", "M ≥ 2P", Ok(dualpipe(4, 8))),
        ("dualpipev", "M ≥ 2P", Ok(library("dualpipev", 4, 8))),
        (
            "dualpipe M=6",
            "M ≥ 2P",
            pipeweave_generators::dualpipe(4, 6, pipeweave_generators::DualOptions::default())
                .map(|plan| pipeweave_check::validate(plan).expect("DualPipe is valid")),
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
