//! The GPU and network tables: datasheet numbers and documented efficiencies, one source per value.
//!
//! A spec names a GPU (`cluster.gpu`) and a network (`cluster.network`) by id; the cost model reads
//! every figure from here, and a spec may replace one under `[cluster.override]` with a source of
//! its own. The entries are in [`table`]; this module holds the keys and the lookups.
//! Units: TFLOP/s dense (no sparsity), GB = 10⁹ bytes, GiB = 2³⁰ bytes, bandwidths per GPU and per
//! direction, microseconds; an efficiency is the achieved share of the figure it scales.

mod table;

pub use table::{GPUS, NETWORKS};

use crate::precision::{Dtype, Fp8Kernel};

/// One figure of the tables: a GPU's or a network's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    /// Streaming multiprocessors.
    Sms,
    /// Dense FP8 tensor throughput, TFLOP/s.
    PeakFp8,
    /// Dense BF16 tensor throughput, TFLOP/s.
    PeakBf16,
    /// Dense FP16 tensor throughput, TFLOP/s.
    PeakFp16,
    /// FP32 throughput (tensor cores with TF32 off: the CUDA cores), TFLOP/s.
    PeakFp32,
    /// Sustained share of the FP8 peak a large GEMM reaches with DeepGEMM's kernels.
    GemmFp8Deepgemm,
    /// Sustained share of the FP8 peak a large GEMM reaches with CUTLASS-based kernels.
    GemmFp8Cutlass,
    /// Sustained share of the BF16 peak a large GEMM reaches.
    GemmBf16,
    /// Sustained share of the FP16 peak a large GEMM reaches.
    GemmFp16,
    /// Sustained share of the FP32 peak a large GEMM reaches.
    GemmFp32,
    /// Share of the BF16/FP16 peak FlashAttention-3's forward reaches (in the kernel's FLOPs).
    Flash3Fwd,
    /// Share of the peak FlashAttention-3's backward reaches (counting the recomputed scores).
    Flash3Bwd,
    /// Share of the peak FlashAttention-2's forward reaches.
    Flash2Fwd,
    /// Share of the peak FlashAttention-2's backward reaches (counting the recomputed scores).
    Flash2Bwd,
    /// HBM bandwidth, GB/s.
    HbmGbps,
    /// The share of the HBM bandwidth element-wise kernels reach.
    HbmEfficiency,
    /// Memory as the framework sees it (PyTorch's "total capacity"), GiB.
    MemoryGib,
    /// Memory the CUDA context and the allocator's own state take, GiB.
    ContextGib,
    /// The link between GPUs of a node (NVLink, or PCIe without it), GB/s per direction.
    IntraGbps,
    /// The latency of one message inside a node, microseconds.
    IntraLatencyUs,
    /// The share of the intra-node bandwidth NCCL's ring collectives reach.
    IntraEfficiency,
    /// The share of the intra-node bandwidth an all-to-all reaches.
    IntraAllToAllEfficiency,
    /// The network between nodes, GB/s per GPU and direction.
    NetGbps,
    /// The latency of one message between nodes, microseconds.
    NetLatencyUs,
    /// The share of the network bandwidth NCCL's ring collectives reach.
    NetEfficiency,
    /// The share of the network bandwidth an all-to-all reaches.
    NetAllToAllEfficiency,
}

/// Whether a key belongs to a GPU or a network entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A figure of the GPU (and its node's link).
    Gpu,
    /// A figure of the network between nodes.
    Network,
}

/// How a key's values are bounded. Every range is bounded on both sides, as every number of a
/// spec is, so that every figure computed from an override stays finite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Range {
    /// A share of a peak: at least a millionth and at most 1.
    Fraction,
    /// From `min` (greater than 0) to `max`.
    Positive {
        /// The least value.
        min: f64,
        /// The largest value.
        max: f64,
    },
    /// At least 0 and at most the bound.
    NonNegative(f64),
}

/// The smallest share of a peak a key may give.
const MIN_FRACTION: f64 = 1e-6;

impl Range {
    /// Why `x` is out of range, in words, if it is.
    pub fn violated(self, x: f64) -> Option<String> {
        match self {
            Range::Fraction if !(x > 0.0 && x <= 1.0) => {
                Some("greater than 0 and at most 1".to_owned())
            }
            Range::Fraction if x < MIN_FRACTION => Some(format!("at least {MIN_FRACTION:e}")),
            Range::Positive { min, max } if !(x >= min && x <= max) => {
                Some(format!("between {min} and {max}"))
            }
            Range::NonNegative(_) if x < 0.0 => Some("at least 0".to_owned()),
            Range::NonNegative(max) if x > max => Some(format!("at most {max}")),
            _ => None,
        }
    }
}

/// A rate or a size (TFLOP/s, GB/s, GiB): from a thousandth to ten million, as in the rest of a
/// spec.
const RATE: Range = Range::Positive {
    min: 1e-3,
    max: 1e7,
};

impl Key {
    /// Every key, in the order of the rendered tables.
    pub const ALL: [Key; 26] = [
        Key::Sms,
        Key::PeakFp8,
        Key::PeakBf16,
        Key::PeakFp16,
        Key::PeakFp32,
        Key::GemmFp8Deepgemm,
        Key::GemmFp8Cutlass,
        Key::GemmBf16,
        Key::GemmFp16,
        Key::GemmFp32,
        Key::Flash3Fwd,
        Key::Flash3Bwd,
        Key::Flash2Fwd,
        Key::Flash2Bwd,
        Key::HbmGbps,
        Key::HbmEfficiency,
        Key::MemoryGib,
        Key::ContextGib,
        Key::IntraGbps,
        Key::IntraLatencyUs,
        Key::IntraEfficiency,
        Key::IntraAllToAllEfficiency,
        Key::NetGbps,
        Key::NetLatencyUs,
        Key::NetEfficiency,
        Key::NetAllToAllEfficiency,
    ];

    /// The key's name in `[cluster.override]` and in the documentation.
    pub fn name(self) -> &'static str {
        match self {
            Key::Sms => "sms",
            Key::PeakFp8 => "peak_tflops_fp8",
            Key::PeakBf16 => "peak_tflops_bf16",
            Key::PeakFp16 => "peak_tflops_fp16",
            Key::PeakFp32 => "peak_tflops_fp32",
            Key::GemmFp8Deepgemm => "gemm_efficiency_fp8_deepgemm",
            Key::GemmFp8Cutlass => "gemm_efficiency_fp8_cutlass",
            Key::GemmBf16 => "gemm_efficiency_bf16",
            Key::GemmFp16 => "gemm_efficiency_fp16",
            Key::GemmFp32 => "gemm_efficiency_fp32",
            Key::Flash3Fwd => "flash3_efficiency_fwd",
            Key::Flash3Bwd => "flash3_efficiency_bwd",
            Key::Flash2Fwd => "flash2_efficiency_fwd",
            Key::Flash2Bwd => "flash2_efficiency_bwd",
            Key::HbmGbps => "hbm_gbps",
            Key::HbmEfficiency => "hbm_efficiency",
            Key::MemoryGib => "memory_gib",
            Key::ContextGib => "context_gib",
            Key::IntraGbps => "intra_node_gbps",
            Key::IntraLatencyUs => "intra_node_latency_us",
            Key::IntraEfficiency => "intra_node_efficiency",
            Key::IntraAllToAllEfficiency => "intra_node_all_to_all_efficiency",
            Key::NetGbps => "network_gbps",
            Key::NetLatencyUs => "network_latency_us",
            Key::NetEfficiency => "network_efficiency",
            Key::NetAllToAllEfficiency => "network_all_to_all_efficiency",
        }
    }

    /// What the key is, in words, with its unit.
    pub fn what(self) -> &'static str {
        match self {
            Key::Sms => "streaming multiprocessors",
            Key::PeakFp8 => "dense FP8 tensor TFLOP/s",
            Key::PeakBf16 => "dense BF16 tensor TFLOP/s",
            Key::PeakFp16 => "dense FP16 TFLOP/s",
            Key::PeakFp32 => "FP32 TFLOP/s (no tensor cores)",
            Key::GemmFp8Deepgemm => {
                "share of the FP8 peak a large block-scaled GEMM reaches (DeepGEMM, 2025)"
            }
            Key::GemmFp8Cutlass => {
                "share of the FP8 peak a large block-scaled GEMM reaches (CUTLASS-based kernels of 2024)"
            }
            Key::GemmBf16 => "share of the BF16 peak a large GEMM sustains",
            Key::GemmFp16 => "share of the FP16 peak a large GEMM sustains",
            Key::GemmFp32 => "share of the FP32 peak a large GEMM sustains",
            Key::Flash3Fwd => "share of the 16-bit peak FlashAttention-3's forward reaches",
            Key::Flash3Bwd => "share of the 16-bit peak FlashAttention-3's backward reaches",
            Key::Flash2Fwd => "share of the 16-bit peak FlashAttention-2's forward reaches",
            Key::Flash2Bwd => "share of the 16-bit peak FlashAttention-2's backward reaches",
            Key::HbmGbps => "HBM bandwidth, GB/s",
            Key::HbmEfficiency => "share of the HBM bandwidth element-wise kernels reach",
            Key::MemoryGib => "memory as PyTorch sees it, GiB",
            Key::ContextGib => "memory the CUDA context takes, GiB",
            Key::IntraGbps => "GB/s per GPU and direction inside a node (NVLink, or PCIe)",
            Key::IntraLatencyUs => "latency of a message inside a node, µs",
            Key::IntraEfficiency => "share of the intra-node bandwidth NCCL's collectives reach",
            Key::IntraAllToAllEfficiency => {
                "share of the intra-node bandwidth an all-to-all reaches"
            }
            Key::NetGbps => "GB/s per GPU and direction between nodes",
            Key::NetLatencyUs => "latency of a message between nodes, µs",
            Key::NetEfficiency => "share of the network bandwidth collectives and transfers reach",
            Key::NetAllToAllEfficiency => "share of the network bandwidth an all-to-all reaches",
        }
    }

    /// Where the key belongs.
    pub fn scope(self) -> Scope {
        match self {
            Key::NetGbps | Key::NetLatencyUs | Key::NetEfficiency | Key::NetAllToAllEfficiency => {
                Scope::Network
            }
            _ => Scope::Gpu,
        }
    }

    /// The values a key may take (an override outside is refused).
    pub fn range(self) -> Range {
        match self {
            Key::Sms => Range::Positive {
                min: 1.0,
                max: 100_000.0,
            },
            Key::PeakFp8 | Key::PeakBf16 | Key::PeakFp16 | Key::PeakFp32 => RATE,
            Key::HbmGbps | Key::IntraGbps | Key::NetGbps | Key::MemoryGib => RATE,
            Key::ContextGib => Range::NonNegative(1_000.0),
            Key::IntraLatencyUs | Key::NetLatencyUs => Range::NonNegative(1e9),
            _ => Range::Fraction,
        }
    }

    /// The key called `name`.
    pub fn from_name(name: &str) -> Option<Key> {
        Key::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The GEMM efficiency key of linear layers in `dtype` (with `kernel` for FP8).
    pub fn gemm(dtype: Dtype, kernel: Fp8Kernel) -> Key {
        match dtype {
            Dtype::Fp8 => match kernel {
                Fp8Kernel::Deepgemm => Key::GemmFp8Deepgemm,
                Fp8Kernel::Cutlass => Key::GemmFp8Cutlass,
            },
            Dtype::Bf16 => Key::GemmBf16,
            Dtype::Fp16 => Key::GemmFp16,
            Dtype::Fp32 => Key::GemmFp32,
        }
    }

    /// The peak key of a number format.
    pub fn peak(dtype: Dtype) -> Key {
        match dtype {
            Dtype::Fp8 => Key::PeakFp8,
            Dtype::Bf16 => Key::PeakBf16,
            Dtype::Fp16 => Key::PeakFp16,
            Dtype::Fp32 => Key::PeakFp32,
        }
    }
}

/// A value and where it comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sourced {
    /// The value, in the key's unit.
    pub value: f64,
    /// Where it comes from (a paper, a data sheet, a measurement).
    pub source: &'static str,
}

/// One entry of the tables: a GPU or a network, with the values it gives (an entry `like`
/// another takes every value it does not give from it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Entry {
    /// The id a spec names it by.
    pub id: &'static str,
    /// Its name in reports.
    pub name: &'static str,
    /// The entry it inherits the values it does not give from.
    pub like: Option<&'static str>,
    /// Whether it describes a real machine (the `unit` entries of the tests do not).
    pub real: bool,
    /// (key, value, source).
    pub values: &'static [(Key, f64, &'static str)],
}

/// Where a resolved value comes from: the table, or the spec's override.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin {
    /// The table's value, with its source.
    Table(&'static str),
    /// The spec's `[cluster.override]`, with the source the spec gives.
    Override(String),
}

impl Origin {
    /// The source in words.
    pub fn text(&self) -> &str {
        match self {
            Origin::Table(s) => s,
            Origin::Override(s) => s,
        }
    }
}

/// The figures of a cluster's GPU and network, looked up once: the tables with the spec's
/// overrides applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Hardware {
    /// The GPU's id in the table.
    pub gpu_id: String,
    /// The GPU's name in reports.
    pub gpu_name: String,
    /// `None` for a single node without a network.
    pub network_id: Option<String>,
    /// The network's name in reports.
    pub network_name: Option<String>,
    values: Vec<Option<(f64, Origin)>>,
}

impl Hardware {
    /// The figures of GPU `gpu` and network `network` from the tables (`None` when an id is
    /// unknown).
    pub fn lookup(gpu: &str, network: Option<&str>) -> Option<Hardware> {
        let g = gpu_entry(gpu)?;
        let n = match network {
            Some(id) => Some(network_entry(id)?),
            None => None,
        };
        let mut values = vec![None; Key::ALL.len()];
        for (i, key) in Key::ALL.into_iter().enumerate() {
            let found = match key.scope() {
                Scope::Gpu => resolve(GPUS, g, key),
                Scope::Network => n.and_then(|n| resolve(NETWORKS, n, key)),
            };
            values[i] = found.map(|s| (s.value, Origin::Table(s.source)));
        }
        Some(Hardware {
            gpu_id: g.id.to_owned(),
            gpu_name: g.name.to_owned(),
            network_id: n.map(|n| n.id.to_owned()),
            network_name: n.map(|n| n.name.to_owned()),
            values,
        })
    }

    fn slot(key: Key) -> usize {
        Key::ALL.iter().position(|k| *k == key).unwrap_or(0)
    }

    /// The value of `key`, if the GPU (or network) has one.
    pub fn get(&self, key: Key) -> Option<f64> {
        self.values[Hardware::slot(key)].as_ref().map(|(v, _)| *v)
    }

    /// The value of `key`, or `default` when the entry has none.
    pub fn or(&self, key: Key, default: f64) -> f64 {
        self.get(key).unwrap_or(default)
    }

    /// Where the value of `key` comes from.
    pub fn origin(&self, key: Key) -> Option<&Origin> {
        self.values[Hardware::slot(key)].as_ref().map(|(_, o)| o)
    }

    /// Replaces the value of `key` (an override with its source).
    pub fn set(&mut self, key: Key, value: f64, source: String) {
        self.values[Hardware::slot(key)] = Some((value, Origin::Override(source)));
    }

    /// Scales a bandwidth or efficiency, keeping its origin (for property tests and what-ifs).
    pub fn scale(&mut self, key: Key, factor: f64) {
        if let Some((v, _)) = &mut self.values[Hardware::slot(key)] {
            *v *= factor;
        }
    }

    /// Peak dense TFLOP/s of `dtype` in FLOP/s, if the GPU has it.
    pub fn peak_flops(&self, dtype: Dtype) -> Option<f64> {
        self.get(Key::peak(dtype)).map(|t| t * 1e12)
    }

    /// Memory as the framework sees it, in bytes.
    pub fn memory_bytes(&self) -> f64 {
        self.or(Key::MemoryGib, 0.0) * GIB
    }
}

/// Bytes in a GiB.
pub const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// The GPU entry called `id`.
pub fn gpu_entry(id: &str) -> Option<&'static Entry> {
    GPUS.iter().find(|e| e.id == id)
}

/// The network entry called `id`.
pub fn network_entry(id: &str) -> Option<&'static Entry> {
    NETWORKS.iter().find(|e| e.id == id)
}

/// `key`'s value in `entry` or, failing that, in the entries it is `like` (at most a few levels).
pub fn resolve(table: &[Entry], entry: &Entry, key: Key) -> Option<Sourced> {
    let mut e = Some(entry);
    for _ in 0..8 {
        let here = e?;
        if let Some((_, v, s)) = here.values.iter().find(|(k, _, _)| *k == key) {
            return Some(Sourced {
                value: *v,
                source: s,
            });
        }
        e = here.like.and_then(|id| table.iter().find(|x| x.id == id));
    }
    None
}

/// The id of `table` nearest to a misspelt one, if one is near.
pub fn nearest_id(word: &str, table: &[Entry]) -> Option<&'static str> {
    let limit = (word.chars().count() / 3).clamp(2, 5);
    table
        .iter()
        .map(|e| (strsim::levenshtein(word, e.id), e.id))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, id)| id)
}

#[cfg(test)]
mod tests;
