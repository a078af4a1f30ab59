//! Plans built in code for the tests.

use pipeweave_check::ValidPlan;

/// Textbook 1F1B on `p` ranks with `m` micro-batches (warm-up forwards, one forward one backward,
/// cool-down backwards), one stage per rank, validated.
pub fn one_f_one_b(p: u32, m: u32) -> ValidPlan {
    pipeweave_check::validate(pipeweave_plan::testing::one_f_one_b(p, m)).expect("1F1B is valid")
}
