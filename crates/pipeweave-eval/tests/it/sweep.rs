//! The sweep engine with a planner built in the test: values a schedule cannot take become points
//! with the reason, a plan file's fixed shape leaves gaps, and a stop ends the sweep.

use crate::{dualpipe, library};
use pipeweave_check::ValidPlan;
use pipeweave_eval::{
    Costing, Metric, Over, Param, PlanRequest, Planner, Sweep, TimeUnit, Unbuilt, sweep,
};

/// `1f1b` and `dualpipe` by name, `fixed.actions` as a plan file, `stop` stops.
struct Schedules;

impl Planner for Schedules {
    type Stop = String;

    fn plan(&mut self, schedule: &str, r: &PlanRequest) -> Result<ValidPlan, Unbuilt<String>> {
        let (Some(p), Some(m)) = (r.ranks, r.microbatches) else {
            return Err(Unbuilt::Stop("give P and M".into()));
        };
        match schedule {
            "dualpipe" => dualpipe(p, m),
            "stop" => return Err(Unbuilt::Stop("stopped".into())),
            name => library(name, p, m),
        }
        .map_err(Unbuilt::Refused)
    }

    fn fixed_shape(&self, schedule: &str) -> bool {
        schedule.ends_with(".actions")
    }
}

fn run(names: &[&str], over: Over, base: PlanRequest) -> Result<Sweep, String> {
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let mut ticks = Vec::new();
    let result = sweep(
        &names,
        &over,
        &base,
        Metric::Bubble,
        &Costing::Unit,
        &mut Schedules,
        &mut |t| ticks.push((t.done, t.total, t.schedule.to_owned(), t.x)),
    );
    if let Ok(s) = &result {
        let points: usize = s.series.iter().map(|s| s.points.len()).sum();
        assert_eq!(ticks.len(), points);
        assert!(ticks.iter().all(|t| t.1 == points as u64));
    }
    result
}

#[test]
fn requirements_and_fixed_shapes_are_gaps_with_reasons() {
    let over = Over {
        param: Param::Microbatches,
        values: vec![4, 8],
    };
    let base = PlanRequest {
        ranks: Some(4),
        ..PlanRequest::default()
    };
    let s = run(&["1f1b", "dualpipe", "fixed.actions"], over, base).expect("runs");
    assert_eq!(
        (s.parameter.as_str(), s.unit),
        ("microbatches", TimeUnit::Units)
    );
    assert_eq!(s.xs(), vec![4, 8]);
    // 1F1B's published bubble (P − 1)/(M + P − 1).
    assert_eq!(s.series[0].points[1].value, Ok(3.0 / 11.0));
    let gap = s.series[1].points[0].value.as_ref().expect_err("M < 2P");
    assert!(gap.contains("twice as many micro-batches"), "{gap}");
    assert!(s.series[1].points[1].value.is_ok());
    for p in &s.series[2].points {
        assert_eq!(
            p.value,
            Err("a plan file has fixed microbatches".to_owned())
        );
    }
    let v = serde_json::to_value(&s).expect("serializes");
    assert_eq!(v["metric"], "bubble_fraction");
    assert_eq!(v["unit"], "fraction");
    assert_eq!(
        v["series"][1]["points"][0]["value"],
        serde_json::Value::Null
    );
}

#[test]
fn a_stop_ends_the_sweep() {
    let over = Over {
        param: Param::Ranks,
        values: vec![2, 4],
    };
    let err = run(&["1f1b"], over.clone(), PlanRequest::default()).expect_err("no M");
    assert_eq!(err, "give P and M");
    let base = PlanRequest {
        microbatches: Some(8),
        ..PlanRequest::default()
    };
    assert_eq!(
        run(&["1f1b", "stop"], over, base).expect_err("stops"),
        "stopped"
    );
}
