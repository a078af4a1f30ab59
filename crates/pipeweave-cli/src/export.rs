//! `pipeweave export`: a validated plan written in a launcher's format, with the simulated
//! timeline where the format carries one (JSON with `--spec` or `--costs`, Chrome trace always).

use crate::render::Sources;
use crate::{CostArgs, Failure, PlanArgs, load_valid, parse_costs, specs};
use clap::ValueEnum;

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

/// Writes the plan named by `plan` in `format`; returns the text.
pub fn run(
    mut plan: PlanArgs,
    format: ExportFormat,
    costs: &CostArgs,
    sources: &mut Sources,
) -> Result<String, Failure> {
    // The timeline, in seconds with a spec and in units otherwise (1 unit = 1 ms in a trace).
    let (loaded, timeline, us_per_unit) = if let Some(spec) = &costs.spec {
        let spec = specs::load(spec, sources)?;
        let (loaded, t, _) = specs::evaluate(&mut plan, &spec, sources)?;
        (loaded, Some(t), 1e6)
    } else {
        let explicit = costs.costs.is_some();
        let model = parse_costs(costs)?;
        let loaded = load_valid(&plan, sources)?;
        let wants = explicit || format == ExportFormat::ChromeTrace;
        let t = if wants {
            Some(crate::simulate(&loaded, &model)?)
        } else {
            None
        };
        (loaded, t, 1e3)
    };
    let timing = timeline.as_ref().map(|t| &t.timing);
    let written = match format {
        ExportFormat::Actions => Ok(pipeweave_export::write_actions(&loaded.plan)),
        ExportFormat::Json => pipeweave_export::write_json(&loaded.plan, timing),
        ExportFormat::Pytorch => pipeweave_export::write_pytorch(&loaded.plan),
        ExportFormat::PytorchComms => pipeweave_export::write_pytorch_comms(&loaded.plan),
        // Always simulated above for a trace.
        ExportFormat::ChromeTrace => match timing {
            Some(t) => pipeweave_export::write_chrome_trace(&loaded.plan, t, us_per_unit),
            None => Err(pipeweave_diagnostics::Diagnostic::error(
                "a Chrome trace needs a simulated timeline",
            )),
        },
    };
    written.map_err(|d| Failure::Diagnostics(vec![d]))
}
