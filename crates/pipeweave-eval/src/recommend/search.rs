//! The search loop of `recommend` (see the parent module): shapes, schedule families, micro-batch
//! counts and the recomputation ladder, and the verdicts that explain the outcome.

use super::{
    Candidate, M_PER_CONFIG, MAX_M, Recommendation, RejectedShape, SearchSchedule, V_VALUES,
    Verdict, by_time, family_label, lost_on,
};
use crate::compare::Figures;
use crate::fit::fit_spec;
use crate::planner::{PlanRequest, Planner, Unbuilt};
use crate::step::StepReport;
use pipeweave_check::ValidPlan;
use pipeweave_sim::{live_activations, simulate};
use pipeweave_spec::{Attention, CostTable, Recompute, Spec, rank_memory};
use std::cmp::Ordering;

/// A schedule family: a schedule with its `v` and its settings.
struct Family {
    name: String,
    v: Option<u32>,
    settings: Vec<(String, String)>,
    texts: Vec<String>,
    label: String,
}

fn families(schedules: &[SearchSchedule]) -> Vec<Family> {
    let mut out = Vec::new();
    for s in schedules {
        let vs: Vec<Option<u32>> = if s.takes_v {
            V_VALUES.iter().map(|&v| Some(v)).collect()
        } else {
            vec![None]
        };
        let mut variants = vec![Vec::new()];
        variants.extend(s.variants.iter().filter(|v| !v.is_empty()).cloned());
        for v in vs {
            for settings in &variants {
                let texts: Vec<String> = settings.iter().map(|(k, x)| format!("{k}={x}")).collect();
                out.push(Family {
                    name: s.name.clone(),
                    v,
                    label: family_label(&s.name, v, &texts),
                    settings: settings.clone(),
                    texts,
                });
            }
        }
    }
    out
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

/// Why tensor-parallel degree `tp` cannot be used, if it cannot.
fn tp_problem(spec: &Spec, tp: u64) -> Option<String> {
    let m = &spec.model;
    if !m.heads.is_multiple_of(tp) {
        return Some(format!(
            "{} attention heads do not split over TP {tp}",
            m.heads
        ));
    }
    if m.mla.is_none() && !m.kv_heads.is_multiple_of(tp) && !tp.is_multiple_of(m.kv_heads) {
        return Some(format!(
            "{} key-value heads do not split over TP {tp}",
            m.kv_heads
        ));
    }
    if !spec.cluster.gpus().is_multiple_of(tp) {
        return Some(format!(
            "{} GPUs do not split into groups of {tp}",
            spec.cluster.gpus()
        ));
    }
    None
}

/// Why pipeline degree `pp` at tensor parallelism `tp` cannot be used, if it cannot.
fn shape_problem(spec: &Spec, pp: u64, tp: u64, global: u64) -> Option<String> {
    let layers = spec.model.layers;
    if pp > u64::from(pipeweave_plan::MAX_RANKS) {
        return Some(format!(
            "more pipeline ranks than the {} a plan may have",
            pipeweave_plan::MAX_RANKS
        ));
    }
    if pp > layers {
        return Some(format!(
            "more pipeline ranks than the model's {layers} layers"
        ));
    }
    let dp = spec.cluster.gpus() / (pp * tp);
    let ep = u64::from(spec.parallelism.ep);
    if spec.model.moe.is_some() && !dp.is_multiple_of(ep) {
        return Some(format!(
            "expert parallelism {ep} does not divide the data parallelism left ({dp})"
        ));
    }
    if !global.is_multiple_of(dp) {
        return Some(format!(
            "the global batch of {global} sequences does not split over data parallelism {dp}"
        ));
    }
    if spec.zero2_refused_at(pp as u32) {
        return Some("ZeRO-2 with a pipeline, which the spec refuses (as DeepSpeed does)".into());
    }
    None
}

/// The recomputation ladder: none, selective where it changes anything (standard attention),
/// full.
fn ladder(spec: &Spec) -> Vec<Recompute> {
    let mut out = vec![Recompute::None];
    if spec.training.attention == Attention::Standard {
        out.push(Recompute::Selective);
    }
    out.push(Recompute::Full);
    out
}

/// `plan` on `base` (the spec at this shape) with `recompute`: its memory, and its step when it
/// fits.
fn candidate(
    base: &Spec,
    family: (&str, Option<u32>, &[String]),
    plan: &ValidPlan,
    recompute: Recompute,
) -> Result<Candidate, String> {
    let (fitted, _) = fit_spec(base, plan).map_err(|d| d.message)?;
    let mut spec = fitted;
    spec.training.recompute = recompute;
    let costs = CostTable::new(&spec, plan).map_err(|d| crate::step::messages(&d))?;
    let limit = spec.memory_limit_bytes();
    let capacity = spec.cluster.memory_bytes();
    let memory = (0..plan.ranks())
        .map(|r| {
            let peak = live_activations(plan.program(r)).peak;
            rank_memory(&spec, &costs, plan, r, peak).total()
        })
        .fold(0.0, f64::max);
    let mut c = Candidate {
        schedule: family.0.to_owned(),
        settings: family.2.to_vec(),
        pp: plan.ranks(),
        tp: spec.parallelism.tp,
        dp: spec.parallelism.dp,
        microbatches: plan.num_microbatches(),
        micro_batch_size: spec.training.micro_batch_size,
        stages_per_rank: spec.parallelism.stages_per_rank,
        v: family.1,
        model_copies: plan.model_copies(),
        recompute: recompute.name().to_owned(),
        step_time_s: None,
        memory_fraction: if capacity > 0.0 {
            memory / capacity
        } else {
            0.0
        },
        memory_bytes: memory,
        memory_limit_bytes: limit,
        out_of_memory: memory > limit,
        figures: None,
        run_gpu_hours: None,
    };
    if c.out_of_memory {
        return Ok(c);
    }
    let timeline = simulate(plan, &costs).map_err(|e| e.to_string())?;
    let report = StepReport::new(&spec, plan, &costs, &timeline);
    c.step_time_s = Some(report.step_time_s);
    c.run_gpu_hours = Some(report.run_gpu_hours);
    c.out_of_memory = report.out_of_memory;
    c.figures = Some(Figures::from_report(&report, None));
    Ok(c)
}

/// Settings whose meaning includes the recomputation they run with (`NAME=VALUE`, and whether
/// they recompute): Chimera's forward doubling is the paper's pairing of two micro-batches per slot
/// with recomputation, and backward halving the same order without it (a plan's micro-batch size
/// is the batch over M, so the two differ only there). Each climbs only its own rungs, so the two
/// never show the same candidate under two names.
const PAIRED_WITH_RECOMPUTATION: [(&str, bool); 2] =
    [("joins=doubling", true), ("joins=halving", false)];

/// The rungs `settings` climbs: the whole ladder, or the part its pairing allows.
fn rungs(spec: &Spec, settings: &[String]) -> Vec<Recompute> {
    let pairing = PAIRED_WITH_RECOMPUTATION
        .iter()
        .find(|(text, _)| settings.iter().any(|s| s == text));
    ladder(spec)
        .into_iter()
        .filter(|rc| match pairing {
            None => true,
            Some((_, recomputes)) => (*rc != Recompute::None) == *recomputes,
        })
        .collect()
}

/// The first rung of the recomputation ladder that fits, or the last (with its memory).
fn climb(
    base: &Spec,
    family: (&str, Option<u32>, &[String]),
    plan: &ValidPlan,
) -> Result<Candidate, String> {
    let mut last = None;
    for rc in rungs(base, family.2) {
        let c = candidate(base, family, plan, rc)?;
        if !c.out_of_memory {
            return Ok(c);
        }
        last = Some(c);
    }
    last.ok_or_else(|| "no recomputation to try".to_owned())
}

/// What the search found.
struct Searched {
    all: Vec<Candidate>,
    families: Vec<Family>,
    unmet_reason: Vec<Option<(bool, String)>>,
    unmet: usize,
    rejected: Vec<RejectedShape>,
}

/// Keeps the first reason, preferring one met at the spec's own shape.
fn record(slot: &mut Option<(bool, String)>, at_spec: bool, reason: String) {
    match slot {
        None => *slot = Some((at_spec, reason)),
        Some((false, _)) if at_spec => *slot = Some((true, reason)),
        _ => {}
    }
}

fn search<P: Planner + ?Sized>(
    spec: &Spec,
    global: u64,
    schedules: &[SearchSchedule],
    planner: &mut P,
) -> Result<Searched, P::Stop> {
    let par = &spec.parallelism;
    let families = families(schedules);
    let mut out = Searched {
        all: Vec::new(),
        unmet_reason: (0..families.len()).map(|_| None).collect(),
        families,
        unmet: 0,
        rejected: Vec::new(),
    };
    let gpn = u64::from(spec.cluster.gpus_per_node);
    for tp in divisors(gpn) {
        if let Some(reason) = tp_problem(spec, tp) {
            out.rejected.push(RejectedShape {
                pp: None,
                tp: tp as u32,
                reason,
            });
            continue;
        }
        let per_tp = spec.cluster.gpus() / tp;
        for pp in divisors(per_tp) {
            if let Some(reason) = shape_problem(spec, pp, tp, global) {
                out.rejected.push(RejectedShape {
                    pp: Some(pp as u32),
                    tp: tp as u32,
                    reason,
                });
                continue;
            }
            let at_spec = pp == u64::from(par.pp) && tp == u64::from(par.tp);
            let per_replica = global / (per_tp / pp);
            let ms: Vec<u64> = divisors(per_replica)
                .into_iter()
                .rev()
                .filter(|&m| m <= MAX_M)
                .collect();
            for (k, fam) in out.families.iter().enumerate() {
                if fam.v.is_some_and(|v| u64::from(v) * pp > spec.model.layers) {
                    continue;
                }
                let mut built = 0;
                for &m in &ms {
                    if built == M_PER_CONFIG {
                        break;
                    }
                    let request = PlanRequest {
                        ranks: Some(pp as u32),
                        microbatches: Some(m as u32),
                        stages_per_rank: fam.v,
                    };
                    let outcome = match planner.plan_with(&fam.name, &request, &fam.settings) {
                        Ok(plan) => {
                            built += 1;
                            let mut base = spec.clone();
                            base.training.micro_batch_size = per_replica / m;
                            base.parallelism.tp = tp as u32;
                            climb(&base, (&fam.name, fam.v, &fam.texts), &plan)
                        }
                        Err(Unbuilt::Refused(reason)) => Err(reason),
                        Err(Unbuilt::Stop(stop)) => return Err(stop),
                    };
                    match outcome {
                        Ok(c) => out.all.push(c),
                        Err(reason) => {
                            out.unmet += 1;
                            record(&mut out.unmet_reason[k], at_spec, reason);
                        }
                    }
                }
            }
        }
    }
    out.all.sort_by(by_time);
    Ok(out)
}

/// One verdict per schedule family, fastest first (then those that need the least memory).
fn verdicts(searched: &Searched, choice: Option<&Candidate>) -> Vec<Verdict> {
    let mut verdicts: Vec<Verdict> = searched
        .families
        .iter()
        .zip(&searched.unmet_reason)
        .map(|(fam, reason)| {
            let mine =
                |c: &&Candidate| c.schedule == fam.name && c.v == fam.v && c.settings == fam.texts;
            let best = searched
                .all
                .iter()
                .filter(mine)
                .find(|c| !c.out_of_memory && c.step_time_s.is_some())
                .cloned();
            Verdict {
                schedule: fam.label.clone(),
                lost_on: match (&best, choice) {
                    (Some(b), Some(c)) if b != c => lost_on(b, c),
                    _ => None,
                },
                best,
                least_memory: searched
                    .all
                    .iter()
                    .filter(mine)
                    .min_by(|a, b| {
                        a.memory_bytes
                            .total_cmp(&b.memory_bytes)
                            .then(by_time(a, b))
                    })
                    .cloned(),
                unmet: reason.as_ref().map(|(_, r)| r.clone()),
            }
        })
        .collect();
    verdicts.sort_by(|a, b| match (&a.best, &b.best) {
        (Some(x), Some(y)) => by_time(x, y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => match (&a.least_memory, &b.least_memory) {
            (Some(x), Some(y)) => x
                .memory_bytes
                .total_cmp(&y.memory_bytes)
                .then(by_time(x, y)),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => a.schedule.cmp(&b.schedule),
        },
    });
    verdicts
}

/// Searches the configurations of `spec` with `schedules` (see the module documentation);
/// `default_spec` says whether `spec` is the built-in default. A planner's [`Unbuilt::Stop`]
/// ends the search.
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
    let choice = searched
        .all
        .iter()
        .find(|c| !c.out_of_memory && c.step_time_s.is_some())
        .cloned();
    let verdicts = verdicts(&searched, choice.as_ref());
    let runners_up = verdicts
        .iter()
        .filter_map(|v| v.best.clone())
        .filter(|c| choice.as_ref() != Some(c))
        .take(5)
        .collect();
    let same_shape_1f1b = choice.as_ref().and_then(|c| {
        searched
            .all
            .iter()
            .find(|o| {
                o.schedule == "1f1b"
                    && o.settings.is_empty()
                    && (o.pp, o.tp, o.microbatches) == (c.pp, c.tp, c.microbatches)
            })
            .cloned()
    });
    let request = PlanRequest {
        ranks: Some(par.pp),
        microbatches: Some(spec.training.microbatches),
        stages_per_rank: None,
    };
    let spec_1f1b = match planner.plan("1f1b", &request) {
        Ok(plan) => candidate(spec, ("1f1b", None, &[]), &plan, spec.training.recompute).ok(),
        Err(Unbuilt::Refused(_)) => None,
        Err(Unbuilt::Stop(stop)) => return Err(stop),
    };
    Ok(Recommendation {
        spec: spec.name.clone(),
        default_spec,
        gpus: spec.cluster.gpus(),
        gpu: spec.cluster.gpu_name().to_owned(),
        ep: par.ep,
        global_sequences: global,
        sequence_length: spec.training.sequence_length,
        total_tokens: spec.training.total_tokens,
        memory_headroom: spec.training.memory_headroom,
        out_of_memory: searched
            .all
            .iter()
            .filter(|c| c.step_time_s.is_none())
            .count(),
        simulated: searched
            .all
            .iter()
            .filter(|c| c.step_time_s.is_some())
            .count(),
        choice,
        runners_up,
        verdicts,
        rejected_shapes: searched.rejected.clone(),
        same_shape_1f1b,
        spec_1f1b,
        spec_pp: par.pp,
        spec_tp: par.tp,
        spec_microbatches: spec.training.microbatches,
        unmet: searched.unmet,
    })
}
