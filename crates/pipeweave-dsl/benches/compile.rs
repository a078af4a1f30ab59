//! Compiling zb-v from source to a validated plan at 32 ranks × 1,024 micro-batches and
//! 64 × 4,096 (about 1.5 million actions). Target: under 100 ns per action end to end.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pipeweave_diagnostics::FileId;
use pipeweave_dsl::{Args, library};
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let source = library::get("zb-v").map(|e| e.source).unwrap_or_default();
    let mut group = c.benchmark_group("zb-v");
    group.sample_size(10);
    for (p, m) in [(32u32, 1024u32), (64, 4096)] {
        let args = Args::new(p, m);
        let actions = pipeweave_dsl::compile(FileId(0), source, &args)
            .map(|c| c.plan.num_ops())
            .unwrap_or(0);
        group.throughput(Throughput::Elements(actions as u64));
        group.bench_function(format!("compile {p}x{m}"), |b| {
            b.iter(|| pipeweave_dsl::compile(FileId(0), black_box(source), &args).map(|c| c.plan))
        });
        group.bench_function(format!("compile+validate {p}x{m}"), |b| {
            b.iter(|| {
                let compiled = pipeweave_dsl::compile(FileId(0), black_box(source), &args);
                compiled.map(|c| pipeweave_check::validate(&c.plan).len())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
