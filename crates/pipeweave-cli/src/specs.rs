//! `--spec FILE|NAME`: reading a cluster spec (a TOML file, a shipped spec by name, or `default`),
//! taking P and M from it as defaults, and `simulate`/`show` on the spec's costs.

use crate::load::{Loaded, read_file};
use crate::render::Sources;
use crate::{Failure, PlanArgs};
use pipeweave_eval::StepReport;
use pipeweave_spec::{SHIPPED_SPECS, Spec, shipped_spec};
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
) -> Result<(Loaded, pipeweave_sim::Timeline, StepReport), Failure> {
    fill_defaults(plan, &spec.spec);
    let loaded = crate::load_valid(plan, sources)?;
    let problems = spec.spec.check_plan(&loaded.plan);
    if !problems.is_empty() {
        return Err(Failure::Diagnostics(problems));
    }
    let e = pipeweave_eval::evaluate(&spec.spec, &loaded.plan).map_err(Failure::Diagnostics)?;
    Ok((loaded, e.timeline, e.report))
}
