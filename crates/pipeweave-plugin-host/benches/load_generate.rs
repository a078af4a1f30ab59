//! Load + generate + validate DualPipe at 32 ranks × 1,024 micro-batches through the real plugin,
//! and loading alone. Needs the plugins built (`cargo build --workspace --release` for
//! `cargo bench`).

use criterion::{Criterion, criterion_group, criterion_main};
use pipeweave_plugin_host::{Origin, Plugin, SearchPath, find};
use std::path::Path;

fn plugin_path() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("the bench knows its path");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps");
    let mut s = SearchPath::new();
    s.push(dir.to_path_buf(), Origin::BuildDir);
    find("dualpipe", &s).unwrap_or_else(|e| panic!("{e}; build the plugins first"))
}

fn bench(c: &mut Criterion) {
    let path = plugin_path();
    c.bench_function("load dualpipe plugin", |b| {
        b.iter(|| Plugin::load(&path).expect("loads"));
    });
    let plugin = Plugin::load(&path).expect("loads");
    let request = plugin.request(32, 1024, &[]).expect("valid settings");
    let mut group = c.benchmark_group("dualpipe 32x1024");
    group.sample_size(10);
    group.bench_function("generate + validate", |b| {
        b.iter(|| plugin.generate(&request).expect("valid plan"));
    });
    group.bench_function("load + generate + validate", |b| {
        b.iter(|| {
            let p = Plugin::load(&path).expect("loads");
            p.generate(&request).expect("valid plan")
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
