//! The cost model's terms on hand-computed cases: compute from the operations, the expert
//! all-to-all, tensor-parallel collectives, the F&B overlap and its SM share, activation memory,
//! the data-parallel buckets and the optimizer.

use crate::plans::one_f_one_b;
use crate::specs::load;
use pipeweave_cost::CostTable;
use pipeweave_cost::comm::{Links, Spread, reduce_scatter};
use pipeweave_diagnostics::FileId;
use pipeweave_plan::{Kind, Op, Pipeline, Plan};
use pipeweave_sim::CostModel;
use pipeweave_spec::parse;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-30f64)
}

/// The unit GPU: GEMMs and attention at 100 TFLOP/s × 0.5, HBM at 1,000 GB/s.
const SPEED: f64 = 100e12 * 0.5;
const HBM: f64 = 1000e9;

#[test]
fn unit_spec_forward_time_by_hand() {
    // Two GPT layers of hidden 1024 (4h² attention + 8h² MLP weights) on 1024 tokens:
    // linear 2·12·1024²·1024 FLOPs; FlashAttention's causal core 1024·1024·8·(128+128), its
    // backward 2.5 times that; element-wise bytes per token and layer: two norms (2h·2 each),
    // two residual adds (3h·2 each), rotary embedding of 8 query and 8 key heads of 128 (read,
    // write), GELU (read, write 4h) = 20h + 8192 + 4·4096·2.
    // Kernels per layer, each 0.9 µs: forward 11 (attention: norm, QKV and output GEMMs, rotary,
    // FlashAttention, residual add; MLP: norm, two GEMMs, GELU, residual add), input gradient 13
    // (FlashAttention's backward three kernels), weight gradient 4 (one per GEMM).
    //
    // Each GEMM runs at the rate's share its tiles and waves over the unit GPU's 100 SMs leave
    // it (the best of 256×128, 128×256 and 128×128 tiles): an output of 1,024 × 3,072 is 96
    // tiles of 256×128 in one wave, 0.96; 1,024 × 1,024 is 64 tiles of 128×128 in one wave,
    // 0.64; 1,024 × 4,096 is 256 tiles of 128×128 in three waves, 256/300. The input gradient
    // of a layer of n outputs and k inputs has an output of T × k, the weight gradient k × n.
    let launch = pipeweave_cost::LAUNCH_GAP_S;
    let spec = load("unit.toml");
    let costs = CostTable::new(&spec, &one_f_one_b(4, 8)).expect("fits");
    let h = 1024.0f64;
    let t = 1024.0f64;
    let (wide, square, mlp) = (0.96, 0.64, 256.0 / 300.0);
    let gemm = |weights: f64, share: f64| 2.0 * weights * h * h * t / share;
    // QKV (3h² weights) and the output projection (h²); the MLP's two layers (4h² each)
    let linear_f = gemm(3.0, wide) + gemm(1.0, square) + gemm(4.0, mlp) + gemm(4.0, square);
    let linear_i = gemm(3.0, square) + gemm(1.0, square) + gemm(4.0, square) + gemm(4.0, mlp);
    let linear_w = gemm(3.0, wide) + gemm(1.0, square) + gemm(4.0, mlp) + gemm(4.0, mlp);
    // FlashAttention's grid: 8 blocks of 128 queries for each of 8 heads, 64 blocks on 100 SMs
    let core = t * 1024.0 * 8.0 * 256.0 / 0.64;
    let bytes = (20.0 * h + 2.0 * 2048.0 * 2.0 + 2.0 * 4096.0 * 2.0) * t;
    let f = 2.0 * (linear_f / SPEED + core / SPEED + bytes / HBM + 11.0 * launch);
    let i = 2.0 * (linear_i / SPEED + 2.5 * core / SPEED + 2.0 * bytes / HBM + 13.0 * launch);
    // W: the weight GEMMs, and each FP32 gradient read and written once per micro-batch
    let w = 2.0 * (linear_w / SPEED + 2.0 * 12.0 * h * h * 4.0 / HBM + 4.0 * launch);
    let part = &costs.parts[1];
    assert!(
        close(part.f.cost.duration, f),
        "{} vs {f}",
        part.f.cost.duration
    );
    assert!(
        close(part.i.cost.duration, i),
        "{} vs {i}",
        part.i.cost.duration
    );
    assert!(
        close(part.w.cost.duration, w),
        "{} vs {w}",
        part.w.cost.duration
    );
    assert!(close(part.b.cost.duration, i + w));
    // The last part adds the output head: 2·vocab·hidden·tokens forward, the final norm and the
    // FP32 logits read and written by the loss; five kernels (norm, GEMM, the loss's three).
    let head = 2.0 * 32000.0 * h * t / SPEED
        + (2.0 * h * 2.0 + 2.0 * 32000.0 * 4.0) * t / HBM
        + 5.0 * launch;
    assert!(close(costs.parts[3].f.cost.duration, f + head));
    // Activation point-to-point inside the node: 1 µs + 1024·1024·2 bytes at 100 GB/s.
    assert!(close(costs.transfer(0, 1), 1e-6 + t * h * 2.0 / 100e9));
}

#[test]
fn blocking_sends_hold_the_sender() {
    // With `p2p_blocking` an action that sends to another rank holds its rank for the transfer
    // (1 µs + 1024·1024·2 bytes at 100 GB/s) and the host's synchronisation; the receiver then
    // has its input as the sender ends.
    let mut spec = load("unit.toml");
    let plan = one_f_one_b(4, 8);
    let free = CostTable::new(&spec, &plan).expect("fits");
    spec.training.p2p_blocking = true;
    let blocking = CostTable::new(&spec, &plan).expect("fits");
    let send = 1e-6 + 1024.0 * 1024.0 * 2.0 / 100e9 + pipeweave_cost::RESYNC_S;
    let op = |stage, kind| Op { stage, kind, mb: 0 };
    for (stage, kind, held) in [
        (0, Kind::F, send),
        (3, Kind::F, 0.0),
        (3, Kind::B, send),
        (0, Kind::B, 0.0),
        (1, Kind::W, 0.0),
    ] {
        let (a, b) = (
            free.op_cost(op(stage, kind)),
            blocking.op_cost(op(stage, kind)),
        );
        assert!(close(b.duration, a.duration + held), "{stage}{kind:?}");
        assert!(close(b.p2p, held));
        assert!(close(b.exposed(), a.exposed() + held));
    }
    assert_eq!(blocking.transfer(0, 1), 0.0);
    assert!(free.transfer(0, 1) > 0.0);
}

const MOE: &str = r#"
name = "moe"
[cluster]
gpu = "unit"
network = "unit"
gpus_per_node = 4
nodes = 4
[cluster.override]
network_latency_us = { value = 0, source = "a test" }
intra_node_latency_us = { value = 0, source = "a test" }
[model]
layers = 4
hidden = 1024
heads = 8
kv_heads = 8
ffn = 4096
vocab = 1000
[model.moe]
routed_experts = 16
experts_per_token = 4
shared_experts = 1
expert_ffn = 512
dense_layers = 1
[training]
sequence_length = 1024
micro_batch_size = 1
microbatches = 8
total_tokens = 1e9
[parallelism]
pp = 2
tp = 1
ep = 8
dp = 8
"#;

pub fn moe_spec() -> pipeweave_spec::Spec {
    let (spec, diags) = parse(MOE, FileId(0));
    assert!(diags.is_empty(), "{diags:?}");
    spec.expect("moe spec")
}

/// Two pipelines in opposite directions (DualPipe's placement) with no actions.
pub fn dual_placement(p: u32) -> Plan {
    Plan::new(
        p,
        vec![
            Pipeline {
                placement: (0..p).collect(),
                microbatches: vec![0],
            },
            Pipeline {
                placement: (0..p).rev().collect(),
                microbatches: vec![1],
            },
        ],
        vec![Vec::new(); p as usize],
    )
    .expect("valid structure")
}

#[test]
fn expert_all_to_all_by_hand() {
    // ep 8 over nodes of 4 GPUs with pp outermost: the group spans 2 nodes of 4.
    // A token goes to 4 experts: over NVLink 4 copies × 3/4 leave the GPU's node-mates, over the
    // inter-node network 4 copies × 1/2 leave the node; BF16 both ways (no dispatch format set).
    let spec = moe_spec();
    let costs = CostTable::new(&spec, &one_f_one_b(2, 8)).expect("fits");
    let bytes: f64 = 1024.0 * 4.0 * 1024.0 * 2.0;
    let nvlink = bytes * 0.75 / 100e9;
    let ib = bytes * 0.5 / 10e9;
    let one = nvlink.max(ib);
    // Part 0 holds layers 0 (dense) and 1 (MoE): one dispatch and one combine.
    assert!(close(costs.parts[0].all_to_all, 2.0 * one));
    assert!(close(costs.parts[1].all_to_all, 4.0 * one));
    // A lone forward pays it in full.
    let f = Op::new(1, Kind::F, 0);
    assert!(close(costs.exposed_op(f), 4.0 * one));
    let c = costs.op_cost(f);
    assert!(close(c.duration, c.compute + 4.0 * one));
    assert!(close(c.exposed_all_to_all, 4.0 * one));
}

#[test]
fn an_overlapped_pair_hides_communication_and_pays_for_its_sms() {
    let spec = moe_spec();
    let plan = dual_placement(2);
    let costs = CostTable::new(&spec, &plan).expect("fits");
    // Rank 0 pairs the forward of part 0 (pipeline 0) with the backward of part 1 (pipeline 1,
    // global stage 3).
    let f = Op::new(0, Kind::F, 0);
    let b = Op::new(3, Kind::B, 1);
    let pair = costs.pair_cost(f, b);
    let alone = costs.op(f) + costs.op(b);
    let compute = costs.parts[0].f.cost.compute + costs.parts[1].b.cost.compute;
    let comm = costs.parts[0].all_to_all + 2.0 * costs.parts[1].all_to_all;
    assert!(pair.duration < alone, "pair {pair:?} should beat {alone}");
    // The pair reserves 20 of the unit GPU's 100 SMs for communication: its compute runs at 0.8.
    assert!(close(pair.compute, compute));
    assert!(close(pair.slowdown, compute / 0.8 - compute));
    assert!(pair.duration >= (compute / 0.8).max(comm) - 1e-12);
    assert!(close(
        pair.duration,
        pair.compute + pair.slowdown + pair.exposed()
    ));
    assert!(close(costs.exposed_pair(f, b), pair.exposed()));
}

#[test]
fn tensor_parallel_collectives_by_hand() {
    // The unit spec at tp 2 on one node: every block all-gathers its input and reduce-scatters its
    // output (sequence parallelism) in the forward and in the backward, over NVLink (100 GB/s,
    // 1 µs): (2−1)/2 · T·h·2 bytes / 100 GB/s + 1 µs each.
    let src = crate::specs::source("unit.toml")
        .replace("tp = 1", "tp = 2")
        .replace("pp = 4", "pp = 2");
    let (spec, diags) = parse(&src, FileId(0));
    assert!(diags.is_empty(), "{diags:?}");
    let spec = spec.expect("parses");
    let costs = CostTable::new(&spec, &one_f_one_b(2, 8)).expect("fits");
    let n = 1024.0 * 1024.0 * 2.0;
    let ring = 0.5 * n / 100e9 + 1e-6;
    let links = Links::of(&spec);
    assert!(close(
        reduce_scatter(
            &links,
            n,
            Spread {
                nodes: 1.0,
                per_node: 2.0
            }
        ),
        ring
    ));
    // Part 0: four layers, two blocks each, two collectives per block.
    let p = &costs.parts[0];
    assert!(close(p.f.cost.exposed_tp, 4.0 * 2.0 * 2.0 * ring));
    assert!(close(p.i.cost.exposed_tp, 4.0 * 2.0 * 2.0 * ring));
    assert_eq!(p.w.cost.exposed_tp, 0.0);
    // Each sends (t−1)/t of the activation per collective.
    assert!(close(p.f.volume.tp, 4.0 * 2.0 * 2.0 * 0.5 * n));
}

/// The unit spec with extra `[training]` keys.
pub fn unit_with(extra: &str) -> pipeweave_spec::Spec {
    let src = crate::specs::source("unit.toml").replacen(
        "total_tokens = 1e9\n",
        &format!("total_tokens = 1e9\n{extra}"),
        1,
    );
    let (spec, diags) = parse(&src, FileId(0));
    assert!(
        !diags
            .iter()
            .any(pipeweave_diagnostics::Diagnostic::is_error),
        "{diags:?}"
    );
    spec.expect("parses")
}

#[test]
fn activation_options_change_memory_by_their_formulas() {
    let plan = one_f_one_b(4, 8);
    let base = CostTable::new(&unit_with(""), &plan).expect("fits");
    // Part 1: two GPT layers (plain MLP, hidden 1024, ffn 4096, 8 heads of 128) on 1024 tokens in
    // BF16: attention 2h + 3h (Q, K, V) + h, MLP 2h + 2·ffn per token and layer.
    let (h, ffn, t) = (1024.0f64, 4096.0f64, 1024.0f64);
    let per_layer = (6.0 * h + 2.0 * h + 2.0 * ffn) * t * 2.0;
    assert!(close(base.parts[1].activation_bytes, 2.0 * per_layer));
    assert_eq!(base.parts[1].activation_working_bytes, 0.0);

    // Norm outputs recomputed: h per block less, two blocks a layer.
    let norms = CostTable::new(&unit_with("recompute_norms = true\n"), &plan).expect("fits");
    assert!(close(
        norms.parts[1].activation_bytes,
        2.0 * (per_layer - 2.0 * h * t * 2.0)
    ));

    // FP8 cache: norm outputs, attention output and the GELU output leave BF16.
    let fp8 = CostTable::new(&unit_with("fp8_activation_cache = true\n"), &plan).expect("fits");
    let l = 1.0 + 4.0 / 128.0;
    let fp8_layer =
        (h * 2.0 + h * l + 3.0 * h * 2.0 + h * 1.5) + (h * 2.0 + h * l + ffn * 2.0 + ffn * l);
    assert!(close(fp8.parts[1].activation_bytes, 2.0 * fp8_layer * t));

    // Full recomputation: each layer keeps its input, one layer's activations are live on top,
    // and the backward (B and I) pays the layers' forward once more; W does not.
    let full = CostTable::new(&unit_with("recompute = \"full\"\n"), &plan).expect("fits");
    let p = &full.parts[1];
    assert!(close(p.activation_bytes, 2.0 * h * t * 2.0));
    assert!(close(p.activation_working_bytes, per_layer));
    let b = &base.parts[1];
    let (pb, pi, bf) = (p.b.cost.duration, p.i.cost.duration, b.f.cost.duration);
    assert!(
        close(pb, b.b.cost.duration + bf),
        "{pb} vs {}",
        b.b.cost.duration + bf
    );
    assert!(close(pi, b.i.cost.duration + bf));
    assert!(close(p.w.cost.duration, b.w.cost.duration));
    // The last part's logits stay.
    assert!(close(
        full.parts[3].activation_bytes,
        2.0 * h * t * 2.0 + 32000.0 * t * 4.0
    ));

    // Memory: full recomputation's rank 0 holds P = 4 layer inputs of part 0 plus one working set.
    let spec = unit_with("recompute = \"full\"\n");
    let mem = pipeweave_cost::rank_memory(&spec, &full, &plan, 0, 4);
    assert!(close(
        mem.activations,
        4.0 * full.parts[0].activation_bytes + per_layer
    ));
}

#[test]
fn standard_attention_keeps_its_score_matrices_unless_recomputed() {
    // Standard attention with dropout 0.1 keeps the softmax output (2 bytes), the dropout mask (1)
    // and the dropout output (2) per score: Korthikanti's 5·a·s²·b, and a 1-byte mask after
    // attention and after the MLP: per token and layer 8 heads × 1024 × 5 + 2h more.
    let plan = one_f_one_b(4, 8);
    let flash = CostTable::new(&unit_with(""), &plan).expect("fits");
    let std_ = CostTable::new(
        &unit_with("attention = \"standard\"\ndropout = 0.1\n"),
        &plan,
    )
    .expect("fits");
    let t = 1024.0f64;
    let extra = (8.0 * 1024.0 * 5.0 + 2.0 * 1024.0) * t;
    assert!(close(
        std_.parts[1].activation_bytes - flash.parts[1].activation_bytes,
        2.0 * extra
    ));
    // Selective recomputation drops the score matrices and recomputes them in the backward.
    let sel = CostTable::new(
        &unit_with("attention = \"standard\"\ndropout = 0.1\nrecompute = \"selective\"\n"),
        &plan,
    )
    .expect("fits");
    assert!(close(
        std_.parts[1].activation_bytes - sel.parts[1].activation_bytes,
        2.0 * 8.0 * 1024.0 * 5.0 * t
    ));
    assert!(sel.parts[1].i.cost.duration > std_.parts[1].i.cost.duration);
    assert!(close(
        sel.parts[1].f.cost.duration,
        std_.parts[1].f.cost.duration
    ));
}

#[test]
fn mla_up_projection_recompute_costs_its_flops_in_the_backward() {
    let src = crate::specs::source("deepseek-v3-h800-pp16-ep64.toml");
    let off = src.replace(
        "recompute_mla_up_projection = true",
        "recompute_mla_up_projection = false",
    );
    let (on, _) = parse(&src, FileId(0));
    let (off, _) = parse(&off, FileId(0));
    let (on, off) = (on.expect("parses"), off.expect("parses"));
    let plan = one_f_one_b(16, 120);
    let a = CostTable::new(&on, &plan).expect("fits");
    let b = CostTable::new(&off, &plan).expect("fits");
    // 4 layers of 4,096 tokens: 2·T·(1536·128·192 + 512·128·256) FP8 FLOPs each, at the 2024
    // CUTLASS kernels' 0.50 of the H800's 1,978.9 TFLOP/s, each GEMM at the share its tiles
    // leave over 132 SMs: the query's 4,096 × 24,576 output is 6,144 tiles of 128×128 in 47
    // waves, the key-value one's 4,096 × 32,768 8,192 tiles in 63.
    let q_up = 2.0 * 4096.0 * 1536.0 * 128.0 * 192.0 / (6144.0 / (47.0 * 132.0));
    let kv_up = 2.0 * 4096.0 * 512.0 * 128.0 * 256.0 / (8192.0 / (63.0 * 132.0));
    let extra = 4.0 * (q_up + kv_up) / (1978.9e12 * 0.5);
    assert!(close(
        a.parts[1].i.cost.compute,
        b.parts[1].i.cost.compute + extra
    ));
    assert!(close(
        a.parts[1].b.cost.compute,
        b.parts[1].b.cost.compute + extra
    ));
    assert!(close(
        a.parts[1].f.cost.duration,
        b.parts[1].f.cost.duration
    ));
    // Q, K and V (128 heads × (192 + 192 + 128) BF16 elements) are no longer kept.
    let qkv = 128.0 * (192.0 + 192.0 + 128.0) * 2.0 * 4096.0 * 4.0;
    assert!(close(
        b.parts[1].activation_bytes - a.parts[1].activation_bytes,
        qkv
    ));
}

#[test]
fn deepseek_v3_middle_ranks_fit_dualpipes_p_plus_one_micro_batches() {
    // DeepSeek-V3 trained DualPipe at PP 16 on 80 GB H800s (§3.2): a middle rank holds two parts
    // (one per pipeline), their weights and optimizer state, and P + 1 = 17 micro-batches of
    // activations at its peak. With the report's savings (§3.2.3, §3.3.3) that fits.
    let spec = load("deepseek-v3-h800-pp16-ep64.toml");
    let plan = dual_placement(16);
    let costs = CostTable::new(&spec, &plan).expect("fits");
    let part = &costs.parts[7];
    let state = pipeweave_cost::rank_state(&spec, &costs, &plan, 7);
    let total = state.total() + 17.0 * part.activation_bytes + spec.reserve_bytes();
    assert!(
        total < spec.memory_limit_bytes(),
        "{}",
        total / (1u64 << 30) as f64
    );
    // Without them (every activation in BF16) it does not.
    let plain =
        crate::specs::source("deepseek-v3-h800-pp16-ep64.toml").replace("= true", "= false");
    let (plain, _) = parse(&plain, FileId(0));
    let plain = plain.expect("parses");
    let costs = CostTable::new(&plain, &plan).expect("fits");
    let total = state.total() + 17.0 * costs.parts[7].activation_bytes;
    assert!(total > spec.memory_limit_bytes());
}

#[test]
fn gradient_buckets_and_the_optimizer_by_hand() {
    // The unit spec at pp 2 × dp 2 with ZeRO-1: part 1 (four GPT layers of 12h² weights and the
    // 32,000 × 1,024 head) on one GPU; Megatron's buckets of 4·10⁷ parameters; FP32 gradients
    // reduce-scattered over the 2 data-parallel GPUs of a node (100 GB/s, 1 µs); the optimizer
    // reads and writes its shard's FP32 master weight and moments, reads the gradient twice,
    // writes the BF16 weight (4·2 + 16 + 8 + 2 bytes), and zeroes every FP32 gradient (4 bytes).
    let src = crate::specs::source("unit.toml")
        .replace("dp = 1", "dp = 2")
        .replace("pp = 4", "pp = 2")
        .replace(
            "total_tokens = 1e9\n",
            "total_tokens = 1e9\nzero_stage = 1\n",
        );
    let (spec, diags) = parse(&src, FileId(0));
    assert!(diags.is_empty(), "{diags:?}");
    let spec = spec.expect("parses");
    let costs = CostTable::new(&spec, &one_f_one_b(2, 8)).expect("fits");
    let h = 1024.0f64;
    let params = 4.0 * 12.0 * h * h + 32000.0 * h;
    let sync = &costs.parts[1].sync;
    let n = (params / 4e7).ceil();
    assert_eq!(sync.buckets.len(), 1, "dense buckets only");
    assert_eq!(sync.buckets[0].count, n);
    let bucket = params / n * 4.0;
    let rs = 0.5 * bucket / 100e9 + 1e-6;
    assert!(close(sync.buckets[0].seconds, rs), "{:?}", sync.buckets);
    let opt = (params / 2.0 * (8.0 + 16.0 + 8.0 + 2.0) + params * 4.0) / 1000e9;
    assert!(close(sync.optimizer, opt), "{} vs {opt}", sync.optimizer);
    // All-gather of the updated BF16 weights, bucket by bucket.
    assert!(close(
        sync.gather_all,
        n * (0.5 * params / n * 2.0 / 100e9 + 1e-6)
    ));
    assert_eq!(sync.shard_dense, 2.0);
}

#[test]
fn a_pair_without_communication_gains_nothing_and_reserves_no_sms() {
    let spec = load("unit.toml");
    let costs = CostTable::new(&spec, &dual_placement(4)).expect("fits");
    let f = Op::new(1, Kind::F, 0);
    let b = Op::new(6, Kind::B, 1);
    let pair = costs.pair_cost(f, b);
    assert!(close(pair.duration, costs.op(f) + costs.op(b)));
    assert_eq!(pair.slowdown, 0.0);
    assert_eq!(costs.exposed_pair(f, b), 0.0);
}

#[test]
fn selective_recomputation_with_flash_attention_is_said_to_change_nothing() {
    // outside Megatron-Core, FlashAttention keeps no score matrix to drop
    let src = crate::specs::source("unit.toml").replacen(
        "total_tokens = 1e9\n",
        "total_tokens = 1e9\nrecompute = \"selective\"\nframework = \"torchtitan\"\n",
        1,
    );
    let (spec, diags) = parse(&src, FileId(0));
    assert!(spec.is_some());
    assert_eq!(diags.len(), 1);
    assert!(!diags[0].is_error());
    assert!(
        diags[0].message.contains("changes nothing") && diags[0].message.contains("torchtitan"),
        "{}",
        diags[0].message
    );
    let plan = one_f_one_b(4, 8);
    let none = CostTable::new(&unit_with("framework = \"torchtitan\"\n"), &plan).expect("fits");
    let sel = CostTable::new(
        &unit_with("framework = \"torchtitan\"\nrecompute = \"selective\"\n"),
        &plan,
    )
    .expect("fits");
    assert_eq!(sel.parts[1].i.cost, none.parts[1].i.cost);
}

#[test]
fn megatron_core_recomputes_the_flash_kernels_forward_under_selective_recomputation() {
    // Megatron-Core checkpoints the core attention whatever its kernel: the backward runs the
    // FlashAttention forward again, the forward and the memory stay as they are
    let plan = one_f_one_b(4, 8);
    let src = crate::specs::source("unit.toml").replacen(
        "total_tokens = 1e9\n",
        "total_tokens = 1e9\nrecompute = \"selective\"\n",
        1,
    );
    let (_, diags) = parse(&src, FileId(0));
    assert!(diags.is_empty(), "{diags:?}");
    let none = CostTable::new(&unit_with(""), &plan).expect("fits");
    let sel = CostTable::new(&unit_with("recompute = \"selective\"\n"), &plan).expect("fits");
    let (n, s) = (&none.parts[1], &sel.parts[1]);
    assert_eq!(s.f.cost, n.f.cost);
    assert_eq!(s.activation_bytes, n.activation_bytes);
    // the extra backward time is the forward's attention kernel, a part of the forward
    let extra = s.i.cost.duration - n.i.cost.duration;
    assert!(extra > 0.0 && extra < n.f.cost.duration, "{extra}");
}

#[test]
fn zero2_with_a_pipeline_keeps_full_gradients_and_copies_share_their_optimizer() {
    // The unit spec at pp 2 × dp 2: ZeRO-2 shards the optimizer over the 2 replicas, but with a
    // pipeline the FP32 gradients accumulate in full.
    let src = crate::specs::source("unit.toml")
        .replace("dp = 1", "dp = 2")
        .replace("pp = 4", "pp = 2");
    let with = |extra: &str| {
        let s = src.replacen(
            "total_tokens = 1e9\n",
            &format!("total_tokens = 1e9\n{extra}"),
            1,
        );
        let (spec, diags) = parse(&s, FileId(0));
        assert!(diags.is_empty(), "{diags:?}");
        spec.expect("parses")
    };
    let plan = one_f_one_b(2, 8);
    let z1 = with("zero_stage = 1\n");
    let z2 = with("zero_stage = 2\n");
    let c1 = CostTable::new(&z1, &plan).expect("fits");
    let c2 = CostTable::new(&z2, &plan).expect("fits");
    let m1 = pipeweave_cost::rank_state(&z1, &c1, &plan, 0);
    let m2 = pipeweave_cost::rank_state(&z2, &c2, &plan, 0);
    assert_eq!(m1, m2);
    let weights = c1.parts[0].dense_params;
    assert!(close(m1.grads, weights * 4.0));
    assert!(close(m1.optimizer, weights / 2.0 * 12.0));
    // Two model copies (DualPipe's placement): one optimizer state over both copies' 4 replicas,
    // or one per copy over its 2.
    let dual = dual_placement(2);
    let shared = CostTable::new(&z1, &dual).expect("fits");
    let z1_own = with("zero_stage = 1\noptimizer_shared_across_copies = false\n");
    let own = CostTable::new(&z1_own, &dual).expect("fits");
    let s = pipeweave_cost::rank_state(&z1, &shared, &dual, 0);
    let o = pipeweave_cost::rank_state(&z1_own, &own, &dual, 0);
    assert!(close(o.optimizer, 2.0 * s.optimizer));
    assert_eq!(shared.parts[0].sync.shard_dense, 4.0);
    assert_eq!(own.parts[0].sync.shard_dense, 2.0);
}

/// A plan that does not fit the spec (2 ranks on a spec of 4) has no cost table.
#[test]
fn a_plan_that_does_not_fit_the_spec_has_no_costs() {
    let spec = load("unit.toml");
    assert!(CostTable::new(&spec, &one_f_one_b(2, 3)).is_err());
    assert!(CostTable::new(&spec, &one_f_one_b(4, 8)).is_ok());
}

#[test]
fn learned_positions_drop_the_rotary_kernel_and_an_embedding_norm_costs_its_bytes() {
    // Rotary embedding per layer and token: 8 query and 8 key heads of 128 read and written in
    // BF16, 8,192 bytes, one kernel; the forward and the input gradient (twice the bytes) lose it
    // with learned positions, which add a 1,024 × 1,024 position table to the first part.
    let rotary = load("unit.toml");
    let plan = one_f_one_b(4, 8);
    let mut learned = rotary.clone();
    learned.model.positions = pipeweave_spec::Positions::Learned;
    let (a, b) = (
        CostTable::new(&rotary, &plan).expect("fits"),
        CostTable::new(&learned, &plan).expect("fits"),
    );
    let launch = pipeweave_cost::LAUNCH_GAP_S;
    let rope = 8192.0 * 1024.0 / HBM;
    let (pa, pb) = (&a.parts[1], &b.parts[1]);
    assert!(close(
        pa.f.cost.duration - pb.f.cost.duration,
        2.0 * (rope + launch)
    ));
    assert!(close(
        pa.i.cost.duration - pb.i.cost.duration,
        2.0 * (2.0 * rope + launch)
    ));
    assert!(close(
        b.parts[0].dense_params - a.parts[0].dense_params,
        1024.0 * 1024.0
    ));
    // BLOOM's embedding LayerNorm on the first part: 1,024 tokens × 1,024 × 2 bytes read and
    // written forward, twice that backward, one kernel each; its input kept
    let mut normed = rotary.clone();
    normed.model.embedding_norm = true;
    let c = CostTable::new(&normed, &plan).expect("fits");
    let x = 1024.0 * 1024.0 * 2.0;
    let (p0, q0) = (&a.parts[0], &c.parts[0]);
    assert!(close(
        q0.f.cost.duration - p0.f.cost.duration,
        2.0 * x / HBM + launch
    ));
    assert!(close(
        q0.i.cost.duration - p0.i.cost.duration,
        4.0 * x / HBM + launch
    ));
    assert!(close(q0.activation_bytes - p0.activation_bytes, x));
    assert!(close(q0.dense_params - p0.dense_params, 2.0 * 1024.0));
    // the other parts do not change
    assert_eq!(a.parts[1], c.parts[1]);
}

#[test]
fn parallel_blocks_share_one_norm_one_add_and_one_tensor_parallel_block() {
    // GPT-J / PaLM parallel layers on the unit spec: per layer and token the MLP's norm (2h·2
    // bytes) and residual add (3h·2) go, the one add reads one more input (h·2): 8,192 bytes
    // less each forward, twice that backward, two kernels fewer each; the MLP keeps neither the
    // layer input nor the norm output of its own (4h bytes per token less)
    let base = load("unit.toml");
    let plan = one_f_one_b(4, 8);
    let mut par = base.clone();
    par.model.parallel_blocks = true;
    let (a, b) = (
        CostTable::new(&base, &plan).expect("fits"),
        CostTable::new(&par, &plan).expect("fits"),
    );
    let launch = pipeweave_cost::LAUNCH_GAP_S;
    let bytes = 8192.0 * 1024.0 / HBM;
    let (pa, pb) = (&a.parts[1], &b.parts[1]);
    assert!(close(
        pa.f.cost.duration - pb.f.cost.duration,
        2.0 * (bytes + 2.0 * launch)
    ));
    assert!(close(
        pa.i.cost.duration - pb.i.cost.duration,
        2.0 * (2.0 * bytes + 2.0 * launch)
    ));
    assert!(close(
        pa.activation_bytes - pb.activation_bytes,
        2.0 * 4.0 * 1024.0 * 1024.0
    ));
    // with tensor parallelism: one gather and one reduction per layer instead of two
    let (mut base2, mut par2) = (base.clone(), par.clone());
    for s in [&mut base2, &mut par2] {
        s.parallelism.tp = 2;
        s.cluster.gpus_per_node = 8;
        s.parallelism.sequence_parallel = true;
    }
    let (a2, b2) = (
        CostTable::new(&base2, &plan).expect("fits"),
        CostTable::new(&par2, &plan).expect("fits"),
    );
    assert!(a2.parts[1].f.volume.tp > 0.0);
    assert!(close(
        b2.parts[1].f.volume.tp,
        a2.parts[1].f.volume.tp / 2.0
    ));
}

#[test]
fn a_squared_relu_mlp_costs_what_a_gelu_mlp_costs() {
    // both are two matrices and one element-wise activation that reads and writes ffn values
    let gelu = load("unit.toml");
    let mut relu2 = gelu.clone();
    relu2.model.mlp = pipeweave_spec::Mlp::SquaredRelu;
    let plan = one_f_one_b(4, 8);
    let (a, b) = (
        CostTable::new(&gelu, &plan).expect("fits"),
        CostTable::new(&relu2, &plan).expect("fits"),
    );
    assert_eq!(a.parts, b.parts);
}

/// The unit spec on 2 pipeline ranks with `v` stages each and blocking sends (or not).
fn unit_on_two(v: u32, blocking: bool) -> pipeweave_spec::Spec {
    let src = crate::specs::source("unit.toml")
        .replacen("pp = 4\n", &format!("pp = 2\nstages_per_rank = {v}\n"), 1)
        .replacen("dp = 1\n", "dp = 2\n", 1)
        .replacen(
            "total_tokens = 1e9\n",
            &format!("total_tokens = 1e9\np2p_blocking = {blocking}\n"),
            1,
        );
    let (spec, diags) = parse(&src, FileId(0));
    assert!(!diags.iter().any(|d| d.is_error()), "{diags:?}");
    spec.expect("parses")
}

fn plan_of(placement: Vec<u32>, m: u32, programs: &[&str]) -> pipeweave_check::ValidPlan {
    let programs = programs
        .iter()
        .map(|line| {
            line.split(',')
                .map(|c| pipeweave_plan::cell::parse_action(c, u32::MAX).expect("a cell"))
                .collect()
        })
        .collect();
    let stages = placement.len() as u32;
    let plan = Plan::single(2, placement, m, programs).expect("structure");
    assert_eq!(plan.num_stages(), stages);
    pipeweave_check::validate(plan).expect("a valid plan")
}

#[test]
fn blocking_sends_meet_their_receivers_on_plans_of_f_and_b() {
    let one_f_one_b = plan_of(vec![0, 1], 2, &["0F0,0F1,0B0,0B1", "1F0,1B0,1F1,1B1"]);
    let split = plan_of(
        vec![0, 1],
        2,
        &["0F0,0F1,0I0,0W0,0I1,0W1", "1F0,1I0,1W0,1F1,1I1,1W1"],
    );
    let looped = plan_of(
        vec![0, 1, 0, 1],
        2,
        &[
            "0F0,0F1,2F0,2F1,2B0,2B1,0B0,0B1",
            "1F0,1F1,3F0,3F1,3B0,3B1,1B0,1B1",
        ],
    );
    let blocking = unit_on_two(1, true);
    let c = CostTable::new(&blocking, &one_f_one_b).expect("fits");
    assert!(c.blocking_sends() && !c.defers_sends());
    // the first stage's forward waits for its receiver and then holds its rank for the transfer
    let f = Op::new(0, Kind::F, 0);
    assert_eq!(c.rendezvous(f), Some(c.send_hold(f)));
    assert!(c.send_hold(f) > 0.0);
    // the last stage's forward sends nothing
    assert_eq!(c.rendezvous(Op::new(1, Kind::F, 0)), None);
    // split backwards: a zero-bubble runtime places its own sends, each holds its rank only
    let c = CostTable::new(&blocking, &split).expect("fits");
    assert!(!c.blocking_sends() && !c.defers_sends());
    assert!(c.send_hold(f) > 0.0);
    // without blocking sends nothing waits
    let c = CostTable::new(&unit_on_two(1, false), &one_f_one_b).expect("fits");
    assert!(!c.blocking_sends() && c.rendezvous(f).is_none());
    // two stages per rank: a forward sends with the backward after it, as Megatron-LM's
    // interleaved exchange does, and only a forward whose output leaves the rank; its sends
    // meet their receivers too
    let c = CostTable::new(&unit_on_two(2, true), &looped).expect("fits");
    assert!(c.defers_sends() && c.blocking_sends());
    let f2 = Op::new(2, Kind::F, 0);
    assert_eq!(c.rendezvous(f2), Some(c.send_hold(f2)));
    let b = Op::new(2, Kind::B, 0);
    assert!(c.sends_after_next(Op::new(2, Kind::F, 1), b));
    assert!(!c.sends_after_next(Op::new(0, Kind::F, 1), Op::new(2, Kind::F, 0)));
    assert!(!c.sends_after_next(Op::new(3, Kind::F, 1), Op::new(3, Kind::B, 0)));
}
