//! Sweeps: one metric (bubble fraction or step time) of several schedules against one swept
//! parameter (micro-batches or ranks).
//!
//! A value a schedule cannot take (a failed requirement, a plan file's fixed shape, a spec that
//! cannot take the plan) is a point with the reason instead of a value.

use crate::costing::{Costing, TimeUnit};
use crate::planner::{PlanRequest, Planner, Unbuilt};
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};
use std::collections::BTreeSet;

/// What a sweep measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Share of rank-time spent idle.
    Bubble,
    /// The step's makespan (units, or seconds with a spec).
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    /// Micro-batches M.
    Microbatches,
    /// Ranks P.
    Ranks,
}

impl Param {
    /// The parameter's name (`microbatches`, `ranks`).
    pub fn name(self) -> &'static str {
        match self {
            Param::Microbatches => "microbatches",
            Param::Ranks => "ranks",
        }
    }
}

/// What to vary and over which values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Over {
    /// The swept parameter.
    pub param: Param,
    /// Its values, ascending, without repeats.
    pub values: Vec<u32>,
}

/// One value of the swept parameter and what the schedule gave there.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    /// The swept parameter's value.
    pub x: u32,
    /// The metric, or why there is none (a requirement not met, an invalid plan, ...).
    pub value: Result<f64, String>,
}

/// `{"x": 8, "value": 0.27}`, or `{"x": 4, "value": null, "reason": "..."}`.
impl Serialize for SweepPoint {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("x", &self.x)?;
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
    /// The swept parameter as the user named it (`microbatches`, `ranks`).
    pub parameter: String,
    /// What was measured.
    pub metric: Metric,
    /// The unit of step times.
    pub unit: TimeUnit,
    /// One series per schedule.
    pub series: Vec<SweepSeries>,
}

impl Sweep {
    /// Every swept value, ascending.
    pub fn xs(&self) -> Vec<u32> {
        let set: BTreeSet<u32> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.x))
            .collect();
        set.into_iter().collect()
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
    pub fn point(&self, series: usize, x: u32) -> Option<&SweepPoint> {
        self.series.get(series)?.points.iter().find(|p| p.x == x)
    }
}

/// `{"parameter", "metric", "unit", "series"}` with the metric and unit as keys.
impl Serialize for Sweep {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Sweep", 4)?;
        st.serialize_field("parameter", &self.parameter)?;
        st.serialize_field("metric", self.metric.key())?;
        st.serialize_field("unit", self.unit_key())?;
        st.serialize_field("series", &self.series)?;
        st.end()
    }
}

/// How far a sweep has come, after each simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick<'a> {
    /// Points done.
    pub done: u64,
    /// Points in all.
    pub total: u64,
    /// The schedule of the point just done.
    pub schedule: &'a str,
    /// The swept parameter.
    pub param: Param,
    /// Its value at the point just done.
    pub x: u32,
}

/// Runs the sweep: every schedule at every value of `over`, the other parameters from `base`.
/// A value a schedule cannot take becomes a point with the reason; a [`Unbuilt::Stop`] stops the
/// sweep and is handed back.
pub fn sweep<P: Planner + ?Sized>(
    schedules: &[String],
    over: &Over,
    base: &PlanRequest,
    metric: Metric,
    costing: &Costing,
    planner: &mut P,
    progress: &mut dyn FnMut(Tick<'_>),
) -> Result<Sweep, P::Stop> {
    let total = (schedules.len() * over.values.len()) as u64;
    let mut series = Vec::with_capacity(schedules.len());
    let mut done = 0u64;
    for schedule in schedules {
        let fixed = planner.fixed_shape(schedule);
        let mut points = Vec::with_capacity(over.values.len());
        for &x in &over.values {
            let value = if fixed {
                Err(format!("a plan file has fixed {}", over.param.name()))
            } else {
                let mut request = *base;
                match over.param {
                    Param::Microbatches => request.microbatches = Some(x),
                    Param::Ranks => request.ranks = Some(x),
                }
                match planner.plan(schedule, &request) {
                    Ok(plan) => costing.run(&plan).map(|run| match metric {
                        Metric::Bubble => run.timeline.bubble_fraction,
                        Metric::StepTime => run.step_time,
                    }),
                    Err(Unbuilt::Refused(reason)) => Err(reason),
                    Err(Unbuilt::Stop(stop)) => return Err(stop),
                }
            };
            points.push(SweepPoint { x, value });
            done += 1;
            progress(Tick {
                done,
                total,
                schedule,
                param: over.param,
                x,
            });
        }
        series.push(SweepSeries {
            schedule: schedule.clone(),
            points,
        });
    }
    Ok(Sweep {
        parameter: over.param.name().to_owned(),
        metric,
        unit: costing.unit(),
        series,
    })
}
