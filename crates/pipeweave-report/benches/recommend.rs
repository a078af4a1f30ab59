//! `recommend` on every shipped spec, the search and its text page, with every library schedule,
//! the plugins' generators and Chimera's variants built in memory (the command line adds the
//! plugins' worker processes and reading the spec), and two specs in range but extreme; each with
//! the layers' split searched (the default) and with the even split. The issues ask for seconds per
//! spec (#26: under 2 s with the split searched).

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use pipeweave_spec::SHIPPED_SPECS;
use std::hint::black_box;

#[path = "../tests/it/planner.rs"]
mod planner;

/// Specs in range but far from any cluster, made from a shipped one: the search's bound at work
/// (a model of 16,000 layers fills its budget and leaves the largest shapes out) and a cluster of
/// a million GPUs (data-parallel groups of up to a million, counted).
const EXTREME: [(&str, &[(&str, &str)]); 2] = [
    (
        "dense-70b-16000-layers",
        &[("layers = 80", "layers = 16000")],
    ),
    (
        "dense-70b-1m-gpus",
        &[("nodes = 128", "nodes = 131072"), ("dp = 16", "dp = 16384")],
    ),
];

fn recommend(c: &mut Criterion) {
    let mut group = c.benchmark_group("recommend");
    group.sample_size(10);
    let schedules = planner::schedules();
    let default = pipeweave_spec::DEFAULT_SPEC;
    let extreme = EXTREME.iter().map(|(name, changes)| {
        let text = changes
            .iter()
            .fold(default.to_owned(), |t, (from, to)| t.replacen(from, to, 1));
        (*name, text)
    });
    let specs = SHIPPED_SPECS
        .iter()
        .map(|s| (s.name, s.source.to_owned()))
        .chain(extreme);
    for (name, source) in specs {
        let (spec, _) = pipeweave_spec::parse(&source, pipeweave_diagnostics::FileId(0));
        let spec = spec.expect("the spec parses");
        // the default search (the split searched with every configuration) and the even split's
        for (split, suffix) in [(true, ""), (false, "/even-split")] {
            let id = BenchmarkId::from_parameter(format!("{name}{suffix}"));
            group.bench_with_input(id, &spec, |b, spec| {
                b.iter(|| {
                    let r = match pipeweave_eval::recommend(
                        spec,
                        false,
                        &schedules,
                        split,
                        &mut planner::InMemory,
                    ) {
                        Ok(r) => r,
                        Err(never) => match never {},
                    };
                    black_box(pipeweave_report::recommend_text(&r).len())
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, recommend);
criterion_main!(benches);
