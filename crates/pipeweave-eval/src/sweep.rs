//! Sweeps: one metric (bubble fraction or step time) of several schedules against one swept
//! parameter: micro-batches, ranks, stages per rank, or any parameter the schedules declare.
//!
//! A value a schedule cannot take (a failed requirement, a plan file's fixed shape, a parameter
//! it does not have, a spec that cannot take the plan) is a point with the reason instead of a
//! value.

use crate::costing::{Costing, TimeUnit};
use crate::fit::SpecRule;
use crate::planner::{PlanRequest, Planner, Tick, Unbuilt};
use pipeweave_check::ValidPlan;
use pipeweave_param::Value;
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};

/// What a sweep measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Share of rank-time spent idle.
    Bubble,
    /// The step time: the makespan (units); on a spec, in seconds, with the data-parallel
    /// synchronisation and the optimizer after the pipeline.
    StepTime,
}

impl Metric {
    /// The metric in words (`bubble fraction`).
    pub fn name(self) -> &'static str {
        match self {
            Metric::Bubble => "bubble fraction",
            Metric::StepTime => "step time",
        }
    }

    /// The metric as a key of CSV and JSON (`bubble_fraction`).
    pub fn key(self) -> &'static str {
        match self {
            Metric::Bubble => "bubble_fraction",
            Metric::StepTime => "step_time",
        }
    }
}

/// The parameter a sweep varies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Param {
    /// Micro-batches M.
    Microbatches,
    /// Ranks P.
    Ranks,
    /// Stages per rank `v` (`-v`), for the schedules that take it.
    StagesPerRank,
    /// Any other parameter a schedule declares (`--set NAME=VALUE`), by name.
    Setting(String),
}

impl Param {
    /// The parameter's name (`microbatches`, `ranks`, `stages_per_rank`, a setting's name).
    pub fn name(&self) -> &str {
        match self {
            Param::Microbatches => "microbatches",
            Param::Ranks => "ranks",
            Param::StagesPerRank => "stages_per_rank",
            Param::Setting(name) => name,
        }
    }

    /// Whether it is part of a plan's shape (M, P or v: a whole number of at least 1).
    pub fn is_shape(&self) -> bool {
        !matches!(self, Param::Setting(_))
    }
}

/// What to vary and over which values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Over {
    /// The swept parameter.
    pub param: Param,
    /// Its values, in the order swept (numbers ascending), without repeats; whole numbers of at
    /// least 1 for a shape, values of the parameter's type for a setting.
    pub values: Vec<Value>,
}

/// One value of the swept parameter and what the schedule gave there.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    /// The swept parameter's value.
    pub x: Value,
    /// The metric, or why there is none (a requirement not met, an invalid plan, ...).
    pub value: Result<f64, String>,
}

/// A swept value as JSON: a number, `true` or `false`, or an option's name.
fn x_json<S: SerializeMap>(map: &mut S, x: &Value) -> Result<(), S::Error> {
    match x {
        Value::Int(n) => map.serialize_entry("x", n),
        Value::Bool(b) => map.serialize_entry("x", b),
        Value::Choice(name) => map.serialize_entry("x", name),
    }
}

/// `{"x": 8, "value": 0.27}`, or `{"x": 4, "value": null, "reason": "..."}`.
impl Serialize for SweepPoint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        x_json(&mut map, &self.x)?;
        match &self.value {
            Ok(v) => map.serialize_entry("value", v)?,
            Err(reason) => {
                map.serialize_entry("value", &())?;
                map.serialize_entry("reason", reason)?;
            }
        }
        map.end()
    }
}

/// One schedule's points, in the order of the swept values.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepSeries {
    /// As the user named it.
    pub schedule: String,
    /// One point per swept value.
    pub points: Vec<SweepPoint>,
}

/// A finished sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    /// The swept parameter's name (`microbatches`, `ranks`, `stages_per_rank`, a setting's).
    pub parameter: String,
    /// What was measured.
    pub metric: Metric,
    /// The unit of step times.
    pub unit: TimeUnit,
    /// The spec's name, when the times are a spec's.
    pub spec: Option<String>,
    /// How the spec met each point's shape, on a spec.
    pub rule: Option<SpecRule>,
    /// P of every point, when one P serves them all (not swept, not following the swept value).
    pub ranks: Option<u32>,
    /// M of every point, when one M serves them all.
    pub microbatches: Option<u32>,
    /// One series per schedule.
    pub series: Vec<SweepSeries>,
}

impl Sweep {
    /// Every swept value, in the order swept.
    pub fn xs(&self) -> Vec<Value> {
        let mut xs: Vec<Value> = Vec::new();
        for p in self.series.iter().flat_map(|s| s.points.iter()) {
            if !xs.contains(&p.x) {
                xs.push(p.x.clone());
            }
        }
        xs
    }

    /// The unit of the values: `fraction`, `units` or `seconds`.
    pub fn unit_key(&self) -> &'static str {
        match (self.metric, self.unit) {
            (Metric::Bubble, _) => "fraction",
            (Metric::StepTime, TimeUnit::Units) => "units",
            (Metric::StepTime, TimeUnit::Seconds) => "seconds",
        }
    }

    /// Series `series`'s point at `x`.
    pub fn point(&self, series: usize, x: &Value) -> Option<&SweepPoint> {
        self.series.get(series)?.points.iter().find(|p| p.x == *x)
    }
}

/// The flags of a spec's rule as JSON.
#[derive(Serialize)]
struct RuleJson {
    strict: bool,
    keep_dp: bool,
    global_batch: bool,
    /// `--split` as given: `spec`, `even`, `auto` or layers per part `1,8,8,7`.
    split: String,
    /// `--recompute` as given, one setting or one per part; `None`: the spec's own.
    recompute: Option<Vec<&'static str>>,
}

/// `{"parameter", "metric", "unit", "spec", "fit", "ranks", "microbatches", "series"}` with the
/// metric and unit as keys.
impl Serialize for Sweep {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Sweep", 8)?;
        st.serialize_field("parameter", &self.parameter)?;
        st.serialize_field("metric", self.metric.key())?;
        st.serialize_field("unit", self.unit_key())?;
        st.serialize_field("spec", &self.spec)?;
        let rule = self.rule.as_ref().map(|r| RuleJson {
            strict: r.strict,
            keep_dp: r.keep_dp,
            global_batch: r.global_batch,
            split: r.split.to_string(),
            recompute: r
                .recompute
                .as_ref()
                .map(|v| v.iter().map(|x| x.name()).collect()),
        });
        st.serialize_field("fit", &rule)?;
        st.serialize_field("ranks", &self.ranks)?;
        st.serialize_field("microbatches", &self.microbatches)?;
        st.serialize_field("series", &self.series)?;
        st.end()
    }
}

/// Runs the sweep: every schedule at every value of `over`, the other parameters from `base` (P
/// and M left out there come from `costing`: the spec's, or with its rule keeping the global batch
/// the M that keeps it). A value a schedule cannot take becomes a point with the reason; a
/// [`Unbuilt::Stop`] stops the sweep and is handed back. The planner hears how far it is after
/// every point ([`Planner::progress`]).
pub fn sweep<P: Planner + ?Sized>(
    schedules: &[String],
    over: &Over,
    base: &PlanRequest,
    metric: Metric,
    costing: &Costing,
    planner: &mut P,
) -> Result<Sweep, P::Stop> {
    let total = (schedules.len() * over.values.len()) as u64;
    let mut series = Vec::with_capacity(schedules.len());
    let mut done = 0u64;
    for schedule in schedules {
        let fixed = planner.fixed_shape(schedule);
        let mut points = Vec::with_capacity(over.values.len());
        for x in &over.values {
            let value = if fixed {
                Err(match &over.param {
                    Param::Setting(_) => "a plan file has no parameters".to_owned(),
                    p => format!("a plan file has fixed {}", p.name()),
                })
            } else {
                match point(schedule, &over.param, x, base, costing, planner) {
                    Ok(plan) => costing
                        .run(&plan)
                        .map(|run| match metric {
                            Metric::Bubble => run.timeline.bubble_fraction,
                            Metric::StepTime => run.step_time,
                        })
                        .map_err(|d| crate::step::messages(&d)),
                    Err(Unbuilt::Refused(reason)) => Err(reason),
                    Err(Unbuilt::Stop(stop)) => return Err(stop),
                }
            };
            points.push(SweepPoint {
                x: x.clone(),
                value,
            });
            done += 1;
            planner.progress(Tick {
                done,
                total,
                schedule,
                param: over.param.name(),
                x,
            });
        }
        series.push(SweepSeries {
            schedule: schedule.clone(),
            points,
        });
    }
    let (ranks, microbatches) = held(&over.param, base, costing);
    let (spec, rule) = match costing {
        Costing::Spec { spec, rule, .. } => (Some(spec.name.clone()), Some(rule.clone())),
        Costing::Unit | Costing::Uniform(_) | Costing::Measured { .. } => (None, None),
    };
    Ok(Sweep {
        parameter: over.param.name().to_owned(),
        metric,
        unit: costing.unit(),
        spec,
        rule,
        ranks,
        microbatches,
        series,
    })
}

/// The plan of `schedule` at the swept value `x`, the rest from `base` and `costing`.
fn point<P: Planner + ?Sized>(
    schedule: &str,
    param: &Param,
    x: &Value,
    base: &PlanRequest,
    costing: &Costing,
    planner: &mut P,
) -> Result<ValidPlan, Unbuilt<P::Stop>> {
    let mut request = *base;
    let mut settings = Vec::new();
    let whole = || match x {
        Value::Int(n) => u32::try_from(*n)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| Unbuilt::Refused(format!("{n} is not a whole number of at least 1"))),
        other => Err(Unbuilt::Refused(format!("`{other}` is not a number"))),
    };
    match param {
        Param::Microbatches => request.microbatches = Some(whole()?),
        Param::Ranks => request.ranks = Some(whole()?),
        Param::StagesPerRank => request.stages_per_rank = Some(whole()?),
        Param::Setting(name) => settings.push((name.clone(), x.to_string())),
    }
    let (ranks, microbatches) = costing
        .shape(request.ranks, request.microbatches)
        .map_err(|d| Unbuilt::Refused(d.message))?;
    request.ranks = ranks;
    request.microbatches = microbatches;
    planner.plan_with(schedule, &request, &settings)
}

/// The P and the M every point of a sweep of `param` shares, if one does.
fn held(param: &Param, base: &PlanRequest, costing: &Costing) -> (Option<u32>, Option<u32>) {
    let follows = matches!(costing, Costing::Spec { rule, .. } if rule.global_batch && !rule.strict)
        && base.microbatches.is_none();
    let (p, m) = costing
        .shape(base.ranks, base.microbatches)
        .unwrap_or((base.ranks, base.microbatches));
    match param {
        Param::Ranks => (None, if follows { None } else { m }),
        Param::Microbatches => (p, None),
        Param::StagesPerRank | Param::Setting(_) => (p, m),
    }
}
