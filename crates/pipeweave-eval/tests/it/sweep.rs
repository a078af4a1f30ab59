//! The sweep engine with a planner built in the test: values a schedule cannot take become points
//! with the reason, a plan file's fixed shape leaves gaps, and a stop ends the sweep.

use crate::{library, load};
use pipeweave_check::ValidPlan;
use pipeweave_eval::{
    Costing, Metric, Over, Param, PlanRequest, Planner, SpecRule, Sweep, Tick, TimeUnit, Unbuilt,
    sweep,
};
use pipeweave_param::Value;

/// `1f1b` and `dualpipe` by name (DualPipe takes `overlap=true|false`), `fixed.actions` as a plan
/// file, `stop` stops; every request is kept.
#[derive(Default)]
struct Schedules {
    asked: Vec<PlanRequest>,
    /// (done, total, schedule, value) of every tick the sweep gave.
    ticks: Vec<(u64, u64, String, Value)>,
}

impl Planner for Schedules {
    type Stop = String;

    fn progress(&mut self, t: Tick<'_>) {
        self.ticks
            .push((t.done, t.total, t.schedule.to_owned(), t.x.clone()));
    }

    fn plan(&mut self, schedule: &str, r: &PlanRequest) -> Result<ValidPlan, Unbuilt<String>> {
        self.plan_with(schedule, r, &[])
    }

    fn plan_with(
        &mut self,
        schedule: &str,
        r: &PlanRequest,
        settings: &[(String, String)],
    ) -> Result<ValidPlan, Unbuilt<String>> {
        self.asked.push(*r);
        let (Some(p), Some(m)) = (r.ranks, r.microbatches) else {
            return Err(Unbuilt::Stop("give P and M".into()));
        };
        let mut options = pipeweave_generators::DualOptions::default();
        for (name, value) in settings {
            match (schedule, name.as_str()) {
                ("dualpipe", "overlap") => options.overlap = value == "true",
                _ => return Err(Unbuilt::Refused(format!("no parameter `{name}`"))),
            }
        }
        match schedule {
            "dualpipe" => pipeweave_generators::dualpipe(p, m, options)
                .map(|plan| pipeweave_check::validate(plan).expect("DualPipe is valid")),
            "stop" => return Err(Unbuilt::Stop("stopped".into())),
            name => library(name, p, m),
        }
        .map_err(Unbuilt::Refused)
    }

    fn fixed_shape(&self, schedule: &str) -> bool {
        schedule.ends_with(".actions")
    }
}

fn ints(values: &[i64]) -> Vec<Value> {
    values.iter().map(|&v| Value::Int(v)).collect()
}

fn run(names: &[&str], over: Over, base: PlanRequest) -> Result<Sweep, String> {
    run_on(names, over, base, &Costing::Unit, &mut Schedules::default())
}

fn run_on(
    names: &[&str],
    over: Over,
    base: PlanRequest,
    costing: &Costing,
    planner: &mut Schedules,
) -> Result<Sweep, String> {
    let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    planner.ticks.clear();
    let result = sweep(&names, &over, &base, Metric::Bubble, costing, planner);
    let ticks = &planner.ticks;
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
        values: ints(&[4, 8]),
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
    assert_eq!(s.xs(), ints(&[4, 8]));
    assert_eq!(
        (s.ranks, s.microbatches, s.spec.as_deref()),
        (Some(4), None, None)
    );
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
        values: ints(&[2, 4]),
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

/// A parameter a schedule declares is swept like P and M; a schedule without it has a gap with
/// the reason at every value, and the values are JSON of their type.
#[test]
fn a_declared_parameter_is_swept_and_the_others_have_gaps() {
    let over = Over {
        param: Param::Setting("overlap".into()),
        values: vec![Value::Bool(true), Value::Bool(false)],
    };
    let base = PlanRequest {
        ranks: Some(4),
        microbatches: Some(8),
        ..PlanRequest::default()
    };
    let s = run(&["dualpipe", "1f1b", "fixed.actions"], over, base).expect("runs");
    assert_eq!(s.parameter, "overlap");
    assert_eq!((s.ranks, s.microbatches), (Some(4), Some(8)));
    assert!(s.series[0].points.iter().all(|p| p.value.is_ok()));
    for p in &s.series[1].points {
        assert_eq!(p.value, Err("no parameter `overlap`".to_owned()));
    }
    assert_eq!(
        s.series[2].points[0].value,
        Err("a plan file has no parameters".to_owned())
    );
    let v = serde_json::to_value(&s).expect("serializes");
    assert_eq!(v["series"][0]["points"][1]["x"], false);
    assert_eq!(v["ranks"], 4);
    assert_eq!(v["spec"], serde_json::Value::Null);
}

/// Stages per rank reach the planner as `v`.
#[test]
fn stages_per_rank_reach_the_planner() {
    let over = Over {
        param: Param::StagesPerRank,
        values: ints(&[1, 2]),
    };
    let base = PlanRequest {
        ranks: Some(2),
        microbatches: Some(4),
        ..PlanRequest::default()
    };
    let mut planner = Schedules::default();
    let s = run_on(&["1f1b"], over, base, &Costing::Unit, &mut planner).expect("runs");
    assert_eq!(s.parameter, "stages_per_rank");
    let v: Vec<Option<u32>> = planner.asked.iter().map(|r| r.stages_per_rank).collect();
    assert_eq!(v, vec![Some(1), Some(2)]);
}

/// On a spec whose rule keeps the global batch, a sweep of P without M gives each P the M that
/// keeps it (DeepSeek-V3: 15,360 sequences of one per micro-batch over 2,048 GPUs), and a P whose
/// replicas do not divide it is a gap with the reason.
#[test]
fn at_a_fixed_global_batch_the_microbatches_follow_the_ranks() {
    let costing = Costing::Spec {
        spec: Box::new(load("deepseek-v3-h800-pp16-ep64")),
        default: false,
        rule: SpecRule {
            global_batch: true,
            ..SpecRule::default()
        },
    };
    let over = Over {
        param: Param::Ranks,
        values: ints(&[8, 16, 32, 3]),
    };
    let mut planner = Schedules::default();
    let s = run_on(
        &["1f1b"],
        over,
        PlanRequest::default(),
        &costing,
        &mut planner,
    )
    .expect("runs");
    let asked: Vec<(Option<u32>, Option<u32>)> = planner
        .asked
        .iter()
        .map(|r| (r.ranks, r.microbatches))
        .collect();
    assert_eq!(
        asked,
        vec![
            (Some(8), Some(60)),
            (Some(16), Some(120)),
            (Some(32), Some(240))
        ]
    );
    let gap = s.series[0].points[3].value.as_ref().expect_err("P = 3");
    assert!(
        gap.contains("do not split into pipelines of 3 ranks"),
        "{gap}"
    );
    assert_eq!((s.ranks, s.microbatches), (None, None));
    assert_eq!(s.spec.as_deref(), Some("deepseek-v3-h800-pp16-ep64"));
    let v = serde_json::to_value(&s).expect("serializes");
    assert_eq!(v["fit"]["global_batch"], true);
}
