//! Schedules as plans: names from the built-in `schedules/` library and `.weave` files, compiled
//! for `--ranks`, `--microbatches`, `--stages-per-rank` and `--set NAME=VALUE`; and the text of
//! `pipeweave list` (library part) and `pipeweave check`.

use crate::load::{Loaded, read_file};
use crate::render::Sources;
use crate::{Failure, PlanArgs};
use pipeweave_diagnostics::Span;
use pipeweave_dsl::{Args, library};
use std::fmt::Write as _;
use std::path::Path;

/// Whether the PLAN argument names a schedule: a library name or a `.weave` file.
pub fn is_schedule(plan: &str) -> bool {
    library::get(plan).is_some() || plan.ends_with(".weave")
}

/// Parses `--set` values: integers, or `true` / `false` (1 / 0).
fn value(name: &str, text: &str) -> Result<i64, Failure> {
    match text.trim() {
        "true" => Ok(1),
        "false" => Ok(0),
        t => t.parse().map_err(|_| {
            Failure::Usage(format!(
                "--set {name}={text}: the value must be an integer, true or false"
            ))
        }),
    }
}

fn args(plan: &PlanArgs) -> Result<Args, Failure> {
    let (Some(ranks), Some(microbatches)) = (plan.params.ranks, plan.params.microbatches) else {
        return Err(Failure::Usage(format!(
            "`{}` is a schedule: give --ranks/-p and --microbatches/-m",
            plan.plan
        )));
    };
    let mut args = Args::new(ranks, microbatches);
    if let Some(v) = plan.params.stages_per_rank {
        args = args.with("v", i64::from(v));
    }
    for kv in &plan.params.set {
        let Some((name, text)) = kv.split_once('=') else {
            return Err(Failure::Usage(format!(
                "--set expects NAME=VALUE, found `{kv}`"
            )));
        };
        args = args.with(name.trim(), value(name, text)?);
    }
    Ok(args)
}

/// The source of a schedule: (name to show, text).
fn source(plan: &str) -> Result<(String, String), Failure> {
    if let Some(entry) = library::get(plan) {
        return Ok((
            format!("schedules/{}.weave", entry.name),
            entry.source.to_owned(),
        ));
    }
    let path = Path::new(plan);
    Ok((path.display().to_string(), read_file(path)?))
}

/// Compiles the schedule the arguments name.
pub fn load(plan: &PlanArgs, sources: &mut Sources) -> Result<Loaded, Failure> {
    let (name, text) = source(&plan.plan)?;
    let args = args(plan)?;
    let file = sources.add(name, text);
    let text = sources.source(file).unwrap_or_default();
    let compiled = pipeweave_dsl::compile(file, text, &args).map_err(Failure::Diagnostics)?;
    let origins = (0..compiled.plan.ranks())
        .map(|r| {
            (0..compiled.plan.program(r).len())
                .map(|i| {
                    compiled
                        .origins
                        .span(r, i)
                        .unwrap_or_else(|| Span::new(file, 0..0))
                })
                .collect()
        })
        .collect();
    Ok(Loaded {
        plan: compiled.plan,
        origins: Some(origins),
        name: plan.plan.clone(),
    })
}

/// `pipeweave check FILE`: syntax and names, without compiling a plan.
pub fn check(plan: &str, sources: &mut Sources) -> Result<String, Failure> {
    let (name, text) = source(plan)?;
    let file = sources.add(name.clone(), text);
    let diags = pipeweave_dsl::check(file, sources.source(file).unwrap_or_default());
    if diags.iter().any(|d| d.is_error()) {
        return Err(Failure::Diagnostics(diags));
    }
    Ok(format!("{name}: no problems found\n"))
}

/// The library part of `pipeweave list`: name, doc string, parameters.
pub fn list_text() -> String {
    let entries: Vec<_> = library::all().collect();
    let width = entries.iter().map(|e| e.name.len()).max().unwrap_or(0);
    let mut s = String::new();
    for e in &entries {
        let info = pipeweave_dsl::info(e.source);
        let doc = info.doc.unwrap_or_default();
        let first = doc.lines().next().unwrap_or_default();
        let _ = writeln!(s, "{:<width$}  library  {first}", e.name);
        for p in &info.params {
            let default = p
                .default
                .as_deref()
                .map(|d| format!(" (default {d})"))
                .unwrap_or_default();
            let help = p
                .help
                .as_deref()
                .map(|h| format!(": {h}"))
                .unwrap_or_default();
            let flag = if p.name == "v" {
                "-v".to_owned()
            } else {
                format!("--set {}=..", p.name)
            };
            let _ = writeln!(s, "{:<width$}    {flag}{default}{help}", "");
        }
    }
    s
}
