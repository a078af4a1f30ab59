//! The commands on one plan: `validate` (and `compile`, `convert`, which write what it loads),
//! `simulate`, `show` and `export`, and the step they share: a plan run under a command's costs.

use crate::finished::finished;
use crate::request::{CostsArg, Loaded};
use crate::session::Session;
use pipeweave_eval::{Costing, Run, Simulation, evaluate_on_spec};
use pipeweave_export::Document;
use pipeweave_report::TextWindow;
use pipeweave_source::{Built, Failure, Flag, FrontEnd, Params};
use std::ops::RangeInclusive;

/// A plan and its step simulated under a command's costs.
#[derive(Debug)]
pub struct Simulated {
    /// The plan, with what its source declares.
    pub loaded: Loaded,
    /// The simulated step (on a spec: with its figures and how the spec was fitted).
    pub run: Run,
    /// The step as plain data, every figure finite: what `simulate` prints.
    pub simulation: Simulation,
}

/// `pipeweave validate` (and `compile`, `convert`): the plan `arg` names, built with `params`,
/// through the validator.
pub fn validate(session: &mut Session<'_>, arg: &str, params: &Params) -> Result<Loaded, Failure> {
    session.load_on(arg, params, &Costing::Unit)
}

/// The step of `built` under `costing`: on a spec, the spec fitted to the plan by its rule (a
/// mismatch refused under a strict rule, at the spec's keys, with a note in `front`'s words on how
/// to have it fitted).
pub fn run(built: &Built, costing: &Costing, front: FrontEnd) -> Result<Run, Failure> {
    match costing {
        Costing::Spec { spec, rule, .. } => {
            let (e, fitted) = evaluate_on_spec(&built.name, spec, &built.plan, rule.clone())
                .map_err(|mut problems| {
                    if rule.strict
                        && let Some(last) = problems.pop()
                    {
                        problems.push(last.with_note(format!(
                            "{} refuses a plan of another shape; without it the spec is fitted \
                             to the plan",
                            front.flag(Flag::StrictSpec)
                        )));
                    }
                    Failure::from_diagnostics(problems).about_spec()
                })?;
            Ok(Run {
                step_time: e.report.step_time_s,
                timeline: e.timeline,
                costs: Box::new(e.costs),
                fitted: fitted.notes(),
                derived: Vec::new(),
                report: Some(e.report),
                saved_peaks: None,
                measured: false,
            })
        }
        Costing::Unit | Costing::Uniform(_) | Costing::Measured { .. } => {
            costing.run(&built.plan).map_err(|d| {
                let reasons: Vec<String> = d.into_iter().map(|d| d.message).collect();
                Failure::invalid(format!("{}: {}", built.name, reasons.join("; ")))
            })
        }
    }
}

/// `loaded` simulated under `costs` (unit costs by default).
pub fn simulate_loaded(
    session: &mut Session<'_>,
    loaded: Loaded,
    costs: &CostsArg,
) -> Result<Simulated, Failure> {
    let costing = session.costing(costs)?;
    simulated(session, loaded, &costing)
}

/// `loaded` simulated under `costing`; on measured costs, what was derived is told.
fn simulated(
    session: &mut Session<'_>,
    loaded: Loaded,
    costing: &Costing,
) -> Result<Simulated, Failure> {
    let run = run(&loaded.built, costing, session.front)?;
    session.tell_derived(costing, &loaded.built.name, &run.derived);
    let built = &loaded.built;
    let simulation = finished(&built.name, run.simulation(&built.name, &built.plan))?;
    Ok(Simulated {
        loaded,
        run,
        simulation,
    })
}

/// `pipeweave simulate`: the plan `arg` names, simulated under `costs` (on a spec, P and M the
/// spec's where `params` leave them out).
pub fn simulate(
    session: &mut Session<'_>,
    arg: &str,
    params: &Params,
    costs: &CostsArg,
) -> Result<Simulated, Failure> {
    session.plan_and_spec(arg, costs)?;
    let costing = session.costing(costs)?;
    let loaded = session.load_on(arg, params, &costing)?;
    simulated(session, loaded, &costing)
}

/// The part of a simulated step `show` draws, and how wide.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShowWindow {
    /// Ranks A to B (`None`: all, at most [`MAX_ROWS`] of them).
    pub ranks: Option<RangeInclusive<u32>>,
    /// Start the drawing at this time (units, or seconds on a spec).
    pub from: Option<f64>,
    /// End it at this time.
    pub to: Option<f64>,
    /// The most characters per line.
    pub width: usize,
}

/// The most ranks `show` draws at once.
pub const MAX_ROWS: u32 = 512;

/// `pipeweave show`: the simulated step as text, in a window of ranks and time (on a spec, its
/// step time and how the spec was fitted first). Ranks past [`MAX_ROWS`] are left out with a
/// warning.
pub fn show(
    session: &mut Session<'_>,
    arg: &str,
    params: &Params,
    costs: &CostsArg,
    window: &ShowWindow,
) -> Result<String, Failure> {
    check_window(session, window.from, window.to)?;
    let s = simulate(session, arg, params, costs)?;
    let mut text = String::new();
    if let Some(report) = &s.run.report {
        text.push_str(&format!(
            "spec {}: step time {}, times in seconds\n",
            report.spec,
            pipeweave_report::seconds(report.step_time_s)
        ));
        if !s.run.fitted.is_empty() {
            text.push_str(&format!("spec fitted: {}\n", s.run.fitted.join("; ")));
        }
    }
    let plan = &s.loaded.built.plan;
    let timeline = &s.run.timeline;
    let last = plan.ranks() - 1;
    let asked = window.ranks.clone().unwrap_or(0..=last);
    if *asked.start() > last {
        return Err(Failure::usage(format!(
            "{}: the plan has ranks 0 to {last}",
            session.front.given(
                Flag::RankRange,
                format!("{}..{}", asked.start(), asked.end())
            )
        )));
    }
    let end = (*asked.end()).min(last);
    let shown_end = end.min(asked.start() + (MAX_ROWS - 1));
    if shown_end < end {
        session.warning(&format!(
            "ranks {} to {end} are not shown (at most {MAX_ROWS} rows at once; {} A..B shows \
             others)",
            shown_end + 1,
            session.front.flag(Flag::RankRange)
        ));
    }
    if let Some(from) = window.from.filter(|f| *f >= timeline.timing.makespan) {
        return Err(Failure::usage(format!(
            "{}: the step ends at {}",
            session.front.given(Flag::From, from),
            pipeweave_report::format_time(timeline.timing.makespan)
        )));
    }
    let text_window = TextWindow {
        ranks: *asked.start()..=shown_end,
        from: window.from,
        to: window.to,
        width: Some(window.width),
    };
    text.push_str(&pipeweave_report::text_timeline_window(
        plan,
        timeline,
        &text_window,
    ));
    Ok(text)
}

/// Refuses a window of time that ends before it starts, before anything is built.
pub(crate) fn check_window(
    session: &Session<'_>,
    from: Option<f64>,
    to: Option<f64>,
) -> Result<(), Failure> {
    match (from, to) {
        (Some(from), Some(to)) if from >= to => Err(Failure::usage(format!(
            "{} {}: the window must end after it starts",
            session.front.given(Flag::From, from),
            session.front.given(Flag::To, to)
        ))),
        _ => Ok(()),
    }
}

/// A plan's written forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// The actions text (for one pipeline, PyTorch's compute-only CSV).
    Actions,
    /// The versioned JSON plan (with the simulated timing when the export has one).
    Json,
    /// PyTorch 2.15's compute-only CSV.
    Pytorch,
    /// PyTorch 2.15's lowered CSV.
    PytorchComms,
    /// A Chrome / Perfetto trace of the simulated step.
    ChromeTrace,
    /// torchtitan 0.3.0's `ParallelismConfig` with the plan's split (needs a spec).
    Torchtitan,
    /// Megatron-Core's `pipeline_model_parallel_layout` (needs a spec).
    MegatronLayout,
}

/// A plan ready to be written in a launcher's format: its plan, and its simulated step where the
/// format carries one.
#[derive(Debug)]
pub struct Exported {
    /// The plan.
    pub loaded: Loaded,
    /// The simulated step, when the export has costs or is a trace.
    pub run: Option<Run>,
    /// Microseconds per unit of time in a trace: seconds on a spec, 1 unit = 1 ms otherwise.
    us_per_unit: f64,
    /// The format.
    pub format: ExportFormat,
}

impl Exported {
    /// The document to write, made as it is written (never held whole); a format that cannot
    /// hold the plan refuses here, before any output.
    pub fn document(&self) -> Result<Box<dyn Document + '_>, Failure> {
        let plan = &self.loaded.built.plan;
        let timing = self.run.as_ref().map(|r| &r.timeline.timing);
        let refused = |d| Failure::from_diagnostics(vec![d]);
        Ok(match self.format {
            ExportFormat::Actions => Box::new(pipeweave_export::actions_text(plan)),
            ExportFormat::Json => {
                Box::new(pipeweave_export::json_text(plan, timing).map_err(refused)?)
            }
            ExportFormat::Pytorch => {
                Box::new(pipeweave_export::pytorch_csv(plan).map_err(refused)?)
            }
            ExportFormat::PytorchComms => {
                Box::new(pipeweave_export::pytorch_comms_csv(plan).map_err(refused)?)
            }
            ExportFormat::Torchtitan | ExportFormat::MegatronLayout => {
                let Some(report) = self.run.as_ref().and_then(|r| r.report.as_ref()) else {
                    return Err(Failure::usage(
                        "the split of a plan's layers comes from a spec: give one with --spec",
                    ));
                };
                let (split, mtp) = (&report.layers_per_part, report.mtp_depth);
                Box::new(
                    if self.format == ExportFormat::Torchtitan {
                        pipeweave_export::torchtitan_fragment(plan, split, mtp)
                    } else {
                        pipeweave_export::megatron_layout(plan, split, mtp)
                    }
                    .map_err(refused)?,
                )
            }
            ExportFormat::ChromeTrace => match timing {
                Some(t) => Box::new(
                    pipeweave_export::chrome_trace(plan, t, self.us_per_unit).map_err(refused)?,
                ),
                None => {
                    return Err(Failure::invalid(
                        "a Chrome trace needs a simulated timeline",
                    ));
                }
            },
        })
    }

    /// The document as text, for a front end that returns it whole (Python).
    pub fn text(&self) -> Result<String, Failure> {
        let doc = self.document()?;
        let mut bytes = Vec::new();
        doc.write_to(&mut bytes)
            .map_err(|e| Failure::invalid(format!("cannot write the export: {e}")))?;
        String::from_utf8(bytes).map_err(|_| Failure::invalid("the export is not UTF-8"))
    }
}

/// `pipeweave export`: the plan `arg` names, ready to be written in `format`, with its simulated
/// step under `costs` where the format carries one (JSON with costs given, a trace always).
pub fn export(
    session: &mut Session<'_>,
    arg: &str,
    params: &Params,
    costs: &CostsArg,
    format: ExportFormat,
) -> Result<Exported, Failure> {
    session.plan_and_spec(arg, costs)?;
    let costing = session.costing(costs)?;
    let loaded = session.load_on(arg, params, &costing)?;
    exported(session, loaded, &costing, costs.is_given(), format)
}

/// `loaded` ready to be written in `format` under `costs` (see [`export`]).
pub fn export_loaded(
    session: &mut Session<'_>,
    loaded: Loaded,
    costs: &CostsArg,
    format: ExportFormat,
) -> Result<Exported, Failure> {
    let costing = session.costing(costs)?;
    exported(session, loaded, &costing, costs.is_given(), format)
}

fn exported(
    session: &mut Session<'_>,
    loaded: Loaded,
    costing: &Costing,
    given: bool,
    format: ExportFormat,
) -> Result<Exported, Failure> {
    let needs_spec = matches!(
        format,
        ExportFormat::Torchtitan | ExportFormat::MegatronLayout
    );
    if needs_spec && !matches!(costing, Costing::Spec { .. }) {
        return Err(Failure::usage(format!(
            "the split of a plan's layers comes from a spec: give one with {}",
            session.front.flag(pipeweave_source::Flag::Spec)
        )));
    }
    if !given && format != ExportFormat::ChromeTrace {
        return Ok(Exported {
            loaded,
            run: None,
            us_per_unit: 1e3,
            format,
        });
    }
    let mut s = simulated(session, loaded, costing)?;
    if let Some(report) = &s.run.report {
        // the split the step ran with is part of the plan's identity: a JSON plan carries it
        s.loaded.built.plan = with_parts_of(&s.loaded.built.plan, report);
    }
    if let Some(report) = s.run.report.as_ref().filter(|_| !s.run.fitted.is_empty()) {
        // Standard output may be the file: how the spec was fitted is told beside it.
        session.note(&format!(
            "spec {} fitted to {}: {}",
            report.spec,
            s.loaded.built.name,
            s.run.fitted.join("; ")
        ));
    }
    if let Some(report) = s.run.report.as_ref().filter(|_| needs_spec) {
        // the frameworks' recomputation is set apart from the split: told beside the file
        let framework = if format == ExportFormat::MegatronLayout {
            "megatron"
        } else {
            "torchtitan"
        };
        session.note(&pipeweave_export::recompute_flags(
            framework,
            &report.recompute_per_part,
        ));
    }
    Ok(Exported {
        us_per_unit: if s.run.report.is_some() { 1e6 } else { 1e3 },
        loaded: s.loaded,
        run: Some(s.run),
        format,
    })
}

/// `plan` with the layers and the recomputation of each part that `report`'s step ran with: on a
/// spec they are part of the plan's identity (a JSON plan carries them, a timeline draws them).
pub(crate) fn with_parts_of(
    plan: &pipeweave_check::ValidPlan,
    report: &pipeweave_eval::StepReport,
) -> pipeweave_check::ValidPlan {
    plan.clone()
        .with_split(Some(report.layers_per_part.clone()))
        .with_recompute(Some(
            report
                .recompute_per_part
                .iter()
                .map(|r| (*r).to_owned())
                .collect(),
        ))
}
