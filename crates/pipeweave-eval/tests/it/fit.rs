//! The spec adapted to a plan's shape: ranks, parts and micro-batches.

use crate::{library, load};
use pipeweave_eval::{fit_spec, split_layers};

#[test]
fn fit_spec_adapts_ranks_parts_and_microbatches() {
    let deepseek = load("deepseek-v3-h800-pp16-ep64");
    // DualPipeV at P = 16: 32 parts of 61 layers, lighter at both ends.
    let plan = library("dualpipev", 16, 32).expect("builds");
    let (fitted, notes) = fit_spec(&deepseek, &plan).expect("fits");
    assert_eq!(fitted.parallelism.stages_per_rank, 2);
    assert_eq!(fitted.parallelism.layers_per_stage.len(), 32);
    assert_eq!(fitted.parallelism.layers_per_stage.iter().sum::<u64>(), 61);
    assert_eq!(fitted.parallelism.layers_per_stage[0], 1);
    assert_eq!(fitted.parallelism.layers_per_stage[31], 1);
    assert_eq!(fitted.training.microbatches, 32);
    assert!(fitted.check_plan(&plan).is_empty());
    assert_eq!(notes.len(), 1, "{notes:?}");
    // 1F1B at P = 8: dp doubles to 256, which expert parallelism 64 divides.
    let (fitted, _) = fit_spec(&deepseek, &library("1f1b", 8, 120).expect("builds")).expect("fits");
    assert_eq!((fitted.parallelism.pp, fitted.parallelism.dp), (8, 256));
    // P = 3 does not divide 2,048 GPUs.
    let err = fit_spec(&deepseek, &library("1f1b", 3, 6).expect("builds")).expect_err("no fit");
    assert!(err.contains("do not split"), "{err}");
    // The spec's own shape keeps its explicit split.
    let own = library("1f1b", 16, 120).expect("builds");
    let (fitted, notes) = fit_spec(&deepseek, &own).expect("fits");
    assert_eq!(fitted, deepseek);
    assert!(notes.is_empty());
}

#[test]
fn layers_split_evenly_with_light_ends() {
    assert_eq!(split_layers(8, 4), vec![2, 2, 2, 2]);
    assert_eq!(split_layers(10, 4), vec![2, 3, 3, 2]);
    assert_eq!(split_layers(61, 16).iter().sum::<u64>(), 61);
    assert_eq!(split_layers(5, 4), vec![1, 2, 1, 1]);
}
