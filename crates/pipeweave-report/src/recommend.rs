//! `recommend`: search pipeline degree, schedule, micro-batch count and stages per rank on a spec's
//! cluster, simulate every candidate, and explain the choice and every rejection.
//!
//! The search keeps the spec's GPUs, tensor parallelism and global batch (sequences per step over
//! all data-parallel replicas) fixed. For each pipeline degree P that divides the GPUs left by
//! tensor parallelism (data parallelism takes the rest), fits the layers, leaves a data-parallel
//! degree that expert parallelism divides and that divides the global batch, it tries every
//! schedule (and for schedules with a `v` parameter, 2 and 4 stages per rank) with micro-batch
//! counts M that divide the sequences of one replica (the micro-batch size is the rest), largest
//! first: a larger M never raises a schedule's bubble and shrinks each micro-batch's activations,
//! so only the [`M_PER_CONFIG`] largest M that a schedule accepts are simulated.
//! Plans come from a [`Planner`] (the command line compiles library schedules and calls plugins);
//! this module does no IO.

use crate::compare::{Figures, fit_spec, seconds, si};
use pipeweave_plan::Plan;
use pipeweave_spec::{Spec, gib};
use std::cmp::Ordering;
use std::fmt::Write as _;

/// How many micro-batch counts per (P, schedule, v) are simulated.
pub const M_PER_CONFIG: usize = 3;

/// Stages per rank tried for schedules that take `v`.
pub const V_VALUES: [u32; 2] = [2, 4];

/// The largest micro-batch count tried.
pub const MAX_M: u64 = 1024;

/// A schedule the search may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchSchedule {
    pub name: String,
    /// Whether it takes the number of stages per rank (`v`).
    pub takes_v: bool,
}

/// Builds the plan of a schedule (validated), or says why it cannot.
pub trait Planner {
    fn plan(
        &self,
        schedule: &str,
        ranks: u32,
        microbatches: u32,
        v: Option<u32>,
    ) -> Result<Plan, String>;
}

/// One simulated configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub schedule: String,
    pub pp: u32,
    pub dp: u32,
    pub microbatches: u32,
    pub micro_batch_size: u64,
    /// Stages per rank and model copy (from the plan).
    pub stages_per_rank: u32,
    /// `v` as given to the schedule, if it takes one.
    pub v: Option<u32>,
    pub model_copies: u32,
    pub figures: Figures,
    pub run_gpu_hours: f64,
}

impl Candidate {
    /// `zb-h1, PP 8, M 32 × 1 sequence, v 2`.
    pub fn label(&self) -> String {
        let v = self.v.map(|v| format!(", v {v}")).unwrap_or_default();
        format!(
            "{}, PP {}, M {} × {} seq{}",
            self.schedule, self.pp, self.microbatches, self.micro_batch_size, v
        )
    }

    fn memory_text(&self) -> String {
        let f = &self.figures;
        format!(
            "{:.1} GiB of {:.1} ({:.0}%)",
            gib(f.memory_bytes),
            gib(f.gpu_memory_bytes),
            100.0 * f.memory_bytes / f.gpu_memory_bytes.max(1.0)
        )
    }
}

/// Why a schedule (in one configuration family) is not the choice.
#[derive(Debug, Clone, PartialEq)]
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

/// The outcome of a search.
#[derive(Debug, Clone, PartialEq)]
pub struct Recommendation {
    pub spec: String,
    pub gpus: u64,
    pub gpu: String,
    pub tp: u32,
    pub global_sequences: u64,
    pub sequence_length: u64,
    pub total_tokens: f64,
    pub choice: Option<Candidate>,
    /// The fastest candidate of any memory (said when none fits).
    pub fastest: Option<Candidate>,
    /// The fastest candidates after the choice, one per schedule.
    pub runners_up: Vec<Candidate>,
    pub verdicts: Vec<Verdict>,
    /// Pipeline degrees left out before any schedule, with the reason.
    pub rejected_pp: Vec<(u32, String)>,
    /// 1F1B at the choice's P and M, and at the spec's own P and M.
    pub same_shape_1f1b: Option<Candidate>,
    pub spec_1f1b: Option<Candidate>,
    pub spec_pp: u32,
    pub spec_microbatches: u32,
    pub simulated: usize,
    pub out_of_memory: usize,
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

/// Simulates `plan` on `spec` reshaped to P = `pp` with micro-batches of `mbs` sequences.
fn evaluate(
    spec: &Spec,
    schedule: &str,
    v: Option<u32>,
    mbs: u64,
    plan: &Plan,
) -> Result<Candidate, String> {
    let mut base = spec.clone();
    base.training.micro_batch_size = mbs;
    let (fitted, _) = fit_spec(&base, plan)?;
    let (_, _, report) = pipeweave_spec::evaluate(&fitted, plan).map_err(|d| {
        d.iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; ")
    })?;
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

/// Searches the configurations of `spec` with `schedules` (see the module documentation).
pub fn recommend(
    spec: &Spec,
    schedules: &[SearchSchedule],
    planner: &dyn Planner,
) -> Recommendation {
    let par = &spec.parallelism;
    let global =
        u64::from(spec.training.microbatches) * spec.training.micro_batch_size * u64::from(par.dp);
    let per_tp = spec.cluster.gpus() / u64::from(par.tp.max(1));
    let mut rejected_pp = Vec::new();
    let mut all: Vec<Candidate> = Vec::new();
    // Per schedule family (name and v): the reason it failed at the spec's P, or the first one.
    let mut families: Vec<(String, Option<u32>)> = Vec::new();
    for s in schedules {
        if s.takes_v {
            families.extend(V_VALUES.iter().map(|&v| (s.name.clone(), Some(v))));
        } else {
            families.push((s.name.clone(), None));
        }
    }
    let mut unmet_reason: Vec<Option<(bool, String)>> = vec![None; families.len()];
    let mut unmet = 0;
    for pp in divisors(per_tp) {
        if let Some(why) = pp_problem(spec, pp, global) {
            rejected_pp.push((pp as u32, why));
            continue;
        }
        let pp32 = pp as u32;
        let dp = per_tp / pp;
        let per_replica = global / dp;
        let ms: Vec<u64> = divisors(per_replica)
            .into_iter()
            .rev()
            .filter(|&m| m <= MAX_M)
            .collect();
        for (k, (name, v)) in families.iter().enumerate() {
            if v.is_some_and(|v| u64::from(v) * pp > spec.model.layers) {
                continue;
            }
            let mut built = 0;
            for &m in &ms {
                if built == M_PER_CONFIG {
                    break;
                }
                match planner.plan(name, pp32, m as u32, *v) {
                    Ok(plan) => {
                        built += 1;
                        match evaluate(spec, name, *v, per_replica / m, &plan) {
                            Ok(c) => all.push(c),
                            Err(reason) => {
                                unmet += 1;
                                record(&mut unmet_reason[k], pp32 == par.pp, reason);
                            }
                        }
                    }
                    Err(reason) => {
                        unmet += 1;
                        record(&mut unmet_reason[k], pp32 == par.pp, reason);
                    }
                }
            }
        }
    }
    all.sort_by(by_time);
    let fits = |c: &&Candidate| !c.figures.out_of_memory;
    let choice = all.iter().find(fits).cloned();
    let family_name = |name: &str, v: Option<u32>| match v {
        Some(v) => format!("{name} (v {v})"),
        None => name.to_owned(),
    };
    let mut verdicts: Vec<Verdict> = families
        .iter()
        .zip(unmet_reason)
        .map(|((name, v), reason)| {
            let mine = |c: &&Candidate| c.schedule == *name && c.v == *v;
            Verdict {
                schedule: family_name(name, *v),
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
    let runners_up = verdicts
        .iter()
        .filter_map(|v| v.best.clone())
        .filter(|c| choice.as_ref() != Some(c))
        .take(5)
        .collect();
    let find_1f1b = |pp: u32, m: u32| {
        all.iter()
            .find(|c| c.schedule == "1f1b" && c.pp == pp && c.microbatches == m)
            .cloned()
    };
    let same_shape_1f1b = choice
        .as_ref()
        .and_then(|c| find_1f1b(c.pp, c.microbatches));
    let spec_1f1b = match planner.plan("1f1b", par.pp, spec.training.microbatches, None) {
        Ok(plan) => evaluate(spec, "1f1b", None, spec.training.micro_batch_size, &plan).ok(),
        Err(_) => None,
    };
    Recommendation {
        spec: spec.name.clone(),
        gpus: spec.cluster.gpus(),
        gpu: spec.cluster.gpu.clone(),
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
    }
}

/// Keeps the first reason, preferring one met at the spec's own pipeline degree.
fn record(slot: &mut Option<(bool, String)>, at_spec_pp: bool, reason: String) {
    match slot {
        None => *slot = Some((at_spec_pp, reason)),
        Some((false, _)) if at_spec_pp => *slot = Some((true, reason)),
        _ => {}
    }
}

fn pct_slower(c: &Candidate, base: &Candidate) -> String {
    let r = c.figures.step_time_s / base.figures.step_time_s - 1.0;
    format!("{:+.1}%", r * 100.0)
}

fn savings(choice: &Candidate, base: &Candidate, what: &str) -> String {
    let saved = base.run_gpu_hours - choice.run_gpu_hours;
    let share = if base.run_gpu_hours > 0.0 {
        saved / base.run_gpu_hours
    } else {
        0.0
    };
    let oom = if base.figures.out_of_memory {
        " (that 1F1B would not fit in memory)"
    } else {
        ""
    };
    format!(
        "{} GPU-hours ({:.1}%) over 1F1B {what} ({}){oom}",
        si(saved),
        share * 100.0,
        base.label()
    )
}

/// The one-page plan.
pub fn recommend_text(r: &Recommendation) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "recommendation for spec {}: {} × {}, tp {}, global batch {} sequences of {} tokens, {} tokens in the run",
        r.spec,
        r.gpus,
        r.gpu,
        r.tp,
        r.global_sequences,
        r.sequence_length,
        si(r.total_tokens)
    );
    let _ = writeln!(
        s,
        "searched: {} configurations simulated ({} out of memory), {} not buildable",
        r.simulated, r.out_of_memory, r.unmet
    );
    s.push('\n');
    match &r.choice {
        Some(c) => {
            let f = &c.figures;
            let _ = writeln!(s, "choice        {}", c.label());
            let _ = writeln!(
                s,
                "              dp {}, {} stage{} per rank{}, {} model cop{}",
                c.dp,
                c.stages_per_rank,
                if c.stages_per_rank == 1 { "" } else { "s" },
                // With replicas every rank hosts that many stages of each copy.
                if c.model_copies == 1 {
                    ""
                } else {
                    " and model copy"
                },
                c.model_copies,
                if c.model_copies == 1 { "y" } else { "ies" }
            );
            let _ = writeln!(s, "step time     {}", seconds(f.step_time_s));
            let _ = writeln!(s, "bubble        {:.1}%", f.bubble_fraction * 100.0);
            let _ = writeln!(s, "memory/GPU    {}", c.memory_text());
            let _ = writeln!(s, "tokens/s      {}", si(f.tokens_per_s));
            let _ = writeln!(s, "whole run     {} GPU-hours", si(c.run_gpu_hours));
            if let Some(b) = &r.same_shape_1f1b {
                let _ = writeln!(s, "saves         {}", savings(c, b, "at the same shape"));
            }
            if let Some(b) = &r.spec_1f1b {
                let _ = writeln!(s, "              {}", savings(c, b, "as the spec has it"));
            }
        }
        None => {
            let _ = writeln!(
                s,
                "choice        none: no configuration fits in {:.1} GiB per GPU under the spec's memory model",
                r.verdicts
                    .iter()
                    .find_map(|v| v.least_memory.as_ref())
                    .map_or(0.0, |c| gib(c.figures.gpu_memory_bytes))
            );
            let _ = writeln!(
                s,
                "              (activations are counted without recomputation; below, how far each option is)"
            );
            if let Some(c) = &r.fastest {
                let _ = writeln!(
                    s,
                    "fastest       {}: {}, bubble {:.1}%, if memory allowed ({})",
                    c.label(),
                    seconds(c.figures.step_time_s),
                    c.figures.bubble_fraction * 100.0,
                    c.memory_text()
                );
            }
        }
    }
    if !r.runners_up.is_empty() {
        s.push_str("\nrunners-up (the fastest of each other schedule that fits)\n");
        for c in &r.runners_up {
            let vs = r
                .choice
                .as_ref()
                .map(|b| format!(", {} vs the choice", pct_slower(c, b)))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "  {:<44} {:>10}  bubble {:>5.1}%  {}{vs}",
                c.label(),
                seconds(c.figures.step_time_s),
                c.figures.bubble_fraction * 100.0,
                c.memory_text()
            );
        }
    }
    s.push_str("\nwhy not the others\n");
    for v in &r.verdicts {
        let why = match (&v.best, &v.least_memory, &r.choice) {
            (Some(c), _, Some(choice)) if c == choice => continue,
            (Some(c), _, Some(choice)) => format!(
                "worse time: {} ({}) at best, {}",
                seconds(c.figures.step_time_s),
                pct_slower(c, choice),
                c.label()
            ),
            (Some(c), _, None) => format!("fits: {}", c.label()),
            (None, Some(c), _) => format!(
                "memory: needs at least {} ({}, {})",
                c.memory_text(),
                c.label(),
                seconds(c.figures.step_time_s)
            ),
            (None, None, _) => format!(
                "requirement: {}",
                v.unmet
                    .as_deref()
                    .unwrap_or("no configuration could be built")
            ),
        };
        let _ = writeln!(s, "  {:<22} {why}", v.schedule);
        // A requirement that ruled out some shapes of a schedule that was built elsewhere.
        if let (Some(reason), true) = (&v.unmet, v.least_memory.is_some()) {
            let _ = writeln!(s, "  {:<22} not buildable in some shapes: {reason}", "");
        }
    }
    if !r.rejected_pp.is_empty() {
        s.push_str("\npipeline degrees left out\n");
        // Degrees with the same reason share a line.
        let mut groups: Vec<(Vec<u32>, &str)> = Vec::new();
        for (pp, why) in &r.rejected_pp {
            match groups.iter_mut().find(|(_, w)| *w == why.as_str()) {
                Some((pps, _)) => pps.push(*pp),
                None => groups.push((vec![*pp], why.as_str())),
            }
        }
        for (pps, why) in groups {
            let list: Vec<String> = pps.iter().map(u32::to_string).collect();
            let _ = writeln!(s, "  PP {}: {why}", list.join(", "));
        }
    }
    s
}
