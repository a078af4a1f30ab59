//! Views of plans with many ranks and few micro-batches, where a pass over every rank that scans
//! every stage or every transfer is quadratic: the SVG timeline with its transfer lanes and
//! `compare`'s traits, for 1F1B at 16,384 ranks × 8 micro-batches (262,144 actions). Their cost
//! follows the actions (drawing the lanes took 8 s at 16,384 ranks, the traits 3.2 s at 65,536).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pipeweave_eval::Traits;
use pipeweave_plan::testing::one_f_one_b;
use pipeweave_report::{TimeUnit, TimelineChart, timelines_svg, transfers};
use pipeweave_sim::UnitCosts;
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let plan = pipeweave_check::validate(one_f_one_b(16_384, 8)).expect("1F1B is valid");
    let timeline = pipeweave_sim::simulate(&plan, &UnitCosts).expect("simulates");
    let mut group = c.benchmark_group("views_1f1b_16384x8");
    group.sample_size(10);
    group.throughput(Throughput::Elements(plan.num_ops() as u64));
    group.bench_function("svg with transfers", |b| {
        b.iter(|| {
            let chart = TimelineChart {
                title: "1f1b".to_owned(),
                plan: &plan,
                timeline: &timeline,
                transfers: Some(transfers(&plan, &timeline, &UnitCosts)),
            };
            black_box(timelines_svg(&[chart], TimeUnit::Units, "b").len())
        })
    });
    group.bench_function("traits", |b| {
        b.iter(|| black_box(Traits::of(black_box(&plan)).stages_per_rank))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
