//! validate + lower + simulate, end to end, on 1F1B plans of 32 ranks × 1,024 micro-batches and
//! 64 × 4,096 (about a million compute operations), on the same number of operations spread over
//! many ranks with few micro-batches (4,096 × 8 and 65,536 × 8), and on 100,000 one-stage
//! pipelines of a micro-batch each on one rank (the pipelines as many as the micro-batches): the
//! cost follows the operations whatever the shape. Target: under 100 ns per operation.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use pipeweave_plan::testing::{one_f_one_b, one_stage_pipelines};
use pipeweave_sim::UnitCosts;
use std::hint::black_box;

fn end_to_end(c: &mut Criterion) {
    let mut group = c.benchmark_group("validate+lower+simulate");
    group.sample_size(10);
    let shapes = [(32u32, 1024u32), (4096, 8), (64, 4096), (65_536, 8)]
        .map(|(p, m)| (format!("{p}x{m}"), one_f_one_b(p, m)));
    let pipelines = ("100000-pipelines".to_owned(), one_stage_pipelines(100_000));
    for (name, plan) in shapes.into_iter().chain([pipelines]) {
        let plan = pipeweave_check::validate(plan).expect("a valid plan");
        group.throughput(Throughput::Elements(plan.num_ops() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), &plan, |b, plan| {
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
        });
    }
    group.finish();
}

criterion_group!(benches, end_to_end);
criterion_main!(benches);
