//! The writers of the two plan formats (actions text, JSON plan) for plans not known to be valid:
//! for the formats' own laws (every plan the readers take writes back to itself, broken or not)
//! and for files of broken plans on purpose.
//!
//! Prefer [`crate::write_actions`] and [`crate::write_json`]: they take a
//! [`ValidPlan`](pipeweave_check::ValidPlan), so what they write has been through the validator,
//! as everything the command line exports has. The text is the same for the same plan.

use crate::Document as _;
use pipeweave_diagnostics::Diagnostic;
use pipeweave_plan::{Plan, Timing};

/// [`crate::write_actions`] for a plan not known to be valid.
pub fn write_actions(plan: &Plan) -> String {
    crate::actions::ActionsText { plan }.to_text()
}

/// [`crate::write_json`] for a plan not known to be valid (its lowering is written as the lowering
/// of any plan is: see `pipeweave_plan::lower`).
pub fn write_json(plan: &Plan, timing: Option<&Timing>) -> Result<String, Diagnostic> {
    crate::json::write_plan_json(plan, timing)
}
