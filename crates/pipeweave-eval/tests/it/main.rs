//! Integration tests of pipeweave-eval: adapting specs to plans, comparison rows, the sweep
//! engine with its planner, the simulation's JSON keys, and the memory questions.

mod compare;
mod fit;
mod laws;
mod questions;
mod simulation;
mod sweep;

use pipeweave_plan::Plan;
use pipeweave_spec::Spec;

/// A shipped spec by name (with or without `.toml`).
pub fn load(name: &str) -> Spec {
    let shipped = pipeweave_spec::shipped_spec(name).expect("shipped spec");
    let (spec, diags) = pipeweave_spec::parse(shipped.source, pipeweave_diagnostics::FileId(0));
    assert!(diags.is_empty(), "{name}: {diags:?}");
    spec.expect("parses")
}

/// A library schedule compiled for P ranks and M micro-batches.
pub fn library(name: &str, p: u32, m: u32) -> Result<Plan, String> {
    let entry = pipeweave_dsl::library::get(name).ok_or("no such schedule")?;
    let args = pipeweave_dsl::Args::new(p, m);
    pipeweave_dsl::compile(pipeweave_diagnostics::FileId(0), entry.source, &args)
        .map(|c| c.plan)
        .map_err(|d| d[0].message.clone())
}

/// DeepSeek's DualPipe with its defaults (weight split and overlapped pairs on).
pub fn dualpipe(p: u32, m: u32) -> Result<Plan, String> {
    pipeweave_generators::dualpipe(p, m, pipeweave_generators::DualOptions::default())
}
