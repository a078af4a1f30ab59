//! The cost model's formulas on hand-computed cases, and the F&B overlap rule.

use crate::plans::one_f_one_b;
use crate::specs::load;
use pipeweave_diagnostics::FileId;
use pipeweave_plan::{Kind, Op, Pipeline, Plan};
use pipeweave_sim::CostModel;
use pipeweave_spec::{CostTable, parse};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-30f64)
}

#[test]
fn unit_spec_forward_time_by_hand() {
    // Two GPT layers of hidden 1024 (4h² attention + 8h² MLP weights) on 1024 tokens:
    // linear 2·12·1024²·1024 FLOPs, causal attention 1024·1024·8·(128+128) per layer.
    let spec = load("unit.toml");
    let costs = CostTable::new(&spec, &one_f_one_b(4, 8)).expect("fits");
    let h = 1024.0f64;
    let t = 1024.0f64;
    let linear = 2.0 * 12.0 * h * h * t;
    let core = t * 1024.0 * 8.0 * 256.0;
    let speed = 100e12 * 0.5;
    let f = 2.0 * (linear + core) / speed;
    let i = 2.0 * (linear + 2.0 * core) / speed;
    let w = 2.0 * linear / speed;
    let part = &costs.parts[1];
    assert!(close(part.f, f), "{} vs {f}", part.f);
    assert!(close(part.i, i), "{} vs {i}", part.i);
    assert!(close(part.w, w), "{} vs {w}", part.w);
    assert!(close(part.b, i + w));
    // The last part adds the output head: 2·vocab·hidden·tokens forward.
    let head = 2.0 * 32000.0 * h * t / speed;
    assert!(close(costs.parts[3].f, f + head));
    // Activation point-to-point inside the node: 1 µs + 1024·1024·2 bytes at 100 GB/s.
    assert!(close(costs.transfer(0, 1), 1e-6 + t * h * 2.0 / 100e9));
}

const MOE: &str = r#"
name = "moe"
[cluster]
gpu = "test"
peak_tflops = 100.0
memory_gib = 80.0
gpus_per_node = 4
nodes = 4
intra_node_gbps = 100.0
inter_node_gbps = 10.0
intra_node_latency_us = 0.0
inter_node_latency_us = 0.0
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
[efficiency]
achievable_fraction = 0.5
"#;

pub fn moe_spec() -> pipeweave_spec::Spec {
    let (spec, diags) = parse(MOE, FileId(0));
    assert!(diags.is_empty(), "{diags:?}");
    spec.expect("moe spec")
}

/// Two pipelines in opposite directions (DualPipe's placement) with no actions.
fn dual_placement(p: u32) -> Plan {
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
    // inter-node network 4 copies × 1/2 leave the node; BF16.
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
    assert!(close(costs.op(f), costs.parts[1].f_compute + 4.0 * one));
}

#[test]
fn an_overlapped_pair_hides_communication_under_the_other_half() {
    let spec = moe_spec();
    let plan = dual_placement(2);
    let costs = CostTable::new(&spec, &plan).expect("fits");
    // Rank 0 pairs the forward of part 0 (pipeline 0) with the backward of part 1 (pipeline 1,
    // global stage 3).
    let f = Op::new(0, Kind::F, 0);
    let b = Op::new(3, Kind::B, 1);
    let pair = costs.pair(f, b);
    let alone = costs.op(f) + costs.op(b);
    let compute = costs.parts[0].f_compute + costs.parts[1].b_compute;
    let comm = costs.parts[0].all_to_all + 2.0 * costs.parts[1].all_to_all;
    assert!(pair < alone, "pair {pair} should beat {alone}");
    assert!(pair >= compute.max(comm) - 1e-12);
    assert!(close(costs.exposed_pair(f, b), pair - compute));
    // Swapping which half is forward changes the parts but keeps the bounds.
    let pair2 = costs.pair(Op::new(1, Kind::F, 0), Op::new(2, Kind::B, 1));
    assert!(pair2 <= costs.op(Op::new(1, Kind::F, 0)) + costs.op(Op::new(2, Kind::B, 1)));
}

#[test]
fn a_dense_pair_gains_nothing() {
    let spec = load("unit.toml");
    let costs = CostTable::new(&spec, &dual_placement(4)).expect("fits");
    let f = Op::new(1, Kind::F, 0);
    let b = Op::new(6, Kind::B, 1);
    assert!(close(costs.pair(f, b), costs.op(f) + costs.op(b)));
    assert_eq!(costs.exposed_pair(f, b), 0.0);
}

#[test]
fn measured_costs_override_derived_ones() {
    let src = crate::specs::source("unit.toml").replace(
        "[efficiency]",
        "[measured]\nf_ms = [1, 2, 3, 4]\ni_ms = [1, 1, 1, 1]\nw_ms = [0.5, 0.5, 0.5, 0.5]\npair_ms = [2, 2, 2, 2]\n\n[efficiency]",
    );
    let (spec, diags) = parse(&src, FileId(0));
    assert!(diags.is_empty(), "{diags:?}");
    let spec = spec.expect("spec");
    let costs = CostTable::new(&spec, &dual_placement(4)).expect("fits");
    assert!(close(costs.op(Op::new(2, Kind::F, 0)), 3e-3));
    assert!(close(costs.op(Op::new(2, Kind::B, 0)), 1.5e-3));
    assert!(close(costs.op(Op::new(2, Kind::W, 0)), 0.5e-3));
    // The measured pair applies to a part's own F and B.
    assert!(close(
        costs.pair(Op::new(2, Kind::F, 0), Op::new(6, Kind::B, 1)),
        2e-3
    ));
}

/// The unit spec with extra `[training]` keys.
fn unit_with(extra: &str) -> pipeweave_spec::Spec {
    let src = crate::specs::source("unit.toml").replacen(
        "total_tokens = 1e9\n",
        &format!("total_tokens = 1e9\n{extra}"),
        1,
    );
    let (spec, diags) = parse(&src, FileId(0));
    assert!(diags.is_empty(), "{diags:?}");
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
    assert!(
        close(norms.parts[1].b, base.parts[1].b),
        "norms cost no time"
    );

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
    assert!(close(p.b, b.b + b.f), "{} vs {}", p.b, b.b + b.f);
    assert!(close(p.i, b.i + b.f));
    assert!(close(p.w, b.w));
    // The last part's head is not recomputed and its logits stay.
    let (lb, lf) = (&base.parts[3], &full.parts[3]);
    let head = 2.0 * 32000.0 * h * t / (100e12 * 0.5);
    assert!(close(lf.b, lb.b + (lb.f - head)));
    assert!(close(
        lf.activation_bytes,
        2.0 * h * t * 2.0 + 32000.0 * t * 4.0
    ));

    // Memory: full recomputation's rank 0 holds P = 4 layer inputs of part 0 plus one working set.
    let spec = unit_with("recompute = \"full\"\n");
    let mem = pipeweave_spec::rank_memory(&spec, &full, &plan, 0, 4);
    assert!(close(
        mem.activations,
        4.0 * full.parts[0].activation_bytes + per_layer
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
    // 4 layers of 4,096 tokens: 2·T·(1536·128·192 + 512·128·256) FLOPs each, at 0.4 of 989 TFLOP/s.
    let up = 1536.0 * 128.0 * 192.0 + 512.0 * 128.0 * 256.0;
    let extra = 4.0 * 2.0 * 4096.0 * up / (989e12 * 0.4);
    assert!(close(a.parts[1].i_compute, b.parts[1].i_compute + extra));
    assert!(close(a.parts[1].b_compute, b.parts[1].b_compute + extra));
    assert!(close(a.parts[1].f, b.parts[1].f));
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
    let costs = CostTable::new(&spec, &one_f_one_b(16, 120)).expect("fits");
    let part = &costs.parts[7];
    let state =
        pipeweave_spec::model_state(&spec, 2.0 * part.dense_params, 2.0 * part.expert_params);
    let total = state.total() + 17.0 * part.activation_bytes;
    assert!(
        total < spec.cluster.memory_bytes(),
        "{}",
        total / (1u64 << 30) as f64
    );
    // Without them (every activation in BF16) it does not.
    let plain =
        crate::specs::source("deepseek-v3-h800-pp16-ep64.toml").replace("= true", "= false");
    let (plain, _) = parse(&plain, FileId(0));
    let plain = plain.expect("parses");
    let costs = CostTable::new(&plain, &one_f_one_b(16, 120)).expect("fits");
    let total = state.total() + 17.0 * costs.parts[7].activation_bytes;
    assert!(total > spec.cluster.memory_bytes());
}
