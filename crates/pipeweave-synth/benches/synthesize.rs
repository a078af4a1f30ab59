//! Synthesis at P = 8, M = 32 (the size): the heuristic alone, and the local search at
//! budgets of 1,000 to 20,000 tries, under costs that are not uniform (F = 1, I = 1.5, W = 0.5,
//! transfers 0.25) so that the heuristic does not meet the lower bound by itself. Before timing,
//! it prints the makespan each budget reaches, which is how results improve with time.
#![allow(
    clippy::print_stderr,
    reason = "a benchmark reports the quality each budget reaches beside its time"
)]

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use pipeweave_sim::{StageCosts, UniformCosts};
use pipeweave_synth::{Options, Placement, Problem, synthesize};
use std::hint::black_box;

const SKEWED: UniformCosts = UniformCosts {
    stage: StageCosts {
        f: 1.0,
        i: 1.5,
        w: 0.5,
        b: 2.0,
    },
    pair: None,
    transfer: 0.25,
};

fn problems() -> Vec<(&'static str, Problem)> {
    let p = 8;
    let problem = |placement, limit, pairs| Problem {
        ranks: p,
        microbatches: 32,
        placement,
        weight_split: true,
        pairs,
        limits: vec![limit; p as usize],
        weights: Vec::new(),
    };
    vec![
        ("loop-limit-4", problem(Placement::Loop { v: 1 }, 4, false)),
        ("v-limit-8", problem(Placement::V, 8, false)),
        (
            "bidirectional-limit-9",
            problem(Placement::Bidirectional, 9, true),
        ),
    ]
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("synthesize_8x32");
    group.sample_size(10);
    for (name, problem) in problems() {
        for budget in [0u64, 1_000, 5_000, 20_000] {
            let options = Options {
                seed: 0,
                evaluations: budget,
                ..Options::default()
            };
            let s = synthesize(&problem, &SKEWED, &options, &mut |_| true).expect("a plan");
            eprintln!(
                "{name} budget {budget}: makespan {} (heuristic {}, bound {})",
                s.score.makespan,
                s.heuristic.map_or(f64::NAN, |h| h.makespan),
                s.lower_bound
            );
            if budget == 0 || budget == 5_000 {
                group.bench_with_input(BenchmarkId::new(name, budget), &options, |b, options| {
                    b.iter(|| {
                        black_box(
                            synthesize(&problem, &SKEWED, options, &mut |_| true)
                                .expect("a plan")
                                .score,
                        )
                    })
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
