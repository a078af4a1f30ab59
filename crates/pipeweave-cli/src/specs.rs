//! `--spec FILE|NAME`: reading a cluster spec (a TOML file, a shipped spec by name, or `default`),
//! taking P and M from it as defaults, and `simulate`/`show` on the spec's costs.

use crate::load::{Loaded, read_file};
use crate::render::Sources;
use crate::{Failure, PlanArgs};
use pipeweave_spec::{Report, SHIPPED_SPECS, Spec, shipped_spec};
use std::fmt::Write as _;
use std::path::Path;

/// A spec and what to call it.
#[derive(Debug, Clone)]
pub struct LoadedSpec {
    pub spec: Spec,
    /// Whether it is the built-in default (no `--spec`, or `--spec default`).
    pub default: bool,
}

/// Reads the spec `arg` names: an existing file first, then a shipped spec's name.
pub fn load(arg: &str, sources: &mut Sources) -> Result<LoadedSpec, Failure> {
    let path = Path::new(arg);
    let (name, text, default) = if path.is_file() {
        (path.display().to_string(), read_file(path)?, false)
    } else if let Some(shipped) = shipped_spec(arg) {
        (
            shipped.file.to_owned(),
            shipped.source.to_owned(),
            shipped.name == "default",
        )
    } else {
        let names: Vec<&str> = SHIPPED_SPECS.iter().map(|s| s.name).collect();
        return Err(Failure::Invalid(format!(
            "error: no spec file or shipped spec named `{arg}` (shipped: {}, or default)\n",
            names.join(", ")
        )));
    };
    let file = sources.add(name, text);
    let (spec, diags) = pipeweave_spec::parse(sources.source(file).unwrap_or_default(), file);
    match spec {
        Some(spec) if !diags.iter().any(|d| d.is_error()) => {
            for d in &diags {
                eprint!("{}", sources.render(d));
            }
            Ok(LoadedSpec { spec, default })
        }
        _ => Err(Failure::Diagnostics(diags)),
    }
}

/// The spec `--spec` names, or the built-in default.
pub fn load_or_default(arg: Option<&str>, sources: &mut Sources) -> Result<LoadedSpec, Failure> {
    load(arg.unwrap_or("default"), sources)
}

/// Whether the PLAN argument builds a plan from parameters (a schedule or plugin), not a file.
pub fn takes_parameters(plan: &str) -> bool {
    plan.ends_with(".weave") || !Path::new(plan).exists()
}

/// Fills `-p` and `-m` of a schedule from the spec (`parallelism.pp`, `training.microbatches`)
/// where the command line left them out.
pub fn fill_defaults(args: &mut PlanArgs, spec: &Spec) {
    if takes_parameters(&args.plan) {
        args.params.ranks = args.params.ranks.or(Some(spec.parallelism.pp));
        args.params.microbatches = args
            .params
            .microbatches
            .or(Some(spec.training.microbatches));
    }
}

/// Loads and validates the plan, checks it against the spec and evaluates it on the spec's costs.
pub fn evaluate(
    plan: &mut PlanArgs,
    spec: &LoadedSpec,
    sources: &mut Sources,
) -> Result<(Loaded, pipeweave_sim::Timeline, Report), Failure> {
    fill_defaults(plan, &spec.spec);
    let loaded = crate::load_valid(plan, sources)?;
    let problems = spec.spec.check_plan(&loaded.plan);
    if !problems.is_empty() {
        return Err(Failure::Diagnostics(problems));
    }
    let (_, timeline, report) =
        pipeweave_spec::evaluate(&spec.spec, &loaded.plan).map_err(Failure::Diagnostics)?;
    Ok((loaded, timeline, report))
}

/// `simulate --spec`: the plan, its shape and the spec's report, then the time of every rank.
pub fn simulate_text(loaded: &Loaded, t: &pipeweave_sim::Timeline, report: &Report) -> String {
    let secs = pipeweave_report::seconds;
    let mut s = String::new();
    let _ = writeln!(s, "plan             {}", loaded.name);
    let _ = writeln!(s, "shape            {}", crate::describe(&loaded.plan));
    let _ = write!(s, "{report}");
    let _ = writeln!(
        s,
        "time per rank\n  rank  busy        idle        longest idle  exposed comm"
    );
    for (r, m) in t.ranks.iter().enumerate() {
        let _ = writeln!(
            s,
            "{r:>6}  {:<10}  {:<10}  {:<12}  {}",
            secs(m.busy),
            secs(m.idle),
            secs(m.longest_idle),
            secs(m.exposed_comm)
        );
    }
    s
}

/// `simulate --spec --format json`: the keys of the unit-cost JSON (times in seconds) and the
/// spec's figures.
pub fn simulate_json(loaded: &Loaded, t: &pipeweave_sim::Timeline, report: &Report) -> String {
    use serde_json::json;
    let ranks: Vec<serde_json::Value> = t
        .ranks
        .iter()
        .zip(&report.ranks)
        .enumerate()
        .map(|(r, (m, rr))| {
            json!({
                "rank": r,
                "busy": m.busy,
                "idle": m.idle,
                "longest_idle": m.longest_idle,
                "peak_activations": m.peak_activations,
                "exposed_comm": m.exposed_comm,
                "memory": {
                    "params_bytes": rr.memory.params,
                    "grads_bytes": rr.memory.grads,
                    "optimizer_bytes": rr.memory.optimizer,
                    "activations_bytes": rr.memory.activations,
                    "total_bytes": rr.memory.total(),
                    "fraction_of_gpu": rr.memory_fraction,
                    "out_of_memory": rr.out_of_memory,
                },
            })
        })
        .collect();
    let v = json!({
        "plan": loaded.name,
        "num_ranks": loaded.plan.ranks(),
        "pipelines": loaded.plan.pipelines().len(),
        "stages_per_pipeline": loaded.plan.stages_per_pipeline(),
        "microbatches": loaded.plan.num_microbatches(),
        "model_copies": loaded.plan.model_copies(),
        "time_unit": "s",
        "makespan": t.timing.makespan,
        "bubble_fraction": t.bubble_fraction,
        "exposed_comm": t.exposed_comm,
        "spec": {
            "name": report.spec,
            "gpu": report.gpu,
            "gpus": report.gpus,
            "step_time_s": report.step_time_s,
            "tokens_per_step": report.tokens_per_step,
            "tokens_per_s": report.tokens_per_s,
            "model_flops_per_token": report.model_flops_per_token,
            "achieved_fraction_of_peak": report.achieved_fraction_of_peak,
            "exposed_comm_s": report.exposed_comm_s,
            "exposed_comm_fraction": report.exposed_comm_fraction,
            "gpu_memory_bytes": report.gpu_memory_bytes,
            "out_of_memory": report.out_of_memory,
            "gpu_hours_per_million_tokens": report.gpu_hours_per_million_tokens,
            "bubble_gpu_hours_per_million_tokens": report.bubble_gpu_hours_per_million_tokens,
            "run_tokens": report.run_tokens,
            "run_steps": report.run_steps,
            "run_gpu_hours": report.run_gpu_hours,
            "bubble_gpu_hours_run": report.bubble_gpu_hours_run,
        },
        "ranks": ranks,
    });
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}
