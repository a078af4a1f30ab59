//! The compute_comms CSV reader and its check against the lowering: the input is the file.
//!
//! Must hold: no panic, every diagnostic inside the source; for a file it reads, each action's and
//! each step's span holds its cell; for a plan the validator accepts, the check's diagnostics are
//! inside the source, and the plan written as a compute_comms CSV reads back to the same plan with
//! nothing to report.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pipeweave_export::{PlanFormat, read_pytorch_comms, write_pytorch_comms};
use pipeweave_fuzz::{FILE, assert_located, check_plan, text};
use pipeweave_plan::cell::{StepCell, parse_step};

fuzz_target!(|data: &[u8]| {
    let Some(source) = text(data) else {
        return;
    };
    let _ = PlanFormat::detect(&source);
    let file = match read_pytorch_comms(&source, FILE) {
        Ok(file) => file,
        Err(diags) => {
            assert!(!diags.is_empty(), "refused without a diagnostic");
            assert_located(&diags, &source);
            return;
        }
    };
    let plan = &file.plan;
    assert_eq!(file.spans.len(), plan.programs().len());
    assert_eq!(file.steps.len(), plan.programs().len());
    for (program, spans) in plan.programs().iter().zip(&file.spans) {
        assert_eq!(program.len(), spans.len());
        for (action, span) in program.iter().zip(spans) {
            let cell = &source[span.clone()];
            assert_eq!(
                parse_step(cell, u32::MAX).ok(),
                Some(StepCell::Compute(*action)),
                "cell `{cell}`"
            );
        }
    }
    for step in file.steps.iter().flatten() {
        let cell = &source[step.span.clone()];
        assert_eq!(
            parse_step(cell, u32::MAX).ok(),
            Some(step.step),
            "cell `{cell}`"
        );
    }
    assert_located(&file.notes(), &source);
    let Some(problems) = check_plan(plan) else {
        return;
    };
    if !problems.is_empty() {
        return;
    }
    assert_located(&file.check(), &source);
    let Ok(valid) = pipeweave_check::validate(plan.clone()) else {
        panic!("`check_plan` found no problem but `validate` refuses");
    };
    if let Ok(written) = write_pytorch_comms(&valid) {
        match read_pytorch_comms(&written, FILE) {
            Ok(again) => {
                assert_eq!(&again.plan, plan, "written as\n{written}");
                assert_eq!(again.check(), vec![], "written as\n{written}");
            }
            Err(diags) => panic!("the written CSV is refused: {diags:?}\n{written}"),
        }
    }
});
