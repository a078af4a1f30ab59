//! Every file pipeweave writes reads back to the same plan, told apart by its text: the actions
//! text, PyTorch's compute-only and compute_comms CSVs, the JSON plan. Over the library schedules
//! and the plugins' generators at random sizes (and their evaluation forms), and random valid
//! plans.

use pipeweave_check::ValidPlan;
use pipeweave_diagnostics::FileId;
use pipeweave_export::{
    PlanFormat, read_actions, read_json, read_pytorch_comms, write_actions, write_json,
    write_pytorch, write_pytorch_comms,
};
use pipeweave_generators::{ChimeraOptions, DualOptions, Joins, chimera, dualpipe, dualpipev};
use pipeweave_plan::Plan;
use pipeweave_plan::testing::edited_gpipe;
use proptest::prelude::*;

/// The plugins' generators, after the library's schedules.
const GENERATORS: [&str; 3] = ["plugin:dualpipe", "plugin:dualpipev", "plugin:chimera"];

fn names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = pipeweave_dsl::library::all().map(|e| e.name).collect();
    names.extend(GENERATORS);
    names
}

/// The plan `name` gives for P ranks, M micro-batches and the option bits `flags`, when it takes
/// those sizes.
fn schedule(name: &str, p: u32, m: u32, flags: u32) -> Option<Plan> {
    let dual = DualOptions {
        weight_split: flags & 1 == 0,
        overlap: flags & 2 == 0,
    };
    match name {
        "plugin:dualpipe" => dualpipe(p, m, dual).ok(),
        "plugin:dualpipev" => dualpipev(p, m, dual).ok(),
        "plugin:chimera" => chimera(
            p,
            m,
            ChimeraOptions {
                pipelines: if flags & 4 == 0 { 2 } else { 4 },
                joins: if flags & 1 == 1 {
                    Joins::Doubling
                } else {
                    Joins::Direct
                },
            },
        )
        .ok(),
        _ => {
            let entry = pipeweave_dsl::library::get(name)?;
            let mut args = pipeweave_dsl::Args::new(p, m);
            let info = pipeweave_dsl::info(entry.source);
            for param in &info.params {
                args = match param.name.as_str() {
                    // megatron-interleaved takes v from 2 (one chunk per rank is not interleaving)
                    "v" if name == "megatron-interleaved" => {
                        args.with("v", i64::from(2 + flags % 3))
                    }
                    "v" => args.with("v", i64::from(1 + flags % 3)),
                    "weight_split" => args.with("weight_split", flags & 1 == 0),
                    "overlap" => args.with("overlap", flags & 2 == 0),
                    _ => args,
                };
            }
            let compiled = pipeweave_dsl::compile(FileId(0), entry.source, &args).ok()?;
            Some(compiled.plan)
        }
    }
}

/// Writes `plan` in every format that takes it and reads each back, the form told by the text.
fn round_trip(valid: &ValidPlan) -> Result<(), TestCaseError> {
    let plan = valid.plan();
    // The number of pipelines is not given: the text shows it.
    let text = write_actions(valid);
    prop_assert_eq!(PlanFormat::detect(&text), PlanFormat::Actions);
    // The actions text has no place to say a plan is an evaluation step: the reader is told
    // (`--forward-only`), as here.
    let back = read_actions(&text, FileId(0), None).map(|f| {
        if plan.is_forward_only() {
            f.plan.into_evaluation()
        } else {
            f.plan
        }
    });
    prop_assert_eq!(back.as_ref(), Ok(plan), "actions:\n{}", text);

    let text = write_json(valid, None).map_err(|d| TestCaseError::fail(d.message))?;
    prop_assert_eq!(PlanFormat::detect(&text), PlanFormat::Json);
    let back = read_json(&text, FileId(0)).map(|f| f.plan);
    prop_assert_eq!(back.as_ref(), Ok(plan), "json:\n{}", text);

    if let Ok(text) = write_pytorch(valid) {
        prop_assert_eq!(PlanFormat::detect(&text), PlanFormat::Actions);
        let back = read_actions(&text, FileId(0), Some(1)).map(|f| f.plan);
        prop_assert_eq!(back.as_ref(), Ok(plan), "pytorch:\n{}", text);
    }
    if let Ok(text) = write_pytorch_comms(valid) {
        prop_assert_eq!(PlanFormat::detect(&text), PlanFormat::PytorchComms);
        let back = read_pytorch_comms(&text, FileId(0));
        let back = back.map_err(|d| TestCaseError::fail(format!("{d:?}\n{text}")))?;
        prop_assert_eq!(&back.plan, plan, "pytorch-comms:\n{}", text);
        prop_assert_eq!(back.check(), vec![], "pytorch-comms:\n{}", text);
        prop_assert_eq!(back.notes(), vec![]);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn library_schedules_and_plugins_read_back(
        which in 0usize..64,
        p in 1u32..9,
        rounds in 1u32..4,
        extra in prop_oneof![3 => Just(0u32), 1 => 1u32..8],
        flags in 0u32..16,
    ) {
        let names = names();
        let name = names[which % names.len()];
        // Sizes most schedules take: M a multiple of P (or of 2P), sometimes a little more.
        let m = p * rounds * if name.contains("dual") { 2 } else { 1 } + extra;
        let Some(plan) = schedule(name, p, m, flags) else {
            return Ok(());
        };
        // Half the time its evaluation form, which validates and reads back too.
        let plan = if flags & 8 == 0 { plan } else { plan.forward_only() };
        let valid = pipeweave_check::validate(plan);
        let valid = valid.map_err(|e| TestCaseError::fail(format!("{name} P={p} M={m}: {e:?}")))?;
        round_trip(&valid)?;
    }

    #[test]
    fn random_valid_plans_read_back(plan in edited_gpipe()) {
        if let Ok(valid) = pipeweave_check::validate(plan) {
            round_trip(&valid)?;
        }
    }
}

/// Every library schedule and generator is covered at some size the property draws from.
#[test]
fn every_schedule_reads_back_at_some_size() {
    for name in names() {
        let built = (2..=8u32)
            .flat_map(|p| (1..=3).map(move |r| (p, 2 * p * r)))
            .find_map(|(p, m)| schedule(name, p, m, 0));
        let plan = built.unwrap_or_else(|| panic!("{name} builds at no size"));
        let eval = pipeweave_check::validate(plan.forward_only()).expect("valid evaluation plan");
        let valid = pipeweave_check::validate(plan).expect("valid");
        for valid in [valid, eval] {
            if let Err(e) = round_trip(&valid) {
                panic!("{name}: {e}");
            }
        }
    }
}
