//! `recommend`: search pipeline degree, schedule, micro-batch count and stages per rank on a spec's
//! cluster, simulate every candidate, and keep what explains the choice and every rejection.
//!
//! The search keeps the spec's GPUs, tensor parallelism and global batch (sequences per step over
//! all data-parallel replicas) fixed. For each pipeline degree P that divides the GPUs left by
//! tensor parallelism (data parallelism takes the rest), fits the layers, leaves a data-parallel
//! degree that expert parallelism divides and that divides the global batch, it tries every
//! schedule (and for schedules with a `v` parameter, 2 and 4 stages per rank) with micro-batch
//! counts M that divide the sequences of one replica (the micro-batch size is the rest), largest
//! first: a larger M never raises a schedule's bubble and shrinks each micro-batch's activations,
//! so only the [`M_PER_CONFIG`] largest M that a schedule accepts are simulated.
//! Plans come from a [`Planner`] (the command line compiles library schedules and calls plugins).

use crate::compare::Figures;
use crate::fit::fit_spec;
use crate::planner::{PlanRequest, Planner, Unbuilt};
use crate::step::evaluate;
use pipeweave_plan::Plan;
use pipeweave_spec::Spec;
use serde::Serialize;
use std::cmp::Ordering;

/// How many micro-batch counts per (P, schedule, v) are simulated.
pub const M_PER_CONFIG: usize = 3;

/// Stages per rank tried for schedules that take `v`.
pub const V_VALUES: [u32; 2] = [2, 4];

/// The largest micro-batch count tried.
pub const MAX_M: u64 = 1024;

/// A schedule the search may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchSchedule {
    /// The name the planner knows it by.
    pub name: String,
    /// Whether it takes the number of stages per rank (`v`).
    pub takes_v: bool,
}

/// One simulated configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// The schedule's name.
    pub schedule: String,
    /// Pipeline degree P.
    pub pp: u32,
    /// Data-parallel degree.
    pub dp: u32,
    /// Micro-batches M per step and replica.
    pub microbatches: u32,
    /// Sequences per micro-batch.
    pub micro_batch_size: u64,
    /// Stages per rank and model copy (from the plan).
    pub stages_per_rank: u32,
    /// `v` as given to the schedule, if it takes one.
    pub v: Option<u32>,
    /// Model copies.
    pub model_copies: u32,
    /// The step's figures.
    pub figures: Figures,
    /// GPU-hours of the whole run.
    pub run_gpu_hours: f64,
}

/// Why a schedule (in one configuration family) is not the choice.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The schedule, with its `v` if it takes one.
    pub schedule: String,
    /// Its fastest candidate that fits in memory.
    pub best: Option<Candidate>,
    /// Its candidate that needs the least memory (said when none fits).
    pub least_memory: Option<Candidate>,
    /// Why it could not be built, when it never was (the reason at the spec's own P if any).
    pub unmet: Option<String>,
}

/// A pipeline degree left out before any schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RejectedPp {
    /// The pipeline degree.
    pub pp: u32,
    /// Why, in words.
    pub reason: String,
}

/// The outcome of a search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    /// The spec's name.
    pub spec: String,
    /// Whether the spec is the built-in default.
    pub default_spec: bool,
    /// GPUs of the cluster.
    pub gpus: u64,
    /// The GPU's name.
    pub gpu: String,
    /// Tensor parallelism (kept).
    pub tp: u32,
    /// Sequences per step over all replicas (kept).
    pub global_sequences: u64,
    /// Tokens per sequence.
    pub sequence_length: u64,
    /// Tokens of the whole run.
    pub total_tokens: f64,
    /// The fastest candidate that fits in memory.
    pub choice: Option<Candidate>,
    /// The fastest candidate of any memory (said when none fits).
    pub fastest: Option<Candidate>,
    /// The fastest candidates after the choice, one per schedule.
    pub runners_up: Vec<Candidate>,
    /// Why every schedule family is or is not the choice.
    pub verdicts: Vec<Verdict>,
    /// Pipeline degrees left out before any schedule, with the reason.
    pub rejected_pp: Vec<RejectedPp>,
    /// 1F1B at the choice's P and M.
    pub same_shape_1f1b: Option<Candidate>,
    /// 1F1B at the spec's own P and M.
    pub spec_1f1b: Option<Candidate>,
    /// The spec's own pipeline degree.
    pub spec_pp: u32,
    /// The spec's own micro-batches per step.
    pub spec_microbatches: u32,
    /// Candidates simulated.
    pub simulated: usize,
    /// Of them, those out of memory.
    pub out_of_memory: usize,
    /// Configurations that could not be built or simulated.
    pub unmet: usize,
}

fn divisors(n: u64) -> Vec<u64> {
    let mut small = Vec::new();
    let mut large = Vec::new();
    let mut d = 1;
    while d * d <= n {
        if n.is_multiple_of(d) {
            small.push(d);
            if d * d != n {
                large.push(n / d);
            }
        }
        d += 1;
    }
    small.extend(large.into_iter().rev());
    small
}

fn by_time(a: &Candidate, b: &Candidate) -> Ordering {
    a.figures
        .step_time_s
        .total_cmp(&b.figures.step_time_s)
        .then(a.figures.memory_bytes.total_cmp(&b.figures.memory_bytes))
        .then(a.schedule.cmp(&b.schedule))
        .then(a.pp.cmp(&b.pp))
        .then(b.microbatches.cmp(&a.microbatches))
        .then(a.v.cmp(&b.v))
}

/// Simulates `plan` on `spec` reshaped to the plan's P with micro-batches of `mbs` sequences.
fn candidate(
    spec: &Spec,
    schedule: &str,
    v: Option<u32>,
    mbs: u64,
    plan: &Plan,
) -> Result<Candidate, String> {
    let mut base = spec.clone();
    base.training.micro_batch_size = mbs;
    let (fitted, _) = fit_spec(&base, plan)?;
    let report = evaluate(&fitted, plan)
        .map_err(|d| crate::step::messages(&d))?
        .report;
    Ok(Candidate {
        schedule: schedule.to_owned(),
        pp: plan.ranks(),
        dp: fitted.parallelism.dp,
        microbatches: plan.num_microbatches(),
        micro_batch_size: mbs,
        stages_per_rank: fitted.parallelism.stages_per_rank,
        v,
        model_copies: plan.model_copies(),
        run_gpu_hours: report.run_gpu_hours,
        figures: Figures::from_report(&report, None),
    })
}

/// Why pipeline degree `pp` cannot be used, if it cannot.
fn pp_problem(spec: &Spec, pp: u64, global: u64) -> Option<String> {
    let layers = spec.model.layers;
    if pp == 1 {
        // Without a pipeline there is no schedule to choose, and the data-parallel gradient
        // exchange that would then dominate is not in the cost model.
        return Some("no pipeline (the cost model leaves out data-parallel communication)".into());
    }
    if pp > layers {
        return Some(format!(
            "more pipeline ranks than the model's {layers} layers"
        ));
    }
    let dp = spec.cluster.gpus() / (pp * u64::from(spec.parallelism.tp));
    if spec.model.moe.is_some() && !dp.is_multiple_of(u64::from(spec.parallelism.ep)) {
        return Some(format!(
            "expert parallelism {} does not divide the data parallelism left ({dp})",
            spec.parallelism.ep
        ));
    }
    if !global.is_multiple_of(dp) {
        return Some(format!(
            "the global batch of {global} sequences does not split over data parallelism {dp}"
        ));
    }
    None
}

/// The candidates of every schedule family at every usable pipeline degree, the reasons families
/// could not be built, and the degrees left out.
struct Searched {
    all: Vec<Candidate>,
    families: Vec<(String, Option<u32>)>,
    unmet_reason: Vec<Option<(bool, String)>>,
    unmet: usize,
    rejected_pp: Vec<RejectedPp>,
}

fn search<P: Planner + ?Sized>(
    spec: &Spec,
    global: u64,
    schedules: &[SearchSchedule],
    planner: &mut P,
) -> Result<Searched, P::Stop> {
    let par = &spec.parallelism;
    let per_tp = spec.cluster.gpus() / u64::from(par.tp.max(1));
    let mut families: Vec<(String, Option<u32>)> = Vec::new();
    for s in schedules {
        if s.takes_v {
            families.extend(V_VALUES.iter().map(|&v| (s.name.clone(), Some(v))));
        } else {
            families.push((s.name.clone(), None));
        }
    }
    let mut out = Searched {
        all: Vec::new(),
        unmet_reason: vec![None; families.len()],
        families,
        unmet: 0,
        rejected_pp: Vec::new(),
    };
    for pp in divisors(per_tp) {
        if let Some(reason) = pp_problem(spec, pp, global) {
            out.rejected_pp.push(RejectedPp {
                pp: pp as u32,
                reason,
            });
            continue;
        }
        let pp32 = pp as u32;
        let per_replica = global / (per_tp / pp);
        let ms: Vec<u64> = divisors(per_replica)
            .into_iter()
            .rev()
            .filter(|&m| m <= MAX_M)
            .collect();
        for (k, (name, v)) in out.families.iter().enumerate() {
            if v.is_some_and(|v| u64::from(v) * pp > spec.model.layers) {
                continue;
            }
            let mut built = 0;
            for &m in &ms {
                if built == M_PER_CONFIG {
                    break;
                }
                let request = PlanRequest {
                    ranks: Some(pp32),
                    microbatches: Some(m as u32),
                    stages_per_rank: *v,
                };
                let outcome = match planner.plan(name, &request) {
                    Ok(plan) => {
                        built += 1;
                        candidate(spec, name, *v, per_replica / m, &plan)
                    }
                    Err(Unbuilt::Refused(reason)) => Err(reason),
                    Err(Unbuilt::Stop(stop)) => return Err(stop),
                };
                match outcome {
                    Ok(c) => out.all.push(c),
                    Err(reason) => {
                        out.unmet += 1;
                        record(&mut out.unmet_reason[k], pp32 == par.pp, reason);
                    }
                }
            }
        }
    }
    out.all.sort_by(by_time);
    Ok(out)
}

/// One verdict per schedule family, fastest first (then those that need the least memory).
fn verdicts(searched: Searched) -> (Vec<Candidate>, Vec<Verdict>) {
    let Searched {
        all,
        families,
        unmet_reason,
        ..
    } = searched;
    let fits = |c: &&Candidate| !c.figures.out_of_memory;
    let mut verdicts: Vec<Verdict> = families
        .iter()
        .zip(unmet_reason)
        .map(|((name, v), reason)| {
            let mine = |c: &&Candidate| c.schedule == *name && c.v == *v;
            Verdict {
                schedule: match v {
                    Some(v) => format!("{name} (v {v})"),
                    None => name.to_owned(),
                },
                best: all.iter().filter(mine).find(fits).cloned(),
                least_memory: all
                    .iter()
                    .filter(mine)
                    .min_by(|a, b| {
                        a.figures
                            .memory_bytes
                            .total_cmp(&b.figures.memory_bytes)
                            .then(by_time(a, b))
                    })
                    .cloned(),
                unmet: reason.map(|(_, r)| r),
            }
        })
        .collect();
    verdicts.sort_by(|a, b| match (&a.best, &b.best) {
        (Some(x), Some(y)) => by_time(x, y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => match (&a.least_memory, &b.least_memory) {
            (Some(x), Some(y)) => x
                .figures
                .memory_bytes
                .total_cmp(&y.figures.memory_bytes)
                .then(by_time(x, y)),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => a.schedule.cmp(&b.schedule),
        },
    });
    (all, verdicts)
}

/// Searches the configurations of `spec` with `schedules` (see the module documentation);
/// `default_spec` says whether `spec` is the built-in default. A planner's
/// [`Unbuilt::Stop`] ends the search.
pub fn recommend<P: Planner + ?Sized>(
    spec: &Spec,
    default_spec: bool,
    schedules: &[SearchSchedule],
    planner: &mut P,
) -> Result<Recommendation, P::Stop> {
    let par = &spec.parallelism;
    let global =
        u64::from(spec.training.microbatches) * spec.training.micro_batch_size * u64::from(par.dp);
    let searched = search(spec, global, schedules, planner)?;
    let unmet = searched.unmet;
    let rejected_pp = searched.rejected_pp.clone();
    let (all, verdicts) = verdicts(searched);
    let choice = all.iter().find(|c| !c.figures.out_of_memory).cloned();
    let runners_up = verdicts
        .iter()
        .filter_map(|v| v.best.clone())
        .filter(|c| choice.as_ref() != Some(c))
        .take(5)
        .collect();
    let same_shape_1f1b = choice.as_ref().and_then(|c| {
        all.iter()
            .find(|o| o.schedule == "1f1b" && o.pp == c.pp && o.microbatches == c.microbatches)
            .cloned()
    });
    let request = PlanRequest {
        ranks: Some(par.pp),
        microbatches: Some(spec.training.microbatches),
        stages_per_rank: None,
    };
    let spec_1f1b = match planner.plan("1f1b", &request) {
        Ok(plan) => candidate(spec, "1f1b", None, spec.training.micro_batch_size, &plan).ok(),
        Err(Unbuilt::Refused(_)) => None,
        Err(Unbuilt::Stop(stop)) => return Err(stop),
    };
    Ok(Recommendation {
        spec: spec.name.clone(),
        default_spec,
        gpus: spec.cluster.gpus(),
        gpu: spec.cluster.gpu_name().to_owned(),
        tp: par.tp,
        global_sequences: global,
        sequence_length: spec.training.sequence_length,
        total_tokens: spec.training.total_tokens,
        out_of_memory: all.iter().filter(|c| c.figures.out_of_memory).count(),
        simulated: all.len(),
        fastest: all.first().cloned(),
        choice,
        runners_up,
        verdicts,
        rejected_pp,
        same_shape_1f1b,
        spec_1f1b,
        spec_pp: par.pp,
        spec_microbatches: spec.training.microbatches,
        unmet,
    })
}

/// Keeps the first reason, preferring one met at the spec's own pipeline degree.
fn record(slot: &mut Option<(bool, String)>, at_spec_pp: bool, reason: String) {
    match slot {
        None => *slot = Some((at_spec_pp, reason)),
        Some((false, _)) if at_spec_pp => *slot = Some((true, reason)),
        _ => {}
    }
}
