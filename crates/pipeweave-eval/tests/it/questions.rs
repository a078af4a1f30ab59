//! DualPipe's second model copy: bytes per GPU and share of GPU memory, dense 70B at PP 8 against
//! the 671B MoE at PP 16, checked against the arithmetic a student does by hand.

use crate::load;
use pipeweave_eval::dualpipe_param_cost;

const GB: f64 = 1e9;

#[test]
fn dense_70b_pp8_second_copy() {
    let spec = load("dense-70b-h100-pp8.toml");
    let cost = dualpipe_param_cost(&spec).expect("one stage per rank");
    // A layer: attention 2·8192·(64·128) + 2·8192·(8·128), gated MLP 3·8192·28672; 10 layers per
    // part, tp 8; the first part adds the embedding, the last the head (128256·8192 each).
    let layer = 2.0 * 8192.0 * 8192.0 + 2.0 * 8192.0 * 1024.0 + 3.0 * 8192.0 * 28672.0;
    let vocab = 128256.0 * 8192.0;
    let end_part = (10.0 * layer + vocab) / 8.0;
    // 1F1B: rank 0 holds part 0; DualPipe: rank 0 holds parts 0 and 7. BF16 weights.
    let one = 2.0 * end_part;
    let two = 2.0 * (2.0 * end_part);
    assert!(
        (cost.weights_one_copy - one).abs() < 1.0,
        "{}",
        cost.weights_one_copy
    );
    assert!((cost.weights_two_copies - two).abs() < 1.0);
    // About 2.4 GB more per GPU: 2.8% of the 79.11 GiB PyTorch sees on an H100 80GB.
    assert!(
        (cost.extra_weights() / GB - 2.40).abs() < 0.01,
        "{}",
        cost.extra_weights() / GB
    );
    assert!(
        (cost.extra_weights_share() - 0.0283).abs() < 0.0005,
        "{}",
        cost.extra_weights_share()
    );
}

#[test]
fn moe_671b_pp16_second_copy() {
    let spec = load("deepseek-v3-h800-pp16-ep64.toml");
    let cost = dualpipe_param_cost(&spec).expect("one stage per rank");
    // MLA attention: 7168·1536 + 1536·128·192 + 7168·576 + 512·128·256 + 128·128·7168.
    let attn = 7168.0 * 1536.0
        + 1536.0 * 128.0 * 192.0
        + 7168.0 * 576.0
        + 512.0 * 128.0 * 256.0
        + 128.0 * 128.0 * 7168.0;
    let expert = 3.0 * 7168.0 * 2048.0;
    // An MoE layer on one GPU: attention, router, shared expert, 256 / 64 routed experts.
    let moe = attn + 7168.0 * 256.0 + expert + 4.0 * expert;
    let dense = attn + 3.0 * 7168.0 * 18432.0;
    let vocab = 129280.0 * 7168.0;
    let first = 3.0 * dense + vocab;
    // The last part also holds the multi-token-prediction module: one more MoE layer and its
    // 2h → h projection (the embedding and the head are shared).
    let last = 2.0 * moe + vocab + moe + 2.0 * 7168.0 * 7168.0;
    // Rank 0 is the most loaded in both: part 0, and with DualPipe parts 0 and 15.
    let one = 2.0 * first;
    let two = 2.0 * (first + last);
    assert!((cost.weights_one_copy - one).abs() < 1.0);
    assert!((cost.weights_two_copies - two).abs() < 1.0);
    // About 4.5 GB more per GPU: 5.3% of the 79.11 GiB PyTorch sees on an H800.
    assert!(
        (cost.extra_weights() / GB - 4.51).abs() < 0.01,
        "{}",
        cost.extra_weights() / GB
    );
    assert!(
        (cost.extra_weights_share() - 0.0531).abs() < 0.0005,
        "{}",
        cost.extra_weights_share()
    );
}
