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
                // valid plan dropped) outside the timing.
                b.iter_batched(
                    || plan.clone(),
                    |plan| {
                        let plan = pipeweave_check::validate(plan).expect("1F1B is valid");
                        let lowered = pipeweave_plan::lower(&plan);
                        let timeline = pipeweave_sim::simulate(&plan, &UnitCosts).expect("runs");
                        black_box((lowered.num_steps(), timeline.timing.makespan));
                        drop(lowered);
                        plan
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
