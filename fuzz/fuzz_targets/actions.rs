//! The actions reader: the first byte chooses 1 to 3 pipelines or none (as many as the file shows),
//! the rest is an actions file.
//!
//! Must hold: no panic, every diagnostic inside the source; for a plan it accepts, every action's
//! span holds that action's cell, writing the plan and reading it back gives the same plan, so does
//! the JSON plan, and the plan goes through every pass (see `pipeweave_fuzz::check_plan`).

#![no_main]

use libfuzzer_sys::fuzz_target;
use pipeweave_export::unvalidated::{write_actions, write_json};
use pipeweave_export::{read_actions, read_json};
use pipeweave_fuzz::{FILE, assert_located, check_plan, text};
use pipeweave_plan::cell::parse_action;

fuzz_target!(|data: &[u8]| {
    let Some((&k, body)) = data.split_first() else {
        return;
    };
    let Some(source) = text(body) else {
        return;
    };
    let k = match k % 4 {
        0 => None,
        n => Some(u32::from(n)),
    };
    let file = match read_actions(&source, FILE, k) {
        Ok(file) => file,
        Err(diags) => {
            assert!(!diags.is_empty(), "refused without a diagnostic");
            assert_located(&diags, &source);
            return;
        }
    };
    let plan = &file.plan;
    assert_eq!(file.spans.len(), plan.programs().len());
    for (program, spans) in plan.programs().iter().zip(&file.spans) {
        assert_eq!(program.len(), spans.len());
        for (action, span) in program.iter().zip(spans) {
            let cell = &source[span.clone()];
            assert_eq!(
                parse_action(cell, u32::MAX).ok(),
                Some(*action),
                "cell `{cell}`"
            );
        }
    }
    let written = write_actions(plan);
    match read_actions(&written, FILE, k) {
        Ok(again) => assert_eq!(&again.plan, plan, "written as\n{written}"),
        Err(diags) => panic!("the written plan is refused: {diags:?}\n{written}"),
    }
    // The JSON plan holds the lowering, whose cost follows the largest micro-batch id (see
    // `pipeweave_fuzz::MAX_SLOTS`): only for plans the passes take.
    if check_plan(plan).is_some()
        && let Ok(json) = write_json(plan, None)
    {
        match read_json(&json, FILE) {
            Ok(again) => assert_eq!(&again.plan, plan, "written as\n{json}"),
            Err(diags) => panic!("the written JSON plan is refused: {diags:?}\n{json}"),
        }
    }
});
