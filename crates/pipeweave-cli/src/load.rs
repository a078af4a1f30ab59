//! Turning the PLAN argument into a plan: plan files (actions, JSON) today; schedule names, `.weave`
//! files and plugins plug in here.

use crate::render::Sources;
use crate::{Failure, PlanArgs};
use pipeweave_check::{Problem, ProblemKind};
use pipeweave_diagnostics::{Diagnostic, Span};
use pipeweave_plan::Plan;
use std::path::Path;

/// A plan and where its actions came from.
#[derive(Debug)]
pub struct Loaded {
    pub plan: Plan,
    /// `origins[r][i]`: the source span that produced rank r's i-th action, when known.
    pub origins: Option<Vec<Vec<Span>>>,
    /// What to call the plan in messages (a file name or a schedule name).
    pub name: String,
}

pub fn read_file(path: &Path) -> Result<String, Failure> {
    let cannot = |e: &dyn std::fmt::Display| {
        Failure::Invalid(format!("error: cannot read `{}`: {e}\n", path.display()))
    };
    let bytes = std::fs::read(path).map_err(|e| cannot(&e))?;
    pipeweave_diagnostics::text_from_bytes(bytes, pipeweave_diagnostics::FileId(0))
        .map_err(|d| cannot(&d.message))
}

/// Loads the plan the arguments name.
pub fn load(args: &PlanArgs, sources: &mut Sources) -> Result<Loaded, Failure> {
    if crate::schedule::is_schedule(&args.plan) {
        return crate::schedule::load(args, sources);
    }
    if let Some(target) = args.plan.strip_prefix(crate::plugins::PREFIX) {
        return crate::plugins::load(target, args);
    }
    // Only a file is a plan file: a folder that happens to share a schedule's name is not.
    let path = Path::new(&args.plan);
    if !path.is_file() && crate::plugins::exists(&args.plan, &args.params.plugin_dirs) {
        return crate::plugins::load(&args.plan, args);
    }
    if !path.is_file() {
        return Err(Failure::Invalid(format!(
            "error: no plan file or schedule named `{}`\n",
            args.plan
        )));
    }
    if args.params.ranks.is_some()
        || args.params.microbatches.is_some()
        || args.params.stages_per_rank.is_some()
        || !args.params.set.is_empty()
    {
        return Err(Failure::Usage(format!(
            "`{}` is a plan file: --ranks, --microbatches, --stages-per-rank and --set apply to schedules only",
            args.plan
        )));
    }
    let text = read_file(path)?;
    let name = path.display().to_string();
    let file = sources.add(name.clone(), text);
    let text = sources.source(file).unwrap_or_default();
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
    {
        return match pipeweave_export::read_json(text, file) {
            Ok(p) => Ok(Loaded {
                plan: p.plan,
                origins: None,
                name,
            }),
            Err(diags) => Err(Failure::Diagnostics(diags)),
        };
    }
    match pipeweave_export::read_actions(text, file, args.params.pipelines) {
        Ok(f) => {
            let origins = f
                .spans
                .into_iter()
                .map(|r| r.into_iter().map(|range| Span::new(file, range)).collect())
                .collect();
            Ok(Loaded {
                plan: f.plan,
                origins: Some(origins),
                name,
            })
        }
        Err(diags) => Err(Failure::Diagnostics(diags)),
    }
}

/// Turns validator problems into diagnostics that point at the actions' sources.
pub fn problem_diagnostics(loaded: &Loaded, problems: &[Problem]) -> Vec<Diagnostic> {
    let origin = |rank: u32, position: Option<usize>| -> Option<Span> {
        let spans = loaded.origins.as_ref()?.get(rank as usize)?;
        match position {
            Some(p) => spans.get(p).cloned(),
            None => spans.last().cloned(),
        }
    };
    problems
        .iter()
        .map(|p| {
            let mut d = Diagnostic::error(format!("{}: {}", p.location(), p.message()));
            if let Some(span) = origin(p.rank, p.position) {
                let label = match p.position {
                    Some(_) => "this action".to_string(),
                    None => format!("rank {}'s program ends here", p.rank),
                };
                d = d.with_span_label(span, label);
            }
            if let ProblemKind::Deadlock { cycle } = &p.kind {
                for (k, w) in cycle.iter().enumerate() {
                    match origin(w.rank, w.position) {
                        Some(span) if k > 0 => d = d.with_label(span, w.to_string()),
                        _ => d = d.with_note(w.to_string()),
                    }
                }
                if let Some(first) = cycle.first()
                    && origin(first.rank, first.position).is_some()
                {
                    d.span_label = Some(first.to_string());
                    d.notes.retain(|n| *n != first.to_string());
                }
            }
            d
        })
        .collect()
}
