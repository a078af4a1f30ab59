//! validate + lower + simulate, end to end, on 1F1B plans of 32 ranks × 1,024 micro-batches and
//! 64 × 4,096 (about a million compute operations). Target: under 100 ns per operation.

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pipeweave_plan::testing::one_f_one_b;
use pipeweave_sim::UnitCosts;
use std::hint::black_box;

fn end_to_end(c: &mut Criterion) {
    let mut group = c.benchmark_group("validate+lower+simulate");
    group.sample_size(10);
    for (p, m) in [(32u32, 1024u32), (64, 4096)] {
        let plan = one_f_one_b(p, m);
        group.throughput(Throughput::Elements(plan.num_ops() as u64));
        group.bench_with_input(
            BenchmarkId::from_parameter(format!("{p}x{m}")),
            &plan,
            |b, plan| {
                // `validate` takes the plan it vouches for: each run gets a copy, made (and the
                // valid plan dropped) outside the timing. The lowering, which takes any plan,
                // lowers the shared one first and lives through the other two passes, as it did
                // before plans were validated by type: with glibc's allocator, validating first
                // left the heap trimmed at the end of every run of 64 × 4,096 (150,000 more page
                // faults over 15 runs, a third more CPU time, the same instructions).
                b.iter_batched(
                    || plan.clone(),
                    |copy| {
                        let lowered = pipeweave_plan::lower(plan);
                        let valid = pipeweave_check::validate(copy).expect("1F1B is valid");
                        let timeline = pipeweave_sim::simulate(&valid, &UnitCosts).expect("runs");
                        black_box((lowered.num_steps(), timeline.timing.makespan));
                        drop(lowered);
                        valid
                    },
                    BatchSize::LargeInput,
                )
            },
        );
    }
    group.finish();
}

criterion_group!(benches, end_to_end);
criterion_main!(benches);
