//! The JSON plan reader: any bytes as a JSON plan.
//!
//! Must hold: no panic, every diagnostic inside the source; a plan it accepts goes through every
//! pass (see `pipeweave_fuzz::check_plan`), and writing it (with its timeline) and reading it back
//! gives the same plan and timeline.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pipeweave_export::read_json;
use pipeweave_export::unvalidated::write_json;
use pipeweave_fuzz::{FILE, assert_located, check_plan, text};

fuzz_target!(|data: &[u8]| {
    let Some(source) = text(data) else {
        return;
    };
    let read = match read_json(&source, FILE) {
        Ok(read) => read,
        Err(diags) => {
            assert!(!diags.is_empty(), "refused without a diagnostic");
            assert_located(&diags, &source);
            return;
        }
    };
    let _ = check_plan(&read.plan);
    match write_json(&read.plan, read.timing.as_ref()) {
        Ok(json) => match read_json(&json, FILE) {
            Ok(again) => assert_eq!(again, read, "written as\n{json}"),
            Err(diags) => panic!("the written plan is refused: {diags:?}\n{json}"),
        },
        Err(d) => panic!("a plan read from JSON cannot be written as JSON: {d:?}"),
    }
});
