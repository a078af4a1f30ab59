//! Cluster, model and training specs in TOML: the input of the cost model (`pipeweave-cost`).
//!
//! [`parse`] reads a spec and reports every problem as a diagnostic with a span, into a [`Spec`]
//! whose every figure of the GPU and the network comes from [`hardware`]'s tables (each value with
//! its source) or the spec's overrides. The shipped specs are embedded by name.
//! No IO: the caller reads files; [`DEFAULT_SPEC`] is embedded.

#![warn(missing_docs)]

pub mod hardware;
mod parse;
mod precision;
mod spec;

pub use parse::parse;
pub use spec::{
    Attention, Cluster, Dtype, Fp8Kernel, Framework, Measured, MicrobatchRule, Mla, Mlp, Model,
    Moe, Parallelism, PlacementOrder, Positions, Recompute, Spec, Training, Zero2Pipeline,
};

/// The spec every command uses without `--spec`: a dense 70B model (Llama 3 70B's shape) at PP 8
/// on 1,024 H100 GPUs (`specs/dense-70b-h100-pp8.toml`), chosen because P = 8 is where the
/// published schedule comparisons are made.
pub const DEFAULT_SPEC: &str = include_str!("../../../specs/dense-70b-h100-pp8.toml");

/// The file name of [`DEFAULT_SPEC`], for diagnostics.
pub const DEFAULT_SPEC_NAME: &str = "specs/dense-70b-h100-pp8.toml";

/// A spec shipped in the workspace's `specs/` folder, embedded in the binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShippedSpec {
    /// The file name without `.toml`, e.g. `deepseek-v3-h800-pp16-ep64`.
    pub name: &'static str,
    /// The path in the workspace, for diagnostics.
    pub file: &'static str,
    /// The spec's TOML text.
    pub source: &'static str,
}

macro_rules! embed_spec {
    ($name:literal) => {
        ShippedSpec {
            name: $name,
            file: concat!("specs/", $name, ".toml"),
            source: include_str!(concat!("../../../specs/", $name, ".toml")),
        }
    };
}

/// Every shipped spec, sorted by name.
pub const SHIPPED_SPECS: &[ShippedSpec] = &[
    embed_spec!("deepseek-v3-h800-pp16-ep64"),
    embed_spec!("dense-70b-h100-pp8"),
    embed_spec!("gpt2-1.3b-p100-32"),
    embed_spec!("llama3.1-405b-h100-pp16"),
    embed_spec!("unit"),
];

/// The shipped spec called `name` (with or without `.toml`), or the built-in default for
/// `default`.
pub fn shipped_spec(name: &str) -> Option<ShippedSpec> {
    if name == "default" {
        return Some(ShippedSpec {
            name: "default",
            file: DEFAULT_SPEC_NAME,
            source: DEFAULT_SPEC,
        });
    }
    let name = name.strip_suffix(".toml").unwrap_or(name);
    SHIPPED_SPECS.iter().copied().find(|s| s.name == name)
}

/// Parses [`DEFAULT_SPEC`]. It is tested to parse without diagnostics.
pub fn default_spec() -> Option<Spec> {
    parse(DEFAULT_SPEC, pipeweave_diagnostics::FileId(0)).0
}
