//! Recomputation per part (`training.recompute_per_part`; AdaPipe, Sun et al., ASPLOS 2024): a
//! part is priced as the spec would price it if every part ran that part's recomputation, so
//! the extra forward of full recomputation lands in that part's backward and its saved
//! activations in that part's memory alone.

use pipeweave_spec::{Recompute, Spec};

/// One copy of `spec` for each recomputation its parts run other than `training.recompute`
/// (none when every part runs the same), each with that recomputation for every part.
pub(crate) fn part_specs(spec: &Spec) -> Vec<Spec> {
    let t = &spec.training;
    let mut kinds: Vec<Recompute> = t
        .recompute_per_part
        .iter()
        .copied()
        .filter(|&r| r != t.recompute)
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
        .into_iter()
        .map(|r| {
            let mut s = spec.clone();
            s.training.recompute = r;
            s.training.recompute_per_part = Vec::new();
            s
        })
        .collect()
}

/// Which of [`part_specs`]'s copies prices part `q`: `None` for `spec` itself.
pub(crate) fn index_of(spec: &Spec, specs: &[Spec], q: usize) -> Option<usize> {
    let r = spec.training.recompute_of(q);
    if r == spec.training.recompute {
        return None;
    }
    specs.iter().position(|s| s.training.recompute == r)
}
