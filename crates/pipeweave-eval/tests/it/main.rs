//! Integration tests of pipeweave-eval: adapting specs to plans, comparison rows, the sweep
//! engine with its planner, the simulation's JSON keys, and the memory questions.

mod compare;
mod extreme;
mod fit;
mod laws;
mod questions;
mod simulation;
mod split;
mod sweep;

use pipeweave_check::ValidPlan;
use pipeweave_spec::Spec;

/// A shipped spec by name (with or without `.toml`).
pub fn load(name: &str) -> Spec {
    let shipped = pipeweave_spec::shipped_spec(name).expect("shipped spec");
    let (spec, diags) = pipeweave_spec::parse(shipped.source, pipeweave_diagnostics::FileId(0));
    assert!(diags.is_empty(), "{name}: {diags:?}");
    spec.expect("parses")
}

/// A library schedule compiled for P ranks and M micro-batches, validated.
pub fn library(name: &str, p: u32, m: u32) -> Result<ValidPlan, String> {
    let entry = pipeweave_dsl::library::get(name).ok_or("no such schedule")?;
    let args = pipeweave_dsl::Args::new(p, m);
    let compiled = pipeweave_dsl::compile(pipeweave_diagnostics::FileId(0), entry.source, &args)
        .map_err(|d| d[0].message.clone())?;
    Ok(pipeweave_check::validate(compiled.plan).expect("library schedules are valid"))
}

/// DeepSeek's DualPipe with its defaults (weight split and overlapped pairs on), validated.
pub fn dualpipe(p: u32, m: u32) -> Result<ValidPlan, String> {
    let plan = pipeweave_generators::dualpipe(p, m, pipeweave_generators::DualOptions::default())?;
    Ok(pipeweave_check::validate(plan).expect("DualPipe is valid"))
}
