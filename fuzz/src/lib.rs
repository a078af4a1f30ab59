//! What every reader's answer must satisfy whatever its input, shared by the fuzz targets: no
//! panic (libFuzzer reports one as a crash), diagnostics located inside the text they are about,
//! and the laws between the passes a plan goes through once read (validate, lower, simulate).
//!
//! Nothing here is fuzzing-specific: the targets in `fuzz_targets/` hand it what they read.

use pipeweave_check::Problem;
use pipeweave_diagnostics::{Diagnostic, FileId, Span, text_from_bytes};
use pipeweave_plan::{Plan, Step, lower};
use pipeweave_sim::UnitCosts;

/// The file every target reads from.
pub const FILE: FileId = FileId(0);

/// The text of `bytes` as the command line reads a file (UTF-8, a leading byte-order mark
/// dropped), or `None` after checking the diagnostic that refuses them.
pub fn text(bytes: &[u8]) -> Option<String> {
    match text_from_bytes(bytes.to_vec(), FILE) {
        Ok(text) => Some(text),
        Err(d) => {
            // The span of a refusal is an offset into the bytes, not into any text.
            let span = d
                .span
                .as_ref()
                .expect("the refusal of a non-UTF-8 file has a place");
            assert!(
                span.range.start < span.range.end && span.range.end <= bytes.len(),
                "the span {:?} of `{}` is outside the {} bytes",
                span.range,
                d.message,
                bytes.len()
            );
            None
        }
    }
}

/// Asserts that every place a diagnostic points at is a range of `source` on character
/// boundaries (the renderer slices the source there), and that its message is a message.
pub fn assert_located(diags: &[Diagnostic], source: &str) {
    for d in diags {
        assert!(
            !d.message.is_empty(),
            "a diagnostic without a message: {d:?}"
        );
        let spans = d.span.iter().chain(d.labels.iter().map(|l| &l.span));
        for span in spans {
            assert_in(span, source, d);
        }
    }
}

fn assert_in(span: &Span, source: &str, d: &Diagnostic) {
    let r = &span.range;
    assert!(
        span.file == FILE
            && r.start <= r.end
            && r.end <= source.len()
            && source.is_char_boundary(r.start)
            && source.is_char_boundary(r.end),
        "`{}` points at {r:?}, which is not a range of the {}-byte source",
        d.message,
        source.len()
    );
}

/// The passes keep tables with a slot per stage and micro-batch id up to the largest id, so their
/// cost follows the largest id rather than the number of actions: a few bytes naming micro-batch
/// 16,777,215 on 8 stages cost seconds and gigabytes (issue 12, "huge micro-batch ids", not yet
/// fixed in the passes). Plans past this many slots are read but not run through the passes, so
/// that the fuzzer does not stop on that known cause again and again; the bound goes with the cause.
pub const MAX_SLOTS: u64 = 1 << 20;

/// What every pass must do with any plan a reader accepted: the validator answers (and each
/// problem says itself), the plan lowers (lowering works on any plan) with a receive for every
/// send, and a plan the validator accepts simulates to the end. Returns the validator's problems,
/// or `None` for a plan past [`MAX_SLOTS`], which is skipped.
pub fn check_plan(plan: &Plan) -> Option<Vec<Problem>> {
    if u64::from(plan.num_stages()) * u64::from(plan.mb_bound()) > MAX_SLOTS {
        return None;
    }
    let problems = pipeweave_check::problems(plan);
    for p in &problems {
        let _ = p.to_string();
    }
    let lowered = lower(plan);
    let (mut sends, mut recvs) = (0usize, 0usize);
    for program in lowered.programs() {
        for step in program {
            match step {
                Step::Send { .. } => sends += 1,
                Step::Recv { .. } => recvs += 1,
                _ => {}
            }
        }
    }
    assert_eq!(
        sends, recvs,
        "the lowering posts {sends} sends but {recvs} receives"
    );
    assert_eq!(lowered.sends().count(), sends);
    let _ = lowered.reductions().count();
    if problems.is_empty() {
        let valid = match pipeweave_check::validate(plan.clone()) {
            Ok(valid) => valid,
            Err(p) => panic!("`problems` finds none but `validate` refuses: {p:?}\n{plan:?}"),
        };
        let timeline = pipeweave_sim::simulate(&valid, &UnitCosts);
        if let Err(e) = timeline {
            panic!("the validator accepts the plan but the simulator stops: {e}\n{plan:?}");
        }
    }
    Some(problems)
}
