//! A plan's layer split in the words of the frameworks that run it: a torchtitan 0.3.0
//! `ParallelismConfig` fragment (`module_fqns_per_model_part`, and
//! `pipeline_parallel_layers_per_stage` where torchtitan's own split gives the same parts), and
//! Megatron-Core's `pipeline_model_parallel_layout` string.
//!
//! Sources (read from the released packages, not copied):
//! - torchtitan 0.3.0, `torchtitan/config/configs.py` (`ParallelismConfig`: the fields
//!   `pipeline_parallel_degree`, `module_fqns_per_model_part: list[list[str]] | None`,
//!   `pipeline_parallel_layers_per_stage: int | None`,
//!   `pipeline_parallel_first_stage_less_layers` and `..._last_stage_less_layers`, both 1 by
//!   default); `torchtitan/distributed/pipeline_parallel.py` (`generate_llm_fqn_per_model_part`:
//!   the module names `tok_embeddings`, `layers.N`, `norm`, `lm_head`; with
//!   `layers_per_stage` = n the stages number ⌈(L + first_less + last_less) / n⌉, each gets
//!   ⌊(L + first_less + last_less) / S⌋ "effective layers", the first `extra` one more, and the
//!   first and last give up `first_less` and `last_less` of theirs to the embedding and the
//!   head). torchtitan 0.3.0 configures runs in Python (`config_registry.py` functions returning a
//!   trainer config), so the fragment is Python.
//! - Megatron-Core 0.16.1, `megatron/core/transformer/pipeline_parallel_layer_layout.py`
//!   (`PipelineParallelLayerLayout.parse_str_to_list`): stages separated by `|` in the order
//!   virtual stage × pipeline rank (stage index = vpp_rank · pp + pp_rank, so the plan's part q on
//!   rank q mod P), `E` the embedding, `t` a transformer layer, `m` a multi-token-prediction
//!   layer, `L` the loss (with the output head); `x*n` repeats a character and `(…)*n` a group;
//!   commas are cosmetic. The embedding comes first, the loss last, the MTP layers after every
//!   decoder layer and in the last virtual stage of their rank.
//! - Recomputation ([`recompute_flags`]): Megatron-Core 0.16.1's `--recompute-granularity`
//!   (`selective`: the core attention, `--recompute-modules core_attn` by default; `full`) with
//!   `--recompute-method uniform --recompute-num-layers 1` (every layer checkpointed alone), or
//!   `block` with N (the first N layers of every pipeline stage): one setting for every stage.
//!   torchtitan 0.3.0's `ActivationCheckpointConfig.mode` (`none`, `selective`, `full`) is one
//!   setting for the whole model, and its `selective` is per operator or per layer interval, not
//!   Korthikanti's attention core.

use crate::document::Document;
use pipeweave_check::ValidPlan;
use pipeweave_diagnostics::Diagnostic;
use std::io::{self, Write};

/// A small text export (its size is linear in the layers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitText(String);

impl SplitText {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Document for SplitText {
    fn write_to(&self, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(self.0.as_bytes())
    }
}

/// How a plan's parts sit on its ranks, as a framework can say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    /// Part q on rank q mod P.
    Loop,
    /// Parts 0..P down the ranks and P..2P back up (ZB-V, DualPipeV).
    V,
}

fn placement(plan: &ValidPlan, what: &str) -> Result<Placement, Diagnostic> {
    if plan.pipelines().len() != 1 {
        return Err(Diagnostic::error(format!(
            "{what} places one pipeline; this plan has {} (each model part on two ranks)",
            plan.pipelines().len()
        )));
    }
    let p = plan.ranks();
    let placement = &plan.pipelines()[0].placement;
    let looped = placement
        .iter()
        .enumerate()
        .all(|(q, &r)| r == q as u32 % p);
    let v = placement.len() as u32 == 2 * p
        && placement.iter().enumerate().all(|(q, &r)| {
            let q = q as u32;
            r == if q < p { q } else { 2 * p - 1 - q }
        });
    if looped {
        Ok(Placement::Loop)
    } else if v {
        Ok(Placement::V)
    } else {
        Err(Diagnostic::error(format!(
            "{what} places part q on rank q mod P (or in a V); this plan places its parts on ranks \
             {}",
            short_list(placement)
        )))
    }
}

fn short_list(v: &[u32]) -> String {
    let shown: Vec<String> = v.iter().take(16).map(u32::to_string).collect();
    if v.len() > 16 {
        format!("{}, …", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

fn check_split(plan: &ValidPlan, layers: &[u64]) -> Result<(), Diagnostic> {
    if layers.len() != plan.stages_per_pipeline() as usize {
        return Err(Diagnostic::error(format!(
            "the split has {} parts but the plan has {} stages per pipeline",
            layers.len(),
            plan.stages_per_pipeline()
        )));
    }
    Ok(())
}

/// torchtitan 0.3.0's split of `layers` layers into `stages` with `layers_per_stage` = n and the
/// first and last stages `first_less`, `last_less` layers lighter: the layers per stage, or
/// `None` where torchtitan refuses or makes another number of stages.
fn torchtitan_generated(
    layers: u64,
    stages: u64,
    n: u64,
    first_less: u64,
    last_less: u64,
) -> Option<Vec<u64>> {
    let effective = layers + first_less + last_less;
    if n == 0 || effective.div_ceil(n) != stages || stages < 2 || stages > effective {
        return None;
    }
    let per = effective / stages;
    let extra = effective % stages;
    if per == 0 || first_less > per || last_less > per {
        return None;
    }
    let mut left = layers;
    let mut out = Vec::with_capacity(stages as usize);
    for q in 0..stages {
        let mut e = per + u64::from(q < extra);
        if q == 0 {
            e -= first_less;
        } else if q + 1 == stages {
            e -= last_less;
        }
        let took = e.min(left);
        left -= took;
        out.push(took);
    }
    // torchtitan gives the last stage only what its count allows: layers left over are dropped
    // (its validation then fails), so a split it makes holds every layer
    (left == 0).then_some(out)
}

/// The `pipeline_parallel_layers_per_stage` (with the first and last stages' lighter counts)
/// under which torchtitan 0.3.0 makes exactly `split`, preferring its defaults (1 and 1).
fn torchtitan_layers_per_stage(split: &[u64]) -> Option<(u64, u64, u64)> {
    let layers: u64 = split.iter().sum();
    let stages = split.len() as u64;
    let lessers = [(1, 1), (0, 0), (1, 0), (0, 1), (2, 2), (2, 1), (1, 2)];
    for (first, last) in lessers {
        for n in 1..=layers + 2 {
            if torchtitan_generated(layers, stages, n, first, last).as_deref() == Some(split) {
                return Some((n, first, last));
            }
        }
    }
    None
}

/// A torchtitan 0.3.0 fragment for `plan` with `split` (layers per part), a Python snippet to
/// paste into a `config_registry.py` function. Refuses a plan torchtitan cannot place (several
/// pipelines) and multi-token prediction (`mtp_depth` > 0: torchtitan names no such module in
/// its split).
pub fn torchtitan_fragment(
    plan: &ValidPlan,
    split: &[u64],
    mtp_depth: u64,
) -> Result<SplitText, Diagnostic> {
    check_split(plan, split)?;
    let placement = placement(plan, "torchtitan")?;
    if mtp_depth > 0 {
        return Err(Diagnostic::error(
            "torchtitan 0.3.0's module names per model part have no multi-token prediction \
             modules; the spec's model has them (`model.mtp_depth`)",
        ));
    }
    let mut s = String::new();
    s.push_str(
        "# torchtitan 0.3.0: pipeweave's split of the model's layers over the plan's parts,\n\
         # for torchtitan.config.ParallelismConfig (torchtitan/config/configs.py).\n",
    );
    let layers: u64 = split.iter().sum();
    s.push_str(&format!(
        "# {} parts of {} layers in all on {} ranks, {}; the first part also holds the\n\
         # embedding, the last the final norm and the output head.\n",
        split.len(),
        layers,
        plan.ranks(),
        match placement {
            Placement::Loop => "part q on rank q mod P",
            Placement::V => "in a V (parts 0..P down the ranks, P..2P back up)",
        },
    ));
    s.push_str("from torchtitan.config import ParallelismConfig\n\n");
    s.push_str("parallelism = ParallelismConfig(\n");
    s.push_str(&format!("    pipeline_parallel_degree={},\n", plan.ranks()));
    if let Some((n, first, last)) = torchtitan_layers_per_stage(split) {
        s.push_str(&format!(
            "    # torchtitan's own split gives these parts: this alone would do\n    \
             pipeline_parallel_layers_per_stage={n},\n"
        ));
        if first != 1 {
            s.push_str(&format!(
                "    pipeline_parallel_first_stage_less_layers={first},\n"
            ));
        }
        if last != 1 {
            s.push_str(&format!(
                "    pipeline_parallel_last_stage_less_layers={last},\n"
            ));
        }
    }
    s.push_str("    module_fqns_per_model_part=[\n");
    let mut at = 0u64;
    let n = split.len();
    for (q, &k) in split.iter().enumerate() {
        let mut names: Vec<String> = Vec::new();
        if q == 0 {
            names.push("\"tok_embeddings\"".to_owned());
        }
        names.extend((at..at + k).map(|l| format!("\"layers.{l}\"")));
        if q + 1 == n {
            names.push("\"norm\"".to_owned());
            names.push("\"lm_head\"".to_owned());
        }
        at += k;
        s.push_str(&format!("        [{}],\n", names.join(", ")));
    }
    s.push_str("    ],\n)\n");
    Ok(SplitText(s))
}

/// One stage of a Megatron-Core layout: `E`, `t*n`, `m`s, `L`.
fn megatron_stage(first: bool, last: bool, layers: u64, mtp: u64) -> String {
    let mut s = String::new();
    if first {
        s.push('E');
    }
    match layers {
        0 => {}
        1 => s.push('t'),
        n => s.push_str(&format!("t*{n}")),
    }
    if last {
        match mtp {
            0 => {}
            1 => s.push('m'),
            n => s.push_str(&format!("m*{n}")),
        }
        s.push('L');
    }
    s
}

/// Megatron-Core's `pipeline_model_parallel_layout` for `plan` with `split` and `mtp_depth`
/// multi-token-prediction layers (in the last part, after its layers): runs of equal stages
/// folded as `(t*4|)*14`. Refuses a plan whose parts are not on rank q mod P: Megatron-Core
/// places virtual stages in a loop.
pub fn megatron_layout(
    plan: &ValidPlan,
    split: &[u64],
    mtp_depth: u64,
) -> Result<SplitText, Diagnostic> {
    check_split(plan, split)?;
    if placement(plan, "Megatron-Core")? != Placement::Loop {
        return Err(Diagnostic::error(
            "Megatron-Core places part q on rank q mod P; this plan places its parts in a V",
        ));
    }
    let n = split.len();
    let stages: Vec<String> = split
        .iter()
        .enumerate()
        .map(|(q, &k)| megatron_stage(q == 0, q + 1 == n, k, mtp_depth))
        .collect();
    let mut out = String::new();
    let mut i = 0;
    while i < n {
        let run = stages[i..].iter().take_while(|s| **s == stages[i]).count();
        let last = i + run == n;
        if run > 1 && !stages[i].is_empty() {
            // `(x|)*k` then the next stage, or `(x|)*(k−1)x` at the end
            if last {
                out.push_str(&format!("({}|)*{}{}", stages[i], run - 1, stages[i]));
            } else {
                out.push_str(&format!("({}|)*{}", stages[i], run));
            }
        } else {
            for k in 0..run {
                out.push_str(&stages[i]);
                if !(last && k + 1 == run) {
                    out.push('|');
                }
            }
        }
        i += run;
    }
    out.push('\n');
    Ok(SplitText(out))
}

/// How `framework` (`megatron` or `torchtitan`) states each part's recomputation (`none`,
/// `selective`, `full` per part), in words for a note beside the export: the flags when every
/// part runs the same, else why the framework cannot say it (both take one setting for every
/// stage) and the nearest it can.
pub fn recompute_flags(framework: &str, per_part: &[&str]) -> String {
    let first = per_part.first().copied().unwrap_or("none");
    let uniform = per_part.iter().all(|&r| r == first);
    let heaviest = if per_part.contains(&"full") {
        "full"
    } else if per_part.contains(&"selective") {
        "selective"
    } else {
        "none"
    };
    let megatron = |r: &str| match r {
        "full" => {
            "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1"
        }
        "selective" => "--recompute-granularity selective",
        _ => "no --recompute-granularity",
    };
    let titan = |r: &str| match r {
        "full" => "ActivationCheckpointConfig(mode=\"full\")",
        "selective" => {
            "no exact setting (its selective mode recomputes per operator or per layer interval, \
             not the attention core)"
        }
        _ => "ActivationCheckpointConfig(mode=\"none\")",
    };
    let say = |r: &str| {
        if framework == "megatron" {
            megatron(r).to_owned()
        } else {
            titan(r).to_owned()
        }
    };
    let name = if framework == "megatron" {
        "Megatron-Core"
    } else {
        "torchtitan"
    };
    if uniform {
        format!("recomputation {first} on every part: {name} {}", say(first))
    } else {
        format!(
            "the plan recomputes per part, which {name} cannot say (one setting for every stage); \
             the heaviest part's, {heaviest}, on every part: {}",
            say(heaviest)
        )
    }
}
