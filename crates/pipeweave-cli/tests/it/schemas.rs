//! The JSON of `simulate`, `compare`, `sweep` and `recommend` against the schemas in `schemas/`
//! (documented in `docs/json-output.md`): every output validates, and a document with a key the
//! schema does not know does not.

use std::path::{Path, PathBuf};
use std::process::Command;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn validator(name: &str) -> jsonschema::Validator {
    let path = crate_dir().join("../../schemas").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let schema: serde_json::Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::draft202012::new(&schema).expect("the schema compiles")
}

/// Runs `pipeweave` in `dir` and returns its standard output, which must be JSON.
fn json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .args(args)
        .current_dir(dir)
        .env_remove("PIPEWEAVE_PLUGIN_PATH")
        .output()
        .expect("the pipeweave binary runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the output is JSON")
}

/// Every document validates; each also fails once it carries an unknown key, so the schema is
/// not one that takes anything.
fn check(schema: &str, documents: &[serde_json::Value]) {
    let v = validator(schema);
    for doc in documents {
        let errors: Vec<String> = v.iter_errors(doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{schema}: {errors:#?}\n{doc:#}");
        let mut extra = doc.clone();
        extra["unknown"] = serde_json::Value::Bool(true);
        assert!(!v.is_valid(&extra), "{schema} takes an unknown key");
    }
}

#[test]
fn simulate_json_follows_its_schema() {
    let dir = crate_dir();
    let unit = json(
        &dir,
        &[
            "simulate", "dualpipe", "-p", "4", "-m", "8", "--format", "json",
        ],
    );
    let spec = json(
        &dir,
        &["simulate", "1f1b", "--spec", "unit", "--format", "json"],
    );
    let costs = json(
        &dir,
        &[
            "simulate",
            "zb-v",
            "-p",
            "2",
            "-m",
            "4",
            "--costs",
            "transfer=0.5",
            "--format",
            "json",
        ],
    );
    // On a spec of another shape, what was fitted.
    let fitted = json(
        &dir,
        &[
            "simulate", "zb-v", "--spec", "unit", "-m", "4", "--format", "json",
        ],
    );
    // the unit spec names no attention kernel: which one was assumed is said last
    let assumed = "`training.attention` not given: `flash2` assumed on the unit GPU (the newest kernel it runs; a run from before FlashAttention (2022) names its own)";
    assert_eq!(
        fitted["fitted"],
        serde_json::json!([
            "the model cut into 8 parts (2 per rank): 1 layer each",
            "4 micro-batches instead of the spec's 8",
            assumed
        ])
    );
    assert_eq!(spec["fitted"], serde_json::json!([assumed]));
    check(
        "pipeweave-simulate.v2.schema.json",
        &[unit.clone(), spec.clone(), costs, fitted],
    );
    // The spec's figures, what was fitted and the per-rank memory go together.
    let v = validator("pipeweave-simulate.v2.schema.json");
    let mut unfitted = spec.clone();
    unfitted
        .as_object_mut()
        .expect("an object")
        .remove("fitted");
    assert!(!v.is_valid(&unfitted));
    let mut half = spec;
    half["ranks"][0]
        .as_object_mut()
        .expect("a rank")
        .remove("memory");
    assert!(!v.is_valid(&half));
    let mut unit_with_unit = unit;
    unit_with_unit["time_unit"] = "s".into();
    assert!(!v.is_valid(&unit_with_unit));
}

#[test]
fn compare_json_follows_its_schema() {
    let dir = crate_dir();
    let rows = json(
        &dir,
        &[
            "compare",
            "1f1b",
            "dualpipev",
            "dualpipe",
            "--spec",
            "unit",
            "-m",
            "6",
            "--units",
            "--format",
            "json",
        ],
    );
    let default = json(&dir, &["compare", "zb-v", "chimera", "--format", "json"]);
    check("pipeweave-compare.v2.schema.json", &[rows.clone(), default]);
    // A row has figures or an error, not both.
    let mut both = rows;
    both["rows"][1]["figures"] = both["rows"][0]["figures"].clone();
    assert!(!validator("pipeweave-compare.v2.schema.json").is_valid(&both));
}

#[test]
fn sweep_json_follows_its_schema() {
    let dir = crate_dir();
    let bubble = json(
        &dir,
        &[
            "sweep",
            "1f1b",
            "dualpipe",
            "-p",
            "4",
            "--over",
            "m=4..12:4",
            "--format",
            "json",
        ],
    );
    let time = json(
        &dir,
        &[
            "sweep",
            "gpipe",
            "--spec",
            "unit",
            "--over",
            "ranks=2,4",
            "--metric",
            "step-time",
            "--format",
            "json",
        ],
    );
    assert_eq!(time["unit"], "seconds");
    assert_eq!(
        (time["spec"].as_str(), time["ranks"].is_null()),
        (Some("unit"), true)
    );
    assert_eq!(time["fit"]["keep_dp"], false);
    // A declared parameter's values are JSON of its type.
    let options = json(
        &dir,
        &[
            "sweep",
            "dualpipev",
            "1f1b",
            "-p",
            "2",
            "-m",
            "4",
            "--over",
            "weight_split=true,false",
            "--format",
            "json",
        ],
    );
    assert_eq!(options["series"][0]["points"][1]["x"], false);
    check(
        "pipeweave-sweep.v2.schema.json",
        &[bubble.clone(), time, options],
    );
    // A gap carries its reason.
    assert!(bubble["series"][1]["points"][0]["reason"].is_string());
    let mut silent = bubble;
    silent["series"][1]["points"][0]
        .as_object_mut()
        .expect("a point")
        .remove("reason");
    assert!(!validator("pipeweave-sweep.v2.schema.json").is_valid(&silent));
}

#[test]
fn recommend_json_follows_its_schema() {
    let dir = crate_dir();
    let r = json(&dir, &["recommend", "--spec", "unit", "--format", "json"]);
    assert_eq!(r["default_spec"], false);
    assert!(r["choice"]["schedule"].is_string());
    check("pipeweave-recommend.v2.schema.json", &[r]);
}

#[test]
fn synthesize_json_follows_its_schema() {
    let dir = crate_dir();
    let unit = json(
        &dir,
        &["synthesize", "-p", "4", "-m", "8", "--format", "json"],
    );
    assert_eq!(unit["proved_optimal"], true);
    assert_eq!(unit["cost_source"], "unit");
    assert_eq!(unit["exact_arithmetic"], true);
    assert_eq!(unit["exact"]["ended_by"], "complete");
    let spec = json(
        &dir,
        &[
            "synthesize",
            "--spec",
            "dense-70b-h100-pp8",
            "--evaluations",
            "50",
            "--format",
            "json",
        ],
    );
    assert_eq!(spec["time_unit"], "seconds");
    assert_eq!(spec["cost_source"], "spec");
    // The exact method says why it ended.
    let mut silent = unit.clone();
    silent["exact"]
        .as_object_mut()
        .expect("the exact method ran")
        .remove("ended_by");
    assert!(!validator("pipeweave-synthesize.v1.schema.json").is_valid(&silent));
    check("pipeweave-synthesize.v1.schema.json", &[unit, spec]);
}

#[test]
fn list_json_follows_its_schema() {
    let dir = std::env::temp_dir().join(format!("pipeweave-list-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A folder schedule, and one whose name the library takes first (unreached).
    let text =
        "doc \"mine\"\nstages P\nplace loop\nprogram {\n  repeat M { F }\n  repeat M { B }\n}\n";
    std::fs::write(dir.join("mine.weave"), text).unwrap();
    std::fs::write(dir.join("1f1b.weave"), text).unwrap();
    let folder = dir.to_str().unwrap();
    let l = json(
        &crate_dir(),
        &["list", "--schedule-dir", folder, "--format", "json"],
    );
    let sources: Vec<&str> = l["schedules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["source"].as_str().unwrap())
        .collect();
    assert!(sources.contains(&"library") && sources.contains(&"folder"));
    assert!(sources.contains(&"plugin"), "{sources:?}");
    assert_eq!(l["unreached"][0]["name"], "1f1b");
    let twin = l["schedules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "dualpipev")
        .expect("dualpipev is listed");
    assert_eq!(twin["same_plans_as"], "plugin:dualpipev");
    check("pipeweave-list.v1.schema.json", &[l]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn diff_json_follows_its_schema() {
    let traces = crate_dir().join("../../tests/fixtures/traces/1f1b-p2-m4");
    let doc = json(
        &traces,
        &[
            "diff",
            "1f1b",
            "rank0.json",
            "rank1.json",
            "-p",
            "2",
            "-m",
            "4",
            "--format",
            "json",
        ],
    );
    check("pipeweave-diff.v1.schema.json", &[doc]);
}

#[test]
fn measured_recommend_json_follows_its_schema() {
    let traces = crate_dir().join("../../tests/fixtures/traces/1f1b-p2-m4");
    let costs = std::env::temp_dir().join(format!(
        "pipeweave-schema-costs-{}.toml",
        std::process::id()
    ));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pipeweave"))
        .args(["calibrate", "rank0.json", "rank1.json", "-o"])
        .arg(&costs)
        .current_dir(&traces)
        .output()
        .expect("pipeweave runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json(
        &traces,
        &[
            "recommend",
            "--costs-from",
            costs.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    std::fs::remove_file(&costs).ok();
    check("pipeweave-recommend-measured.v1.schema.json", &[doc]);
}
