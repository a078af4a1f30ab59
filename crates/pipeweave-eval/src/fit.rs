//! The one rule by which a spec meets a plan of another shape, for every command that takes a
//! spec: the pipeline degree P (the GPU count or the data parallelism kept), the cut of the model
//! into the plan's stages, the micro-batches M (the micro-batch size or the global batch kept); or,
//! strictly, the refusal of any difference.

use crate::split::{Split, join, search_split_from, split_problem};
use pipeweave_check::ValidPlan;
use pipeweave_diagnostics::Diagnostic;
use pipeweave_plan::Plan;
use pipeweave_spec::{Measured, Recompute, Spec};
use std::fmt;

/// How a spec meets a plan whose shape differs from the spec's.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpecRule {
    /// Refuse any difference (the spec's checks against the plan, located at its keys) instead of
    /// fitting the spec.
    pub strict: bool,
    /// When P differs, keep the data parallelism and let the GPU count follow; by default the
    /// cluster's GPUs stay and the data parallelism follows P.
    pub keep_dp: bool,
    /// Keep the spec's global batch (data parallelism × micro-batches × micro-batch size): the
    /// micro-batch size follows M and the data parallelism; by default the micro-batch size stays
    /// and the global batch follows.
    pub global_batch: bool,
    /// How the layers are split over the plan's parts (`--split`).
    pub split: Split,
    /// Each part's recomputation given by hand (`--recompute`: one setting for every part, or one
    /// per part); `None`: the spec's own, searched with the split under `--split auto`.
    pub recompute: Option<Vec<Recompute>>,
}

/// One way the fitted spec differs from the spec as written.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// The pipeline degree, with the data parallelism and the GPUs.
    Ranks {
        /// The spec's P and the plan's.
        pp: (u32, u32),
        /// The data parallelism before and after.
        dp: (u32, u32),
        /// The GPUs before and after (equal unless the data parallelism is kept).
        gpus: (u64, u64),
    },
    /// The model cut into another number of parts.
    Parts {
        /// Parts per pipeline.
        parts: u32,
        /// Parts per rank.
        per_rank: u32,
        /// Layers per part: `4` or `3–4`.
        layers: String,
    },
    /// The layers split otherwise than the spec says (or than evenly, where the spec's split does
    /// not have the plan's parts).
    Split {
        /// Layers per part.
        layers: Vec<u64>,
        /// How it was chosen: `even`, `given`, `plan` (the plan file's own) or `searched`.
        how: &'static str,
        /// For a searched split: its step and the even split's, in seconds, when they fit.
        steps: Option<(Option<f64>, Option<f64>)>,
    },
    /// Each part's recomputation otherwise than the spec says.
    Recompute {
        /// Each part's.
        per_part: Vec<Recompute>,
        /// How it was chosen: `given`, `the plan's own` or `searched` (with the split).
        how: &'static str,
    },
    /// Micro-batches per step.
    Microbatches {
        /// The spec's M and the plan's.
        m: (u32, u32),
    },
    /// Sequences per micro-batch, the global batch kept.
    MicroBatchSize {
        /// The spec's size and the fitted one.
        size: (u64, u64),
        /// The global batch in sequences.
        global: u64,
    },
}

impl Change {
    /// Whether the change is of the micro-batches or their size (a comparison says these once,
    /// in its title, since every row shares them).
    pub fn is_batch(&self) -> bool {
        matches!(
            self,
            Change::Microbatches { .. } | Change::MicroBatchSize { .. }
        )
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Ranks { pp, dp, gpus } if gpus.0 == gpus.1 => write!(
                f,
                "pp {} instead of the spec's {} (dp {} instead of {})",
                pp.1, pp.0, dp.1, dp.0
            ),
            Change::Ranks { pp, dp, gpus } => write!(
                f,
                "pp {} instead of the spec's {} (dp {} kept: {} GPUs instead of {})",
                pp.1, pp.0, dp.1, gpus.1, gpus.0
            ),
            Change::Parts {
                parts,
                per_rank,
                layers,
            } => write!(
                f,
                "the model cut into {parts} parts ({per_rank} per rank): {layers} layer{} each",
                if layers == "1" { "" } else { "s" }
            ),
            Change::Split { layers, how, steps } => {
                write!(f, "layers per part {} ({how}", join(layers))?;
                match steps {
                    Some((Some(t), Some(e))) => write!(
                        f,
                        ": a step of {} against {} with the even split",
                        seconds(*t),
                        seconds(*e)
                    )?,
                    Some((Some(t), None)) => write!(
                        f,
                        ": a step of {}, where the even split does not fit in memory",
                        seconds(*t)
                    )?,
                    Some((None, _)) => write!(f, ": no split fits in memory")?,
                    None => {}
                }
                write!(f, ")")
            }
            Change::Recompute { per_part, how } => {
                write!(f, "recomputation {} ({how})", recompute_text(per_part))
            }
            Change::Microbatches { m } => {
                write!(f, "{} micro-batches instead of the spec's {}", m.1, m.0)
            }
            Change::MicroBatchSize { size, global } => write!(
                f,
                "micro-batches of {} sequence{} instead of the spec's {} (the global batch of {global} \
                 sequences kept)",
                size.1,
                if size.1 == 1 { "" } else { "s" },
                size.0
            ),
        }
    }
}

/// Seconds with four significant digits: `1.234 s`.
fn seconds(s: f64) -> String {
    format!("{} s", four_digits(s))
}

/// `x` to four significant digits, without an exponent for the figures of a step.
fn four_digits(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = 3 - x.abs().log10().floor() as i32;
    format!("{:.*}", digits.max(0) as usize, x)
}

/// A spec fitted to a plan: the spec the plan runs on and how it differs from the one written.
#[derive(Debug, Clone, PartialEq)]
pub struct Fitted {
    /// The spec with the plan's shape.
    pub spec: Spec,
    /// What changed, in the order P, parts, M, micro-batch size; empty when the plan has the
    /// spec's shape.
    pub changes: Vec<Change>,
}

impl Fitted {
    /// Every change in words, then every default the spec relies on ([`Spec::assumed`]).
    pub fn notes(&self) -> Vec<String> {
        self.changes
            .iter()
            .map(ToString::to_string)
            .chain(self.spec.assumed())
            .collect()
    }
}

/// The spec `plan` runs on under `rule`: fitted to the plan's shape, or, with `rule.strict`, the
/// spec itself when the shapes agree. Fails with the spec's own diagnostics (located at its keys)
/// under `strict`, and with the reason when the spec cannot take the plan's shape.
pub fn fit(spec: &Spec, plan: &ValidPlan, rule: SpecRule) -> Result<Fitted, Vec<Diagnostic>> {
    let mut fitted = if rule.strict {
        let problems = spec.check_plan(plan);
        if !problems.is_empty() {
            return Err(problems);
        }
        Fitted {
            spec: spec.clone(),
            changes: Vec::new(),
        }
    } else {
        fit_shape(spec, plan, &rule).map_err(|d| vec![d])?
    };
    if let Some(given) = &rule.recompute {
        apply_recompute(&mut fitted, plan, given, "given").map_err(|d| vec![d])?;
    } else if let Some(own) = plan.recompute() {
        let own: Vec<Recompute> = own.iter().filter_map(|r| Recompute::from_name(r)).collect();
        apply_recompute(&mut fitted, plan, &own, "the plan's own").map_err(|d| vec![d])?;
    }
    apply_split(
        &mut fitted,
        spec,
        plan,
        &rule.split,
        rule.recompute.is_some(),
    )
    .map_err(|d| vec![d])?;
    Ok(fitted)
}

/// Sets each part's recomputation of the fitted spec, noting it where it differs from the spec's.
fn apply_recompute(
    fitted: &mut Fitted,
    plan: &ValidPlan,
    per_part: &[Recompute],
    how: &'static str,
) -> Result<(), Diagnostic> {
    let parts = plan.stages_per_pipeline() as usize;
    if per_part.len() != 1 && per_part.len() != parts {
        return Err(Diagnostic::error(format!(
            "the recomputation {} has {} settings but the plan cuts the model into {parts} parts",
            recompute_text(per_part),
            per_part.len()
        )));
    }
    let t = &mut fitted.spec.training;
    let before = t.recompute_parts(parts);
    let after: Vec<Recompute> = if per_part.len() == 1 {
        vec![per_part[0]; parts]
    } else {
        per_part.to_vec()
    };
    if before == after {
        return Ok(());
    }
    t.set_recompute(&after);
    fitted
        .changes
        .retain(|c| !matches!(c, Change::Recompute { .. }));
    fitted.changes.push(Change::Recompute {
        per_part: after,
        how,
    });
    Ok(())
}

/// Each part's recomputation in words: `full` when every part runs it, else runs of settings,
/// `full×2, selective, none×5`.
pub fn recompute_text(per_part: &[Recompute]) -> String {
    let names: Vec<&str> = per_part.iter().map(|r| r.name()).collect();
    crate::split::runs_text(&names)
}

/// Sets the fitted spec's split by `split` (see [`Split`]), noting it where it is not the spec's;
/// `auto` chooses each part's recomputation with the split unless it was `given` by hand.
fn apply_split(
    fitted: &mut Fitted,
    spec: &Spec,
    plan: &ValidPlan,
    split: &Split,
    given: bool,
) -> Result<(), Diagnostic> {
    let parts = plan.stages_per_pipeline();
    let total = spec.model.layers;
    let current = fitted.spec.parallelism.layers_per_stage.clone();
    let (layers, how, steps) = match split {
        Split::Spec => match plan.split() {
            Some(own) if own != current.as_slice() => (own.to_vec(), "the plan's own", None),
            _ => return Ok(()),
        },
        Split::Even => (split_layers(total, parts), "even", None),
        Split::Layers(v) => (v.clone(), "given", None),
        Split::Auto => {
            let options = if given {
                Vec::new()
            } else {
                crate::split::recompute_options(&fitted.spec)
            };
            let found =
                search_split_from(&fitted.spec, plan, None, &options).map_err(Diagnostic::error)?;
            apply_recompute(fitted, plan, &found.recompute, "searched")?;
            let steps = Some((found.step_time_s, found.even_step_time_s));
            (found.layers, "searched", steps)
        }
    };
    if let Some(problem) = split_problem(&layers, total, parts) {
        return Err(Diagnostic::error(problem));
    }
    if layers == current && !matches!(split, Split::Auto) {
        return Ok(());
    }
    if spec.measured != Measured::default() && layers != spec.parallelism.layers_per_stage {
        return Err(Diagnostic::error(format!(
            "the spec's measured costs are given per part of its own split {}, not of {}",
            join(&spec.parallelism.layers_per_stage),
            join(&layers)
        )));
    }
    // a fitted cut said once: the split replaces the note of the even cut
    fitted
        .changes
        .retain(|c| !matches!(c, Change::Parts { .. }));
    fitted.spec.parallelism.layers_per_stage = layers.clone();
    fitted.changes.push(Change::Split { layers, how, steps });
    Ok(())
}

/// Adapts `spec` to `plan`'s shape by the default rule ([`SpecRule::default`]): the GPUs kept, the
/// micro-batch size kept. Returns the adapted spec and a note per change of P or of the cut (a
/// comparison gives M in its title); fails when the cluster or the model cannot take the plan's
/// shape.
pub fn fit_spec(spec: &Spec, plan: &Plan) -> Result<(Spec, Vec<String>), Diagnostic> {
    let fitted = fit_shape(spec, plan, &SpecRule::default())?;
    let notes = fitted
        .changes
        .iter()
        .filter(|c| !c.is_batch())
        .map(ToString::to_string)
        .collect();
    Ok((fitted.spec, notes))
}

/// The data parallelism and the GPUs at `pp` pipeline ranks under `rule`.
fn replicas(spec: &Spec, pp: u32, rule: &SpecRule) -> Result<(u32, u64), Diagnostic> {
    let par = &spec.parallelism;
    let gpus = spec.cluster.gpus();
    // the spec's own shape keeps its dp; a tensor-parallel degree changed at the same pp (the
    // recommend search's candidates) leaves as many replicas as the GPUs hold
    if pp == par.pp && u64::from(pp) * u64::from(par.tp) * u64::from(par.dp) == gpus {
        return Ok((par.dp, gpus));
    }
    if rule.keep_dp {
        let wanted = u64::from(pp) * u64::from(par.tp) * u64::from(par.dp);
        let node = u64::from(spec.cluster.gpus_per_node);
        if !wanted.is_multiple_of(node) {
            return Err(Diagnostic::error(format!(
                "pp {pp} × tp {} × dp {} (kept) is {wanted} GPUs, not whole nodes of {node}",
                par.tp, par.dp
            )));
        }
        if wanted > node && spec.cluster.hardware.network_id.is_none() {
            return Err(Diagnostic::error(format!(
                "pp {pp} × tp {} × dp {} (kept) is {wanted} GPUs, more than the spec's one node \
                 of {node}, and the spec names no `cluster.network` between nodes",
                par.tp, par.dp
            )));
        }
        return Ok((par.dp, wanted));
    }
    let per_replica = u64::from(pp) * u64::from(par.tp);
    if !gpus.is_multiple_of(per_replica) {
        return Err(Diagnostic::error(format!(
            "{gpus} GPUs do not split into pipelines of {pp} ranks × tp {}",
            par.tp
        )));
    }
    let dp = u32::try_from(gpus / per_replica).map_err(|_| Diagnostic::error("too many GPUs"))?;
    Ok((dp, gpus))
}

/// The spec's global batch in sequences: data parallelism × micro-batches × micro-batch size.
pub fn global_batch(spec: &Spec) -> u64 {
    u64::from(spec.parallelism.dp)
        * u64::from(spec.training.microbatches)
        * spec.training.micro_batch_size
}

/// The micro-batches per step at `pp` pipeline ranks that keep the spec's global batch with its
/// micro-batch size (`rule.global_batch` when M is not given); fails when they do not divide.
pub fn microbatches_at(spec: &Spec, pp: u32, rule: &SpecRule) -> Result<u32, Diagnostic> {
    let (dp, _) = replicas(spec, pp, rule)?;
    let global = global_batch(spec);
    let size = spec.training.micro_batch_size;
    let per_step = u64::from(dp) * size;
    if per_step == 0 || !global.is_multiple_of(per_step) {
        return Err(Diagnostic::error(format!(
            "the global batch of {global} sequences does not split into dp {dp} × micro-batches \
             of {size} sequence{}",
            if size == 1 { "" } else { "s" }
        )));
    }
    u32::try_from(global / per_step).map_err(|_| Diagnostic::error("too many micro-batches"))
}

/// P and M of a plan on `spec` under `rule`: those given, else the spec's P, and the spec's M or,
/// when the rule keeps the global batch, the M that keeps it at that P with the spec's
/// micro-batch size ([`microbatches_at`]).
pub fn plan_shape(
    spec: &Spec,
    rule: &SpecRule,
    ranks: Option<u32>,
    microbatches: Option<u32>,
) -> Result<(u32, u32), Diagnostic> {
    let p = ranks.unwrap_or(spec.parallelism.pp);
    let m = match microbatches {
        Some(m) => m,
        None if rule.global_batch && !rule.strict => microbatches_at(spec, p, rule)?,
        None => spec.training.microbatches,
    };
    Ok((p, m))
}

/// The fitting itself (see [`fit`]).
fn fit_shape(spec: &Spec, plan: &Plan, rule: &SpecRule) -> Result<Fitted, Diagnostic> {
    let error = |message: String| Diagnostic::error(message);
    let mut out = spec.clone();
    let mut changes = Vec::new();
    let pp = plan.ranks();
    let parts = plan.stages_per_pipeline();
    if pp == 0 || !parts.is_multiple_of(pp) {
        return Err(error(format!(
            "the plan's {parts} stages per pipeline do not spread evenly over its {pp} ranks"
        )));
    }
    let (dp, gpus) = replicas(spec, pp, rule)?;
    let par = &mut out.parallelism;
    if pp != par.pp || dp != par.dp {
        if spec.model.moe.is_some() && !dp.is_multiple_of(par.ep) {
            return Err(error(format!(
                "expert parallelism {} does not divide the data parallelism {dp} left by pp {pp}",
                par.ep
            )));
        }
        changes.push(Change::Ranks {
            pp: (par.pp, pp),
            dp: (par.dp, dp),
            gpus: (spec.cluster.gpus(), gpus),
        });
        par.pp = pp;
        par.dp = dp;
        let node = u64::from(out.cluster.gpus_per_node);
        out.cluster.nodes =
            u32::try_from(gpus / node.max(1)).map_err(|_| error("too many GPUs".to_owned()))?;
    }
    let v = parts / pp;
    let par = &mut out.parallelism;
    par.stages_per_rank = v;
    if par.layers_per_stage.len() != parts as usize {
        let layers = spec.model.layers;
        if layers < u64::from(parts) {
            return Err(error(format!(
                "the plan has {parts} stages per pipeline but the model has only {layers} layers"
            )));
        }
        if spec.measured != Measured::default() {
            return Err(error(format!(
                "the spec's measured costs are given per part for {} parts, the plan has {parts}",
                par.layers_per_stage.len()
            )));
        }
        par.layers_per_stage = split_layers(layers, parts);
        // a recomputation per part is per the spec's parts: every part runs the heaviest of it
        out.training.recompute_per_part = Vec::new();
        changes.push(Change::Parts {
            parts,
            per_rank: v,
            layers: describe_split(&par.layers_per_stage),
        });
    }
    let m = plan.num_microbatches();
    if m != spec.training.microbatches {
        changes.push(Change::Microbatches {
            m: (spec.training.microbatches, m),
        });
    }
    out.training.microbatches = m;
    if rule.global_batch {
        let global = global_batch(spec);
        let per_size = u64::from(dp) * u64::from(m);
        if !global.is_multiple_of(per_size) {
            return Err(error(format!(
                "the global batch of {global} sequences does not split into dp {dp} × {m} \
                 micro-batches"
            )));
        }
        let size = global / per_size;
        if size != spec.training.micro_batch_size {
            changes.push(Change::MicroBatchSize {
                size: (spec.training.micro_batch_size, size),
                global,
            });
        }
        out.training.micro_batch_size = size;
    }
    Ok(Fitted { spec: out, changes })
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
