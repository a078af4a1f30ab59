//! `pipeweave export`: a validated plan written in a launcher's format, with the simulated
//! timeline where the format carries one (JSON with `--spec` or `--costs`, Chrome trace always).

use crate::args::{CostArgs, PlanArgs};
use crate::output::{self, note};
use crate::session::Session;
use crate::single::{on_spec, simulate};
use clap::ValueEnum;
use pipeweave_export::Document;
use pipeweave_source::Failure;
use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// The actions text format (for one pipeline, PyTorch's compute-only CSV)
    Actions,
    /// The versioned JSON plan (schemas/pipeweave-plan.v1.schema.json)
    Json,
    /// PyTorch 2.15's compute-only CSV (`_load_csv(format="compute_only")`, torchtitan's
    /// pipeline_parallel_schedule_csv)
    Pytorch,
    /// PyTorch 2.15's lowered CSV (`_load_csv(format="compute_comms")`)
    PytorchComms,
    /// A Chrome / Perfetto trace of the simulated step
    ChromeTrace,
}

/// Writes the plan named by `plan` in `format` to `output` (standard output for none or `-`), as
/// the export makes it; a refusal (a format that cannot hold the plan) comes before any output.
pub fn run(
    plan: &PlanArgs,
    format: ExportFormat,
    costs: &CostArgs,
    output: Option<&Path>,
    session: &mut Session,
) -> Result<(), Failure> {
    // The timeline, in seconds with a spec and in units otherwise (1 unit = 1 ms in a trace).
    let (loaded, timeline, us_per_unit) = if costs.spec.name.is_some() {
        let on = on_spec(session, plan, &costs.spec)?;
        // Standard output may be the file: the note goes to standard error.
        if !on.fitted.is_empty() {
            note(&format!(
                "spec {} fitted to {}: {}",
                on.evaluation.report.spec,
                on.built.name,
                on.fitted.join("; ")
            ));
        }
        (on.built, Some(on.evaluation.timeline), 1e6)
    } else {
        costs.spec.check_without_spec()?;
        session.costing = costs.costs.map(pipeweave_eval::Costing::Uniform);
        let loaded = session.load(plan)?;
        let wants = costs.costs.is_some() || format == ExportFormat::ChromeTrace;
        let t = if wants {
            Some(simulate(&loaded, &costs.costs.unwrap_or_default())?)
        } else {
            None
        };
        (loaded, t, 1e3)
    };
    let timing = timeline.as_ref().map(|t| &t.timing);
    let plan = &loaded.plan;
    let refused = |d| Failure::from_diagnostics(vec![d]);
    let doc: Box<dyn Document + '_> = match format {
        ExportFormat::Actions => Box::new(pipeweave_export::actions_text(plan)),
        ExportFormat::Json => Box::new(pipeweave_export::json_text(plan, timing).map_err(refused)?),
        ExportFormat::Pytorch => Box::new(pipeweave_export::pytorch_csv(plan).map_err(refused)?),
        ExportFormat::PytorchComms => {
            Box::new(pipeweave_export::pytorch_comms_csv(plan).map_err(refused)?)
        }
        // Always simulated above for a trace.
        ExportFormat::ChromeTrace => match timing {
            Some(t) => {
                Box::new(pipeweave_export::chrome_trace(plan, t, us_per_unit).map_err(refused)?)
            }
            None => {
                return Err(refused(pipeweave_diagnostics::Diagnostic::error(
                    "a Chrome trace needs a simulated timeline",
                )));
            }
        },
    };
    output::emit_document(output, doc.as_ref())
}
