//! Where the layers go: the split of a model's layers over a plan's parts, as a command is asked
//! for it (`--split auto|even|A,B,C,…`), and the search behind `auto`.
//!
//! The search behind `auto` is in [`search`].

use pipeweave_spec::Recompute;
use std::fmt;

pub mod search;

pub use search::{
    MAX_DESCENT_WORK, MAX_MOVES, PRICED_PER_SEARCH, recompute_options, search_split,
    search_split_climbing, search_split_from,
};

/// How the layers are split over a plan's parts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Split {
    /// The plan's own split (a JSON plan that carries one), else the spec's `layers_per_stage`
    /// where it has the plan's parts, else even.
    #[default]
    Spec,
    /// As evenly as possible, the extra layers in the middle parts.
    Even,
    /// Searched (see the module documentation).
    Auto,
    /// Exactly these layers per part.
    Layers(Vec<u64>),
}

impl Split {
    /// Reads `auto`, `even`, `spec` or comma-separated layer counts (`1,8,8,7`).
    pub fn parse(text: &str) -> Result<Split, String> {
        let t = text.trim();
        match t {
            "auto" => return Ok(Split::Auto),
            "even" => return Ok(Split::Even),
            "spec" => return Ok(Split::Spec),
            _ => {}
        }
        let mut layers = Vec::new();
        for (i, cell) in t.split(',').enumerate() {
            let cell = cell.trim();
            match cell.parse::<u64>() {
                Ok(n) if n <= 1 << 20 => layers.push(n),
                _ => {
                    return Err(format!(
                        "expected `auto`, `even` or layers per part like `1,8,8,7`, found `{}` \
                         at entry {}",
                        cell.chars().take(40).collect::<String>(),
                        i + 1
                    ));
                }
            }
            if layers.len() > 1 << 16 {
                return Err("more than 65,536 parts".to_owned());
            }
        }
        Ok(Split::Layers(layers))
    }
}

impl fmt::Display for Split {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Split::Spec => write!(f, "spec"),
            Split::Even => write!(f, "even"),
            Split::Auto => write!(f, "auto"),
            Split::Layers(v) => write!(f, "{}", join(v)),
        }
    }
}

/// Layer counts joined by commas.
pub fn join(v: &[u64]) -> String {
    v.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

/// A list in runs: `a×3, b, c×2` (one word when all agree).
pub fn runs_text(items: &[&str]) -> String {
    let mut runs: Vec<(&str, usize)> = Vec::new();
    for &x in items {
        match runs.last_mut() {
            Some((y, n)) if *y == x => *n += 1,
            _ => runs.push((x, 1)),
        }
    }
    if runs.len() == 1 {
        return runs[0].0.to_owned();
    }
    runs.iter()
        .map(|&(x, n)| {
            if n == 1 {
                x.to_owned()
            } else {
                format!("{x}×{n}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Reads `--recompute`: `none`, `selective` or `full` for every part, or one per part
/// (`full,full,selective,none`).
pub fn parse_recompute(text: &str) -> Result<Vec<Recompute>, String> {
    let mut out = Vec::new();
    for (i, cell) in text.trim().split(',').enumerate() {
        let cell = cell.trim();
        match Recompute::from_name(cell) {
            Some(r) => out.push(r),
            None => {
                return Err(format!(
                    "expected `none`, `selective` or `full`, or one per part like \
                     `full,selective,none`, found `{}` at entry {}",
                    cell.chars().take(40).collect::<String>(),
                    i + 1
                ));
            }
        }
        if out.len() > 1 << 16 {
            return Err("more than 65,536 parts".to_owned());
        }
    }
    Ok(out)
}

/// Why `layers` cannot be the split of a model of `total` layers into `parts` parts, if it
/// cannot: every part but the first and the last needs a layer (the first holds the embedding,
/// the last the head, so they may hold none).
pub fn split_problem(layers: &[u64], total: u64, parts: u32) -> Option<String> {
    if layers.len() != parts as usize {
        return Some(format!(
            "the split {} has {} part{} but the plan cuts the model into {parts}",
            join(layers),
            layers.len(),
            if layers.len() == 1 { "" } else { "s" }
        ));
    }
    let sum: u64 = layers.iter().sum();
    if sum != total {
        return Some(format!(
            "the split {} holds {sum} layers but the model has {total}",
            join(layers)
        ));
    }
    let n = layers.len();
    if let Some(q) = (1..n.saturating_sub(1)).find(|&q| layers[q] == 0) {
        return Some(format!(
            "part {q} of the split {} holds no layer; only the first and the last part (embedding, \
             head) may",
            join(layers)
        ));
    }
    if n == 1 && total == 0 {
        return Some("the model has no layer".to_owned());
    }
    None
}

/// What the split search found for one plan.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitFound {
    /// Layers per part of the chosen split.
    pub layers: Vec<u64>,
    /// Each part's recomputation in the chosen split.
    pub recompute: Vec<Recompute>,
    /// Its step in seconds, when it fits and was simulated.
    pub step_time_s: Option<f64>,
    /// The most loaded GPU's memory in bytes.
    pub memory_bytes: f64,
    /// The even split's step, when it fits.
    pub even_step_time_s: Option<f64>,
    /// The even split's most loaded GPU's memory in bytes.
    pub even_memory_bytes: f64,
    /// The step with the spec's own split and recomputation, when it fits.
    pub own_step_time_s: Option<f64>,
    /// Distinct candidates priced exactly.
    pub priced: usize,
}
