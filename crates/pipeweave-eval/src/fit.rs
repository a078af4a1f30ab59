//! Adapting a spec to a plan's shape (ranks, stages, micro-batches), so that schedules with
//! different stage counts (DualPipeV's 2P stages beside 1F1B's P) run on the same cluster and
//! model.

use pipeweave_plan::Plan;
use pipeweave_spec::{Measured, Spec};

/// Adapts `spec` to `plan`'s shape: pipeline ranks (data parallelism takes the rest of the GPUs),
/// model parts (an even split of the layers when the count changes, the first and last parts
/// lighter since they carry the embedding and the head), and micro-batches per step.
/// Returns the adapted spec and one note per change; fails when the cluster or the model cannot
/// take the plan's shape.
pub fn fit_spec(spec: &Spec, plan: &Plan) -> Result<(Spec, Vec<String>), String> {
    let mut out = spec.clone();
    let mut notes = Vec::new();
    let pp = plan.ranks();
    let parts = plan.stages_per_pipeline();
    if pp == 0 || !parts.is_multiple_of(pp) {
        return Err(format!(
            "the plan's {parts} stages per pipeline do not spread evenly over its {pp} ranks"
        ));
    }
    let par = &mut out.parallelism;
    if pp != par.pp {
        let gpus = spec.cluster.gpus();
        let per_replica = u64::from(pp) * u64::from(par.tp);
        if !gpus.is_multiple_of(per_replica) {
            return Err(format!(
                "{gpus} GPUs do not split into pipelines of {pp} ranks × tp {}",
                par.tp
            ));
        }
        let dp = u32::try_from(gpus / per_replica).map_err(|_| "too many GPUs".to_owned())?;
        if spec.model.moe.is_some() && !dp.is_multiple_of(par.ep) {
            return Err(format!(
                "expert parallelism {} does not divide the data parallelism {dp} left by pp {pp}",
                par.ep
            ));
        }
        notes.push(format!(
            "pp {} instead of the spec's {} (dp {dp} instead of {})",
            pp, par.pp, par.dp
        ));
        par.pp = pp;
        par.dp = dp;
    }
    let v = parts / pp;
    par.stages_per_rank = v;
    if par.layers_per_stage.len() != parts as usize {
        let layers = spec.model.layers;
        if layers < u64::from(parts) {
            return Err(format!(
                "the plan has {parts} stages per pipeline but the model has only {layers} layers"
            ));
        }
        if spec.measured != Measured::default() {
            return Err(format!(
                "the spec's measured costs are given per part for {} parts, the plan has {parts}",
                par.layers_per_stage.len()
            ));
        }
        par.layers_per_stage = split_layers(layers, parts);
        let each = describe_split(&par.layers_per_stage);
        notes.push(format!(
            "the model cut into {parts} parts ({v} per rank): {each} layer{} each",
            if each == "1" { "" } else { "s" }
        ));
    }
    // The comparison's title says when M differs from the spec's; every row would repeat it.
    out.training.microbatches = plan.num_microbatches();
    Ok((out, notes))
}

/// `layers` over `parts` as evenly as possible; the extra layers go to the middle parts, so the
/// first and last parts (embedding, head) are the lighter ones.
pub fn split_layers(layers: u64, parts: u32) -> Vec<u64> {
    let n = u64::from(parts.max(1));
    let (base, extra) = (layers / n, layers % n);
    let lo = (n - extra) / 2;
    (0..n)
        .map(|q| base + u64::from(q >= lo && q < lo + extra))
        .collect()
}

fn describe_split(split: &[u64]) -> String {
    let min = split.iter().copied().min().unwrap_or(0);
    let max = split.iter().copied().max().unwrap_or(0);
    if min == max {
        min.to_string()
    } else {
        format!("{min}–{max}")
    }
}
