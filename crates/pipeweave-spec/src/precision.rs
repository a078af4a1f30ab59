//! Number formats and the FP8 kernels that compute with them: what the spec names and the
//! hardware tables price, below both.

/// A number format for parameters, gradients, optimizer state or activations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dtype {
    /// IEEE 754 single precision: 4 bytes.
    Fp32,
    /// bfloat16: 2 bytes.
    Bf16,
    /// IEEE 754 half precision: 2 bytes.
    Fp16,
    /// An 8-bit float (E4M3 or E5M2): 1 byte.
    Fp8,
}

impl Dtype {
    /// Bytes per element.
    pub fn bytes(self) -> f64 {
        match self {
            Dtype::Fp32 => 4.0,
            Dtype::Bf16 | Dtype::Fp16 => 2.0,
            Dtype::Fp8 => 1.0,
        }
    }

    /// The name specs write (`fp32`, `bf16`, `fp16`, `fp8`).
    pub fn name(self) -> &'static str {
        match self {
            Dtype::Fp32 => "fp32",
            Dtype::Bf16 => "bf16",
            Dtype::Fp16 => "fp16",
            Dtype::Fp8 => "fp8",
        }
    }

    pub(crate) fn from_name(s: &str) -> Option<Dtype> {
        match s {
            "fp32" => Some(Dtype::Fp32),
            "bf16" => Some(Dtype::Bf16),
            "fp16" => Some(Dtype::Fp16),
            "fp8" => Some(Dtype::Fp8),
            _ => None,
        }
    }
}

/// Which FP8 GEMM kernels a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fp8Kernel {
    /// DeepGEMM (DeepSeek, February 2025).
    Deepgemm,
    /// The CUTLASS-based block-scaled kernels DeepSeek trained V3 with (2024).
    Cutlass,
}
