//! The schedule generators behind pipeweave's first plugins: Chimera, DualPipe and DualPipeV.
//!
//! Each generator is an ordinary function from ranks, micro-batches and options to a
//! [`pipeweave_plan::Plan`], tested here directly; the `plugins/` crates are thin `cdylib` shells
//! that export the [`Generator`] implementations below with `export_plugin!`. Nothing here depends
//! on anything under `plugins/`.

#![warn(missing_docs)]

mod chimera;
mod dual;

pub use chimera::{ChimeraOptions, Joins, chimera};
pub use dual::{DualOptions, dualpipe, dualpipev};

use pipeweave_plan::Plan;
use pipeweave_plugin_api::{Generator, Metadata, ParamSpec, Request};

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn dual_params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::bool(
            "weight_split",
            true,
            "defer weight gradients (I now, W later) as DeepSeek's zero-bubble mode does; false: every backward is full",
        ),
        ParamSpec::bool(
            "overlap",
            true,
            "run each F&B as one overlapped pair; false: the forward, then the full backward",
        ),
    ]
}

fn dual_options(request: &Request) -> Result<DualOptions, String> {
    Ok(DualOptions {
        weight_split: request.bool_or("weight_split", true)?,
        overlap: request.bool_or("overlap", true)?,
    })
}

/// DeepSeek-V3's bidirectional DualPipe.
#[derive(Debug)]
pub struct DualPipe;

impl Generator for DualPipe {
    fn metadata() -> Metadata {
        Metadata {
            name: "dualpipe".into(),
            version: VERSION.into(),
            description:
                "DeepSeek-V3's DualPipe: two model copies fed from both ends, overlapped F&B pairs"
                    .into(),
            requires: "an even number of ranks P, an even number of micro-batches M, M ≥ 2P".into(),
            params: dual_params(),
        }
    }

    fn generate(request: &Request) -> Result<Plan, String> {
        dualpipe(request.ranks, request.microbatches, dual_options(request)?)
    }
}

/// DualPipeV, the V-shaped one-copy form of DualPipe.
#[derive(Debug)]
pub struct DualPipeV;

impl Generator for DualPipeV {
    fn metadata() -> Metadata {
        Metadata {
            name: "dualpipev".into(),
            version: VERSION.into(),
            description: "DualPipeV: DualPipe cut in half, one model copy in a V of 2P stages"
                .into(),
            requires: "M ≥ 2P micro-batches".into(),
            params: dual_params(),
        }
    }

    fn generate(request: &Request) -> Result<Plan, String> {
        dualpipev(request.ranks, request.microbatches, dual_options(request)?)
    }
}

/// Chimera's bidirectional pipelines.
#[derive(Debug)]
pub struct Chimera;

impl Generator for Chimera {
    fn metadata() -> Metadata {
        Metadata {
            name: "chimera".into(),
            version: VERSION.into(),
            description: "Chimera: down and up pipelines over the same workers, in the authors' order".into(),
            requires: "an even number of ranks D divisible by the number of pipelines K; M ≥ D and a multiple of D/K (2D and 2D/K with doubling or halving joins)".into(),
            params: vec![
                ParamSpec::int(
                    "pipelines",
                    2,
                    "how many pipelines (half down, half up); each is a model copy",
                )
                .constrained(Some(2), None, Some(2)),
                ParamSpec::choice(
                    "joins",
                    &Joins::ALL.map(Joins::name),
                    Joins::Direct.name(),
                    "how basic units join when M > D: direct = back to back, one micro-batch per slot; \
                     doubling = two micro-batches per slot, joints closed, twice the activations (meant with recomputation); \
                     halving = doubling's order on micro-batches of half the size, run at twice direct's M, no recomputation needed",
                ),
            ],
        }
    }

    fn generate(request: &Request) -> Result<Plan, String> {
        let k = request.int_or("pipelines", 2)?;
        let pipelines = u32::try_from(k).map_err(|_| {
            format!("chimera needs an even number of pipelines (at least 2), got {k}")
        })?;
        chimera(
            request.ranks,
            request.microbatches,
            ChimeraOptions {
                pipelines,
                joins: {
                    let name = request.choice_or("joins", Joins::Direct.name())?;
                    Joins::from_name(name).ok_or_else(|| {
                        format!(
                            "chimera: `joins` is one of direct, doubling or halving, not `{name}`"
                        )
                    })?
                },
            },
        )
    }
}

#[cfg(test)]
mod tests;
