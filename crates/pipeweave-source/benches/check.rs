//! `check` on the whole library: every schedule's text, then its plans compiled and validated for
//! P = 2…8 and every M up to 2P its requirements allow (what `pipeweave check NAME` does after
//! reading the file).

use criterion::{Criterion, criterion_group, criterion_main};
use pipeweave_source::{Files, check_schedule};
use std::hint::black_box;

fn library(c: &mut Criterion) {
    let mut files = Files::default();
    let schedules: Vec<_> = pipeweave_dsl::library::all()
        .map(|e| (e.name, files.add(e.name, e.source)))
        .collect();
    let mut group = c.benchmark_group("check");
    group.sample_size(20);
    group.bench_function("the library", |b| {
        b.iter(|| {
            schedules
                .iter()
                .map(|(name, file)| check_schedule(name, *file, black_box(&files)).is_ok())
                .filter(|ok| *ok)
                .count()
        })
    });
    for (name, file) in schedules.iter().filter(|(n, _)| *n == "zb-v") {
        group.bench_function(*name, |b| b.iter(|| check_schedule(name, *file, &files)));
    }
    group.finish();
}

criterion_group!(benches, library);
criterion_main!(benches);
