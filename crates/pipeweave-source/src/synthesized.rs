//! `synth:PLACEMENT`: a schedule found by `pipeweave-synth` rather than written, usable wherever a
//! schedule name is (`compare synth:v zb-v`, `sweep`, `export`). Its order is searched under the
//! costs the command gives ([`SynthesisCosts`]: its `--costs`, or its spec fitted to the placement,
//! with each rank's memory on that spec as the limit), else under unit costs
//! (F = I = W = 1, B = 2, F&B = 3, no transfer time) within 1F1B's memory. Deterministic: the
//! search is bounded by its `evaluations` and seeded by `seed`, never by a clock.

use crate::build::Built;
use crate::declared::{Declared, Param};
use crate::failure::Failure;
use crate::host::SynthesisCosts;
use crate::params::Params;
use crate::words::{Flag, FrontEnd};
use pipeweave_param::{IntRange, ParamType, Value};
use pipeweave_synth::{Options, Placement, Problem, ProblemError, SynthError};

/// The largest activation limit a rank may be given, as `synthesize --activations` takes.
const MAX_ACTIVATIONS: u32 = 1 << 24;

/// The prefix that names a synthesized schedule (`synth:loop`, `synth:v`, `synth:bidirectional`).
pub const SYNTH_PREFIX: &str = "synth:";

/// The placements a `synth:` name may give.
pub const PLACEMENTS: [&str; 3] = ["loop", "v", "bidirectional"];

/// The local search's tries when `evaluations` is not set: a few tenths of a second at P = 8,
/// M = 32.
const EVALUATIONS: i64 = 20_000;

/// The most operation visits the local search may make in all (each try visits every operation
/// once at most), and the heuristic's constructions (each looks over a rank's stages at every
/// operation, then validates and simulates the plan): under a second each on a 2-core VM at the
/// largest size, so a large plan gets fewer tries
/// than `evaluations` asks for rather than a long wait, the same on every machine.
const VISITS: u64 = 50_000_000;
const CONSTRUCTION_VISITS: u64 = 2_000_000;

/// The placement a `synth:` name gives, as `PLACEMENTS` spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    Loop,
    V,
    Bidirectional,
}

impl Shape {
    /// The placement `text` (after `synth:`) names, or a usage failure listing the placements.
    pub(crate) fn parse(text: &str) -> Result<Shape, Failure> {
        match text {
            "loop" => Ok(Shape::Loop),
            "v" => Ok(Shape::V),
            "bidirectional" => Ok(Shape::Bidirectional),
            _ => Err(Failure::invalid(format!(
                "`{SYNTH_PREFIX}{text}`: a synthesized schedule names its placement, one of {}",
                PLACEMENTS
                    .map(|p| format!("`{SYNTH_PREFIX}{p}`"))
                    .join(", ")
            ))),
        }
    }

    /// Its parameters, in the one model of `pipeweave-param`.
    pub(crate) fn declared(self) -> Declared {
        let int = |min: i64, max: i64| {
            ParamType::Int(IntRange {
                min: Some(min),
                max: Some(max),
                multiple_of: None,
            })
        };
        let param = |name: &str, ty: ParamType, default: &str, help: &str| Param {
            name: name.to_owned(),
            ty,
            default: Some(default.to_owned()),
            help: Some(help.to_owned()),
        };
        let (placement, limit) = match self {
            Shape::Loop => ("one pipeline, stage q on rank q mod P", "P * v"),
            Shape::V => ("one pipeline of 2P stages in a V", "2 * P"),
            Shape::Bidirectional => ("two pipelines in opposite directions", "P + 1"),
        };
        let mut params = Vec::new();
        if self == Shape::Loop {
            params.push(param("v", int(1, 64), "1", "stages per rank"));
        }
        params.push(param(
            "activations",
            int(1, i64::from(MAX_ACTIVATIONS)),
            limit,
            "the most activations (stage-micro-batch units) a rank may hold; by default what the spec's memory leaves on each rank, or without a spec P stages' worth, 1F1B's memory",
        ));
        params.push(param(
            "evaluations",
            int(0, 100_000_000),
            &EVALUATIONS.to_string(),
            "the most plans the local search tries",
        ));
        params.push(param(
            "seed",
            int(0, i64::from(u32::MAX)),
            "0",
            "seeds the local search",
        ));
        params.push(param(
            "weight_split",
            ParamType::Bool,
            "true",
            "backwards may split into I and W",
        ));
        if self == Shape::Bidirectional {
            params.push(param(
                "pairs",
                ParamType::Bool,
                "true",
                "a forward and a backward may overlap as one F&B pair",
            ));
        }
        Declared {
            description: format!(
                "A schedule synthesized for its placement ({placement}) under the command's costs (a spec's, --costs, or unit costs) within a memory limit"
            ),
            params,
            requires: if self == Shape::Bidirectional {
                "M even".to_owned()
            } else {
                String::new()
            },
            same_as_plugin: None,
        }
    }
}

/// Synthesizes the plan of `name` (placement `shape`, which declares `declared`) for `params`.
pub(crate) fn build(
    name: &str,
    shape: Shape,
    declared: &Declared,
    params: &Params,
    costs: &dyn SynthesisCosts,
    front: FrontEnd,
) -> Result<Built, Failure> {
    let (Some(ranks), Some(microbatches)) = (params.ranks, params.microbatches) else {
        return Err(Failure::usage(format!(
            "`{name}` is a synthesized schedule: give {} and {}",
            front.flag(Flag::Ranks),
            front.flag(Flag::Microbatches)
        )));
    };
    let (_, values) = crate::build::settings(name, declared, params, front)?;
    let int = |key: &str| {
        values.iter().find_map(|(n, v)| match v {
            Value::Int(i) if n == key => Some(*i),
            _ => None,
        })
    };
    let flag = |key: &str, default: bool| {
        values
            .iter()
            .find_map(|(n, v)| match v {
                Value::Bool(b) if n == key => Some(*b),
                _ => None,
            })
            .unwrap_or(default)
    };
    let (placement, stages) = match shape {
        Shape::Loop => {
            let v = int("v").unwrap_or(1) as u32;
            (Placement::Loop { v }, v)
        }
        Shape::V => (Placement::V, 2),
        // Two pipelines of P stages: two stages per rank.
        Shape::Bidirectional => (Placement::Bidirectional, 2),
    };
    let default_limit = placement.one_f_one_b_activations(ranks);
    let mut problem = Problem {
        ranks,
        microbatches,
        placement,
        weight_split: flag("weight_split", true),
        pairs: shape == Shape::Bidirectional && flag("pairs", true),
        limits: vec![default_limit; ranks as usize],
        weights: Vec::new(),
    };
    let failed = |e: pipeweave_synth::SynthError| Failure::invalid(format!("{name}: {e}"));
    // The command's costs and memory are those of a plan of this placement.
    let skeleton = pipeweave_synth::placement_plan(&problem).map_err(failed)?;
    let terms = costs
        .terms(&skeleton)
        .map_err(|f| Failure::invalid(format!("{name}: {}", f.reason())))?;
    let on_spec =
        int("activations").is_none() && terms.as_ref().is_some_and(|t| t.memory.is_some());
    match (
        int("activations"),
        terms.as_ref().and_then(|t| t.memory.as_ref()),
    ) {
        (Some(k), _) => problem.limits = vec![k as u32; ranks as usize],
        (None, Some((limits, weights))) => {
            problem.limits.clone_from(limits);
            problem.weights.clone_from(weights);
        }
        (None, None) => {}
    }
    let costs: &dyn pipeweave_sim::CostModel = match &terms {
        Some(t) => t.costs.as_ref(),
        None => &pipeweave_sim::UnitCosts,
    };
    let operations = 3 * u64::from(ranks) * u64::from(stages) * u64::from(microbatches);
    let options = Options {
        seed: int("seed").unwrap_or(0) as u64,
        evaluations: (int("evaluations").unwrap_or(EVALUATIONS) as u64)
            .min(VISITS / operations.max(1)),
        exact_nodes: 0,
        // A list-scheduler construction looks over the rank's stages at each step.
        constructions: (CONSTRUCTION_VISITS / (operations * u64::from(stages)).max(1)).max(1)
            as usize,
        ..Options::default()
    };
    let found =
        pipeweave_synth::synthesize(&problem, costs, &options, &mut |_| true).map_err(|e| {
            Failure::invalid(match e {
                // On a spec the units are the budget's (an eighth of the lightest activation).
                SynthError::Problem(ProblemError::Memory {
                    rank,
                    limit,
                    needed,
                }) if on_spec => format!(
                    "{name}: rank {rank} has room for {limit} units of activations on this spec (a unit is an eighth of the lightest stage's activation) after its weights, gradients, optimizer state and buffers, but a micro-batch holds {needed} there before its first backward; a spec with more memory per GPU or more ranks (fewer layers each) fits"
                ),
                SynthError::NotFound(_) => format!(
                    "{name}: no order the search built stays within each rank's memory; give it more room with {}",
                    front.given(Flag::Set, "activations=K")
                ),
                e => format!("{name}: {e}"),
            })
        })?;
    Ok(Built {
        plan: found.plan,
        origins: None,
        name: name.to_owned(),
        notes: Vec::new(),
    })
}
