//! Compiling zb-v from source to a validated plan at 32 ranks × 1,024 micro-batches and
//! 64 × 4,096 (about 1.5 million actions). Target: under 100 ns per action end to end.
//! And 1F1B at 65,536 ranks × 8 micro-batches (a million actions): the cost follows the actions,
//! not the ranks times the stages (per-rank tables of every stage made it quadratic).
//! And refusing hostile nesting: items 100,000 levels deep (1.7 MB) are answered at level 65.
//! And checking a block of 100,000 `let`s that each name an unknown name (2.2 MB): linear in the
//! names (it was quadratic, 8 minutes at 120,000).

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
                compiled.map(|c| pipeweave_check::validate(c.plan).is_ok())
            })
        });
    }
    group.finish();

    let source = library::get("1f1b").map(|e| e.source).unwrap_or_default();
    let mut group = c.benchmark_group("1f1b");
    group.sample_size(10);
    let args = Args::new(65_536, 8);
    group.throughput(Throughput::Elements(2 * 65_536 * 8));
    group.bench_function("compile 65536x8", |b| {
        b.iter(|| pipeweave_dsl::compile(FileId(0), black_box(source), &args).map(|c| c.plan))
    });
    group.finish();
}

fn deep(c: &mut Criterion) {
    let conditional = format!(
        "stages P\nlet x = {}1\nprogram {{ F B }}\n",
        "if 1 then 1 else ".repeat(100_000)
    );
    let chain = format!(
        "stages P\nprogram {{\nif 0 {{ F }}{}\n}}\n",
        "\nelse if 0 { F }".repeat(100_000)
    );
    let mut group = c.benchmark_group("deep");
    group.sample_size(20);
    for (name, source) in [("conditional", &conditional), ("else-if", &chain)] {
        group.throughput(Throughput::Bytes(source.len() as u64));
        group.bench_function(format!("check 100000 levels of {name}"), |b| {
            b.iter(|| pipeweave_dsl::check(FileId(0), black_box(source)).len())
        });
    }
    group.finish();
}

fn names(c: &mut Criterion) {
    let lets: String = (0..100_000)
        .map(|i| format!("  let x{i} = y{i}\n"))
        .collect();
    let source = format!("stages P\nprogram {{\n{lets}  F B\n}}\n");
    let mut group = c.benchmark_group("names");
    group.sample_size(10);
    group.throughput(Throughput::Elements(100_000));
    group.bench_function("check 100000 lets of unknown names", |b| {
        b.iter(|| pipeweave_dsl::check(FileId(0), black_box(&source)).len())
    });
    group.finish();
}

criterion_group!(benches, bench, deep, names);
criterion_main!(benches);
