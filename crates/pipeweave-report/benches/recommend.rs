//! `recommend` on every shipped spec, the search and its text page, with every library schedule,
//! the plugins' generators and Chimera's variants built in memory (the command line adds the
//! plugins' worker processes and reading the spec). The issue asks for seconds per spec.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use pipeweave_spec::SHIPPED_SPECS;
use std::hint::black_box;

#[path = "../tests/it/planner.rs"]
mod planner;

fn recommend(c: &mut Criterion) {
    let mut group = c.benchmark_group("recommend");
    group.sample_size(10);
    let schedules = planner::schedules();
    for shipped in SHIPPED_SPECS {
        let (spec, _) = pipeweave_spec::parse(shipped.source, pipeweave_diagnostics::FileId(0));
        let spec = spec.expect("a shipped spec parses");
        group.bench_with_input(
            BenchmarkId::from_parameter(shipped.name),
            &spec,
            |b, spec| {
                b.iter(|| {
                    let r = match pipeweave_eval::recommend(
                        spec,
                        false,
                        &schedules,
                        &mut planner::InMemory,
                    ) {
                        Ok(r) => r,
                        Err(never) => match never {},
                    };
                    black_box(pipeweave_report::recommend_text(&r).len())
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, recommend);
criterion_main!(benches);
