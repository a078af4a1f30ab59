//! Export of a 32-rank × 1,024-micro-batch 1F1B plan (65,536 actions) to every format, and reading
//! the written files back.
//! Export of 2,097,152-action plans, streamed as the command line does (into a writer that drops
//! the bytes): 1F1B at 128 ranks × 8,192 micro-batches to every format, ZB-V at 64 × 8,192 to the
//! lowered CSV. Target: under 1 s each.
//! And the trace of a plan with 20,000 transfers in flight at once (a rank of one stage feeding a
//! rank of two: its sends pile up), whose tracks are assigned in n log n.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pipeweave_check::ValidPlan;
use pipeweave_diagnostics::FileId;
use pipeweave_export::{
    Document, PlanFormat, actions_text, chrome_trace, json_text, pytorch_comms_csv, pytorch_csv,
    read_actions, read_json, read_pytorch_comms, write_actions, write_json, write_pytorch_comms,
};
use pipeweave_plan::Timing;
use pipeweave_plan::testing::one_f_one_b;
use std::hint::black_box;

/// Makes the export and writes it, as `pipeweave export` does, into a writer that drops it.
fn stream<D: Document>(doc: Result<D, pipeweave_diagnostics::Diagnostic>) -> u64 {
    let doc = doc.expect("exports");
    let mut out = Counted(0);
    doc.write_to(&mut out).expect("writes");
    out.0
}

/// A writer that counts the bytes and drops them.
struct Counted(u64);

impl std::io::Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every export of a 1F1B plan, streamed.
fn every_format(c: &mut Criterion, name: &str, plan: &ValidPlan, timing: &Timing, samples: usize) {
    let mut g = c.benchmark_group(name);
    g.sample_size(samples);
    g.throughput(Throughput::Elements(plan.num_ops() as u64));
    g.bench_function("actions", |b| {
        b.iter(|| stream(Ok(actions_text(black_box(plan)))))
    });
    g.bench_function("pytorch", |b| {
        b.iter(|| stream(pytorch_csv(black_box(plan))))
    });
    g.bench_function("pytorch-comms", |b| {
        b.iter(|| stream(pytorch_comms_csv(black_box(plan))))
    });
    g.bench_function("json", |b| {
        b.iter(|| stream(json_text(black_box(plan), None)))
    });
    g.bench_function("json+timeline", |b| {
        b.iter(|| stream(json_text(black_box(plan), Some(timing))))
    });
    g.bench_function("chrome-trace", |b| {
        b.iter(|| stream(chrome_trace(black_box(plan), timing, 1000.0)))
    });
    g.finish();
}

fn simulated(plan: pipeweave_plan::Plan) -> (ValidPlan, Timing) {
    let plan = pipeweave_check::validate(plan).expect("valid");
    let timing = pipeweave_sim::simulate(&plan, &pipeweave_sim::UnitCosts)
        .expect("simulates")
        .timing;
    (plan, timing)
}

fn bench(c: &mut Criterion) {
    let (plan, timing) = simulated(one_f_one_b(32, 1024));
    every_format(c, "export_1f1b_32x1024", &plan, &timing, 20);
    drop((plan, timing));

    let (plan, timing) = simulated(one_f_one_b(128, 8192));
    every_format(c, "export_1f1b_128x8192", &plan, &timing, 10);
    drop((plan, timing));

    let source = pipeweave_dsl::library::get("zb-v").map_or("", |e| e.source);
    let zbv = pipeweave_dsl::compile(FileId(0), source, &pipeweave_dsl::Args::new(64, 8192))
        .expect("compiles");
    let plan = pipeweave_check::validate(zbv.plan).expect("valid");
    let mut g = c.benchmark_group("export_zbv_64x8192");
    g.sample_size(10);
    g.throughput(Throughput::Elements(plan.num_ops() as u64));
    g.bench_function("pytorch-comms", |b| {
        b.iter(|| stream(pytorch_comms_csv(black_box(&plan))))
    });
    g.finish();
    drop(plan);

    let m = 20_000;
    let forwards = (0..m)
        .map(|i| format!("0F{i}"))
        .collect::<Vec<_>>()
        .join(",");
    let backwards = (0..m)
        .map(|i| format!("0B{i}"))
        .collect::<Vec<_>>()
        .join(",");
    let pairs = |a: &str, b: &str| {
        (0..m)
            .map(|i| format!("{a}{i},{b}{i}"))
            .collect::<Vec<_>>()
            .join(",")
    };
    let text = format!(
        "{forwards},{backwards}\n{},{}\n",
        pairs("1F", "2F"),
        pairs("2B", "1B")
    );
    let read = pipeweave_export::read_actions(&text, FileId(0), Some(1)).expect("a plan");
    let (plan, timing) = simulated(read.plan);
    let mut g = c.benchmark_group("export_in_flight_2x20000");
    g.sample_size(10);
    g.bench_function("chrome-trace", |b| {
        b.iter(|| stream(chrome_trace(black_box(&plan), &timing, 1000.0)))
    });
    g.finish();
}

fn read(c: &mut Criterion) {
    let plan = pipeweave_check::validate(one_f_one_b(32, 1024)).expect("1F1B is valid");
    let actions = write_actions(&plan);
    let comms = write_pytorch_comms(&plan).expect("writes");
    let json = write_json(&plan, None).expect("writes");
    let mut g = c.benchmark_group("read_1f1b_32x1024");
    g.sample_size(20);
    // Telling a compute-only file apart reads all of it (a compute_comms one stops early).
    g.bench_function("detect actions", |b| {
        b.iter(|| black_box(PlanFormat::detect(black_box(&actions))))
    });
    g.bench_function("actions", |b| {
        b.iter(|| black_box(read_actions(black_box(&actions), FileId(0), Some(1))))
    });
    g.bench_function("pytorch-comms", |b| {
        b.iter(|| black_box(read_pytorch_comms(black_box(&comms), FileId(0))))
    });
    g.bench_function("pytorch-comms checked", |b| {
        b.iter(|| {
            let file = read_pytorch_comms(black_box(&comms), FileId(0)).expect("reads");
            black_box(file.check())
        })
    });
    g.bench_function("json", |b| {
        b.iter(|| black_box(read_json(black_box(&json), FileId(0))))
    });
    g.finish();
}

criterion_group!(benches, bench, read);
criterion_main!(benches);
