//! Building a source's plan for given parameters, validated, with the place in the source of
//! every action where there is one.

use crate::declared::Declared;
use crate::failure::Failure;
use crate::files::Files;
use crate::host::{Host, PLUGIN_PREFIX, PluginInfo, PluginRequest, shown_name};
use crate::params::Params;
use pipeweave_check::{Problem, ProblemKind, ValidPlan};
use pipeweave_diagnostics::{Diagnostic, FileId, Span};
use pipeweave_plan::Plan;

/// A validated plan and where its actions came from.
#[derive(Debug, Clone)]
pub struct Built {
    /// The plan, through the validator.
    pub plan: ValidPlan,
    /// `origins[r][i]`: the source span that produced rank r's i-th action, when known.
    pub origins: Option<Vec<Vec<Span>>>,
    /// What to call the plan in messages: a file or schedule name, `plugin:NAME` for a plugin.
    pub name: String,
}

/// Validates `plan`; the problems point at the actions' sources where `origins` knows them.
fn validated(plan: Plan, origins: Option<Vec<Vec<Span>>>, name: String) -> Result<Built, Failure> {
    match pipeweave_check::validate(plan) {
        Ok(plan) => Ok(Built {
            plan,
            origins,
            name,
        }),
        Err(problems) => Err(Failure::from_diagnostics(problem_diagnostics(
            origins.as_deref(),
            &problems,
        ))),
    }
}

/// Compiles the schedule in `file` (which declares `declared`) for `params`.
pub(crate) fn weave(
    name: &str,
    file: FileId,
    declared: &Declared,
    params: &Params,
    files: &Files,
) -> Result<Built, Failure> {
    let (Some(ranks), Some(microbatches)) = (params.ranks, params.microbatches) else {
        return Err(Failure::usage(format!(
            "`{name}` is a schedule: give --ranks/-p and --microbatches/-m"
        )));
    };
    let text = files.text(file).unwrap_or_default();
    if let Some(flag) = undeclared(declared, params) {
        // The command line names a parameter the schedule does not have, unless the file is
        // broken (then its parameters are not known, and its errors are the news).
        let problems = pipeweave_dsl::check(file, text);
        if problems.iter().any(|d| d.is_error()) {
            return Err(Failure::from_diagnostics(problems));
        }
        let names: Vec<&str> = declared.params.iter().map(|p| p.name.as_str()).collect();
        let known = if names.is_empty() {
            "it takes only P and M".to_owned()
        } else {
            format!("its parameters: {}", names.join(", "))
        };
        return Err(Failure::usage(format!(
            "{flag}: `{name}` has no such parameter ({known})"
        )));
    }
    let mut args = pipeweave_dsl::Args::new(ranks, microbatches);
    if let Some(v) = params.stages_per_rank {
        args = args.with("v", i64::from(v));
    }
    for s in &params.settings {
        args = args.with(&s.name, s.integer()?);
    }
    let compiled = pipeweave_dsl::compile(file, text, &args).map_err(Failure::from_diagnostics)?;
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
    validated(compiled.plan, Some(origins), name.to_owned())
}

/// The first flag that names a parameter `declared` lacks: `-v`, or a `--set`.
fn undeclared(declared: &Declared, params: &Params) -> Option<String> {
    if let Some(v) = params.stages_per_rank
        && !declared.takes("v")
    {
        return Some(format!("-v {v}"));
    }
    params
        .settings
        .iter()
        .find(|s| !declared.takes(&s.name))
        .map(|s| format!("--set {}={}", s.name, s.value))
}

/// Asks the plugin for its plan, validated here too: the [`Host`] is the caller's (the command
/// line's plugin host validates what a plugin returns, with the plugin named in its messages).
pub(crate) fn plugin(
    info: &PluginInfo,
    params: &Params,
    host: &mut dyn Host,
) -> Result<Built, Failure> {
    let name = &info.metadata.name;
    let usage = |what: &str| {
        Failure::usage(format!(
            "the plugin schedule `{name}` needs {what} (requires: {})",
            info.metadata.requires
        ))
    };
    let ranks = params.ranks.ok_or_else(|| usage("--ranks P"))?;
    let microbatches = params
        .microbatches
        .ok_or_else(|| usage("--microbatches M"))?;
    if params.stages_per_rank.is_some() {
        return Err(Failure::usage(format!(
            "the plugin schedule `{name}` fixes its own stages per rank; drop --stages-per-rank"
        )));
    }
    let request = PluginRequest {
        ranks,
        microbatches,
        settings: params
            .settings
            .iter()
            .map(|s| (s.name.clone(), s.value.clone()))
            .collect(),
    };
    let plan = host.generate(info.id, &request)?;
    validated(plan, None, format!("{PLUGIN_PREFIX}{name}"))
}

/// Reads a plan file: a JSON plan, or the actions text with `params.pipelines` pipelines (`json`
/// `None`: a JSON plan when the text starts with `{`).
pub(crate) fn plan_file(
    path: &str,
    json: Option<bool>,
    params: &Params,
    host: &mut dyn Host,
    files: &mut Files,
) -> Result<Built, Failure> {
    if params.shapes_a_schedule() {
        return Err(Failure::usage(format!(
            "`{path}` is a plan file: --ranks, --microbatches, --stages-per-rank and --set apply to schedules only"
        )));
    }
    let text = host.read(path)?;
    let name = shown_name(path);
    let file = files.add(name, text);
    let text = files.text(file).unwrap_or_default();
    if json.unwrap_or_else(|| text.trim_start().starts_with('{')) {
        let read = pipeweave_export::read_json(text, file).map_err(|d| in_file(d, file))?;
        return validated(read.plan, None, name.to_owned());
    }
    let read = pipeweave_export::read_actions(text, file, params.pipelines)
        .map_err(|d| in_file(d, file))?;
    let origins = read
        .spans
        .into_iter()
        .map(|r| r.into_iter().map(|range| Span::new(file, range)).collect())
        .collect();
    validated(read.plan, Some(origins), name.to_owned())
}

/// A reader's problems, each in `file`: one about the whole file (it is empty, it holds no
/// actions) points at its start, so that the message names the file.
fn in_file(diagnostics: Vec<Diagnostic>, file: FileId) -> Failure {
    let placed = diagnostics
        .into_iter()
        .map(|d| match d.span {
            Some(_) => d,
            None => d.with_span(Span::new(file, 0..0)),
        })
        .collect();
    Failure::from_diagnostics(placed)
}

/// Turns validator problems into diagnostics that point at the actions' sources.
pub fn problem_diagnostics(origins: Option<&[Vec<Span>]>, problems: &[Problem]) -> Vec<Diagnostic> {
    let origin = |rank: u32, position: Option<usize>| -> Option<Span> {
        let spans = origins?.get(rank as usize)?;
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
