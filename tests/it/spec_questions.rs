//! The DualPipe student's first question, answered with the default spec (dense 70B at PP 8 on
//! 1,024 H100, M = 16): how many GPU-hours per million tokens does DualPipe recover over 1F1B?
//!
//! By hand: with F = I = W = 1 (B = 2), 1F1B at P = 8, M = 16 takes (M + P − 1)(F + B) = 69 units
//! and DualPipe 54 (its published 11.1% bubble over 48 units of work per rank); GPU-hours per
//! million tokens = GPUs × step time / 3600 / (million tokens per step). The spec's last stage is
//! heavier (the output head), which 1F1B pays on every micro-batch.

use pipeweave_check::ValidPlan;
use pipeweave_eval::{evaluate, gpu_hours_recovered_per_million_tokens};
use pipeweave_generators::{DualOptions, dualpipe};
use pipeweave_spec::default_spec;

fn one_f_one_b(p: u32, m: u32) -> ValidPlan {
    pipeweave_check::validate(pipeweave_plan::testing::one_f_one_b(p, m)).expect("1F1B is valid")
}

fn dualpipe_plan(p: u32, m: u32) -> ValidPlan {
    let plan = dualpipe(p, m, DualOptions::default()).expect("DualPipe builds");
    pipeweave_check::validate(plan).expect("DualPipe is valid")
}

#[test]
fn dualpipe_recovers_gpu_hours_over_1f1b_at_p8_m16() {
    let spec = default_spec().expect("the default spec parses");
    assert_eq!((spec.parallelism.pp, spec.training.microbatches), (8, 16));
    let base = one_f_one_b(8, 16);
    let dual = dualpipe_plan(8, 16);
    assert!(spec.check_plan(&dual).is_empty());
    let first = evaluate(&spec, &base).expect("1F1B evaluates");
    let (costs, r1) = (first.costs, first.report);
    let r2 = evaluate(&spec, &dual).expect("DualPipe evaluates").report;
    assert_eq!(r2.model_copies, 2);

    let recovered = gpu_hours_recovered_per_million_tokens(&r1, &r2);
    // The definition, from the two simulated steps.
    let mtok = r1.tokens_per_step / 1e6;
    let exact = 1024.0 * (r1.step_time_s - r2.step_time_s) / 3600.0 / mtok;
    assert!((recovered - exact).abs() < 1e-12);
    // The student's estimate. 1F1B runs at the pace of its slowest stage, the last one, which also
    // carries the output head: (P − 1)(F + B) + M (F + B)_last. DualPipe puts both ends of the
    // model on ranks 0 and 7 and takes 18 F + B of a middle part (54 forward times at B = 2F; a
    // backward's GEMMs have shapes of their own, so B is taken as costed). Real stages also
    // differ in I against W and pay transfers, so allow 10%.
    let pass = |q: usize| costs.parts[q].f.cost.duration + costs.parts[q].b.cost.duration;
    let t_1f1b = 7.0 * pass(1) + 16.0 * pass(7);
    let t_dual = 18.0 * pass(1);
    let by_hand = 1024.0 * (t_1f1b - t_dual) / 3600.0 / mtok;
    assert!(
        (recovered - by_hand).abs() <= 0.1 * by_hand,
        "recovered {recovered} vs by hand {by_hand}: 1F1B {} s, DualPipe {} s",
        r1.step_time_s,
        r2.step_time_s
    );
    // Over the whole 15T-token run.
    let run = recovered * spec.training.total_tokens / 1e6;
    insta::assert_snapshot!(format!(
        "1F1B: step {:.3} s, bubble {:.1}%, {:.4} GPU-h/Mtok\nDualPipe: step {:.3} s, bubble {:.1}%, {:.4} GPU-h/Mtok\nrecovered {:.4} GPU-h per million tokens (by hand {:.4}), {:.0} GPU-hours over the run",
        r1.step_time_s,
        r1.bubble_fraction * 100.0,
        r1.gpu_hours_per_million_tokens,
        r2.step_time_s,
        r2.bubble_fraction * 100.0,
        r2.gpu_hours_per_million_tokens,
        recovered,
        by_hand,
        run
    ));
}

/// DeepSeek-V3's configuration: DualPipe's overlapped F&B pairs hide most of the expert
/// all-to-all that 1F1B pays in full, and its two model copies cost parameter memory.
#[test]
fn dualpipe_hides_expert_all_to_all_on_deepseek_v3() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../specs/deepseek-v3-h800-pp16-ep64.toml"),
    )
    .expect("shipped spec");
    let (spec, diags) = pipeweave_spec::parse(&text, pipeweave_diagnostics::FileId(0));
    assert!(diags.is_empty(), "{diags:?}");
    let spec = spec.expect("spec");
    let m = spec.training.microbatches;
    let r1 = evaluate(&spec, &one_f_one_b(16, m))
        .expect("1F1B evaluates")
        .report;
    let dual = dualpipe_plan(16, m);
    let r2 = evaluate(&spec, &dual).expect("DualPipe evaluates").report;
    assert!(
        r2.breakdown_per_rank_mean_s.exposed_all_to_all_s
            < r1.breakdown_per_rank_mean_s.exposed_all_to_all_s / 2.0
    );
    assert!(r2.step_time_s < r1.step_time_s);
    insta::assert_snapshot!(format!(
        "1F1B: step {:.3} s, bubble {:.1}%, exposed comm per rank {:.3} s, {:.4} GPU-h/Mtok, {:.1}% of peak\nDualPipe: step {:.3} s, bubble {:.1}%, exposed comm per rank {:.3} s, {:.4} GPU-h/Mtok, {:.1}% of peak",
        r1.step_time_s,
        r1.bubble_fraction * 100.0,
        r1.exposed_comm_per_rank_mean_s,
        r1.gpu_hours_per_million_tokens,
        r1.achieved_fraction_of_peak * 100.0,
        r2.step_time_s,
        r2.bubble_fraction * 100.0,
        r2.exposed_comm_per_rank_mean_s,
        r2.gpu_hours_per_million_tokens,
        r2.achieved_fraction_of_peak * 100.0,
    ));
}
