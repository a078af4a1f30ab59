//! Export of a 32-rank × 1,024-micro-batch 1F1B plan (65,536 actions) to every format.

use criterion::{Criterion, criterion_group, criterion_main};
use pipeweave_export::{
    write_actions, write_chrome_trace, write_json, write_pytorch, write_pytorch_comms,
};
use pipeweave_plan::testing::one_f_one_b;
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let plan = pipeweave_check::validate(one_f_one_b(32, 1024)).expect("1F1B is valid");
    let timing = pipeweave_sim::simulate(&plan, &pipeweave_sim::UnitCosts)
        .expect("simulates")
        .timing;
    let mut g = c.benchmark_group("export_1f1b_32x1024");
    g.sample_size(20);
    g.bench_function("actions", |b| {
        b.iter(|| black_box(write_actions(black_box(&plan))))
    });
    g.bench_function("pytorch", |b| {
        b.iter(|| black_box(write_pytorch(black_box(&plan))))
    });
    g.bench_function("pytorch-comms", |b| {
        b.iter(|| black_box(write_pytorch_comms(black_box(&plan))))
    });
    g.bench_function("json", |b| {
        b.iter(|| black_box(write_json(black_box(&plan), None)))
    });
    g.bench_function("json+timeline", |b| {
        b.iter(|| black_box(write_json(black_box(&plan), Some(&timing))))
    });
    g.bench_function("chrome-trace", |b| {
        b.iter(|| black_box(write_chrome_trace(black_box(&plan), &timing, 1000.0)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
