//! Shared helpers: the reference vectors, timelines and the plan schema.

use pipeweave_check::ValidPlan;
use pipeweave_plan::{Interval, Plan, Timing};
use std::path::PathBuf;

pub fn reference_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/reference")
}

/// Every reference vector: (path relative to the reference folder, its text, its pipeline count).
pub fn reference_vectors() -> Vec<(String, String, u32)> {
    let dir = reference_dir();
    let index = std::fs::read_to_string(dir.join("index.json")).expect("index.json");
    let index: serde_json::Value = serde_json::from_str(&index).expect("index.json parses");
    let entries = index["entries"].as_array().expect("entries");
    let mut out: Vec<(String, String, u32)> = entries
        .iter()
        .map(|e| {
            let path = e["path"].as_str().expect("path").to_string();
            let k = e["pipelines"].as_u64().expect("pipelines") as u32;
            let text = std::fs::read_to_string(dir.join(&path)).expect("vector file");
            (path, text, k)
        })
        .collect();
    out.sort();
    assert!(
        out.len() >= 25,
        "expected the full set of reference vectors"
    );
    out
}

/// A timeline where every action of a rank runs one unit after the previous one.
pub fn unit_timing(plan: &Plan) -> Timing {
    let intervals: Vec<Vec<Interval>> = plan
        .programs()
        .iter()
        .map(|p| {
            (0..p.len())
                .map(|i| Interval {
                    start: i as f64 * 1.5,
                    end: i as f64 * 1.5 + 1.0,
                })
                .collect()
        })
        .collect();
    let makespan = intervals
        .iter()
        .filter_map(|r| r.last().map(|i| i.end))
        .fold(0.0, f64::max);
    Timing {
        intervals,
        makespan,
    }
}

/// The JSON Schema of the plan format, compiled.
pub fn schema_validator() -> jsonschema::Validator {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../schemas/pipeweave-plan.v1.schema.json");
    let text = std::fs::read_to_string(path).expect("schema file");
    let schema: serde_json::Value = serde_json::from_str(&text).expect("schema is JSON");
    jsonschema::validator_for(&schema).expect("schema compiles")
}

/// A reference vector read as a plan, through the validator.
pub fn reference_plan(name: &str) -> ValidPlan {
    let (_, text, k) = reference_vectors()
        .into_iter()
        .find(|(p, _, _)| p.ends_with(name))
        .expect("known reference vector");
    let read = pipeweave_export::read_actions(&text, pipeweave_diagnostics::FileId(0), Some(k))
        .expect("reference vectors read");
    pipeweave_check::validate(read.plan).expect("reference vectors are valid")
}

/// The simulator's unit-cost timing of a plan.
pub fn simulated_timing(plan: &ValidPlan) -> Timing {
    pipeweave_sim::simulate(plan, &pipeweave_sim::UnitCosts)
        .expect("reference plans simulate")
        .timing
}
