//! validate + lower + simulate, end to end, on 1F1B plans of 32 ranks × 1,024 micro-batches and
//! 64 × 4,096 (about a million compute operations), and on the same number of operations spread
//! over many ranks with few micro-batches (4,096 × 8 and 65,536 × 8): the cost follows the
//! operations whatever the shape. Target: under 100 ns per operation.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pipeweave_plan::testing::one_f_one_b;
use pipeweave_sim::UnitCosts;
use std::hint::black_box;

fn end_to_end(c: &mut Criterion) {
    let mut group = c.benchmark_group("validate+lower+simulate");
    group.sample_size(10);
    for (p, m) in [(32u32, 1024u32), (4096, 8), (64, 4096), (65_536, 8)] {
        let plan = pipeweave_check::validate(one_f_one_b(p, m)).expect("1F1B is valid");
        group.throughput(Throughput::Elements(plan.num_ops() as u64));
        group.bench_with_input(
            BenchmarkId::from_parameter(format!("{p}x{m}")),
            &plan,
            |b, plan| {
                // The validator's work is `problems` (`validate` adds a move of the plan into a
                // `ValidPlan`), timed here on the valid plan itself, so the three passes share one
                // plan, as in a command. Validating a fresh copy per run instead timed
                // the copy's memory: a third slower at 32 × 1,024 (two plans in cache), and at
                // 64 × 4,096 glibc trimmed the heap after every run (150,000 more page faults over
                // 15 runs), with the same instructions.
                b.iter(|| {
                    let lowered = pipeweave_plan::lower(plan);
                    let problems = pipeweave_check::problems(plan);
                    let timeline = pipeweave_sim::simulate(plan, &UnitCosts).expect("runs");
                    black_box((
                        lowered.num_steps(),
                        problems.len(),
                        timeline.timing.makespan,
                    ))
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, end_to_end);
criterion_main!(benches);
