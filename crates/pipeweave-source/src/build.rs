//! Building a source's plan for given parameters, validated, with the place in the source of
//! every action where there is one.

use crate::declared::Declared;
use crate::failure::Failure;
use crate::host::{Host, PLUGIN_PREFIX, PluginInfo, PluginRequest, shown_name};
use crate::params::{Params, Setting};
use crate::words::{Flag, FrontEnd};
use pipeweave_check::{Problem, ProblemKind, ValidPlan};
use pipeweave_diagnostics::Files;
use pipeweave_diagnostics::{Diagnostic, FileId, Span};
use pipeweave_export::PlanFormat;
use pipeweave_param::Value;
use pipeweave_plan::{Kind, Plan};
use std::ops::Range;

/// A validated plan and where its actions came from.
#[derive(Debug, Clone)]
pub struct Built {
    /// The plan, through the validator.
    pub plan: ValidPlan,
    /// Where each action was written, when known.
    pub origins: Option<Origins>,
    /// What to call the plan in messages: a file or schedule name, `plugin:NAME` for a plugin.
    pub name: String,
    /// What reading the source noted besides errors (a PyTorch CSV's cells left out of the plan),
    /// for the caller to show.
    pub notes: Vec<Diagnostic>,
}

/// Where each action of a plan was written: looked up for the problems that name one, and kept
/// compact (a big plan has tens of millions of actions; a span for each took 24 bytes).
#[derive(Debug, Clone)]
pub enum Origins {
    /// A schedule's: the compiler's table, an index per action.
    Schedule(pipeweave_dsl::Origins),
    /// A plan file's: the byte range of every action's cell in `file`, per rank.
    Cells {
        /// The file read.
        file: FileId,
        /// `spans[r][i]`: rank r's i-th action's cell.
        spans: Vec<Vec<Range<usize>>>,
    },
}

impl Origins {
    /// Where rank `rank`'s action at `position` was written, or its last action's place for
    /// `None`; `None` when the rank has no such action (a schedule's action without a known place
    /// is at the file's start).
    pub fn span(&self, rank: u32, position: Option<usize>) -> Option<Span> {
        match self {
            Origins::Schedule(o) => {
                let n = o.actions(rank);
                let i = position.unwrap_or(n.checked_sub(1)?);
                (i < n).then(|| {
                    o.span(rank, i)
                        .unwrap_or_else(|| Span::new(o.program().file, 0..0))
                })
            }
            Origins::Cells { file, spans } => {
                let spans = spans.get(rank as usize)?;
                let range = match position {
                    Some(p) => spans.get(p)?,
                    None => spans.last()?,
                };
                Some(Span::new(*file, range.clone()))
            }
        }
    }

    /// The origins of the actions `keep` keeps (by rank and position), in order: those of the
    /// plan made of those actions.
    pub(crate) fn only(self, keep: impl Fn(u32, usize) -> bool) -> Origins {
        match self {
            Origins::Schedule(o) => Origins::Schedule(o.only(keep)),
            Origins::Cells { file, spans } => Origins::Cells {
                file,
                spans: (0u32..)
                    .zip(spans)
                    .map(|(rank, spans)| {
                        (0..)
                            .zip(spans)
                            .filter(|&(i, _)| keep(rank, i))
                            .map(|(_, range)| range)
                            .collect()
                    })
                    .collect(),
            },
        }
    }
}

impl Built {
    /// The evaluation form of this plan (`Plan::forward_only`), each forward keeping its origin.
    /// The forwards of a valid plan are valid on their own (each waits only on earlier forwards,
    /// which the training plan already ran in an order that progresses); validated all the same.
    pub(crate) fn forward_only(self) -> Result<Built, Failure> {
        if self.plan.is_forward_only() {
            return Ok(self);
        }
        let plan = &self.plan;
        let forward =
            |rank: u32, i: usize| plan.program(rank)[i].ops().any(|op| op.kind == Kind::F);
        let origins = self.origins.map(|origins| origins.only(forward));
        let mut built = validated(self.plan.forward_only(), origins, self.name)?;
        built.notes = self.notes;
        Ok(built)
    }
}

/// Validates `plan`; the problems point at the actions' sources where `origins` knows them.
/// Asked for an evaluation step (`evaluation`), a plan of forwards alone is taken as one (an
/// actions file of an evaluation plan, which has no place to say so).
fn validated_for(
    plan: Plan,
    origins: Option<Origins>,
    name: String,
    evaluation: bool,
) -> Result<Built, Failure> {
    if evaluation && !plan.is_forward_only() && !plan.has_backward() {
        return validated(plan.into_evaluation(), origins, name);
    }
    validated(plan, origins, name)
}

/// Validates `plan`; the problems point at the actions' sources where `origins` knows them. The
/// plan's `name` (a path from the command line can hold any character) is kept as it may be shown,
/// control characters drawn as pictures.
fn validated(plan: Plan, origins: Option<Origins>, name: String) -> Result<Built, Failure> {
    match pipeweave_check::validate(plan) {
        Ok(plan) => Ok(Built {
            plan,
            origins,
            name: pipeweave_diagnostics::visible(&name).into_owned(),
            notes: Vec::new(),
        }),
        Err(problems) => Err(Failure::from_diagnostics(problem_diagnostics(
            origins.as_ref(),
            &problems,
        ))),
    }
}

/// The settings as given (with `-v` as `v`) and their values.
type Settings = (Vec<Setting>, Vec<(String, Value)>);

/// `--set` and `-v` (the setting `v`) as `name` declares them, read by the one rule of
/// `pipeweave-param`, the same for a `.weave` schedule and a plugin: a setting it cannot take is a
/// usage failure naming the parameter, its type and its values.
pub(crate) fn settings(
    name: &str,
    declared: &Declared,
    params: &Params,
    front: FrontEnd,
) -> Result<Settings, Failure> {
    let mut settings = params.settings.clone();
    if let Some(v) = params.stages_per_rank {
        settings.push(Setting {
            name: "v".to_owned(),
            value: v.to_string(),
        });
    }
    let values = declared.read_settings(&settings).map_err(|e| match e {
        // `-v` is the setting `v`: say so to a schedule without it.
        pipeweave_param::SettingError::Unknown { name: v, known }
            if v == "v" && params.stages_per_rank.is_some() =>
        {
            let its = if known.is_empty() {
                "it takes no parameters".to_owned()
            } else {
                format!("its parameters: {}", known.join(", "))
            };
            let flag = match front {
                FrontEnd::CommandLine => "-v",
                FrontEnd::Python => front.flag(Flag::StagesPerRank),
            };
            Failure::usage(format!(
                "{name}: {flag} sets the parameter `v`, which it does not have ({its})"
            ))
        }
        e => Failure::usage(format!("{name}: {e}")),
    })?;
    Ok((settings, values))
}

/// Compiles the schedule in `file` (which declares `declared`) for `params`.
pub(crate) fn weave(
    name: &str,
    file: FileId,
    declared: &Declared,
    params: &Params,
    files: &Files,
    front: FrontEnd,
) -> Result<Built, Failure> {
    let (Some(ranks), Some(microbatches)) = (params.ranks, params.microbatches) else {
        return Err(Failure::usage(format!(
            "`{name}` is a schedule: give {} and {}",
            front.flag(Flag::Ranks),
            front.flag(Flag::Microbatches)
        )));
    };
    let text = files.text(file).unwrap_or_default();
    let values = match settings(name, declared, params, front) {
        Ok((_, values)) => values,
        Err(usage) => {
            // A setting the schedule cannot take is the command line's mistake, unless the file
            // is broken (then its parameters are not known, and its errors are the news).
            let problems = pipeweave_dsl::check(file, text);
            if problems.iter().any(|d| d.is_error()) {
                return Err(Failure::from_diagnostics(problems));
            }
            return Err(usage);
        }
    };
    let args_at = |m: u32| {
        values
            .iter()
            .fold(pipeweave_dsl::Args::new(ranks, m), |a, (n, v)| {
                a.with(n, v.clone())
            })
    };
    let compiled =
        pipeweave_dsl::compile(file, text, &args_at(microbatches)).map_err(|mut d| {
            // A top-level requirement on M that fails: say which M nearby would meet it.
            if let Some(help) = nearby_microbatches(file, text, microbatches, args_at)
                && let Some(first) = d.iter_mut().find(|d| d.is_error() && d.help.is_none())
            {
                first.help = Some(help);
            }
            Failure::from_diagnostics(d)
        })?;
    let origins = Origins::Schedule(compiled.origins);
    validated(compiled.plan, Some(origins), name.to_owned())
}

/// How far from M the search for an M that meets the schedule's top-level requirements goes.
const NEARBY: u32 = 256;

/// `M = a or M = b would meet it`: the nearest M below and above `m` that the top-level
/// requirements admit with the same other parameters, within [`NEARBY`] of it; `None` when they
/// admit `m` (the failure is elsewhere) or none is near.
fn nearby_microbatches(
    file: FileId,
    text: &str,
    m: u32,
    args_at: impl Fn(u32) -> pipeweave_dsl::Args,
) -> Option<String> {
    let prepared = pipeweave_dsl::prepare(file, text).ok()?;
    let admits = |m: u32| prepared.admits(&args_at(m)).unwrap_or(false);
    if admits(m) {
        return None;
    }
    let below = (m.saturating_sub(NEARBY).max(1)..m)
        .rev()
        .find(|&k| admits(k));
    let above = (m + 1..=m.saturating_add(NEARBY)).find(|&k| admits(k));
    let found: Vec<String> = below
        .into_iter()
        .chain(above)
        .map(|k| format!("M = {k}"))
        .collect();
    (!found.is_empty()).then(|| format!("{} would meet it", found.join(" or ")))
}

/// Asks the plugin for its plan, which the [`Host`] returns validated (the plugin host validates
/// what a plugin returns, with the plugin named in its messages).
pub(crate) fn plugin(
    info: &PluginInfo,
    declared: &Declared,
    params: &Params,
    host: &mut dyn Host,
    front: FrontEnd,
) -> Result<Built, Failure> {
    let name = &info.metadata.name;
    let usage = |flag: Flag| {
        Failure::usage(format!(
            "the plugin schedule `{name}` needs {} (requires: {})",
            front.flag(flag),
            info.metadata.requires
        ))
    };
    let ranks = params.ranks.ok_or_else(|| usage(Flag::Ranks))?;
    let microbatches = params
        .microbatches
        .ok_or_else(|| usage(Flag::Microbatches))?;
    let (settings, _) = settings(name, declared, params, front)?;
    let request = PluginRequest {
        ranks,
        microbatches,
        settings: settings.into_iter().map(|s| (s.name, s.value)).collect(),
    };
    let plan = host.generate(info.id, &request)?;
    Ok(Built {
        plan,
        origins: None,
        name: format!("{PLUGIN_PREFIX}{name}"),
        notes: Vec::new(),
    })
}

/// Reads a plan file in the form `params` names, else the one its name gives (`named`), else the
/// one its text shows ([`PlanFormat::detect`]): a JSON plan, the actions text with
/// `params.pipelines` pipelines (or as many as it shows), or one of PyTorch's CSVs (one pipeline). A `compute_comms` CSV's
/// communication is checked against the lowering of the valid plan its compute cells make.
pub(crate) fn plan_file(
    path: &str,
    named: Option<PlanFormat>,
    params: &Params,
    host: &mut dyn Host,
    files: &mut Files,
    front: FrontEnd,
) -> Result<Built, Failure> {
    if params.shapes_a_schedule() {
        let what = match front {
            FrontEnd::CommandLine => "--ranks, --microbatches, --stages-per-rank and --set",
            FrontEnd::Python => {
                "ranks=, microbatches=, stages_per_rank= and a schedule's parameters"
            }
        };
        return Err(Failure::usage(format!(
            "`{path}` is a plan file: {what} apply to schedules only"
        )));
    }
    let text = host.read(path)?;
    let name = shown_name(path);
    let file = files.add(name, text);
    let text = files.text(file).unwrap_or_default();
    let format = params
        .format
        .or(named)
        .unwrap_or_else(|| PlanFormat::detect(text));
    let k = params.pipelines;
    if let Some(k) = k.filter(|&k| k > 1)
        && matches!(format, PlanFormat::Pytorch | PlanFormat::PytorchComms)
    {
        return Err(Failure::usage(format!(
            "`{path}` is read as a {} CSV, which holds one pipeline: {} applies to the actions format ({})",
            if format == PlanFormat::Pytorch {
                "PyTorch compute-only"
            } else {
                "PyTorch compute_comms"
            },
            front.given(Flag::Pipelines, k),
            front.given(Flag::PlanFormat, "actions")
        )));
    }
    let spans_in = |spans| Origins::Cells { file, spans };
    match format {
        PlanFormat::Json => {
            let read = pipeweave_export::read_json(text, file).map_err(|d| in_file(d, file))?;
            validated_for(read.plan, None, name.to_owned(), params.forward_only)
        }
        PlanFormat::Actions | PlanFormat::Pytorch => {
            let k = if format == PlanFormat::Pytorch {
                Some(1)
            } else {
                k
            };
            let read =
                pipeweave_export::read_actions(text, file, k).map_err(|d| in_file(d, file))?;
            validated_for(
                read.plan,
                Some(spans_in(read.spans)),
                name.to_owned(),
                params.forward_only,
            )
        }
        PlanFormat::PytorchComms => {
            let read =
                pipeweave_export::read_pytorch_comms(text, file).map_err(|d| in_file(d, file))?;
            // The validator's problems first: the check compares with the lowering of a valid plan.
            let origins = Some(spans_in(read.spans.clone()));
            let mut built = validated_for(
                read.plan.clone(),
                origins,
                name.to_owned(),
                params.forward_only,
            )?;
            let comms = read.check();
            if !comms.is_empty() {
                return Err(in_file(comms, file));
            }
            built.notes = read.notes();
            Ok(built)
        }
    }
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
pub fn problem_diagnostics(origins: Option<&Origins>, problems: &[Problem]) -> Vec<Diagnostic> {
    let origin = |rank: u32, position: Option<usize>| origins?.span(rank, position);
    problems
        .iter()
        .map(|p| {
            let mut d = Diagnostic::error(format!("{}: {}", p.location(), p.message()));
            // A problem of the whole plan (too little memory, work counted beyond the listed) has
            // no place in any rank's program.
            let whole = matches!(
                p.kind,
                ProblemKind::OutOfMemory(_) | ProblemKind::MoreMissing { .. }
            );
            if let Some(span) = origin(p.rank, p.position).filter(|_| !whole) {
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
