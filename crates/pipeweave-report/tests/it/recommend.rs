//! `recommend` on every shipped spec, with the library schedules and the three generators the
//! plugins export: the choice and its reasons pinned as snapshots.

use crate::planner::{InMemory, schedules};
use pipeweave_eval::recommend;
use pipeweave_report::{candidate_label, recommend_json, recommend_markdown, recommend_text};
use pipeweave_spec::{SHIPPED_SPECS, Spec};

fn search(spec: &Spec) -> pipeweave_eval::Recommendation {
    match recommend(spec, false, &schedules(), true, &mut InMemory) {
        Ok(r) => r,
        Err(never) => match never {},
    }
}

fn spec(source: &str) -> Spec {
    pipeweave_spec::parse(source, pipeweave_diagnostics::FileId(0))
        .0
        .expect("a shipped spec parses")
}

#[test]
fn every_spec_file_is_shipped() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../specs");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .expect("specs folder")
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".toml")
                .map(str::to_owned)
        })
        .collect();
    files.sort();
    let shipped: Vec<&str> = SHIPPED_SPECS.iter().map(|s| s.name).collect();
    assert_eq!(files, shipped);
}

#[test]
fn recommend_on_every_shipped_spec() {
    for shipped in SHIPPED_SPECS {
        let r = search(&spec(shipped.source));
        // The choice fits under the headroom and is the fastest that does.
        if let Some(c) = &r.choice {
            assert!(!c.out_of_memory);
            assert!(c.memory_bytes <= c.memory_limit_bytes);
            assert!(c.memory_fraction <= 1.0 - r.memory_headroom + 1e-12);
            for v in r.verdicts.iter().filter_map(|v| v.best.as_ref()) {
                assert!(v.time() >= c.time(), "{}", candidate_label(v));
            }
        }
        insta::assert_snapshot!(format!("recommend_{}", shipped.name), recommend_text(&r));
    }
}

#[test]
fn recommend_is_deterministic() {
    let s = spec(SHIPPED_SPECS[4].source);
    let a = recommend_text(&search(&s));
    let b = recommend_text(&search(&s));
    assert_eq!(a, b);
}

#[test]
fn markdown_and_json_of_the_unit_spec() {
    let unit = SHIPPED_SPECS
        .iter()
        .find(|s| s.name == "unit")
        .expect("the unit spec");
    let r = search(&spec(unit.source));
    insta::assert_snapshot!("recommend_unit_markdown", recommend_markdown(&r));
    let v: serde_json::Value = serde_json::from_str(&recommend_json(&r)).expect("JSON");
    assert_eq!(
        v["choice"]["schedule"],
        r.choice.as_ref().expect("a choice").schedule
    );
    assert_eq!(
        v["verdicts"].as_array().map(Vec::len),
        Some(r.verdicts.len())
    );
    assert_eq!(v["choice"]["pp"], r.choice.as_ref().expect("a choice").pp);
    for key in [
        "pp",
        "tp",
        "dp",
        "schedule",
        "microbatches",
        "stages_per_rank",
        "step_time_s",
        "memory_fraction",
    ] {
        assert!(!v["choice"][key].is_null(), "{key}");
    }
}
