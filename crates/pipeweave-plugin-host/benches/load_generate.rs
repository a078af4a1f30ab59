//! What running a plugin in a worker process costs against calling it in this process: starting
//! (a worker: spawn + load + metadata; here: load + metadata), one DualPipe plan at 8 ranks × 20
//! micro-batches (the reference size) and one at 32 × 1,024, each generated and validated.
//!
//! The workers are the `pipeweave` binary's (`pipeweave __plugin-worker`), as the command line
//! runs them. Needs the workspace built in the same profile first (`cargo build --workspace
//! --release` for `cargo bench`): the plugins and the binary are found beside the bench.

use criterion::{Criterion, criterion_group, criterion_main};
use pipeweave_plugin_host::{Origin, Plugin, SearchPath, Worker, WorkerOptions, find};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `target/<profile>`: the bench lives in its `deps` folder.
fn build_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the bench knows its path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps")
        .to_path_buf()
}

fn plugin_path() -> PathBuf {
    let mut s = SearchPath::new();
    s.push(build_dir(), Origin::BuildDir);
    find("dualpipe", &s).unwrap_or_else(|e| panic!("{e}; build the workspace first"))
}

fn worker_command() -> Command {
    let exe = build_dir().join(format!("pipeweave{}", std::env::consts::EXE_SUFFIX));
    assert!(
        exe.is_file(),
        "{} is missing: build the workspace first",
        exe.display()
    );
    let mut command = Command::new(exe);
    command.arg("__plugin-worker");
    command
}

fn start(c: &mut Criterion) {
    let path = plugin_path();
    let mut group = c.benchmark_group("start dualpipe");
    group.bench_function("in process: load + metadata", |b| {
        b.iter(|| Plugin::load(&path).expect("loads"));
    });
    group.bench_function("worker: spawn + load + metadata", |b| {
        b.iter(|| {
            Worker::spawn(worker_command(), &path, WorkerOptions::default()).expect("starts")
        });
    });
    group.finish();
}

fn generate(c: &mut Criterion) {
    let path = plugin_path();
    let plugin = Plugin::load(&path).expect("loads");
    let mut worker =
        Worker::spawn(worker_command(), &path, WorkerOptions::default()).expect("starts");
    for (ranks, microbatches, samples) in [(8, 20, 100), (32, 1024, 10)] {
        let request = plugin
            .request(ranks, microbatches, &[])
            .expect("valid settings");
        let mut group = c.benchmark_group(format!("dualpipe {ranks}x{microbatches}"));
        group.sample_size(samples);
        group.bench_function("generate + validate in process", |b| {
            b.iter(|| plugin.generate(&request).expect("valid plan"));
        });
        group.bench_function("generate + validate in a worker", |b| {
            b.iter(|| worker.generate(&request).expect("valid plan"));
        });
        group.finish();
    }
}

criterion_group!(benches, start, generate);
criterion_main!(benches);
