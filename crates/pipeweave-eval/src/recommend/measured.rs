//! `recommend --costs-from`: every schedule the search knows, with its `v` and its variants, at
//! the shape the profiled run had (its ranks P and micro-batches M: the costs are per micro-batch
//! of the run's size, so M stays, and the cut of the model into parts follows each plan), each
//! priced with the measured costs ([`MeasuredCosts`](pipeweave_calibrate::MeasuredCosts)), fastest
//! first.
//!
//! The costs fix what the spec search varies (P, the micro-batch size, the cluster), so this search
//! varies only the schedule. Memory is each plan's predicted peak of saved-activation bytes where
//! the run recorded them; no plan is left out for memory (the costs hold no GPU's capacity).

use super::{MAX_CANDIDATE_OPS, SearchSchedule, V_VALUES, family_label};
use crate::costing::Costing;
use crate::planner::{PlanRequest, Planner, Unbuilt};
use pipeweave_calibrate::Calibration;
use serde::Serialize;

/// One schedule priced with measured costs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasuredCandidate {
    /// The schedule family: its name with its `v` and settings (`interleaved-1f1b (v 2)`).
    pub schedule: String,
    /// The schedule's name.
    pub name: String,
    /// Its settings besides the defaults, `NAME=VALUE`.
    pub settings: Vec<String>,
    /// `v` as given to the schedule, if it takes one.
    pub v: Option<u32>,
    /// Stages per rank and model copy (from the plan).
    pub stages_per_rank: u32,
    /// The predicted step in seconds: the makespan and the run's time before its first action and
    /// after its last.
    pub step_time_s: f64,
    /// The simulated makespan in seconds.
    pub makespan_s: f64,
    /// The largest predicted peak of saved-activation bytes of any rank, when the run recorded
    /// saved bytes.
    pub peak_saved_bytes: Option<u64>,
    /// How the measured costs were carried to this plan, one sentence each.
    pub notes: Vec<String>,
}

/// A schedule family that could not be priced, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MeasuredUnmet {
    /// The schedule family.
    pub schedule: String,
    /// Why, in words.
    pub reason: String,
}

/// The outcome of `recommend --costs-from`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MeasuredRecommendation {
    /// The costs file, as given.
    pub costs_from: String,
    /// When the costs were measured (UTC), when the traces said.
    pub measured_when: Option<String>,
    /// The run's ranks P, kept.
    pub ranks: u32,
    /// The run's micro-batches M, kept.
    pub microbatches: u32,
    /// The fastest candidate.
    pub choice: Option<MeasuredCandidate>,
    /// Every candidate priced, fastest first (the choice first).
    pub candidates: Vec<MeasuredCandidate>,
    /// The schedule families that could not be built or priced at this shape.
    pub unmet: Vec<MeasuredUnmet>,
}

/// Every schedule of `schedules`, with its `v` ([`V_VALUES`] for one that takes it, besides its
/// default; a `v` its default plan has already is not tried again) and its variants, at the run's P and M, priced with `costs` (read from `file`).
pub fn recommend_measured<P: Planner + ?Sized>(
    costs: &Calibration,
    file: &str,
    schedules: &[SearchSchedule],
    planner: &mut P,
) -> Result<MeasuredRecommendation, P::Stop> {
    let (ranks, m) = (costs.measured.ranks, costs.measured.microbatches);
    let costing = Costing::Measured {
        costs: Box::new(costs.clone()),
        file: file.to_owned(),
    };
    let mut candidates = Vec::new();
    let mut unmet = Vec::new();
    for s in schedules {
        let vs: Vec<Option<u32>> = if s.takes_v {
            std::iter::once(None)
                .chain(V_VALUES.iter().copied().map(Some))
                .collect()
        } else {
            vec![None]
        };
        let settings: Vec<&[(String, String)]> = std::iter::once(&[][..])
            .chain(s.variants.iter().map(Vec::as_slice))
            .collect();
        // The stages per rank of each setting's default plan: a `v` equal to it is that plan again.
        let mut default_v: Vec<Option<u32>> = vec![None; settings.len()];
        for &v in &vs {
            for (k, &set) in settings.iter().enumerate() {
                if v.is_some() && v == default_v[k] {
                    continue;
                }
                let shown: Vec<String> = set.iter().map(|(k, x)| format!("{k}={x}")).collect();
                let label = family_label(&s.name, v, &shown);
                // F and B of every stage and micro-batch, at the least.
                let ops = 2 * u64::from(ranks) * u64::from(v.unwrap_or(1)) * u64::from(m);
                if ops > MAX_CANDIDATE_OPS {
                    unmet.push(MeasuredUnmet {
                        schedule: label,
                        reason: format!(
                            "its plan has at least {ops} operations, more than the {MAX_CANDIDATE_OPS} a search simulates"
                        ),
                    });
                    continue;
                }
                let request = PlanRequest {
                    ranks: Some(ranks),
                    microbatches: Some(m),
                    stages_per_rank: v,
                };
                let plan = match planner.plan_with(&s.name, &request, set) {
                    Ok(plan) => plan,
                    Err(Unbuilt::Refused(reason)) => {
                        unmet.push(MeasuredUnmet {
                            schedule: label,
                            reason,
                        });
                        continue;
                    }
                    Err(Unbuilt::Stop(stop)) => return Err(stop),
                };
                let stages_per_rank = crate::compare::Traits::of(&plan).stages_per_rank;
                if v.is_none() {
                    default_v[k] = Some(stages_per_rank);
                }
                match costing.run(&plan) {
                    Ok(run) => candidates.push(MeasuredCandidate {
                        schedule: label,
                        name: s.name.clone(),
                        settings: shown,
                        v,
                        stages_per_rank,
                        step_time_s: run.step_time,
                        makespan_s: run.timeline.timing.makespan,
                        peak_saved_bytes: run.saved_peaks.and_then(|p| p.into_iter().max()),
                        notes: run.derived,
                    }),
                    Err(problems) => unmet.push(MeasuredUnmet {
                        schedule: label,
                        reason: problems
                            .into_iter()
                            .map(|d| d.message)
                            .collect::<Vec<_>>()
                            .join("; "),
                    }),
                }
            }
        }
    }
    candidates.sort_by(|a, b| {
        a.step_time_s
            .total_cmp(&b.step_time_s)
            .then(a.schedule.cmp(&b.schedule))
    });
    Ok(MeasuredRecommendation {
        costs_from: file.to_owned(),
        measured_when: costs.measured.when.clone(),
        ranks,
        microbatches: m,
        choice: candidates.first().cloned(),
        candidates,
        unmet,
    })
}
