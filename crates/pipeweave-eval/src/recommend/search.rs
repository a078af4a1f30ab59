//! The search loop of `recommend` (see the parent module): shapes, schedule families, micro-batch
//! counts and the recomputation ladder, and the verdicts that explain the outcome.

use super::{
    Candidate, M_PER_CONFIG, MAX_CANDIDATE_OPS, MAX_M, Recommendation, RejectedShape,
    SEARCH_BUDGET, SearchSchedule, V_VALUES, Verdict, by_time, family_label, lost_on,
};
use crate::compare::Figures;
use crate::fit::fit_spec;
use crate::planner::{PlanRequest, Planner, Unbuilt};
use crate::split::search_split_climbing;
use crate::step::StepReport;
use pipeweave_check::ValidPlan;
use pipeweave_cost::{CostTable, rank_memory};
use pipeweave_sim::{live_activations, simulate};
use pipeweave_spec::{Recompute, Spec};
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

/// Every divisor of `n`, ascending (`n` at most a spec's count, 2²⁰: a thousand steps).
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

/// The prime factors of `n` with their powers, by trial division (`n` at most 2²⁰ or so).
fn factors(mut n: u64, into: &mut Vec<(u64, u32)>) {
    let mut p = 2;
    while p * p <= n {
        let mut e = 0;
        while n.is_multiple_of(p) {
            n /= p;
            e += 1;
        }
        if e > 0 {
            match into.iter_mut().find(|(q, _)| *q == p) {
                Some((_, x)) => *x += e,
                None => into.push((p, e)),
            }
        }
        p += 1;
    }
    if n > 1 {
        match into.iter_mut().find(|(q, _)| *q == n) {
            Some((_, x)) => *x += 1,
            None => into.push((n, 1)),
        }
    }
}

/// Every divisor of `a · b`, ascending, from the factors of `a` and `b`: the GPUs of a cluster
/// are nodes × GPUs per node, each at most 2²⁰, while their product may be 2⁴⁰, whose divisors
/// a scan up to its square root would take a million steps to find.
fn divisors_of_product(a: u64, b: u64) -> Vec<u64> {
    let mut f = Vec::new();
    factors(a, &mut f);
    factors(b, &mut f);
    let mut out = vec![1u64];
    for (p, e) in f {
        let mut next = Vec::with_capacity(out.len() * (e as usize + 1));
        for &d in &out {
            let mut x = d;
            for _ in 0..=e {
                next.push(x);
                x *= p;
            }
        }
        out = next;
    }
    out.sort_unstable();
    out
}

/// The micro-batch counts tried for `per_replica` sequences per replica: its divisors up to
/// [`MAX_M`], largest first (found by trying each up to [`MAX_M`], not by factoring a count that
/// may be 10¹⁸).
fn microbatch_counts(per_replica: u64) -> Vec<u64> {
    (1..=per_replica.min(MAX_M))
        .rev()
        .filter(|&m| per_replica.is_multiple_of(m))
        .collect()
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

/// The recomputation ladder: the spec's `training.recompute_options`, else none, selective where
/// it changes anything (standard attention), full.
fn ladder(spec: &Spec) -> Vec<Recompute> {
    crate::split::recompute_options(spec)
}

/// `plan` on `base` (the spec at this shape) with `recompute` (one setting for every part, or one
/// per part): its memory, and its step when it fits.
fn candidate(
    base: &Spec,
    family: (&str, Option<u32>, &[String]),
    plan: &ValidPlan,
    recompute: &[Recompute],
    split: Option<&[u64]>,
) -> Result<Candidate, String> {
    let (fitted, _) = fit_spec(base, plan).map_err(|d| d.message)?;
    let mut spec = fitted;
    if recompute.len() == plan.stages_per_pipeline() as usize || recompute.len() <= 1 {
        spec.training.set_recompute(recompute);
    } else {
        // a list for other parts: the heaviest of it for every part
        spec.training
            .set_recompute(&[recompute.iter().copied().max().unwrap_or(Recompute::None)]);
    }
    // the even split unless another is given: the spec's own is one of the searched splits'
    // candidates, so `--split even` is even indeed
    // (measured costs are per part of the spec's own split, which then stays)
    let measured = spec.measured != pipeweave_spec::Measured::default();
    match split {
        Some(layers) => spec.parallelism.layers_per_stage = layers.to_vec(),
        None if !measured => {
            spec.parallelism.layers_per_stage =
                crate::fit::split_layers(spec.model.layers, plan.stages_per_pipeline());
        }
        None => {}
    }
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
        recompute: spec.training.recompute.name().to_owned(),
        recompute_per_part: spec
            .training
            .recompute_parts(spec.parallelism.layers_per_stage.len())
            .iter()
            .map(|r| r.name().to_owned())
            .collect(),
        layers_per_part: spec.parallelism.layers_per_stage.clone(),
        split_searched: split.is_some(),
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

/// The most layers a model may have for `recommend` to search its split (4,096: the cost model
/// costs larger models in chunks of layers).
pub const MAX_SEARCHED_LAYERS: u64 = 4096;

/// The least step `plan` could take on `spec` with any split: its forwards and backwards spread
/// perfectly over its ranks (no bubble, no communication, no synchronisation), so no split can
/// beat it.
fn balanced_bound(spec: &Spec, plan: &ValidPlan) -> Option<f64> {
    let costs = CostTable::new(spec, plan).ok()?;
    let per_mb: f64 = costs
        .parts
        .iter()
        .map(|p| p.f.cost.compute + p.b.cost.compute)
        .sum();
    Some(per_mb * f64::from(plan.num_microbatches()) / f64::from(plan.ranks().max(1)))
}

/// The split search at one rung, each part's recomputation chosen among the rungs up to `rc`
/// (lighter ones where memory allows, AdaPipe's point), unless it cannot pay: `even` is the even
/// split's candidate at `rc`, and `best` the fastest step found so far. Pruned when the
/// perfectly balanced bound of this configuration at the lightest rung cannot beat `best`, or
/// when the even split fits and is within 0.5% of it.
fn with_split(
    base: &Spec,
    family: (&str, Option<u32>, &[String]),
    plan: &ValidPlan,
    (rc, options): (Recompute, &[Recompute]),
    even: &Candidate,
    best: f64,
) -> Result<Option<Candidate>, String> {
    let (mut spec, _) = fit_spec(base, plan).map_err(|d| d.message)?;
    // measured costs are per part of the spec's own split; beyond MAX_SEARCHED_LAYERS a model's
    // split is not searched (its layers are costed in chunks, and the search's work, linear in
    // the layers, would leave the search's budget)
    if spec.measured != pipeweave_spec::Measured::default()
        || spec.model.layers > MAX_SEARCHED_LAYERS
    {
        return Ok(None);
    }
    spec.training.set_recompute(&[options[0]]);
    let Some(bound) = balanced_bound(&spec, plan) else {
        return Ok(None);
    };
    if bound >= best || even.step_time_s.is_some_and(|t| t <= bound * 1.005) {
        return Ok(None);
    }
    spec.training.set_recompute(&[rc]);
    let found = search_split_climbing(
        &spec,
        plan,
        Some((even.step_time_s, even.memory_bytes)),
        options,
        best,
    )?;
    let uniform = found.recompute.iter().all(|&r| r == rc);
    if found.layers == even.layers_per_part && uniform {
        return Ok(None);
    }
    let c = candidate(base, family, plan, &found.recompute, Some(&found.layers))?;
    let better = match (c.step_time_s, even.step_time_s) {
        (Some(t), Some(e)) => t < e,
        (Some(_), None) => true,
        _ => false,
    };
    Ok(better.then_some(c))
}

/// The first rung of the recomputation ladder that fits, or the last (with its memory); with
/// `split`, each rung also with a searched split and each part's recomputation among the rungs so
/// far ([`with_split`]), so a split that fits saves a rung of recomputation, on some parts or on
/// all. `best` is the fastest step found so far (for the pruning).
fn climb(
    base: &Spec,
    family: (&str, Option<u32>, &[String]),
    plan: &ValidPlan,
    split: bool,
    best: f64,
) -> Result<Candidate, String> {
    let mut last = None;
    let rungs = rungs(base, family.2);
    for (i, &rc) in rungs.iter().enumerate() {
        let c = candidate(base, family, plan, &[rc], None)?;
        if split && let Some(better) = with_split(base, family, plan, (rc, &rungs[..=i]), &c, best)?
        {
            return Ok(better);
        }
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

/// A shape that passed its checks: what the search would try there.
struct Shape {
    tp: u64,
    pp: u64,
    at_spec: bool,
    per_replica: u64,
    ms: Vec<u64>,
    /// Where it came in the order of shapes, for the order of the page.
    order: usize,
    /// The work its configurations may take, in operations ([`shape_work`]).
    work: u64,
}

/// Operations one request to the planner counts for, besides its plan's: a small plan costs
/// about this much to build, cost and take apart.
const REQUEST_WORK: u64 = 256;

/// Operations one layer (or chunk of layers) or one part counts for in a cost table.
const COSTING_WORK: u64 = 16;

/// The most operations a configuration of `pp` ranks and `m` micro-batches, with `v` stages per
/// rank asked for, has: F, I and W of every stage and micro-batch, two stages per rank where a
/// schedule runs a V.
fn most_ops(pp: u64, v: Option<u32>, m: u64) -> u64 {
    3 * pp * u64::from(v.unwrap_or(1).max(2)) * m
}

/// The fewest: F and B of every stage and micro-batch.
fn fewest_ops(pp: u64, v: Option<u32>, m: u64) -> u64 {
    2 * pp * u64::from(v.unwrap_or(1)) * m
}

/// What the configurations of a shape may take, in operations: every micro-batch count a family
/// may ask for at [`REQUEST_WORK`], and for the [`M_PER_CONFIG`] largest it may build, the most
/// operations of their plans and the cost tables of every rung of the recomputation ladder.
fn shape_work(spec: &Spec, families: &[Family], pp: u64, ms: &[u64]) -> u64 {
    let rungs = ladder(spec).len() as u64;
    let layers = pipeweave_cost::costed_layers(spec);
    let mut work = 0u64;
    for fam in families {
        if fam.v.is_some_and(|v| u64::from(v) * pp > spec.model.layers) {
            continue;
        }
        let parts = pp * u64::from(fam.v.unwrap_or(1).max(2));
        let built: u64 = ms
            .iter()
            .filter(|&&m| fewest_ops(pp, fam.v, m) <= MAX_CANDIDATE_OPS)
            .take(M_PER_CONFIG)
            .map(|&m| most_ops(pp, fam.v, m) + rungs * COSTING_WORK * (layers + parts))
            .fold(0u64, u64::saturating_add);
        work = work
            .saturating_add(REQUEST_WORK * ms.len() as u64)
            .saturating_add(built);
    }
    work
}

fn search<P: Planner + ?Sized>(
    spec: &Spec,
    global: u64,
    schedules: &[SearchSchedule],
    split: bool,
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
    // Every shape first, with the work it may take; the rejected ones with their order.
    let mut rejected: Vec<(usize, RejectedShape)> = Vec::new();
    let mut shapes: Vec<Shape> = Vec::new();
    let mut order = 0;
    let gpn = u64::from(spec.cluster.gpus_per_node);
    for tp in divisors(gpn) {
        order += 1;
        if let Some(reason) = tp_problem(spec, tp) {
            let shape = RejectedShape {
                pp: None,
                tp: tp as u32,
                reason,
            };
            rejected.push((order, shape));
            continue;
        }
        let per_tp = spec.cluster.gpus() / tp;
        for pp in divisors_of_product(u64::from(spec.cluster.nodes), gpn / tp) {
            order += 1;
            if let Some(reason) = shape_problem(spec, pp, tp, global) {
                let shape = RejectedShape {
                    pp: Some(pp as u32),
                    tp: tp as u32,
                    reason,
                };
                rejected.push((order, shape));
                continue;
            }
            let per_replica = global / (per_tp / pp);
            let ms = microbatch_counts(per_replica);
            shapes.push(Shape {
                tp,
                pp,
                at_spec: pp == u64::from(par.pp) && tp == u64::from(par.tp),
                per_replica,
                work: shape_work(spec, &out.families, pp, &ms),
                ms,
                order,
            });
        }
    }
    // The shapes that fit the budget, smallest first; the rest are left out, said so.
    let mut by_work: Vec<usize> = (0..shapes.len()).collect();
    by_work.sort_by_key(|&i| (shapes[i].work, shapes[i].order));
    let mut admitted = vec![false; shapes.len()];
    let mut spent = 0u64;
    for i in by_work {
        if spent.saturating_add(shapes[i].work) <= SEARCH_BUDGET {
            spent += shapes[i].work;
            admitted[i] = true;
        }
    }
    for (shape, _) in shapes.iter().zip(&admitted).filter(|(_, a)| !**a) {
        let reason = format!(
            "left out to keep the search bounded (it estimates each shape's work before building \
             anything and takes the smallest shapes while they add up to at most {} operations)",
            thousands(SEARCH_BUDGET)
        );
        rejected.push((
            shape.order,
            RejectedShape {
                pp: Some(shape.pp as u32),
                tp: shape.tp as u32,
                reason,
            },
        ));
    }
    rejected.sort_by_key(|(order, _)| *order);
    out.rejected = rejected.into_iter().map(|(_, r)| r).collect();
    for shape in shapes
        .iter()
        .zip(&admitted)
        .filter(|(_, a)| **a)
        .map(|(s, _)| s)
    {
        let (tp, pp, at_spec) = (shape.tp, shape.pp, shape.at_spec);
        for (k, fam) in out.families.iter().enumerate() {
            if fam.v.is_some_and(|v| u64::from(v) * pp > spec.model.layers) {
                continue;
            }
            let mut built = 0;
            for &m in &shape.ms {
                if built == M_PER_CONFIG {
                    break;
                }
                let fewest = fewest_ops(pp, fam.v, m);
                if fewest > MAX_CANDIDATE_OPS {
                    out.unmet += 1;
                    record(
                        &mut out.unmet_reason[k],
                        at_spec,
                        too_large(fewest, "at least"),
                    );
                    continue;
                }
                let request = PlanRequest {
                    ranks: Some(pp as u32),
                    microbatches: Some(m as u32),
                    stages_per_rank: fam.v,
                };
                let outcome = match planner.plan_with(&fam.name, &request, &fam.settings) {
                    Ok(plan) if plan.num_ops() as u64 > MAX_CANDIDATE_OPS => {
                        Err(too_large(plan.num_ops() as u64, "its"))
                    }
                    Ok(plan) => {
                        built += 1;
                        let mut base = spec.clone();
                        base.training.micro_batch_size = shape.per_replica / m;
                        base.parallelism.tp = tp as u32;
                        // the replicas the GPUs hold at this pp and tp, not the spec's dp
                        base.parallelism.dp = (spec.cluster.gpus() / (pp * tp)) as u32;
                        let best = out
                            .all
                            .iter()
                            .filter_map(|c| c.step_time_s)
                            .fold(f64::INFINITY, f64::min);
                        climb(&base, (&fam.name, fam.v, &fam.texts), &plan, split, best)
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
    out.all.sort_by(by_time);
    Ok(out)
}

/// Why a configuration of `ops` operations is not simulated.
fn too_large(ops: u64, which: &str) -> String {
    format!(
        "a plan of {which} {} operations, more than the {} the search simulates per configuration",
        thousands(ops),
        thousands(MAX_CANDIDATE_OPS)
    )
}

/// A count with thousands separators: `8,388,608`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
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
    split: bool,
    planner: &mut P,
) -> Result<Recommendation, P::Stop> {
    let par = &spec.parallelism;
    let global =
        u64::from(spec.training.microbatches) * spec.training.micro_batch_size * u64::from(par.dp);
    let searched = search(spec, global, schedules, split, planner)?;
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
    let spec_m = u64::from(spec.training.microbatches);
    let spec_1f1b = if fewest_ops(u64::from(par.pp), None, spec_m) > MAX_CANDIDATE_OPS {
        None
    } else {
        match planner.plan("1f1b", &request) {
            Ok(plan) if plan.num_ops() as u64 > MAX_CANDIDATE_OPS => None,
            Ok(plan) => candidate(
                spec,
                ("1f1b", None, &[]),
                &plan,
                &spec
                    .training
                    .recompute_parts(spec.parallelism.layers_per_stage.len()),
                None,
            )
            .ok(),
            Err(Unbuilt::Refused(_)) => None,
            Err(Unbuilt::Stop(stop)) => return Err(stop),
        }
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
        split_searched: split,
        unmet: searched.unmet,
    })
}
