//! One simulated step for people: the plan's shape, the step's figures on a spec, and every
//! rank's times, as text or JSON.

use crate::format::{format_time, gib_number, gib_text, gpu_hours, percent, seconds, si, sig};
use crate::shown::lines;
use pipeweave_eval::{Costing, Shape, Simulation, StepReport};
use std::fmt::Write as _;

/// `4 ranks, 1 pipeline × 4 stages, 8 micro-batches, 1 model copy`.
pub fn shape_text(shape: &Shape) -> String {
    let k = shape.pipelines;
    format!(
        "{} ranks, {} pipeline{} × {} stages, {} micro-batches, {} model cop{}",
        shape.ranks,
        k,
        if k == 1 { "" } else { "s" },
        shape.stages_per_pipeline,
        shape.microbatches,
        shape.model_copies,
        if shape.model_copies == 1 { "y" } else { "ies" },
    )
}

/// Where the durations come from, in a sentence.
pub fn costing_text(costing: &Costing) -> String {
    let text = match costing {
        Costing::Unit => {
            "unit costs: F = I = W = 1, B = 2, F&B pair = F + B, no transfer time".to_owned()
        }
        Costing::Uniform(c) => format!(
            "uniform costs: F = {}, I = {}, W = {}, B = {}, F&B pair = {}, transfer time {}",
            sig(c.stage.f),
            sig(c.stage.i),
            sig(c.stage.w),
            sig(c.stage.b),
            c.pair.map_or("F + B".to_owned(), sig),
            sig(c.transfer)
        ),
        Costing::Measured { costs, file } => measured_text(costs, file),
        Costing::Spec {
            spec,
            default,
            rule,
        } => format!(
            "spec {}{}: {} × {}; times in seconds, {}",
            spec.name,
            if *default { " (built-in default)" } else { "" },
            spec.cluster.gpus(),
            spec.cluster.gpu_name(),
            if rule.strict {
                "every schedule on the spec's own shape".to_owned()
            } else {
                let mut how = "the spec adapted to each schedule's shape".to_owned();
                if rule.keep_dp {
                    how.push_str(", its dp kept");
                }
                if rule.global_batch {
                    how.push_str(", its global batch kept");
                }
                how
            }
        ),
    };
    lines(text)
}

/// Where measured costs come from: the file, the run's traces, its plan and when it ran.
pub fn measured_text(costs: &pipeweave_calibrate::Calibration, file: &str) -> String {
    let m = &costs.measured;
    let when = m
        .when
        .as_ref()
        .map_or("at a time the traces do not give".to_owned(), |w| {
            format!("on {w}")
        });
    if m.runs.len() > 2 {
        return many_runs_text(costs, file, &when);
    }
    let others = if m.runs.len() > 1 {
        let runs: Vec<String> = m.runs[1..]
            .iter()
            .map(|r| {
                format!(
                    "{} over {} step{} of {}",
                    pipeweave_diagnostics::visible(&r.traces.join(", ")),
                    r.steps,
                    if r.steps == 1 { "" } else { "s" },
                    pipeweave_diagnostics::visible(&r.plan)
                )
            })
            .collect();
        format!(", with {}", runs.join(" and "))
    } else {
        String::new()
    };
    format!(
        "measured costs from {}: {} over {} step{} of {}{others} {}",
        pipeweave_diagnostics::visible(file),
        pipeweave_diagnostics::visible(&m.traces.join(", ")),
        m.steps,
        if m.steps == 1 { "" } else { "s" },
        pipeweave_diagnostics::visible(&m.plan),
        run_shape(m, &when),
    )
}

/// [`measured_text`] for more than two runs measured together: the runs counted by plan (at most
/// [`PLANS_SHOWN`] plans named), not every trace, so that the note stays one short line however
/// many runs the costs hold; the file lists them in `[[measured.run]]`.
fn many_runs_text(costs: &pipeweave_calibrate::Calibration, file: &str, when: &str) -> String {
    let m = &costs.measured;
    // (plan, runs, steps), in the order of each plan's first run.
    let mut plans: Vec<(&str, usize, u64)> = Vec::new();
    for r in &m.runs {
        match plans.iter_mut().find(|(p, _, _)| *p == r.plan) {
            Some(g) => {
                g.1 += 1;
                g.2 += u64::from(r.steps);
            }
            None => plans.push((&r.plan, 1, u64::from(r.steps))),
        }
    }
    let mut named: Vec<String> = plans
        .iter()
        .take(PLANS_SHOWN)
        .map(|(plan, runs, steps)| {
            format!(
                "{runs} run{} of {} over {steps} step{} in all",
                if *runs == 1 { "" } else { "s" },
                pipeweave_diagnostics::visible(plan),
                if *steps == 1 { "" } else { "s" },
            )
        })
        .collect();
    if plans.len() > PLANS_SHOWN {
        named.push(format!("{} more plans", plans.len() - PLANS_SHOWN));
    }
    format!(
        "measured costs from {}: {} runs of {} plan{} ({}; their traces are listed in the file's `[[measured.run]]`) {}",
        pipeweave_diagnostics::visible(file),
        m.runs.len(),
        plans.len(),
        if plans.len() == 1 { "" } else { "s" },
        named.join(", "),
        run_shape(m, when),
    )
}

/// The end of the measured-costs note: the run's ranks, parts, micro-batches, time and clock.
fn run_shape(m: &pipeweave_calibrate::Measured, when: &str) -> String {
    format!(
        "on {} rank{} ({} part{}, {} micro-batches), {when}, on the {} clock; times in seconds",
        m.ranks,
        if m.ranks == 1 { "" } else { "s" },
        m.parts,
        if m.parts == 1 { "" } else { "s" },
        m.microbatches,
        pipeweave_diagnostics::visible(&m.clock),
    )
}

/// How many plans the note of more than two runs names.
const PLANS_SHOWN: usize = 3;

/// The figures of a step on a spec: time, throughput, efficiency, bubbles, communication,
/// GPU-hours, and a table of memory per rank.
pub fn step_report_text(r: &StepReport) -> String {
    let mut f = String::new();
    let _ = writeln!(
        f,
        "spec {}: {} × {}, {} pipeline ranks, {} stages per pipeline, {} micro-batches, {}",
        r.spec,
        r.gpus,
        r.gpu,
        r.pipeline_ranks,
        r.stages_per_pipeline,
        r.microbatches,
        if r.model_copies == 1 {
            "one model copy".to_string()
        } else {
            format!("{} model copies", r.model_copies)
        }
    );
    let _ = writeln!(f, "step time            {}", seconds(r.step_time_s));
    let _ = writeln!(f, "tokens per step      {}", si(r.tokens_per_step));
    let _ = writeln!(f, "tokens/s             {}", si(r.tokens_per_s));
    let _ = writeln!(
        f,
        "achieved of peak     {} ({} FLOPs per token)",
        percent(r.achieved_fraction_of_peak, 1),
        si(r.model_flops_per_token)
    );
    let _ = writeln!(f, "bubble fraction      {}", percent(r.bubble_fraction, 1));
    let _ = writeln!(
        f,
        "exposed comm         {} per rank (mean), {} (worst rank), {} summed over the ranks",
        seconds(r.exposed_comm_per_rank_mean_s),
        seconds(r.exposed_comm_per_rank_max_s),
        seconds(r.exposed_comm_total_s)
    );
    let b = &r.breakdown_per_rank_mean_s;
    let _ = writeln!(
        f,
        "step per rank (mean) compute {}, overlap slowdown {}, exposed TP {}, all-to-all {}, p2p {}, bubble {}, exposed DP {}, optimizer {}",
        seconds(b.compute_s),
        seconds(b.overlap_slowdown_s),
        seconds(b.exposed_tp_s),
        seconds(b.exposed_all_to_all_s),
        seconds(b.exposed_p2p_s),
        seconds(b.bubble_s),
        seconds(b.exposed_dp_s),
        seconds(b.optimizer_s)
    );
    let v = &r.volume_per_gpu_bytes;
    let _ = writeln!(
        f,
        "bytes per GPU, step  p2p {}, TP {}, all-to-all {}, DP {}",
        gib_text(v.p2p),
        gib_text(v.tp),
        gib_text(v.all_to_all),
        gib_text(v.dp)
    );
    let _ = writeln!(
        f,
        "GPU-hours / M tokens {} (bubbles {})",
        gpu_hours(r.gpu_hours_per_million_tokens),
        gpu_hours(r.bubble_gpu_hours_per_million_tokens)
    );
    let _ = writeln!(
        f,
        "whole run            {} tokens, {} steps, {} GPU-hours ({} lost to bubbles)",
        si(r.run_tokens),
        si(r.run_steps),
        si(r.run_gpu_hours),
        si(r.bubble_gpu_hours_run)
    );
    let _ = writeln!(
        f,
        "memory per GPU in GiB, of {}, limit {} (activations: peak live micro-batch stages)",
        gib_number(r.gpu_memory_bytes),
        gib_number(r.memory_limit_bytes)
    );
    let _ = writeln!(
        f,
        "  rank  params   grads   optim   activ  (peak)    bufs reserve   total"
    );
    for rank in &r.ranks {
        let _ = writeln!(
            f,
            "{:>6} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}{}",
            rank.rank,
            gib_number(rank.memory.params),
            gib_number(rank.memory.grads),
            gib_number(rank.memory.optimizer),
            gib_number(rank.memory.activations),
            format!("({})", rank.peak_activations),
            gib_number(rank.memory.buffers),
            gib_number(rank.memory.reserve),
            gib_number(rank.memory.total()),
            if rank.out_of_memory {
                "  out of memory"
            } else {
                ""
            }
        );
    }
    if r.out_of_memory {
        let _ = writeln!(
            f,
            "OUT OF MEMORY: at least one rank needs more than its GPU's memory less the headroom"
        );
    }
    lines(f)
}

/// `simulate`'s text: the plan and its shape; with unit or uniform costs the makespan, bubble and
/// a table of every rank's times in units; on a spec the step's figures, then every rank's times
/// in seconds.
pub fn simulation_text(sim: &Simulation) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "plan             {}", sim.plan);
    let _ = writeln!(s, "shape            {}", shape_text(&sim.shape));
    if let Some(fitted) = sim.fitted.as_ref().filter(|f| !f.is_empty()) {
        let _ = writeln!(s, "spec fitted      {}", fitted.join("; "));
    }
    if let Some(report) = &sim.spec {
        s.push_str(&step_report_text(report));
        let _ = writeln!(
            s,
            "time per rank\n  rank  busy        idle        longest idle  exposed comm"
        );
        for m in &sim.ranks {
            let _ = writeln!(
                s,
                "{:>6}  {:<10}  {:<10}  {:<12}  {}",
                m.rank,
                seconds(m.busy),
                seconds(m.idle),
                seconds(m.longest_idle),
                seconds(m.exposed_comm)
            );
        }
        return s;
    }
    let _ = writeln!(s, "makespan         {}", format_time(sim.makespan));
    if let Some(step) = sim.step_time {
        let _ = writeln!(
            s,
            "step time        {} (the makespan and the run's time outside the actions)",
            format_time(step)
        );
    }
    let _ = writeln!(
        s,
        "bubble fraction  {:.4} ({})",
        sim.bubble_fraction,
        percent(sim.bubble_fraction, 2)
    );
    if sim.exposed_comm_total > 0.0 {
        let _ = writeln!(
            s,
            "exposed comm     {} per rank (mean), {} (worst), {} in all",
            format_time(sim.exposed_comm_per_rank_mean),
            format_time(sim.exposed_comm_per_rank_max),
            format_time(sim.exposed_comm_total)
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "rank  busy        idle        longest idle  peak activations"
    );
    for m in &sim.ranks {
        let _ = writeln!(
            s,
            "{:<4}  {:<10}  {:<10}  {:<12}  {}",
            m.rank,
            format_time(m.busy),
            format_time(m.idle),
            format_time(m.longest_idle),
            m.peak_activations
        );
    }
    lines(s)
}

/// `simulate`'s JSON (`schemas/pipeweave-simulate.v2.schema.json`): the shape, the step's figures
/// and every rank's times; on a spec, times in seconds (`time_unit`), the `spec` figures and every
/// rank's memory.
pub fn simulation_json(sim: &Simulation) -> String {
    crate::json::json(sim)
}
