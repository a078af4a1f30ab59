//! Shape-aware GEMMs: what a GEMM of M × N × K costs against the table's large-GEMM rate.
//!
//! The method of NVIDIA's "Matrix Multiplication Background User's Guide" (DU-09799-001, 2023):
//! a GEMM is cut into output tiles, each computed by one thread block on one SM; the tiles run in
//! waves of one tile per SM (§3.2, wave quantization: `waves = ⌈tiles / SMs⌉`), and a tile
//! that reaches past the edge of the output computes its whole size (§3.1, tile quantization).
//! The time is that of `waves × SMs` whole tiles at the large-GEMM rate (the table's efficiency,
//! measured on large square shapes where both effects vanish), so the share of it a GEMM gets is
//! `M·N / (waves · SMs · tile_m · tile_n)`. cuBLAS's heuristics pick the tile per shape (§2.3:
//! 256×128 and 128×256 are the most efficient, then 128×128); the best of those three is taken.
//! A GEMM also reads its two inputs and writes its output once at least (§2, math and memory
//! bounds): its time is at least those bytes at the HBM bandwidth element-wise kernels reach, so a
//! small GEMM is bound by memory.
//!
//! FlashAttention's kernels are cut the same way (FlashAttention-2, Dao 2023, §3.2: one thread
//! block per block of 128 query rows, head and sequence of the micro-batch, forward; per block
//! of keys, backward): [`Roof::waves`] of their blocks scales the table's attention efficiency,
//! measured on grids of many waves.
//!
//! Everything is expressed as "FLOPs at the large-GEMM rate": a GEMM whose shape wastes a fifth
//! of its last wave counts as that many more FLOPs, so the rest of the cost model keeps one rate.

use pipeweave_spec::Spec;
use pipeweave_spec::hardware::Key;

/// The output tiles cuBLAS chooses among for large GEMMs (the guide, §2.3).
const TILES: [(f64, f64); 3] = [(256.0, 128.0), (128.0, 256.0), (128.0, 128.0)];

/// The figures a GEMM's shape is costed with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Roof {
    /// Streaming multiprocessors: one tile each per wave.
    sms: f64,
    /// FLOPs of the large-GEMM rate per byte the HBM moves at its element-wise rate: a GEMM
    /// moving more bytes than its FLOPs over this is bound by memory.
    flops_per_byte: f64,
    /// Bytes of one input element.
    input_bytes: f64,
    /// Bytes of one output element.
    output_bytes: f64,
}

/// One GEMM of a pass: `count` alike of `m × n × k` (a grouped GEMM: one per expert).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Gemm {
    pub m: f64,
    pub n: f64,
    pub k: f64,
    pub count: f64,
}

impl Gemm {
    /// A linear layer of `k` inputs and `n` outputs over `m` tokens.
    pub fn linear(m: f64, n: f64, k: f64) -> Gemm {
        Gemm {
            m,
            n,
            k,
            count: 1.0,
        }
    }

    /// The GEMM's FLOPs.
    pub fn flops(&self) -> f64 {
        2.0 * self.m * self.n * self.k * self.count
    }

    /// The input gradient of the layer (dX = dY · Wᵀ: M × K by N).
    pub fn input_gradient(&self) -> Gemm {
        Gemm {
            n: self.k,
            k: self.n,
            ..*self
        }
    }

    /// The weight gradient of the layer (dW = Xᵀ · dY: K × N by M, reduced over the tokens).
    pub fn weight_gradient(&self) -> Gemm {
        Gemm {
            m: self.k,
            n: self.n,
            k: self.m,
            count: self.count,
        }
    }
}

impl Roof {
    /// The figures of `spec`'s GPU for its GEMM format.
    pub fn of(spec: &Spec) -> Roof {
        let t = &spec.training;
        let c = &spec.cluster;
        let rate = c.figure(Key::peak(t.gemm_dtype))
            * 1e12
            * c.figure(Key::gemm(t.gemm_dtype, t.fp8_gemm_kernel));
        let hbm = c.figure(Key::HbmGbps) * 1e9 * c.figure(Key::HbmEfficiency);
        Roof {
            sms: c.figure(Key::Sms).max(1.0).floor(),
            flops_per_byte: if hbm > 0.0 { rate / hbm } else { 0.0 },
            input_bytes: t.gemm_dtype.bytes(),
            // an FP8 GEMM writes its output in the activation format
            output_bytes: t.activation_dtype.bytes(),
        }
    }

    /// The share of the large-GEMM rate a GEMM's tiles and waves leave it: the best tile's
    /// `M·N / (waves · SMs · tile_m · tile_n)`, at most 1.
    pub fn quantization(&self, g: &Gemm) -> f64 {
        if g.m.is_nan() || g.n.is_nan() || g.m < 1.0 || g.n < 1.0 {
            return 1.0;
        }
        let mut best: f64 = 0.0;
        for (tm, tn) in TILES {
            let tiles = (g.m / tm).ceil() * (g.n / tn).ceil() * g.count.max(1.0).ceil();
            let waves = (tiles / self.sms).ceil().max(1.0);
            let share = g.m * g.n * g.count.max(1.0).ceil() / (waves * self.sms * tm * tn);
            best = best.max(share);
        }
        best.clamp(1e-6, 1.0)
    }

    /// The share of a kernel's rate its `blocks` thread blocks of equal work leave it, in waves
    /// of one block per SM: `blocks / (⌈blocks / SMs⌉ · SMs)`.
    pub fn waves(&self, blocks: f64) -> f64 {
        if blocks.is_nan() || blocks < 1.0 {
            return 1.0;
        }
        let blocks = blocks.ceil();
        (blocks / ((blocks / self.sms).ceil() * self.sms)).clamp(1e-6, 1.0)
    }

    /// The GEMM's FLOPs at the large-GEMM rate: its FLOPs over its quantization, or the FLOPs
    /// that rate does in the time its bytes take at the HBM rate, whichever is more.
    pub fn equivalent(&self, g: &Gemm) -> f64 {
        let compute = g.flops() / self.quantization(g);
        let bytes =
            g.count * ((g.m * g.k + g.k * g.n) * self.input_bytes + g.m * g.n * self.output_bytes);
        compute.max(bytes * self.flops_per_byte)
    }

    /// For the GEMMs of a block's forward: (forward, input gradient, weight gradient), each
    /// the ratio of its FLOPs at the large-GEMM rate to its FLOPs (1 for no GEMM).
    pub fn factors(&self, gemms: &[Gemm]) -> [f64; 3] {
        let ratio = |f: &dyn Fn(&Gemm) -> Gemm| {
            let (mut eq, mut flops) = (0.0, 0.0);
            for g in gemms {
                let g = f(g);
                eq += self.equivalent(&g);
                flops += g.flops();
            }
            if flops > 0.0 { eq / flops } else { 1.0 }
        };
        [
            ratio(&|g| *g),
            ratio(&|g| g.input_gradient()),
            ratio(&|g| g.weight_gradient()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> Roof {
        // 132 SMs; 989.4 × 0.71 TFLOP/s against 3,350 × 0.85 GB/s
        Roof {
            sms: 132.0,
            flops_per_byte: 989.4e12 * 0.71 / (3350e9 * 0.85),
            input_bytes: 2.0,
            output_bytes: 2.0,
        }
    }

    #[test]
    fn a_large_gemm_of_whole_waves_runs_at_the_table_rate() {
        // 128×128 tiles: 33 × 32 = 1,056 tiles, eight waves of 132 exactly
        let g = Gemm::linear(33.0 * 128.0, 32.0 * 128.0, 8192.0);
        assert_eq!(h100().quantization(&g), 1.0);
        assert_eq!(h100().equivalent(&g), g.flops());
    }

    #[test]
    fn a_partial_last_wave_costs_a_whole_one() {
        // 133 tiles of 128×128 take two waves of 132; 67 tiles of 256×128 take one, the last
        // of them half outside the output: either way about half the rate
        let g = Gemm::linear(133.0 * 128.0, 128.0, 4096.0);
        let q = h100().quantization(&g);
        let one_wave_256: f64 = 133.0 * 128.0 * 128.0 / (132.0 * 256.0 * 128.0);
        let two_waves_128 = 133.0 / 264.0;
        assert!((q - one_wave_256.max(two_waves_128)).abs() < 1e-12, "{q}");
    }

    #[test]
    fn a_tile_past_the_edge_computes_its_whole_size() {
        // 100 × 100 output: one 128×128 tile of which 100·100 is useful, one wave of 132 SMs
        let g = Gemm::linear(100.0, 100.0, 65536.0);
        let q = h100().quantization(&g);
        assert!((q - 100.0 * 100.0 / (132.0 * 128.0 * 128.0)).abs() < 1e-12);
    }

    #[test]
    fn a_thin_gemm_is_bound_by_memory() {
        // K = 16: 2·M·N·16 FLOPs against M·N·2 bytes written: 16 FLOPs a byte, far below the
        // H100's 247
        let r = h100();
        let g = Gemm::linear(132.0 * 128.0, 8192.0, 16.0);
        let bytes = (132.0 * 128.0 * 16.0 + 16.0 * 8192.0 + 132.0 * 128.0 * 8192.0) * 2.0;
        assert!((r.equivalent(&g) - bytes * r.flops_per_byte).abs() / r.equivalent(&g) < 1e-12);
        assert!(r.equivalent(&g) > 10.0 * g.flops());
    }

    #[test]
    fn a_partial_wave_of_attention_blocks_costs_a_whole_one() {
        // 8 blocks of 128 queries, 8 heads: 64 blocks on 132 SMs, one wave half full
        assert!((h100().waves(64.0) - 64.0 / 132.0).abs() < 1e-12);
        assert_eq!(h100().waves(264.0), 1.0);
        assert!((h100().waves(265.0) - 265.0 / 396.0).abs() < 1e-12);
    }

    #[test]
    fn the_gradients_swap_the_dimensions() {
        let g = Gemm::linear(8192.0, 2304.0, 16384.0);
        let i = g.input_gradient();
        let w = g.weight_gradient();
        assert_eq!((i.m, i.n, i.k), (8192.0, 16384.0, 2304.0));
        assert_eq!((w.m, w.n, w.k), (16384.0, 2304.0, 8192.0));
        assert_eq!(g.flops(), i.flops());
        assert_eq!(g.flops(), w.flops());
    }
}
