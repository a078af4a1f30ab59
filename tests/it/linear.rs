//! Every pass follows the actions, whatever the shape: many pipelines of few micro-batches, many
//! ranks, split backwards and overlapped pairs. The measure is deterministic: the bytes of the
//! tables each pass asks for (`pipeweave_plan::memory::ledger`, through which the passes allocate
//! their tables sized by the plan), against the plan's operations. A table per stage and
//! micro-batch id, as the passes had, is K² for K one-stage pipelines of a micro-batch each.
//!
//! One test is timed, with a bound twenty times what it takes (100,000 one-stage pipelines through
//! the passes): it says the whole runs in time, where the others say each table is small.

use pipeweave_check::ValidPlan;
use pipeweave_diagnostics::FileId;
use pipeweave_export::Document;
use pipeweave_plan::memory::ledger;
use pipeweave_plan::testing::{many_pipelines, one_stage_pipelines};
use pipeweave_plan::{Plan, Timing};
use pipeweave_sim::UnitCosts;
use proptest::prelude::*;
use std::time::{Duration, Instant};

/// Bytes of tables a pass may ask for per operation of the plan (the largest, the simulator's and
/// the trace's, ask for some 60 and 100), and whatever the plan.
const PER_OP: usize = 256;
const ANY_PLAN: usize = 64 << 10;

/// Writes a document where nothing keeps it.
fn written(doc: &impl Document) {
    doc.write_to(&mut std::io::sink())
        .expect("a sink takes anything");
}

/// Runs every pass on a valid `plan`; returns what each asked for, by name.
fn passes(plan: &ValidPlan) -> Vec<(&'static str, usize)> {
    let (problems, validator) = ledger::asked(|| pipeweave_check::problems(plan));
    assert_eq!(problems, [], "a valid plan");
    let (_, lowering) = ledger::asked(|| pipeweave_plan::try_lower(plan).map(|l| l.num_steps()));
    let (timeline, simulator) =
        ledger::asked(|| pipeweave_sim::simulate(plan, &UnitCosts).expect("a valid plan runs"));
    let timing: &Timing = &timeline.timing;
    let (_, actions) = ledger::asked(|| written(&pipeweave_export::actions_text(plan)));
    let (json, json_writer) = ledger::asked(|| {
        pipeweave_export::json_text(plan, Some(timing))
            .expect("writes")
            .to_text()
    });
    let (read, json_reader) = ledger::asked(|| pipeweave_export::read_json(&json, FileId(0)));
    assert_eq!(read.expect("reads back").plan, **plan);
    let (_, trace) = ledger::asked(|| {
        written(&pipeweave_export::chrome_trace(plan, timing, 1.0).expect("a trace"));
    });
    let (_, pytorch) = ledger::asked(|| {
        // PyTorch's runtime takes one pipeline; other plans are refused, at no cost either.
        if let Ok(csv) = pipeweave_export::pytorch_comms_csv(plan) {
            written(&csv);
        }
    });
    vec![
        ("the validator", validator),
        ("the lowering", lowering),
        ("the simulator", simulator),
        ("the actions writer", actions),
        ("the JSON writer", json_writer),
        ("the JSON reader", json_reader),
        ("the trace", trace),
        ("the compute_comms CSV", pytorch),
    ]
}

fn linear_in_the_operations(plan: Plan) -> Result<(), TestCaseError> {
    let plan = pipeweave_check::validate(plan).expect("the strategy makes valid plans");
    let bound = PER_OP * plan.num_ops() + ANY_PLAN;
    for (pass, bytes) in passes(&plan) {
        prop_assert!(
            bytes <= bound,
            "{pass} asked for {bytes} bytes for {} operations of {} pipelines on {} ranks",
            plan.num_ops(),
            plan.model_copies(),
            plan.ranks()
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_pass_asks_for_tables_in_proportion_to_the_operations(plan in many_pipelines()) {
        linear_in_the_operations(plan)?;
    }
}

/// The shape the audit found: N one-stage pipelines of a micro-batch each on one rank. Ten times
/// the pipelines, ten times the bytes (they were a hundred times).
#[test]
fn ten_times_the_pipelines_ask_for_ten_times_the_tables() {
    let asked = |n: u32| {
        let plan = pipeweave_check::validate(one_stage_pipelines(n)).expect("valid");
        passes(&plan)
    };
    let (small, large) = (asked(2_000), asked(20_000));
    for ((pass, small), (_, large)) in small.into_iter().zip(large) {
        assert!(
            large <= 11 * small + ANY_PLAN,
            "{pass}: {small} bytes for 2,000 pipelines, {large} for 20,000"
        );
    }
    linear_in_the_operations(one_stage_pipelines(20_000)).expect("linear");
}

/// 100,000 one-stage pipelines validated, lowered, simulated and written as a trace (the validator
/// alone asked for 149 GiB, the trace took 12 s at a tenth of them). It takes about 2.5 s in a
/// debug build here; the bound is 20 times that.
#[test]
fn a_hundred_thousand_pipelines_go_through_the_passes_in_time() {
    let start = Instant::now();
    let plan = pipeweave_check::validate(one_stage_pipelines(100_000)).expect("valid");
    let lowered = pipeweave_plan::try_lower(&plan).expect("lowers");
    assert_eq!(lowered.num_steps(), 400_000);
    let timeline = pipeweave_sim::simulate(&plan, &UnitCosts).expect("runs");
    written(&pipeweave_export::chrome_trace(&plan, &timeline.timing, 1.0).expect("a trace"));
    let took = start.elapsed();
    assert!(
        took < Duration::from_secs(50),
        "100,000 pipelines took {took:?} through the passes"
    );
}
