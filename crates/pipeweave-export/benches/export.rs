//! Export of a 32-rank × 1,024-micro-batch 1F1B plan (65,536 actions) to every format, and reading
//! the written files back.

use criterion::{Criterion, criterion_group, criterion_main};
use pipeweave_diagnostics::FileId;
use pipeweave_export::{
    PlanFormat, read_actions, read_json, read_pytorch_comms, write_actions, write_chrome_trace,
    write_json, write_pytorch, write_pytorch_comms,
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

fn read(c: &mut Criterion) {
    let plan = pipeweave_check::validate(one_f_one_b(32, 1024)).expect("1F1B is valid");
    let actions = write_actions(&plan);
    let comms = write_pytorch_comms(&plan).expect("writes");
    let json = write_json(&plan, None).expect("writes");
    let mut g = c.benchmark_group("read_1f1b_32x1024");
    g.sample_size(20);
    // Telling a compute-only file apart reads all of it (a compute_comms one stops early).
    g.bench_function("detect actions", |b| {
        b.iter(|| black_box(PlanFormat::detect(black_box(&actions))))
    });
    g.bench_function("actions", |b| {
        b.iter(|| black_box(read_actions(black_box(&actions), FileId(0), Some(1))))
    });
    g.bench_function("pytorch-comms", |b| {
        b.iter(|| black_box(read_pytorch_comms(black_box(&comms), FileId(0))))
    });
    g.bench_function("pytorch-comms checked", |b| {
        b.iter(|| {
            let file = read_pytorch_comms(black_box(&comms), FileId(0)).expect("reads");
            black_box(file.check())
        })
    });
    g.bench_function("json", |b| {
        b.iter(|| black_box(read_json(black_box(&json), FileId(0))))
    });
    g.finish();
}

criterion_group!(benches, bench, read);
criterion_main!(benches);
