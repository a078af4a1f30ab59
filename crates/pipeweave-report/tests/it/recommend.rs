//! `recommend` on every shipped spec, with the library schedules and the three generators the
//! plugins export: the choice and its reasons pinned as snapshots.

use pipeweave_check::ValidPlan;
use pipeweave_eval::{PlanRequest, Planner, SearchSchedule, Unbuilt, recommend};
use pipeweave_report::{candidate_label, recommend_json, recommend_markdown, recommend_text};
use pipeweave_spec::{SHIPPED_SPECS, Spec};
use std::convert::Infallible;

/// Library schedules compiled in memory; `chimera`, `dualpipe` and `plugin:dualpipev` from the
/// generators (what the plugins return), Chimera with its settings.
struct InMemory;

impl InMemory {
    fn build(
        schedule: &str,
        p: u32,
        m: u32,
        v: Option<u32>,
        settings: &[(String, String)],
    ) -> Result<ValidPlan, String> {
        let dual = pipeweave_generators::DualOptions::default();
        let plan = match schedule {
            "chimera" => {
                let mut o = pipeweave_generators::ChimeraOptions::default();
                for (k, x) in settings {
                    match (k.as_str(), x.as_str()) {
                        ("forward_doubling", "true") => o.forward_doubling = true,
                        ("pipelines", n) => o.pipelines = n.parse().map_err(|_| "a count")?,
                        _ => return Err(format!("no setting {k}={x}")),
                    }
                }
                pipeweave_generators::chimera(p, m, o)?
            }
            "dualpipe" => pipeweave_generators::dualpipe(p, m, dual)?,
            "plugin:dualpipev" => pipeweave_generators::dualpipev(p, m, dual)?,
            name => {
                let entry = pipeweave_dsl::library::get(name).ok_or("no such schedule")?;
                let mut args = pipeweave_dsl::Args::new(p, m);
                if let Some(v) = v {
                    args = args.with("v", i64::from(v));
                }
                pipeweave_dsl::compile(pipeweave_diagnostics::FileId(0), entry.source, &args)
                    .map_err(|d| d[0].message.clone())?
                    .plan
            }
        };
        pipeweave_check::validate(plan).map_err(|_| "invalid plan".to_string())
    }
}

impl Planner for InMemory {
    type Stop = Infallible;

    fn plan(&mut self, schedule: &str, r: &PlanRequest) -> Result<ValidPlan, Unbuilt<Infallible>> {
        self.plan_with(schedule, r, &[])
    }

    fn plan_with(
        &mut self,
        schedule: &str,
        r: &PlanRequest,
        settings: &[(String, String)],
    ) -> Result<ValidPlan, Unbuilt<Infallible>> {
        let (p, m) = (r.ranks.unwrap_or(1), r.microbatches.unwrap_or(1));
        InMemory::build(schedule, p, m, r.stages_per_rank, settings).map_err(Unbuilt::Refused)
    }
}

fn search(spec: &Spec) -> pipeweave_eval::Recommendation {
    match recommend(spec, false, &schedules(), &mut InMemory) {
        Ok(r) => r,
        Err(never) => match never {},
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
    // Chimera's variants as the command line finds them from its parameters: forward doubling,
    // four pipelines, both.
    let setting = |k: &str, v: &str| (k.to_owned(), v.to_owned());
    out.push(SearchSchedule {
        variants: vec![
            vec![setting("forward_doubling", "true")],
            vec![setting("pipelines", "4")],
            vec![
                setting("forward_doubling", "true"),
                setting("pipelines", "4"),
            ],
        ],
        ..SearchSchedule::plain("chimera", false)
    });
    for name in ["dualpipe", "plugin:dualpipev"] {
        out.push(SearchSchedule::plain(name, false));
    }
    out
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
