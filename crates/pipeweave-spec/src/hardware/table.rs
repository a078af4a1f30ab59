//! The entries of the GPU and network tables, each value with its source.
//!
//! A value the sources do not settle says so ("assumption: ...") with the reasoning; docs/cost-model.md
//! renders these tables, and a test keeps that page equal to them.

use super::Entry;
use super::Key::*;

const H100_SHEET: &str = "NVIDIA H100 Tensor Core GPU datasheet, SXM5 (table at glennklockwood.com/garden/processors/h100): 132 SMs, FP8 1,978.9, BF16/FP16 989.4, FP32 66.9 TFLOP/s dense, 80 GB HBM3 at 3,350 GB/s, NVLink 900 GB/s both directions = 450 each way";
const H100_PYTORCH: &str = "PyTorch's out-of-memory message \"GPU 0 has a total capacity of 79.11 GiB\" on H100 80GB HBM3 (nvidia-smi shows 81,559 MiB)";
const CONTEXT_LAZY: &str = "CUDA context ~0.4 GB with CUDA >= 11.7 and lazy module loading (ptrblck, pytorch/pytorch#109888, #107667), 0.5 GiB with the caching allocator's own state";
const CONTEXT_OLD: &str = "CUDA context over 1,000 MB (1.0 GiB taken) before CUDA 11.7's lazy loading (ptrblck, pytorch/pytorch#109888); Pascal-era runs used older CUDA";
const MSMF: &str = "sustained 16-bit matmul 702.9 TFLOP/s (\"maximum sustained matmul FLOPS\", H200, same GH100 die at 700 W; 698.6 with all 8 GPUs busy; burst MAMF 792.1 on H100): stas00/ml-engineering, compute/accelerator/benchmarks; 702.9 / 989.4 = 0.71";
const DEEPGEMM: &str = "DeepGEMM README (Feb 2025, H800): 1x128/128x128 block-scaled FP8 GEMMs 990-1,358 TFLOP/s dense (M 4,096, K >= 1,536), 1,093-1,297 grouped, i.e. 0.55-0.66 of 1,978.9; 0.60 taken";
const CUTLASS_2024: &str = "DeepGEMM README: its speedup over DeepSeek's \"internally and carefully optimized implementation based on CUTLASS 3.6\" is 1.0-1.2x on the large training shapes, so the 2024 kernels reached about 0.60 / 1.2 = 0.50 of the FP8 peak";
const FA3: &str = "FlashAttention-3 (Shah et al. 2024, arXiv 2407.08608): up to 740 TFLOP/s FP16 (75%), 661 non-causal at head dim 128 (Table 2); causal long sequences sit lower (forward 0.62 taken) and the backward, 1.5-1.75x FlashAttention-2's, lower still (0.50 taken)";
const FA2_HOPPER: &str = "FlashAttention-3 abstract: \"FlashAttention-2 achieving only 35% utilization on the H100 GPU\" (forward 0.35); backward below forward as on A100 (0.30 taken)";
const FA2_AMPERE: &str = "FlashAttention-2 (Dao 2023, arXiv 2307.08691): \"reaching 50-73% of the theoretical maximum FLOPs/s on A100\"; forward 0.65 taken, backward below it (0.55 taken)";
const HBM_EFF: &str = "assumption: NVIDIA states a \"DRAM utilization efficiency of 95%\" for A100 (product page) as the ceiling; element-wise kernels with several operands reach less; 0.85 taken within 0.80-0.92";
const NVLINK_DS: &str = "H800 NVLink/NVSwitch latency 3.33 us (Insights into DeepSeek-V3, arXiv 2505.09343, Table 5), the same NVLink generation as H100";
const H100_NCCL: &str = "S. Jeaugey, NVIDIA/nccl-tests#212: 450 GB/s line rate, ~370 GB/s NCCL bus bandwidth for ring collectives (also NVIDIA/nccl#1455), 370 / 450 = 0.82";
const DS_A2A_NVL: &str = "Insights into DeepSeek-V3 (arXiv 2505.09343) 4.3: NVLink \"200GB/s bandwidth (of which about 160GB/s can actually be achieved)\", 160 / 200 = 0.80 (taken for H100's all-to-all too)";
const H800_DS: &str = "Insights into DeepSeek-V3 (arXiv 2505.09343) 4.1: the H800 is the H100 with NVLink reduced from 900 to 400 GB/s both directions (200 each way); DeepSeek-V3 report 3.5.1: \"20 out of the 132 SMs available in the H800\"";
const A100_SHEET: &str = "NVIDIA A100 datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf; glennklockwood.com/garden/processors/A100): BF16/FP16 312, FP32 19.5 TFLOP/s, 80 GB HBM2e at 2,039 GB/s (40 GB HBM2 at 1,555), NVLink 600 GB/s both directions = 300 each way; 108 SMs (deviceQuery)";
const A100_MAMF: &str = "burst BF16 matmul 267.9 TFLOP/s = 0.86 on A100 SXM (stas00/ml-engineering, MAMF); sustained lower: Hopper drops 15% from burst to sustained (828 -> 703), applied here: 0.86 x 0.87 = 0.75";
const A100_NCCL: &str = "single-node all_reduce bus bandwidth 232.5 GB/s on 8 A100 SXM (NVIDIA/nccl-tests#175), 232.5 / 300 = 0.78 (taken for its all-to-all too)";
const A100_PYTORCH: &str = "PyTorch's out-of-memory messages on A100 80GB report a total capacity of 79.15 GiB (nvidia-smi 81,920 MiB)";
const A100_40_PYTORCH: &str = "deviceQuery 42,405,855,232 bytes (39.49 GiB) on A100 40GB (PC2 wiki); PyTorch reports 39.39-39.56 GiB, the lower taken";
const P100_SHEET: &str = "Tom's Hardware, \"Nvidia Tesla P100 PCIe\" (ISC 2016): SXM2 21.2 FP16 / 10.6 FP32 TFLOP/s, PCIe 18.7 / 9.3 at 250 W; Microway, \"Tesla P100 NVLink 16GB (SXM2) up close\": 56 SMs, 732 GB/s HBM2, NVLink 80 GB/s each way (160 both)";
const P100_MEMORY: &str = "TensorFlow's device log \"Tesla P100-PCIE-16GB ... Total memory: 15.90GiB\"; pytorch/pytorch#5386 total memory 17,069,309,952 B";
const P100_SGEMM: &str = "Baidu DeepBench README: SGEMM M 5,124, N 9,124, K 2,560 at 8.21 TFLOP/s on a Tesla P100, 0.77 of the SXM2's 10.6 (the largest training GEMM listed)";
const P100_PCIE_LINK: &str = "PCIe 3.0 x16: 15.75 GB/s per direction (no NVLink on the PCIe card)";
const ASSUMED_LATENCY: &str = "assumption: no measurement found; the H800's NVLink latency of 3.33 us (arXiv 2505.09343, Table 5) taken";
const ASSUMED_NCCL: &str = "assumption: no measurement found; NCCL reaches 0.78-0.82 of the NVLink line rate on A100 and H100, 0.80 taken";
const IB_NDR: &str = "one 400 Gb/s InfiniBand NDR (ConnectX-7) NIC per GPU, 50 GB/s per direction (DGX H100; DeepSeek's H800 nodes, arXiv 2505.09343 4.1)";
const IB_LAT: &str = "InfiniBand NDR latency 2.8 us within a leaf, 3.7 us across leaves (arXiv 2505.09343, Table 5); the cross-leaf figure";
const NDR_EFF: &str = "assumption: no maintainer figure for 400 Gb/s NICs; 0.90, between HDR's 24 of 25 GB/s (0.96, S. Jeaugey, NVIDIA/nccl#412) and DeepSeek's all-to-all planning figure of 40 of 50 (0.80)";
const DS_A2A_IB: &str = "Insights into DeepSeek-V3 (arXiv 2505.09343) 4.3: \"each 400Gbps IB NIC delivers only 50GB/s ... use 40GB/s for effective bandwidth\" for the expert all-to-all, 40 / 50 = 0.80";
const ROCE: &str =
    "Llama 3 (arXiv 2407.21783) 3.3.1: 400 Gbps RoCE between GPUs, 50 GB/s per direction per GPU";
const ROCE_LAT: &str = "RoCE 400G latency 3.6 us within a leaf, 5.6 us across (arXiv 2505.09343, Table 5); Llama 3 3.3.3 reports up to tens of microseconds on its multi-hop fabric";
const HDR: &str = "Selene / DGX A100: eight 200 Gb/s HDR InfiniBand NICs per node (Korthikanti et al. 2022 6), 25 GB/s per GPU and direction";
const HDR_EFF: &str =
    "S. Jeaugey, NVIDIA/nccl#412: \"24GB/s inter-node\" per HDR NIC, 24 / 25 = 0.96";
const HDR_LAT: &str = "assumption: no measurement found; InfiniBand NDR's cross-leaf 3.7 us (arXiv 2505.09343, Table 5) taken";
const HDR_A2A: &str = "assumption: DeepSeek's all-to-all share of 0.80 on NDR (40 of 50 GB/s, arXiv 2505.09343 4.3) taken";
const ROCE_A2A: &str = "assumption: DeepSeek's all-to-all share of 0.80 on InfiniBand NDR (40 of 50 GB/s, arXiv 2505.09343 4.3) taken for RoCE";
const ARIES: &str = "Cray Aries: about 10 GB/s injection bandwidth per node and about 1.5 us latency (Alverson et al., \"Cray XC Series Network\", 2012)";
const ARIES_EFF: &str = "assumption: no figure for collectives over Aries, 0.80 taken; the Chimera code ran GLOO over IP on Aries (ipogif0), which reaches less";

const V100_SHEET: &str = "NVIDIA Tesla V100 datasheet (SXM2): Tensor 125, Single-Precision 15.7 TFLOPS, 16 or 32 GB HBM2 at 900 GB/s, NVLink 300 GB/s both directions = 150 each way; 80 SMs (Volta architecture whitepaper: \"Tesla V100 ... with 80 SMs\")";
const V100_32_PYTORCH: &str = "PyTorch's out-of-memory messages on Tesla V100-SXM2-32GB: \"31.75 GiB total capacity\" (nvidia-smi 32,510 MiB)";
const V100_16_PYTORCH: &str = "PyTorch's out-of-memory messages on Tesla V100-SXM2-16GB: \"15.78 GiB total capacity\" (nvidia-smi 16,160 MiB)";
const V100_GEMM: &str = "assumption: no sustained-matmul measurement found for V100; the A100's sustained share (burst 0.86 x 0.87, stas00/ml-engineering) taken, 0.75";
const V100_CONTEXT: &str = "assumption: V100-era runs (2018-2021) used CUDA before 11.7's lazy loading, whose context takes over 1,000 MB (ptrblck, pytorch/pytorch#109888); 1.0 GiB taken";
const OPA: &str = "Intel Omni-Path Architecture 100 series: 100 Gb/s per port, 12.5 GB/s per direction; one port per GPU here (a node with fewer ports overrides network_gbps)";
const OPA_LAT: &str = "assumption: Intel quotes end-to-end latency of about a microsecond for Omni-Path 100 MPI; 1.0 us taken, below InfiniBand NDR's cross-leaf 3.7 us since NCCL over OPA's PSM2 adds its proxy";
const SLINGSHOT: &str = "HPE Slingshot 11: 200 Gb/s per NIC; Perlmutter's GPU nodes carry four A100 and four NICs (NERSC Perlmutter architecture): 25 GB/s per GPU and direction";
const SLINGSHOT_LAT: &str = "assumption: no NCCL latency found for Slingshot; InfiniBand NDR's cross-leaf 3.7 us (arXiv 2505.09343, Table 5) taken";
const EFA_P4D: &str = "AWS EC2 P4d (p4d.24xlarge): eight A100 with 400 Gbps of EFA networking (four 100 Gb/s adapters): 50 Gb/s = 6.25 GB/s per GPU and direction";
const EFA_P5: &str = "AWS EC2 P5 (p5.48xlarge): eight H100 with 3,200 Gbps of EFA networking: 400 Gb/s = 50 GB/s per GPU and direction";
const EFA_LAT: &str = "assumption: no NCCL latency found for EFA; RoCE's cross-leaf 5.6 us (arXiv 2505.09343, Table 5) taken, EFA's SRD transport also running over Ethernet";
const ROCE_200: &str =
    "RoCE at 200 Gb/s per GPU (one ConnectX-6 200GbE port per GPU): 25 GB/s per direction";
const ROCE_200_LAT: &str = "assumption: RoCE 400G's cross-leaf 5.6 us (arXiv 2505.09343, Table 5) taken for RoCE at 200 Gb/s";
const EDR: &str =
    "InfiniBand EDR: 100 Gb/s per port, 12.5 GB/s per direction; one port per GPU here";
const EDR_LAT: &str = "assumption: no NCCL measurement found; InfiniBand NDR's cross-leaf 3.7 us (arXiv 2505.09343, Table 5) taken";
const EDR_EFF: &str = "assumption: HDR's 24 of 25 GB/s (S. Jeaugey, NVIDIA/nccl#412) taken for the previous InfiniBand generation, 0.96";
const NET_EFF: &str = "assumption: no maintainer figure for this network; 0.90 taken, between HDR's 0.96 (NVIDIA/nccl#412) and DeepSeek's all-to-all planning share of 0.80 (arXiv 2505.09343 4.3)";
const NET_A2A: &str = "assumption: DeepSeek's all-to-all share of 0.80 on InfiniBand NDR (40 of 50 GB/s, arXiv 2505.09343 4.3) taken";

/// The GPUs a spec may name in `cluster.gpu`.
pub static GPUS: &[Entry] = &[
    Entry {
        id: "h100-sxm5-80gb",
        name: "H100 SXM5 80GB",
        like: None,
        real: true,
        values: &[
            (Sms, 132.0, H100_SHEET),
            (PeakFp8, 1978.9, H100_SHEET),
            (PeakBf16, 989.4, H100_SHEET),
            (PeakFp16, 989.4, H100_SHEET),
            (PeakFp32, 66.9, H100_SHEET),
            (GemmFp8Deepgemm, 0.60, DEEPGEMM),
            (GemmFp8Cutlass, 0.50, CUTLASS_2024),
            (GemmBf16, 0.71, MSMF),
            (GemmFp16, 0.71, MSMF),
            (Flash3Fwd, 0.62, FA3),
            (Flash3Bwd, 0.50, FA3),
            (Flash2Fwd, 0.35, FA2_HOPPER),
            (Flash2Bwd, 0.30, FA2_HOPPER),
            (HbmGbps, 3350.0, H100_SHEET),
            (HbmEfficiency, 0.85, HBM_EFF),
            (MemoryGib, 79.11, H100_PYTORCH),
            (ContextGib, 0.5, CONTEXT_LAZY),
            (IntraGbps, 450.0, H100_SHEET),
            (IntraLatencyUs, 3.33, NVLINK_DS),
            (IntraEfficiency, 0.82, H100_NCCL),
            (IntraAllToAllEfficiency, 0.80, DS_A2A_NVL),
        ],
    },
    Entry {
        id: "h800-sxm5-80gb",
        name: "H800 SXM5 80GB",
        like: Some("h100-sxm5-80gb"),
        real: true,
        values: &[
            (Sms, 132.0, H800_DS),
            (IntraGbps, 200.0, H800_DS),
            (IntraEfficiency, 0.80, DS_A2A_NVL),
            (IntraAllToAllEfficiency, 0.80, DS_A2A_NVL),
        ],
    },
    Entry {
        id: "a100-sxm4-80gb",
        name: "A100 SXM4 80GB",
        like: None,
        real: true,
        values: &[
            (Sms, 108.0, A100_SHEET),
            (PeakBf16, 312.0, A100_SHEET),
            (PeakFp16, 312.0, A100_SHEET),
            (PeakFp32, 19.5, A100_SHEET),
            (GemmBf16, 0.75, A100_MAMF),
            (GemmFp16, 0.75, A100_MAMF),
            (Flash2Fwd, 0.65, FA2_AMPERE),
            (Flash2Bwd, 0.55, FA2_AMPERE),
            (HbmGbps, 2039.0, A100_SHEET),
            (HbmEfficiency, 0.85, HBM_EFF),
            (MemoryGib, 79.15, A100_PYTORCH),
            (ContextGib, 0.5, CONTEXT_LAZY),
            (IntraGbps, 300.0, A100_SHEET),
            (IntraLatencyUs, 3.33, ASSUMED_LATENCY),
            (IntraEfficiency, 0.78, A100_NCCL),
            (IntraAllToAllEfficiency, 0.78, A100_NCCL),
        ],
    },
    Entry {
        id: "a100-sxm4-40gb",
        name: "A100 SXM4 40GB",
        like: Some("a100-sxm4-80gb"),
        real: true,
        values: &[
            (HbmGbps, 1555.0, A100_SHEET),
            (MemoryGib, 39.39, A100_40_PYTORCH),
        ],
    },
    Entry {
        id: "v100-sxm2-32gb",
        name: "Tesla V100 SXM2 32GB",
        like: None,
        real: true,
        values: &[
            (Sms, 80.0, V100_SHEET),
            (PeakFp16, 125.0, V100_SHEET),
            (PeakFp32, 15.7, V100_SHEET),
            (GemmFp16, 0.75, V100_GEMM),
            (HbmGbps, 900.0, V100_SHEET),
            (HbmEfficiency, 0.85, HBM_EFF),
            (MemoryGib, 31.75, V100_32_PYTORCH),
            (ContextGib, 1.0, V100_CONTEXT),
            (IntraGbps, 150.0, V100_SHEET),
            (IntraLatencyUs, 3.33, ASSUMED_LATENCY),
            (IntraEfficiency, 0.80, ASSUMED_NCCL),
            (IntraAllToAllEfficiency, 0.80, ASSUMED_NCCL),
        ],
    },
    Entry {
        id: "v100-sxm2-16gb",
        name: "Tesla V100 SXM2 16GB",
        like: Some("v100-sxm2-32gb"),
        real: true,
        values: &[(MemoryGib, 15.78, V100_16_PYTORCH)],
    },
    Entry {
        id: "p100-sxm2-16gb",
        name: "Tesla P100 SXM2 16GB",
        like: None,
        real: true,
        values: &[
            (Sms, 56.0, P100_SHEET),
            (PeakFp16, 21.2, P100_SHEET),
            (PeakFp32, 10.6, P100_SHEET),
            (GemmFp32, 0.77, P100_SGEMM),
            (HbmGbps, 732.0, P100_SHEET),
            (HbmEfficiency, 0.85, HBM_EFF),
            (MemoryGib, 15.90, P100_MEMORY),
            (ContextGib, 1.0, CONTEXT_OLD),
            (IntraGbps, 80.0, P100_SHEET),
            (IntraLatencyUs, 3.33, ASSUMED_LATENCY),
            (IntraEfficiency, 0.80, ASSUMED_NCCL),
            (IntraAllToAllEfficiency, 0.80, ASSUMED_NCCL),
        ],
    },
    Entry {
        id: "p100-pcie-16gb",
        name: "Tesla P100 PCIe 16GB",
        like: Some("p100-sxm2-16gb"),
        real: true,
        values: &[
            (PeakFp16, 18.7, P100_SHEET),
            (PeakFp32, 9.3, P100_SHEET),
            (IntraGbps, 15.75, P100_PCIE_LINK),
        ],
    },
    Entry {
        id: "unit",
        name: "unit GPU",
        like: None,
        real: false,
        values: &[
            (Sms, 100.0, "round number"),
            (PeakBf16, 100.0, "round number"),
            (PeakFp16, 100.0, "round number"),
            (GemmBf16, 0.5, "round number"),
            (GemmFp16, 0.5, "round number"),
            (Flash2Fwd, 0.5, "round number"),
            (Flash2Bwd, 0.5, "round number"),
            (HbmGbps, 1000.0, "round number"),
            (HbmEfficiency, 1.0, "round number"),
            (MemoryGib, 16.0, "round number"),
            (ContextGib, 0.5, "round number"),
            (IntraGbps, 100.0, "round number"),
            (IntraLatencyUs, 1.0, "round number"),
            (IntraEfficiency, 1.0, "round number"),
            (IntraAllToAllEfficiency, 1.0, "round number"),
        ],
    },
];

/// The networks a spec may name in `cluster.network`.
pub static NETWORKS: &[Entry] = &[
    Entry {
        id: "ib-ndr-400",
        name: "InfiniBand NDR, 400 Gb/s per GPU",
        like: None,
        real: true,
        values: &[
            (NetGbps, 50.0, IB_NDR),
            (NetLatencyUs, 3.7, IB_LAT),
            (NetEfficiency, 0.90, NDR_EFF),
            (NetAllToAllEfficiency, 0.80, DS_A2A_IB),
        ],
    },
    Entry {
        id: "roce-400",
        name: "RoCE, 400 Gb/s per GPU",
        like: None,
        real: true,
        values: &[
            (NetGbps, 50.0, ROCE),
            (NetLatencyUs, 5.6, ROCE_LAT),
            (NetEfficiency, 0.90, NDR_EFF),
            (NetAllToAllEfficiency, 0.80, ROCE_A2A),
        ],
    },
    Entry {
        id: "ib-hdr-200",
        name: "InfiniBand HDR, 200 Gb/s per GPU",
        like: None,
        real: true,
        values: &[
            (NetGbps, 25.0, HDR),
            (NetLatencyUs, 3.7, HDR_LAT),
            (NetEfficiency, 0.96, HDR_EFF),
            (NetAllToAllEfficiency, 0.80, HDR_A2A),
        ],
    },
    Entry {
        id: "roce-200",
        name: "RoCE, 200 Gb/s per GPU",
        like: None,
        real: true,
        values: &[
            (NetGbps, 25.0, ROCE_200),
            (NetLatencyUs, 5.6, ROCE_200_LAT),
            (NetEfficiency, 0.90, NET_EFF),
            (NetAllToAllEfficiency, 0.80, NET_A2A),
        ],
    },
    Entry {
        id: "ib-edr-100",
        name: "InfiniBand EDR, 100 Gb/s per GPU",
        like: None,
        real: true,
        values: &[
            (NetGbps, 12.5, EDR),
            (NetLatencyUs, 3.7, EDR_LAT),
            (NetEfficiency, 0.96, EDR_EFF),
            (NetAllToAllEfficiency, 0.80, NET_A2A),
        ],
    },
    Entry {
        id: "opa-100",
        name: "Intel Omni-Path, 100 Gb/s per GPU",
        like: None,
        real: true,
        values: &[
            (NetGbps, 12.5, OPA),
            (NetLatencyUs, 1.0, OPA_LAT),
            (NetEfficiency, 0.90, NET_EFF),
            (NetAllToAllEfficiency, 0.80, NET_A2A),
        ],
    },
    Entry {
        id: "slingshot-200",
        name: "HPE Slingshot 11, 200 Gb/s per GPU",
        like: None,
        real: true,
        values: &[
            (NetGbps, 25.0, SLINGSHOT),
            (NetLatencyUs, 3.7, SLINGSHOT_LAT),
            (NetEfficiency, 0.90, NET_EFF),
            (NetAllToAllEfficiency, 0.80, NET_A2A),
        ],
    },
    Entry {
        id: "efa-p4d",
        name: "AWS EFA on p4d, 400 Gb/s per 8 GPUs",
        like: None,
        real: true,
        values: &[
            (NetGbps, 6.25, EFA_P4D),
            (NetLatencyUs, 5.6, EFA_LAT),
            (NetEfficiency, 0.90, NET_EFF),
            (NetAllToAllEfficiency, 0.80, NET_A2A),
        ],
    },
    Entry {
        id: "efa-p5",
        name: "AWS EFA on p5, 3,200 Gb/s per 8 GPUs",
        like: None,
        real: true,
        values: &[
            (NetGbps, 50.0, EFA_P5),
            (NetLatencyUs, 5.6, EFA_LAT),
            (NetEfficiency, 0.90, NET_EFF),
            (NetAllToAllEfficiency, 0.80, NET_A2A),
        ],
    },
    Entry {
        id: "aries",
        name: "Cray Aries dragonfly, one GPU per node",
        like: None,
        real: true,
        values: &[
            (NetGbps, 10.0, ARIES),
            (NetLatencyUs, 1.5, ARIES),
            (NetEfficiency, 0.80, ARIES_EFF),
            (NetAllToAllEfficiency, 0.80, ARIES_EFF),
        ],
    },
    Entry {
        id: "unit",
        name: "unit network",
        like: None,
        real: false,
        values: &[
            (NetGbps, 10.0, "round number"),
            (NetLatencyUs, 5.0, "round number"),
            (NetEfficiency, 1.0, "round number"),
            (NetAllToAllEfficiency, 1.0, "round number"),
        ],
    },
];
